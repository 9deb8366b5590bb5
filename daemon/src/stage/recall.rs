//! The recall stage: before a policy HOLD stands, the memories of its
//! workspace are consulted. Only a confirmed, instruction-grade, fresh,
//! undisputed, unsuperseded memory whose lesson matches turns it into an
//! ALLOW; a STOP, or a HOLD that is not relaxable, is never relaxed (the
//! rules are `praxis_memory::relax`). Evidence-grade memories that match
//! are shown with the HOLD. Every held action is also kept, redacted, so an
//! operator's `approve --remember` can generalise it and the review queue
//! can replay lessons over recent HOLDs.

use std::sync::Arc;

use praxis_memory::event::Event;
use praxis_memory::lesson::{Action, ActionCommand, GitBranches, PathArg};
use praxis_memory::memory::Memory;
use praxis_memory::relax::{Consultation, consult};
use praxis_memory::time::Timestamp;
use praxis_policy::{Context, Decision, Verdict};

use crate::errors;
use crate::gate::Trail;
use crate::store::memory::{self, db::MemoryStore};

/// What memory sees of a judged request. `relaxable` is false for a HOLD
/// memory may not lift whatever it says (see [`relaxable`]).
pub fn action(decision: &Decision, context: &Context, role: &str) -> Action {
    Action {
        workspace: context.workspace.display().to_string(),
        project: None,
        role: role.to_owned(),
        tier: decision.tier,
        verdict: decision.decision,
        relaxable: relaxable(decision),
        commands: decision
            .commands
            .iter()
            .map(|c| ActionCommand {
                program: c.program.clone(),
                subcommand: c.shape.subcommand.clone(),
                flags: c.shape.flags.clone(),
                operands: c.shape.operands.clone(),
                paths: c
                    .shape
                    .paths
                    .iter()
                    .map(|(text, classes)| PathArg {
                        text: text.clone(),
                        classes: classes.clone(),
                    })
                    .collect(),
                verdict: c.verdict,
            })
            .collect(),
        destinations: decision
            .grants
            .connect
            .iter()
            .map(ToString::to_string)
            .collect(),
        git: context.in_git_work_tree.then(|| GitBranches {
            current: context.git_branch.clone(),
            default: context.git_default_branch.clone(),
        }),
    }
}

/// Whether memory may relax this decision's HOLD at all: not when a rule
/// marked `not_relaxable` held it, not when the command reaches root (sudo,
/// doas, …), and not when a held command's program is not known (a dynamic
/// command word), which no lesson about a named program can vouch for.
pub fn relaxable(decision: &Decision) -> bool {
    !decision.not_relaxable
        && !decision.escalation
        && decision
            .commands
            .iter()
            .filter(|c| c.verdict >= Verdict::Hold)
            .all(|c| !c.program.is_empty())
}

/// What memory said about one held request.
#[must_use = "a recall must be applied or the HOLD left standing deliberately"]
#[derive(Debug)]
pub enum Recalled {
    /// Memory consulted; the consultation says whether it relaxes the HOLD.
    Consulted(Consultation, Arc<Vec<Memory>>),
    /// The store could not be read: the HOLD stands, with why.
    Unavailable(String),
}

/// Consults the memories of the held action's workspace, and keeps the
/// action with what memory did for it (the judgment events the inspector
/// and the metrics read).
pub fn recall(
    store: &Result<MemoryStore, String>,
    request_id: &str,
    action: &Action,
    now: Timestamp,
) -> Recalled {
    let store = match store {
        Ok(store) => store,
        Err(why) => return Recalled::Unavailable(why.clone()),
    };
    let memories = match store.in_workspace(&action.workspace) {
        Ok(memories) => memories,
        Err(e) => return Recalled::Unavailable(errors::one_line(&e)),
    };
    let consultation = consult(memories.iter(), action, now);
    let events = Event::consulted(request_id, &consultation, now);
    store.record_held(request_id, now, action, events);
    Recalled::Consulted(consultation, memories)
}

/// What memory made of a policy HOLD.
#[must_use = "an ALLOW memory relaxed must be let through, evidence shown"]
#[derive(Debug)]
pub enum Relaxation {
    /// A confirmed lesson allows it: the decision is now ALLOW.
    Allowed,
    /// The HOLD stands, with the memory evidence to show with it, if any.
    Stands(Option<String>),
}

/// The memory relaxation of a policy HOLD: memory is consulted on the held
/// `action`; a confirmed lesson turns `decision` into an ALLOW that names
/// it. The trail keeps the memories the decision used.
pub fn relax(
    store: &Result<MemoryStore, String>,
    trail: &mut Trail,
    action: &Action,
    decision: &mut Decision,
) -> Relaxation {
    match recall(store, &trail.request_id, action, memory::now()) {
        Recalled::Consulted(consultation, memories) => {
            trail.memory_used = consultation.memory_used();
            if let Some((id, how)) = &consultation.allowed_by {
                decision.decision = Verdict::Allow;
                decision.reason = format!("{}; allowed by memory {id}, {how}", decision.reason);
                return Relaxation::Allowed;
            }
            Relaxation::Stands(evidence_note(&consultation, &memories))
        }
        Recalled::Unavailable(why) => {
            tracing::warn!("memory not consulted: {why}");
            Relaxation::Stands(None)
        }
    }
}

/// "memory evidence: m1 (git push …); m2 (…)", shown with a HOLD.
pub fn evidence_note(consultation: &Consultation, memories: &[Memory]) -> Option<String> {
    let shown: Vec<String> = consultation
        .evidence
        .iter()
        .filter_map(|id| memories.iter().find(|m| m.id() == id))
        .map(|m| format!("{} ({})", m.id(), m.item.summary))
        .collect();
    (!shown.is_empty()).then(|| format!("memory evidence: {}", shown.join("; ")))
}
