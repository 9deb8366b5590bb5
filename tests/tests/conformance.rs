//! Judgment Boundary v0.1 conformance: one test per compliance criterion
//! (spec section 6), each run against every surface an agent reaches Praxis
//! through: `praxis-run`, the Claude Code hook, the Codex hook and the MCP
//! server. `docs/conformance.md` states the result.

mod common;

use std::path::Path;

use common::{Daemon, stdout_json};
use serde_json::{Value, json};

/// One surface's answer to one proposed command.
#[derive(Debug)]
struct Answer {
    surface: &'static str,
    /// ALLOW, HOLD or STOP as the surface reports it.
    decision: String,
    /// The surface's machine-readable refusal (praxis-run's stderr line, MCP's structured content).
    signal: Option<Value>,
    /// For the hooks: the command the runtime would then run.
    rewrite: Option<String>,
}

fn bash_event(command: &str, session: &str) -> String {
    json!({
        "session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": "toolu_c", "permission_mode": "default",
    })
    .to_string()
}

fn via_praxis_run(d: &Daemon, command: &str) -> Answer {
    let out = d
        .cmd(&common::bin("praxis-run"))
        .args(["--session", "conf-run", "-c", command])
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let signal = stderr
        .lines()
        .find(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap());
    let decision = match out.status.code() {
        Some(125) => "HOLD",
        Some(126) => "STOP",
        _ => "ALLOW",
    };
    Answer {
        surface: "praxis-run",
        decision: decision.into(),
        signal,
        rewrite: None,
    }
}

fn via_claude(d: &Daemon, command: &str) -> Answer {
    let out = stdout_json(&d.praxis_run(
        &["hook", "claude-code"],
        &bash_event(command, "conf-claude"),
    ));
    let o = &out["hookSpecificOutput"];
    let decision = match (
        o["permissionDecision"].as_str().unwrap(),
        o["permissionDecisionReason"].as_str().unwrap(),
    ) {
        ("allow", _) => "ALLOW",
        ("ask", _) => "HOLD",
        (_, reason) if reason.starts_with("praxis HOLD") => "HOLD",
        _ => "STOP",
    };
    Answer {
        surface: "claude-code hook",
        decision: decision.into(),
        signal: hook_signal(&out),
        rewrite: o["updatedInput"]["command"].as_str().map(str::to_owned),
    }
}

/// The refusal a hook answer carries as JSON in `systemMessage`, shown by
/// both runtimes.
fn hook_signal(out: &Value) -> Option<Value> {
    out["systemMessage"]
        .as_str()
        .map(|s| serde_json::from_str(s).unwrap())
}

fn via_codex(d: &Daemon, command: &str) -> Answer {
    let out = stdout_json(&d.praxis_run(&["hook", "codex"], &bash_event(command, "conf-codex")));
    let o = &out["hookSpecificOutput"];
    let decision = match (
        o["permissionDecision"].as_str().unwrap(),
        o["permissionDecisionReason"].as_str(),
    ) {
        ("allow", _) => "ALLOW",
        (_, Some(reason)) if reason.starts_with("praxis HOLD") => "HOLD",
        _ => "STOP",
    };
    Answer {
        surface: "codex hook",
        decision: decision.into(),
        signal: hook_signal(&out),
        rewrite: o["updatedInput"]["command"].as_str().map(str::to_owned),
    }
}

fn via_mcp(d: &Daemon, command: &str) -> Answer {
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "conformance", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_command", "arguments": {"command": command}}}),
    ]
    .map(|l| l.to_string() + "\n")
    .concat();
    let out = d.praxis_run(&["mcp", "--session", "conf-mcp"], &lines);
    let text = String::from_utf8_lossy(&out.stdout);
    let reply: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == 2)
        .unwrap();
    let result = &reply["result"];
    let structured = result["structuredContent"].clone();
    Answer {
        surface: "mcp",
        decision: structured["decision"].as_str().unwrap().into(),
        signal: (result["isError"] == true && structured["decision"] != "ALLOW")
            .then_some(structured),
        rewrite: None,
    }
}

/// A hook rewrite as a runtime would run it had the user not said yes: the
/// `--approval-token 'pxa-…'` argument removed.
fn without_approval_token(rewrite: &str) -> String {
    match rewrite.split_once(" --approval-token '") {
        Some((head, tail)) => {
            let rest = tail.split_once('\'').map_or("", |(_, rest)| rest);
            format!("{head}{rest}")
        }
        None => rewrite.to_owned(),
    }
}

fn every_surface(d: &Daemon, command: &str) -> Vec<Answer> {
    vec![
        via_praxis_run(d, command),
        via_claude(d, command),
        via_codex(d, command),
        via_mcp(d, command),
    ]
}

