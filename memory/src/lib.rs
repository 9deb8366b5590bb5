//! Praxis judgment memory: the pure part. No I/O, no clock (now is a
//! parameter), no storage: the daemon stores memories and events in SQLite
//! and serves the judge API; everything it decides with them is here.

pub mod contract;
pub mod lesson;
pub mod memory;
pub mod relax;
pub mod time;
