//! policy benchmark.

fn main() {}
