//! `praxis-run`: the agent's only shell tool. Every command goes to praxisd,
//! which decides before anything runs and runs what it allows in a sandbox.
//!
//! `praxis-run [--role R] [--session ID] [--timeout S] (-c 'CMD' | -- ARGV…)`,
//! also callable as a shell (`-c`, `-lc`, `-l -c`, `-ic`).
//!
//! Exit status: the command's; 128+n for signal n; 124 timeout; 125 HOLD and
//! every fail-closed error; 126 STOP.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

use nix::sys::signal::{SigSet, Signal};
use praxis_proto::frame::Frame;
use praxis_proto::{
    ClientMsg, Command, DecisionFrame, ExecRequest, ExitStatus, ServerMsg, Verdict,
};
use praxis_shim::client::{self, ClientError};

const EXIT_TIMEOUT: i32 = 124;
const EXIT_HOLD: i32 = 125;
const EXIT_STOP: i32 = 126;

const USAGE: &str =
    "usage: praxis-run [--role R] [--session ID] [--timeout S] (-c 'CMD' | -- ARGV...)";

#[derive(Debug, Default)]
struct Args {
    role: Option<String>,
    session: Option<String>,
    timeout: Option<u64>,
    command: Option<Command>,
}

/// Parses the arguments the way agents call a shell: long options, short
/// clusters of `l`/`i`/`c` (`-lc`), `-c STRING`, or `--` then an argv.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = Args::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--role" => out.role = Some(value("--role")?),
            "--session" => out.session = Some(value("--session")?),
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

/// Writes the audit signal for a command that did not run: one JSON object on
/// its own stderr line, then one plain sentence for the model reading it.
fn signal_refusal(verdict: Verdict, reason: &str, frame: Option<&DecisionFrame>) {
    let json = serde_json::json!({
        "decision": verdict.as_str(),
        "execution_prevented": true,
        "reason": reason,
        "request_id": frame.map(|f| f.request_id.as_str()),
        "tier": frame.map(|f| f.tier.as_str()),
        "rule_ids": frame.map(|f| f.rule_ids.clone()).unwrap_or_default(),
        "approve_with": frame.and_then(|f| f.approve_with.as_deref()),
    });
    let sentence = match (verdict, frame.and_then(|f| f.approve_with.as_deref())) {
        (Verdict::Stop, _) => format!(
            "praxis: STOP - this command was not run and cannot be approved ({reason}); do not retry it, choose another approach."
        ),
        (_, Some(approve)) => format!(
            "praxis: HOLD - this command was not run ({reason}); an operator can allow it with `{approve}`, after which the same command may be run again."
        ),
        _ => format!("praxis: HOLD - this command was not run ({reason}); nothing was executed."),
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{json}");
    let _ = writeln!(err, "{sentence}");
}

fn fail_closed(e: &ClientError) -> i32 {
    signal_refusal(Verdict::Hold, &e.to_string(), None);
    EXIT_HOLD
}

/// Blocks SIGINT/SIGTERM/SIGHUP here and turns each into a cancel frame on a
/// second handle of the connection; the daemon then ends the command.
fn forward_signals(stream: &UnixStream) {
    let mut set = SigSet::empty();
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(sig);
    }
    if set.thread_block().is_err() {
        return;
    }
    let Ok(cancel) = stream.try_clone() else {
        return;
    };
    std::thread::spawn(move || {
        while set.wait().is_ok() {
            if client::send(&cancel, &ClientMsg::Cancel).is_err() {
                return;
            }
        }
    });
}

