//! `praxis-run`: the agent's only shell tool. Every command goes to praxisd,
//! which decides before anything runs and runs what it allows in a sandbox.
//!
//! `praxis-run [--role R] [--session ID] [--timeout S] (-c 'CMD' | -- ARGV…)`,
//! also callable as a shell (`-c`, `-lc`, `-l -c`, `-ic`).
//!
//! Agent-runtime subcommands (a program of the same name runs with `-- NAME`):
//! `hook claude-code|codex` (one hook event on stdin), `mcp` (stdio MCP
//! server), `plan --contract ID` (a planner output on stdin), `judge [--json]
//! (-c CMD | -- ARGV)` (the decision, audited, nothing run).
//!
//! Exit status: the command's; 128+n for signal n; 124 timeout; 125 HOLD and
//! every fail-closed error; 126 STOP.
//!
//! It starts once for every command and tool call an agent makes, so it
//! keeps its own entry point (see [`main`]).
#![no_main]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use praxis_memory::contract::ActionProposal;
use praxis_proto::{Command, DecisionFrame, ExecRequest, Subject, Verdict};
use praxis_shim::api;
use praxis_shim::args::{self, Args, HELP, Info, USAGE};
use praxis_shim::cancel;
use praxis_shim::client::{self, ClientError};
use praxis_shim::contract;
use praxis_shim::deadline;
use praxis_shim::exec::{self, EXIT_HOLD, EXIT_STOP, Outcome, Sink};
use praxis_shim::hook;
use praxis_shim::judge::{self, Caller};
use praxis_shim::mcp;
use praxis_shim::proposal;

/// What a hook event's buffer holds before it grows.
const HOOK_EVENT_ROOM: usize = 16 * 1024;

