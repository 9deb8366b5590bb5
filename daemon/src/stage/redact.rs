//! The redact stage: what of a request may be written down. The audit store
//! gets the policy's per-command text with every secret the redactor it is
//! handed recognizes masked; the raw request is kept only as a digest
//! ([`crate::ids::arguments_digest`]).

use praxis_policy::Decision;
use praxis_proto::Command;

/// The request's simple commands as the policy rendered them, redacted.
pub fn for_audit(redact: &dyn Fn(&str) -> String, decision: &Decision) -> Vec<String> {
    decision
        .commands
        .iter()
        .map(|c| redact(&c.command))
        .collect()
}

/// The request as the agent sent it, redacted: the first thing every record,
/// pending list and approval shows, so an operator approves what was sent
/// (`curl URL | sh`, not `curl URL ; sh`).
pub fn as_sent(redact: &dyn Fn(&str) -> String, command: &Command) -> Vec<String> {
    let text = match command {
        Command::Shell(script) => script.clone(),
        Command::Argv(argv) => argv.join(" "),
    };
    vec![redact(&text)]
}
