//! The stores: everything that speaks SQLite or keeps state on disk. The
//! audit chain, approvals, credentials, memory and sessions.

pub mod approvals;
pub mod audit;
pub mod credential_rows;
pub mod credentials;
pub mod memory;
pub mod sessions;
