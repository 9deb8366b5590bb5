//! The OpenAI Agents SDK integration (`integrations/agents-sdk/`), tested
//! offline with the real `openai-agents` package (`pip install openai-agents`)
//! against a scratch daemon: its unittest suites call the guardrail and the
//! tool directly.

mod common;

use std::process::Output;

use common::judge::{ok, pushable_repo, remembered};
use common::{Daemon, bin, repo};

/// Runs one unittest module of the package against `d`.
fn unittest(d: &Daemon, module: &str) -> Output {
    let python = std::env::var("PRAXIS_PYTHON").unwrap_or_else(|_| String::from("python3"));
    d.cmd(std::path::Path::new(&python))
        .args(["-m", "unittest", "-v", module])
        .current_dir(repo().join("integrations/agents-sdk/tests"))
        .env("PRAXIS_RUN", bin("praxis-run"))
        .env("PRAXIS_SESSION", "agents-e2e")
        .env("PRAXIS_WORKSPACE", d.work())
        .output()
        .unwrap()
}

#[test]
fn the_agents_sdk_guardrail_and_tool_go_through_praxisd() {
    let d = Daemon::start_in_git();
    let out = unittest(&d, "test_praxis_agents");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "agents-sdk tests failed (needs `pip install openai-agents`):\n{report}"
    );
    assert!(report.contains("Ran 7 tests"), "{report}");
    let events = d.events();
    assert!(
        events
            .iter()
            .any(|e| e["runtime"] == "openai-agents" && e["session"] == "agents-e2e")
    );
}

#[test]
fn the_agents_sdk_guardrail_recalls_before_deciding_and_writes_back_after() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    let lesson = remembered(&d, "feature/a");
    ok(&d.praxis(&["review", "confirm", &lesson]));
    let out = unittest(&d, "test_memory");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "agents-sdk memory tests failed (needs `pip install openai-agents`):\n{report}"
    );
    assert!(report.contains("Ran 3 tests"), "{report}");
    // The inspector names the session's recall of the lesson.
    let inspected = common::stdout_json(&d.praxis(&["inspect", &lesson, "--json"]));
    assert!(
        inspected["retrieved_by"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["workflow"] == "agents-e2e"),
        "{inspected}"
    );
}
