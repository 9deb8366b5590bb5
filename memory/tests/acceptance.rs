//! The seed's eleven acceptance criteria, at the level of the pure crate:
//! what the daemon's store and endpoints will call, exercised end to end
//! without the I/O.

mod common;

use common::*;
use praxis_memory::contract::{
    ActionProposal, JudgeDecision, JudgeVerdict, MemoryUse, ProvenanceStatus, RecallRequest,
    RecallResponse, UsePolicy, UsedAs, Visibility, parse,
};
use praxis_memory::event::{Event, EventKind};
use praxis_memory::inspect::inspect;
use praxis_memory::intake::{IntakeError, IntakeLimits, screen, screen_proposal};
use praxis_memory::memory::{Memory, OriginKind, propose};
use praxis_memory::recall::recall;
use praxis_memory::relax::{Relax, consult, injectable, may_relax};
use praxis_memory::review::{ReviewAction, ReviewError, apply};
use praxis_memory::writeback::memories_from;
use praxis_policy::Verdict;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn recall_request() -> RecallRequest {
    let mut request: RecallRequest = parse(&fixture("recall.json")).unwrap();
    request.workspace_id = WORKSPACE.into();
    request.project_id = None;
    request.scope.visibility = Visibility::Workspace;
    request
}

fn decision(outcome: JudgeVerdict) -> JudgeDecision {
    let mut decision: JudgeDecision = parse(&fixture("decision.json")).unwrap();
    decision.decision = outcome;
    decision
}

/// Criterion 1: A runtime can ask for recall with nothing but the contract.
#[test]
fn criterion_01_a_runtime_wires_a_task_to_judge_recall() {
    let memories = [confirmed_lesson(
        "m1",
        &push(&[], &["origin", "feature/login"]),
    )];
    let answer = recall(&memories, &recall_request(), Vec::new(), now());
    let text = serde_json::to_string(&answer.response).unwrap();
    let reparsed: RecallResponse = parse(&text).unwrap();
    assert_eq!(reparsed.request_id, "rec-0001");
    assert_eq!(reparsed.memories.len(), 1);
}

/// Criterion 2: The judge receives scoped memories with provenance and use policy.
#[test]
fn criterion_02_recall_is_scoped_and_labelled() {
    let approved = push(&[], &["origin", "feature/login"]);
    let mut other_workspace = confirmed_lesson("other", &approved);
    other_workspace.item.scope.workspace_id = "/srv/repos/elsewhere".into();
    let mut personal = confirmed_lesson("personal", &approved);
    personal.item.scope.visibility = Visibility::Personal;
    let mut other_project = confirmed_lesson("billing", &approved);
    other_project.item.scope.project_id = Some("billing".into());
    let memories = [
        confirmed_lesson("mine", &approved),
        evidence("seen", &approved),
        other_workspace,
        personal,
        other_project,
    ];
    let answer = recall(&memories, &recall_request(), Vec::new(), now()).response;
    let ids: Vec<&str> = answer
        .memories
        .iter()
        .map(|m| m.memory_id.as_str())
        .collect();
    assert_eq!(ids, ["mine", "seen"]);
    assert_eq!(
        answer.memories[0].provenance.status,
        ProvenanceStatus::UserConfirmed
    );
    assert_eq!(
        answer.memories[0].use_policy.policy,
        UsePolicy::CanUseAsInstruction
    );
    assert_eq!(
        answer.memories[1].use_policy.policy,
        UsePolicy::CanUseAsEvidence
    );
    assert!(
        answer
            .memories
            .iter()
            .all(|m| m.freshness.created_at == now())
    );
}

/// Criterion 3: Allow, block, revise and escalate are all written back.
#[test]
fn criterion_03_every_outcome_writes_back() {
    for (outcome, verdict) in [
        (JudgeVerdict::Allow, Verdict::Allow),
        (JudgeVerdict::Block, Verdict::Stop),
        (JudgeVerdict::Revise, Verdict::Hold),
        (JudgeVerdict::Escalate, Verdict::Hold),
    ] {
        let decision = decision(outcome);
        assert_eq!(decision.decision.verdict(), verdict);
        let written = memories_from(&decision, Some("openclaw"), now());
        assert_eq!(written.len(), 2, "one decision record, one lesson");
        assert!(written.iter().all(|m| m.check().is_ok()));
        assert!(
            written
                .iter()
                .all(|m| m.origin.decision_id.as_deref() == Some("dec-0001"))
        );
    }
}

