//! The redact stage: what of a request may be written down. The audit store
//! gets the policy's per-command text, which the policy redacts as it judges;
//! the raw request is kept only as a digest ([`crate::ids::arguments_digest`]).

use praxis_policy::Decision;

/// The request's simple commands as the policy rendered them, redacted.
pub fn for_audit(decision: &Decision) -> Vec<String> {
    decision
        .commands
        .iter()
        .map(|c| c.command.clone())
        .collect()
}
