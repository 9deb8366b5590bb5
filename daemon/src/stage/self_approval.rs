//! The self-approval stage: an agent may not approve its own actions. A
//! shell call whose text, as the agent wrote it, calls the operator CLI
//! (`praxis`) or carries an approval token is STOP whatever the policy
//! says, and gets no approval token.

use praxis_proto::words;

/// Why such a call is STOP.
pub const REASON: &str = "the command calls the praxis operator CLI or carries an approval token; an agent may not approve its own actions";

/// The audit kind of the record of such a STOP.
pub const STOPPED: &str = "hook_stopped";

/// Marks an approval token in a praxis-run command line.
const TOKEN_FLAG: &str = "--approval-token";

/// Whether the agent's `text` names the operator CLI or carries a token
/// (the flag, or a word starting with the tokens' `token_prefix`).
pub fn approves_itself(text: &str, token_prefix: &str) -> bool {
    let (words, _) = words::split(text);
    words.iter().any(|w| {
        words::basename(w) == "praxis" || w.starts_with(TOKEN_FLAG) || w.starts_with(token_prefix)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_calls_and_tokens_approve_themselves() {
        for text in [
            "praxis approve r-1",
            "ls; /usr/local/bin/praxis kill --release",
            "p''raxis approve r-1",
            "praxis-run --approval-token pxa-1 -c ls",
            "echo pxa-deadbeef",
        ] {
            assert!(approves_itself(text, "pxa-"), "{text}");
        }
        for text in [
            "git status && praxis-run -c ls",
            "praxis-run --session s1 -c 'ls -la'",
        ] {
            assert!(!approves_itself(text, "pxa-"), "{text}");
        }
    }
}
