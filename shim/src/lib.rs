//! Thin clients of praxisd: `praxis-run` (the agent's tool) and `praxis` (the
//! operator CLI). They hold no authority; the daemon decides.

pub mod api;
pub mod args;
pub mod cancel;
pub mod client;
pub mod console;
pub mod contract;
pub mod deadline;
pub mod doctor;
pub mod exec;
pub mod explain;
pub mod fleet;
pub mod hook;
pub mod install;
pub mod judge;
pub mod mcp;
pub mod memory;
pub mod operator;
pub mod proposal;
pub mod reply;
pub mod session;
pub mod undo;
