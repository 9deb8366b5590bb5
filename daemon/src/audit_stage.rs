//! The audit stages: the intent record, committed before anything runs (a
//! failed write turns an ALLOW into a HOLD), the start of an allowed command,
//! and its outcome. Raw arguments and output are never written: the trail
//! carries redacted commands and digests only.

use praxis_policy::{Decision, Tier};

use crate::approval::{self, Ticket};
use crate::audit::{AuditError, Durability, Event, EventKind, TxOp};
use crate::execute::{Executed, Ran};
use crate::pipeline::{Gate, Refusal, Trail};
use crate::state::Daemon;

/// T2 and above are fsynced before the command may run; T0/T1 ride the group commit.
fn durability(tier: Tier) -> Durability {
    if tier >= Tier::ExternalSideEffect {
        Durability::Full
    } else {
        Durability::Normal
    }
}

/// An event about the request of `trail`, its common fields filled.
pub fn base(kind: EventKind, trail: &Trail) -> Event {
    Event {
        request_id: Some(trail.request_id.clone()),
        session: trail.session.clone(),
        role: Some(trail.role.clone()),
        uid: Some(trail.peer.uid),
        pid: trail.peer.pid.and_then(|p| u32::try_from(p).ok()),
        runtime: trail.runtime.clone(),
        cwd: Some(trail.cwd.clone()),
        argv_redacted: trail.argv_redacted.clone(),
        arguments_digest: Some(trail.arguments_digest.clone()),
        policy_revision: trail.policy_revision.clone(),
        ..Event::new(kind)
    }
}

fn decided(trail: &Trail, ticket: &Ticket, verdict: &str, r: &Refusal) -> Event {
    Event {
        tier: Some(r.tier.as_str().to_owned()),
        decision: Some(verdict.to_owned()),
        reason: Some(r.reason.clone()),
        rule_ids: Some(r.rule_ids.clone()),
        profile: Some(r.profile.as_str().to_owned()),
        detail: Some(detail(ticket)),
        ..base(EventKind::Decided, trail)
    }
}

/// What every decision record says besides the decision: why the role
/// applies, the budget's session, the request digest approvals bind to.
fn detail(ticket: &Ticket) -> serde_json::Map<String, serde_json::Value> {
    let mut detail = serde_json::Map::new();
    detail.insert("role_reason".into(), ticket.role_why.clone().into());
    detail.insert("budget_session".into(), ticket.session.clone().into());
    if let Some(digest) = &ticket.digest {
        detail.insert("request_digest".into(), digest.clone().into());
    }
    if let Some(advisory) = &ticket.advisory {
        detail.insert("advisory".into(), advisory.clone().into());
    }
    if let Some(approval) = &ticket.approval {
        detail.insert("approved_by".into(), approval.by.label().into());
    }
    detail
}

fn allowed(trail: &Trail, ticket: &Ticket, d: &Decision) -> Event {
    let reason = match (&ticket.approval, &ticket.advisory) {
        (Some(a), _) => format!("approved by the {} ({}): {}", a.by.label(), a.id, d.reason),
        (None, Some(_)) => format!("steer-only role `{}`: {}", trail.role, d.reason),
        (None, None) => d.reason.clone(),
    };
    Event {
        tier: Some(d.tier.as_str().to_owned()),
        decision: Some(String::from("ALLOW")),
        reason: Some(reason),
        rule_ids: Some(d.rule_ids.clone()),
        profile: Some(d.profile.as_str().to_owned()),
        approval_id: ticket.approval.as_ref().map(|a| a.id.clone()),
        credentials: (!ticket.grants.is_empty()).then(|| ticket.names()),
        detail: Some(detail(ticket)),
        ..base(EventKind::Decided, trail)
    }
}

async fn append(
    daemon: &Daemon,
    event: Event,
    durability: Durability,
    op: Option<TxOp>,
) -> Result<(), AuditError> {
    match op {
        Some(op) => daemon.audit.append_with_async(event, durability, op).await,
        None => daemon.audit.append_async(event, durability).await,
    }
    .map(drop)
}

/// Records a refusal (a policy HOLD with `op` storing it as pending in the
/// same transaction). A refusal whose record fails is still a refusal.
async fn refusal(
    daemon: &Daemon,
    trail: &Trail,
    ticket: &Ticket,
    verdict: &str,
    r: &Refusal,
    op: Option<TxOp>,
) {
    let event = decided(trail, ticket, verdict, r);
    if let Err(e) = append(daemon, event.clone(), durability(r.tier), op).await {
        spill(daemon, &event, &e);
    }
}

/// Keeps a refusal the store could not take in the spill journal, so it
/// reaches the chain once the store is writable again.
fn spill(daemon: &Daemon, event: &Event, why: &AuditError) {
    match daemon.audit.spill(event) {
        Ok(()) => tracing::warn!("refusal spilled to the journal ({why})"),
        Err(e) => tracing::error!("refusal neither recorded ({why}) nor spilled ({e})"),
    }
}

