//! Judgment memory's I/O: the SQLite store, and the audit record every
//! memory operation also gets in the hash chain. What memory decides is in
//! the `praxis_memory` crate; operators reach it through
//! `operator::memory`, requests through the pipeline's recall stage.

pub mod db;

use praxis_memory::time::Timestamp;

use crate::store::audit::{AuditStore, Durability, Event, EventKind};

/// Now, as memory timestamps it.
pub fn now() -> Timestamp {
    Timestamp(crate::clock::now_ms().div_euclid(1000))
}

/// Who made a memory operation, as its audit record names them: an
/// operator, an API client (a process outside every command), the agent
/// (a process inside one), or a bearer of the API token; with the uid and
/// pid the kernel named, when known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Maker {
    pub role: &'static str,
    pub uid: Option<u32>,
    pub pid: Option<i32>,
}

/// Records a memory operation in the audit chain, durably, before the
/// memory store changes: `op` (proposed, decision, or a review action:
/// confirm, reject, …) on `memory_id` by `maker`, with what else it says
/// in `detail`.
pub fn record(
    audit: &AuditStore,
    op: &str,
    memory_id: &str,
    maker: Maker,
    reason: String,
    detail: serde_json::Map<String, serde_json::Value>,
) -> Result<(), String> {
    audit
        .append(
            audit_event(op, memory_id, maker, reason, detail),
            Durability::Full,
        )
        .map(drop)
        .map_err(|e| crate::errors::one_line(&e))
}

fn audit_event(
    op: &str,
    memory_id: &str,
    maker: Maker,
    reason: String,
    mut detail: serde_json::Map<String, serde_json::Value>,
) -> Event {
    detail.insert("op".into(), op.into());
    detail.insert("memory_id".into(), memory_id.into());
    detail.insert("maker".into(), maker.role.into());
    let kind = if matches!(op, "proposed" | "decision") {
        EventKind::Memory
    } else {
        EventKind::Review
    };
    Event {
        uid: maker.uid,
        pid: maker.pid.and_then(|p| u32::try_from(p).ok()),
        reason: Some(reason),
        detail: Some(detail),
        ..Event::new(kind)
    }
}
