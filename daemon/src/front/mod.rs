//! The front: what takes requests from outside. The server and its
//! connections, the hook adapters' tool calls and notes ([`hooks`]), the
//! judgment-memory API that external judges call over HTTP
//! ([`memory_api`]), and the operator's commands.

pub mod fleet;
pub mod hooks;
pub mod memory_api;
pub mod operator;
pub mod server;
