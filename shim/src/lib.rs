//! Thin clients of praxisd: `praxis-run` (the agent's tool) and `praxis` (the
//! operator CLI). They hold no authority; the daemon decides.

pub mod client;
pub mod explain;
pub mod operator;
