//! A stored memory: the seed's recalled item plus what governs it (review
//! status, supersession and dispute links, the lesson it carries, the event
//! that created it).
//!
//! The one invariant: a memory is instruction-grade only when a human
//! confirmed it. [`Memory::check`] says so, [`propose`] can only make
//! memories that wait for review, and only a human review action
//! (the `review` module, which builds on this one) makes one instruction-grade.

use serde::{Deserialize, Serialize};

use crate::contract::{
    CreatedBy, Freshness, MemoryItem, MemoryScope, MemorySource, Provenance, ProvenanceStatus,
    SourceKind, UsePolicy, UsePolicyLabel, Visibility,
};
use crate::lesson::Lesson;
use crate::time::Timestamp;

/// Where a memory stands in review.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// In the queue, not yet acted on (also after an edit).
    Pending,
    /// Sent to an admin; only an admin may confirm it.
    Escalated,
    /// A human confirmed it with its use policy.
    Confirmed,
    /// A human kept it as evidence only.
    EvidenceOnly,
    /// Marked stale; not recalled unless stale memories are asked for.
    Stale,
    /// Merged into another memory, which supersedes it.
    Merged,
    /// Rejected; never recalled.
    Rejected,
    /// Needs no review: an observed record kept as evidence only.
    NotRequired,
}

impl ReviewStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewStatus::Pending => "pending",
            ReviewStatus::Escalated => "escalated",
            ReviewStatus::Confirmed => "confirmed",
            ReviewStatus::EvidenceOnly => "evidence_only",
            ReviewStatus::Stale => "stale",
            ReviewStatus::Merged => "merged",
            ReviewStatus::Rejected => "rejected",
            ReviewStatus::NotRequired => "not_required",
        }
    }

    /// Still waiting for a human in the queue.
    pub fn is_open(self) -> bool {
        matches!(self, ReviewStatus::Pending | ReviewStatus::Escalated)
    }
}

/// How urgently a queued memory wants a human.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Normal,
    /// Human corrections and instruction-grade candidates touching risky areas.
    High,
}

/// The event a memory came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// What made it: an operator's approval, a human correction, a runtime's
    /// decision write-back, an import, a manual entry.
    pub kind: OriginKind,
    /// The judge decision that created it, when one did.
    pub decision_id: Option<String>,
    /// The action (request id, action id) it was about.
    pub action_id: Option<String>,
    /// Why it exists, in one line.
    pub reason: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginKind {
    OperatorApproval,
    HumanCorrection,
    DecisionWriteBack,
    Import,
    ManualEntry,
}

/// A memory with its governance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// What recall returns, in the seed's shape.
    pub item: MemoryItem,
    pub review: ReviewStatus,
    pub priority: Priority,
    pub origin: Origin,
    /// The matcher, for memories about actions.
    pub lesson: Option<Lesson>,
    /// Words recall matches against a request's entities, tool and system.
    pub keywords: Vec<String>,
    /// The memory that replaces this one.
    pub superseded_by: Option<String>,
    /// Memories this one replaces.
    pub supersedes: Vec<String>,
    /// Memories or corrections that conflict with this one.
    pub disputed_by: Vec<String>,
}

/// A memory state that breaks the rules.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MemoryError {
    #[error("memory {0}: can_use_as_instruction requires provenance user_confirmed")]
    InstructionUnconfirmed(String),
    #[error("memory {0}: can_use_as_instruction requires a confirmed review")]
    InstructionUnreviewed(String),
    #[error("memory {0}: disputed or superseded memories may not be instruction-grade")]
    InstructionContested(String),
    #[error("memory {id}: confidence {confidence} is outside 0..=1")]
    Confidence { id: String, confidence: f64 },
}

impl Memory {
    pub fn id(&self) -> &str {
        &self.item.memory_id
    }

    pub fn provenance(&self) -> ProvenanceStatus {
        self.item.provenance.status
    }

    pub fn use_policy(&self) -> UsePolicy {
        self.item.use_policy.policy
    }

    pub fn is_disputed(&self) -> bool {
        self.provenance() == ProvenanceStatus::Disputed || !self.disputed_by.is_empty()
    }

    pub fn is_superseded(&self) -> bool {
        self.provenance() == ProvenanceStatus::Superseded
            || self.superseded_by.is_some()
            || self.review == ReviewStatus::Merged
    }

    /// Fresh: not past `stale_after` and not marked stale.
    pub fn is_fresh(&self, now: Timestamp) -> bool {
        self.review != ReviewStatus::Stale && self.item.freshness.is_fresh(now)
    }

    /// May turn a HOLD into an ALLOW, as far as the memory itself goes
    /// (the action must still match and be relaxable).
    pub fn is_instruction_grade(&self, now: Timestamp) -> bool {
        self.provenance() == ProvenanceStatus::UserConfirmed
            && self.use_policy() == UsePolicy::CanUseAsInstruction
            && self.review == ReviewStatus::Confirmed
            && self.is_fresh(now)
            && !self.is_disputed()
            && !self.is_superseded()
    }

