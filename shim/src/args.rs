//! `praxis-run`'s arguments, parsed the way agents call a shell. Shared with
//! the hook adapters, which unwrap a command that already calls praxis-run.

use praxis_proto::Command;

/// Usage line of a run.
pub const USAGE: &str = "usage: praxis-run [--role R] [--session ID] [--runtime NAME] [--tool-call-id ID] [--approval-token TOKEN] [--timeout S] (-c 'CMD' | -- ARGV...)";

/// `praxis-run --help`: every form, the exit codes and the environment.
pub const HELP: &str = "\
praxis-run: the agent's shell tool. Every command is judged by praxisd before
it runs (ALLOW / HOLD / STOP), runs sandboxed, and is audited.

usage:
  praxis-run [OPTIONS] -c 'CMD'          run a shell string
  praxis-run [OPTIONS] -- ARGV...        run an argv
  praxis-run judge [--json] [--session S] [--runtime R] [--tool-call-id T] (-c 'CMD' | -- ARGV...)
                                         decide and audit without running
  praxis-run judge --proposal FILE|- [-c 'CMD' | -- ARGV...]
                                         judge an openbrain.judge.action_proposal.v1;
                                         answers an openbrain.judge.decision.v1
  praxis-run api (GET|POST) /v1/...      one judge API request (recall, write-back, ...);
                                         the body on stdin, the answer on stdout
  praxis-run hook (claude-code | codex | openclaw)
                                         a runtime's hook: the event JSON on stdin
  praxis-run mcp [--session S] [--role R]
                                         a stdio MCP server whose tool is this pipeline
  praxis-run plan --contract ID          check a planner's JSON on stdin (guardian01.v1)
  praxis-run --help | --version

options:
  --role R               role to claim (the daemon decides whether it may)
  --session ID           session for the retry budget and the audit (else PRAXIS_SESSION)
  --runtime NAME         agent runtime, for the audit (else PRAXIS_RUNTIME)
  --tool-call-id ID      the runtime's id of this call (else PRAXIS_TOOL_CALL_ID)
  --approval-token TOKEN one-time token of an approved prompt
  --timeout S            wall-clock limit in seconds (the policy may set a lower one)

exit status:
  the command's own; 128+N when it died of signal N (or this client got signal N)
  123  outcome unknown: praxisd ended after the command started
  124  the command hit its time limit
  125  HOLD: not run (also every fail-closed error, praxisd unreachable or silent)
  126  STOP: not run, and no approval can allow it

environment:
  PRAXIS_DECISION_TIMEOUT  seconds to wait for praxisd's decision before HOLD (default 10;
                           at most 25 in a Claude Code or Codex hook, whose timeout is 30)
";

/// Options and command of a run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Args {
    pub role: Option<String>,
    pub session: Option<String>,
    /// Agent runtime name for the audit record (else `PRAXIS_RUNTIME`).
    pub runtime: Option<String>,
    /// The runtime's id of this tool call (else `PRAXIS_TOOL_CALL_ID`).
    pub tool_call_id: Option<String>,
    /// A one-time approval token minted for this exact request and session
    /// (put there by the Claude Code hook's `ask` rewrite).
    pub approval_token: Option<String>,
    pub timeout: Option<u64>,
    pub command: Option<Command>,
    /// `--help` or `--version`: print it, run nothing.
    pub info: Option<Info>,
}

/// What `praxis-run` prints instead of running a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Info {
    Help,
    Version,
}

/// Parses the arguments the way agents call a shell: long options, short
/// clusters of `l`/`i`/`c` (`-lc`), `-c STRING`, or `--` then an argv.
pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = Args::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--role" => out.role = Some(value("--role")?),
            "--session" => out.session = Some(value("--session")?),
            "--runtime" => out.runtime = Some(value("--runtime")?),
            "--tool-call-id" => out.tool_call_id = Some(value("--tool-call-id")?),
            "--approval-token" => out.approval_token = Some(value("--approval-token")?),
            "--timeout" => {
                let v = value("--timeout")?;
                out.timeout = Some(
                    v.parse()
                        .map_err(|_| format!("--timeout: not a number of seconds: {v}"))?,
                );
            }
            "--login" | "--noprofile" | "--norc" => {}
            "--" => {
                let argv: Vec<String> = args.by_ref().collect();
                if argv.is_empty() {
                    return Err(String::from("no command after --"));
                }
                out.command = Some(Command::Argv(argv));
            }
            "-h" | "--help" => out.info = Some(Info::Help),
            "-V" | "--version" => out.info = Some(Info::Version),
            cluster
                if cluster.starts_with('-') && cluster.len() > 1 && !cluster.starts_with("--") =>
            {
                let flags = &cluster[1..];
                if let Some(bad) = flags.chars().find(|c| !matches!(c, 'l' | 'i' | 'c' | 'e')) {
                    return Err(format!("unknown option -{bad}"));
                }
                if flags.contains('c') {
                    let script = value("-c")?;
                    out.command = Some(Command::Shell(script));
                    // A shell would take the rest as $0 $1…; nothing may run that was not judged.
                    if args.next().is_some() {
                        return Err(String::from("arguments after -c STRING are not supported"));
                    }
                }
            }
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            _ => {
                let mut argv = vec![arg];
                argv.extend(args.by_ref());
                out.command = Some(Command::Argv(argv));
            }
        }
        if out.command.is_some() {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Args, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn accepts_shell_calling_conventions() {
        for form in [
            &["-c", "ls -la"][..],
            &["-lc", "ls -la"],
            &["-l", "-c", "ls -la"],
            &["-ic", "ls -la"],
        ] {
            assert_eq!(
                p(form).unwrap().command,
                Some(Command::Shell("ls -la".into())),
                "{form:?}"
            );
        }
        let a = p(&[
            "--role",
            "ci",
            "--approval-token",
            "pxa-00",
            "--timeout",
            "5",
            "--",
            "git",
            "status",
        ])
        .unwrap();
        assert_eq!(a.role.as_deref(), Some("ci"));
        assert_eq!(a.approval_token.as_deref(), Some("pxa-00"));
        assert_eq!(a.timeout, Some(5));
        assert_eq!(
            a.command,
            Some(Command::Argv(vec!["git".into(), "status".into()]))
        );
    }

    #[test]
    fn refuses_what_it_cannot_judge_whole() {
        assert!(p(&["-c", "echo $0", "x"]).is_err());
        assert!(p(&["-x"]).is_err());
        assert!(p(&["--"]).is_err());
        assert!(p(&["--timeout", "soon", "--", "true"]).is_err());
    }
}
