//! The Claude Code and Codex hook adapters, end to end: hook events piped
//! into `praxis-run hook …` against a real daemon, the answers checked field
//! by field, the rewritten commands run, the audit trail read back.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Daemon, bin, stdout_json};
use serde_json::{Value, json};

fn event(name: &str, tool: &str, input: Value, extra: Value) -> String {
    let mut e = json!({
        "session_id": "sess-1",
        "transcript_path": "/dev/null",
        "hook_event_name": name,
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_01",
        "permission_mode": "default",
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e.to_string()
}

fn bash(command: &str) -> String {
    event(
        "PreToolUse",
        "Bash",
        json!({ "command": command, "description": "x" }),
        json!({}),
    )
}

fn claude(d: &Daemon, input: &str) -> Value {
    let out = d.praxis_run(&["hook", "claude-code"], input);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout_json(&out)["hookSpecificOutput"].clone()
}

/// The Codex hook's whole answer: `hookSpecificOutput`, and with a refusal
/// `systemMessage`, nothing else (Codex rejects unknown fields).
fn codex_answer(d: &Daemon, input: &str) -> Value {
    let out = d.praxis_run(&["hook", "codex"], input);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    let mut top = keys(&v);
    top.retain(|k| *k != "systemMessage");
    assert_eq!(top, ["hookSpecificOutput"], "{v}");
    v
}

fn codex(d: &Daemon, input: &str) -> Value {
    codex_answer(d, input)["hookSpecificOutput"].clone()
}

/// The refusal a hook answer carries in `systemMessage`: decision,
/// execution_prevented and reason, as JSON.
fn signal(answer: &Value) -> Value {
    let text = answer["systemMessage"]
        .as_str()
        .unwrap_or_else(|| panic!("no systemMessage in {answer}"));
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["execution_prevented"], true, "{v}");
    assert!(!v["reason"].as_str().unwrap().is_empty(), "{v}");
    v
}

/// The Claude Code hook's whole answer, run with `env` set.
fn claude_with(d: &Daemon, input: &str, env: &[(&str, &str)]) -> Value {
    let mut child = d
        .cmd(&bin("praxis-run"))
        .args(["hook", "claude-code"])
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout_json(&out)
}

fn real_home() -> std::path::PathBuf {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .dir
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[test]
fn claude_allowed_bash_is_rewritten_through_praxis_run_and_runs() {
    let d = Daemon::start_in_git();
    std::fs::write(d.work().join("marker.txt"), "x").unwrap();
    let out = claude(
        &d,
        &event(
            "PreToolUse",
            "Bash",
            json!({"command": "ls", "description": "list"}),
            json!({"cwd": d.work()}),
        ),
    );
    assert_eq!(out["hookEventName"], "PreToolUse");
    assert_eq!(out["permissionDecision"], "allow", "{out}");
    let rewrite = out["updatedInput"]["command"].as_str().unwrap();
    assert_eq!(
        out["updatedInput"]["description"], "list",
        "other input fields are kept"
    );
    assert!(
        rewrite.contains(&bin("praxis-run").display().to_string()),
        "{rewrite}"
    );
    assert!(
        rewrite.contains("--session 'sess-1'") && rewrite.contains("--runtime 'claude-code'"),
        "{rewrite}"
    );
    assert!(rewrite.ends_with("-c 'ls'"), "{rewrite}");
    // What Claude Code then runs: the rewrite, in bash, through the daemon.
    let ran = d
        .cmd(std::path::Path::new("bash"))
        .args(["-c", rewrite])
        .output()
        .unwrap();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(String::from_utf8_lossy(&ran.stdout).contains("marker.txt"));
    // Both the judgment and the execution are audited under the runtime's ids.
    let events = d.events();
    let judged = events
        .iter()
        .find(|e| e["detail"]["judge_only"] == true)
        .expect("the hook's judgment is audited");
    assert_eq!(judged["session"], "sess-1");
    assert_eq!(judged["runtime"], "claude-code");
    assert_eq!(judged["detail"]["tool_call_id"], "toolu_01");
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "finished" && e["session"] == "sess-1")
    );
}

