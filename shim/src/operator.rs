//! Operator commands that talk to praxisd (kill switch, status, audit).

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum OperatorCmd {}

pub fn run(cmd: OperatorCmd) -> i32 {
    match cmd {}
}
