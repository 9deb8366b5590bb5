//! The stores: everything that speaks SQLite or keeps state on disk. The
//! audit chain, approvals, credentials, memory and sessions.

pub mod approvals;
pub mod audit;
pub mod credential_rows;
pub mod credentials;
pub mod memory;
pub mod sessions;

use crate::errors;
use crate::gate::Trail;
use audit::{Appended, AuditStore, Durability, Event, EventKind};

/// Appends an audit event from async code without blocking the runtime.
pub async fn record(
    audit: &AuditStore,
    event: Event,
    durability: Durability,
) -> Result<Appended, String> {
    audit
        .append_async(event, durability)
        .await
        .map_err(|e| errors::one_line(&e))
}

/// The audit event of a request, its common fields filled from its trail.
pub trait RequestEvent {
    fn event(&self, kind: EventKind) -> Event;
}

impl RequestEvent for Trail {
    fn event(&self, kind: EventKind) -> Event {
        Event {
            request_id: Some(self.request_id.clone()),
            session: self.session.clone(),
            role: Some(self.role.clone()),
            uid: Some(self.peer.uid),
            pid: self.peer.pid.and_then(|p| u32::try_from(p).ok()),
            runtime: self.runtime.clone(),
            cwd: Some(self.cwd.clone()),
            argv_redacted: self.argv_redacted.clone(),
            arguments_digest: Some(self.arguments_digest.clone()),
            policy_revision: self.policy_revision.clone(),
            ..Event::new(kind)
        }
    }
}
