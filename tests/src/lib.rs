//! End-to-end tests drive the real binaries; see `tests/`. The library holds
//! what the source-reading tests of several crates share.

#![forbid(unsafe_code)]

pub mod module_graph;
