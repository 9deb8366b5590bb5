//! OpenClaw: `praxis-run hook openclaw`, called by the Praxis plugin for
//! OpenClaw (`integrations/openclaw/`) with one event on stdin. Events are
//! named as OpenClaw's hooks are: `before_tool_call`, `after_tool_call`,
//! `session_start`, `session_end`.
//!
//! The answer is one JSON object on stdout. For `before_tool_call` it carries
//! `decision`, `execution_prevented` and `reason` (plus `request_id`, `tier`,
//! `approve_with`), and for a shell tool the rewritten `params` that run the
//! command through praxis-run. Every error is a HOLD with exit 2, which the
//! plugin turns into OpenClaw's `block`.

use praxis_proto::{DecisionFrame, FileAccess, Subject, Verdict};
use serde_json::{Map, Value, json};

use super::{Answer, EXIT_BLOCK, Event, HookError, refusal_reason};
use crate::exec::refusal_json;
use crate::judge;

/// Name of this runtime in the audit record.
pub const RUNTIME: &str = "openclaw";

/// Handles one event; never fails open.
pub fn handle(input: &str) -> Answer {
    match answer(input) {
        Ok(answer) => answer,
        Err(e) => fail(None, e.to_string()),
    }
}

/// The blocking answer, whatever the event: a HOLD that prevented
/// execution, exit 2.
pub fn fail(_event: Option<&str>, reason: String) -> Answer {
    Answer {
        stdout: Some(refusal_json(Verdict::Hold, &reason, None).to_string()),
        stderr: None,
        code: EXIT_BLOCK,
    }
}

/// Who answers a HOLD, as the plugin's `approvals` setting says: OpenClaw's
/// own approval prompt (the default), or only an operator's `praxis approve`
/// (a headless run, where no prompt can be answered).
#[derive(Debug, Default, serde::Deserialize, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Approvals {
    #[default]
    Openclaw,
    Operator,
}

/// The event's `approvals` field, beside the fields every runtime sends.
#[derive(Debug, Default, serde::Deserialize)]
struct Route {
    #[serde(default)]
    approvals: Approvals,
}

fn answer(input: &str) -> Result<Answer, HookError> {
    let event = Event::parse(input)?;
    let route: Route =
        serde_json::from_str(input).map_err(|e| HookError::Malformed(e.to_string()))?;
    match event.hook_event_name.as_str() {
        "before_tool_call" => before_tool_call(&event, route.approvals).map(Answer::json),
        "after_tool_call" => super::post_tool_use(&event, RUNTIME).map(|_| recorded(true)),
        "session_end" => super::stop(&event, RUNTIME).map(|()| recorded(true)),
        "session_start" => {
            super::lifecycle(&event, RUNTIME, "session_started").map(|_| recorded(true))
        }
        other => Err(HookError::Malformed(format!(
            "unsupported hook event {other}"
        ))),
    }
}

fn recorded(yes: bool) -> Answer {
    Answer::json(json!({ "recorded": yes }))
}

/// What one OpenClaw tool call is judged as.
#[derive(Debug, PartialEq, Eq)]
enum Judged {
    /// A shell command, rewritten to run through praxis-run when `rewrite`.
    Shell { text: String, rewrite: bool },
    /// Subjects judged one by one; the strictest decision stands.
    Subjects(Vec<Subject>),
    /// Reads or stops what is already running: nothing new starts.
    Inert,
}

/// `process` actions that feed input to a running session: the text typed
/// into a shell is judged as that shell would run it.
const PROCESS_INPUT: &[&str] = &["write", "submit", "paste", "send-keys"];

