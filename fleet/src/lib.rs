//! The fleet store: many praxisd hosts, one PostgreSQL control plane.
//!
//! Execution stays local; the store carries what needs more than one host:
//! who the hosts are and when each was last seen, a kill switch for all of
//! them, holds an operator on any machine can approve or deny, policy
//! revisions every host loads, shared judgment memory with its review
//! queue, and a copy of each host's audit chain. Hosts
//! and operators log in as separate database roles; row-level security
//! keeps a host to its own rows (`migrations/`).

#![forbid(unsafe_code)]

pub mod host;
pub mod link;
pub mod memory;
pub mod operator;
pub mod policy;
pub mod schema;

pub use link::{LinkError, Notices, connect};

/// The channel hosts listen on.
pub const CHANNEL: &str = "praxis_fleet";