#[test]
fn claude_stop_is_deny_with_the_reason() {
    let d = Daemon::start_in_git();
    let whole = claude_with(&d, &bash("rm -rf /"), &[]);
    let out = &whole["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{out}");
    let reason = out["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("STOP"), "{reason}");
    assert!(out.get("updatedInput").is_none());
    assert_eq!(signal(&whole)["decision"], "STOP");
}

#[test]
fn claude_headless_hold_is_a_deny_naming_the_approval_and_carries_no_token() {
    let d = Daemon::start_in_git();
    let command = "curl -fsS https://example.com";
    // `claude -p` and the Agent SDKs set CLAUDE_CODE_ENTRYPOINT, and their
    // hooks inherit it; the permission mode stays "default".
    for entry in ["sdk-cli", "sdk-ts", "sdk-py"] {
        let whole = claude_with(&d, &bash(command), &[("CLAUDE_CODE_ENTRYPOINT", entry)]);
        let out = &whole["hookSpecificOutput"];
        assert_eq!(out["permissionDecision"], "deny", "{entry}: {whole}");
        let reason = out["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.contains("praxis approve r-"), "{entry}: {reason}");
        assert!(out.get("updatedInput").is_none(), "{entry}: {whole}");
        // What a headless run lists in permission_denials is the call as the
        // agent made it: no rewrite, and no token anywhere in the answer.
        assert!(!whole.to_string().contains("pxa-"), "{entry}: {whole}");
        let sig = signal(&whole);
        assert_eq!(sig["decision"], "HOLD");
        assert!(
            sig["approve_with"]
                .as_str()
                .unwrap()
                .starts_with("praxis approve r-")
        );
    }
    assert!(minted(&d).is_empty(), "no token for a prompt nobody sees");
    // The interactive CLI still asks.
    let whole = claude_with(&d, &bash(command), &[("CLAUDE_CODE_ENTRYPOINT", "cli")]);
    assert_eq!(whole["hookSpecificOutput"]["permissionDecision"], "ask");
    assert_eq!(signal(&whole)["decision"], "HOLD");
}

#[test]
fn claude_file_tool_allow_reasons_describe_the_tool() {
    let d = Daemon::start_in_git();
    let notes = d.work().join("notes.md").display().to_string();
    for (tool, input, words) in [
        ("Read", json!({"file_path": notes}), "Read reads "),
        (
            "Write",
            json!({"file_path": notes, "content": "x"}),
            "Write writes ",
        ),
    ] {
        let out = claude(
            &d,
            &event("PreToolUse", tool, input, json!({"cwd": d.work()})),
        );
        assert_eq!(out["permissionDecision"], "allow", "{out}");
        let reason = out["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.contains(&format!("{words}{notes}")), "{reason}");
        assert!(
            !reason.contains("cat") && !reason.contains("tee"),
            "{reason}"
        );
    }
}

#[test]
fn claude_hold_asks_and_denies_when_nobody_will_be_asked() {
    let d = Daemon::start_in_git();
    let out = claude(&d, &bash("curl -fsS https://example.com"));
    assert_eq!(out["permissionDecision"], "ask", "{out}");
    assert!(
        out["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("HOLD")
    );
    let rewrite = out["updatedInput"]["command"].as_str().unwrap();
    assert!(
        rewrite.contains("praxis-run") && rewrite.contains("curl"),
        "{rewrite}"
    );
    for mode in ["bypassPermissions", "dontAsk"] {
        let input = event(
            "PreToolUse",
            "Bash",
            json!({"command": "curl -fsS https://example.com"}),
            json!({"permission_mode": mode}),
        );
        let out = claude(&d, &input);
        assert_eq!(out["permissionDecision"], "deny", "{mode}: {out}");
        assert!(
            out["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .contains("praxis approve r-"),
            "{out}"
        );
        assert!(out.get("updatedInput").is_none(), "{mode}: {out}");
    }
    // Only the prompt a human answers got a token.
    assert_eq!(minted(&d).len(), 1);
}

/// The `approval_minted` events of the audit log.
fn minted(d: &Daemon) -> Vec<Value> {
    d.events()
        .into_iter()
        .filter(|e| e["kind"] == "approval_minted")
        .collect()
}

/// Asks the Claude Code hook about `command` in session `sess-1`: an `ask`
/// whose rewrite carries a token. Returns the rewrite and the token.
fn asked_with_token(d: &Daemon, command: &str) -> (String, String) {
    let out = claude(d, &bash(command));
    assert_eq!(out["permissionDecision"], "ask", "{out}");
    let reason = out["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("saying yes approves"), "{reason}");
    let rewrite = out["updatedInput"]["command"].as_str().unwrap().to_owned();
    let token = rewrite
        .split("--approval-token '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("no token in {rewrite}"))
        .to_owned();
    assert!(
        token.starts_with("pxa-") && token.len() == 4 + 32,
        "{token}"
    );
    (rewrite, token)
}

fn bash_in(d: &Daemon, line: &str) -> std::process::Output {
    d.cmd(std::path::Path::new("bash"))
        .args(["-c", line])
        .output()
        .unwrap()
}

/// praxis-run's exit codes for timeout, HOLD and STOP: the command did not run.
const NOT_RUN: std::ops::RangeInclusive<i32> = 124..=126;

#[test]
fn the_users_yes_in_claude_codes_prompt_is_a_one_time_approval() {
    let d = Daemon::start_in_git();
    let command = "git push origin main";
    let (rewrite, token) = asked_with_token(&d, command);
    let mint = minted(&d);
    assert_eq!(mint.len(), 1);
    assert_eq!(mint[0]["session"], "sess-1");
    assert_eq!(mint[0]["detail"]["approved_by"], "claude-code prompt");

    // The agent writing the rewrite itself is STOP, and uses nothing up.
    let forged = claude(&d, &bash(&rewrite));
    assert_eq!(forged["permissionDecision"], "deny", "{forged}");
    assert!(
        forged["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("STOP")
    );
    assert_eq!(minted(&d).len(), 1, "no token for a forged command");

    // The user said yes: Claude Code runs the rewrite, and it runs, once.
    let ran = bash_in(&d, &rewrite);
    let code = ran.status.code().unwrap();
    assert!(
        !NOT_RUN.contains(&code),
        "the approved command ran: {code} {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let events = d.events();
    let allowed: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["kind"] == "decided"
                && e["decision"] == "ALLOW"
                && e["detail"]["approved_by"] == "claude-code prompt"
        })
        .collect();
    assert_eq!(allowed.len(), 1, "{events:?}");
    let run_id = allowed[0]["request_id"].as_str().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "approval_consumed" && e["request_id"] == run_id)
    );
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "finished" && e["request_id"] == run_id)
    );

    // The same rewrite again: the token is spent, so it is HOLD.
    let again = bash_in(&d, &rewrite);
    assert_eq!(again.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("does not apply"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // The token itself is never written, only its hash.
    for file in [
        "audit.db",
        "audit.db-wal",
        "audit.db-append-0",
        "audit.db-append-1",
    ] {
        let path = d.dir.path().join("state/praxis").join(file);
        if let Ok(bytes) = std::fs::read(&path) {
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "{file} holds the token"
            );
        }
    }
    let verify = d
        .cmd(&bin("praxis"))
        .args(["audit", "verify"])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_prompt_token_applies_only_to_its_command_and_session() {
    let d = Daemon::start_in_git();
    let (rewrite, token) = asked_with_token(&d, "git push origin main");
    let run = |session: &str, command: &str| {
        d.praxis_run(
            &[
                "--session",
                session,
                "--approval-token",
                &token,
                "-c",
                command,
            ],
            "",
        )
    };
    for (session, command) in [
        ("sess-1", "git push origin dev"),
        ("sess-2", "git push origin main"),
    ] {
        let out = run(session, command);
        assert_eq!(out.status.code(), Some(125), "{session} {command}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("does not apply"));
    }
    // A made-up token does nothing either.
    let out = d.praxis_run(
        &[
            "--session",
            "sess-1",
            "--approval-token",
            "pxa-00000000000000000000000000000000",
            "-c",
            "git push origin main",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(125));
    // None of that used the token up: the user's yes still works.
    let ran = bash_in(&d, &rewrite);
    let code = ran.status.code().unwrap();
    assert!(
        !NOT_RUN.contains(&code),
        "{code} {}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

#[test]
fn an_agent_calling_the_operator_cli_or_carrying_a_token_is_stopped() {
    let d = Daemon::start_in_git();
    for command in [
        "praxis approve r-0000",
        "ls && praxis kill --release",
        "praxis-run --approval-token pxa-1 -c ls",
    ] {
        let out = claude(&d, &bash(command));
        assert_eq!(out["permissionDecision"], "deny", "{command}: {out}");
        assert!(
            out["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .contains("STOP")
        );
        let out = codex(&d, &bash(command));
        assert_eq!(out["permissionDecision"], "deny", "{command}: {out}");
    }
    assert!(
        d.events()
            .iter()
            .any(|e| e["kind"] == "hook_stopped" && e["decision"] == "STOP")
    );
}

#[test]
fn a_command_already_wrapped_is_judged_on_what_it_wraps_and_not_wrapped_twice() {
    let d = Daemon::start_in_git();
    let out = claude(&d, &bash("praxis-run --session other -c 'ls -la'"));
    assert_eq!(out["permissionDecision"], "allow", "{out}");
    let rewrite = out["updatedInput"]["command"].as_str().unwrap();
    assert_eq!(rewrite.matches("praxis-run").count(), 1, "{rewrite}");
    assert!(
        rewrite.ends_with("-c 'ls -la'") && rewrite.contains("'sess-1'"),
        "{rewrite}"
    );
    let out = claude(&d, &bash("praxis-run -c 'rm -rf /'"));
    assert_eq!(out["permissionDecision"], "deny", "{out}");
}

#[test]
fn file_tools_are_judged_on_their_path() {
    let d = Daemon::start_in_git();
    // The daemon takes the home of the caller's uid from the user database.
    let home = real_home();
    let keys_path = home.join(".ssh/authorized_keys").display().to_string();
    let write = event(
        "PreToolUse",
        "Write",
        json!({"file_path": keys_path, "content": "ssh-ed25519 AAAA"}),
        json!({}),
    );
    let out = claude(&d, &write);
    assert_ne!(out["permissionDecision"], "allow", "{out}");
    let out = codex(&d, &write);
    assert_eq!(out["permissionDecision"], "deny", "{out}");
    let inside = d.work().join("notes.md").display().to_string();
    let out = claude(
        &d,
        &event(
            "PreToolUse",
            "Edit",
            json!({"file_path": inside, "old_string": "a", "new_string": "b"}),
            json!({"cwd": d.work()}),
        ),
    );
    assert_eq!(out["permissionDecision"], "allow", "{out}");
    // Claude Code edits the file on this answer alone: its record had
    // committed before the answer went out.
    let request_id = between(
        out["permissionDecisionReason"].as_str().unwrap(),
        "(request ",
        ',',
    );
    assert!(
        d.committed_events()
            .iter()
            .any(|e| e["request_id"] == request_id && e["decision"] == "ALLOW"),
        "{request_id} not committed before its answer"
    );
    let secret = home.join(".ssh/id_ed25519").display().to_string();
    let out = claude(
        &d,
        &event(
            "PreToolUse",
            "Read",
            json!({"file_path": secret}),
            json!({}),
        ),
    );
    assert_ne!(out["permissionDecision"], "allow", "{out}");
    let out = claude(
        &d,
        &event(
            "PreToolUse",
            "mcp__github__create_issue",
            json!({"title": "x"}),
            json!({}),
        ),
    );
    assert_eq!(
        out["permissionDecision"], "ask",
        "unknown tools are HOLD: {out}"
    );
}

#[test]
fn codex_answers_only_in_fields_codex_accepts() {
    let d = Daemon::start_in_git();
    let out = codex(&d, &bash("ls"));
    assert_eq!(
        keys(&out),
        ["hookEventName", "permissionDecision", "updatedInput"],
        "{out}"
    );
    assert_eq!(out["permissionDecision"], "allow");
    assert!(
        out["updatedInput"]["command"]
            .as_str()
            .unwrap()
            .contains("--runtime 'codex'")
    );
    for command in ["curl -fsS https://example.com", "rm -rf /"] {
        let out = codex(&d, &bash(command));
        assert_eq!(
            keys(&out),
            [
                "hookEventName",
                "permissionDecision",
                "permissionDecisionReason"
            ],
            "{out}"
        );
        assert_eq!(out["permissionDecision"], "deny");
    }
    let whole = codex_answer(&d, &bash("curl -fsS https://example.com"));
    let held = &whole["hookSpecificOutput"];
    assert!(
        held["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("praxis approve r-"),
        "{held}"
    );
    assert_eq!(signal(&whole)["decision"], "HOLD");
    assert_eq!(
        signal(&codex_answer(&d, &bash("rm -rf /")))["decision"],
        "STOP"
    );
}

fn patch_event(patch: &str, cwd: &std::path::Path) -> String {
    event(
        "PreToolUse",
        "apply_patch",
        json!({ "command": patch }),
        json!({ "cwd": cwd }),
    )
}

#[test]
fn codex_judges_patches_by_their_files_and_mcp_calls_by_the_unknown_posture() {
    let d = Daemon::start_in_git();
    let inside = "*** Begin Patch\n*** Add File: notes.md\n+hello\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** End Patch\n";
    let out = d.praxis_run(&["hook", "codex"], &patch_event(inside, &d.work()));
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.is_empty(),
        "an allowed patch gets no answer: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Each file the patch names was judged and audited on its own.
    let files: Vec<String> = d
        .events()
        .iter()
        .filter(|e| e["kind"] == "decided" && e["runtime"] == "codex")
        .map(|e| e.to_string())
        .collect();
    assert!(
        files.iter().any(|e| e.contains("notes.md")) && files.iter().any(|e| e.contains("lib.rs")),
        "{files:?}"
    );

    // One file outside the workspace's rules is enough to refuse the patch.
    let keys_path = real_home()
        .join(".ssh/authorized_keys")
        .display()
        .to_string();
    let mixed = format!(
        "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Update File: {keys_path}\n@@\n+ssh-ed25519 AAAA\n*** End Patch\n"
    );
    let whole = codex_answer(&d, &patch_event(&mixed, &d.work()));
    assert_eq!(
        whole["hookSpecificOutput"]["permissionDecision"], "deny",
        "{whole}"
    );
    assert!(matches!(
        signal(&whole)["decision"].as_str(),
        Some("HOLD" | "STOP")
    ));

    // A patch that names no file cannot be judged: deny.
    let empty = codex(
        &d,
        &patch_event("*** Begin Patch\n*** End Patch\n", &d.work()),
    );
    assert_eq!(empty["permissionDecision"], "deny", "{empty}");

    // An MCP tool Praxis has no rule for: the unknown posture, HOLD, a deny
    // (Codex has no ask).
    let mcp = codex_answer(
        &d,
        &event(
            "PreToolUse",
            "mcp__github__create_issue",
            json!({"title": "x"}),
            json!({"cwd": d.work()}),
        ),
    );
    assert_eq!(
        mcp["hookSpecificOutput"]["permissionDecision"], "deny",
        "{mcp}"
    );
    assert_eq!(signal(&mcp)["decision"], "HOLD");
    // Praxis's own MCP server is judged by praxisd when the call runs.
    let own = d.praxis_run(
        &["hook", "codex"],
        &event(
            "PreToolUse",
            "mcp__praxis__run_command",
            json!({"command": "ls"}),
            json!({"cwd": d.work()}),
        ),
    );
    assert_eq!(own.status.code(), Some(0));
    assert!(own.stdout.is_empty(), "{own:?}");
}

#[test]
fn codex_post_tool_use_and_stop_refuse_in_their_own_shape() {
    let d = Daemon::start_in_git();
    // No session_id: the event cannot be recorded.
    for name in ["PostToolUse", "Stop"] {
        let input =
            json!({"hook_event_name": name, "tool_name": "Bash", "stop_hook_active": false})
                .to_string();
        let out = d.praxis_run(&["hook", "codex"], &input);
        assert_eq!(out.status.code(), Some(0));
        let v = stdout_json(&out);
        // Codex's PostToolUse and Stop outputs take a top-level block with a
        // reason, never hookSpecificOutput.permissionDecision.
        assert_eq!(keys(&v), ["decision", "reason"], "{name}: {v}");
        assert_eq!(v["decision"], "block");
        assert!(!v["reason"].as_str().unwrap().is_empty());
    }
}

#[test]
fn garbage_is_blocked_never_let_through() {
    let d = Daemon::start_in_git();
    for input in [
        "",
        "not json",
        "{}",
        r#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_input":{}}"#,
    ] {
        let out = d.praxis_run(&["hook", "claude-code"], input);
        assert_eq!(out.status.code(), Some(2), "{input:?}");
        assert!(!out.stderr.is_empty());
        let out = d.praxis_run(&["hook", "codex"], input);
        assert_eq!(out.status.code(), Some(0), "{input:?}");
        assert_eq!(
            stdout_json(&out)["hookSpecificOutput"]["permissionDecision"],
            "deny",
            "{input:?}"
        );
    }
}

/// How the hook's caller leaves `SIGALRM` for it.
#[derive(Clone, Copy, Debug)]
enum CallerAlarm {
    Default,
    Ignored,
    Blocked,
}

/// Runs a hook whose stdin is held open with nothing written (an event that
/// never ends) under a 0.2 s decision deadline; its output and how long it took.
fn stuck_hook(d: &Daemon, runtime: &str, alarm: CallerAlarm) -> (std::process::Output, Duration) {
    use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, signal, sigprocmask};
    use std::os::unix::process::CommandExt;
    let mut cmd = d.cmd(&bin("praxis-run"));
    cmd.args(["hook", runtime])
        .env("PRAXIS_DECISION_TIMEOUT", "0.2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only signal(2) and sigprocmask(2) run,
    // both async-signal-safe; an ignored disposition and the mask survive exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut set = SigSet::empty();
            set.add(Signal::SIGALRM);
            match alarm {
                CallerAlarm::Default => {}
                CallerAlarm::Ignored => {
                    signal(Signal::SIGALRM, SigHandler::SigIgn)?;
                }
                CallerAlarm::Blocked => sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?,
            }
            Ok(())
        })
    };
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    // Closed only after 8 s, so a hook whose deadline never fires ends
    // (answering an empty event) and the test fails instead of hanging.
    let stdin = child.stdin.take();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(8));
        drop(stdin);
    });
    let out = child.wait_with_output().unwrap();
    (out, started.elapsed())
}

/// A hook stuck before it could ask (its stdin never closes) still gives
/// the runtime's deny when its deadline passes, never the runtime's timeout
/// (after which the tool would run undecided).
#[test]
fn a_hook_stuck_on_its_input_answers_deny_at_its_deadline() {
    let d = Daemon::start_in_git();
    for (runtime, code) in [("claude-code", 2), ("codex", 0)] {
        let (out, took) = stuck_hook(&d, runtime, CallerAlarm::Default);
        assert_eq!(out.status.code(), Some(code), "{runtime}: {out:?}");
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(10),
            "{runtime} answered after {took:?}"
        );
        let said = match runtime {
            "codex" => {
                let v = stdout_json(&out)["hookSpecificOutput"].clone();
                assert_eq!(v["permissionDecision"], "deny");
                v["permissionDecisionReason"].as_str().unwrap().to_owned()
            }
            _ => String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(
            said.contains("did not decide within 2.2 s"),
            "{runtime}: {said}"
        );
    }
}

/// The deadline is the hook's own: a caller that ignores or blocks the
/// signal it runs on does not turn it off.
#[test]
fn a_callers_ignored_or_blocked_alarm_does_not_turn_the_hook_deadline_off() {
    let d = Daemon::start_in_git();
    for alarm in [CallerAlarm::Ignored, CallerAlarm::Blocked] {
        let (out, took) = stuck_hook(&d, "claude-code", alarm);
        assert_eq!(out.status.code(), Some(2), "{alarm:?}: {out:?}");
        assert!(took < Duration::from_secs(10), "{alarm:?}: {took:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("did not decide within 2.2 s"),
            "{alarm:?}: {out:?}"
        );
    }
}

#[test]
fn post_tool_use_and_stop_are_recorded() {
    let d = Daemon::start_in_git();
    let post = event(
        "PostToolUse",
        "Bash",
        json!({"command": "ls"}),
        json!({"tool_response": {"stdout": "secret-ish", "interrupted": false}}),
    );
    for runtime in ["claude-code", "codex"] {
        let out = d.praxis_run(&["hook", runtime], &post);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stop =
            json!({"session_id": "sess-1", "hook_event_name": "Stop", "stop_hook_active": false})
                .to_string();
        assert_eq!(
            d.praxis_run(&["hook", runtime], &stop).status.code(),
            Some(0)
        );
    }
    let events = d.events();
    let finished: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "tool_finished")
        .collect();
    assert_eq!(finished.len(), 2);
    assert_eq!(finished[0]["detail"]["tool_call_id"], "toolu_01");
    assert_eq!(finished[0]["detail"]["interrupted"], false);
    assert!(
        !finished[0].to_string().contains("secret-ish"),
        "no raw output in the audit"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| e["kind"] == "session_ended" && e["session"] == "sess-1")
            .count(),
        2
    );
}

#[test]
fn install_adds_the_hooks_idempotently_keeping_others() {
    let d = Daemon::start_in_git();
    let settings = d.work().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"permissions":{"allow":["Bash(ls:*)"]},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint.sh"}]}]}}"#,
    )
    .unwrap();
    for _ in 0..2 {
        let out = d
            .cmd(&bin("praxis"))
            .args(["install", "claude-code", "--project"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls:*)");
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "{v}");
    assert_eq!(pre[0]["hooks"][0]["command"], "lint.sh");
    let ours = pre[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(ours.ends_with("praxis-run' hook claude-code"), "{ours}");
    assert_eq!(v["hooks"]["PostToolUse"].as_array().unwrap().len(), 1);
    assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 1);

    let out = d
        .cmd(&bin("praxis"))
        .args(["install", "codex"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(d.home().join(".codex/hooks.json")).unwrap())
            .unwrap();
    // Shell commands, patches and MCP calls.
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["matcher"],
        "^(Bash|apply_patch|mcp__.+)$"
    );
    assert!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook codex")
    );
    // Codex runs user hooks only once the user trusts them: the step is named.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("/hooks") && said.contains("trust"), "{said}");
    // With a `codex` installed (a stand-in on PATH): doctor checks the trust.
    let bin_dir = d.home().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::fs::write(bin_dir.join("codex"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        bin_dir.join("codex"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let trust = doctor_codex_trust(&d, &path);
    assert_eq!(trust["level"], "fail", "{trust}");
    assert!(
        trust["found"].as_str().unwrap().contains("3 of 3"),
        "{trust}"
    );
    let status = d.praxis(&["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("codex hooks:     3 of 3 praxis hooks not trusted"),
        "{status}"
    );
}

/// `praxis doctor`'s codex trust finding, with `path` as `PATH`.
fn doctor_codex_trust(d: &Daemon, path: &str) -> Value {
    let doctor = d
        .cmd(&bin("praxis"))
        .args(["doctor", "--json"])
        .env("PATH", path)
        .output()
        .unwrap();
    let findings: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    findings
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "codex trust")
        .cloned()
        .unwrap_or_else(|| panic!("{findings}"))
}

#[test]
fn doctor_skips_codex_trust_when_codex_is_not_installed() {
    let d = Daemon::start();
    assert!(d.praxis(&["install", "codex"]).status.success());
    let trust = doctor_codex_trust(&d, "/usr/bin:/bin");
    assert_eq!(trust["level"], "ok", "{trust}");
    assert!(
        trust["found"]
            .as_str()
            .unwrap()
            .contains("`codex` is not installed"),
        "{trust}"
    );
}

/// The part of `text` after `after`, up to the next `until`.
fn between<'a>(text: &'a str, after: &str, until: char) -> &'a str {
    text.split(after)
        .nth(1)
        .and_then(|rest| rest.split(until).next())
        .unwrap_or_else(|| panic!("no {after:?} in {text}"))
}

/// Approves the held call a Codex deny names (`praxis approve ID`) as the
/// operator; returns the request id.
fn approve_denied(d: &Daemon, held: &Value) -> String {
    assert_eq!(held["permissionDecision"], "deny", "{held}");
    let id = between(
        held["permissionDecisionReason"].as_str().unwrap(),
        "praxis approve ",
        '`',
    );
    let out = d.praxis(&["approve", id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    id.to_owned()
}

#[test]
fn an_operator_approval_of_a_held_hook_call_allows_it_once() {
    let d = Daemon::start_in_git();
    let command = "curl -fsS https://example.com";
    approve_denied(&d, &codex(&d, &bash(command)));
    // The retried call is allowed, and the approval is used when it runs.
    let allowed = codex(&d, &bash(command));
    assert_eq!(allowed["permissionDecision"], "allow", "{allowed}");
    let rewrite = allowed["updatedInput"]["command"].as_str().unwrap();
    let ran = d
        .cmd(std::path::Path::new("bash"))
        .args(["-c", rewrite])
        .output()
        .unwrap();
    assert!(
        !matches!(ran.status.code(), Some(124..=126)),
        "the approved command ran: {:?} {}",
        ran.status.code(),
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(
        codex(&d, &bash(command))["permissionDecision"],
        "deny",
        "one-shot"
    );
}

#[test]
fn claude_tools_without_a_rule_meet_the_unknown_posture_and_runtime_tools_pass() {
    let d = Daemon::start_in_git();
    let tool = |name: &str, input: Value| {
        claude(
            &d,
            &event("PreToolUse", name, input, json!({ "cwd": d.work() })),
        )
    };
    // Scheduling future prompts: no rule covers it, so it is unknown.
    let cron = tool("CronCreate", json!({ "cron": "* * * * *", "prompt": "x" }));
    assert_eq!(cron["permissionDecision"], "ask", "{cron}");
    assert!(
        cron["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("unknown is HOLD"),
        "{cron}"
    );
    // A to-do list runs nothing on the host.
    let todo = tool("TodoWrite", json!({ "todos": [] }));
    assert_eq!(todo["permissionDecision"], "allow", "{todo}");
    // Praxis's own MCP tool is judged by praxisd when it runs, not here.
    let own = d.praxis_run(
        &["hook", "claude-code"],
        &event(
            "PreToolUse",
            "mcp__praxis__run_command",
            json!({ "command": "ls" }),
            json!({ "cwd": d.work() }),
        ),
    );
    assert_eq!(own.status.code(), Some(0), "{own:?}");
    assert!(own.stdout.is_empty(), "{own:?}");
}

#[test]
fn an_operator_approval_of_a_held_tool_call_allows_that_call_once() {
    let d = Daemon::start_in_git();
    let call = |tool: &str, input: Value| {
        codex_answer(
            &d,
            &event("PreToolUse", tool, input, json!({ "cwd": d.work() })),
        )
    };
    let issue = json!({ "repo": "o/r", "title": "flaky test" });
    // A tool no rule covers, and a file tool on a file that runs code later:
    // each held, approved, then the same call retried.
    let hook = d.work().join(".git/hooks/pre-commit").display().to_string();
    let write = json!({ "file_path": hook, "content": "#!/bin/sh\n" });
    for (tool, input) in [
        ("mcp__github__create_issue", issue.clone()),
        ("Write", write),
    ] {
        let held = call(tool, input.clone());
        assert_eq!(signal(&held)["decision"], "HOLD", "{held}");
        let id = approve_denied(&d, &held["hookSpecificOutput"]);
        // Codex answers an ALLOW with nothing to add by saying nothing.
        let retried = d.praxis_run(
            &["hook", "codex"],
            &event(
                "PreToolUse",
                tool,
                input.clone(),
                json!({ "cwd": d.work() }),
            ),
        );
        assert_eq!(retried.status.code(), Some(0), "{retried:?}");
        assert!(
            !String::from_utf8_lossy(&retried.stdout).contains("deny"),
            "{tool}: the approved call is allowed: {}",
            String::from_utf8_lossy(&retried.stdout)
        );
        let again = call(tool, input);
        assert_eq!(
            signal(&again)["decision"],
            "HOLD",
            "{tool}: one-shot: {again}"
        );
        assert_ne!(signal(&again)["request_id"], id.as_str());

        let consumed: Vec<_> = d
            .events_of_kind("approval_consumed")
            .into_iter()
            .filter(|e| e["runtime"] == "codex")
            .collect();
        let allowed = d.events().into_iter().find(|e| {
            e["kind"] == "decided"
                && e["decision"] == "ALLOW"
                && e["detail"]["approved_by"] == "operator"
                && e["reason"].as_str().is_some_and(|r| r.contains("used now"))
                && consumed.iter().any(|c| c["request_id"] == e["request_id"])
        });
        assert!(allowed.is_some(), "{tool}: the ALLOW consumed the approval");
    }

    // The approval binds the call's arguments: another target is a new request.
    let held = call("mcp__github__create_issue", issue);
    let first = approve_denied(&d, &held["hookSpecificOutput"]);
    let other = call(
        "mcp__github__create_issue",
        json!({ "repo": "o/other", "title": "flaky test" }),
    );
    let signal = signal(&other);
    assert_eq!(signal["decision"], "HOLD", "{other}");
    assert_ne!(signal["request_id"], first.as_str());
    let pending = d.praxis(&["pending"]);
    let listed = String::from_utf8_lossy(&pending.stdout);
    assert!(
        listed.contains("mcp__github__create_issue") && listed.contains("o/other"),
        "the operator sees the tool and its arguments: {listed}"
    );
}
