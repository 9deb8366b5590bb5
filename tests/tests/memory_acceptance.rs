//! The seed's eleven acceptance criteria for judgment memory, one named
//! test each, against a real praxisd: its exec socket (the agent's
//! `praxis-run`), its operator CLI (`praxis`) and its judge API socket.

mod common;

use common::judge::{
    call, fixture, held, inspect, last_decision, ok, push, pushable_repo, remembered, schema_errors,
};
use common::{Daemon, stdout_json};
use serde_json::{Value, json};

/// A recall request for pushes in the daemon's workspace.
fn recall_request(d: &Daemon, id: &str) -> Value {
    let mut request = fixture("recall.json");
    request["request_id"] = json!(id);
    request["workspace_id"] = json!(d.work().display().to_string());
    request["project_id"] = Value::Null;
    request["scope"]["visibility"] = json!("workspace");
    request
}

/// The ids of the memories a recall returned.
fn recalled(d: &Daemon, request: &Value) -> (Vec<String>, Value) {
    let (status, body) = call(d, "POST", "/v1/judge/recall", Some(request));
    assert_eq!(status, 200, "{body}");
    assert!(
        schema_errors("openbrain.judge.recall_response.v1", &body).is_empty(),
        "{body}"
    );
    let ids = body["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory_id"].as_str().unwrap().to_owned())
        .collect();
    (ids, body)
}

/// A judge decision for the daemon's workspace with its own key.
fn decision(d: &Daemon, id: &str, verdict: &str) -> Value {
    let mut doc = fixture("decision.json");
    doc["workspace_id"] = json!(d.work().display().to_string());
    doc["project_id"] = Value::Null;
    doc["decision_id"] = json!(id);
    doc["idempotency_key"] = json!(format!("key-{id}"));
    doc["decision"] = json!(verdict);
    doc["memory_used"] = json!([]);
    doc
}

/// A human correction: a person decided against `memory_id`.
fn correction(d: &Daemon, id: &str, memory_id: &str) -> Value {
    let mut doc = decision(d, id, "block");
    doc["judge"]["kind"] = json!("human");
    doc["reasoning_summary"] = json!("pushes here need a reviewer again");
    doc["memory_used"] = json!([{"memory_id": memory_id, "used_as": "instruction"}]);
    doc["memory_to_write"]["lessons"] = json!([]);
    doc
}

fn confirmed_lesson(d: &Daemon, branch: &str) -> String {
    let lesson = remembered(d, branch);
    ok(&d.praxis(&["review", "confirm", &lesson]));
    lesson
}

/// "V1 is ready when a developer can wire a task to judge recall": a
/// runtime that knows only the contract gets a schema-valid answer.
#[test]
fn criterion_01_a_task_can_be_wired_to_judge_recall() {
    let d = Daemon::start();
    let (ids, body) = recalled(&d, &recall_request(&d, "wire-1"));
    assert!(ids.is_empty(), "{body}");
    assert_eq!(body["request_id"], "wire-1");
    assert_eq!(body["schema_version"], "openbrain.judge.recall_response.v1");
    // The recall itself is a judgment event of the store.
    let stats = stdout_json(&d.praxis(&["memory", "stats", "--json"]));
    assert_eq!(stats["recalls"], 1, "{stats}");
}

/// "The judge receives scoped memories with provenance and use policy."
#[test]
fn criterion_02_the_judge_receives_scoped_memories_with_provenance_and_use_policy() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    let lesson = confirmed_lesson(&d, "feature/a");

    let (ids, body) = recalled(&d, &recall_request(&d, "scoped-1"));
    assert_eq!(ids, vec![lesson.clone()], "{body}");
    let memory = &body["memories"][0];
    assert_eq!(memory["provenance"]["status"], "user_confirmed");
    assert_eq!(memory["use_policy"]["policy"], "can_use_as_instruction");
    assert_eq!(
        memory["scope"]["workspace_id"],
        d.work().display().to_string()
    );
    assert!(memory["freshness"]["stale_after"].is_string(), "{memory}");

    // Another workspace sees none of it, nor an org-wide request (it is
    // scoped to its workspace).
    let mut other = recall_request(&d, "scoped-2");
    other["workspace_id"] = json!("/srv/elsewhere");
    assert!(recalled(&d, &other).0.is_empty());
    let mut org = recall_request(&d, "scoped-3");
    org["scope"]["visibility"] = json!("org");
    assert!(recalled(&d, &org).0.is_empty());
}

