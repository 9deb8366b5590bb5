//! The audit store's one error type, below every part of the store that
//! returns it.

/// Why an audit operation failed. Every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("audit store {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("audit database refused WAL mode (journal_mode is {0})")]
    NotWal(String),
    #[error("audit database schema version {0} is newer than this praxisd understands")]
    NewerSchema(i64),
    #[error("audit chain head is broken at seq {seq}: {problem}; run `praxis audit verify`")]
    HeadBroken { seq: i64, problem: String },
    #[error("audit event rejected: {0}")]
    Rejected(String),
    #[error("audit batch not committed: {0}")]
    Commit(String),
    #[error("audit writer is not running")]
    WriterGone,
    #[error("audit writer thread could not start: {0}")]
    Spawn(std::io::Error),
    #[error("audit event field {field} is out of range")]
    OutOfRange { field: &'static str },
    #[error("audit row seq {seq} is malformed: {problem}")]
    Corrupt { seq: i64, problem: String },
    #[error("audit timestamp {0:?} is not RFC 3339")]
    BadTimestamp(String),
    #[error("audit JSON encoding: {0}")]
    Json(serde_json::Error),
    #[error("audit export write: {0}")]
    Export(std::io::Error),
    #[error("{0}; praxisd refuses all work until an operator acts (see praxis status)")]
    Lost(String),
}
