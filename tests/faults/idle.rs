//! Connections that say nothing, or half a request, are dropped after the
//! configured idle time, and the daemon keeps serving.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Daemon, bin};

/// Reads until the daemon closes the connection; returns how long it took.
fn dropped_after(mut stream: UnixStream) -> Duration {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let began = Instant::now();
    let mut sink = Vec::new();
    let _ = stream.read_to_end(&mut sink);
    began.elapsed()
}

#[test]
fn idle_and_half_sent_connections_are_dropped() {
    let d = Daemon::start_with(&[("praxis.toml", "idle_timeout_ms = 300\n")], &[]);
    let idle: Vec<UnixStream> = (0..50)
        .map(|_| UnixStream::connect(d.socket()).unwrap())
        .collect();
    let mut half = UnixStream::connect(d.socket()).unwrap();
    // A frame header promising 100 bytes, then nothing.
    half.write_all(&[0, 0, 0, 100, 1, 1]).unwrap();

    let took = dropped_after(half);
    assert!(
        took < Duration::from_secs(3),
        "half-sent frame held for {took:?}"
    );
    for stream in idle {
        let took = dropped_after(stream);
        assert!(
            took < Duration::from_secs(3),
            "idle connection held for {took:?}"
        );
    }
    let out = d.run(&["--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// praxis-run hands its connection in before it reads a hook's event; an
/// event that comes after the idle limit finds that connection dropped,
/// and the request goes in through a new one.
#[test]
fn a_hook_event_slower_than_the_idle_limit_is_still_judged() {
    let d = Daemon::start_with(&[("praxis.toml", "idle_timeout_ms = 300\n")], &[]);
    let mut hook = d
        .cmd(&bin("praxis-run"))
        .args(["hook", "claude-code"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(900));
    let event = serde_json::json!({
        "session_id": "slow-event",
        "transcript_path": "/dev/null",
        "cwd": d.work(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git status"},
    });
    let mut stdin = hook.stdin.take().unwrap();
    stdin.write_all(event.to_string().as_bytes()).unwrap();
    drop(stdin);
    let out = hook.wait_with_output().unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(
        answer.contains("\"permissionDecision\":\"allow\""),
        "{answer}"
    );
}
