//! `praxis pending|approve|deny`: the operator's side of approvals. The SQL
//! is the approval stage's store; these handlers word the replies and record
//! each operator action in the same transaction as its effect.

use praxis_proto::OperatorReply;

use crate::conn::Peer;
use crate::state::Daemon;
use crate::store::approvals::{self as store, NewApproval, PendingRow};
use crate::store::audit::{AuditError, Durability, Event, EventKind};
use crate::{clock, errors, ids};

/// Longest approval lifetime an operator may grant.
const MAX_TTL_SECS: u64 = 7 * 24 * 3600;

/// `praxis pending`: held requests nobody has approved or denied yet.
pub fn pending(daemon: &Daemon) -> OperatorReply {
    store::record_expired(&daemon.audit);
    match store::pending_items(&daemon.audit, clock::now_ms()) {
        Ok(items) => OperatorReply::Pending { items },
        Err(e) => OperatorReply::Refused {
            reason: errors::one_line(&e),
        },
    }
}

/// Why `request_id` has no pending row: a STOP, a HOLD no approval can lift, or unknown.
fn not_pending(daemon: &Daemon, request_id: &str) -> String {
    let decided = daemon.audit.by_request(request_id).ok().and_then(|events| {
        events
            .into_iter()
            .find(|e| e.event.kind == EventKind::Decided)
            .and_then(|e| e.event.decision)
    });
    match decided.as_deref() {
        Some("STOP") => format!("{request_id} was STOP, and a STOP cannot be approved"),
        Some("ALLOW") => format!("{request_id} was allowed; there is nothing to approve"),
        Some(_) => format!(
            "{request_id} was held before the policy could judge it (kill switch, bad policy, refused role, …); only a policy HOLD can be approved"
        ),
        None => format!("no held request {request_id}"),
    }
}

/// Who approves or denies: a local operator's process, or an operator of
/// the fleet store whose decision praxisd's fleet link relays.
pub struct Approver {
    pub uid: u32,
    pub pid: Option<u32>,
    /// As the audit reason names it: "uid 1000", "fleet operator praxis_operator_ana".
    pub name: String,
}

impl Approver {
    pub fn local(peer: &Peer) -> Approver {
        Approver {
            uid: peer.uid,
            pid: peer.pid.and_then(|p| u32::try_from(p).ok()),
            name: format!("uid {}", peer.uid),
        }
    }

    /// A fleet operator, relayed by praxisd itself.
    pub fn fleet(operator: &str) -> Approver {
        Approver {
            uid: nix::unistd::geteuid().as_raw(),
            pid: Some(std::process::id()),
            name: format!("fleet operator {operator}"),
        }
    }
}

fn operator_event(kind: EventKind, by: &Approver, request_id: &str, held: &PendingRow) -> Event {
    Event {
        request_id: Some(request_id.to_owned()),
        uid: Some(by.uid),
        pid: by.pid,
        role: Some(held.role.clone()),
        tier: Some(held.tier.clone()),
        argv_redacted: Some(held.command.clone()),
        ..Event::new(kind)
    }
}

fn refused(reason: String) -> OperatorReply {
    OperatorReply::Refused { reason }
}

fn audit_refusal(e: AuditError) -> OperatorReply {
    match e {
        AuditError::Rejected(why) => refused(why),
        e => refused(errors::one_line(&e)),
    }
}

/// `praxis approve ID`: a one-shot approval of the request's digest.
pub fn approve(
    daemon: &Daemon,
    by: &Approver,
    request_id: &str,
    ttl_secs: Option<u64>,
    note: Option<&str>,
) -> OperatorReply {
    let held = match store::pending_row(&daemon.audit, request_id) {
        Ok(Some(held)) => held,
        Ok(None) => return refused(not_pending(daemon, request_id)),
        Err(e) => return refused(errors::one_line(&e)),
    };
    if let Some(resolution) = &held.resolution {
        return refused(format!("{request_id} is already {resolution}"));
    }
    let ttl = ttl_secs.unwrap_or(daemon.config.approval_ttl.as_secs());
    if ttl == 0 || ttl > MAX_TTL_SECS {
        return refused(format!(
            "ttl must be between 1 second and {} days",
            MAX_TTL_SECS / 86400
        ));
    }
    let id = ids::approval_id();
    let now = clock::now_ms();
    let expires = now.saturating_add(i64::try_from(ttl).unwrap_or(i64::MAX).saturating_mul(1000));
    let mut detail = serde_json::Map::new();
    detail.insert("ttl_secs".into(), ttl.into());
    detail.insert("digest".into(), held.digest.clone().into());
    if let Some(note) = note {
        detail.insert("note".into(), daemon.redact(note).into());
    }
    let event = Event {
        approval_id: Some(id.clone()),
        decision: Some(String::from("ALLOW")),
        reason: Some(format!("approved by {} for one run within {ttl}s", by.name)),
        detail: Some(detail),
        ..operator_event(EventKind::Approved, by, request_id, &held)
    };
    let op = store::approve_op(NewApproval {
        id: id.clone(),
        request_id: request_id.to_owned(),
        digest: held.digest,
        approved_by: by.uid,
        created_ms: now,
        expires_ms: expires,
    });
    match daemon.audit.append_with(event, Durability::Full, op) {
        Ok(_) => OperatorReply::Done {
            message: format!(
                "approved {request_id} as {id}: the same command or tool call may now run once, within {ttl}s"
            ),
        },
        Err(e) => audit_refusal(e),
    }
}

/// `praxis deny ID`: closes a held request, or withdraws its unused approval.
pub fn deny(daemon: &Daemon, by: &Approver, request_id: &str, note: Option<&str>) -> OperatorReply {
    let held = match store::pending_row(&daemon.audit, request_id) {
        Ok(Some(held)) => held,
        Ok(None) => return refused(not_pending(daemon, request_id)),
        Err(e) => return refused(errors::one_line(&e)),
    };
    if held.resolution.as_deref() == Some("denied") {
        return refused(format!("{request_id} is already denied"));
    }
    let mut detail = serde_json::Map::new();
    if let Some(note) = note {
        detail.insert("note".into(), daemon.redact(note).into());
    }
    let event = Event {
        decision: Some(String::from("STOP")),
        reason: Some(format!("denied by {}", by.name)),
        detail: (!detail.is_empty()).then_some(detail),
        ..operator_event(EventKind::Denied, by, request_id, &held)
    };
    let op = store::deny_op(request_id.to_owned(), held.digest);
    match daemon.audit.append_with(event, Durability::Full, op) {
        Ok(_) => OperatorReply::Done {
            message: format!("denied {request_id}"),
        },
        Err(e) => audit_refusal(e),
    }
}
