//! `praxis-run plan --contract guardian01.v1` end to end: planner outputs on
//! stdin, the verdict on stdout and in the exit status, audited.

mod common;

use common::{Daemon, stdout_json};

fn plan(d: &Daemon, text: &str) -> (Option<i32>, serde_json::Value) {
    let out = d.praxis_run(
        &["plan", "--contract", "guardian01.v1", "--session", "plan-1"],
        text,
    );
    (out.status.code(), stdout_json(&out))
}

fn vetoed(d: &Daemon, text: &str, veto: &str, path: &str) {
    let (code, v) = plan(d, text);
    assert_ne!(code, Some(0), "{text}: {v}");
    assert_eq!(v["decision"], "STOP", "{text}: {v}");
    assert_eq!(v["veto"], veto, "{text}: {v}");
    assert_eq!(v["execution_prevented"], true);
    assert_eq!(v["path"], path, "{text}: {v}");
    assert!(
        v["reason"].as_str().unwrap().contains(path),
        "the reason names the path: {v}"
    );
}

#[test]
fn a_valid_plan_is_allowed_and_audited() {
    let d = Daemon::start_in_git();
    let (code, v) = plan(
        &d,
        r#"{"actions":[{"type":"navigate","params":{"target":"water_glass","speed_mps":0.3}},{"type":"grasp","params":{"target":"water_glass","force_n":1.5}},{"type":"speak","params":{"utterance":"Here is your water."}}]}"#,
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["decision"], "ALLOW");
    assert_eq!(v["actions"], 3);
    let events = d.events();
    let checked = events
        .iter()
        .find(|e| e["kind"] == "contract_checked")
        .expect("audited");
    assert_eq!(checked["decision"], "ALLOW");
    assert_eq!(checked["session"], "plan-1");
    assert_eq!(checked["detail"]["contract"], "guardian01.v1");
}

#[test]
fn invalid_plans_are_vetoed_naming_the_offending_path() {
    let d = Daemon::start_in_git();
    vetoed(
        &d,
        r#"{"actions":[{"type":"teleport","params":{"target":"kitchen"}}]}"#,
        "G1",
        "$.actions[0].type",
    );
    vetoed(
        &d,
        r#"{"actions":[{"type":"navigate","params":{"speed_mps":2.5}}]}"#,
        "G2",
        "$.actions[0].params.speed_mps",
    );
    vetoed(
        &d,
        r#"{"actions":[{"type":"stop"}],"comment":"all good"}"#,
        "G1",
        "$.comment",
    );
    vetoed(
        &d,
        r#"{"actions":[{"type":"grasp","params":{"target":"cup","confidence":0.97}}]}"#,
        "G1",
        "$.actions[0].params.confidence",
    );
    vetoed(
        &d,
        "{\"actions\":[{\"type\":\"stop\"}]}\nI hope this helps!",
        "G1",
        "$",
    );
    vetoed(
        &d,
        r#"{"actions":[{"type":"stop","type":"grasp"}]}"#,
        "G1",
        "$",
    );
    let stops: Vec<_> = d
        .events()
        .into_iter()
        .filter(|e| e["kind"] == "contract_checked" && e["decision"] == "STOP")
        .collect();
    assert_eq!(stops.len(), 6, "every veto is audited");
    assert!(
        stops
            .iter()
            .all(|e| e["detail"]["veto"].is_string() && e["detail"]["path"].is_string())
    );
}

#[test]
fn an_unknown_contract_is_held_not_allowed() {
    let d = Daemon::start_in_git();
    let out = d.praxis_run(
        &["plan", "--contract", "guardian99"],
        r#"{"actions":[{"type":"stop"}]}"#,
    );
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(stdout_json(&out)["decision"], "HOLD");
}
