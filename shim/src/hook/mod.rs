//! Hook adapters: `praxis-run hook claude-code`, `praxis-run hook codex` and
//! `praxis-run hook openclaw` (called by the OpenClaw plugin).
//!
//! Each reads one hook event on stdin, asks praxisd to judge the tool call
//! (audited with the runtime's session and tool-call ids) and answers in the
//! runtime's own output format. An allowed Bash command is rewritten to run
//! through `praxis-run`, so execution itself still passes the chokepoint. No
//! path through here lets a tool run on an error: the caller turns every
//! [`HookError`] into the runtime's blocking answer.

pub mod claude;
pub mod codex;
pub mod openclaw;

use std::path::{Path, PathBuf};

use praxis_proto::{Command, DecisionFrame, FileAccess, NoteRequest, Subject, Verdict, words};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::args;
use crate::client::ClientError;
use crate::judge::{self, Caller};

/// Marks an approval token in a command line.
pub const TOKEN_FLAG: &str = "--approval-token";

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("malformed hook event: {0}")]
    Malformed(String),
    #[error("praxis could not judge this tool call: {0}")]
    Daemon(#[from] ClientError),
}

/// What the hook process writes and how it exits.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub code: i32,
}

/// Exit status that blocks the tool call, with stderr as the reason.
pub const EXIT_BLOCK: i32 = 2;

impl Answer {
    fn json(value: Value) -> Answer {
        Answer {
            stdout: Some(value.to_string()),
            stderr: None,
            code: 0,
        }
    }

    fn silent() -> Answer {
        Answer {
            stdout: None,
            stderr: None,
            code: 0,
        }
    }

    fn block(reason: String) -> Answer {
        Answer {
            stdout: None,
            stderr: Some(reason),
            code: EXIT_BLOCK,
        }
    }
}

/// One hook event, with the fields both runtimes send (others are ignored).
#[derive(Debug, Deserialize)]
pub struct Event {
    pub hook_event_name: String,
    pub session_id: String,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<Map<String, Value>>,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    #[serde(default)]
    pub tool_response: Option<Value>,
    #[serde(default)]
    pub permission_mode: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub stop_hook_active: Option<bool>,
    /// Claude Code's PostToolUseFailure: the user interrupted the call.
    #[serde(default)]
    pub is_interrupt: Option<bool>,
}

impl Event {
    pub fn parse(input: &str) -> Result<Event, HookError> {
        serde_json::from_str(input).map_err(|e| HookError::Malformed(e.to_string()))
    }

    fn caller(&self, runtime: &str) -> Caller {
        Caller {
            runtime: Some(runtime.to_owned()),
            session: Some(self.session_id.clone()),
            tool_call_id: self.tool_use_id.clone(),
            tool: self.tool_name.clone(),
            role: None,
            attended: false,
            runs_through_praxis_run: false,
            agent_text: None,
        }
    }

    fn cwd(&self) -> Result<PathBuf, HookError> {
        match &self.cwd {
            Some(cwd) => Ok(PathBuf::from(cwd)),
            None => std::env::current_dir().map_err(|e| HookError::Daemon(e.into())),
        }
    }

    fn input_str(&self, key: &str) -> Option<&str> {
        self.tool_input.as_ref()?.get(key)?.as_str()
    }

    /// The call judged as a tool of the runtime's own, `name`, with its
    /// arguments (JSON, keys sorted) for an approval to bind.
    fn tool_subject(&self, name: String) -> Subject {
        Subject::Tool {
            name,
            arguments: self
                .tool_input
                .as_ref()
                .and_then(|input| serde_json::to_string(input).ok()),
        }
    }

    fn tool(&self) -> Result<&str, HookError> {
        self.tool_name
            .as_deref()
            .ok_or_else(|| HookError::Malformed(String::from("no tool_name")))
    }
}

/// What a Bash command is, once unwrapped.
#[derive(Debug, PartialEq, Eq)]
pub struct Shell {
    /// What is judged and run: the command, or what a `praxis-run` call wraps.
    pub command: Command,
}

/// Reads a Bash command: a command that is one call of `praxis-run` is
/// judged on what it wraps (and never wrapped twice).
pub fn shell(text: &str) -> Shell {
    let (words, simple) = words::split(text);
    let wrapped = match words.split_first() {
        Some((first, rest)) if simple && words::basename(first) == "praxis-run" => {
            args::parse(rest.iter().cloned())
                .ok()
                .and_then(|a| a.command)
        }
        _ => None,
    };
    Shell {
        command: wrapped.unwrap_or_else(|| Command::Shell(text.to_owned())),
    }
}