/// Criterion 4: Human review is required before inferred or generated memories
/// become future instructions.
#[test]
fn criterion_04_only_human_review_makes_an_instruction() {
    let mut decision = decision(JudgeVerdict::Allow);
    decision.provenance.default_status = praxis_memory::contract::WriteStatus::UserConfirmed;
    let written = memories_from(&decision, None, now());
    let lesson = written
        .iter()
        .find(|m| m.id().contains("/lesson/"))
        .unwrap();
    assert_eq!(
        lesson.provenance(),
        ProvenanceStatus::Generated,
        "a runtime cannot claim confirmation"
    );
    assert_eq!(lesson.use_policy(), UsePolicy::RequiresConfirmation);
    assert!(lesson.review.is_open());
    let approved = push(&[], &["origin", "feature/login"]);
    let proposed = proposed_lesson("m", &approved);
    let action = push(&[], &["origin", "feature/x"]);
    assert!(!matches!(
        may_relax(&proposed, &action, now()),
        Relax::Allow { .. }
    ));
    let confirm = ReviewAction::Confirm {
        as_instruction: true,
        fresh_for: None,
    };
    assert!(matches!(
        apply(&proposed, &confirm, &agent(), now()),
        Err(ReviewError::NotHuman(_))
    ));
    let confirmed = apply(&proposed, &confirm, &alice(), now()).unwrap();
    assert!(matches!(
        may_relax(&confirmed, &action, now()),
        Relax::Allow { .. }
    ));
}

/// Criterion 5: The inspector shows what was recalled, used, decided and written.
#[test]
fn criterion_05_the_inspector_shows_the_whole_story() {
    let approved = push(&[], &["origin", "feature/login"]);
    let proposed = proposed_lesson("m", &approved);
    let confirmed = apply(
        &proposed,
        &ReviewAction::Confirm {
            as_instruction: true,
            fresh_for: None,
        },
        &alice(),
        now(),
    )
    .unwrap();
    let memories = [confirmed.clone()];
    let recalled = recall(&memories, &recall_request(), Vec::new(), now());
    let consulted = consult(&memories, &push(&[], &["origin", "feature/x"]), now());
    let events = vec![
        Event::proposed(&proposed, now()),
        Event::reviewed(&proposed, &confirmed, "confirm", &alice(), now()),
        Event {
            at: now(),
            kind: EventKind::Recalled {
                request_id: recalled.response.request_id.clone(),
                workflow: Some("task-17".into()),
                memory_ids: recalled
                    .response
                    .memories
                    .iter()
                    .map(|m| m.memory_id.clone())
                    .collect(),
                stale: recalled.stale_returned,
                disputed: recalled.disputed_returned,
            },
        },
        Event {
            at: now(),
            kind: EventKind::Decided {
                decision_id: "req-77".into(),
                decision: JudgeVerdict::Allow,
                judge: praxis_memory::contract::JudgeKind::Rule,
                memory_used: consulted.memory_used(),
            },
        },
    ];
    let answer = inspect(&confirmed, &events, &memories, now());
    assert_eq!(answer.retrieved_by[0].request_id, "rec-0001");
    assert_eq!(answer.used[0].decision_id, "req-77");
    assert_eq!(answer.used[0].used_as, UsedAs::Instruction);
    assert_eq!(answer.created_by.decision_id.as_deref(), Some("dec-m"));
    assert_eq!(answer.reviewed_by[0].action, "confirm");
}

/// Criterion 6: Re-running a similar workflow retrieves the prior confirmed lesson,
/// and it turns the HOLD into an ALLOW naming the memory.
#[test]
fn criterion_06_a_similar_workflow_retrieves_and_uses_the_confirmed_lesson() {
    let approved = push(&[], &["origin", "feature/login"]);
    let memories = [confirmed_lesson("lesson-1", &approved)];
    let rerun = push(&[], &["origin", "feature/signup"]);
    let consulted = consult(&memories, &rerun, now());
    let (memory_id, how) = consulted.allowed_by.clone().unwrap();
    assert_eq!(memory_id, "lesson-1");
    assert!(how.contains("git push to non-default branches"));
    assert_eq!(
        consulted.memory_used(),
        [MemoryUse {
            memory_id: "lesson-1".into(),
            used_as: UsedAs::Instruction
        }]
    );
    let answer = recall(&memories, &recall_request(), Vec::new(), now()).response;
    assert_eq!(answer.memories[0].memory_id, "lesson-1");
}

