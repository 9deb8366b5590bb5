//! `praxis`: the operator CLI.

use clap::{CommandFactory, Parser, Subcommand};
use praxis_shim::{explain, fleet, operator};

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
    /// The fleet store: many hosts' kill switch, holds and state (PostgreSQL).
    Fleet(fleet::FleetArgs),
    /// Check this machine, the daemon, the policy, the agent runtimes' hooks,
    /// the credentials and the disk, with a fix for each failure.
    Doctor {
        /// One JSON array of findings instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print shell completions for praxis (e.g. `praxis completions bash > ~/.local/share/bash-completion/completions/praxis`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the praxis man page (`praxis man | man -l -`).
    Man,
    /// Write man pages and shell completions (used when packaging).
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
}

fn main() {
    // Output piped into `head` ends quietly, as other command-line tools do.
    // SAFETY: restoring the default disposition of one signal before any
    // thread starts; no handler code is involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let code = match Cli::parse().cmd {
        Cmd::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "praxis", &mut std::io::stdout());
            0
        }
        Cmd::Man => match clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("praxis man: {e}");
                1
            }
        },
        Cmd::Explain(args) => explain::explain(args),
        Cmd::Policy(cmd) => explain::policy(cmd),
        Cmd::Operator(cmd) => operator::run(cmd),
        Cmd::Fleet(args) => fleet::run(args),
        Cmd::Doctor { json } => praxis_shim::doctor::run(json),
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
