//! A pinned peer that has exited is refused, as a zombie and once reaped.
//! (Here, not beside the code: only the sandbox's spawn module may start a
//! process in the daemon's sources.)

use std::os::fd::AsFd;

use praxis_daemon::pinned::{PinError, PinnedPeer};

/// A process that connected to us (and waits for its stdin to close), and
/// its peer pinned.
fn connected_peer() -> (std::process::Child, PinnedPeer) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let child = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); sys.stdin.read()",
        ])
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (ours, _) = listener.accept().unwrap();
    (child, PinnedPeer::of(ours.as_fd()).unwrap())
}

#[test]
fn a_peer_that_exited_is_refused_zombie_or_reaped() {
    let (mut child, pinned) = connected_peer();
    let seen = pinned.examine(|now| now.pid).unwrap();
    assert_eq!(seen, child.id() as i32);
    drop(child.stdin.take());
    // A zombie until it is waited for: already refused.
    while std::fs::read_to_string(format!("/proc/{seen}/stat"))
        .is_ok_and(|stat| !stat.contains(") Z "))
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(matches!(pinned.examine(|_| ()), Err(PinError::Exited)));
    child.wait().unwrap();
    assert!(matches!(pinned.examine(|_| ()), Err(PinError::Exited)));
}

/// Where the cgroup v2 hierarchy is mounted, from our mountinfo.
fn cgroup2_mount() -> Option<std::path::PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .ok()?
        .lines()
        .find(|l| {
            l.split(" - ")
                .nth(1)
                .is_some_and(|t| t.starts_with("cgroup2 "))
        })
        .and_then(|l| l.split(' ').nth(4))
        .map(std::path::PathBuf::from)
}

/// A peer moved to another cgroup after it was examined is seen in the new
/// one: what is kept is kept by cgroup, not by process.
#[test]
fn a_peer_moved_to_another_cgroup_is_seen_there() {
    let Some(mount) = cgroup2_mount() else {
        eprintln!("skipped: no cgroup v2 hierarchy");
        return;
    };
    let moved = mount.join(format!("praxis-pinned-{}", std::process::id()));
    if std::fs::create_dir(&moved).is_err() {
        eprintln!("skipped: cannot make a cgroup under {}", mount.display());
        return;
    }
    let (mut child, pinned) = connected_peer();
    let before = pinned.examine(|now| now.cgroup.clone()).unwrap();
    let own = before.clone().expect("a cgroup v2 path");
    std::fs::write(moved.join("cgroup.procs"), child.id().to_string()).unwrap();
    let after = pinned.examine(|now| now.cgroup.clone()).unwrap();
    // Back where it was, so the cgroup can go.
    let back = mount.join(own.strip_prefix("/").unwrap());
    std::fs::write(back.join("cgroup.procs"), child.id().to_string()).unwrap();
    drop(child.stdin.take());
    child.wait().unwrap();
    std::fs::remove_dir(&moved).unwrap();
    assert_eq!(
        after,
        Some(std::path::PathBuf::from(format!(
            "/praxis-pinned-{}",
            std::process::id()
        )))
    );
    assert_ne!(after, before);
}
