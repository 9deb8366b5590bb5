//! A praxisd that accepts connections and never answers (and one whose door
//! takes requests and never answers): every client gives its runtime a deny
//! or HOLD within its decision deadline, and praxis-run honours SIGTERM
//! while it waits.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::bin;

/// A scratch home whose daemon socket is held by a listener that accepts
/// and then says nothing.
struct Hung {
    dir: tempfile::TempDir,
    held: Arc<Mutex<Vec<UnixStream>>>,
    /// The door, where one is bound: nothing ever reads it.
    door: Option<UnixDatagram>,
}

impl Hung {
    fn start() -> Hung {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home/work", "run/praxis", "state", "config/praxis"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let listener = UnixListener::bind(dir.path().join("run/praxis/praxisd.sock")).unwrap();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                keep.lock().unwrap().push(stream);
            }
        });
        Hung {
            dir,
            held,
            door: None,
        }
    }

    /// The same with praxisd's door bound too, and never read: a hung
    /// praxisd as clients find it, which take the door first.
    fn with_door() -> Hung {
        let mut hung = Hung::start();
        let door = hung.dir.path().join("run/praxis/praxisd-door.sock");
        hung.door = Some(UnixDatagram::bind(door).unwrap());
        hung
    }

    fn cmd(&self, program: &Path) -> Command {
        let p = self.dir.path();
        let mut c = Command::new(program);
        c.env("HOME", p.join("home"))
            .env("XDG_RUNTIME_DIR", p.join("run"))
            .env("XDG_STATE_HOME", p.join("state"))
            .env("XDG_CONFIG_HOME", p.join("config"))
            .env("PRAXIS_SYSTEM", "0")
            .env("PRAXIS_DECISION_TIMEOUT", "1")
            .env_remove("PRAXIS_SOCKET")
            .current_dir(p.join("home/work"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("home/work")
    }

    /// Runs `args` feeding `input`; returns the output and how long it took.
    fn feed(&self, args: &[&str], input: &str) -> (Output, Duration) {
        let began = Instant::now();
        let mut child = self.cmd(&bin("praxis-run")).args(args).spawn().unwrap();
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
        let out = child.wait_with_output().unwrap();
        (out, began.elapsed())
    }
}

/// Well inside the 30 s hook timeout `praxis install` writes, and the 1 s
/// deadline set here plus the watchdog's slack.
const BOUND: Duration = Duration::from_secs(5);

fn pre_tool_use(hung: &Hung, command: &str) -> String {
    json!({
        "session_id": "s-hung",
        "transcript_path": "/dev/null",
        "cwd": hung.work(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": command, "description": "x" },
        "tool_use_id": "toolu_hung",
        "permission_mode": "bypassPermissions",
    })
    .to_string()
}

/// The Claude Code hook's answer to a praxisd that never answers.
fn claude_code_hook_denies(hung: &Hung) {
    let (out, took) = hung.feed(
        &["hook", "claude-code"],
        &pre_tool_use(hung, "touch hang.txt"),
    );
    assert!(took < BOUND, "took {took:?}");
    // Claude Code blocks a PreToolUse hook that exits 2 and shows its stderr
    // to the model: the adapter's answer when it cannot judge.
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let reason = String::from_utf8_lossy(&out.stderr);
    assert!(reason.contains("did not answer within"), "{reason}");
    assert!(!hung.work().join("hang.txt").exists());
}

#[test]
fn the_claude_code_hook_denies_within_its_deadline() {
    let hung = Hung::start();
    claude_code_hook_denies(&hung);
    assert!(
        !hung.held.lock().unwrap().is_empty(),
        "the hook did reach the socket"
    );
}

#[test]
fn a_decision_deadline_past_the_hook_timeout_is_capped_with_a_warning() {
    let hung = Hung::start();
    let began = Instant::now();
    let out = hung
        .cmd(&bin("praxis-run"))
        .env("PRAXIS_DECISION_TIMEOUT", "45")
        .args(["hook", "claude-code"])
        .spawn()
        .and_then(|mut child| {
            let _ = child
                .stdin
                .take()
                .unwrap()
                .write_all(pre_tool_use(&hung, "touch hang.txt").as_bytes());
            child.wait_with_output()
        })
        .unwrap();
    let took = began.elapsed();
    // The 30 s `praxis install` writes: Claude Code would run the tool
    // undecided past it.
    assert!(took < Duration::from_secs(28), "took {took:?}");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("PRAXIS_DECISION_TIMEOUT=45 s does not fit the 30 s hook timeout"),
        "{said}"
    );
    assert!(said.contains("did not answer within 25 s"), "{said}");
    assert!(!hung.work().join("hang.txt").exists());
}

#[test]
fn the_codex_hook_blocks_within_its_deadline() {
    let hung = Hung::start();
    let (out, took) = hung.feed(&["hook", "codex"], &pre_tool_use(&hung, "touch hang.txt"));
    assert!(took < BOUND, "took {took:?}");
    // Codex blocks on a deny answer or on exit 2 with the reason on stderr.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("\"deny\"") || out.status.code() == Some(2),
        "{out:?}"
    );
    assert!(text.contains("did not answer within"), "{text}");
}

