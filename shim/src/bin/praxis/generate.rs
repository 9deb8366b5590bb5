//! `praxis generate`: man pages (clap_mangen) and shell completions
//! (clap_complete) for the three binaries, written at packaging time.
//!
//! `praxis` describes itself from its clap definition. `praxis-run` parses its
//! arguments by hand (it must accept what agents pass to a shell), and
//! praxisd's definition lives in its own binary, so both are described here
//! as clap commands with the interface their usage texts document.

use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, Args};
use clap_complete::Shell;

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("cannot create {path}: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write the man pages of {name}: {source}")]
    Man {
        name: String,
        source: std::io::Error,
    },
    #[error("cannot write the {shell} completions of {name}: {source}")]
    Completion {
        name: String,
        shell: Shell,
        source: std::io::Error,
    },
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory for man pages (section 1, one per command and subcommand).
    #[arg(long)]
    man: Option<PathBuf>,
    /// Directory for bash, zsh and fish completions.
    #[arg(long)]
    completions: Option<PathBuf>,
}

/// Exit statuses of `praxis-run`, shared by its man page sections.
const RUN_EXIT_STATUS: &str = "Exit status: the command's own; 128+n when it died of signal n; \
123 outcome unknown (praxisd ended after the command started); 124 on timeout; 125 HOLD (also every fail-closed error, an unreachable daemon included); \
126 STOP. A refused command writes one JSON audit-signal line on stderr, then one sentence.";

/// `praxis-run` as its usage texts document it.
fn praxis_run() -> clap::Command {
    let session = || {
        Arg::new("session")
            .long("session")
            .value_name("ID")
            .help("Session id for the retry budget and the audit record (else PRAXIS_SESSION)")
    };
    let runtime = || {
        Arg::new("runtime")
            .long("runtime")
            .value_name("NAME")
            .help("Agent runtime name for the audit record (else PRAXIS_RUNTIME)")
    };
    let role = || {
        Arg::new("role")
            .long("role")
            .value_name("ROLE")
            .help("Role to claim (system mode: only roles the caller's uid may claim)")
    };
    let tool_call_id = || {
        Arg::new("tool-call-id")
            .long("tool-call-id")
            .value_name("ID")
            .help("The runtime's id of this tool call (else PRAXIS_TOOL_CALL_ID)")
    };
    let shell = || {
        Arg::new("command")
            .short('c')
            .value_name("CMD")
            .help("A shell command line; every simple command in it is judged")
    };
    let argv = || {
        Arg::new("argv")
            .num_args(1..)
            .last(true)
            .value_name("ARGV")
            .help("A program and its arguments, after --")
    };
    clap::Command::new("praxis-run")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The agent's only shell tool: every command is judged by praxisd before it runs, then runs sandboxed and audited")
        .long_about(format!(
            "praxis-run sends a command to praxisd, which decides ALLOW, HOLD or STOP before anything runs, \
runs what it allows under Landlock and seccomp, and streams its redacted output back. \
It may be called as a shell (-c, -lc, -l -c, -ic). In user mode it starts praxisd itself when none runs.\n\n{RUN_EXIT_STATUS}"
        ))
        .args_conflicts_with_subcommands(true)
        .args([
            role(),
            session(),
            runtime(),
            tool_call_id(),
            Arg::new("timeout").long("timeout").value_name("SECONDS").help("End the command after this many seconds (exit 124)"),
            Arg::new("login").short('l').action(ArgAction::SetTrue).help("Accepted for shell compatibility; no effect"),
            shell(),
            argv(),
        ])
        .subcommand(
            clap::Command::new("hook")
                .about("Agent-runtime hook: one event JSON on stdin, the answer on stdout")
                .arg(Arg::new("runtime").required(true).value_parser(["claude-code", "codex"]).help("Which runtime's hook protocol")),
        )
        .subcommand(
            clap::Command::new("judge")
                .about("Ask praxisd for a decision without running anything (audited). Exit 0 ALLOW, 125 HOLD, 126 STOP")
                .args([Arg::new("json").long("json").action(ArgAction::SetTrue).help("One JSON object"), session(), runtime(), tool_call_id(), shell(), argv()]),
        )
        .subcommand(
            clap::Command::new("plan")
                .about("Validate a planner's output (stdin) against a contract, e.g. guardian01.v1")
                .args([Arg::new("contract").long("contract").required(true).value_name("ID").help("Contract id"), session(), runtime()]),
        )
        .subcommand(
            clap::Command::new("mcp")
                .about("MCP server on stdin/stdout whose shell tool runs through praxisd")
                .args([session(), role()]),
        )
}

