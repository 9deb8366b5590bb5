//! A pinned peer that has exited is refused, as a zombie and once reaped.
//! (Here, not beside the code: only the sandbox's spawn module may start a
//! process in the daemon's sources.)

use std::os::fd::AsFd;

use praxis_daemon::pinned::{PinError, PinnedPeer};

#[test]
fn a_peer_that_exited_is_refused_zombie_or_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    // Connects, then waits for its stdin to close.
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); sys.stdin.read()",
        ])
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (ours, _) = listener.accept().unwrap();
    let pinned = PinnedPeer::of(ours.as_fd()).unwrap();
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
