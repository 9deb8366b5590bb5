//! Process and memory ceilings: a fork bomb and a memory bomb end inside
//! their own command, and the test process goes on. Each bomb runs as a uid
//! of its own, since `RLIMIT_NPROC` (the fallback without cgroup
//! controllers) counts per user and binds no process running as root.

mod common;

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use common::{Fixture, have};
use praxis_sandbox::{ExitStatus, Limits, Network, Profile, RunAs, Spec, Stdio, Waited};

/// Uids no other process on a test host uses.
const FORK_BOMB_UID: u32 = 61_711;
const MEMORY_BOMB_UID: u32 = 61_712;

fn as_uid(spec: &mut Spec, uid: u32) {
    spec.run_as = Some(RunAs {
        uid,
        gid: uid,
        groups: Vec::new(),
    });
}

/// How many processes run as `uid` now.
fn processes_of(uid: u32) -> usize {
    let Ok(entries) = fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| fs::read_to_string(e.path().join("status")).ok())
        .filter(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next())
                .is_some_and(|real| real == uid.to_string())
        })
        .count()
}

/// Runs `bash -c script` under `spec` for at most `timeout`, sampling the
/// number of processes of `uid` meanwhile; returns how it ended, its
/// output and the highest count seen.
fn run_sampled(spec: &Spec, script: &str, uid: u32, timeout: Duration) -> (Waited, String, usize) {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let writer: OwnedFd = writer.into();
    let stdio = Stdio {
        stdin: fs::File::open("/dev/null").unwrap().into(),
        stdout: writer.try_clone().unwrap(),
        stderr: writer,
    };
    let prepared = praxis_sandbox::prepare(spec).unwrap();
    let argv: Vec<OsString> = ["bash", "-c", script].iter().map(OsString::from).collect();
    let mut child = praxis_sandbox::spawn(prepared, &argv, &spec.workspace, stdio).unwrap();
    let collector = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = reader.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    });
    let deadline = Instant::now() + timeout;
    let mut most = 0;
    let waited = loop {
        most = most.max(processes_of(uid));
        if let Some(status) = child.try_wait().unwrap() {
            break Waited {
                status,
                timed_out: false,
            };
        }
        if Instant::now() >= deadline {
            break Waited {
                status: child.terminate_group(Duration::from_millis(200)).unwrap(),
                timed_out: true,
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(child);
    (waited, collector.join().unwrap(), most)
}

/// The test process itself still spawns and runs commands.
fn still_fine(fx: &Fixture) {
    let ran = common::sh(&fx.spec(Profile::WorkspaceWrite, Network::Off), "echo fine");
    assert_eq!(ran.output, "fine\n");
}

#[test]
fn a_fork_bomb_stays_under_its_pids_ceiling_and_ends_with_its_command() {
    if !have("bash") {
        return;
    }
    println!("tracking: {}", praxis_sandbox::tracking());
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    as_uid(&mut spec, FORK_BOMB_UID);
    spec.limits = Limits {
        pids: 48,
        ..Limits::default()
    };
    let (waited, output, most) = run_sampled(
        &spec,
        ":(){ :|:& };:; wait",
        FORK_BOMB_UID,
        Duration::from_secs(4),
    );
    println!(
        "most processes seen: {most}; {}",
        output.lines().next().unwrap_or("")
    );
    assert!(most <= 48, "{most} processes: the ceiling did not hold");
    assert!(most >= 8, "the bomb did not even start: {output}");
    // Whether the leader gave up or the timeout ended it, everything the
    // command started is gone with it.
    println!("{waited:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_of(FORK_BOMB_UID) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_of(FORK_BOMB_UID), 0);
    still_fine(&fx);
}

#[test]
fn a_memory_bomb_ends_at_its_memory_ceiling() {
    if !have("bash") {
        return;
    }
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    as_uid(&mut spec, MEMORY_BOMB_UID);
    spec.limits = Limits {
        memory_bytes: 256 << 20,
        ..Limits::default()
    };
    let (waited, output, _) = run_sampled(
        &spec,
        "a=x; while :; do a=$a$a; done",
        MEMORY_BOMB_UID,
        Duration::from_secs(60),
    );
    assert!(!waited.timed_out, "{output}");
    // Refused memory (RLIMIT_AS) or killed for it (memory.max).
    let ended =
        waited.status == ExitStatus::Signal(libc::SIGKILL) || output.contains("cannot allocate");
    assert!(ended, "{waited:?}: {output}");
    still_fine(&fx);
}

#[test]
fn ordinary_commands_run_under_the_default_limits() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    assert_eq!(spec.limits, Limits::default());
    let ran = common::sh(
        &spec,
        "for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait; echo ok",
    );
    assert_eq!(ran.output, "ok\n");
}
