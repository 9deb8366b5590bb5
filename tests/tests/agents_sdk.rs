//! The OpenAI Agents SDK integration (`integrations/agents-sdk/`), tested
//! offline with the real `openai-agents` package (`pip install openai-agents`)
//! against a scratch daemon: its unittest suite calls the guardrail and the
//! tool directly.

mod common;

use common::{Daemon, bin, repo};

#[test]
fn the_agents_sdk_guardrail_and_tool_go_through_praxisd() {
    let d = Daemon::start_in_git();
    let python = std::env::var("PRAXIS_PYTHON").unwrap_or_else(|_| String::from("python3"));
    let out = d
        .cmd(std::path::Path::new(&python))
        .args(["-m", "unittest", "-v", "test_praxis_agents"])
        .current_dir(repo().join("integrations/agents-sdk/tests"))
        .env("PRAXIS_RUN", bin("praxis-run"))
        .env("PRAXIS_SESSION", "agents-e2e")
        .output()
        .unwrap();
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
