//! Each command's process and memory ceilings, end to end against a real
//! praxisd: a fork bomb and a memory bomb in an allowed workspace script,
//! run as the caller (root when the tests run as root), end inside their own
//! command while praxisd keeps answering; `praxis status` names what carries
//! the limits. Where only rlimits carry them, a root fork bomb would not be
//! contained (the kernel never applies `RLIMIT_NPROC` to root), so the bombs
//! are skipped and the test says why.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Daemon, bin};

/// Small ceilings, so the bombs end soon and touch little of the host.
const LIMITS: &str = "[limits]\npids_max = 64\nmemory_max_mib = 256\n";

/// What `praxis status` says carries the limits; `None` (with a notice)
/// when root's bombs cannot be contained here.
fn limits_by_cgroup(d: &Daemon) -> Option<String> {
    let status = common::stdout_json(&d.praxis(&["status", "--json"]));
    let control = status["process_tracking"].as_str().unwrap().to_owned();
    assert!(control.contains("limits by "), "{control}");
    if control.contains("limits by RLIMIT_NPROC") {
        println!("skipping: no cgroup carries the limits here: {control}");
        return None;
    }
    Some(control)
}

/// Writes an executable workspace script.
fn script(d: &Daemon, name: &str, body: &str) {
    let path = d.work().join(name);
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Starts `praxis-run -- ./name` in the background.
fn start(d: &Daemon, name: &str) -> Child {
    d.cmd(&bin("praxis-run"))
        .args(["--", &format!("./{name}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// While `bomb` runs, praxisd answers `praxis status` and runs another
/// command, each within a few seconds; then the bomb's outcome.
fn responsive_while(d: &Daemon, mut bomb: Child) -> Output {
    std::thread::sleep(Duration::from_millis(300));
    let began = Instant::now();
    let status = d.praxis(&["status"]);
    assert!(status.status.success(), "{status:?}");
    let echo = d.run(&["--", "echo", "still here"]);
    assert_eq!(
        String::from_utf8_lossy(&echo.stdout),
        "still here\n",
        "{echo:?}"
    );
    let took = began.elapsed();
    assert!(took < Duration::from_secs(10), "praxisd took {took:?}");
    println!("praxisd answered in {took:?} during the bomb");
    let deadline = Instant::now() + Duration::from_secs(120);
    while bomb.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the bomb was not ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    bomb.wait_with_output().unwrap()
}

#[test]
fn a_fork_bomb_run_as_root_ends_inside_its_command() {
    let d = Daemon::start_with(&[("praxis.toml", LIMITS)], &[]);
    let Some(control) = limits_by_cgroup(&d) else {
        return;
    };
    println!("{control}");
    // The script reports its uid and how far it got: forks past the ceiling fail.
    script(&d, "bomb.sh", "id -u; b() { b | b & }; b; sleep 2; exit 0");
    let out = responsive_while(&d, start(&d, "bomb.sh"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("exit {:?}; stdout {stdout}", out.status.code());
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(stdout.lines().next(), Some(uid.to_string().as_str()));
    assert!(
        stderr.contains("Resource temporarily unavailable") || stderr.contains("retry"),
        "no fork was refused: {stderr}"
    );
    // Nothing of the bomb is left once its command is over.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !bombs_left().is_empty() {
        assert!(Instant::now() < deadline, "left: {:?}", bombs_left());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_memory_bomb_run_as_root_ends_inside_its_command() {
    let d = Daemon::start_with(&[("praxis.toml", LIMITS)], &[]);
    if limits_by_cgroup(&d).is_none() {
        return;
    }
    script(&d, "grow.sh", "a=x; while :; do a=$a$a; done");
    let out = responsive_while(&d, start(&d, "grow.sh"));
    // Killed for memory: SIGKILL, which praxis-run reports as 128 + 9.
    assert_eq!(out.status.code(), Some(137), "{out:?}");
}

/// Live processes still running the fork bomb's script.
fn bombs_left() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| common::contains(&c, b"./bomb.sh"))
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z "))
        })
        .collect()
}
