//! The policy stage's precondition: which policy is in force, if any may be.
//! The decision itself is `praxis_policy::Policy::decide`, a pure call the
//! pipeline makes over the preconditions' snapshot.

use std::sync::Arc;

use praxis_policy::Policy;

/// The loaded policy, or why the daemon serves only HOLD: no policy ever
/// loaded, or the sandbox failed its self-test.
pub fn in_force(
    self_test: &Result<String, String>,
    loaded: Result<Arc<Policy>, String>,
) -> Result<Arc<Policy>, String> {
    if let Err(why) = self_test {
        return Err(format!(
            "sandbox self-test failed, serving only HOLD: {why}"
        ));
    }
    loaded.map_err(|why| format!("no valid policy loaded, serving only HOLD: {why}"))
}
