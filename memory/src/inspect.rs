//! The inspector: the seed's ten questions about one memory, answered from
//! the memory, its event history and the memories that link to it.

use serde::Serialize;

use crate::contract::{MemorySource, ProvenanceStatus, UsePolicy, UsedAs};
use crate::event::{Event, EventKind};
use crate::memory::{Memory, ReviewStatus};
use crate::review::Reviewer;
use crate::time::Timestamp;

/// The inspector's answer. Field order follows the seed's questions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inspection {
    pub memory_id: String,
    /// 1. Why does this memory exist?
    pub why_it_exists: String,
    /// 2. Which action or judge decision created it?
    pub created_by: CreatedFrom,
    /// 3. What source did it come from?
    pub source: MemorySource,
    /// 4. Was it observed, inferred, generated, imported, confirmed, disputed or superseded?
    pub provenance: ProvenanceStatus,
    pub confidence: f64,
    pub review_status: ReviewStatus,
    /// 5. Which workflows retrieved it?
    pub retrieved_by: Vec<Retrieval>,
    /// 6. Was it used as instruction, evidence or background?
    pub used: Vec<Use>,
    /// 7. Who confirmed, edited, rejected or restricted it?
    pub reviewed_by: Vec<ReviewStep>,
    /// 8. What future actions can it influence?
    pub can_influence: Influence,
    /// 9. Which memories conflict with it?
    pub conflicts: Vec<Conflict>,
    /// 10. When does it become stale?
    pub stale: Staleness,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreatedFrom {
    pub kind: crate::memory::OriginKind,
    pub decision_id: Option<String>,
    pub action_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Retrieval {
    pub request_id: String,
    pub workflow: Option<String>,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Use {
    pub decision_id: String,
    pub used_as: UsedAs,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewStep {
    pub action: String,
    pub by: Reviewer,
    pub at: Timestamp,
    pub to: ReviewStatus,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Influence {
    /// `instruction` (may relax a HOLD), `evidence` (shown with a HOLD) or `none`.
    pub as_what: &'static str,
    pub use_policy: UsePolicy,
    /// The lesson's description: which actions it covers.
    pub actions: Option<String>,
    pub workspace_id: String,
    pub project_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub memory_id: String,
    /// `disputed_by`, `disputes`, `superseded_by` or `supersedes`.
    pub relation: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Staleness {
    pub stale_after: Option<Timestamp>,
    pub last_confirmed_at: Option<Timestamp>,
    pub fresh_now: bool,
}

/// Answers the ten questions for `memory`, given every event (only those
/// that concern it are read) and the other memories (for reverse links).
pub fn inspect<'a>(
    memory: &Memory,
    events: impl IntoIterator<Item = &'a Event>,
    others: impl IntoIterator<Item = &'a Memory>,
    now: Timestamp,
) -> Inspection {
    let id = memory.id();
    let mut retrieved_by = Vec::new();
    let mut used = Vec::new();
    let mut reviewed_by = Vec::new();
    for event in events.into_iter().filter(|e| e.concerns(id)) {
        match &event.kind {
            EventKind::Recalled {
                request_id,
                workflow,
                ..
            } => retrieved_by.push(Retrieval {
                request_id: request_id.clone(),
                workflow: workflow.clone(),
                at: event.at,
            }),
            EventKind::Decided {
                decision_id,
                memory_used,
                ..
            } => used.extend(
                memory_used
                    .iter()
                    .filter(|u| u.memory_id == id)
                    .map(|u| Use {
                        decision_id: decision_id.clone(),
                        used_as: u.used_as,
                        at: event.at,
                    }),
            ),
            EventKind::Reviewed { action, by, to, .. } => reviewed_by.push(ReviewStep {
                action: action.clone(),
                by: by.clone(),
                at: event.at,
                to: *to,
            }),
            EventKind::Proposed { .. } | EventKind::Overridden { .. } => {}
        }
    }
    let mut conflicts: Vec<Conflict> = memory
        .disputed_by
        .iter()
        .map(|m| (m.as_str(), "disputed_by"))
        .chain(
            memory
                .superseded_by
                .iter()
                .map(|m| (m.as_str(), "superseded_by")),
        )
        .chain(memory.supersedes.iter().map(|m| (m.as_str(), "supersedes")))
        .map(|(memory_id, relation)| Conflict {
            memory_id: memory_id.to_owned(),
            relation,
        })
        .collect();
    for other in others.into_iter().filter(|o| o.id() != id) {
        let reverse = if other.disputed_by.iter().any(|d| d == id) {
            Some("disputes")
        } else if other.superseded_by.as_deref() == Some(id) {
            Some("supersedes")
        } else {
            None
        };
        if let Some(relation) = reverse
            && !conflicts
                .iter()
                .any(|c| c.memory_id == other.id() && c.relation == relation)
        {
            conflicts.push(Conflict {
                memory_id: other.id().to_owned(),
                relation,
            });
        }
    }
    let as_what = if memory.is_instruction_grade(now) {
        "instruction"
    } else if crate::relax::injectable(memory, now) {
        "evidence"
    } else {
        "none"
    };
    Inspection {
        memory_id: id.to_owned(),
        why_it_exists: memory.origin.reason.clone(),
        created_by: CreatedFrom {
            kind: memory.origin.kind,
            decision_id: memory.origin.decision_id.clone(),
            action_id: memory.origin.action_id.clone(),
        },
        source: memory.item.source.clone(),
        provenance: memory.provenance(),
        confidence: memory.item.provenance.confidence,
        review_status: memory.review,
        retrieved_by,
        used,
        reviewed_by,
        can_influence: Influence {
            as_what,
            use_policy: memory.use_policy(),
            actions: memory.lesson.as_ref().map(|l| l.description.clone()),
            workspace_id: memory.item.scope.workspace_id.clone(),
            project_id: memory.item.scope.project_id.clone(),
        },
        conflicts,
        stale: Staleness {
            stale_after: memory.item.freshness.stale_after,
            last_confirmed_at: memory.item.freshness.last_confirmed_at,
            fresh_now: memory.is_fresh(now),
        },
    }
}
