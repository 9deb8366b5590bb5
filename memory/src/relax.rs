//! The use rules: whether a memory may turn the policy's HOLD into an ALLOW.
//!
//! Only a memory that is `user_confirmed`, `can_use_as_instruction`,
//! confirmed in review, fresh, neither disputed nor superseded, in scope, and
//! whose lesson matches the action may relax a HOLD. A STOP is never
//! relaxed, nor a HOLD from a rule marked not relaxable. Evidence-grade
//! memories that match come back as evidence, to be shown with the HOLD.

use std::fmt;

use praxis_policy::Verdict;
use serde::Serialize;

use crate::contract::{MemoryUse, UsePolicy, UsedAs};
use crate::lesson::{Action, matches};
use crate::memory::{Memory, ReviewStatus};
use crate::time::Timestamp;

/// What one memory may do for one action.
#[must_use = "a relaxation must be acted on or dropped deliberately"]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Relax {
    /// The HOLD becomes ALLOW because of this memory.
    Allow { memory_id: String, how: String },
    /// Show this memory with the HOLD; it decides nothing.
    Evidence { memory_id: String },
    /// The memory does nothing for this action.
    No(NoRelax),
}

/// Why a memory does not relax an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoRelax {
    /// The policy said STOP; memory never relaxes a STOP.
    Stop,
    /// The policy already allows it.
    NotHeld,
    /// A rule that decided the HOLD is marked not relaxable.
    NotRelaxable,
    OtherWorkspace,
    OtherProject,
    Rejected,
    Superseded,
    Disputed,
    Stale,
    /// It carries no lesson about actions.
    NoLesson,
    NoMatch,
    /// Matches, but is neither instruction- nor evidence-grade
    /// (`requires_confirmation`, `do_not_inject_automatically`, unconfirmed).
    NotUsable,
}

impl fmt::Display for NoRelax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NoRelax::Stop => "the policy stops this action; memory never relaxes a STOP",
            NoRelax::NotHeld => "the action is not held",
            NoRelax::NotRelaxable => "the rule that held it is marked not relaxable",
            NoRelax::OtherWorkspace => "the memory belongs to another workspace",
            NoRelax::OtherProject => "the memory belongs to another project",
            NoRelax::Rejected => "the memory was rejected in review",
            NoRelax::Superseded => "the memory is superseded",
            NoRelax::Disputed => "the memory is disputed",
            NoRelax::Stale => "the memory is stale",
            NoRelax::NoLesson => "the memory carries no lesson about actions",
            NoRelax::NoMatch => "the memory's lesson does not match this action",
            NoRelax::NotUsable => "the memory is not confirmed for use",
        })
    }
}

/// Whether `memory` may relax the policy's decision on `action` at `now`.
pub fn may_relax(memory: &Memory, action: &Action, now: Timestamp) -> Relax {
    match why_not(memory, action, now) {
        Some(reason) => Relax::No(reason),
        None if memory.is_instruction_grade(now) => Relax::Allow {
            memory_id: memory.id().to_owned(),
            how: how(memory),
        },
        None if memory.use_policy() == UsePolicy::CanUseAsEvidence => Relax::Evidence {
            memory_id: memory.id().to_owned(),
        },
        None => Relax::No(NoRelax::NotUsable),
    }
}

/// The first rule `memory` breaks for `action`, cheapest checks first.
fn why_not(memory: &Memory, action: &Action, now: Timestamp) -> Option<NoRelax> {
    let scope = &memory.item.scope;
    let reason = match action.verdict {
        Verdict::Stop => NoRelax::Stop,
        Verdict::Allow => NoRelax::NotHeld,
        Verdict::Hold if !action.relaxable => NoRelax::NotRelaxable,
        Verdict::Hold if scope.workspace_id != action.workspace => NoRelax::OtherWorkspace,
        Verdict::Hold
            if scope
                .project_id
                .as_ref()
                .is_some_and(|p| action.project.as_ref() != Some(p)) =>
        {
            NoRelax::OtherProject
        }
        Verdict::Hold if memory.review == ReviewStatus::Rejected => NoRelax::Rejected,
        Verdict::Hold if memory.is_superseded() => NoRelax::Superseded,
        Verdict::Hold if memory.is_disputed() => NoRelax::Disputed,
        Verdict::Hold if !memory.is_fresh(now) => NoRelax::Stale,
        Verdict::Hold => match &memory.lesson {
            None => NoRelax::NoLesson,
            Some(lesson) if !matches(lesson, action) => NoRelax::NoMatch,
            Some(_) => return None,
        },
    };
    Some(reason)
}

