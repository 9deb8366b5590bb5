//! The front: what takes requests from outside. The server and its
//! connections, the hook adapters' API, the HTTP API and the operator's
//! commands.

pub mod hooks;
pub mod http;
pub mod operator;
pub mod server;