/// `praxisd` as its clap definition declares it.
fn praxisd() -> clap::Command {
    let state = Arg::new("state")
        .long("state")
        .value_name("DIR")
        .help("State directory holding audit.db (default: the mode's)");
    clap::Command::new("praxisd")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Praxis execution authority daemon")
        .long_about(
            "praxisd holds the policy, the credentials, the audit store and the kill switch, and runs the \
only pipeline that executes agents' commands. System mode: socket /run/praxis/praxisd.sock, \
state /var/lib/praxis, config /etc/praxis. User mode: socket under $XDG_RUNTIME_DIR/praxis, state under \
$XDG_STATE_HOME/praxis, config under $XDG_CONFIG_HOME/praxis. SIGHUP reloads the policy; SIGTERM drains. \
Log level from PRAXIS_LOG.",
        )
        .args([
            Arg::new("user").long("user").action(ArgAction::SetTrue).conflicts_with("system").help("Per-user daemon (the default without a system config)"),
            Arg::new("system").long("system").action(ArgAction::SetTrue).help("System daemon: socket under /run/praxis, state under /var/lib/praxis"),
            Arg::new("detach").long("detach").action(ArgAction::SetTrue).help("Leave the caller's session (used when praxis-run starts the daemon)"),
        ])
        .subcommand(
            clap::Command::new("verify")
                .about("Verify the audit chain offline, without a running daemon")
                .arg(state),
        )
}

fn create(dir: &Path) -> Result<(), GenerateError> {
    std::fs::create_dir_all(dir).map_err(|source| GenerateError::Dir {
        path: dir.display().to_string(),
        source,
    })
}

/// Writes what `args` asks for, for `praxis` (given) and the two others.
pub fn generate(praxis: clap::Command, args: &GenerateArgs) -> Result<(), GenerateError> {
    let commands = [praxis, praxis_run(), praxisd()];
    if let Some(dir) = &args.man {
        create(dir)?;
        for cmd in &commands {
            clap_mangen::generate_to(cmd.clone(), dir).map_err(|source| GenerateError::Man {
                name: cmd.get_name().to_owned(),
                source,
            })?;
        }
    }
    if let Some(dir) = &args.completions {
        create(dir)?;
        for cmd in &commands {
            let name = cmd.get_name().to_owned();
            for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
                clap_complete::generate_to(shell, &mut cmd.clone(), &name, dir).map_err(
                    |source| GenerateError::Completion {
                        name: name.clone(),
                        shell,
                        source,
                    },
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_built_commands_are_consistent() {
        praxis_run().debug_assert();
        praxisd().debug_assert();
    }

    #[test]
    fn writes_pages_and_completions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = GenerateArgs {
            man: Some(dir.path().join("man")),
            completions: Some(dir.path().join("completions")),
        };
        let praxis = clap::Command::new("praxis").subcommand(clap::Command::new("status"));
        generate(praxis, &args).expect("generate");
        for page in [
            "praxis.1",
            "praxis-status.1",
            "praxis-run.1",
            "praxis-run-hook.1",
            "praxisd.1",
            "praxisd-verify.1",
        ] {
            let text = std::fs::read_to_string(dir.path().join("man").join(page)).expect(page);
            assert!(
                text.starts_with(".ie") || text.contains(".TH"),
                "{page}: {text}"
            );
        }
        let run_page = std::fs::read_to_string(dir.path().join("man/praxis-run.1")).expect("page");
        assert!(run_page.contains("125 HOLD"), "{run_page}");
        for file in [
            "praxis.bash",
            "_praxis",
            "praxis.fish",
            "praxis-run.bash",
            "praxisd.fish",
        ] {
            let text =
                std::fs::read_to_string(dir.path().join("completions").join(file)).expect(file);
            assert!(!text.is_empty(), "{file}");
        }
    }
}
