//! The sandbox driven by an unprivileged daemon: this test binary re-runs
//! itself as uid 65534 (tests run as root in CI; skipped otherwise).

mod common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::Command;

use common::{Fixture, sh};
use praxis_sandbox::{Network, Profile};

/// Driven by `unprivileged_daemon_keeps_protected_paths`: runs as nobody.
#[test]
#[ignore = "runs as an unprivileged user, driven by the other test"]
fn unprivileged_helper() {
    if std::env::var_os("SANDBOX_TEST_UNPRIVILEGED").is_none() {
        return;
    }
    let fx = Fixture::new();
    fs::create_dir_all(fx.ws.join(".git/hooks")).unwrap();
    fs::write(fx.ws.join(".git/config"), "[core]\n").unwrap();
    fs::create_dir(fx.ws.join("src")).unwrap();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    assert!(!sh(&spec, "echo evil > .git/hooks/pre-commit").ok());
    assert!(!sh(&spec, "echo evil >> .git/config").ok());
    assert!(!sh(&spec, &format!("echo x > {}/x", fx.outside.display())).ok());
    assert!(!sh(&spec, "cat \"$HOME/.ssh/id_rsa\"").ok());
    assert!(sh(&spec, "echo ok > src/file && echo t > \"$TMPDIR/t\"").ok());
    let top = sh(&spec, "echo ok > top.txt");
    if praxis_sandbox::support().mount_pins {
        println!("unprivileged: protected paths pinned in a user namespace");
        assert!(top.ok(), "{}", top.output);
        assert!(sh(&spec, "echo x > .git/index.lock").ok());
    } else {
        println!("unprivileged: no user namespaces, Landlock carve keeps the root read-only");
        assert!(!top.ok());
    }
    let proxied = fx.spec(Profile::WorkspaceWrite, common::PROXIED);
    if praxis_sandbox::support().net_namespace {
        println!("unprivileged: network namespace inside a user namespace");
        let ran = sh(&proxied, "echo $http_proxy");
        assert!(
            ran.output.starts_with("http://127.0.0.1:"),
            "{}",
            ran.output
        );
    } else {
        let refused = praxis_sandbox::prepare(&proxied).unwrap_err();
        assert!(
            refused.to_string().contains("network namespace"),
            "{refused}"
        );
    }
    if !praxis_sandbox::limiting().by_cgroup() && praxis_sandbox::support().mount_pins {
        println!("unprivileged: RLIMIT_NPROC counted in the command's own user namespace");
        nproc_counts_only_the_command(&fx);
    }
    let report = praxis_sandbox::self_test(&fx.scratch_root).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
}

/// With more processes of our user running outside than the command's
/// ceiling allows, the command can still start a few of its own.
fn nproc_counts_only_the_command(fx: &Fixture) {
    let mut outside: Vec<_> = (0..12)
        .map(|_| Command::new("sleep").arg("30").spawn().unwrap())
        .collect();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    // Nothing to mount: the user namespace is there for the count alone.
    spec.protected.clear();
    spec.limits.pids = 8;
    let ran = sh(&spec, "sleep 0 & sleep 0 & sleep 0 & wait; echo forked");
    for sleeper in &mut outside {
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }
    assert_eq!(ran.output, "forked\n");
}

#[test]
fn unprivileged_daemon_keeps_protected_paths() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipping: needs root to switch to an unprivileged uid");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "unprivileged_helper",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SANDBOX_TEST_UNPRIVILEGED", "1")
        .env("TMPDIR", "/tmp")
        .env("HOME", "/nonexistent")
        .current_dir("/")
        .gid(65534)
        .uid(65534)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}
