//! sandbox benchmark.

fn main() {}
