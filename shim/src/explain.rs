//! `praxis explain` and `praxis policy`: judge locally, no daemon needed.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ExplainArgs {}

#[derive(Debug, Subcommand)]
pub enum PolicyCmd {}

pub fn explain(args: ExplainArgs) -> i32 {
    let _ = args;
    125
}

pub fn policy(cmd: PolicyCmd) -> i32 {
    match cmd {}
}