fn how(memory: &Memory) -> String {
    let lesson = memory
        .lesson
        .as_ref()
        .map_or(memory.item.summary.as_str(), |l| l.description.as_str());
    let confirmed = memory
        .item
        .freshness
        .last_confirmed_at
        .unwrap_or(memory.item.freshness.created_at);
    format!("used as instruction: confirmed lesson \"{lesson}\" (confirmed {confirmed})")
}

/// What the pipeline gets from memory for one held action.
#[must_use = "the pipeline must apply or record what memory said"]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consultation {
    /// The memory that relaxes the HOLD, and how, when one does.
    pub allowed_by: Option<(String, String)>,
    /// Matching evidence-grade memories, to show with the HOLD.
    pub evidence: Vec<String>,
}

impl Consultation {
    /// The `memory_used` entries a decision and its audit record carry.
    pub fn memory_used(&self) -> Vec<MemoryUse> {
        let instruction = self.allowed_by.iter().map(|(id, _)| MemoryUse {
            memory_id: id.clone(),
            used_as: UsedAs::Instruction,
        });
        let evidence = self.evidence.iter().map(|id| MemoryUse {
            memory_id: id.clone(),
            used_as: UsedAs::Evidence,
        });
        instruction.chain(evidence).collect()
    }
}

/// Consults every memory about a held action. Of several memories that may
/// relax it, the most recently confirmed wins (then the smallest id), so the
/// answer does not depend on the order memories are stored in.
pub fn consult<'m>(
    memories: impl IntoIterator<Item = &'m Memory>,
    action: &Action,
    now: Timestamp,
) -> Consultation {
    let mut result = Consultation::default();
    if action.verdict != Verdict::Hold || !action.relaxable {
        return result;
    }
    let mut best: Option<&Memory> = None;
    // The same rules as may_relax, without building a description for
    // every memory that would allow: only the winner gets one.
    for memory in memories {
        if why_not(memory, action, now).is_some() {
            continue;
        }
        if memory.is_instruction_grade(now) {
            if best.is_none_or(|b| rank(memory) > rank(b)) {
                best = Some(memory);
            }
        } else if memory.use_policy() == UsePolicy::CanUseAsEvidence {
            result.evidence.push(memory.id().to_owned());
        }
    }
    result.evidence.sort();
    result.allowed_by = best.map(|m| (m.id().to_owned(), how(m)));
    result
}

fn rank(memory: &Memory) -> (Option<Timestamp>, std::cmp::Reverse<&str>) {
    (
        memory.item.freshness.last_confirmed_at,
        std::cmp::Reverse(memory.id()),
    )
}

/// Whether a memory may be injected into a judge's context without being
/// asked for: never when disputed, superseded, stale or rejected, never for
/// `do_not_inject_automatically` or unconfirmed future-facing memories.
pub fn injectable(memory: &Memory, now: Timestamp) -> bool {
    !memory.is_disputed()
        && !memory.is_superseded()
        && memory.is_fresh(now)
        && memory.review != ReviewStatus::Rejected
        && match memory.use_policy() {
            UsePolicy::CanUseAsInstruction => memory.is_instruction_grade(now),
            UsePolicy::CanUseAsEvidence => true,
            UsePolicy::RequiresConfirmation | UsePolicy::DoNotInjectAutomatically => false,
        }
}
