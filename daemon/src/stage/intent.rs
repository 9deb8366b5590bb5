//! The audit intent stage: every decision is recorded, an ALLOW before
//! anything runs (a failed write turns it into a HOLD). The SQL that must
//! commit with the record (an approval consumed, an execution counted, a
//! HOLD stored as pending) is handed in by the pipeline. Raw arguments are
//! never written: the trail carries redacted commands and digests only.

use praxis_policy::{Decision, Tier};

use crate::gate::{Approval, Gate, Permit, Refusal, Ticket, Trail};
use crate::store::RequestEvent;
use crate::store::audit::{AuditError, AuditStore, Durability, Event, EventKind, TxOp};

/// T2 and above are fsynced before the command may run; T0/T1 ride the group commit.
fn durability(tier: Tier) -> Durability {
    if tier >= Tier::ExternalSideEffect {
        Durability::Full
    } else {
        Durability::Normal
    }
}

fn decided(trail: &Trail, ticket: &Ticket, verdict: &str, r: &Refusal) -> Event {
    Event {
        tier: Some(r.tier.as_str().to_owned()),
        decision: Some(verdict.to_owned()),
        reason: Some(r.reason.clone()),
        rule_ids: Some(r.rule_ids.clone()),
        profile: Some(r.profile.as_str().to_owned()),
        detail: Some(detail(trail, ticket)),
        ..trail.event(EventKind::Decided)
    }
}

/// What every decision record says besides the decision: why the role
/// applies, the budget's session, the request digest approvals bind to,
/// the memories it used.
fn detail(trail: &Trail, ticket: &Ticket) -> serde_json::Map<String, serde_json::Value> {
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
    if !trail.memory_used.is_empty() {
        detail.insert(
            "memory_used".into(),
            serde_json::to_value(&trail.memory_used).unwrap_or_default(),
        );
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
        detail: Some(detail(trail, ticket)),
        ..trail.event(EventKind::Decided)
    }
}

async fn append(
    audit: &AuditStore,
    event: Event,
    durability: Durability,
    op: Option<TxOp>,
) -> Result<(), AuditError> {
    match op {
        Some(op) => audit.append_with_async(event, durability, op).await,
        None => audit.append_async(event, durability).await,
    }
    .map(drop)
}

/// Records a refusal (a policy HOLD with `op` storing it as pending in the
/// same transaction). A refusal whose record fails is still a refusal.
async fn refusal(
    audit: &AuditStore,
    trail: &Trail,
    ticket: &Ticket,
    verdict: &str,
    r: &Refusal,
    op: Option<TxOp>,
) {
    let event = decided(trail, ticket, verdict, r);
    if let Err(e) = append(audit, event.clone(), durability(r.tier), op).await {
        spill(audit, &event, &e);
    }
}

/// Keeps a refusal the store could not take in the spill journal, so it
/// reaches the chain once the store is writable again.
fn spill(audit: &AuditStore, event: &Event, why: &AuditError) {
    match audit.spill(event) {
        Ok(()) => tracing::warn!("refusal spilled to the journal ({why})"),
        Err(e) => tracing::error!("refusal neither recorded ({why}) nor spilled ({e})"),
    }
}

/// What the intent stage did with a decision.
#[must_use = "only a recorded ALLOW may run"]
#[derive(Debug)]
pub enum Intent {
    /// Recorded (a refusal also when its record failed: it stays a refusal;
    /// an ALLOW whose write failed comes back as a HOLD).
    Recorded(Gate),
    /// The ALLOW's transaction refused the SQL handed in with it, `why`;
    /// nothing was recorded, and the pipeline decides what it becomes.
    Rejected { permit: Box<Permit>, why: String },
}

/// Records the decision, with `with` in the same transaction. Every
/// decision is recorded. An ALLOW's record commits in one transaction with
/// `with`; when that cannot be committed, it does not run.
pub async fn intent(
    audit: &AuditStore,
    gate: Gate,
    trail: &Trail,
    ticket: &Ticket,
    with: Option<TxOp>,
) -> Intent {
    let permit = match gate {
        Gate::Allow(permit) => permit,
        Gate::Held(held) => {
            refusal(audit, trail, ticket, "HOLD", &held.refusal, with).await;
            return Intent::Recorded(Gate::Held(held));
        }
        Gate::Hold(r) => {
            refusal(audit, trail, ticket, "HOLD", &r, with).await;
            return Intent::Recorded(Gate::Hold(r));
        }
        Gate::Stop(r) => {
            refusal(audit, trail, ticket, "STOP", &r, with).await;
            return Intent::Recorded(Gate::Stop(r));
        }
    };
    let d = &permit.decision;
    let event = allowed(trail, ticket, d);
    match append(audit, event, durability(d.tier), with).await {
        Ok(()) => {
            if let Some(approval) = &ticket.approval {
                consumed(audit, trail, approval).await;
            }
            Intent::Recorded(Gate::Allow(permit))
        }
        Err(AuditError::Rejected(why)) => Intent::Rejected { permit, why },
        Err(e) => {
            let hold = Refusal {
                reason: format!("audit write failed: {e}"),
                ..Refusal::of(d)
            };
            spill(audit, &decided(trail, ticket, "HOLD", &hold), &e);
            Intent::Recorded(Gate::Hold(hold))
        }
    }
}

/// Records that `approval` was consumed, by the ALLOW record of `trail`
/// that committed it.
pub async fn consumed(audit: &AuditStore, trail: &Trail, approval: &Approval) {
    let event = Event {
        approval_id: Some(approval.id.clone()),
        reason: Some(format!(
            "approval by the {} consumed by this request's intent record, in its transaction",
            approval.by.label()
        )),
        ..trail.event(EventKind::ApprovalConsumed)
    };
    if let Err(e) = crate::store::record(audit, event, Durability::Normal).await {
        tracing::error!("audit of an approval consumption failed: {e}");
    }
}