/// Writes the audit signal for a command that did not run: one JSON object on
/// its own stderr line, then one plain sentence for the model reading it.
fn signal_refusal(verdict: Verdict, reason: &str, frame: Option<&DecisionFrame>) {
    let json = exec::refusal_json(verdict, reason, frame);
    let stopped_by_operator =
        frame.is_some_and(|f| f.rule_ids.iter().any(|id| id == "kill_switch"));
    let sentence = match (verdict, frame.and_then(|f| f.approve_with.as_deref())) {
        (Verdict::Stop, _) if stopped_by_operator => {
            format!("praxis: STOP - work is stopped by an operator; nothing was run ({reason}).")
        }
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

/// A HOLD this client gives on its own: reported to the agent and recorded
/// where an operator sees it (praxisd did not decide, so it has no record).
fn hold_undecided(e: &ClientError, runtime: Option<&str>, session: Option<&str>) -> i32 {
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if !matches!(e, ClientError::OutcomeUnknown(_)) {
        client::spill_refusal(&e.to_string(), &cwd, runtime, session);
    }
    fail_closed(e)
}

fn fail_closed(e: &ClientError) -> i32 {
    if let ClientError::OutcomeUnknown(_) = e {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", exec::outcome_unknown_json(&e.to_string()));
        let _ = writeln!(
            err,
            "praxis: {e}; the command may have run, partly or wholly: check before running it again (praxis audit show)."
        );
        return deadline::EXIT_OUTCOME_UNKNOWN;
    }
    signal_refusal(Verdict::Hold, &e.to_string(), None);
    EXIT_HOLD
}

/// Makes SIGINT/SIGTERM/SIGHUP cancel the command on `stream` (see
/// [`cancel`]); where the handlers cannot be installed, a signal ends this
/// client as it would any process, and the daemon ends the command when the
/// connection closes.
fn forward_signals(stream: &UnixStream) {
    if let Err(e) = cancel::forward_signals(stream) {
        eprintln!("praxis: {e}");
    }
}

/// Streams output to this process's stdout and stderr.
struct Terminal;

impl Sink for Terminal {
    // A closed stdout (the agent stopped reading) must not stop us from
    // reaching the exit frame.
    fn stdout(&mut self, bytes: &[u8]) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(bytes).and_then(|()| out.flush());
    }

    fn stderr(&mut self, bytes: &[u8]) {
        let _ = std::io::stderr().write_all(bytes);
    }

    /// An advisory line on stderr, between the command's own lines.
    fn steer(&mut self, text: &str) {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

fn run(args: Args) -> i32 {
    let Some(command) = args.command else {
        eprintln!("{USAGE}");
        return EXIT_HOLD;
    };
    client::knock_early();
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
        runtime: args
            .runtime
            .or_else(|| std::env::var("PRAXIS_RUNTIME").ok()),
        tool_call_id: args
            .tool_call_id
            .or_else(|| std::env::var("PRAXIS_TOOL_CALL_ID").ok()),
        env: praxis_proto::forwarded_env(praxis_policy::env::forwarded),
        timeout_secs: args.timeout,
        approval_token: args.approval_token,
    };
    let (runtime, session) = (request.runtime.clone(), request.session.clone());
    let undecided = |e: &ClientError| hold_undecided(e, runtime.as_deref(), session.as_deref());
    match exec::run(request, stdin, cwd_dir, &mut Terminal, forward_signals) {
        Ok(outcome) => {
            match &outcome {
                Outcome::Refused(frame) => {
                    signal_refusal(frame.decision, &frame.reason, Some(frame));
                }
                Outcome::Exited(exit) => {
                    if let Some(why) = &exit.killed_because {
                        eprintln!("praxis: the command was ended: {why}");
                    }
                }
            }
            outcome.exit_code().unwrap_or_else(|e| fail_closed(&e))
        }
        Err(e) => undecided(&e),
    }
}

/// A hook adapter's handler, and its answer to an error outside it, in the
/// shape of the event named (when it was read).
type HookFn = fn(&str) -> hook::Answer;
type FailFn = fn(Option<&str>, String) -> hook::Answer;

/// `praxis-run hook claude-code|codex|openclaw`: one event on stdin, the answer on stdout.
fn run_hook(rest: &[String]) -> i32 {
    // Claude Code and Codex stop waiting at the timeout `praxis install`
    // wrote; the OpenClaw plugin sets its own deadline and kills us at it.
    let (handle, fail, capped): (HookFn, FailFn, bool) = match rest {
        [runtime] if runtime == "claude-code" => (hook::claude::handle, hook::claude::fail, true),
        [runtime] if runtime == "codex" => (hook::codex::handle, hook::codex::fail, true),
        [runtime] if runtime == "openclaw" => (hook::openclaw::handle, hook::openclaw::fail, false),
        _ => {
            eprintln!("usage: praxis-run hook (claude-code | codex | openclaw) < EVENT_JSON");
            return hook::EXIT_BLOCK;
        }
    };
    if capped && let Some(asked) = deadline::cap(deadline::HOOK_DECISION_MAX) {
        eprintln!(
            "praxis-run: warning: {}={} s does not fit the {} s hook timeout that `praxis install` writes; waiting at most {} s",
            deadline::ENV,
            asked.as_secs_f64(),
            deadline::HOOK_TIMEOUT.as_secs(),
            deadline::HOOK_DECISION_MAX.as_secs()
        );
    }
    // A backstop past the socket deadline: whatever the hook is stuck in, it
    // answers the runtime's deny before the runtime's own timeout.
    let limit = deadline::decision() + HOOK_SLACK;
    let expired = |event: Option<&str>| {
        last_word(&fail(
            event,
            format!(
                "praxisd did not decide within {} s, so the tool does not run (set {} to change the deadline)",
                limit.as_secs_f64(),
                deadline::ENV
            ),
        ))
    };
    let _alarm = match deadline::Alarm::arm(limit, expired(None)) {
        Ok(alarm) => alarm,
        Err(e) => {
            let answer = fail(None, e.to_string());
            print_answer(&answer);
            return answer.code;
        }
    };
    client::knock_early();
    // Room for a usual event at once: grown from empty, a read takes a
    // system call for every doubling.
    let mut input = String::with_capacity(HOOK_EVENT_ROOM);
    let answer = match std::io::stdin().read_to_string(&mut input) {
        Ok(_) => {
            if let Some(name) = hook::event_name(&input) {
                deadline::Alarm::say(expired(Some(&name)));
            }
            handle(&input)
        }
        Err(e) => fail(None, format!("unreadable hook event on stdin: {e}")),
    };
    if !deadline::answer_once(|| print_answer(&answer)) {
        // The alarm answered and is ending the process.
        loop {
            std::thread::park();
        }
    }
    answer.code
}

/// An answer as the bytes [`print_answer`] writes, for the alarm.
fn last_word(answer: &hook::Answer) -> deadline::LastWord {
    let line = |text: &Option<String>| {
        text.as_ref()
            .map(|t| format!("{t}\n").into_bytes())
            .unwrap_or_default()
    };
    deadline::LastWord {
        stdout: line(&answer.stdout),
        stderr: line(&answer.stderr),
        code: answer.code,
    }
}

/// The socket deadline fires first with its own reason; the watchdog only
/// when something else hangs (a connect, the auto-start lock).
const HOOK_SLACK: std::time::Duration = std::time::Duration::from_secs(2);

fn print_answer(answer: &hook::Answer) {
    if let Some(out) = &answer.stdout {
        println!("{out}");
    }
    if let Some(err) = &answer.stderr {
        eprintln!("{err}");
    }
}

/// Options of the subcommands that act for an agent runtime.
#[derive(Debug, Default)]
struct SubOpts {
    caller: Caller,
    contract: Option<String>,
    /// `judge`: an action proposal's file (`-` for stdin).
    proposal: Option<String>,
    json: bool,
    /// What is left after the options (for `judge`: the command).
    rest: Vec<String>,
}

fn sub_opts(args: &[String], usage: &str) -> Result<SubOpts, i32> {
    let mut out = SubOpts::default();
    let mut it = args.iter().cloned();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next().ok_or_else(|| {
                eprintln!("praxis-run: {arg} needs a value\n{usage}");
                EXIT_HOLD
            })
        };
        match arg.as_str() {
            "--contract" => out.contract = Some(value()?),
            "--proposal" => out.proposal = Some(value()?),
            "--session" => out.caller.session = Some(value()?),
            "--runtime" => out.caller.runtime = Some(value()?),
            "--tool-call-id" => out.caller.tool_call_id = Some(value()?),
            "--role" => out.caller.role = Some(value()?),
            "--json" => out.json = true,
            _ => {
                out.rest.push(arg);
                out.rest.extend(it);
                break;
            }
        }
    }
    out.caller.session = out
        .caller
        .session
        .or_else(|| std::env::var("PRAXIS_SESSION").ok());
    out.caller.runtime = out
        .caller
        .runtime
        .or_else(|| std::env::var("PRAXIS_RUNTIME").ok());
    Ok(out)
}

