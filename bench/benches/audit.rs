//! audit benchmark.

fn main() {}
