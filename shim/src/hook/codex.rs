//! Codex: it rejects unknown output fields and has no `ask`, and each event
//! takes its own output shape. PreToolUse: ALLOW of a Bash command is an
//! allow with `updatedInput.command` rewritten through praxis-run; ALLOW of
//! another tool (an `apply_patch` whose files the policy allows) is no
//! answer; HOLD and STOP are a deny whose reason carries the approve command,
//! with the refusal as JSON in `systemMessage`. The session control plane's
//! steer goes in `hookSpecificOutput.additionalContext`, which Codex takes on
//! PreToolUse, PostToolUse, SessionStart and UserPromptSubmit. PostToolUse
//! and Stop otherwise answer nothing when recorded, and `decision: "block"` with the reason when not.
//! Every error gets its event's refusing shape: never a tool run undecided.

use praxis_proto::Verdict;
use serde_json::{Value, json};

use super::{Answer, Event, HookError, context, own_mcp_tool, refusal_reason, signal};

/// Name of this runtime in the audit record.
pub const RUNTIME: &str = "codex";

/// Handles one event; never fails open.
pub fn handle(input: &str) -> Answer {
    match answer(input) {
        Ok(answer) => answer,
        Err(e) => fail(super::event_name(input).as_deref(), e.to_string()),
    }
}

/// The refusing answer in the shape Codex accepts for `event`: a deny for
/// PreToolUse (and for input that names no event, since it may be one), a
/// block with the reason for PostToolUse and Stop.
pub fn fail(event: Option<&str>, reason: String) -> Answer {
    match event {
        Some("PostToolUse" | "Stop") => block(reason),
        _ => deny(&reason, None, None),
    }
}

fn answer(input: &str) -> Result<Answer, HookError> {
    let event = Event::parse(input)?;
    match event.hook_event_name.as_str() {
        "PreToolUse" => pre_tool_use(&event),
        "PostToolUse" => super::post_tool_use(&event, RUNTIME).map(|s| context("PostToolUse", s)),
        "SessionStart" => {
            super::lifecycle(&event, RUNTIME, "session_started").map(|s| context("SessionStart", s))
        }
        "UserPromptSubmit" => super::lifecycle(&event, RUNTIME, "prompt_submitted")
            .map(|s| context("UserPromptSubmit", s)),
        "Stop" => match super::stop(&event, RUNTIME) {
            Ok(()) => Ok(Answer::silent()),
            // A block makes Codex go on with the reason as the next prompt;
            // once it already goes on because of a stop hook, that would loop,
            // so the failure is shown to the user instead.
            Err(e) if event.stop_hook_active == Some(true) => Ok(Answer::json(json!({
                "systemMessage": e.to_string(),
            }))),
            Err(e) => Err(e),
        },
        other => Err(HookError::Malformed(format!(
            "unsupported hook event {other}"
        ))),
    }
}

fn pre_tool_use(event: &Event) -> Result<Answer, HookError> {
    // praxisd judges a call of its own MCP server when the call runs.
    if own_mcp_tool(event.tool()?) {
        return Ok(Answer::silent());
    }
    let judged = super::pre_tool_use(event, RUNTIME, false, true)?;
    Ok(match (judged.frame.decision, &judged.rewrite) {
        (Verdict::Allow, Some(rewrite)) => {
            let mut input = event.tool_input.clone().unwrap_or_default();
            input.insert("command".into(), Value::String(rewrite.clone()));
            let mut output = json!({
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": input,
            });
            if let Some(steer) = &judged.frame.steer {
                output["additionalContext"] = Value::String(steer.clone());
            }
            Answer::json(json!({ "hookSpecificOutput": output }))
        }
        // No command to rewrite: no decision, Codex goes on as it would.
        (Verdict::Allow, None) => context("PreToolUse", judged.frame.steer.clone()),
        _ => deny(
            &refusal_reason(&judged.frame),
            Some(signal(&judged.frame)),
            judged.frame.steer.as_deref(),
        ),
    })
}

/// A PreToolUse deny; `signal` is the refusal as JSON, shown to the user.
/// `steer` is the session control plane's text for the agent, if any.
fn deny(reason: &str, signal: Option<String>, steer: Option<&str>) -> Answer {
    let mut answer = json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    });
    if let Some(steer) = steer {
        answer["hookSpecificOutput"]["additionalContext"] = Value::String(steer.to_owned());
    }
    if let Some(signal) = signal {
        answer["systemMessage"] = Value::String(signal);
    }
    Answer::json(answer)
}

/// The blocking answer of PostToolUse and Stop: top-level `decision` and
/// `reason` (those events take no `hookSpecificOutput` decision).
fn block(reason: String) -> Answer {
    Answer::json(json!({ "decision": "block", "reason": reason }))
}
