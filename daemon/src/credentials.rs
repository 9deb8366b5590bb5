//! The credentials stage: brokered secrets are added to an allowed command's
//! environment here, after the audit intent is committed. No credential is
//! configured yet, so the permit passes unchanged and nothing is injected.

use crate::pipeline::Permit;

pub fn inject(permit: Permit) -> Permit {
    permit
}
