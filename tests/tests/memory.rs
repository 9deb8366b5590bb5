//! Judgment memory end to end: a real praxisd, the agent's `praxis-run`,
//! the operator's `praxis approve --remember`, `review`, `inspect` and
//! `memory stats`.

mod common;

use common::judge::{held, last_decision, ok, push, pushable_repo as repo, remembered};
use common::{Daemon, bin, signal_json, stdout_json};

#[test]
fn an_approval_with_remember_proposes_a_lesson_for_review() {
    let d = Daemon::start();
    repo(&d.work());
    let lesson = remembered(&d, "feature/a");

    let queue = stdout_json(&d.praxis(&["review", "--json"]));
    let items = queue["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{queue}");
    let item = &items[0];
    assert_eq!(item["item_id"], lesson);
    assert_eq!(item["provenance"], "generated");
    assert_eq!(
        item["proposed_memory"]["use_policy"]["policy"],
        "requires_confirmation"
    );
    assert_eq!(item["suggested_use_policy"], "can_use_as_instruction");
    assert_eq!(item["lesson"]["branches"]["kind"], "non_default", "{item}");
    assert!(
        item["future_actions"]["sentence"]
            .as_str()
            .unwrap()
            .starts_with("would have allowed 1 of the last"),
        "{item}"
    );
    let proposed = d.events_of_kind("memory");
    assert_eq!(proposed.len(), 1);
    assert_eq!(proposed[0]["detail"]["memory_id"], lesson);

    // Unconfirmed, it relaxes nothing.
    held(&push(&d, "feature/b"));
}

#[test]
fn a_confirmed_lesson_lets_the_next_similar_push_through_and_names_itself() {
    let d = Daemon::start();
    repo(&d.work());
    let lesson = remembered(&d, "feature/a");
    let said = ok(&d.praxis(&["review", "confirm", &lesson]));
    assert!(said.contains("confirmed"), "{said}");
    assert_eq!(d.events_of_kind("review").len(), 1);

    let out = push(&d, "feature/b");
    assert!(!matches!(out.status.code(), Some(125 | 126)), "{out:?}");
    let decided = last_decision(&d);
    assert_eq!(decided["decision"], "ALLOW", "{decided}");
    assert_eq!(
        decided["detail"]["memory_used"],
        serde_json::json!([{"memory_id": lesson, "used_as": "instruction"}])
    );
    assert!(decided["reason"].as_str().unwrap().contains(&lesson));

    // The default branch is not covered, nor a force push.
    held(&push(&d, "main"));
    let force = d
        .cmd(&bin("praxis-run"))
        .args(["--", "git", "push", "--force", "origin", "feature/c"])
        .current_dir(d.work())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(matches!(force.status.code(), Some(125 | 126)), "{force:?}");

    let inspected = stdout_json(&d.praxis(&["inspect", &lesson, "--json"]));
    assert_eq!(inspected["provenance"], "user_confirmed", "{inspected}");
    assert_eq!(inspected["review_status"], "confirmed");
    let stats = stdout_json(&d.praxis(&["memory", "stats", "--json"]));
    assert!(stats.is_object(), "{stats}");
}

#[test]
fn a_disputed_or_downgraded_lesson_does_not_relax_a_hold() {
    let d = Daemon::start();
    repo(&d.work());
    let lesson = remembered(&d, "feature/a");
    ok(&d.praxis(&["review", "confirm", &lesson]));

    // A correction disputes the confirmed lesson (as a decision write-back
    // would): the store row gains a dispute link.
    let db = rusqlite::Connection::open(d.db().with_file_name("memory.db")).unwrap();
    let body: String = db
        .query_row("SELECT body FROM memories WHERE id = ?1", [&lesson], |r| {
            r.get(0)
        })
        .unwrap();
    let mut memory: serde_json::Value = serde_json::from_str(&body).unwrap();
    memory["disputed_by"] = serde_json::json!(["correction-1"]);
    db.execute(
        "UPDATE memories SET body = ?1 WHERE id = ?2",
        rusqlite::params![memory.to_string(), lesson],
    )
    .unwrap();
    held(&push(&d, "feature/b"));
    assert!(last_decision(&d)["detail"]["memory_used"].is_null());

    // Kept as evidence only, it is shown with the HOLD and decides nothing.
    memory["disputed_by"] = serde_json::json!([]);
    db.execute(
        "UPDATE memories SET body = ?1 WHERE id = ?2",
        rusqlite::params![memory.to_string(), lesson],
    )
    .unwrap();
    ok(&d.praxis(&["review", "evidence-only", &lesson]));
    let out = push(&d, "feature/c");
    held(&out);
    assert!(
        signal_json(&out)["reason"]
            .as_str()
            .unwrap()
            .contains("memory evidence"),
        "{out:?}"
    );
    assert_eq!(
        last_decision(&d)["detail"]["memory_used"],
        serde_json::json!([{"memory_id": lesson, "used_as": "evidence"}])
    );
}

#[test]
fn review_actions_are_refused_for_unknown_items_and_illegal_moves() {
    let d = Daemon::start();
    repo(&d.work());
    let lesson = remembered(&d, "feature/a");
    let out = d.praxis(&["review", "confirm", "no-such-memory"]);
    assert!(!out.status.success());
    ok(&d.praxis(&["review", "reject", &lesson]));
    let again = d.praxis(&["review", "confirm", &lesson]);
    assert!(!again.status.success(), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("rejected"),
        "{again:?}"
    );
}

/// An operator's HOLD rule for release branches, marked not relaxable.
const RELEASE_RULE: &str = r#"
[[rule]]
id = "push-release"
decision = "hold"
not_relaxable = true
reason = "release branches are pushed by a person"
program = ["git"]
subcommand = ["push"]
args = ["release/*"]
match = ["git push origin release/1"]
not_match = ["git push origin feature/a"]
"#;

#[test]
fn a_confirmed_lesson_never_relaxes_a_hold_from_a_rule_marked_not_relaxable() {
    let d = Daemon::start_with(&[("policy.toml", RELEASE_RULE)], &[]);
    repo(&d.work());
    let lesson = remembered(&d, "feature/a");
    ok(&d.praxis(&["review", "confirm", &lesson]));

    // The lesson (pushes to non-default branches) matches a release push,
    // but the rule that holds it is not relaxable.
    let out = push(&d, "release/1");
    let id = held(&out);
    let decided = last_decision(&d);
    assert!(
        decided["reason"]
            .as_str()
            .unwrap()
            .contains("release branches"),
        "{decided}"
    );
    assert!(decided["detail"]["memory_used"].is_null(), "{decided}");
    // Nor is a lesson proposed from approving it.
    let said = ok(&d.praxis(&["approve", &id, "--remember"]));
    assert!(said.contains("no lesson proposed"), "{said}");
    // The lesson still lets other pushes through.
    let out = push(&d, "feature/b");
    assert!(!matches!(out.status.code(), Some(125 | 126)), "{out:?}");
}