/// "The runtime can write back allow, block, revise, and escalate decisions."
#[test]
fn criterion_03_the_runtime_writes_back_allow_block_revise_and_escalate() {
    let d = Daemon::start();
    for verdict in ["allow", "block", "revise", "escalate"] {
        let id = format!("dec-{verdict}");
        let mut doc = decision(&d, &id, verdict);
        if verdict == "revise" {
            doc["required_revision"] = json!({
                "summary": "push to a branch, not to main",
                "revised_action_constraints": ["branch != main"],
            });
        }
        let (status, body) = call(&d, "POST", "/v1/judge/decisions", Some(&doc));
        assert_eq!(status, 200, "{verdict}: {body}");
        assert_eq!(body["replayed"], false);
        let (status, stored) = call(&d, "GET", &format!("/v1/judge/decisions/{id}"), None);
        assert_eq!(status, 200);
        assert_eq!(stored["decision"], verdict);
        assert!(
            schema_errors("openbrain.judge.decision.v1", &stored).is_empty(),
            "{stored}"
        );
    }
    let stats = stdout_json(&d.praxis(&["memory", "stats", "--json"]));
    assert_eq!(stats["decisions"], 4, "{stats}");
    assert_eq!(stats["escalations"], 1);
    assert_eq!(stats["revisions"], 1);
}

/// "Human review is required before inferred or generated memories become
/// future instructions."
#[test]
fn criterion_04_human_review_is_required_before_generated_memory_instructs() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    // A runtime's lesson and an operator's remembered approval both wait.
    let mut doc = decision(&d, "dec-gen", "allow");
    doc["provenance"] = json!({"default_status": "user_confirmed", "requires_review": false});
    let (status, body) = call(&d, "POST", "/v1/judge/decisions", Some(&doc));
    assert_eq!(status, 200, "{body}");
    let lesson = remembered(&d, "feature/a");

    let queue = stdout_json(&d.praxis(&["review", "--json"]));
    for item in queue["items"].as_array().unwrap() {
        assert_ne!(item["provenance"], "user_confirmed", "{item}");
        assert_ne!(
            item["proposed_memory"]["use_policy"]["policy"], "can_use_as_instruction",
            "{item}"
        );
    }
    let written = queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["item_id"] == "dec-gen/lesson/0")
        .unwrap_or_else(|| panic!("the written lesson is not queued: {queue}"));
    assert_eq!(
        written["provenance"], "generated",
        "claimed confirmation is not kept"
    );

    // Unreviewed, it relaxes nothing and is not recalled as usable.
    held(&push(&d, "feature/b"));
    assert!(recalled(&d, &recall_request(&d, "unreviewed")).0.is_empty());
    // A human confirms it; then it instructs.
    ok(&d.praxis(&["review", "confirm", &lesson]));
    let out = push(&d, "feature/c");
    assert!(!matches!(out.status.code(), Some(125 | 126)), "{out:?}");
}

