//! Process and memory ceilings: a fork bomb and a memory bomb end inside
//! their own command, and the test process goes on. Each bomb runs once as a
//! uid of its own (`RLIMIT_NPROC`, the fallback without cgroup limits,
//! counts per user) and once as root where a cgroup carries the limits (v2,
//! or v1 on a hybrid host): the kernel never applies `RLIMIT_NPROC` to root,
//! so without one a root fork bomb would not be contained and is skipped.

mod common;

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use common::{Fixture, have};
use praxis_sandbox::{ExitStatus, Limiting, Limits, Network, Profile, RunAs, Spec, Waited};

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

/// How many processes are in session `sid` now (a command leads its own
/// session, and a bomb's processes never leave it).
fn processes_in_session(sid: i32) -> usize {
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
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // Fields after the command name: state, ppid, pgrp, session.
            stat.rfind(')')
                .and_then(|end| stat[end + 1..].split_whitespace().nth(3))
                .is_some_and(|s| s == sid.to_string())
        })
        .count()
}

/// Whether root's bombs can be run here: a cgroup must carry the limits.
fn root_bombs_contained() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let limiting = praxis_sandbox::limiting();
    println!("{}", praxis_sandbox::process_control());
    if !root || !limiting.by_cgroup() {
        println!("skipping: root's bombs need root and a cgroup for limits ({limiting})");
        return false;
    }
    true
}

/// Runs `bash -c script` under `spec` for at most `timeout`, sampling the
/// number of processes in the command's session meanwhile; returns how it
/// ended, its output and the highest count seen. Afterwards nothing of the
/// command is left.
fn run_sampled(spec: &Spec, script: &str, timeout: Duration) -> (Waited, String, usize) {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let writer: OwnedFd = writer.into();
    let stdio = praxis_sandbox::Stdio {
        stdin: fs::File::open("/dev/null").unwrap().into(),
        stdout: writer.try_clone().unwrap(),
        stderr: writer,
    };
    let prepared = praxis_sandbox::prepare(spec).unwrap();
    let argv: Vec<OsString> = ["bash", "-c", script].iter().map(OsString::from).collect();
    let mut child = praxis_sandbox::spawn(prepared, &argv, &spec.workspace, stdio).unwrap();
    let sid = child.pid();
    let collector = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = reader.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    });
    let deadline = Instant::now() + timeout;
    let mut most = 0;
    let waited = loop {
        most = most.max(processes_in_session(sid));
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
    // Whether the leader gave up or the timeout ended it, everything the
    // command started is gone with it.
    let gone_by = Instant::now() + Duration::from_secs(5);
    while processes_in_session(sid) > 0 && Instant::now() < gone_by {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_in_session(sid), 0, "the command outlived itself");
    (waited, collector.join().unwrap(), most)
}

/// The test process itself still spawns and runs commands.
fn still_fine(fx: &Fixture) {
    let ran = common::sh(&fx.spec(Profile::WorkspaceWrite, Network::Off), "echo fine");
    assert_eq!(ran.output, "fine\n");
}

/// A fork bomb under a ceiling of 48 stays at or under it.
fn fork_bomb(run_as: Option<u32>) {
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    if let Some(uid) = run_as {
        as_uid(&mut spec, uid);
    }
    spec.limits = Limits {
        pids: 48,
        ..Limits::default()
    };
    // Each level waits for the two it started, so the tree stays up against
    // the ceiling (bash retries refused forks) long enough to be sampled;
    // the classic form's levels exit at once and can slip past the sampler.
    let (waited, output, most) = run_sampled(&spec, ":(){ :|:& wait; };:", Duration::from_secs(4));
    println!(
        "{waited:?}; most processes seen: {most}; {}",
        output.lines().next().unwrap_or("")
    );
    assert!(most <= 48, "{most} processes: the ceiling did not hold");
    // It ran into the ceiling: many processes seen, or bash says a fork
    // was refused (a loaded host may sample too slowly to see them).
    assert!(
        most >= 8 || output.contains("fork"),
        "the bomb did not even start ({most} seen, {waited:?}): {output}"
    );
    still_fine(&fx);
}

/// A memory bomb under a ceiling of 256 MiB is refused memory or killed.
fn memory_bomb(run_as: Option<u32>) {
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    if let Some(uid) = run_as {
        as_uid(&mut spec, uid);
    }
    spec.limits = Limits {
        memory_bytes: 256 << 20,
        ..Limits::default()
    };
    let (waited, output, _) = run_sampled(
        &spec,
        "a=x; while :; do a=$a$a; done",
        Duration::from_secs(60),
    );
    assert!(!waited.timed_out, "{output}");
    // Refused memory (RLIMIT_AS) or killed for it (memory.max, or the v1
    // memory cgroup's out-of-memory kill).
    let ended =
        waited.status == ExitStatus::Signal(libc::SIGKILL) || output.contains("cannot allocate");
    assert!(ended, "{waited:?}: {output}");
    still_fine(&fx);
}

#[test]
fn a_fork_bomb_stays_under_its_pids_ceiling_and_ends_with_its_command() {
    if have("bash") && common::may_switch_user() {
        fork_bomb(Some(FORK_BOMB_UID));
    }
}

#[test]
fn a_memory_bomb_ends_at_its_memory_ceiling() {
    if have("bash") && common::may_switch_user() {
        memory_bomb(Some(MEMORY_BOMB_UID));
    }
}

#[test]
fn a_fork_bomb_run_as_root_is_contained() {
    if have("bash") && root_bombs_contained() {
        fork_bomb(None);
    }
}

#[test]
fn a_memory_bomb_run_as_root_is_contained() {
    if have("bash") && root_bombs_contained() {
        memory_bomb(None);
    }
}

#[test]
fn limits_name_their_mechanism_and_leave_no_cgroup_behind() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let ran = common::sh(&spec, "cat /proc/self/cgroup");
    assert_eq!(ran.code(), 0, "{}", ran.output);
    match praxis_sandbox::limiting() {
        Limiting::CgroupV1(bases) => {
            // The command sat in a cgroup of its own in both v1
            // hierarchies, and that cgroup is gone with it.
            for (controller, base) in [("pids", &bases.pids), ("memory", &bases.memory)] {
                let line = ran
                    .output
                    .lines()
                    .find(|l| {
                        l.split(':')
                            .nth(1)
                            .is_some_and(|c| c.split(',').any(|c| c == controller))
                    })
                    .unwrap_or_else(|| panic!("no {controller} line: {}", ran.output));
                let name = line.rsplit('/').next().unwrap();
                assert!(name.starts_with("cmd-"), "{line}");
                let base_name = base.file_name().unwrap().to_string_lossy();
                assert!(line.contains(&format!("/{base_name}/cmd-")), "{line}");
                assert!(
                    !base.join(name).exists(),
                    "{} left behind",
                    base.join(name).display()
                );
            }
        }
        Limiting::CgroupV2 => assert!(ran.output.contains("/cmd-"), "{}", ran.output),
        Limiting::Rlimits(why) => assert!(!why.is_empty()),
    }
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
