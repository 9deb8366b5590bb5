//! praxisd internals. The binary in `main.rs` is thin; the pipeline is in
//! [`pipeline`] and reads as its stages, each a module of [`stage`]. The
//! values passed between stages are in [`pipeline::gate`], below them.
//!
//! Layers, each importing only those below it: `server`, `conn`, `judge` and
//! [`operator`] take requests; [`pipeline`] runs one through the stages;
//! [`stage`] modules take values and return typed outcomes, never naming
//! another stage or the pipeline; [`spawn`] is the one path into the
//! sandbox; `state`, `audit`, `kill_switch`, `children`, `config` and the
//! small helpers are below all of them.
//!
//! The glue of a new subsystem follows the same layers: what it does per
//! request is a module of [`stage`] called by the pipeline (egress
//! destinations, memory recall, snapshots), what operators ask of it a
//! module of [`operator`], and an API of its own a module beside `server`;
//! its decisions stay in its own I/O-free crate. The session control
//! plane's glue, [`session`], is fed by both `judge` (hook events) and the
//! pipeline (runs with a session), so it sits below both, beside `state`.

pub mod children;
pub mod clock;
pub mod config;
pub mod conn;
pub mod egress;
pub mod errors;
pub mod front;
pub mod ids;
pub mod paths;
pub mod pinned;
pub mod pipeline;
pub mod private_tmp;
pub mod program_cache;
pub mod recovery;
pub mod reload;
pub mod socket_relay;
pub mod spawn;
pub mod stage;
pub mod state;
pub mod store;
