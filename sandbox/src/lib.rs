//! Praxis sandbox: what is applied to a command's process between fork and
//! exec (Landlock, seccomp, capabilities, rlimits, environment), and the one
//! place a host process is spawned.

pub mod host;