/// `praxis-run plan --contract ID`: a planner output on stdin, the verdict on stdout.
fn run_plan(args: &[String]) -> i32 {
    const PLAN_USAGE: &str =
        "usage: praxis-run plan --contract ID [--session S] [--runtime R] < PLAN_JSON";
    let opts = match sub_opts(args, PLAN_USAGE) {
        Ok(opts) => opts,
        Err(code) => return code,
    };
    let (Some(id), true) = (&opts.contract, opts.rest.is_empty()) else {
        eprintln!("{PLAN_USAGE}");
        return EXIT_HOLD;
    };
    let mut text = String::new();
    let verdict = match std::io::stdin().read_to_string(&mut text) {
        Ok(_) => contract::plan(id, &text, &opts.caller),
        // Not UTF-8 cannot be JSON: checked as empty text is checked, vetoed.
        Err(_) => contract::plan(id, "\u{0}", &opts.caller),
    };
    println!("{}", verdict.json);
    verdict.code
}

/// `praxis-run judge [--json] (-c CMD | -- ARGV)`: the daemon's decision on a
/// command, audited, without running it. Exit 0 ALLOW, 125 HOLD, 126 STOP.
/// With `--proposal FILE|-`: an action proposal judged, answered as a judge
/// decision document.
fn run_judge(args: &[String]) -> i32 {
    const JUDGE_USAGE: &str = "usage: praxis-run judge [--json] [--session S] [--runtime R] [--tool-call-id T] (-c 'CMD' | -- ARGV...)\n       praxis-run judge --proposal FILE|- [--session S] [--runtime R] [-c 'CMD' | -- ARGV...]";
    let opts = match sub_opts(args, JUDGE_USAGE) {
        Ok(opts) => opts,
        Err(code) => return code,
    };
    let command = match args::parse(opts.rest.into_iter()) {
        Ok(Args {
            command,
            info: None,
            ..
        }) => command,
        _ => {
            eprintln!("{JUDGE_USAGE}");
            return EXIT_HOLD;
        }
    };
    if let Some(source) = &opts.proposal {
        return judge_proposal(source, command, &opts.caller);
    }
    let Some(command) = command else {
        eprintln!("{JUDGE_USAGE}");
        return EXIT_HOLD;
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let judged = judge::judge(Subject::Command { command }, &cwd, &opts.caller);
    let (json, code) = match &judged {
        Ok(frame) if frame.decision == Verdict::Allow => (
            serde_json::json!({
                "decision": "ALLOW",
                "reason": frame.reason,
                "request_id": frame.request_id,
                "tier": frame.tier,
                "rule_ids": frame.rule_ids,
            }),
            0,
        ),
        Ok(frame) => (
            exec::refusal_json(frame.decision, &frame.reason, Some(frame)),
            if frame.decision == Verdict::Stop {
                EXIT_STOP
            } else {
                EXIT_HOLD
            },
        ),
        Err(e) => (
            exec::refusal_json(Verdict::Hold, &e.to_string(), None),
            EXIT_HOLD,
        ),
    };
    if opts.json {
        println!("{json}");
    } else {
        println!(
            "{}: {}",
            json["decision"].as_str().unwrap_or("HOLD"),
            json["reason"].as_str().unwrap_or("")
        );
    }
    code
}

/// `praxis-run judge --proposal SOURCE`: the proposal read and checked
/// strictly, refused when it carries secret-like data or transcript-sized
/// text (a refusal names the field), judged by praxisd, and answered
/// as an `openbrain.judge.decision.v1` document on stdout.
fn judge_proposal(source: &str, command: Option<Command>, caller: &Caller) -> i32 {
    let text = if source == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        std::fs::read_to_string(source)
    };
    let parsed = text
        .map_err(|e| (None, format!("{source}: {e}")))
        .and_then(|text| {
            praxis_memory::contract::parse::<ActionProposal>(&text)
                .map_err(|e| (e.field_path().map(str::to_owned), e.to_string()))
        })
        .and_then(|proposal| {
            proposal::screened(&proposal)
                .map(|()| proposal)
                .map_err(|e| (e.field().map(str::to_owned), e.to_string()))
        });
    let proposal = match parsed {
        Ok(proposal) => proposal,
        Err((field, message)) => {
            println!(
                "{}",
                serde_json::json!({"error": {"message": message, "field": field}})
            );
            return EXIT_HOLD;
        }
    };
    let mut caller = caller.clone();
    caller.runtime = caller
        .runtime
        .or_else(|| Some(proposal.runtime.name.clone()));
    caller.tool = Some(proposal.tool.name.clone());
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let judged = judge::judge(proposal::subject(&proposal, command), &cwd, &caller);
    let decision = proposal::decision(&proposal, judged.as_ref().map_err(ToString::to_string));
    // Every refusal also carries the audit signal, as for a command.
    if decision.decision != praxis_memory::contract::JudgeVerdict::Allow {
        let frame = judged.as_ref().ok();
        let verdict = frame.map_or(Verdict::Hold, |f| f.decision);
        eprintln!(
            "{}",
            exec::refusal_json(verdict, &decision.reasoning_summary, frame)
        );
    }
    match serde_json::to_string(&decision) {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("praxis-run judge: {e}");
            return EXIT_HOLD;
        }
    }
    proposal::exit_code(&decision)
}

