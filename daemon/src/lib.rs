//! praxisd internals. The binary in `main.rs` is thin; the pipeline is in
//! [`pipeline`] and reads as its stages, each a module of the same name.

pub mod approval;
pub mod audit;
pub mod audit_stage;
pub mod children;
pub mod config;
pub mod conn;
pub mod credentials;
pub mod errors;
pub mod execute;
pub mod ids;
pub mod judge;
pub mod kill_switch;
pub mod operator;
pub mod output;
pub mod parse;
pub mod pipeline;
pub mod policy;
pub mod preconditions;
pub mod recovery;
pub mod redact;
pub mod reload;
pub mod reversibility;
pub mod roles;
pub mod server;
pub mod state;
