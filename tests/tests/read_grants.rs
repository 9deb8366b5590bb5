//! Reads are an allow-list, and an approval grants one read exactly: a file
//! outside every read tree is held with its read grant, and the approved
//! run reads that file and not its neighbour. A real praxisd, the real
//! sandbox.

mod common;

use common::{Daemon, signal_json};

#[test]
fn an_approved_read_grant_reads_that_file_and_no_other() {
    let d = Daemon::start();
    // In no read tree, and not under /tmp (the command's private scratch).
    let outside_dir = common::outside_tmp();
    let outside = outside_dir.path().to_path_buf();
    let granted = outside.join("notes.txt");
    let other = outside.join("other.txt");
    std::fs::write(&granted, "granted-contents\n").unwrap();
    std::fs::write(&other, "other-contents\n").unwrap();
    let granted = granted.to_str().unwrap();
    let other = other.to_str().unwrap();

    let held = d.run(&["--", "cat", granted]);
    assert_eq!(held.status.code(), Some(125), "{held:?}");
    let signal = signal_json(&held);
    assert_eq!(signal["decision"], "HOLD", "{signal}");
    let reason = signal["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(&format!("will read {granted}")), "{signal}");
    let pending = d.praxis(&["pending"]);
    assert!(
        String::from_utf8_lossy(&pending.stdout).contains(&format!("will read {granted}")),
        "{pending:?}"
    );

    let out = d.approve_and_rerun(&["--", "cat", granted]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "granted-contents\n");

    // A neighbour named where the policy cannot see it (a command
    // substitution) rides along in the approved run and reads nothing: the
    // grant is that file's inode, not its directory.
    let out = d.approve_and_rerun(&["-c", &format!("cat {granted} $(echo {other})")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("granted-contents"), "{out:?}");
    assert!(!stdout.contains("other-contents"), "{out:?}");
}
