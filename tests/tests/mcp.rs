//! `praxis-run mcp` driven by a real MCP client: the official Python SDK's
//! stdio client (`pip install mcp`), against a scratch daemon.

mod common;

use common::{Daemon, bin, repo, stdout_json};

/// The Python interpreter with the SDKs installed (`PRAXIS_PYTHON`, else `python3`).
pub fn python() -> String {
    std::env::var("PRAXIS_PYTHON").unwrap_or_else(|_| String::from("python3"))
}

#[test]
fn an_mcp_session_lists_the_tool_and_runs_only_what_is_allowed() {
    let d = Daemon::start_in_git();
    let script = repo().join("tests/conformance/mcp_client.py");
    let praxis_run = bin("praxis-run").display().to_string();
    let out = d
        .cmd(std::path::Path::new(&python()))
        .args([script.display().to_string(), praxis_run])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client failed (needs `pip install mcp`): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
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

#[test]
fn mcp_calls_run_concurrently_and_a_cancel_ends_the_command() {
    let d = Daemon::start_in_git();
    let script = repo().join("tests/conformance/mcp_concurrency.py");
    let out = d
        .cmd(std::path::Path::new(&python()))
        .args([
            script.display().to_string(),
            bin("praxis-run").display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
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
        let reply: serde_json::Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap())
                .unwrap();
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
    let reply: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
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
    let script = repo().join("tests/conformance/mcp_session.py");
    let failing = "echo compile error >&2; exit 3";
    let out = d
        .cmd(std::path::Path::new(&python()))
        .args([
            script.display().to_string(),
            bin("praxis-run").display().to_string(),
            String::from("mcp-loop-1"),
            failing.into(),
            failing.into(),
            failing.into(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = stdout_json(&out);
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
