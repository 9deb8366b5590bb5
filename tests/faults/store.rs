//! The audit store deleted, replaced, rewritten or cut: praxisd notices at
//! the next write (or at start, against the anchor beside the store),
//! refuses all work, and `praxis status` and `praxis audit verify` say why.

use std::path::Path;

use crate::common::{Daemon, repo, signal_json};

fn ran(d: &Daemon) {
    let out = d.run(&["--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// The next command is refused, and the operator is told why.
fn refuses_all_work(d: &Daemon, why: &str) {
    let out = d.run(&["--", "true"]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let reason = signal_json(&out)["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains(why), "{reason}");
    let status = String::from_utf8_lossy(&d.praxis(&["status"]).stdout).into_owned();
    assert!(
        status.contains("REFUSING ALL WORK") && status.contains(why),
        "{status}"
    );
    let verify = d.praxis(&["audit", "verify"]);
    assert!(!verify.status.success(), "{verify:?}");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(said.contains(why), "{said}");
}

fn tamper(db: &Path, args: &[&str]) {
    let python = std::env::var("PRAXIS_PYTHON").unwrap_or_else(|_| "python3".into());
    let st = std::process::Command::new(python)
        .arg(repo().join("tests/faults/scripts/tamper.py"))
        .arg(db)
        .args(args)
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn a_store_deleted_under_the_daemon_stops_all_work() {
    let d = Daemon::start();
    ran(&d);
    for f in ["audit.db", "audit.db-wal", "audit.db-shm"] {
        let _ = std::fs::remove_file(d.dir.path().join("state/praxis").join(f));
    }
    refuses_all_work(&d, "was deleted");
}

#[test]
fn a_cut_tail_and_a_recomputed_chain_are_refused() {
    // A cut tail is consistent in itself: the anchor shows it. A chain
    // recomputed without the key breaks at the first rewritten event.
    for (tampering, why) in [
        (&["truncate", "3"][..], "anchor"),
        (&["recompute"], "the audit chain is broken"),
    ] {
        let mut d = Daemon::start();
        for _ in 0..4 {
            ran(&d);
        }
        assert!(d.praxis(&["audit", "verify"]).status.success());
        d.kill9();
        tamper(&d.db(), tampering);
        d.spawn();
        refuses_all_work(&d, why);
    }
}

#[test]
fn a_chain_rewritten_with_the_key_fails_against_an_anchor_kept_elsewhere() {
    let mut d = Daemon::start();
    for _ in 0..3 {
        ran(&d);
    }
    let anchor = d.praxis(&["audit", "anchor"]);
    assert!(anchor.status.success(), "{anchor:?}");
    let anchor = String::from_utf8_lossy(&anchor.stdout).trim().to_owned();
    ran(&d);
    let ok = d.praxis(&["audit", "verify", "--anchor", &anchor]);
    assert!(ok.status.success(), "{ok:?}");

    // Someone with the key and the state dir rewrites history and the local
    // anchor alike: only the head kept elsewhere shows it.
    d.kill9();
    let state = d.dir.path().join("state/praxis");
    tamper(
        &d.db(),
        &["recompute", state.join("audit.key").to_str().unwrap()],
    );
    std::fs::remove_file(state.join("audit.anchor")).unwrap();
    d.spawn();
    assert!(
        d.praxis(&["audit", "verify"]).status.success(),
        "consistent in itself"
    );
    let out = d.praxis(&["audit", "verify", "--anchor", &anchor]);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("given anchor"),
        "{out:?}"
    );
}
