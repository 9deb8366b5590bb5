//! Praxis judgment memory: the pure part. No I/O, no clock (now is a
//! parameter), no storage: the daemon stores memories and events in SQLite
//! and serves the judge API; everything it decides with them is here.
//!
//! - [`contract`]: the four OpenBrain judge contracts, strictly parsed.
//! - [`memory`]: a stored memory, its labels, and [`memory::propose`].
//! - [`lesson`]: structured matchers over judged actions, and the generaliser.
//! - [`relax`]: whether a memory may turn a HOLD into an ALLOW.
//! - [`recall`]: recall for the judge API.
//! - [`review`]: the review queue's state machine.
//! - [`writeback`]: the memories a judge decision proposes.
//! - [`intake`]: refusing secret-like data and transcript-sized dumps.
//! - [`event`], [`inspect`], [`replay`], [`metrics`]: history and what is
//!   computed from it.

#![forbid(unsafe_code)]

pub mod contract;
pub mod event;
pub mod inspect;
pub mod intake;
pub mod lesson;
pub mod memory;
pub mod metrics;
pub mod recall;
pub mod relax;
pub mod replay;
pub mod review;
pub mod time;
pub mod writeback;