/// `praxis-run api METHOD PATH < BODY`: one judge API request; the body of
/// the answer on stdout. Exit 0 for a 2xx answer, 125 otherwise.
fn run_api(args: &[String]) -> i32 {
    const API_USAGE: &str = "usage: praxis-run api (GET|POST) /v1/... < BODY";
    let [method, path] = args else {
        eprintln!("{API_USAGE}");
        return EXIT_HOLD;
    };
    let mut body = String::new();
    if method == "POST" && std::io::stdin().read_to_string(&mut body).is_err() {
        eprintln!("praxis-run api: the body is not UTF-8");
        return EXIT_HOLD;
    }
    match api::call(method, path, &body) {
        Ok((status, answer)) => {
            println!("{answer}");
            if (200..300).contains(&status) {
                0
            } else {
                EXIT_HOLD
            }
        }
        Err(e) => {
            eprintln!("praxis-run api: {e}");
            EXIT_HOLD
        }
    }
}

/// `praxis-run mcp`: the MCP server on stdin/stdout until stdin closes.
fn run_mcp(args: &[String]) -> i32 {
    const MCP_USAGE: &str = "usage: praxis-run mcp [--session S] [--role R]";
    let opts = match sub_opts(args, MCP_USAGE) {
        Ok(opts) if opts.rest.is_empty() && opts.contract.is_none() => opts,
        Ok(_) => {
            eprintln!("{MCP_USAGE}");
            return EXIT_HOLD;
        }
        Err(code) => return code,
    };
    let mut caller = opts.caller;
    // One server process is one session unless the client names one.
    caller.session = caller
        .session
        .or_else(|| Some(format!("mcp-{}", std::process::id())));
    let server = mcp::Server {
        caller,
        cwd: std::env::current_dir().unwrap_or_else(|_| "/".into()),
    };
    match server.serve(std::io::stdin().lock(), std::io::stdout()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("praxis-run mcp: {e}");
            EXIT_HOLD
        }
    }
}

