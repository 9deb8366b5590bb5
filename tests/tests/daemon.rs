//! End to end: a real praxisd in scratch XDG dirs, driven by the real
//! praxis-run and praxis binaries (built by `make test` before the tests run).

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{Daemon, bin, signal_json};

#[test]
fn allowed_commands_keep_their_exit_status_and_stdin() {
    let d = Daemon::start();
    let out = d.run(&["--", "echo", "hi"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"hi\n");
    assert_eq!(d.run(&["-c", "exit 1"]).status.code(), Some(1));
    let mut child = d
        .cmd(&bin("praxis-run"))
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"x\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.stdout, b"x\n");
}

/// praxisd maps the praxis-run installed beside it, so the pages every
/// command and hook starts with stay in memory between an agent's calls.
#[test]
fn the_daemon_keeps_its_client_program_mapped() {
    let d = Daemon::start();
    let client = std::fs::canonicalize(bin("praxis-run")).unwrap();
    let client = client.to_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", d.pid())).unwrap();
        if maps.lines().any(|line| line.ends_with(client)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "praxisd does not map {client}:\n{maps}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Started with its stdin closed, praxis-run stands `/dev/null` in for it
/// before it opens anything: else the working directory it opens next would
/// take descriptor 0 and go to the command as its stdin.
#[test]
fn a_client_started_without_stdin_gives_its_command_dev_null() {
    let d = Daemon::start();
    let run = bin("praxis-run");
    let out = d
        .cmd(std::path::Path::new("sh"))
        .args(["-c", r#"exec "$0" -- sh -c 'wc -c' <&-"#])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        (Some(0), "0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn output_is_truncated_with_a_marker() {
    let d = Daemon::start();
    let out = d.run(&["-c", "head -c 3000000 /dev/zero"]);
    // Past the cap praxisd closes the pipe: the writer's next write fails.
    assert_eq!(
        out.status.code(),
        Some(128 + 13),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.stdout.len() < 1_100_000 && text.contains("bytes dropped"),
        "{} bytes",
        out.stdout.len()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let told: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("output cap"))
        .collect();
    assert_eq!(told.len(), 1, "{stderr}");
    assert!(
        told[0].contains("stdout") && told[0].contains("SIGPIPE"),
        "{stderr}"
    );
}

/// A writer that never stops costs praxisd only its cap: the pipe is
/// closed past it, so the command ends at once instead of at its time limit.
#[test]
fn an_endless_writer_ends_at_the_cap() {
    let d = Daemon::start();
    let started = std::time::Instant::now();
    let out = d.run(&["--timeout", "60", "-c", "yes praxis"]);
    assert_eq!(out.status.code(), Some(128 + 13), "{out:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "ran until {:?}",
        started.elapsed()
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("bytes dropped"));
}

#[test]
fn refusals_exit_125_or_126_with_the_audit_signal() {
    let d = Daemon::start();
    let out = d.run(&["-c", "rm -rf /"]);
    assert!(matches!(out.status.code(), Some(125 | 126)), "{out:?}");
    let v = signal_json(&out);
    assert_eq!(v["execution_prevented"], true);
    assert!(v["request_id"].as_str().unwrap().starts_with("r-"));
    assert!(v["reason"].as_str().is_some() && v["rule_ids"].is_array() && v["tier"].is_string());
}

#[test]
fn kill_switch_refuses_new_work_and_release_restores_it() {
    let d = Daemon::start();
    let out = d.praxis(&["kill", "--reason", "incident 42"]);
    assert!(out.status.success(), "{out:?}");
    let out = d.run(&["--", "true"]);
    assert_eq!(out.status.code(), Some(126));
    let v = signal_json(&out);
    assert_eq!(v["decision"], "STOP");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("an operator stopped all work (kill switch: incident 42)")
    );
    assert!(d.praxis(&["kill", "--release"]).status.success());
    assert_ne!(d.run(&["--", "true"]).status.code(), Some(126));
}

#[test]
fn kill_switch_file_kills_a_running_command() {
    let d = Daemon::start();
    let start = Instant::now();
    let runner = spawn_run(&d, &["--", "sleep", "30"]);
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(d.dir.path().join("state/praxis/KILL"), "drill\n").unwrap();
    let out = runner.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_ne!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn audit_verifies_and_names_a_tampered_row() {
    let d = Daemon::start();
    let _ = d.run(&["--", "true"]);
    let _ = d.run(&["-c", "rm -rf /"]);
    let out = d.praxis(&["audit", "verify"]);
    assert!(out.status.success(), "{out:?}");
    let conn = rusqlite::Connection::open(d.db()).unwrap();
    let triggers: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for t in triggers {
        conn.execute(&format!("DROP TRIGGER \"{t}\""), []).unwrap();
    }
    conn.execute(
        "UPDATE events SET reason = 'nothing to see' WHERE seq = 2",
        [],
    )
    .unwrap();
    drop(conn);
    let out = d.praxis(&["audit", "verify"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("seq 2"),
        "{out:?}"
    );
}

#[test]
fn secrets_in_argv_never_reach_the_database() {
    let d = Daemon::start();
    let secret = "ghp_Zq8vR2kL9mN4pX7wT1yB6cF3hJ5sD0aE2gK8";
    let _ = d.run(&["--", "echo", secret]);
    let _ = d.run(&[
        "-c",
        &format!("curl -H 'Authorization: Bearer {secret}' https://example.invalid"),
    ]);
    drop(d.praxis(&["status"]));
    let mut bytes = Vec::new();
    for f in [
        "audit.db",
        "audit.db-wal",
        "audit.db-append-0",
        "audit.db-append-1",
    ] {
        if let Ok(mut file) = std::fs::File::open(d.dir.path().join("state/praxis").join(f)) {
            file.read_to_end(&mut bytes).unwrap();
        }
    }
    assert!(!bytes.is_empty());
    assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
}

#[test]
fn daemon_killed_mid_command_reports_the_outcome_unknown_and_the_log_verifies() {
    let mut d = Daemon::start();
    let runner = spawn_run(&d, &["--", "sleep", "30"]);
    std::thread::sleep(Duration::from_millis(500));
    d.kill9();
    let start = Instant::now();
    let out = runner.wait_with_output().unwrap();
    // The command had started: it is not "nothing was executed".
    assert_eq!(out.status.code(), Some(123), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("outcome unknown"));
    assert!(start.elapsed() < Duration::from_secs(5));
    // The next praxisd removes the scratch dirs the killed one left (the
    // command's, and the spare made for the next command).
    let scratch = d.dir.path().join("state/praxis-scratch");
    let left = || std::fs::read_dir(&scratch).unwrap().count();
    assert!(left() > 0, "the killed daemon left nothing to sweep");
    d.spawn();
    assert_eq!(left(), 0);
    assert!(d.praxis(&["audit", "verify"]).status.success());
}

#[test]
fn system_mode_without_a_daemon_is_hold() {
    let d = Daemon::start();
    let out = d
        .cmd(&bin("praxis-run"))
        .env("PRAXIS_SYSTEM", "1")
        .env("PRAXIS_SOCKET", d.dir.path().join("nowhere.sock"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(signal_json(&out)["decision"], "HOLD");
}

#[test]
fn bad_frames_are_refused_and_the_daemon_keeps_serving() {
    let d = Daemon::start();
    let garbage: [&[u8]; 3] = [
        b"GET / HTTP/1.1\r\n\r\n",
        &[0xff, 0xff, 0xff, 0xff, 1, 1],
        &[0, 0, 0, 2, 1, 1, b'{', b'x'],
    ];
    for bytes in garbage {
        let mut s = UnixStream::connect(d.socket()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(bytes).unwrap();
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        assert!(
            String::from_utf8_lossy(&reply).contains("reason"),
            "{reply:?}"
        );
    }
    assert!(d.praxis(&["status"]).status.success());
}

#[test]
fn sixty_four_concurrent_clients_get_their_own_output() {
    let d = Daemon::start();
    let outs: Vec<Output> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..64)
            .map(|i| {
                s.spawn({
                    let d = &d;
                    move || d.run(&["--", "echo", &format!("client-{i}")])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, out) in outs.iter().enumerate() {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("client-{i}\n")
        );
    }
}

/// SIGINT to the client cancels the command: the daemon ends it and says
/// why, and the client exits with the command's status, not by the signal.
#[test]
fn a_signal_to_the_client_cancels_its_command() {
    let d = Daemon::start();
    let start = Instant::now();
    let runner = spawn_run(&d, &["--", "sleep", "4321.5"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while live_processes(&["sleep", "4321.5"]).is_empty() {
        assert!(Instant::now() < deadline, "the command did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(runner.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::SIGINT).unwrap();
    let out = runner.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the command was ended: cancelled by the client"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{out:?}");
    assert_gone(&["sleep", "4321.5"]);
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace_at_its_limit() {
    let d = Daemon::start();
    let start = Instant::now();
    let out = d.run(&["--timeout", "1", "-c", "trap '' TERM; sleep 4322.5"]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "SIGKILL followed the ignored SIGTERM: {:?}",
        start.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("timed out after 1s"), "{stderr}");
    assert_eq!(
        out.status.code(),
        Some(124),
        "a time limit exits as timeout(1) does: {out:?}"
    );
    assert_gone(&["sleep", "4322.5"]);
}

/// Starts `praxis-run ARGS` in the background, its stderr captured.
fn spawn_run(d: &Daemon, args: &[&str]) -> std::process::Child {
    d.cmd(&bin("praxis-run"))
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Whether the daemon gives each command a cgroup (printing a notice when
/// it cannot, as an unprivileged daemon without delegation).
fn tracked_by_cgroup(d: &Daemon) -> bool {
    let out = d.praxis(&["status", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tracking = v["process_tracking"].as_str().unwrap().to_owned();
    let text = String::from_utf8_lossy(&d.praxis(&["status"]).stdout).into_owned();
    assert!(
        text.contains(&format!("process tracking: {tracking}")),
        "{text}"
    );
    if tracking.starts_with("cgroup ") {
        return true;
    }
    assert!(tracking.starts_with("process group only ("), "{tracking}");
    println!("skipping: no cgroup per command here: {tracking}");
    false
}

/// Live (not zombie) processes whose argv is exactly `argv`.
fn live_processes(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(") ")
                    .is_some_and(|(_, rest)| !rest.starts_with('Z'))
            })
        })
        .collect()
}

/// Polls until no live process has `argv`.
fn assert_gone(argv: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !live_processes(argv).is_empty() {
        assert!(Instant::now() < deadline, "{argv:?} outlived its command");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_setsid_descendant_ends_with_its_command() {
    let d = Daemon::start();
    if !tracked_by_cgroup(&d) {
        return;
    }
    let out = d.run(&["-c", "setsid -f sleep 1234.5; echo started"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("started"),
        "{out:?}"
    );
    assert_gone(&["sleep", "1234.5"]);
}

#[test]
fn the_kill_switch_ends_a_setsid_descendant() {
    let d = Daemon::start();
    if !tracked_by_cgroup(&d) {
        return;
    }
    let escaped = ["sleep", "1234.25"];
    let runner = d
        .cmd(&bin("praxis-run"))
        .args(["-c", "setsid -f sleep 1234.25; sleep 30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while live_processes(&escaped).is_empty() {
        assert!(Instant::now() < deadline, "the descendant never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(d.dir.path().join("state/praxis/KILL"), "drill\n").unwrap();
    let out = runner.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert_gone(&escaped);
}

#[test]
fn output_keeps_placeholders_the_agent_may_write_back_and_masks_real_secrets() {
    let d = Daemon::start();
    let config = "api_key = \"test\"\nsecret=blocked\npassword: changeme\nGITHUB_TOKEN=ghp_9f8e7d6c5b4a3210ZYXWVU\n";
    std::fs::write(d.work().join("app.conf"), config).unwrap();
    let out = d.run(&["--", "cat", "app.conf"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.starts_with("api_key = \"test\"\nsecret=blocked\npassword: changeme\n"),
        "placeholders changed: {shown}"
    );
    assert!(shown.contains("GITHUB_TOKEN=[REDACTED:"), "{shown}");
    assert!(!shown.contains("ghp_9f8e7d6c5b4a3210"), "{shown}");
}

/// The cgroup directories (under /sys/fs/cgroup) `pid` sits in, one per
/// hierarchy, as `/proc/PID/cgroup` names them.
fn cgroups_of(pid: i32) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    text.lines()
        .filter(|l| l.contains("/praxisd-"))
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (controllers, path) = (parts.nth(1)?, parts.next()?);
            // The mount of that hierarchy: cgroup2, or the v1 one whose
            // options name the first controller.
            let mount = mounts.lines().find_map(|m| {
                let fields: Vec<&str> = m.split(' ').collect();
                let sep = fields.iter().position(|f| *f == "-")?;
                let (fstype, options) = (fields[sep + 1], fields.get(sep + 3)?);
                let first = controllers.split(',').next()?;
                let matches = if controllers.is_empty() {
                    fstype == "cgroup2"
                } else {
                    fstype == "cgroup" && options.split(',').any(|o| o == first)
                };
                matches.then(|| PathBuf::from(fields[4]))
            })?;
            Some(mount.join(path.trim_start_matches('/')))
        })
        .collect()
}

#[test]
fn a_daemon_in_its_own_pid_namespace_leaves_another_daemons_cgroups_alone() {
    let a = Daemon::start();
    if !tracked_by_cgroup(&a) {
        return;
    }
    // A command of the first daemon, running in its cgroups.
    let mut running = spawn_run(&a, &["--", "sleep", "4411.5"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let sleeper = loop {
        if let Some(pid) = live_processes(&["sleep", "4411.5"]).first() {
            break *pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let owned = cgroups_of(sleeper);
    assert!(!owned.is_empty(), "the command is in no cgroup of a daemon");

    // A second daemon, in a PID namespace of its own (where the first
    // one's pid names nobody), claims its bases beside the first one's.
    let b = Daemon::start_under(
        tempfile::tempdir().unwrap(),
        &[],
        &[],
        &["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"],
    );
    let out = b.run(&["--", "echo", "from b"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from b\n", "{out:?}");

    // Nothing of the first daemon was touched: its command runs on in its
    // cgroups, and it still runs commands.
    assert_eq!(live_processes(&["sleep", "4411.5"]), [sleeper]);
    for dir in &owned {
        assert!(dir.is_dir(), "{} was removed", dir.display());
    }
    let out = a.run(&["--", "echo", "from a"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from a\n", "{out:?}");

    // Nor does a third daemon, in the first one's namespace, touch the
    // second one's: it still runs commands.
    let c = Daemon::start();
    let out = c.run(&["--", "echo", "from c"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from c\n", "{out:?}");
    let out = b.run(&["--", "echo", "from b again"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "from b again\n",
        "{out:?}"
    );

    // The second daemon is stopped (SIGTERM to praxisd, not to its
    // wrapper). As its namespace's first process it takes its guardian
    // with it, so its emptied bases are removed here rather than left to
    // the next daemon's sweep.
    let status = b.praxis(&["status", "--json"]);
    let tracking = common::stdout_json(&status)["process_tracking"]
        .as_str()
        .unwrap()
        .to_owned();
    let b_bases: Vec<PathBuf> = tracking
        .split_whitespace()
        .map(|word| PathBuf::from(word.trim_end_matches(',')))
        .filter(|path| path.to_string_lossy().contains("/praxisd-"))
        .collect();
    assert!(!b_bases.is_empty(), "{tracking}");
    let wrapper = b.pid();
    let inner: Vec<i32> = std::fs::read_dir(format!("/proc/{wrapper}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect();
    for pid in inner {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGTERM);
    }
    drop(b);
    for base in b_bases {
        let _ = std::fs::remove_dir(base);
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(running.id() as i32),
        nix::sys::signal::SIGTERM,
    );
    let _ = running.wait();
}