fn run(args: Args) -> i32 {
    let Some(command) = args.command else {
        eprintln!("{USAGE}");
        return EXIT_HOLD;
    };
    let cwd_dir = match std::fs::File::open(".") {
        Ok(dir) => dir,
        Err(e) => return fail_closed(&ClientError::Io(e)),
    };
    let stdin = match client::stdin_fd() {
        Ok(fd) => fd,
        Err(e) => return fail_closed(&ClientError::Io(e)),
    };
    let request = ExecRequest {
        command,
        cwd: std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        role: args.role,
        session: args
            .session
            .or_else(|| std::env::var("PRAXIS_SESSION").ok()),
        runtime: std::env::var("PRAXIS_RUNTIME").ok(),
        tool_call_id: std::env::var("PRAXIS_TOOL_CALL_ID").ok(),
        env: praxis_proto::forwarded_env(),
        timeout_secs: args.timeout,
    };
    let stream = match client::connect() {
        Ok(stream) => stream,
        Err(e) => return fail_closed(&e),
    };
    forward_signals(&stream);
    let fds = [stdin.as_raw_fd(), cwd_dir.as_raw_fd()];
    if let Err(e) = client::send_first(&stream, &ClientMsg::Exec(request), &fds) {
        return fail_closed(&e);
    }
    drop((stdin, cwd_dir));
    match stream_replies(&stream) {
        Ok(code) => code,
        Err(e) => fail_closed(&e),
    }
}

/// Reads the decision, then output until the exit frame.
fn stream_replies(stream: &UnixStream) -> Result<i32, ClientError> {
    let lost = |e: ClientError| match e {
        ClientError::Protocol(praxis_proto::FrameError::Closed) => {
            ClientError::Refused(String::from(
                "praxisd closed the connection before the command finished (daemon stopped?)",
            ))
        }
        other => other,
    };
    let decision = match client::recv(stream)
        .map_err(lost)?
        .parse_message::<ServerMsg>()?
    {
        ServerMsg::Decision(d) => d,
        ServerMsg::Error(e) => return Err(ClientError::Refused(e.reason)),
        _ => {
            return Err(ClientError::Refused(String::from(
                "unexpected reply before the decision",
            )));
        }
    };
    match decision.decision {
        Verdict::Allow => {}
        Verdict::Hold => {
            signal_refusal(Verdict::Hold, &decision.reason, Some(&decision));
            return Ok(EXIT_HOLD);
        }
        Verdict::Stop => {
            signal_refusal(Verdict::Stop, &decision.reason, Some(&decision));
            return Ok(EXIT_STOP);
        }
    }
    let mut stdout = std::io::stdout().lock();
    loop {
        match client::recv(stream).map_err(lost)? {
            // A closed stdout (the agent stopped reading) must not stop us
            // from reaching the exit frame.
            Frame::Stdout(bytes) => {
                let _ = stdout.write_all(&bytes).and_then(|()| stdout.flush());
            }
            Frame::Stderr(bytes) => {
                let _ = std::io::stderr().write_all(&bytes);
            }
            message @ Frame::Message(_) => match message.parse_message::<ServerMsg>()? {
                ServerMsg::Exit(exit) => {
                    if let Some(why) = &exit.killed_because {
                        eprintln!("praxis: the command was ended: {why}");
                    }
                    return Ok(match exit.status {
                        ExitStatus::Code(code) => code,
                        ExitStatus::Signal(sig) => 128 + sig,
                        ExitStatus::TimedOut => EXIT_TIMEOUT,
                        ExitStatus::Failed(why) => return Err(ClientError::Refused(why)),
                    });
                }
                ServerMsg::Error(e) => return Err(ClientError::Refused(e.reason)),
                _ => {
                    return Err(ClientError::Refused(String::from(
                        "unexpected reply during output",
                    )));
                }
            },
        }
    }
}

fn main() {
    let code = match parse(std::env::args().skip(1)) {
        Ok(args) => run(args),
        Err(why) => {
            if !why.is_empty() {
                eprintln!("praxis-run: {why}");
            }
            eprintln!("{USAGE}");
            EXIT_HOLD
        }
    };
    std::process::exit(code);
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
        let a = p(&["--role", "ci", "--timeout", "5", "--", "git", "status"]).unwrap();
        assert_eq!(a.role.as_deref(), Some("ci"));
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
