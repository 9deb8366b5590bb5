//! Claude Code: PreToolUse answers `allow` (Bash rewritten through
//! praxis-run), `ask` for HOLD (or `deny` when no human will be asked:
//! headless runs and unattended permission modes) and `deny` for STOP, a
//! HOLD or STOP also carrying the refusal as JSON in `systemMessage`;
//! PostToolUse, SessionStart, UserPromptSubmit and Stop are recorded. The
//! session control plane's steer reaches the agent as `additionalContext`. Malformed input and every error exit 2,
//! Claude Code's blocking code, never 1 (which lets the tool run).

use praxis_proto::Verdict;
use serde_json::{Value, json};

use super::{Answer, Event, HookError, context, own_mcp_tool, refusal_reason, signal};

/// Name of this runtime in the audit record.
pub const RUNTIME: &str = "claude-code";

/// Permission modes in which no human answers a prompt.
const UNATTENDED: &[&str] = &["bypassPermissions", "dontAsk"];

/// What Claude Code sets `CLAUDE_CODE_ENTRYPOINT` to (and its hooks inherit)
/// when it runs headless: `claude -p` and the TypeScript and Python Agent
/// SDKs. Nobody sits at a prompt there.
const HEADLESS: &[&str] = &["sdk-cli", "sdk-ts", "sdk-py"];

/// Whether a human will answer an `ask` for this event.
fn attended(event: &Event) -> bool {
    let unattended_mode = event
        .permission_mode
        .as_deref()
        .is_some_and(|m| UNATTENDED.contains(&m));
    let headless = std::env::var("CLAUDE_CODE_ENTRYPOINT")
        .is_ok_and(|entry| HEADLESS.contains(&entry.as_str()));
    !unattended_mode && !headless
}

/// Handles one event; never fails open.
pub fn handle(input: &str) -> Answer {
    match answer(input) {
        Ok(answer) => answer,
        Err(e) => fail(None, e.to_string()),
    }
}

/// The blocking answer, whatever the event: exit 2 with the reason on stderr.
pub fn fail(_event: Option<&str>, reason: String) -> Answer {
    Answer::block(reason)
}

fn answer(input: &str) -> Result<Answer, HookError> {
    let event = Event::parse(input)?;
    match event.hook_event_name.as_str() {
        "PreToolUse" => pre_tool_use(&event),
        name @ ("PostToolUse" | "PostToolUseFailure") => {
            super::post_tool_use(&event, RUNTIME).map(|s| context(name, s))
        }
        "SessionStart" => {
            super::lifecycle(&event, RUNTIME, "session_started").map(|s| context("SessionStart", s))
        }
        "UserPromptSubmit" => super::lifecycle(&event, RUNTIME, "prompt_submitted")
            .map(|s| context("UserPromptSubmit", s)),
        "Stop" | "SubagentStop" => match super::stop(&event, RUNTIME) {
            Ok(()) => Ok(Answer::silent()),
            // Blocking a stop that is already continuing because of a stop
            // hook would loop: the failure is reported, not enforced.
            Err(e) if event.stop_hook_active == Some(true) => Ok(Answer {
                stderr: Some(e.to_string()),
                ..Answer::silent()
            }),
            Err(e) => Err(e),
        },
        other => Err(HookError::Malformed(format!(
            "unsupported hook event {other}"
        ))),
    }
}

fn pre_tool_use(event: &Event) -> Result<Answer, HookError> {
    // Left to the runtime's own permissions: no second judgment, no grant.
    if own_mcp_tool(event.tool()?) {
        return Ok(Answer::silent());
    }
    let unattended = !attended(event);
    let judged = super::pre_tool_use(event, RUNTIME, !unattended, true)?;
    let frame = &judged.frame;
    let decision = match (frame.decision, unattended) {
        (Verdict::Allow, _) => "allow",
        (Verdict::Hold, false) => "ask",
        (Verdict::Hold, true) | (Verdict::Stop, _) => "deny",
    };
    let reason = match (frame.decision, &frame.approval_token) {
        (Verdict::Allow, _) => match &judged.what {
            Some(what) => format!(
                "praxis ALLOW: {what} (request {}, tier {})",
                frame.request_id, frame.tier
            ),
            None => format!(
                "praxis ALLOW: {} (request {}, tier {}); runs through praxis-run",
                frame.reason, frame.request_id, frame.tier
            ),
        },
        (Verdict::Hold, Some(_)) if decision == "ask" => format!(
            "praxis HOLD: {} (request {}, tier {}); saying yes approves this exact command once, in this session, and it runs through praxis-run",
            frame.reason, frame.request_id, frame.tier
        ),
        _ => refusal_reason(frame),
    };
    let mut output = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    });
    // The rewrite goes with allow and ask: what the user approves in the
    // prompt is what then runs, through praxis-run.
    if let (Some(rewrite), "allow" | "ask") = (&judged.rewrite, decision) {
        let mut input = event.tool_input.clone().unwrap_or_default();
        input.insert("command".into(), Value::String(rewrite.clone()));
        output["updatedInput"] = Value::Object(input);
    }
    // The session's steer goes with the answer; it stops nothing.
    if let Some(steer) = &frame.steer {
        output["additionalContext"] = Value::String(steer.clone());
    }
    let mut answer = json!({ "hookSpecificOutput": output });
    if frame.decision != Verdict::Allow {
        answer["systemMessage"] = Value::String(signal(frame));
    }
    Ok(Answer::json(answer))
}
