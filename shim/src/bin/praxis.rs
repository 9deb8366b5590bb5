//! `praxis`: the operator CLI.

use clap::{CommandFactory, Parser, Subcommand};
use praxis_shim::{explain, operator};

#[path = "praxis/generate.rs"]
mod generate;

#[derive(Debug, Parser)]
#[command(
    name = "praxis",
    version,
    about = "Praxis operator CLI: explain decisions, trip the kill switch, read the audit log"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Judge a command locally and say why (no daemon needed).
    Explain(explain::ExplainArgs),
    /// Validate and test policy files.
    #[command(subcommand)]
    Policy(explain::PolicyCmd),
    #[command(flatten)]
    Operator(operator::OperatorCmd),
    /// Write man pages and shell completions (used when packaging).
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
}

fn main() {
    let code = match Cli::parse().cmd {
        Cmd::Explain(args) => explain::explain(args),
        Cmd::Policy(cmd) => explain::policy(cmd),
        Cmd::Operator(cmd) => operator::run(cmd),
        Cmd::Generate(args) => match generate::generate(Cli::command(), &args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("praxis generate: {e}");
                1
            }
        },
    };
    std::process::exit(code);
}
