//! End-to-end tests drive the real binaries; see `tests/`.
