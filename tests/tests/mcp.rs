//! `praxis-run mcp` driven by real MCP clients against a scratch daemon: the
//! official Python SDK's stdio client (`pip install mcp`), and from npm the
//! MCP Inspector's CLI and the TypeScript SDK's client (`tests/js/`, which
//! `make test` installs with `npm ci`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Daemon, bin, node, repo, stdout_json};

/// The Python interpreter with the SDKs installed (`PRAXIS_PYTHON`, else `python3`).
pub fn python() -> String {
    std::env::var("PRAXIS_PYTHON").unwrap_or_else(|_| String::from("python3"))
}

/// Runs the Python SDK client `tests/conformance/SCRIPT` against
/// `praxis-run mcp`, with `args` after the praxis-run path; what it prints.
fn python_client(d: &Daemon, script: &str, args: &[&str]) -> serde_json::Value {
    let out = d
        .cmd(Path::new(&python()))
        .arg(repo().join("tests/conformance").join(script))
        .arg(bin("praxis-run"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client {script} failed (needs `pip install mcp`): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout_json(&out)
}

/// The first JSON-RPC message praxis-run's MCP server wrote.
fn first_reply(out: &Output) -> serde_json::Value {
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap()
}

#[test]
fn an_mcp_session_lists_the_tool_and_runs_only_what_is_allowed() {
    let d = Daemon::start_in_git();
    let v = python_client(&d, "mcp_client.py", &[]);
    assert_eq!(v["protocol_version"], "2025-06-18");
    assert_eq!(
        v["tools"],
        serde_json::json!([{"name": "run_command", "required": ["command"]}])
    );

    assert_eq!(v["allowed"]["is_error"], false, "{v}");
    assert_eq!(v["allowed"]["structured"]["exit_code"], 0);
    // The output goes once, in the text; the structure counts it.
    assert!(
        v["allowed"]["text"]
            .as_str()
            .unwrap()
            .contains("praxis-mcp-ok"),
        "{v}"
    );
    assert_eq!(v["allowed"]["structured"]["stdout_bytes"], 14);

    let stop = &v["catastrophic"];
    assert_eq!(stop["is_error"], true, "{v}");
    assert_eq!(stop["structured"]["decision"], "STOP");
    assert_eq!(stop["structured"]["execution_prevented"], true);
    let from_text: serde_json::Value =
        serde_json::from_str(stop["text"].as_str().unwrap()).unwrap();
    assert_eq!(from_text["decision"], "STOP");
    assert!(from_text["request_id"].as_str().unwrap().starts_with("r-"));

    assert_eq!(v["held"]["is_error"], true);
    assert_eq!(v["held"]["structured"]["decision"], "HOLD");

    let events = d.events();
    assert!(
        events
            .iter()
            .any(|e| e["runtime"] == "mcp" && e["decision"] == "STOP"),
        "the refusal is audited under the mcp runtime"
    );
}

/// What a client that made five one-second calls at once, then cancelled
/// a sleep, reports (`parallel_seconds`, `texts`, `cancelled`, `after`),
/// checked against what praxisd did.
fn calls_ran_at_once_and_the_cancel_ended_one(d: &Daemon, v: &serde_json::Value) {
    let took = v["parallel_seconds"].as_f64().unwrap();
    assert!(
        took < 3.0,
        "five one-second calls took {took} s: not concurrent"
    );
    for (i, text) in v["texts"].as_array().unwrap().iter().enumerate() {
        assert!(text.as_str().unwrap().contains(&format!("call-{i}")), "{v}");
    }
    assert_eq!(v["cancelled"], true, "{v}");
    assert!(
        v["after"].as_str().unwrap().contains("still-serving"),
        "{v}"
    );
    let ended = d
        .events_of_kind("finished")
        .into_iter()
        .any(|e| e["detail"]["ended_because"] == "cancelled by the client");
    assert!(
        ended,
        "the cancelled sleep was ended: {:?}",
        d.events_of_kind("finished")
    );
}

#[test]
fn mcp_calls_run_concurrently_and_a_cancel_ends_the_command() {
    let d = Daemon::start_in_git();
    let v = python_client(&d, "mcp_concurrency.py", &[]);
    calls_ran_at_once_and_the_cancel_ended_one(&d, &v);
}

#[test]
fn mcp_answers_with_the_clients_protocol_revision_when_it_speaks_it() {
    let d = Daemon::start();
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2099-01-01", "2025-06-18"),
    ] {
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{asked}","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
        );
        let out = d.praxis_run(&["mcp"], &format!("{init}\n"));
        let reply = first_reply(&out);
        assert_eq!(
            reply["result"]["protocolVersion"], answered,
            "asked {asked}"
        );
    }
}