    /// The invariants every stored memory keeps.
    pub fn check(&self) -> Result<(), MemoryError> {
        let id = || self.id().to_owned();
        if !(0.0..=1.0).contains(&self.item.provenance.confidence) {
            return Err(MemoryError::Confidence {
                id: id(),
                confidence: self.item.provenance.confidence,
            });
        }
        if self.use_policy() == UsePolicy::CanUseAsInstruction {
            if self.provenance() != ProvenanceStatus::UserConfirmed {
                return Err(MemoryError::InstructionUnconfirmed(id()));
            }
            if self.review != ReviewStatus::Confirmed {
                return Err(MemoryError::InstructionUnreviewed(id()));
            }
            if self.is_disputed() || self.is_superseded() {
                return Err(MemoryError::InstructionContested(id()));
            }
        }
        Ok(())
    }
}

/// `memory` as it is once `by` (a human correction, a conflicting
/// memory) disputes it: labelled `disputed`, never injected automatically,
/// and back in the queue with high priority. Disputing twice by the same
/// source changes nothing more.
pub fn disputed(memory: &Memory, by: &str) -> Memory {
    let mut next = memory.clone();
    if !next.disputed_by.iter().any(|d| d == by) {
        next.disputed_by.push(by.to_owned());
    }
    next.item.provenance.status = ProvenanceStatus::Disputed;
    next.item.use_policy = UsePolicyLabel {
        policy: UsePolicy::DoNotInjectAutomatically,
        reason: Some(format!("disputed by {by}")),
    };
    if !matches!(next.review, ReviewStatus::Rejected | ReviewStatus::Merged) {
        next.review = ReviewStatus::Pending;
    }
    next.priority = Priority::High;
    next
}

/// What a new memory is about, before it gets its labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub memory_id: String,
    pub summary: String,
    pub content: String,
    pub source: MemorySource,
    pub status: ProvenanceStatus,
    pub confidence: f64,
    pub created_by: CreatedBy,
    pub model: Option<String>,
    pub runtime: Option<String>,
    pub workspace_id: String,
    pub project_id: Option<String>,
    pub visibility: Visibility,
    pub origin: Origin,
    pub lesson: Option<Lesson>,
    pub keywords: Vec<String>,
    /// Concerns permissions, legal, financial, customer communication,
    /// production systems, security or personnel.
    pub sensitive_area: bool,
    /// How long until it goes stale, in seconds; None never.
    pub fresh_for: Option<i64>,
}

/// Below this confidence a memory is not injected automatically.
pub const LOW_CONFIDENCE: f64 = 0.5;

/// Labels a proposed memory and says whether it enters the review queue.
///
/// Nothing proposed is instruction-grade. A future-facing memory (one with a
/// lesson, or an inferred or generated one) gets `requires_confirmation` and
/// enters the queue; a human correction enters with high priority. An
/// observed or imported record without a lesson is evidence and needs no
/// review, unless it is low-confidence, touches a sensitive area or is
/// disputed, in which case it is not injected automatically and is queued.
/// A claimed `user_confirmed` is kept as `generated`: confirmation happens
/// in the queue, by a human.
pub fn propose(proposal: Proposal, now: Timestamp) -> Memory {
    let status = match proposal.status {
        ProvenanceStatus::UserConfirmed => ProvenanceStatus::Generated,
        other => other,
    };
    let future_facing = proposal.lesson.is_some()
        || matches!(
            status,
            ProvenanceStatus::Inferred | ProvenanceStatus::Generated
        );
    let doubtful = proposal.confidence < LOW_CONFIDENCE
        || proposal.sensitive_area
        || matches!(
            status,
            ProvenanceStatus::Disputed | ProvenanceStatus::Superseded
        );
    let (policy, reason, review) = if future_facing {
        (
            UsePolicy::RequiresConfirmation,
            "proposed for future use; a human must confirm it",
            ReviewStatus::Pending,
        )
    } else if doubtful {
        (
            UsePolicy::DoNotInjectAutomatically,
            "low confidence, sensitive or disputed",
            ReviewStatus::Pending,
        )
    } else {
        (
            UsePolicy::CanUseAsEvidence,
            "an observed record",
            ReviewStatus::NotRequired,
        )
    };
    let priority = if proposal.origin.kind == OriginKind::HumanCorrection
        || (review.is_open() && proposal.sensitive_area)
    {
        Priority::High
    } else {
        Priority::Normal
    };
    Memory {
        item: MemoryItem {
            memory_id: proposal.memory_id,
            summary: proposal.summary,
            content: proposal.content,
            source: proposal.source,
            provenance: Provenance {
                status,
                confidence: proposal.confidence,
                created_by: proposal.created_by,
                model: proposal.model,
                runtime: proposal.runtime,
            },
            use_policy: UsePolicyLabel {
                policy,
                reason: Some(reason.to_owned()),
            },
            freshness: Freshness {
                created_at: now,
                last_confirmed_at: None,
                stale_after: proposal.fresh_for.map(|s| now.plus(s)),
            },
            scope: MemoryScope {
                workspace_id: proposal.workspace_id,
                project_id: proposal.project_id,
                visibility: proposal.visibility,
            },
        },
        review,
        priority,
        origin: proposal.origin,
        lesson: proposal.lesson,
        keywords: proposal.keywords,
        superseded_by: None,
        supersedes: Vec::new(),
        disputed_by: Vec::new(),
    }
}

/// The source label of a memory made from a judge event.
pub fn judge_event_source(
    uri: Option<String>,
    title: Option<String>,
    at: Timestamp,
) -> MemorySource {
    MemorySource {
        kind: SourceKind::JudgeEvent,
        uri,
        title,
        timestamp: Some(at),
    }
}