/// Tools of Praxis's own MCP server (`praxis-run mcp`, registered as
/// `praxis`): praxisd judges each call itself when it runs, so a hook does
/// not judge it a second time.
pub fn own_mcp_tool(tool: &str) -> bool {
    tool.starts_with("mcp__praxis__")
}

/// Codex's patch tool: `tool_input.command` is the patch text.
const APPLY_PATCH: &str = "apply_patch";

/// The files a Codex patch writes: the paths of its `*** Add File:`,
/// `*** Update File:`, `*** Delete File:` and `*** Move to:` headers.
pub fn patch_paths(patch: &str) -> Vec<&str> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    patch
        .lines()
        .filter_map(|line| HEADERS.iter().find_map(|h| line.strip_prefix(h)))
        .map(str::trim)
        .filter(|path| !path.is_empty())
        .collect()
}

/// What one judged subject of a tool call is, in words for the agent.
fn describe(tool: &str, subject: &Subject) -> String {
    match subject {
        Subject::File { path, access } => {
            let verb = match access {
                FileAccess::Read => "reads",
                FileAccess::Write => "writes",
            };
            format!("{tool} {verb} {path}")
        }
        Subject::Fetch { url } => format!("{tool} fetches {url}"),
        _ => format!("{tool} runs"),
    }
}

/// The judged subjects of a tool call other than Bash: one, or one per file
/// a patch writes.
fn tool_subjects(event: &Event, tool: &str, cwd: &Path) -> Result<Vec<Subject>, HookError> {
    let path = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| event.input_str(k))
            .map(str::to_owned)
            .ok_or_else(|| HookError::Malformed(format!("{tool} without {}", keys.join(" or "))))
    };
    let write = |path: String| Subject::File {
        path,
        access: FileAccess::Write,
    };
    Ok(vec![match tool {
        APPLY_PATCH => {
            let patch = path(&["command", "input", "patch"])?;
            let paths = patch_paths(&patch);
            if paths.is_empty() {
                return Err(HookError::Malformed(String::from(
                    "apply_patch names no file (no `*** Add/Update/Delete File:` header)",
                )));
            }
            return Ok(paths
                .into_iter()
                .map(|p| write(cwd.join(p).display().to_string()))
                .collect());
        }
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
            write(path(&["file_path", "notebook_path"])?)
        }
        "Read" => Subject::File {
            path: path(&["file_path"])?,
            access: FileAccess::Read,
        },
        "Grep" | "Glob" | "LS" => Subject::File {
            path: event
                .input_str("path")
                .map_or_else(|| cwd.display().to_string(), str::to_owned),
            access: FileAccess::Read,
        },
        "WebFetch" => Subject::Fetch {
            url: path(&["url"])?,
        },
        other => event.tool_subject(other.to_owned()),
    }])
}

/// How much a verdict keeps from running: the strictest of several wins.
fn strictness(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Allow => 0,
        Verdict::Hold => 1,
        Verdict::Stop => 2,
    }
}

/// The daemon's answer on a PreToolUse event.
#[derive(Debug)]
pub struct PreToolUse {
    pub frame: DecisionFrame,
    /// For Bash: the command that runs the judged one through praxis-run.
    pub rewrite: Option<String>,
    /// For other tools: what the call does, in words (`Write writes /w/a.rs`),
    /// since the daemon's reason speaks of the command it judged it as.
    pub what: Option<String>,
}

/// Judges the tool call of a PreToolUse event through the daemon. A Bash
/// command goes with the agent's own text, in which the daemon looks for
/// an agent approving its own actions. When the
/// runtime is `attended` (it asks its user about a HOLD), a held Bash
/// command's rewrite carries the one-time token the daemon minted for it.
/// When the adapter `rewrites` an allowed Bash command to run through
/// praxis-run, the daemon may commit the ALLOW's record after answering.
pub fn pre_tool_use(
    event: &Event,
    runtime: &str,
    attended: bool,
    rewrites: bool,
) -> Result<PreToolUse, HookError> {
    let tool = event.tool()?;
    let cwd = event.cwd()?;
    let mut caller = event.caller(runtime);
    if tool != "Bash" {
        // Every subject is judged (and audited); the strictest answer stands.
        let mut strictest: Option<(DecisionFrame, String)> = None;
        for subject in tool_subjects(event, tool, &cwd)? {
            let what = describe(tool, &subject);
            let frame = judge::judge(subject, &cwd, &caller)?;
            if strictest
                .as_ref()
                .is_none_or(|(worst, _)| strictness(frame.decision) > strictness(worst.decision))
            {
                strictest = Some((frame, what));
            }
        }
        let (frame, what) =
            strictest.ok_or_else(|| HookError::Malformed(format!("{tool}: nothing to judge")))?;
        return Ok(PreToolUse {
            frame,
            rewrite: None,
            what: Some(what),
        });
    }
    let text = event
        .input_str("command")
        .ok_or_else(|| HookError::Malformed(String::from("Bash without a command string")))?;
    let shell = shell(text);
    caller.attended = attended;
    caller.agent_text = Some(text.to_owned());
    caller.runs_through_praxis_run = rewrites;
    let frame = judge::judge(
        Subject::Command {
            command: shell.command.clone(),
        },
        &cwd,
        &caller,
    )?;
    let rewrite = rewrite(&shell.command, &caller, frame.approval_token.as_deref())?;
    Ok(PreToolUse {
        frame,
        rewrite: Some(rewrite),
        what: None,
    })
}