/// Criterion 1: Execution can be prevented before it occurs. The witness file the
/// command would create never appears, on any surface, nor when a runtime
/// runs the hook's rewrite without the one-time token that only the user's
/// yes to an `ask` hands over.
#[test]
fn c1_execution_is_prevented_before_it_occurs() {
    let d = Daemon::start_in_git();
    for command in [
        "touch witness && rm -rf /",
        "touch witness && curl -fsS https://example.com",
    ] {
        for answer in every_surface(&d, command) {
            assert_ne!(answer.decision, "ALLOW", "{command}: {answer:?}");
            if let Some(rewrite) = &answer.rewrite {
                let rewrite = without_approval_token(rewrite);
                let ran = d
                    .cmd(Path::new("bash"))
                    .args(["-c", &rewrite])
                    .output()
                    .unwrap();
                assert!(matches!(ran.status.code(), Some(125 | 126)), "{answer:?}");
            }
            assert!(
                !d.work().join("witness").exists(),
                "{command} ran via {}",
                answer.surface
            );
        }
    }
    // The same boundary lets an allowed command through, so the refusal is a judgment.
    let allowed = via_praxis_run(&d, "touch witness");
    assert_eq!(allowed.decision, "ALLOW");
    assert!(d.work().join("witness").exists());
}

/// Criterion 2: Prevention is driven by an explicit judgment decision: every refusal
/// names STOP or HOLD and its request, and the audit store holds that
/// decision for that request.
#[test]
fn c2_prevention_is_driven_by_an_explicit_decision() {
    let d = Daemon::start_in_git();
    for answer in [via_praxis_run(&d, "rm -rf /"), via_mcp(&d, "rm -rf /")] {
        let signal = answer.signal.unwrap();
        assert_eq!(signal["decision"], "STOP", "{}", answer.surface);
        let id = signal["request_id"].as_str().unwrap();
        let events = d.events_of(id);
        assert!(
            events
                .iter()
                .any(|e| e["kind"] == "decided" && e["decision"] == "STOP"),
            "{id}: {events:?}"
        );
    }
    for answer in [via_claude(&d, "rm -rf /"), via_codex(&d, "rm -rf /")] {
        assert_eq!(answer.decision, "STOP", "{answer:?}");
    }
    let decided = d
        .events()
        .into_iter()
        .filter(|e| e["kind"] == "decided" && e["decision"] == "STOP")
        .count();
    assert!(
        decided >= 4,
        "each surface's refusal is a recorded decision ({decided})"
    );
}

/// Criterion 3: Unknown cases default to HOLD: a program that is not found
/// on PATH, a dynamic command word, a PATH that puts a tree a request can
/// write first (what it finds may be planted), and a runtime tool no rule
/// covers. (An unknown
/// program found outside every writable tree runs contained instead, unless
/// its request needs network or goes beyond T1: `tests/unknown_programs.rs`.)
#[test]
fn c3_unknown_defaults_to_hold() {
    let d = Daemon::start_in_git();
    for command in [
        "frobnicate-xyz --now",
        "$CMD --force",
        "$(echo frobnicate) --force",
        "PATH=./bin:$PATH frobnicate-xyz --now",
    ] {
        for answer in every_surface(&d, command) {
            assert_eq!(answer.decision, "HOLD", "{command}: {answer:?}");
        }
    }
    let tool = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "mcp__unknown__do", "tool_input": {}}).to_string();
    let out = stdout_json(&d.praxis_run(&["hook", "claude-code"], &tool));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask");
}

/// Criterion 4: An `execution_prevented` audit signal is emitted, machine-readable,
/// whatever the log level (RUST_LOG=off), externally observable: on the
/// agent's stream and in the audit store.
#[test]
fn c4_an_execution_prevented_signal_is_emitted() {
    let d = Daemon::start_in_git();
    for command in ["rm -rf /", "frobnicate-xyz"] {
        for answer in every_surface(&d, command) {
            let signal = answer
                .signal
                .unwrap_or_else(|| panic!("{}: no signal", answer.surface));
            assert_eq!(signal["execution_prevented"], true);
            assert!(matches!(signal["decision"].as_str(), Some("HOLD" | "STOP")));
            assert!(!signal["reason"].as_str().unwrap().is_empty());
        }
    }
    let watch = d
        .cmd(&common::bin("praxis"))
        .args(["audit", "tail", "-n", "50", "--json"])
        .output()
        .unwrap();
    let refusals = String::from_utf8_lossy(&watch.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| matches!(e["decision"].as_str(), Some("HOLD" | "STOP")))
        .count();
    assert!(
        refusals >= 4,
        "the refusals are observable in the audit log: {}",
        String::from_utf8_lossy(&watch.stdout)
    );
}

/// Criterion 5: The model is not modified: the boundary sits outside any model and
/// decides on the proposed action alone, so every surface, each with its
/// own session, reaches the same decision for the same command.
#[test]
fn c5_no_model_is_modified_the_decision_is_the_boundarys() {
    let d = Daemon::start_in_git();
    for command in [
        "ls",
        "rm -rf /",
        "curl -fsS https://example.com",
        "frobnicate-xyz",
    ] {
        let answers = every_surface(&d, command);
        let first = &answers[0].decision;
        assert!(
            answers.iter().all(|a| &a.decision == first),
            "{command}: {answers:?}"
        );
    }
}