/// Criterion 7: Secret-like data and raw transcript dumps are blocked by default.
#[test]
fn criterion_07_secrets_and_transcripts_are_refused() {
    let redactor = praxis_policy::Policy::builtin().unwrap().redactor().clone();
    let is_secret = move |text: &str| !redactor.matches(text.as_bytes()).is_empty();
    let mut proposal: ActionProposal = parse(&fixture("action_proposal.json")).unwrap();
    screen_proposal(&proposal, &is_secret, &IntakeLimits::default()).unwrap();
    proposal.authorization.claimed_user_authorization =
        Some("export GITHUB_TOKEN=ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp".into());
    assert!(matches!(
        screen_proposal(&proposal, &is_secret, &IntakeLimits::default()),
        Err(IntakeError::SecretLike { field }) if field == "authorization.claimed_user_authorization"
    ));
    let mut decision = decision(JudgeVerdict::Allow);
    decision.reasoning_summary = "Human: please\nAssistant: sure\n".repeat(100);
    assert!(screen(&decision, &is_secret, &IntakeLimits::default()).is_err());
}

/// Criterion 8: The contract is not specific to one runtime.
#[test]
fn criterion_08_the_contract_is_runtime_neutral() {
    for (runtime, adapter) in [
        ("openclaw", "praxis-plugin"),
        ("openai-agents", "praxis-guardrail"),
        ("codex", "praxis-hook"),
    ] {
        let mut proposal: ActionProposal = parse(&fixture("action_proposal.json")).unwrap();
        proposal.runtime.name = runtime.into();
        proposal.runtime.adapter = Some(adapter.into());
        let text = serde_json::to_string(&proposal).unwrap();
        assert_eq!(parse::<ActionProposal>(&text).unwrap(), proposal);
    }
}

/// Criterion 9: Write-back is idempotent: the same decision yields the same memories.
#[test]
fn criterion_09_write_back_is_idempotent() {
    let decision = decision(JudgeVerdict::Allow);
    let once = memories_from(&decision, Some("openclaw"), now());
    let twice = memories_from(&decision, Some("openclaw"), now());
    assert_eq!(once, twice);
    let ids: Vec<&str> = once.iter().map(Memory::id).collect();
    assert_eq!(ids, ["dec-0001/decision/0", "dec-0001/lesson/0"]);
}

/// Criterion 10: Disputed and superseded memories are not injected automatically.
#[test]
fn criterion_10_disputed_and_superseded_memories_are_not_injected() {
    let approved = push(&[], &["origin", "feature/login"]);
    let mut disputed = confirmed_lesson("disputed", &approved);
    disputed.disputed_by.push("correction-1".into());
    let superseded = apply(
        &confirmed_lesson("superseded", &approved),
        &ReviewAction::Merge {
            into: "newer".into(),
        },
        &alice(),
        now(),
    )
    .unwrap();
    let mut disputed_label = evidence("disputed-evidence", &approved);
    disputed_label.item.provenance.status = ProvenanceStatus::Disputed;
    let memories = [disputed, superseded, disputed_label];
    let action = push(&[], &["origin", "feature/x"]);
    let consulted = consult(&memories, &action, now());
    assert_eq!(consulted.allowed_by, None);
    assert!(consulted.evidence.is_empty());
    assert!(memories.iter().all(|m| !injectable(m, now())));
    let answer = recall(&memories, &recall_request(), Vec::new(), now());
    assert!(answer.response.memories.is_empty());
    assert_eq!((answer.skipped.disputed, answer.skipped.superseded), (2, 1));
    // Asked for explicitly, disputed ones come back labelled not to inject.
    let mut asking = recall_request();
    asking.scope.include_disputed = true;
    asking
        .policy
        .allowed_use_policies
        .push(UsePolicy::DoNotInjectAutomatically);
    let answer = recall(&memories, &asking, Vec::new(), now()).response;
    assert_eq!(answer.memories.len(), 2);
    assert!(
        answer
            .memories
            .iter()
            .all(|m| m.use_policy.policy == UsePolicy::DoNotInjectAutomatically)
    );
    assert!(
        answer
            .warnings
            .iter()
            .any(|w| w.code == "disputed_included")
    );
}

/// Criterion 11: The review queue can downgrade an instruction candidate to evidence only.
#[test]
fn criterion_11_the_queue_downgrades_to_evidence_only() {
    let approved = push(&[], &["origin", "feature/login"]);
    let action = push(&[], &["origin", "feature/x"]);
    for start in [
        proposed_lesson("m", &approved),
        confirmed_lesson("m", &approved),
    ] {
        let downgraded = apply(&start, &ReviewAction::EvidenceOnly, &alice(), now()).unwrap();
        assert_eq!(downgraded.use_policy(), UsePolicy::CanUseAsEvidence);
        downgraded.check().unwrap();
        assert_eq!(
            may_relax(&downgraded, &action, now()),
            Relax::Evidence {
                memory_id: "m".into()
            }
        );
    }
    let note = propose(proposal("n", None, OriginKind::ManualEntry), now());
    assert!(apply(&note, &ReviewAction::EvidenceOnly, &alice(), now()).is_ok());
}