/// The command line that runs `command` through this praxis-run with the
/// runtime's ids (and the one-time approval token of a held command, if the
/// daemon minted one); bash runs it, with the caller's PATH.
pub fn rewrite(
    command: &Command,
    caller: &Caller,
    token: Option<&str>,
) -> Result<String, HookError> {
    let exe = std::env::current_exe().map_err(|e| HookError::Daemon(e.into()))?;
    let mut line = vec![words::quote(&exe.display().to_string())];
    let mut opt = |flag: &str, value: &Option<String>| {
        if let Some(v) = value {
            line.push(flag.to_owned());
            line.push(words::quote(v));
        }
    };
    opt("--session", &caller.session);
    opt("--runtime", &caller.runtime);
    opt("--tool-call-id", &caller.tool_call_id);
    opt(TOKEN_FLAG, &token.map(str::to_owned));
    match command {
        Command::Shell(script) => {
            line.push(String::from("-c"));
            line.push(words::quote(script));
        }
        Command::Argv(argv) => {
            line.push(String::from("--"));
            line.extend(argv.iter().map(|a| words::quote(a)));
        }
    }
    Ok(line.join(" "))
}

/// The one collapsed target of a tool call: its command, path, URL,
/// pattern or query, the first the input has.
pub fn target(event: &Event) -> Option<&str> {
    const KEYS: [&str; 7] = [
        "command",
        "file_path",
        "notebook_path",
        "path",
        "url",
        "pattern",
        "query",
    ];
    KEYS.iter().find_map(|k| event.input_str(k))
}

/// Records the outcome of a tool call (PostToolUse), linked by its id. Only
/// facts about the response are kept, never its content; the call's target
/// goes to the session's trajectory (praxisd does not audit it raw).
/// Returns the steer the outcome reached, if any.
pub fn post_tool_use(event: &Event, runtime: &str) -> Result<Option<String>, HookError> {
    let caller = event.caller(runtime);
    let mut detail = Map::new();
    detail.insert("tool_name".into(), event.tool()?.into());
    if let Some(target) = target(event) {
        detail.insert("target".into(), target.into());
    }
    // Claude Code sends a failed call as PostToolUseFailure (its
    // PostToolUse is for successes only); its error text is not kept.
    if event.hook_event_name == "PostToolUseFailure" {
        detail.insert("is_error".into(), true.into());
        if let Some(interrupted) = event.is_interrupt {
            detail.insert("interrupted".into(), interrupted.into());
        }
    }
    if let Some(response) = &event.tool_response {
        for key in ["interrupted", "is_error", "exit_code", "success"] {
            if let Some(v) = response
                .get(key)
                .filter(|v| v.is_boolean() || v.is_number())
            {
                detail.insert(key.into(), v.clone());
            }
        }
        detail.insert("response_bytes".into(), response.to_string().len().into());
    }
    Ok(judge::note(NoteRequest {
        kind: String::from("tool_finished"),
        session: caller.session,
        runtime: caller.runtime,
        tool_call_id: caller.tool_call_id,
        decision: None,
        reason: None,
        detail,
    })?)
}

/// Records a lifecycle event of the session: `session_ended` (Stop),
/// `session_started` (SessionStart), `prompt_submitted` (UserPromptSubmit;
/// the prompt itself is never sent). Returns the steer it reached, if any.
pub fn lifecycle(event: &Event, runtime: &str, kind: &str) -> Result<Option<String>, HookError> {
    let caller = event.caller(runtime);
    Ok(judge::note(NoteRequest {
        kind: kind.to_owned(),
        session: caller.session,
        runtime: caller.runtime,
        tool_call_id: None,
        decision: None,
        reason: None,
        detail: Map::new(),
    })?)
}

