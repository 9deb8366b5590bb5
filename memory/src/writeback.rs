//! Decision write-back: the memories a judge decision proposes. Each entry
//! of `memory_to_write` becomes one memory; lessons and constraints are
//! future-facing and wait for review, decisions and failures are records.

use crate::contract::{CreatedBy, JudgeDecision, ProvenanceStatus, Visibility, WriteStatus};
use crate::memory::{Memory, Origin, OriginKind, Proposal, judge_event_source, propose};
use crate::time::Timestamp;

/// The memories `decision` writes, with ids derived from its decision id
/// (`{decision_id}/lesson/0`), so writing the same decision twice yields the
/// same ids. A human judge's decision is a human correction (high priority).
pub fn memories_from(
    decision: &JudgeDecision,
    runtime: Option<&str>,
    now: Timestamp,
) -> Vec<Memory> {
    let lists = &decision.memory_to_write;
    let kinds: [(&str, &Vec<String>, bool); 5] = [
        ("decision", &lists.decisions, false),
        ("lesson", &lists.lessons, true),
        ("failure", &lists.failures, false),
        ("constraint", &lists.constraints, true),
        ("open_question", &lists.open_questions, true),
    ];
    let correction = decision.judge.kind == crate::contract::JudgeKind::Human;
    let mut out = Vec::new();
    for (kind, entries, future_facing) in kinds {
        for (i, text) in entries.iter().enumerate() {
            let status = match decision.provenance.default_status {
                WriteStatus::Observed if future_facing => ProvenanceStatus::Generated,
                WriteStatus::Observed => ProvenanceStatus::Observed,
                WriteStatus::Inferred => ProvenanceStatus::Inferred,
                // Confirmation happens in the review queue, by a human.
                WriteStatus::Generated | WriteStatus::UserConfirmed => ProvenanceStatus::Generated,
            };
            let mut memory = propose(
                Proposal {
                    memory_id: format!("{}/{kind}/{i}", decision.decision_id),
                    summary: format!("{kind} from decision {}", decision.decision_id),
                    content: text.clone(),
                    source: judge_event_source(None, Some(decision.reasoning_summary.clone()), now),
                    status,
                    confidence: match decision.confidence {
                        crate::contract::Confidence::High => 0.9,
                        crate::contract::Confidence::Medium => 0.6,
                        crate::contract::Confidence::Low => 0.3,
                    },
                    created_by: if correction {
                        CreatedBy::User
                    } else {
                        CreatedBy::Agent
                    },
                    model: decision.judge.model.clone(),
                    runtime: runtime.map(str::to_owned),
                    workspace_id: decision.workspace_id.clone(),
                    project_id: decision.project_id.clone(),
                    visibility: if decision.project_id.is_some() {
                        Visibility::Project
                    } else {
                        Visibility::Workspace
                    },
                    origin: Origin {
                        kind: if correction {
                            OriginKind::HumanCorrection
                        } else {
                            OriginKind::DecisionWriteBack
                        },
                        decision_id: Some(decision.decision_id.clone()),
                        action_id: Some(decision.action_id.clone()),
                        reason: format!(
                            "{kind} written back with decision {} ({})",
                            decision.decision_id,
                            decision.decision.as_str()
                        ),
                    },
                    lesson: None,
                    keywords: Vec::new(),
                    sensitive_area: false,
                    fresh_for: None,
                },
                now,
            );
            if decision.provenance.requires_review && !memory.review.is_open() {
                memory.review = crate::memory::ReviewStatus::Pending;
            }
            out.push(memory);
        }
    }
    out
}

/// The memories a decision disputes: a human correction (a human judge's
/// block, revise or escalate) disputes every memory it names as used, since
/// the human decided against what they said.
pub fn disputes(decision: &JudgeDecision) -> impl Iterator<Item = &str> {
    let correction = decision.judge.kind == crate::contract::JudgeKind::Human
        && decision.decision != crate::contract::JudgeVerdict::Allow;
    decision
        .memory_used
        .iter()
        .filter(move |_| correction)
        .map(|m| m.memory_id.as_str())
}
