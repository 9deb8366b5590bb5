//! The six judge API endpoints against a real praxisd, over its API socket:
//! schema-valid answers, strict refusals naming the field, idempotent
//! write-back, secrets refused, review and inspection.

mod common;

use common::Daemon;
use std::os::unix::fs::PermissionsExt;

use common::judge::{call, exchange, fixture, inspect, validator};
use serde_json::json;

#[test]
fn recall_answers_schema_valid_json_and_refuses_bad_fields_by_name() {
    let d = Daemon::start();
    let (status, body) = call(
        &d,
        "POST",
        "/v1/judge/recall",
        Some(&fixture("recall.json")),
    );
    assert_eq!(status, 200, "{body}");
    let errors: Vec<String> = validator("openbrain.judge.recall_response.v1")
        .iter_errors(&body)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}: {body}");
    assert_eq!(body["request_id"], "rec-0001");
    // The policy's rules about the tool (`git`) come back as policy hits.
    let hits = body["policy_hits"].as_array().unwrap();
    let force = hits
        .iter()
        .find(|h| h["policy_id"] == "git-force-push")
        .unwrap_or_else(|| panic!("no git-force-push hit: {body}"));
    assert_eq!(force["required_behavior"], "escalate");
    assert!(
        force["source_ref"]
            .as_str()
            .unwrap()
            .starts_with("praxis:policy/")
    );

    for (pointer, to, field) in [
        (
            "/scope/visibility",
            Some(json!("galaxy")),
            "scope.visibility",
        ),
        ("/bogus", Some(json!(1)), "bogus"),
        ("/action_id", None, "action_id"),
    ] {
        let mut doc = fixture("recall.json");
        match to {
            Some(value) => {
                let (parent, key) = pointer.rsplit_once('/').unwrap();
                doc.pointer_mut(parent).unwrap()[key] = value;
            }
            None => {
                doc.as_object_mut().unwrap().remove(&pointer[1..]);
            }
        }
        let (status, body) = call(&d, "POST", "/v1/judge/recall", Some(&doc));
        assert_eq!(status, 422, "{pointer}: {body}");
        assert_eq!(body["error"]["field"], field, "{body}");
    }
}

#[test]
fn a_decision_written_twice_with_one_key_is_one_decision() {
    let d = Daemon::start();
    let decision = fixture("decision.json");
    let (status, first) = call(&d, "POST", "/v1/judge/decisions", Some(&decision));
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["decision_id"], "dec-0001");
    assert_eq!(first["replayed"], false);

    let mut again = decision.clone();
    again["decision_id"] = json!("dec-0002");
    let (status, second) = call(&d, "POST", "/v1/judge/decisions", Some(&again));
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["decision_id"], "dec-0001", "{second}");
    assert_eq!(second["replayed"], true);
    assert_eq!(d.events_of_kind("memory").len(), 1, "one audit record");

    let (status, stored) = call(&d, "GET", "/v1/judge/decisions/dec-0001", None);
    assert_eq!(status, 200);
    let errors: Vec<String> = validator("openbrain.judge.decision.v1")
        .iter_errors(&stored)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let (status, _) = call(&d, "GET", "/v1/judge/decisions/dec-0002", None);
    assert_eq!(status, 404);

    // Its lesson waits in the queue; a human confirms it through the API.
    let (status, queue) = call(&d, "GET", "/v1/review-queue", None);
    assert_eq!(status, 200);
    let lesson = queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["item_id"].as_str().unwrap().contains("/lesson/"))
        .unwrap_or_else(|| panic!("no lesson queued: {queue}"))["item_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let encoded = lesson.replace('/', "%2F");
    let path = format!("/v1/review-queue/{encoded}/actions");
    let (status, acted) = call(&d, "POST", &path, Some(&json!({"action": "evidence-only"})));
    assert_eq!(status, 200, "{acted}");
    let (status, bad) = call(&d, "POST", &path, Some(&json!({"action": "bless"})));
    assert_eq!(status, 409, "{bad}");

    let inspected = inspect(&d, &encoded);
    assert_eq!(inspected["review_status"], "evidence_only", "{inspected}");
    assert_eq!(
        inspected["created_by"]["decision_id"], "dec-0001",
        "{inspected}"
    );
}

#[test]
fn a_secret_in_a_decision_is_refused_and_nothing_is_stored() {
    let d = Daemon::start();
    let mut decision = fixture("decision.json");
    decision["reasoning_summary"] =
        json!("pushed with token ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp");
    let (status, body) = call(&d, "POST", "/v1/judge/decisions", Some(&decision));
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["field"], "reasoning_summary", "{body}");
    let (status, _) = call(&d, "GET", "/v1/judge/decisions/dec-0001", None);
    assert_eq!(status, 404);
    assert!(d.events_of_kind("memory").is_empty());
}

#[test]
fn the_loopback_tcp_api_serves_only_the_bearer_of_its_token() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = format!("[api]\ntcp = \"127.0.0.1:{port}\"\n");
    let d = Daemon::start_with(&[("praxis.toml", &config)], &[]);
    // Every listener is up before the request socket the harness waits for.
    let connect = || std::net::TcpStream::connect(("127.0.0.1", port)).expect("the TCP API");
    drop(connect());
    let token_file = d.db().with_file_name("api-token");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let token = std::fs::read_to_string(&token_file).unwrap();
    let recall = fixture("recall.json");

    let (status, body) = exchange(connect(), "POST", "/v1/judge/recall", Some(&recall), None);
    assert_eq!(status, 401, "{body}");
    let last = if token.ends_with('0') { "1" } else { "0" };
    let wrong = format!("{}{last}", &token[..token.len() - 1]);
    let (status, _) = exchange(connect(), "GET", "/v1/review-queue", None, Some(&wrong));
    assert_eq!(status, 401);
    let (status, body) = exchange(
        connect(),
        "POST",
        "/v1/judge/recall",
        Some(&recall),
        Some(&token),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["request_id"], "rec-0001");
    // A write through TCP is audited like one through the socket.
    let (status, body) = exchange(
        connect(),
        "POST",
        "/v1/judge/decisions",
        Some(&fixture("decision.json")),
        Some(&token),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(d.events_of_kind("memory").len(), 1);
}

#[test]
fn without_tcp_configured_no_token_is_made() {
    let d = Daemon::start();
    assert!(!d.db().with_file_name("api-token").exists());
    let (status, _) = call(&d, "GET", "/v1/review-queue", None);
    assert_eq!(status, 200);
}