#[test]
fn a_command_past_its_time_limit_is_ended_and_the_result_says_timed_out() {
    let d = Daemon::start_in_git();
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"echo begun; sleep 30","timeout_s":1}}}"#;
    let started = std::time::Instant::now();
    let out = d.praxis_run(&["mcp"], &format!("{call}\n"));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the sleep was ended at its limit"
    );
    let reply = first_reply(&out);
    let result = &reply["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("timed out"), "{result}");
    // The output goes once, in the text.
    assert_eq!(text.matches("begun").count(), 1, "{result}");
    assert_eq!(result["structuredContent"]["timed_out"], true, "{result}");
    assert!(
        result["structuredContent"].get("stdout").is_none(),
        "{result}"
    );
    assert_eq!(result["isError"], true, "{result}");
}

/// The session control plane's steer reaches an MCP client as a line before
/// the tool output, never inside the command's stderr.
#[test]
fn an_mcp_steer_is_a_line_before_the_output() {
    let d = Daemon::start_in_git();
    let failing = "echo compile error >&2; exit 3";
    let results = python_client(
        &d,
        "mcp_session.py",
        &["mcp-loop-1", failing, failing, failing],
    );
    let texts: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    // Two failures are not a loop yet (N = 3): no steer, the output as before.
    for text in &texts[..2] {
        assert!(text.starts_with("exit code: 3\n"), "{text}");
        assert!(!text.contains("Praxis:"), "{text}");
    }
    // The third is: the steer is the first line, then the output, whose
    // stderr is the command's own.
    let third = texts[2];
    let (steer, output) = third.split_once('\n').unwrap();
    assert_eq!(
        steer,
        "Praxis: The same praxis-run call failed 3 times in a row. Stop repeating it: re-read the error, re-read the code it points at, and change the approach before running it again."
    );
    assert_eq!(output, "exit code: 3\nstderr:\ncompile error\n");
    assert_eq!(results[2]["structured"]["steer"], steer);
    assert_eq!(results[2]["structured"]["stderr_bytes"], 14);
    assert_eq!(results[2]["is_error"], true);
    // The audit has the steer under the MCP runtime and the session.
    let steers = d.events_of_kind("session_steer");
    assert!(
        steers
            .iter()
            .any(|e| e["session"] == "mcp-loop-1" && e["runtime"] == "mcp"),
        "{steers:?}"
    );
}

/// The Node.js and the `tests/js` directory with the npm MCP clients
/// installed, or `None` (the test says it is skipped) without Node.
fn npm_clients() -> Option<(PathBuf, PathBuf)> {
    let Some(node) = node() else {
        eprintln!("SKIPPED: node is not installed, so the npm MCP clients are not tested");
        return None;
    };
    let dir = repo().join("tests/js");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/inspector/package.json")
            .is_file()
            && dir
                .join("node_modules/@modelcontextprotocol/sdk/package.json")
                .is_file(),
        "the MCP client tests need `npm ci` in {} (make test does it)",
        dir.display()
    );
    Some((node, dir))
}

