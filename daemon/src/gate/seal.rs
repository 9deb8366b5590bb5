//! The pipeline's one way to seal a [`Permit`] and to hold one in a
//! [`Held`]. It lives in the gate, whose private fields only the gate and
//! its children can fill; no module but the pipeline may name it, which the
//! daemon's layers test checks.

use super::{Held, Permit, Refusal, Seal};

/// The seal a [`Permit`] is built with.
pub(crate) fn seal() -> Seal {
    Seal(())
}

/// A policy HOLD with the command as it would run if the HOLD is lifted.
pub(crate) fn hold(permit: Box<Permit>, refusal: Refusal, steerable: bool) -> Held {
    Held {
        permit,
        refusal,
        steerable,
    }
}
