//! praxisd internals. The binary in `main.rs` is thin. The folders are the
//! layers, each importing only those below it (`docs/architecture.md`,
//! `tests/layers.rs`):
//!
//! - [`front`] takes requests: the server, the hook adapters, the judge
//!   API, the operator's commands;
//! - [`pipeline`] is the one spine, for a command and a judged tool call
//!   alike, and the only module that names every stage;
//! - [`stage`] modules take values and return typed outcomes, never naming
//!   another stage or the spine;
//! - [`store`] keeps state on disk: audit, approvals, credentials, memory,
//!   sessions;
//! - the [`gate`] holds the values passed between stages, below every
//!   layer.
//!
//! The modules at the root are the ground any layer may use (config, the
//! wire, ids, paths, [`spawn`], the one path into the sandbox, and
//! [`state`], the daemon's shared state); none names the front or the
//! pipeline.
//!
//! The glue of a new subsystem follows the same layers: what it does per
//! request is a stage the pipeline calls, what it keeps a store, what
//! operators ask of it a module of `front::operator`; its decisions stay in
//! its own I/O-free crate.

pub mod children;
pub mod clock;
pub mod config;
pub mod conn;
pub mod egress;
pub mod errors;
pub mod front;
pub mod gate;
pub mod ids;
pub mod logins;
pub mod paths;
pub mod pinned;
pub mod pipeline;
pub mod private_tmp;
pub mod program_cache;
pub mod recovery;
pub mod reload;
pub mod resident;
pub mod socket_relay;
pub mod spawn;
pub mod stage;
pub mod state;
pub mod store;