/// "The inspector shows what was recalled, what was used, what was decided,
/// and what was written."
#[test]
fn criterion_05_the_inspector_shows_what_was_recalled_used_decided_and_written() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    let lesson = confirmed_lesson(&d, "feature/a");
    recalled(&d, &recall_request(&d, "inspect-recall"));
    let out = push(&d, "feature/b");
    assert!(!matches!(out.status.code(), Some(125 | 126)), "{out:?}");
    let used_by = last_decision(&d)["request_id"].as_str().unwrap().to_owned();

    let encoded = lesson.replace('/', "%2F");
    let inspected = inspect(&d, &encoded);
    let retrieved: Vec<&str> = inspected["retrieved_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["request_id"].as_str().unwrap())
        .collect();
    assert!(retrieved.contains(&"inspect-recall"), "{inspected}");
    assert!(retrieved.contains(&used_by.as_str()), "{inspected}");
    assert_eq!(
        inspected["used"],
        json!([{"decision_id": used_by, "used_as": "instruction", "at": inspected["used"][0]["at"]}]),
        "{inspected}"
    );
    assert_eq!(inspected["created_by"]["kind"], "operator_approval");
    assert_eq!(inspected["reviewed_by"][0]["action"], "confirm");
    assert_eq!(inspected["can_influence"]["as_what"], "instruction");
    // The CLI answers the same questions.
    let cli = stdout_json(&d.praxis(&["inspect", &lesson, "--json"]));
    assert_eq!(cli["retrieved_by"], inspected["retrieved_by"]);

    // What a decision wrote is inspectable back to it.
    let (status, _) = call(
        &d,
        "POST",
        "/v1/judge/decisions",
        Some(&decision(&d, "dec-w", "allow")),
    );
    assert_eq!(status, 200);
    let (status, written) = call(
        &d,
        "GET",
        "/v1/memories/dec-w%2Fdecision%2F0/inspector",
        None,
    );
    assert_eq!(status, 200, "{written}");
    assert_eq!(written["created_by"]["decision_id"], "dec-w");
}

/// "Re-running a similar workflow retrieves a prior confirmed lesson": the
/// recall returns it, and the pipeline ALLOWs by it, naming it.
#[test]
fn criterion_06_rerunning_a_similar_workflow_retrieves_the_confirmed_lesson_and_is_allowed_by_it() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    let lesson = confirmed_lesson(&d, "feature/a");

    let (ids, _) = recalled(&d, &recall_request(&d, "rerun"));
    assert_eq!(ids, vec![lesson.clone()]);
    let out = push(&d, "feature/b");
    assert!(!matches!(out.status.code(), Some(125 | 126)), "{out:?}");
    let decided = last_decision(&d);
    assert_eq!(decided["decision"], "ALLOW", "{decided}");
    assert_eq!(
        decided["detail"]["memory_used"],
        json!([{"memory_id": lesson, "used_as": "instruction"}])
    );
    // A judge-only runtime gets the same answer and is told which memory.
    let judged = d.praxis_run(
        &[
            "judge",
            "--json",
            "--",
            "git",
            "push",
            "origin",
            "feature/c",
        ],
        "",
    );
    assert_eq!(judged.status.code(), Some(0), "{judged:?}");
    let stats = stdout_json(&d.praxis(&["memory", "stats", "--json"]));
    assert_eq!(stats["decided_by_memory"], 2, "{stats}");
}

/// "Secret-like data and raw transcript dumps are blocked by default."
#[test]
fn criterion_07_secret_like_data_and_transcript_dumps_are_blocked() {
    let d = Daemon::start();
    let mut secret = decision(&d, "dec-s", "allow");
    secret["memory_to_write"]["lessons"] =
        json!(["use token ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp for pushes"]);
    let (status, body) = call(&d, "POST", "/v1/judge/decisions", Some(&secret));
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["error"]["field"], "memory_to_write.lessons[0]",
        "{body}"
    );

    let transcript: String = (0..400)
        .map(|i| format!("user: step {i}\nassistant: done {i}\n"))
        .collect();
    let mut dump = decision(&d, "dec-t", "allow");
    dump["reasoning_summary"] = json!(transcript);
    let (status, body) = call(&d, "POST", "/v1/judge/decisions", Some(&dump));
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["field"], "reasoning_summary", "{body}");

    let mut asked = recall_request(&d, "rec-s");
    asked["query"]["summary"] = json!("password=hunter2hunter2 for the deploy");
    let (status, body) = call(&d, "POST", "/v1/judge/recall", Some(&asked));
    assert_eq!(status, 422, "{body}");
    for id in ["dec-s", "dec-t"] {
        assert_eq!(
            call(&d, "GET", &format!("/v1/judge/decisions/{id}"), None).0,
            404
        );
    }
    assert!(d.events_of_kind("memory").is_empty());
}

