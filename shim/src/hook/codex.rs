//! Codex: it rejects unknown output fields, has no `ask`, and accepts an
//! allow only with `updatedInput.command`. ALLOW of a Bash command is that
//! allow, rewritten through praxis-run; HOLD and STOP are a deny whose reason
//! carries the approve command; every error is a deny too.

use praxis_proto::Verdict;
use serde_json::{Value, json};

use super::{Answer, Event, HookError, refusal_reason};

/// Name of this runtime in the audit record.
pub const RUNTIME: &str = "codex";

/// Handles one event; never fails open.
pub fn handle(input: &str) -> Answer {
    match answer(input) {
        Ok(answer) => answer,
        Err(e) => fail(e.to_string()),
    }
}

/// The answer to any error: a deny carrying the reason.
pub fn fail(reason: String) -> Answer {
    deny(&reason)
}

fn answer(input: &str) -> Result<Answer, HookError> {
    let event = Event::parse(input)?;
    match event.hook_event_name.as_str() {
        "PreToolUse" => pre_tool_use(&event),
        "PostToolUse" => super::post_tool_use(&event, RUNTIME).map(|()| Answer::silent()),
        "Stop" => super::stop(&event, RUNTIME).map(|()| Answer::silent()),
        other => Err(HookError::Malformed(format!(
            "unsupported hook event {other}"
        ))),
    }
}

fn pre_tool_use(event: &Event) -> Result<Answer, HookError> {
    let judged = super::pre_tool_use(event, RUNTIME, false)?;
    Ok(match (judged.frame.decision, &judged.rewrite) {
        (Verdict::Allow, Some(rewrite)) => {
            let mut input = event.tool_input.clone().unwrap_or_default();
            input.insert("command".into(), Value::String(rewrite.clone()));
            Answer::json(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "updatedInput": input,
                }
            }))
        }
        // No command to rewrite: no decision, Codex goes on as it would.
        (Verdict::Allow, None) => Answer::silent(),
        _ => deny(&refusal_reason(&judged.frame)),
    })
}

fn deny(reason: &str) -> Answer {
    Answer::json(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }))
}