#[test]
fn the_codex_hook_refuses_post_tool_use_and_stop_in_their_shape_within_its_deadline() {
    let hung = Hung::start();
    for (event, extra) in [
        (
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {}}),
        ),
        ("Stop", json!({"stop_hook_active": false})),
    ] {
        let mut input = json!({
            "session_id": "s-hung", "cwd": hung.work(), "hook_event_name": event,
        });
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        let (out, took) = hung.feed(&["hook", "codex"], &input.to_string());
        assert!(took < BOUND, "{event} took {took:?}");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        // The shape Codex takes for these events: a top-level block with a
        // reason, never the PreToolUse deny.
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["decision"], "block", "{event}: {v}");
        assert!(
            v["reason"]
                .as_str()
                .unwrap()
                .contains("did not answer within"),
            "{event}: {v}"
        );
        assert!(v.get("hookSpecificOutput").is_none(), "{event}: {v}");
    }
}

/// praxis-run's answer to a praxisd that never answers: HOLD, and why.
fn praxis_run_holds(hung: &Hung) {
    let (out, took) = hung.feed(&["-c", "touch hang.txt"], "");
    assert!(took < BOUND, "took {took:?}");
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let signal: Value = serde_json::from_str(stderr.lines().next().unwrap()).unwrap();
    assert_eq!(signal["decision"], "HOLD");
    assert_eq!(signal["execution_prevented"], true);
    assert!(
        signal["reason"]
            .as_str()
            .unwrap()
            .contains("did not answer within")
    );
}

#[test]
fn praxis_run_holds_within_its_deadline_and_says_why() {
    praxis_run_holds(&Hung::start());
}

#[test]
fn a_hung_door_holds_within_the_deadline_too() {
    let hung = Hung::with_door();
    praxis_run_holds(&hung);
    claude_code_hook_denies(&hung);
    // Both went through the door, not the socket: two knocks wait there.
    assert!(hung.held.lock().unwrap().is_empty());
    let door = hung.door.as_ref().unwrap();
    door.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    assert!(door.recv(&mut byte).is_ok() && door.recv(&mut byte).is_ok());
    assert!(door.recv(&mut byte).is_err(), "more than two knocks");
}

#[test]
fn praxis_run_honours_sigterm_while_the_daemon_hangs() {
    let hung = Hung::start();
    let mut child = hung
        .cmd(&bin("praxis-run"))
        .env("PRAXIS_DECISION_TIMEOUT", "60")
        .args(["-c", "sleep 100"])
        .spawn()
        .unwrap();
    // Wait until it is connected and waiting for the decision.
    let waited = Instant::now();
    while hung.held.lock().unwrap().is_empty() {
        assert!(waited.elapsed() < BOUND, "praxis-run never connected");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(100));
    let began = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(began.elapsed() < BOUND, "praxis-run ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(128 + 15));
    // The cancel was sent before it gave up.
    let held = hung.held.lock().unwrap();
    let mut reader = held[0].try_clone().unwrap();
    reader
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    // Frames are length-prefixed JSON: the raw bytes show the messages.
    let mut sent = Vec::new();
    let _ = std::io::Read::read_to_end(&mut reader, &mut sent);
    let sent = String::from_utf8_lossy(&sent);
    assert!(sent.contains("\"cancel\""), "sent: {sent}");
}

#[test]
fn the_mcp_server_answers_an_error_result_in_time() {
    let hung = Hung::start();
    let mut child = hung.cmd(&bin("praxis-run")).arg("mcp").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let send = |stdin: &mut std::process::ChildStdin, v: Value| {
        writeln!(stdin, "{v}").unwrap();
    };
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"fault-test","version":"1"}}}),
    );
    let init: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(init["id"], 1);
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    let began = Instant::now();
    send(
        &mut stdin,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
            "name":"run_command","arguments":{"command":"touch hang.txt"}}}),
    );
    let reply: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert!(began.elapsed() < BOUND, "took {:?}", began.elapsed());
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["execution_prevented"],
        true
    );
    drop(stdin);
    let _ = child.wait();
    assert!(!hung.work().join("hang.txt").exists());
}

#[test]
fn the_agents_sdk_guardrail_holds_within_its_deadline() {
    let hung = Hung::start();
    let python = std::env::var("PRAXIS_PYTHON").unwrap_or_else(|_| String::from("python3"));
    let began = Instant::now();
    let out = hung
        .cmd(Path::new(&python))
        .args([
            "-c",
            "import json, praxis_agents; print(json.dumps(praxis_agents.judge('touch hang.txt')))",
        ])
        .env(
            "PYTHONPATH",
            crate::common::repo().join("integrations/agents-sdk"),
        )
        .env("PRAXIS_RUN", bin("praxis-run"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        began.elapsed() < BOUND + Duration::from_secs(5),
        "took {:?}",
        began.elapsed()
    );
    assert!(out.status.success(), "needs openai-agents: {out:?}");
    let decision: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(decision["decision"], "HOLD", "{decision}");
    assert_eq!(decision["execution_prevented"], true);
}
