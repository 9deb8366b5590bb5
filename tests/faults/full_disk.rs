//! The state dir on a small filesystem that an allowed command fills: the
//! command's own outcome is still recorded (the reserve is released for it),
//! the requests that follow are refused and recorded, and work resumes once
//! there is room again. A database locked by another process: the HOLDs go
//! to the spill journal and join the chain when the lock is gone.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::{Daemon, bin, repo, signal_json};

/// A tmpfs of `mib` MiB mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    fn mount(mib: u32) -> (Tmpfs, tempfile::TempDir) {
        let holder = tempfile::tempdir().unwrap();
        let path = holder.path().to_path_buf();
        nix::mount::mount(
            Some("tmpfs"),
            &path,
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            Some(format!("size={mib}m,mode=0700").as_str()),
        )
        .expect("mount a tmpfs (root needed)");
        // The daemon's scratch dir lives in this one; the TempDir handle
        // removes the (empty) directory after the unmount.
        let inner = tempfile::tempdir_in(&path).unwrap();
        std::mem::forget(holder);
        (Tmpfs { path }, inner)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.path, nix::mount::MntFlags::MNT_DETACH);
        let _ = std::fs::remove_dir(&self.path);
    }
}

fn decided_holds(d: &Daemon, why: &str) -> usize {
    d.events()
        .iter()
        .filter(|e| e["kind"] == "decided" && e["decision"] == "HOLD")
        .filter(|e| e["reason"].as_str().is_some_and(|r| r.contains(why)))
        .count()
}

#[test]
fn a_full_state_filesystem_keeps_the_outcome_and_the_refusals() {
    let (tmpfs, dir) = Tmpfs::mount(48);
    let d = Daemon::start_in(dir, &[], &[]);
    assert!(d.dir.path().join("state/praxis/audit.ballast").exists());

    // Fills the filesystem it shares with the audit store, and exits 0.
    let out = d.run(&["-c", "cat /dev/zero > fill.bin; exit 0"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let fill = d.events_of_kind("finished");
    let last = fill
        .last()
        .expect("the filling command's outcome is recorded");
    assert_eq!(last["kind"], "finished");

    for _ in 0..4 {
        let out = d.run(&["--", "true"]);
        assert_eq!(out.status.code(), Some(125), "{out:?}");
        assert!(
            signal_json(&out)["reason"]
                .as_str()
                .unwrap()
                .contains("is full")
        );
    }
    assert_eq!(
        decided_holds(&d, "is full"),
        4,
        "every refusal is in the chain"
    );

    std::fs::remove_file(d.work().join("fill.bin")).unwrap();
    let out = d.run(&["--", "true"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "work resumes with room: {out:?}"
    );
    assert!(
        d.dir.path().join("state/praxis/audit.ballast").exists(),
        "reserve restored"
    );
    assert!(d.praxis(&["audit", "verify"]).status.success());
    drop(d);
    drop(tmpfs);
}

/// Another process holding an exclusive transaction on the store for `hold`.
fn lock_store(db: &Path, hold: Duration) -> std::process::Child {
    let python = std::env::var("PRAXIS_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut locker = std::process::Command::new(python)
        .arg(repo().join("tests/faults/scripts/tamper.py"))
        .arg(db)
        .args(["lock", &hold.as_secs().to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(locker.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    locker
}

#[test]
fn refusals_while_the_store_is_locked_are_spilled_and_replayed() {
    let d = Daemon::start();
    assert_eq!(d.run(&["--", "true"]).status.code(), Some(0));
    // Longer than three busy timeouts (5 s each): each request's ALLOW
    // fails, then its HOLD, and the second request's ALLOW may share a
    // batch with the first one's HOLD or not. A lock shorter than that let
    // the last HOLD commit on a loaded host, leaving one line spilled.
    let mut locker = lock_store(&d.db(), Duration::from_secs(17));
    // Two requests at once: both wait out the busy timeout, both are HOLD.
    let clients: Vec<_> = (0..2)
        .map(|_| {
            // Past the client's default deadline: here praxisd must decide.
            d.cmd(&bin("praxis-run"))
                .env("PRAXIS_DECISION_TIMEOUT", "30")
                .args(["--", "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for client in clients {
        let out = client.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{out:?}");
        assert!(
            signal_json(&out)["reason"]
                .as_str()
                .unwrap()
                .contains("audit write failed")
        );
    }
    let spill = std::fs::read_to_string(d.dir.path().join("state/praxis/audit.spill")).unwrap();
    assert_eq!(spill.lines().count(), 2, "{spill}");
    assert!(locker.wait().unwrap().success());

    assert_eq!(d.run(&["--", "true"]).status.code(), Some(0));
    let replayed: Vec<_> = d
        .events()
        .into_iter()
        .filter(|e| e["detail"]["spilled_at_unix"].is_u64())
        .collect();
    assert_eq!(replayed.len(), 2, "{replayed:?}");
    assert!(replayed.iter().all(|e| e["decision"] == "HOLD"));
    let spill = std::fs::read_to_string(d.dir.path().join("state/praxis/audit.spill")).unwrap();
    assert!(spill.is_empty(), "{spill}");
    assert!(d.praxis(&["audit", "verify"]).status.success());
}