fn judged(event: &Event) -> Result<Judged, HookError> {
    let tool = event.tool()?;
    let text = |key: &str| {
        event
            .input_str(key)
            .map(str::to_owned)
            .ok_or_else(|| HookError::Malformed(format!("{tool} without a `{key}` string")))
    };
    let file = |access| -> Result<Judged, HookError> {
        Ok(Judged::Subjects(vec![Subject::File {
            path: text("path")?,
            access,
        }]))
    };
    Ok(match tool {
        "exec" | "bash" => Judged::Shell {
            text: text("command")?,
            rewrite: true,
        },
        "process" => {
            let action = text("action")?;
            if !PROCESS_INPUT.contains(&action.as_str()) {
                return Ok(Judged::Inert);
            }
            let typed = ["data", "text", "literal"]
                .iter()
                .find_map(|k| event.input_str(k));
            match typed {
                Some(typed) => Judged::Shell {
                    text: typed.to_owned(),
                    rewrite: false,
                },
                // Key tokens or raw bytes: no text to judge, so no rule covers it.
                None => Judged::Subjects(vec![event.tool_subject(format!("process {action}"))]),
            }
        }
        "write" | "edit" => file(FileAccess::Write)?,
        "read" => file(FileAccess::Read)?,
        "apply_patch" => {
            let paths = patch_paths(&text("input")?);
            if paths.is_empty() {
                return Err(HookError::Malformed(String::from(
                    "apply_patch names no file",
                )));
            }
            Judged::Subjects(
                paths
                    .into_iter()
                    .map(|path| Subject::File {
                        path,
                        access: FileAccess::Write,
                    })
                    .collect(),
            )
        }
        "web_fetch" => Judged::Subjects(vec![Subject::Fetch { url: text("url")? }]),
        other => Judged::Subjects(vec![event.tool_subject(other.to_owned())]),
    })
}

/// The files an `apply_patch` input adds, updates, deletes or moves to.
fn patch_paths(patch: &str) -> Vec<String> {
    const HEADERS: &[&str] = &[
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    let mut paths: Vec<String> = Vec::new();
    for line in patch.lines() {
        let found = HEADERS
            .iter()
            .find_map(|h| line.strip_prefix(h))
            .map(str::trim)
            .filter(|p| !p.is_empty());
        if let Some(path) = found.filter(|p| !paths.iter().any(|q| q == p)) {
            paths.push(path.to_owned());
        }
    }
    paths
}

fn before_tool_call(event: &Event, approvals: Approvals) -> Result<Value, HookError> {
    let cwd = event.cwd()?;
    match judged(event)? {
        Judged::Inert => Ok(json!({
            "decision": "ALLOW",
            "execution_prevented": false,
            "reason": "praxis ALLOW: the call reads or ends a running process and starts nothing",
        })),
        Judged::Shell { text, rewrite } => shell(event, &text, rewrite, approvals),
        Judged::Subjects(subjects) => {
            let caller = event.caller(RUNTIME);
            let mut strictest: Option<DecisionFrame> = None;
            for subject in subjects {
                let frame = judge::judge(subject, &cwd, &caller)?;
                if strictest
                    .as_ref()
                    .is_none_or(|s| rank(frame.decision) > rank(s.decision))
                {
                    strictest = Some(frame);
                }
            }
            let frame =
                strictest.ok_or_else(|| HookError::Malformed(String::from("nothing to judge")))?;
            Ok(decision(&frame, None))
        }
    }
}

/// A shell command (or text typed into a running shell), judged as the Bash
/// tool of the other runtimes is: an agent's own operator calls are STOP,
/// and an allowed or held command is rewritten to run through praxis-run
/// (a held one with the daemon's one-time token, used only if the user
/// approves the call in OpenClaw; none is minted where only an operator
/// approves, since no prompt would ever use it).
fn shell(
    event: &Event,
    text: &str,
    rewrite: bool,
    approvals: Approvals,
) -> Result<Value, HookError> {
    let as_bash = Event {
        hook_event_name: event.hook_event_name.clone(),
        session_id: event.session_id.clone(),
        tool_name: Some(String::from("Bash")),
        tool_input: Some(Map::from_iter([("command".into(), text.into())])),
        tool_use_id: event.tool_use_id.clone(),
        tool_response: None,
        permission_mode: None,
        cwd: event.cwd.clone(),
        stop_hook_active: None,
        is_interrupt: None,
    };
    let attended = rewrite && approvals == Approvals::Openclaw;
    let judged = super::pre_tool_use(&as_bash, RUNTIME, attended, rewrite)?;
    let params = match (rewrite, judged.rewrite, judged.frame.decision) {
        (true, Some(line), Verdict::Allow | Verdict::Hold) => {
            let mut params = event.tool_input.clone().unwrap_or_default();
            params.insert("command".into(), Value::String(line));
            Some(params)
        }
        _ => None,
    };
    Ok(decision(&judged.frame, params))
}

fn rank(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Allow => 0,
        Verdict::Hold => 1,
        Verdict::Stop => 2,
    }
}