/// Records the end of a session (Stop).
pub fn stop(event: &Event, runtime: &str) -> Result<(), HookError> {
    lifecycle(event, runtime, "session_ended").map(drop)
}

/// The hook output that hands `steer` to the agent as added context
/// (`hookSpecificOutput.additionalContext`), or no output without one.
pub fn context(event_name: &str, steer: Option<String>) -> Answer {
    match steer {
        Some(text) => Answer::json(serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": event_name,
                "additionalContext": text,
            }
        })),
        None => Answer::silent(),
    }
}

/// The machine-readable refusal a runtime shows beside its own answer:
/// `decision`, `execution_prevented: true`, `reason`, the request id and,
/// for HOLD, the operator command that approves it.
pub fn signal(frame: &DecisionFrame) -> String {
    crate::exec::refusal_json(frame.decision, &frame.reason, Some(frame)).to_string()
}

/// The hook event named in `input`, read leniently, so that even input that
/// is not a valid event is answered in the shape its event takes.
pub fn event_name(input: &str) -> Option<String> {
    let value: Value = serde_json::from_str(input).ok()?;
    Some(value.get("hook_event_name")?.as_str()?.to_owned())
}

/// The reason shown for a refusal, with how to get a HOLD approved.
pub fn refusal_reason(frame: &DecisionFrame) -> String {
    let mut reason = format!(
        "praxis {}: {} (request {}, tier {})",
        frame.decision.as_str(),
        frame.reason,
        frame.request_id,
        frame.tier
    );
    match (&frame.approve_with, frame.decision) {
        (Some(cmd), Verdict::Hold) => reason.push_str(&format!(
            "; an operator can allow it with `{cmd}`, then retry the same call"
        )),
        (_, Verdict::Stop) => reason.push_str("; this cannot be approved, choose another approach"),
        _ => {}
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_praxis_run_call_is_judged_on_what_it_wraps() {
        let s = shell("praxis-run --session s1 -c 'ls -la'");
        assert_eq!(s.command, Command::Shell("ls -la".into()));
        let s = shell("/usr/bin/praxis-run -- git status");
        assert_eq!(
            s.command,
            Command::Argv(vec!["git".into(), "status".into()])
        );
        // Not one simple call: judged whole.
        let s = shell("cd x && praxis-run -c ls");
        assert_eq!(s.command, Command::Shell("cd x && praxis-run -c ls".into()));
    }

    #[test]
    fn a_patch_is_judged_on_every_file_it_writes() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: b.txt\n+hi\n*** Delete File: /etc/c\n*** Update File: d.rs\n*** Move to: e.rs\n*** End Patch\n";
        assert_eq!(
            patch_paths(patch),
            ["src/a.rs", "b.txt", "/etc/c", "d.rs", "e.rs"]
        );
        let event = Event::parse(
            &serde_json::json!({"hook_event_name": "PreToolUse", "session_id": "s",
                "tool_name": "apply_patch", "tool_input": {"command": patch}})
            .to_string(),
        )
        .unwrap();
        let subjects = tool_subjects(&event, "apply_patch", Path::new("/w")).unwrap();
        assert_eq!(subjects.len(), 5);
        assert_eq!(
            subjects[2],
            Subject::File {
                path: "/etc/c".into(),
                access: FileAccess::Write
            }
        );
        assert_eq!(
            describe("apply_patch", &subjects[0]),
            "apply_patch writes /w/src/a.rs"
        );
        let empty = Event::parse(
            r#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"apply_patch",
                "tool_input":{"command":"*** Begin Patch\n*** End Patch"}}"#,
        )
        .unwrap();
        assert!(tool_subjects(&empty, "apply_patch", Path::new("/w")).is_err());
    }

    #[test]
    fn file_tools_are_judged_on_their_path() {
        let event = Event::parse(
            r#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"NotebookEdit",
                "tool_input":{"notebook_path":"/w/a.ipynb"}}"#,
        )
        .unwrap();
        assert_eq!(
            tool_subjects(&event, "NotebookEdit", Path::new("/w")).unwrap(),
            [Subject::File {
                path: "/w/a.ipynb".into(),
                access: FileAccess::Write
            }]
        );
        assert!(matches!(
            &tool_subjects(&event, "mcp__github__create_issue", Path::new("/w")).unwrap()[..],
            [Subject::Tool { name, arguments: Some(arguments) }]
                if name == "mcp__github__create_issue" && arguments == r#"{"notebook_path":"/w/a.ipynb"}"#
        ));
        assert!(tool_subjects(&event, "Read", Path::new("/w")).is_err());
    }
}
