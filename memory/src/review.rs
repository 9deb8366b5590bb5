//! The review queue: the only way a memory becomes instruction-grade.
//!
//! Actions: confirm, edit, evidence-only, restrict, stale, merge, reject,
//! escalate. [`apply`] checks that the action is legal from the memory's
//! review status and that a human takes it, and returns the changed memory.
//! Confirming is the one action that can make a memory
//! `can_use_as_instruction`, and then only when it carries a lesson and the
//! human asks for instruction use; an escalated item only an admin confirms.

use serde::{Deserialize, Serialize};

use crate::contract::{ProvenanceStatus, UsePolicy, Visibility};
use crate::lesson::Lesson;
use crate::memory::{Memory, Priority, ReviewStatus};
use crate::time::Timestamp;

/// How long a lesson stays fresh after it is proposed or confirmed, unless
/// the reviewer says otherwise.
pub const LESSON_FRESH_FOR: i64 = 90 * crate::time::DAY;

/// Who acts in the queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reviewer {
    pub name: String,
    pub kind: ReviewerKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewerKind {
    /// An operator or user.
    Human,
    /// An administrator: may confirm escalated items.
    Admin,
    /// A runtime, an agent or the daemon itself: may not review.
    Agent,
}

/// A review action, as the endpoint and `praxis review ACTION` take it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "action", deny_unknown_fields)]
pub enum ReviewAction {
    /// Accept it. `as_instruction`: let it relax HOLDs (needs a lesson);
    /// otherwise it is confirmed as evidence.
    Confirm {
        as_instruction: bool,
        /// Seconds until it goes stale again; None keeps `stale_after`.
        fresh_for: Option<i64>,
    },
    /// Change what it says or covers; it goes back to pending.
    Edit {
        summary: Option<String>,
        content: Option<String>,
        lesson: Option<Box<Lesson>>,
    },
    /// Keep it, as evidence only.
    EvidenceOnly,
    /// Narrow where it applies.
    Restrict {
        project_id: Option<String>,
        visibility: Option<Visibility>,
        /// Narrow the lesson to one role.
        role: Option<String>,
    },
    /// It no longer holds.
    Stale,
    /// It says what another memory says; that one supersedes it.
    Merge {
        into: String,
    },
    Reject,
    /// Send it to an admin.
    Escalate,
}

/// The action names, as the CLI spells them.
pub const ACTION_NAMES: [&str; 8] = [
    "confirm",
    "edit",
    "evidence-only",
    "restrict",
    "stale",
    "merge",
    "reject",
    "escalate",
];

impl ReviewAction {
    pub fn name(&self) -> &'static str {
        match self {
            ReviewAction::Confirm { .. } => "confirm",
            ReviewAction::Edit { .. } => "edit",
            ReviewAction::EvidenceOnly => "evidence-only",
            ReviewAction::Restrict { .. } => "restrict",
            ReviewAction::Stale => "stale",
            ReviewAction::Merge { .. } => "merge",
            ReviewAction::Reject => "reject",
            ReviewAction::Escalate => "escalate",
        }
    }
}

/// Why a review action was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error("only a human may review memory; {0} is not one")]
    NotHuman(String),
    #[error("{action} is not allowed on a memory that is {status}")]
    Illegal {
        action: &'static str,
        status: &'static str,
    },
    #[error("the item is escalated: only an admin may confirm it")]
    NeedsAdmin,
    #[error("a memory without a lesson cannot be confirmed as an instruction")]
    NoLesson,
    #[error("a disputed or superseded memory cannot be confirmed as an instruction")]
    Contested,
    #[error("restrict must narrow: {0}")]
    Widens(&'static str),
    #[error("a memory cannot be merged into itself")]
    MergeSelf,
    #[error("nothing to change")]
    Empty,
}

/// Whether `action` may be taken on a memory in `status`.
pub fn legal(status: ReviewStatus, action: &ReviewAction) -> bool {
    use ReviewStatus as S;
    match status {
        S::Merged | S::Rejected => false,
        S::Pending | S::EvidenceOnly | S::NotRequired => true,
        S::Escalated => !matches!(action, ReviewAction::Escalate),
        S::Confirmed => !matches!(action, ReviewAction::Confirm { .. }),
        S::Stale => matches!(
            action,
            ReviewAction::Confirm { .. }
                | ReviewAction::EvidenceOnly
                | ReviewAction::Merge { .. }
                | ReviewAction::Reject
                | ReviewAction::Escalate
        ),
    }
}

