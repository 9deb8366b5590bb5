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
    assert_eq!(v["allowed"]["structured"]["stdout"], "praxis-mcp-ok\n");

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
