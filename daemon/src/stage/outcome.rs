//! The audit outcome stage: the start of an allowed command and how it
//! ended, or why it never started. Output is recorded as byte counts and a
//! digest only.

use praxis_egress::{ConnectionEvent, Disposition, RequestKind};

use crate::errors;
use crate::gate::{Executed, Ran, Trail};
use crate::store::RequestEvent;
use crate::store::audit::{AuditStore, Durability, Event, EventKind, Queued};

/// Records that an allowed command is running (best effort: the intent is
/// already committed, and the outcome follows).
pub async fn started(audit: &AuditStore, trail: &Trail, child_pid: i32) {
    let mut detail = serde_json::Map::new();
    detail.insert("child_pid".into(), child_pid.into());
    let event = Event {
        detail: Some(detail),
        ..trail.event(EventKind::Started)
    };
    if let Err(e) = crate::store::record(audit, event, Durability::Normal).await {
        tracing::error!("audit of a start failed: {e}");
    }
}

/// Records one connection of the command through the egress proxy: where
/// it asked to go, whether it went, and how many bytes; never a path or a
/// header.
pub async fn egress(audit: &AuditStore, trail: &Trail, event: ConnectionEvent) {
    let (verdict, reason) = match &event.verdict {
        Disposition::Allowed => ("allowed", None),
        Disposition::Refused(why) => ("refused", Some(why.clone())),
        Disposition::Failed(why) => ("failed", Some(why.clone())),
    };
    let kind = match &event.kind {
        RequestKind::Connect => String::from("CONNECT"),
        RequestKind::Http(method) => method.clone(),
        RequestKind::Malformed => String::from("malformed"),
    };
    let mut detail = serde_json::Map::new();
    detail.insert("destination".into(), event.destination.into());
    detail.insert("verdict".into(), verdict.into());
    detail.insert("request".into(), kind.into());
    detail.insert("bytes_up".into(), event.bytes_up.into());
    detail.insert("bytes_down".into(), event.bytes_down.into());
    if event.intercepted {
        detail.insert("intercepted".into(), true.into());
    }
    if event.masked > 0 {
        detail.insert("masked".into(), event.masked.into());
    }
    let record = Event {
        reason,
        duration_ms: Some(u64::try_from(event.duration.as_millis()).unwrap_or(u64::MAX)),
        credentials: (!event.credentials.is_empty()).then_some(event.credentials),
        detail: Some(detail),
        ..trail.event(EventKind::Egress)
    };
    if let Err(e) = crate::store::record(audit, record, Durability::Normal).await {
        tracing::error!("audit of an egress connection failed: {e}");
    }
}

/// Queues the record of how an allowed command ended, or why it never
/// started; [`committed`] waits for it.
pub fn queue(audit: &AuditStore, trail: &Trail, executed: &Executed) -> Queued {
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
            ..trail.event(EventKind::Finished)
        },
        Executed::Ran(ran) => finished(trail, ran),
    };
    audit.queue_all(vec![(event, Durability::Normal)])
}

/// Waits for a queued outcome record. One that fails is logged; a started
/// command whose outcome never committed is marked interrupted at the
/// daemon's next start.
pub async fn committed(record: Queued) {
    for result in record.committed().await {
        if let Err(e) = result {
            tracing::error!("audit of an outcome failed: {}", errors::one_line(&e));
        }
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
        ..trail.event(EventKind::Finished)
    }
}