/// Applies a review action taken by `by` at `now`; the memory is unchanged
/// on error.
pub fn apply(
    memory: &Memory,
    action: &ReviewAction,
    by: &Reviewer,
    now: Timestamp,
) -> Result<Memory, ReviewError> {
    if by.kind == ReviewerKind::Agent {
        return Err(ReviewError::NotHuman(by.name.clone()));
    }
    if !legal(memory.review, action) {
        return Err(ReviewError::Illegal {
            action: action.name(),
            status: memory.review.as_str(),
        });
    }
    let mut next = memory.clone();
    let label = |m: &mut Memory, policy: UsePolicy, reason: String| {
        m.item.use_policy.policy = policy;
        m.item.use_policy.reason = Some(reason);
    };
    match action {
        ReviewAction::Confirm {
            as_instruction,
            fresh_for,
        } => {
            if memory.review == ReviewStatus::Escalated && by.kind != ReviewerKind::Admin {
                return Err(ReviewError::NeedsAdmin);
            }
            if *as_instruction && memory.lesson.is_none() {
                return Err(ReviewError::NoLesson);
            }
            if *as_instruction && (memory.is_disputed() || memory.is_superseded()) {
                return Err(ReviewError::Contested);
            }
            let policy = if *as_instruction {
                UsePolicy::CanUseAsInstruction
            } else {
                UsePolicy::CanUseAsEvidence
            };
            next.item.provenance.status = ProvenanceStatus::UserConfirmed;
            next.item.freshness.last_confirmed_at = Some(now);
            if let Some(seconds) = fresh_for {
                next.item.freshness.stale_after = Some(now.plus(*seconds));
            } else if memory.review == ReviewStatus::Stale || !memory.item.freshness.is_fresh(now) {
                // Reconfirming something stale makes it fresh again, with no end.
                next.item.freshness.stale_after = None;
            }
            next.review = ReviewStatus::Confirmed;
            label(&mut next, policy, format!("confirmed by {}", by.name));
        }
        ReviewAction::Edit {
            summary,
            content,
            lesson,
        } => {
            if summary.is_none() && content.is_none() && lesson.is_none() {
                return Err(ReviewError::Empty);
            }
            if let Some(summary) = summary {
                next.item.summary.clone_from(summary);
            }
            if let Some(content) = content {
                next.item.content.clone_from(content);
            }
            if let Some(lesson) = lesson {
                next.lesson = Some(lesson.as_ref().clone());
            }
            // An edited memory is a new proposal: back to the queue, and no
            // longer an instruction until confirmed again.
            next.review = ReviewStatus::Pending;
            if memory.use_policy() == UsePolicy::CanUseAsInstruction {
                label(
                    &mut next,
                    UsePolicy::RequiresConfirmation,
                    format!("edited by {}; confirm again", by.name),
                );
            }
        }
        ReviewAction::EvidenceOnly => {
            next.review = ReviewStatus::EvidenceOnly;
            label(
                &mut next,
                UsePolicy::CanUseAsEvidence,
                format!("kept as evidence only by {}", by.name),
            );
        }
        ReviewAction::Restrict {
            project_id,
            visibility,
            role,
        } => restrict(&mut next, project_id, *visibility, role)?,
        ReviewAction::Stale => {
            next.review = ReviewStatus::Stale;
            next.item.freshness.stale_after = Some(now);
            label(
                &mut next,
                UsePolicy::DoNotInjectAutomatically,
                format!("marked stale by {}", by.name),
            );
        }
        ReviewAction::Merge { into } => {
            if *into == memory.item.memory_id {
                return Err(ReviewError::MergeSelf);
            }
            next.review = ReviewStatus::Merged;
            next.superseded_by = Some(into.clone());
            next.item.provenance.status = ProvenanceStatus::Superseded;
            label(
                &mut next,
                UsePolicy::DoNotInjectAutomatically,
                format!("merged into {into} by {}", by.name),
            );
        }
        ReviewAction::Reject => {
            next.review = ReviewStatus::Rejected;
            label(
                &mut next,
                UsePolicy::DoNotInjectAutomatically,
                format!("rejected by {}", by.name),
            );
        }
        ReviewAction::Escalate => {
            next.review = ReviewStatus::Escalated;
            next.priority = Priority::High;
            if memory.use_policy() == UsePolicy::CanUseAsInstruction {
                label(
                    &mut next,
                    UsePolicy::RequiresConfirmation,
                    format!("escalated by {}", by.name),
                );
            }
        }
    }
    Ok(next)
}

/// Restrict only ever narrows: a project where there was none (or the same),
/// a narrower visibility, a role where the lesson covered every role.
fn restrict(
    memory: &mut Memory,
    project_id: &Option<String>,
    visibility: Option<Visibility>,
    role: &Option<String>,
) -> Result<(), ReviewError> {
    if project_id.is_none() && visibility.is_none() && role.is_none() {
        return Err(ReviewError::Empty);
    }
    let scope = &mut memory.item.scope;
    if let Some(project) = project_id {
        if scope.project_id.as_ref().is_some_and(|p| p != project) {
            return Err(ReviewError::Widens(
                "the memory already belongs to another project",
            ));
        }
        scope.project_id = Some(project.clone());
    }
    if let Some(visibility) = visibility {
        if visibility > scope.visibility {
            return Err(ReviewError::Widens("visibility may only get narrower"));
        }
        scope.visibility = visibility;
    }
    if let Some(role) = role {
        let Some(lesson) = memory.lesson.as_mut() else {
            return Err(ReviewError::NoLesson);
        };
        if lesson.role.as_ref().is_some_and(|r| r != role) {
            return Err(ReviewError::Widens(
                "the lesson already covers another role",
            ));
        }
        lesson.role = Some(role.clone());
    }
    Ok(())
}

/// The queue: open items, high priority first, then oldest first.
pub fn queue<'m>(memories: impl IntoIterator<Item = &'m Memory>) -> Vec<&'m Memory> {
    let mut open: Vec<&Memory> = memories
        .into_iter()
        .filter(|m| m.review.is_open())
        .collect();
    open.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(
                a.item
                    .freshness
                    .created_at
                    .cmp(&b.item.freshness.created_at),
            )
            .then(a.id().cmp(b.id()))
    });
    open
}
