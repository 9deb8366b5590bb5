//! The seed's judge, recall and governance metrics, as one fold over events.

use std::collections::HashMap;

use serde::Serialize;

use crate::contract::{JudgeVerdict, UsePolicy};
use crate::event::{Event, EventKind};
use crate::memory::{OriginKind, ReviewStatus};
use crate::time::Timestamp;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    // Judge.
    pub decisions: u64,
    pub escalations: u64,
    pub revisions: u64,
    /// Decisions a human replaced.
    pub overrides: u64,
    /// Proxy for false allows: an allow a human turned into anything else.
    pub false_allows: u64,
    /// Proxy for false blocks: a block, revise or escalate a human allowed.
    pub false_blocks: u64,
    pub escalation_rate: Option<f64>,
    pub revision_rate: Option<f64>,
    pub override_rate: Option<f64>,
    /// Decisions that used a memory as an instruction.
    pub decided_by_memory: u64,
    // Recall.
    pub recalls: u64,
    pub recalled_memories: u64,
    pub stale_retrieval_rate: Option<f64>,
    pub disputed_retrieval_rate: Option<f64>,
    // Governance.
    pub proposed: u64,
    pub human_corrections: u64,
    pub confirmed: u64,
    pub rejected: u64,
    /// Instruction candidates kept as evidence only.
    pub downgraded_to_evidence: u64,
    pub stale_marked: u64,
    /// Review actions that left a memory short of instruction-grade when it
    /// had been proposed for future use (rejected, downgraded, merged, stale).
    pub prevented_from_instruction: u64,
    /// Mean seconds from proposal to the first action that closed the item.
    pub average_review_seconds: Option<f64>,
}

fn rate(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Folds events (in any order for the counts; review time pairs each
/// memory's proposal with the first closing review after it).
pub fn metrics<'a>(events: impl IntoIterator<Item = &'a Event>) -> Metrics {
    let mut m = Metrics::default();
    let mut proposed_at: HashMap<&str, Timestamp> = HashMap::new();
    let mut reviews: Vec<(&str, Timestamp)> = Vec::new();
    let mut stale_recalled = 0u64;
    let mut disputed_recalled = 0u64;
    for event in events {
        match &event.kind {
            EventKind::Decided {
                decision,
                memory_used,
                ..
            } => {
                m.decisions += 1;
                m.escalations += u64::from(*decision == JudgeVerdict::Escalate);
                m.revisions += u64::from(*decision == JudgeVerdict::Revise);
                m.decided_by_memory += u64::from(
                    memory_used
                        .iter()
                        .any(|u| u.used_as == crate::contract::UsedAs::Instruction),
                );
            }
            EventKind::Overridden { from, to, .. } => {
                m.overrides += 1;
                m.false_allows +=
                    u64::from(*from == JudgeVerdict::Allow && *to != JudgeVerdict::Allow);
                m.false_blocks +=
                    u64::from(*from != JudgeVerdict::Allow && *to == JudgeVerdict::Allow);
            }
            EventKind::Recalled {
                memory_ids,
                stale,
                disputed,
                ..
            } => {
                m.recalls += 1;
                m.recalled_memories += memory_ids.len() as u64;
                stale_recalled += u64::from(*stale);
                disputed_recalled += u64::from(*disputed);
            }
            EventKind::Proposed {
                memory_id,
                origin,
                review,
                ..
            } => {
                m.proposed += 1;
                m.human_corrections += u64::from(origin.kind == OriginKind::HumanCorrection);
                if review.is_open() {
                    proposed_at.insert(memory_id, event.at);
                }
            }
            EventKind::Reviewed {
                memory_id,
                from,
                to,
                from_policy,
                ..
            } => {
                m.confirmed += u64::from(*to == ReviewStatus::Confirmed);
                m.rejected += u64::from(*to == ReviewStatus::Rejected);
                m.stale_marked +=
                    u64::from(*to == ReviewStatus::Stale && *from != ReviewStatus::Stale);
                let candidate = matches!(
                    from_policy,
                    UsePolicy::CanUseAsInstruction | UsePolicy::RequiresConfirmation
                );
                m.downgraded_to_evidence +=
                    u64::from(candidate && *to == ReviewStatus::EvidenceOnly);
                m.prevented_from_instruction += u64::from(
                    candidate
                        && matches!(
                            to,
                            ReviewStatus::EvidenceOnly
                                | ReviewStatus::Rejected
                                | ReviewStatus::Merged
                                | ReviewStatus::Stale
                        ),
                );
                if from.is_open() && !to.is_open() {
                    reviews.push((memory_id, event.at));
                }
            }
        }
    }
    m.escalation_rate = rate(m.escalations, m.decisions);
    m.revision_rate = rate(m.revisions, m.decisions);
    m.override_rate = rate(m.overrides, m.decisions);
    m.stale_retrieval_rate = rate(stale_recalled, m.recalled_memories);
    m.disputed_retrieval_rate = rate(disputed_recalled, m.recalled_memories);
    let mut waits = Vec::new();
    for (memory_id, at) in reviews {
        if let Some(since) = proposed_at.remove(memory_id) {
            waits.push((at.unix() - since.unix()) as f64);
        }
    }
    m.average_review_seconds =
        (!waits.is_empty()).then(|| waits.iter().sum::<f64>() / waits.len() as f64);
    m
}
