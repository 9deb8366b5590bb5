//! Shared judgment memory: memories of `workspace` or `org` visibility as
//! the store keeps them. The store does not read a memory's body; the
//! memory crate does, on the host and in the operator's CLI.

use serde::Serialize;
use serde_json::Value;

/// One memory, as a host proposes it and the store returns it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SharedMemory {
    pub id: String,
    /// `workspace` or `org`.
    pub visibility: String,
    pub workspace: String,
    /// Its review status, as the body has it.
    pub review: String,
    /// The whole memory, as JSON.
    pub body: Value,
}

/// A memory read back, with its last change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredMemory {
    #[serde(flatten)]
    pub memory: SharedMemory,
    /// The host that proposed it.
    pub host: String,
    /// Grows with every change.
    pub changed: i64,
    /// The login that changed it last.
    pub changed_by: String,
}

/// The columns [`stored`] reads, in its order.
pub(crate) const COLUMNS: &str =
    "id, visibility, workspace, review, body, host, changed, changed_by::text";

pub(crate) fn stored(r: &tokio_postgres::Row) -> StoredMemory {
    StoredMemory {
        memory: SharedMemory {
            id: r.get(0),
            visibility: r.get(1),
            workspace: r.get(2),
            review: r.get(3),
            body: r.get(4),
        },
        host: r.get(5),
        changed: r.get(6),
        changed_by: r.get(7),
    }
}
