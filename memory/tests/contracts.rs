//! The Rust parser and the shipped JSON Schema files agree: every valid
//! example passes both, every broken one fails both, and the parser's error
//! names the broken field.

use praxis_memory::contract::{
    ActionProposal, Contract, JudgeDecision, RecallRequest, RecallResponse, parse,
};
use serde_json::{Value, json};

const CONTRACTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../contracts/");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/");

fn read(path: String) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn validator(schema_version: &str) -> jsonschema::Validator {
    let schema = read(format!("{CONTRACTS}{schema_version}.schema.json"));
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

/// Breaks `doc` at a JSON pointer: sets the value, or removes the key when
/// `to` is None.
fn broken(doc: &Value, pointer: &str, to: Option<Value>) -> Value {
    let mut doc = doc.clone();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = doc
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{pointer}"));
    match (parent, to) {
        (Value::Object(map), Some(value)) => {
            map.insert(key.to_owned(), value);
        }
        (Value::Object(map), None) => {
            assert!(map.remove(key).is_some(), "{pointer} absent");
        }
        (Value::Array(items), Some(value)) => items[key.parse::<usize>().unwrap()] = value,
        _ => panic!("{pointer}"),
    }
    doc
}

/// One contract: its fixture, and breakages with the field the error must name.
fn agree<T: Contract + std::fmt::Debug>(fixture: &str, breakages: &[(&str, Option<Value>, &str)]) {
    let schema = validator(T::SCHEMA_VERSION);
    let valid = read(format!("{FIXTURES}{fixture}"));
    assert!(schema.is_valid(&valid), "schema refuses {fixture}");
    let parsed: T = parse(&valid.to_string()).unwrap_or_else(|e| panic!("{fixture}: {e}"));
    // What the parser writes back is still valid and parses to the same thing.
    let written = serde_json::to_value(&parsed).unwrap();
    assert!(
        schema.is_valid(&written),
        "schema refuses what {fixture} re-serialises to"
    );
    assert_eq!(written, valid, "{fixture} does not round-trip");
    for (pointer, to, field) in breakages {
        let doc = broken(&valid, pointer, to.clone());
        assert!(
            !schema.is_valid(&doc),
            "schema accepts {fixture} with {pointer} = {to:?}"
        );
        let error = parse::<T>(&doc.to_string()).expect_err(pointer);
        assert_eq!(
            error.field_path(),
            Some(*field),
            "{fixture} with {pointer} = {to:?}: {error}"
        );
    }
}

#[test]
fn action_proposal_schema_and_parser_agree() {
    agree::<ActionProposal>(
        "action_proposal.json",
        &[
            (
                "/schema_version",
                Some(json!("openbrain.judge.action_proposal.v2")),
                "schema_version",
            ),
            ("/surprise", Some(json!(1)), "surprise"),
            ("/tool/kind", Some(json!("telepathy")), "tool.kind"),
            ("/tool/extra", Some(json!("x")), "tool.extra"),
            ("/action/risk_class", Some(json!("T2")), "action.risk_class"),
            ("/action/arguments_digest", None, "action.arguments_digest"),
            (
                "/action/arguments_digest",
                Some(json!("")),
                "action.arguments_digest",
            ),
            ("/project_id", None, "project_id"),
            ("/project_id", Some(json!(7)), "project_id"),
            ("/workspace_id", Some(json!("")), "workspace_id"),
            (
                "/authorization/user_authorization_refs/0/kind",
                Some(json!("hunch")),
                "authorization.user_authorization_refs[0].kind",
            ),
            (
                "/authorization/user_authorization_refs/0/timestamp",
                Some(json!("last tuesday")),
                "authorization.user_authorization_refs[0].timestamp",
            ),
            (
                "/expected_consequence/persistence",
                Some(json!("forever")),
                "expected_consequence.persistence",
            ),
            (
                "/rollback/is_reversible",
                Some(json!("yes")),
                "rollback.is_reversible",
            ),
            (
                "/sensitivity/contains_customer_data",
                None,
                "sensitivity.contains_customer_data",
            ),
        ],
    );
}

#[test]
fn recall_request_schema_and_parser_agree() {
    agree::<RecallRequest>(
        "recall.json",
        &[
            (
                "/schema_version",
                Some(json!("openbrain.judge.recall_response.v1")),
                "schema_version",
            ),
            (
                "/query/action_type",
                Some(json!("dangerous")),
                "query.action_type",
            ),
            ("/query/tool_name", None, "query.tool_name"),
            ("/entities/pets", Some(json!([])), "entities.pets"),
            ("/entities/repos", Some(json!("shop")), "entities.repos"),
            (
                "/scope/visibility",
                Some(json!("public")),
                "scope.visibility",
            ),
            ("/scope/include_stale", None, "scope.include_stale"),
            ("/limits/max_items", Some(json!(-1)), "limits.max_items"),
            ("/limits/max_items", Some(json!(2.5)), "limits.max_items"),
            ("/limits/recency_days", None, "limits.recency_days"),
            (
                "/policy/allowed_use_policies/0",
                Some(json!("use_freely")),
                "policy.allowed_use_policies[0]",
            ),
            ("/request_id", Some(json!("")), "request_id"),
        ],
    );
}

#[test]
fn recall_response_schema_and_parser_agree() {
    agree::<RecallResponse>(
        "recall_response.json",
        &[
            (
                "/memories/0/provenance/status",
                Some(json!("rumoured")),
                "memories[0].provenance.status",
            ),
            (
                "/memories/0/provenance/confidence",
                Some(json!(1.5)),
                "memories[0].provenance.confidence",
            ),
            (
                "/memories/0/use_policy/policy",
                Some(json!("always")),
                "memories[0].use_policy.policy",
            ),
            (
                "/memories/0/freshness/created_at",
                Some(json!("2026-11-20")),
                "memories[0].freshness.created_at",
            ),
            (
                "/memories/0/freshness/stale_after",
                None,
                "memories[0].freshness.stale_after",
            ),
            (
                "/memories/0/scope/visibility",
                Some(json!("everyone")),
                "memories[0].scope.visibility",
            ),
            (
                "/memories/0/source/kind",
                Some(json!("dream")),
                "memories[0].source.kind",
            ),
            ("/memories/0/lesson", Some(json!({})), "memories[0].lesson"),
            (
                "/policy_hits/0/required_behavior",
                Some(json!("ignore")),
                "policy_hits[0].required_behavior",
            ),
            ("/warnings/0/code", None, "warnings[0].code"),
        ],
    );
}

#[test]
fn decision_schema_and_parser_agree() {
    agree::<JudgeDecision>(
        "decision.json",
        &[
            ("/decision", Some(json!("maybe")), "decision"),
            ("/decision", None, "decision"),
            ("/confidence", Some(json!(0.9)), "confidence"),
            ("/judge/kind", Some(json!("oracle")), "judge.kind"),
            (
                "/checks/policy_check",
                Some(json!("ok")),
                "checks.policy_check",
            ),
            ("/checks/quality_check", None, "checks.quality_check"),
            (
                "/escalation/due_at",
                Some(json!("soon")),
                "escalation.due_at",
            ),
            (
                "/memory_used/0/used_as",
                Some(json!("inspiration")),
                "memory_used[0].used_as",
            ),
            (
                "/memory_used/0/memory_id",
                Some(json!("")),
                "memory_used[0].memory_id",
            ),
            (
                "/memory_to_write/secrets",
                Some(json!([])),
                "memory_to_write.secrets",
            ),
            (
                "/provenance/default_status",
                Some(json!("superseded")),
                "provenance.default_status",
            ),
            (
                "/reasoning_trace",
                Some(json!("step 1...")),
                "reasoning_trace",
            ),
        ],
    );
}

#[test]
fn every_decision_outcome_round_trips() {
    let valid = read(format!("{FIXTURES}decision.json"));
    let schema = validator(JudgeDecision::SCHEMA_VERSION);
    for outcome in ["allow", "block", "revise", "escalate"] {
        let doc = broken(&valid, "/decision", Some(json!(outcome)));
        assert!(schema.is_valid(&doc));
        let parsed: JudgeDecision = parse(&doc.to_string()).unwrap();
        assert_eq!(parsed.decision.as_str(), outcome);
    }
}

#[test]
fn not_json_is_a_syntax_error_and_trailing_text_is_refused() {
    assert!(
        parse::<JudgeDecision>("{\"decision\": ")
            .unwrap_err()
            .field_path()
            .is_none()
    );
    let valid = read(format!("{FIXTURES}decision.json")).to_string();
    assert!(parse::<JudgeDecision>(&format!("{valid} {{}}")).is_err());
}
