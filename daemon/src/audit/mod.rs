//! The audit store: an append-only, hash-chained SQLite event log.
