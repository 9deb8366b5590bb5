//! Praxis policy: the pure function that turns a command into a decision.
//!
//! Nothing in this crate performs I/O. The daemon (or `praxis explain`) gathers a
//! [`Context`] snapshot of the host, and every decision is computed from the
//! request text plus that snapshot, so tests and benchmarks call it directly.
//!
//! The flow is two-phase so the caller knows what to look up on the host:
//! [`Policy::analyze`] parses the request into simple commands, the caller
//! fills a [`Context`] (including [`Analysis::programs`] resolved on `PATH`),
//! then [`Policy::decide`] returns the [`Decision`].

#![forbid(unsafe_code)]

pub mod cases;
pub mod classify;
pub mod context;
pub mod decision;
pub mod engine;
pub mod env;
pub mod lexical;
pub mod redact;
pub mod reversible;
pub mod rules;
pub mod shell;
pub mod sockets;
pub mod verdict;

pub use context::{Context, Resolution};
pub use decision::{CommandJudgment, CommandShape, Decision, Destination, Grants, Undo};
/// The built-in review surface, embedded in every binary.
pub const BUILTIN_PATTERNS: &str = include_str!("../patterns.toml");

pub use engine::{
    Analysis, CommandText, Limits, LoadError, Policy, Probes, Request, SandboxLists, Source,
};
pub use verdict::{Profile, Tier, Verdict};
