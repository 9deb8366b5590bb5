//! redact benchmark.

fn main() {}
