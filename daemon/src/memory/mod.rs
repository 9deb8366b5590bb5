//! Judgment memory's I/O: the SQLite store, and the audit record every
//! memory operation also gets in the hash chain. What memory decides is in
//! the `praxis_memory` crate; operators reach it through
//! `operator::memory`, requests through the pipeline's recall stage.

pub mod store;

use praxis_memory::time::Timestamp;

use crate::audit::{Event, EventKind};

/// Now, as memory timestamps it.
pub fn now() -> Timestamp {
    Timestamp(crate::clock::now_ms().div_euclid(1000))
}

/// The audit record of a memory operation: `op` (proposed, decision, or a
/// review action: confirm, reject, …) on `id`, with what else it says in
/// `detail`.
pub fn audit_event(
    op: &str,
    memory_id: &str,
    reason: String,
    mut detail: serde_json::Map<String, serde_json::Value>,
) -> Event {
    detail.insert("op".into(), op.into());
    detail.insert("memory_id".into(), memory_id.into());
    let kind = if matches!(op, "proposed" | "decision") {
        EventKind::Memory
    } else {
        EventKind::Review
    };
    Event {
        reason: Some(reason),
        detail: Some(detail),
        ..Event::new(kind)
    }
}
