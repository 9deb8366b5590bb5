//! The judge API examples (`examples/`) against a real praxisd: Code Review
//! Memory and TaskFlow Work Log recall, decide and write back, a confirmed
//! rule changes what they decide, and a second run writes nothing new.

mod common;

use common::{Daemon, node, repo, stdout_json};
use serde_json::Value;

/// Runs one example in the workspace; its JSON summary.
fn example(d: &Daemon, node: &std::path::Path, name: &str) -> Value {
    let out = d
        .cmd(node)
        .arg(repo().join("examples").join(name).join("run.mjs"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout_json(&out)
}

/// The decision an example made for `action_id`.
fn decided<'v>(summary: &'v Value, action_id: &str) -> &'v Value {
    summary["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["action_id"] == action_id)
        .unwrap_or_else(|| panic!("no decision for {action_id}: {summary}"))
}

/// A confirmed, instruction-grade rule for `git push origin feature-x` in
/// the workspace, made the operator's way: held, approved with
/// `--remember`, confirmed in review. Returns its memory id.
fn confirmed_push_rule(d: &Daemon) -> String {
    let held = d.run(&["git", "push", "origin", "feature-x"]);
    let signal = common::signal_json(&held);
    let id = signal["request_id"].as_str().unwrap();
    let approved = d.praxis(&["approve", id, "--remember"]);
    assert!(approved.status.success(), "{approved:?}");
    let lesson = format!("lesson-{id}");
    let confirmed = d.praxis(&["review", "confirm", &lesson]);
    assert!(confirmed.status.success(), "{confirmed:?}");
    lesson
}

#[test]
fn the_v1_examples_recall_decide_and_write_back() {
    let Some(node) = node() else {
        eprintln!("SKIPPED: node is not installed, so the examples are not run");
        return;
    };
    let d = Daemon::start_in_git();

    // Nothing confirmed yet: nothing to recall, so nothing moves forward alone.
    let review = example(&d, &node, "code-review-memory");
    let push = decided(&review, "review-pr-12/push");
    assert_eq!(push["decision"], "escalate", "{review}");
    assert_eq!(push["recalled"], serde_json::json!([]));

    let again = example(&d, &node, "code-review-memory");
    for action in ["review-pr-12/push", "review-pr-12/comment"] {
        assert_eq!(decided(&again, action)["replayed"], true, "{again}");
    }

    // A confirmed rule for the push: recalled, followed, a new decision.
    let rule = confirmed_push_rule(&d);
    let review = example(&d, &node, "code-review-memory");
    let push = decided(&review, "review-pr-12/push");
    assert_eq!(push["decision"], "allow", "{review}");
    assert_eq!(push["memory_used"], serde_json::json!([rule]), "{review}");
    assert_eq!(push["replayed"], false, "{review}");
    // The comment names nothing the rule covers: still the maintainers'.
    let comment = decided(&review, "review-pr-12/comment");
    assert_eq!(comment["decision"], "escalate", "{review}");
    assert_eq!(comment["replayed"], true, "{review}");

    let log = example(&d, &node, "taskflow-work-log");
    let push = decided(&log, "task-17/push");
    assert_eq!(push["decision"], "allow", "{log}");
    assert_eq!(push["memory_used"], serde_json::json!([rule]), "{log}");
    assert_eq!(push["replayed"], false);
    let handoff = decided(&log, "task-17/handoff");
    assert_eq!(handoff["decision"], "escalate", "an open question: {log}");
    assert!(
        handoff["memories_proposed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str().unwrap().contains("open_question")),
        "{log}"
    );

    // The write-backs are in the audit chain and their proposals in review.
    let written: Vec<_> = d
        .events_of_kind("memory")
        .into_iter()
        .filter(|e| e["detail"].to_string().contains("task-17"))
        .collect();
    assert!(
        !written.is_empty(),
        "the work log's write-backs are audited"
    );
    let queue = d.praxis(&["review", "--json"]);
    let queued = String::from_utf8_lossy(&queue.stdout);
    let handoff_id = handoff["decision_id"].as_str().unwrap();
    assert!(
        queued.contains(&format!("{handoff_id}/open_question/0")),
        "{queued}"
    );

    let again = example(&d, &node, "taskflow-work-log");
    for action in ["task-17/push", "task-17/handoff"] {
        assert_eq!(decided(&again, action)["replayed"], true, "{again}");
    }
}
