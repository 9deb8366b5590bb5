//! The approval stage itself: budget, then what [`decide::held`] makes of a
//! policy HOLD given what the store holds for it.

use std::sync::Arc;

use praxis_policy::{Profile, Tier};
use praxis_proto::CredentialSpec;

use super::budget::{self, Budget};
use super::decide::{self, Lifted, Lookup, Presented};
use super::digest::request_digest;
use super::token;
use crate::config::Config;
use crate::gate::{Approval, Gate, Refusal, Ticket, Trail};
use crate::store::approvals as store;
use crate::store::audit::AuditStore;
use crate::{clock, errors};

fn refusal(reason: String, tier: Tier, profile: Profile) -> Refusal {
    Refusal {
        reason,
        tier,
        rule_ids: Vec::new(),
        profile,
        approvable: false,
    }
}

/// The stage: binds the request digest (with the credential `grants` the
/// pipeline looked up, `None` for a refusal), counts the retry budget, then
/// lifts a policy HOLD for a steer-only role or a usable approval.
pub async fn apply(
    config: &Config,
    audit: &Arc<AuditStore>,
    gate: Gate,
    trail: &Trail,
    ticket: &mut Ticket,
    grants: Option<Result<Vec<CredentialSpec>, String>>,
) -> Gate {
    let (permit, tier) = match &gate {
        Gate::Allow(p) => (&**p, p.decision.tier),
        Gate::Held(h) => (h.permit(), h.refusal.tier),
        Gate::Hold(_) | Gate::Stop(_) => return gate,
    };
    let profile = permit.decision.profile;
    ticket.grants = match grants {
        Some(Ok(grants)) => grants,
        Some(Err(why)) => return Gate::Hold(refusal(why, tier, profile)),
        None => Vec::new(),
    };
    let digest = request_digest(
        &trail.arguments_digest,
        &permit.cwd,
        profile,
        &permit.decision.grants,
        &ticket.grants,
    );
    ticket.digest = Some(digest.clone());

    if let Some(limit) = config.retry_budget.limit(tier) {
        let done =
            store::executions(audit, &ticket.session, &digest).map_err(|e| errors::one_line(&e));
        match budget::check(limit, done, tier, &ticket.session) {
            Budget::Counts(limit) => ticket.budget = Some(limit),
            Budget::Spent(reason) => {
                budget::exhausted(audit, trail, &reason).await;
                return Gate::Stop(refusal(reason, tier, profile));
            }
            Budget::Unreadable(reason) => return Gate::Hold(refusal(reason, tier, profile)),
        }
    }

    let Gate::Held(mut held) = gate else {
        return gate;
    };
    let role_defined = held.permit().policy.roles().any(|r| r == trail.role);
    let now_ms = clock::now_ms();
    let presented = ticket.presented_token.as_deref().map(|presented| {
        if token::from_inside(&trail.peer) {
            Presented::FromInside
        } else {
            Presented::Looked(
                store::find_token(audit, &token::sha256(presented), &digest, &ticket.session)
                    .map_err(|e| errors::one_line(&e)),
            )
        }
    });
    let approval = match presented {
        // A presented token decides alone: the operator's approvals are not read.
        Some(_) => Ok(None),
        None => store::find_approval(audit, &digest, now_ms).map_err(|e| e.to_string()),
    };
    let lookup = Lookup {
        steer_only: config.roles.is_steer_only(&trail.role) && role_defined,
        steerable: held.steerable,
        token: presented,
        approval,
        now_ms,
    };
    match decide::held(&trail.role, &held.refusal.reason, lookup) {
        Lifted::Steered { advisory } => {
            ticket.advisory = Some(advisory.clone());
            Gate::Allow(held.lift(Some(advisory)))
        }
        Lifted::Approved(approval) => {
            ticket.approval = Some(approval);
            Gate::Allow(held.lift(None))
        }
        Lifted::Held {
            note,
            expired,
            unreadable,
        } => {
            still_held(audit, expired, unreadable).await;
            if let Some(note) = note {
                held.refusal.reason = format!("{} ({note})", held.refusal.reason);
            }
            Gate::Held(held)
        }
    }
}

/// What a HOLD nothing lifted leaves to do: an approval that expired unused
/// is recorded, approvals that could not be read are logged.
async fn still_held(audit: &Arc<AuditStore>, expired: bool, unreadable: Option<String>) {
    if expired {
        let audit = Arc::clone(audit);
        let _ = tokio::task::spawn_blocking(move || store::record_expired(&audit)).await;
    }
    if let Some(e) = unreadable {
        tracing::error!("approvals unreadable: {e}");
    }
}

/// The operator's approval of a held call that runs no command (a
/// runtime's own tool, bound by [`super::digest::tool_digest`]): no role
/// steers it and no prompt token lifts it. The approval to consume, or the
/// note for the HOLD's reason.
pub async fn operator_approval(
    audit: &Arc<AuditStore>,
    role: &str,
    hold_reason: &str,
    digest: &str,
) -> Result<Approval, Option<String>> {
    let now_ms = clock::now_ms();
    let lookup = Lookup {
        steer_only: false,
        steerable: false,
        token: None,
        approval: store::find_approval(audit, digest, now_ms).map_err(|e| e.to_string()),
        now_ms,
    };
    match decide::held(role, hold_reason, lookup) {
        Lifted::Approved(approval) => Ok(approval),
        Lifted::Held {
            note,
            expired,
            unreadable,
        } => {
            still_held(audit, expired, unreadable).await;
            Err(note)
        }
        // Not steer-only, so never steered; were it, it would stay held.
        Lifted::Steered { .. } => Err(None),
    }
}