/// The MCP Inspector's CLI mode against `praxis-run mcp`, with `args` after
/// the server command (`--method …`). The Inspector gives a stdio server
/// only a few variables of its own environment (HOME, PATH, …), so the
/// scratch daemon's places are passed with `-e`, as an operator whose
/// praxisd is not at the default places does in the client's config.
fn inspector(d: &Daemon, node: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = d.cmd(node);
    cmd.arg(
        dir.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
    )
    .arg("--cli");
    for (name, sub) in [
        ("XDG_RUNTIME_DIR", "run"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CONFIG_HOME", "config"),
    ] {
        cmd.arg("-e")
            .arg(format!("{name}={}", d.dir.path().join(sub).display()));
    }
    cmd.args(["-e", "PRAXIS_SYSTEM=0"])
        .arg(bin("praxis-run"))
        .arg("mcp")
        .args(args)
        .output()
        .unwrap()
}

/// A `tools/call` of `run_command` through the Inspector: its exit status
/// and the call result it printed.
fn inspector_run(
    d: &Daemon,
    node: &Path,
    dir: &Path,
    command: &str,
) -> (Option<i32>, serde_json::Value) {
    let arg = format!("command={command}");
    let out = inspector(
        d,
        node,
        dir,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "run_command",
            "--tool-arg",
            &arg,
        ],
    );
    (out.status.code(), stdout_json(&out))
}

#[test]
fn the_mcp_inspector_cli_lists_the_tool_and_gets_each_decision() {
    let Some((node, dir)) = npm_clients() else {
        return;
    };
    let d = Daemon::start_in_git();
    let listed = inspector(&d, &node, &dir, &["--method", "tools/list"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let tools = stdout_json(&listed);
    assert_eq!(tools["tools"][0]["name"], "run_command", "{tools}");
    assert_eq!(
        tools["tools"][0]["inputSchema"]["required"],
        serde_json::json!(["command"])
    );

    let (status, allowed) = inspector_run(&d, &node, &dir, "echo praxis-inspector-ok");
    assert_eq!(status, Some(0), "{allowed}");
    assert_eq!(allowed["isError"], false, "{allowed}");
    assert_eq!(allowed["structuredContent"]["decision"], "ALLOW");
    assert!(
        allowed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("praxis-inspector-ok"),
        "{allowed}"
    );

    // The Inspector exits non-zero on a tool error and still prints the result.
    for (command, decision) in [
        ("curl -fsS https://example.com", "HOLD"),
        ("rm -rf / --no-preserve-root", "STOP"),
    ] {
        let (status, refused) = inspector_run(&d, &node, &dir, command);
        assert_ne!(status, Some(0), "{refused}");
        assert_eq!(refused["isError"], true, "{refused}");
        let signal = &refused["structuredContent"];
        assert_eq!(signal["decision"], decision, "{refused}");
        assert_eq!(signal["execution_prevented"], true, "{refused}");
    }
    let decisions: Vec<_> = d
        .events()
        .into_iter()
        .filter(|e| e["runtime"] == "mcp")
        .filter_map(|e| e["decision"].as_str().map(String::from))
        .collect();
    for verdict in ["ALLOW", "HOLD", "STOP"] {
        assert!(
            decisions.iter().any(|v| v == verdict),
            "{verdict} in {decisions:?}"
        );
    }
}

#[test]
fn the_typescript_sdk_client_gets_each_decision_runs_calls_at_once_and_cancels() {
    let Some((node, dir)) = npm_clients() else {
        return;
    };
    let d = Daemon::start_in_git();
    let out = d
        .cmd(&node)
        .arg(dir.join("mcp_client.mjs"))
        .arg(bin("praxis-run"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the TypeScript MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_eq!(
        v["tools"],
        serde_json::json!([{"name": "run_command", "required": ["command"]}])
    );
    assert_eq!(v["allowed"]["is_error"], false, "{v}");
    assert_eq!(v["allowed"]["structured"]["exit_code"], 0, "{v}");
    assert!(
        v["allowed"]["text"]
            .as_str()
            .unwrap()
            .contains("praxis-mcp-ok"),
        "{v}"
    );
    for (key, decision) in [("held", "HOLD"), ("stopped", "STOP")] {
        assert_eq!(v[key]["is_error"], true, "{v}");
        assert_eq!(v[key]["structured"]["decision"], decision, "{v}");
        assert_eq!(v[key]["structured"]["execution_prevented"], true, "{v}");
    }
    assert!(
        v["held"]["structured"]["approve_with"]
            .as_str()
            .unwrap()
            .starts_with("praxis approve r-"),
        "{v}"
    );
    calls_ran_at_once_and_the_cancel_ended_one(&d, &v);
}
