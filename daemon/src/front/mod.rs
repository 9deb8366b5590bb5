//! The front: what takes requests from outside. The server and its
//! connections (accepted, or handed in through the [`door`]), the hook
//! adapters' tool calls and notes ([`hooks`]), the judgment-memory API that
//! external judges call over HTTP ([`memory_api`]), the operator's commands,
//! and the operator's web console ([`console`]), which answers through the
//! same handlers.

pub mod console;
pub mod door;
pub mod fleet;
pub mod hooks;
pub mod http;
pub mod memory_api;
pub mod operator;
pub mod server;