/// The answer on a judged call: the daemon's decision, machine-readable.
fn decision(frame: &DecisionFrame, params: Option<Map<String, Value>>) -> Value {
    let mut out = match frame.decision {
        Verdict::Allow => json!({
            "decision": "ALLOW",
            "execution_prevented": false,
            "reason": format!(
                "praxis ALLOW: {} (request {}, tier {})",
                frame.reason, frame.request_id, frame.tier
            ),
            "request_id": frame.request_id,
            "tier": frame.tier,
            "rule_ids": frame.rule_ids,
        }),
        refused => refusal_json(refused, &refusal_reason(frame), Some(frame)),
    };
    if let Some(params) = params {
        out["params"] = Value::Object(params);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(tool: &str, input: Value) -> Event {
        Event::parse(
            &json!({
                "hook_event_name": "before_tool_call",
                "session_id": "s",
                "tool_name": tool,
                "tool_input": input,
                "cwd": "/w",
            })
            .to_string(),
        )
        .unwrap()
    }

    fn judged_as(tool: &str, input: Value) -> Result<Judged, HookError> {
        judged(&event(tool, input))
    }

    #[test]
    fn shell_tools_are_judged_on_their_command() {
        assert_eq!(
            judged_as("exec", json!({"command": "ls", "workdir": "/w"})).unwrap(),
            Judged::Shell {
                text: "ls".into(),
                rewrite: true
            }
        );
        assert!(judged_as("exec", json!({"cmd": "ls"})).is_err());
    }

    #[test]
    fn process_input_is_judged_and_process_control_is_inert() {
        assert_eq!(
            judged_as(
                "process",
                json!({"action": "write", "sessionId": "p", "data": "rm -rf /\n"})
            )
            .unwrap(),
            Judged::Shell {
                text: "rm -rf /\n".into(),
                rewrite: false
            }
        );
        assert_eq!(
            judged_as("process", json!({"action": "poll", "sessionId": "p"})).unwrap(),
            Judged::Inert
        );
        assert_eq!(
            judged_as(
                "process",
                json!({"action": "send-keys", "sessionId": "p", "keys": ["C-c"]})
            )
            .unwrap(),
            Judged::Subjects(vec![Subject::Tool {
                name: "process send-keys".into(),
                arguments: Some(r#"{"action":"send-keys","keys":["C-c"],"sessionId":"p"}"#.into())
            }])
        );
    }

    #[test]
    fn file_tools_are_judged_on_their_paths() {
        assert_eq!(
            judged_as("write", json!({"path": "a.txt", "content": "x"})).unwrap(),
            Judged::Subjects(vec![Subject::File {
                path: "a.txt".into(),
                access: FileAccess::Write
            }])
        );
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch";
        let Judged::Subjects(subjects) = judged_as("apply_patch", json!({"input": patch})).unwrap()
        else {
            panic!("apply_patch is judged on its paths");
        };
        let paths: Vec<_> = subjects
            .iter()
            .map(|s| match s {
                Subject::File { path, .. } => path.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(paths, ["new.txt", "src/a.rs", "src/b.rs", "old.txt"]);
        assert!(judged_as("apply_patch", json!({"input": "no headers"})).is_err());
    }

    #[test]
    fn other_tools_meet_the_unknown_posture() {
        assert_eq!(
            judged_as("sessions_send", json!({"message": "hi"})).unwrap(),
            Judged::Subjects(vec![Subject::Tool {
                name: "sessions_send".into(),
                arguments: Some(r#"{"message":"hi"}"#.into())
            }])
        );
    }

    #[test]
    fn errors_block_with_the_machine_readable_refusal() {
        let answer = handle("not json");
        assert_eq!(answer.code, EXIT_BLOCK);
        let out: Value = serde_json::from_str(answer.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(out["decision"], "HOLD");
        assert_eq!(out["execution_prevented"], true);
        assert!(out["reason"].as_str().unwrap().contains("malformed"));
        assert_eq!(
            handle(r#"{"hook_event_name":"other","session_id":"s"}"#).code,
            EXIT_BLOCK
        );
    }
}
