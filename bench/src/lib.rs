//! Benchmarks live in `benches/`.

#![forbid(unsafe_code)]
