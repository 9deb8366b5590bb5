//! `praxis-run`'s arguments, parsed the way agents call a shell. Shared with
//! the hook adapters, which unwrap a command that already calls praxis-run.

use praxis_proto::Command;

/// Usage line of a run.
pub const USAGE: &str = "usage: praxis-run [--role R] [--session ID] [--runtime NAME] [--tool-call-id ID] [--approval-token TOKEN] [--timeout S] (-c 'CMD' | -- ARGV...)";

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
            "-h" | "--help" => return Err(String::new()),
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
