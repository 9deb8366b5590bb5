//! praxisd SIGKILLed while a command runs: the command's whole process tree
//! dies with it (a descendant in its own session included, where cgroups
//! track it), the client says the outcome is unknown instead of "nothing was
//! executed", and the next daemon records the run as interrupted.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Daemon, bin};

/// Pids whose command line contains `marker`.
fn pids_with(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(marker)
                })
                .unwrap_or(false)
        })
        .collect()
}

#[test]
fn a_killed_daemon_takes_its_commands_along_and_the_next_records_them() {
    let mut d = Daemon::start();
    // Two sleeps: one in the command's process group, one that left it
    // through setsid (python's os.setsid, since a setsid wrapper is held).
    let script = "sleep 4711 & python3 -c 'import os,time; os.setsid(); time.sleep(4712)' & wait";
    let client = d
        .cmd(&bin("praxis-run"))
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    while pids_with("4711").is_empty() || pids_with("4712").is_empty() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The start is committed with the group commit: wait for it.
    let request_id = loop {
        if let Some(e) = d.events_of_kind("started").last() {
            break e["request_id"].as_str().unwrap().to_owned();
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "no started event"
        );
        std::thread::sleep(Duration::from_millis(20));
    };

    let status = crate::common::stdout_json(&d.praxis(&["status", "--json"]));
    let by_cgroup = status["process_tracking"]
        .as_str()
        .unwrap()
        .starts_with("cgroup");
    d.kill9();
    std::thread::sleep(Duration::from_secs(1));
    let left: Vec<i32> = [pids_with("sleep 4711"), pids_with("4712")].concat();
    assert!(
        !by_cgroup || left.is_empty(),
        "still alive a second after the daemon died: {left:?}"
    );
    assert!(
        pids_with("sleep 4711").is_empty(),
        "the process group survived"
    );

    let out = client.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(123), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("outcome unknown"), "{stderr}");
    assert!(!stderr.contains("nothing was executed"), "{stderr}");
    assert!(stderr.contains("\"execution_prevented\":false"), "{stderr}");

    d.spawn();
    let interrupted = d.events_of_kind("interrupted");
    assert_eq!(interrupted.len(), 1, "{interrupted:?}");
    assert_eq!(interrupted[0]["request_id"], request_id.as_str());
    // A second start does not record it again.
    d.kill9();
    d.spawn();
    assert_eq!(d.events_of_kind("interrupted").len(), 1);
}