/// "The contract is not OpenClaw-specific": another runtime proposes an
/// action with `praxis-run judge --proposal`, gets a decision document in
/// the same contract, and writes it back.
#[test]
fn criterion_08_the_contract_is_reusable_by_another_runtime() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    let mut proposal = fixture("action_proposal.json");
    proposal["workspace_id"] = json!(d.work().display().to_string());
    proposal["project_id"] = Value::Null;
    proposal["runtime"] = json!({"name": "acme-runner", "version": null, "adapter": null});
    proposal["action"]["target"] = json!("git push origin feature/a");
    let out = d.praxis_run(&["judge", "--proposal", "-"], &proposal.to_string());
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let answer = stdout_json(&out);
    assert!(
        schema_errors("openbrain.judge.decision.v1", &answer).is_empty(),
        "{answer}"
    );
    assert_eq!(answer["decision"], "escalate");
    assert_eq!(answer["action_id"], proposal["action_id"]);
    assert_eq!(answer["escalation"]["required"], true);
    let decided = last_decision(&d);
    assert_eq!(decided["runtime"], "acme-runner", "{decided}");

    // The same document is accepted as write-back, unchanged.
    let (status, body) = call(&d, "POST", "/v1/judge/decisions", Some(&answer));
    assert_eq!(status, 200, "{body}");

    // A read-only file tool of the same runtime is allowed.
    proposal["tool"] = json!({"name": "read_file", "kind": "file", "target_system": null});
    proposal["action"]["risk_class"] = json!("read_only");
    proposal["action"]["target"] = json!("README");
    std::fs::write(d.work().join("README"), "hello\n").unwrap();
    let out = d.praxis_run(&["judge", "--proposal", "-"], &proposal.to_string());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout_json(&out)["decision"], "allow");

    // A proposal that breaks the contract is refused, naming the field.
    proposal["tool"]["kind"] = json!("teleport");
    let out = d.praxis_run(&["judge", "--proposal", "-"], &proposal.to_string());
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert_eq!(stdout_json(&out)["error"]["field"], "tool.kind");
}

/// "Decision write-back is idempotent."
#[test]
fn criterion_09_decision_write_back_is_idempotent() {
    let d = Daemon::start();
    let doc = decision(&d, "dec-once", "allow");
    let first = call(&d, "POST", "/v1/judge/decisions", Some(&doc)).1;
    let mut again = doc.clone();
    again["decision_id"] = json!("dec-twice");
    again["decision"] = json!("block");
    let second = call(&d, "POST", "/v1/judge/decisions", Some(&again)).1;
    assert_eq!(first["decision_id"], "dec-once");
    assert_eq!(second["decision_id"], "dec-once", "{second}");
    assert_eq!(second["replayed"], true);
    assert_eq!(
        call(&d, "GET", "/v1/judge/decisions/dec-twice", None).0,
        404
    );
    assert_eq!(
        call(&d, "GET", "/v1/judge/decisions/dec-once", None).1["decision"],
        "allow"
    );
    assert_eq!(d.events_of_kind("memory").len(), 1);
    let queue = stdout_json(&d.praxis(&["review", "--json"]));
    let lessons = queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["item_id"].as_str().unwrap().contains("/lesson/"))
        .count();
    assert_eq!(lessons, 1, "{queue}");
}

