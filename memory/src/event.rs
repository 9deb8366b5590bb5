//! Compact judgment events: what the daemon stores (and audits) about
//! memory, and what the inspector and the metrics are computed from. No
//! transcripts, no reasoning traces, no arguments: ids, labels and times.

use serde::{Deserialize, Serialize};

use crate::contract::{JudgeKind, JudgeVerdict, MemoryUse, UsePolicy};
use crate::memory::{Memory, Origin, Priority, ReviewStatus};
use crate::relax::Consultation;
use crate::review::Reviewer;
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    pub at: Timestamp,
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event", deny_unknown_fields)]
pub enum EventKind {
    /// A memory was written (and queued, when it needs review).
    Proposed {
        memory_id: String,
        priority: Priority,
        review: ReviewStatus,
        origin: Origin,
    },
    /// A recall returned these memories.
    Recalled {
        request_id: String,
        /// The task or flow that asked, when known.
        workflow: Option<String>,
        memory_ids: Vec<String>,
        /// How many of them were stale or disputed (asked for explicitly).
        stale: u32,
        disputed: u32,
    },
    /// A judge decided, using these memories.
    Decided {
        decision_id: String,
        decision: JudgeVerdict,
        judge: JudgeKind,
        memory_used: Vec<MemoryUse>,
    },
    /// A human replaced a decision with another (an operator approving a
    /// HOLD, or a correction of an ALLOW).
    Overridden {
        decision_id: String,
        from: JudgeVerdict,
        to: JudgeVerdict,
        by: String,
    },
    /// A review action changed a memory.
    Reviewed {
        memory_id: String,
        action: String,
        by: Reviewer,
        from: ReviewStatus,
        to: ReviewStatus,
        from_policy: UsePolicy,
        to_policy: UsePolicy,
    },
}

impl Event {
    /// The event recording that `memory` was written.
    pub fn proposed(memory: &Memory, at: Timestamp) -> Event {
        Event {
            at,
            kind: EventKind::Proposed {
                memory_id: memory.id().to_owned(),
                priority: memory.priority,
                review: memory.review,
                origin: memory.origin.clone(),
            },
        }
    }

    /// The event recording a review action that turned `before` into `after`.
    pub fn reviewed(
        before: &Memory,
        after: &Memory,
        action: &str,
        by: &Reviewer,
        at: Timestamp,
    ) -> Event {
        Event {
            at,
            kind: EventKind::Reviewed {
                memory_id: after.id().to_owned(),
                action: action.to_owned(),
                by: by.clone(),
                from: before.review,
                to: after.review,
                from_policy: before.use_policy(),
                to_policy: after.use_policy(),
            },
        }
    }

    /// The events of the pipeline consulting memory on held request
    /// `request_id`: the recall (when a memory matched) and the decision it
    /// led to, ALLOW by a confirmed lesson or the HOLD escalated to a human.
    pub fn consulted(request_id: &str, consultation: &Consultation, at: Timestamp) -> Vec<Event> {
        let memory_used = consultation.memory_used();
        let recalled = (!memory_used.is_empty()).then(|| Event {
            at,
            kind: EventKind::Recalled {
                request_id: request_id.to_owned(),
                workflow: None,
                memory_ids: memory_used.iter().map(|u| u.memory_id.clone()).collect(),
                stale: 0,
                disputed: 0,
            },
        });
        let decision = if consultation.allowed_by.is_some() {
            JudgeVerdict::Allow
        } else {
            JudgeVerdict::Escalate
        };
        let decided = Event {
            at,
            kind: EventKind::Decided {
                decision_id: request_id.to_owned(),
                decision,
                judge: JudgeKind::Rule,
                memory_used,
            },
        };
        recalled.into_iter().chain([decided]).collect()
    }

    /// A human's approval of the held request `request_id`: the pipeline's
    /// escalation overridden to an allow.
    pub fn approved(request_id: &str, by: &str, at: Timestamp) -> Event {
        Event {
            at,
            kind: EventKind::Overridden {
                decision_id: request_id.to_owned(),
                from: JudgeVerdict::Escalate,
                to: JudgeVerdict::Allow,
                by: by.to_owned(),
            },
        }
    }

    /// Whether this event concerns the memory `id`.
    pub fn concerns(&self, id: &str) -> bool {
        match &self.kind {
            EventKind::Proposed { memory_id, .. } | EventKind::Reviewed { memory_id, .. } => {
                memory_id == id
            }
            EventKind::Recalled { memory_ids, .. } => memory_ids.iter().any(|m| m == id),
            EventKind::Decided { memory_used, .. } => memory_used.iter().any(|u| u.memory_id == id),
            EventKind::Overridden { .. } => false,
        }
    }
}