/// Records the decision. Every decision is recorded. An ALLOW's record
/// commits in one transaction with the approval it consumes and the
/// execution it counts; when that cannot be committed, it does not run.
pub async fn intent(daemon: &Daemon, gate: Gate, trail: &Trail, ticket: &Ticket) -> Gate {
    let permit = match gate {
        Gate::Allow(permit) => permit,
        Gate::Held(held) => {
            let op = approval::hold_op(trail, ticket, &held.refusal, &held.permit().cwd);
            refusal(daemon, trail, ticket, "HOLD", &held.refusal, op).await;
            return Gate::Held(held);
        }
        Gate::Hold(r) => {
            refusal(daemon, trail, ticket, "HOLD", &r, None).await;
            return Gate::Hold(r);
        }
        Gate::Stop(r) => {
            refusal(daemon, trail, ticket, "STOP", &r, None).await;
            return Gate::Stop(r);
        }
    };
    let d = &permit.decision;
    let event = allowed(trail, ticket, d);
    let op = approval::allow_op(ticket, &trail.request_id);
    let tier = d.tier;
    match append(daemon, event, durability(tier), op).await {
        Ok(()) => {
            if let Some(approval) = &ticket.approval {
                let event = Event {
                    approval_id: Some(approval.id.clone()),
                    reason: Some(format!(
                        "approval by the {} consumed by this request's intent record, in its transaction",
                        approval.by.label()
                    )),
                    ..base(EventKind::ApprovalConsumed, trail)
                };
                if let Err(e) = daemon.record(event, Durability::Normal).await {
                    tracing::error!("audit of an approval consumption failed: {e}");
                }
            }
            Gate::Allow(permit)
        }
        Err(AuditError::Rejected(why)) if why == approval::BUDGET_SPENT => {
            // A concurrent run of the same request took the last execution.
            let limit = ticket.budget.unwrap_or(0);
            let reason = approval::budget_reason(limit, limit, tier, &ticket.session);
            approval::exhausted(daemon, trail, &reason).await;
            let stop = Refusal {
                reason,
                ..Refusal::of(d)
            };
            refusal(daemon, trail, ticket, "STOP", &stop, None).await;
            Gate::Stop(stop)
        }
        Err(AuditError::Rejected(why)) => {
            // Another run used the approval first: this one is held anew.
            let hold = Refusal {
                reason: format!("{} ({why}; a new approval is needed)", d.reason),
                approvable: true,
                ..Refusal::of(d)
            };
            let op = approval::hold_op(trail, ticket, &hold, &permit.cwd);
            refusal(daemon, trail, ticket, "HOLD", &hold, op).await;
            Gate::Hold(hold)
        }
        Err(e) => {
            let hold = Refusal {
                reason: format!("audit write failed: {e}"),
                ..Refusal::of(d)
            };
            spill(daemon, &decided(trail, ticket, "HOLD", &hold), &e);
            Gate::Hold(hold)
        }
    }
}

/// Records that an allowed command is running (best effort: the intent is
/// already committed, and the outcome follows).
pub async fn started(daemon: &Daemon, trail: &Trail, child_pid: i32) {
    let mut detail = serde_json::Map::new();
    detail.insert("child_pid".into(), child_pid.into());
    let event = Event {
        detail: Some(detail),
        ..base(EventKind::Started, trail)
    };
    if let Err(e) = daemon.record(event, Durability::Normal).await {
        tracing::error!("audit of a start failed: {e}");
    }
}

/// Records how an allowed command ended, or why it never started; a run
/// whose outcome [`outcome_of_run`] already recorded is not recorded twice.
pub async fn outcome(daemon: &Daemon, trail: &Trail, executed: &Executed) {
    let event = match executed {
        Executed::NotStarted {
            reason,
            tier,
            profile,
        } => Event {
            decision: Some(String::from("HOLD")),
            reason: Some(reason.clone()),
            tier: Some(tier.as_str().to_owned()),
            profile: Some(profile.as_str().to_owned()),
            ..base(EventKind::Finished, trail)
        },
        Executed::Ran(ran) if ran.recorded => return,
        Executed::Ran(ran) => finished(trail, ran),
    };
    if let Err(e) = daemon.record(event, Durability::Normal).await {
        tracing::error!("audit of an outcome failed: {e}");
    }
}

/// Records how a command that ran ended.
pub async fn outcome_of_run(daemon: &Daemon, trail: &Trail, ran: &Ran) {
    if let Err(e) = daemon
        .record(finished(trail, ran), Durability::Normal)
        .await
    {
        tracing::error!("audit of an outcome failed: {e}");
    }
}

fn finished(trail: &Trail, ran: &Ran) -> Event {
    let mut detail = serde_json::Map::new();
    if let Some(why) = &ran.ended_because {
        detail.insert("ended_because".into(), why.clone().into());
    }
    if ran.timed_out {
        detail.insert("timed_out".into(), true.into());
    }
    Event {
        exit_code: ran.exit_code,
        signal: ran.signal,
        duration_ms: Some(ran.duration_ms),
        stdout_bytes: Some(ran.stdout_bytes),
        stderr_bytes: Some(ran.stderr_bytes),
        output_digest: Some(ran.output_digest.clone()),
        truncated: Some(ran.truncated),
        profile: Some(ran.profile.as_str().to_owned()),
        detail: (!detail.is_empty()).then_some(detail),
        ..base(EventKind::Finished, trail)
    }
}