/// "Disputed and superseded memories are not injected automatically":
/// neither recalled by default nor used to relax a HOLD.
#[test]
fn criterion_10_disputed_and_superseded_memories_are_not_injected() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    // Two proposals of the same lesson; the first is merged into the second.
    let first = remembered(&d, "feature/a");
    let second = remembered(&d, "feature/b");
    ok(&d.praxis(&["review", "merge", &first, "--into", &second]));
    ok(&d.praxis(&["review", "confirm", &second]));
    let out = push(&d, "feature/c");
    assert!(!matches!(out.status.code(), Some(125 | 126)), "{out:?}");
    assert_eq!(
        last_decision(&d)["detail"]["memory_used"],
        json!([{"memory_id": second, "used_as": "instruction"}]),
        "the superseded lesson is not used"
    );
    let (ids, body) = recalled(&d, &recall_request(&d, "after-merge"));
    assert_eq!(ids, vec![second.clone()], "{body}");
    assert!(
        body["warnings"].to_string().contains("superseded_withheld"),
        "{body}"
    );

    // A human correction disputes the confirmed lesson.
    let (status, body) = call(
        &d,
        "POST",
        "/v1/judge/decisions",
        Some(&correction(&d, "dec-correct", &second)),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["memories_disputed"], json!([second]));
    held(&push(&d, "feature/d"));
    assert!(last_decision(&d)["detail"]["memory_used"].is_null());
    let (ids, body) = recalled(&d, &recall_request(&d, "after-dispute"));
    assert!(ids.is_empty(), "{body}");
    assert!(
        body["warnings"].to_string().contains("disputed_withheld"),
        "{body}"
    );
    // Asked for explicitly, it comes labelled not to be injected.
    let mut asked = recall_request(&d, "with-disputed");
    asked["scope"]["include_disputed"] = json!(true);
    asked["scope"]["include_unconfirmed"] = json!(true);
    asked["policy"]["allowed_use_policies"] = json!(["do_not_inject_automatically"]);
    let (ids, body) = recalled(&d, &asked);
    assert_eq!(ids, vec![second.clone()], "{body}");
    assert_eq!(
        body["memories"][0]["use_policy"]["policy"],
        "do_not_inject_automatically"
    );
    let inspected = stdout_json(&d.praxis(&["inspect", &second, "--json"]));
    assert_eq!(inspected["provenance"], "disputed", "{inspected}");
    // The correction counts as a false allow the human caught.
    let stats = stdout_json(&d.praxis(&["memory", "stats", "--json"]));
    assert_eq!(stats["false_allows"], 1, "{stats}");
    assert_eq!(
        stats["human_corrections"], 1,
        "its decision record: {stats}"
    );
}

/// "The review queue can downgrade a memory from instruction candidate to
/// evidence only."
#[test]
fn criterion_11_the_review_queue_downgrades_an_instruction_candidate_to_evidence_only() {
    let d = Daemon::start();
    pushable_repo(&d.work());
    let lesson = remembered(&d, "feature/a");
    let queue = stdout_json(&d.praxis(&["review", "--json"]));
    assert_eq!(
        queue["items"][0]["suggested_use_policy"],
        "can_use_as_instruction"
    );

    let (status, acted) = call(
        &d,
        "POST",
        &format!("/v1/review-queue/{lesson}/actions"),
        Some(&json!({"action": "evidence-only"})),
    );
    assert_eq!(status, 200, "{acted}");
    let out = push(&d, "feature/b");
    held(&out);
    assert_eq!(
        last_decision(&d)["detail"]["memory_used"],
        json!([{"memory_id": lesson, "used_as": "evidence"}])
    );
    let (ids, body) = recalled(&d, &recall_request(&d, "evidence"));
    assert_eq!(ids, vec![lesson.clone()]);
    assert_eq!(
        body["memories"][0]["use_policy"]["policy"],
        "can_use_as_evidence"
    );
    let stats = stdout_json(&d.praxis(&["memory", "stats", "--json"]));
    assert_eq!(stats["downgraded_to_evidence"], 1, "{stats}");
    assert_eq!(stats["prevented_from_instruction"], 1, "{stats}");
}
