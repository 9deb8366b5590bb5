//! praxisd internals. The binary in `main.rs` is thin; the pipeline is in
//! [`pipeline`] and reads as its stages.

pub mod audit;