/// The process entry point, in place of the Rust runtime's.
///
/// The runtime's start-up finds the main thread's stack for its overflow
/// guard: glibc reads it from `/proc/self/maps`, and with the alternate
/// signal stack that took 17 system calls and 0.05 to 0.1 ms of every start
/// when an agent's commands come seconds apart. What else it does is done
/// here: the standard descriptors are made sure of, `SIGPIPE` is ignored (a
/// write to a closed pipe is an error, not a death; children still get the
/// default, as `std::process` resets it), a panic exits 101, and
/// `std::process::exit` flushes stdout. A stack overflow now ends in a
/// plain `SIGSEGV`.
// SAFETY: under `no_main` the runtime defines no `main` of its own, so this
// is the one C `main` linked; glibc calls it with its usual arguments, which
// are not read here (`std::env::args` has them from glibc already).
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    if !standard_fds_open() {
        // As the runtime does: with no descriptor to stand in, nothing may run.
        std::process::abort();
    }
    // SAFETY: setting a disposition at start, before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = std::panic::catch_unwind(run_main).unwrap_or(101);
    std::process::exit(code)
}

/// Opens `/dev/null` onto whichever of descriptors 0, 1 and 2 is closed, so
/// that nothing this process opens later is taken for one of them; false
/// if that fails.
fn standard_fds_open() -> bool {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    loop {
        // SAFETY: poll on three pollfds of a live array, without waiting.
        match unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } {
            -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            -1 => return false,
            _ => break,
        }
    }
    fds.iter()
        .filter(|p| p.revents & libc::POLLNVAL != 0)
        .all(|p| {
            // SAFETY: opening a constant C path; the lowest free descriptor,
            // which is the closed one (lower ones are open or reopened first).
            let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            fd == p.fd
        })
}

fn run_main() -> i32 {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.split_first() {
        Some((sub, rest)) if sub == "hook" => run_hook(rest),
        Some((sub, rest)) if sub == "plan" => run_plan(rest),
        Some((sub, rest)) if sub == "mcp" => run_mcp(rest),
        Some((sub, rest)) if sub == "judge" => run_judge(rest),
        Some((sub, rest)) if sub == "api" => run_api(rest),
        _ => match args::parse(argv.into_iter()) {
            Ok(Args {
                info: Some(info), ..
            }) => {
                // A closed pipe (`| head -1`) is no error worth a panic.
                let mut out = std::io::stdout().lock();
                let _ = match info {
                    Info::Help => out.write_all(HELP.as_bytes()),
                    Info::Version => writeln!(out, "praxis-run {}", env!("CARGO_PKG_VERSION")),
                };
                0
            }
            Ok(args) => run(args),
            Err(why) => {
                if !why.is_empty() {
                    eprintln!("praxis-run: {why}");
                }
                eprintln!("{USAGE}");
                EXIT_HOLD
            }
        },
    }
}
