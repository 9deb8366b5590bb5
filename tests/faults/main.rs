//! Fault injection: the clients and the daemon under faults, driven for real.
//! Every fault must end in a refusal or an honest "outcome unknown", in
//! bounded time, with the record kept; never in a command run undecided.

#[path = "../tests/common/mod.rs"]
mod common;

mod daemon_killed;
mod full_disk;
mod hung_daemon;
mod idle;
mod store;
