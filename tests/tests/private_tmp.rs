//! Each session's private `/tmp`, through a real praxisd: what one command
//! leaves there the next command of the same session reads; another
//! session does not see it, and neither does the host's shared `/tmp`.

mod common;

use std::path::Path;

use common::Daemon;

/// Runs `script` through praxis-run in `session`.
fn in_session(d: &Daemon, session: &str, script: &str) -> std::process::Output {
    d.run(&["--session", session, "-c", script])
}

#[test]
fn a_file_left_in_tmp_is_the_sessions_own() {
    let d = Daemon::start();
    let name = format!("praxis-e2e-private-{}.txt", std::process::id());
    let host = Path::new("/tmp").join(&name);
    let wrote = in_session(
        &d,
        "room-a",
        &format!("echo kept > /tmp/{name} && mktemp -d /tmp/x.XXXX"),
    );
    assert!(wrote.status.success(), "{wrote:?}");
    assert!(!host.exists(), "the host's shared /tmp got the file");

    let read = in_session(&d, "room-a", &format!("cat /tmp/{name}"));
    assert!(read.status.success(), "{read:?}");
    assert_eq!(String::from_utf8_lossy(&read.stdout), "kept\n");

    let other = in_session(&d, "room-b", &format!("cat /tmp/{name}"));
    assert!(
        !other.status.success(),
        "another session read it: {other:?}"
    );
    assert!(other.stdout.is_empty(), "{other:?}");

    // The session's private tmp is named by `praxis session show`.
    let shown = d.praxis(&["session", "show", "room-a"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("private /tmp"),
        "{shown:?}"
    );
}

#[test]
fn tmpdir_is_the_private_tmp_and_the_host_tmp_is_out_of_sight() {
    let d = Daemon::start();
    // A file only the host's /tmp has.
    let marker = tempfile::Builder::new()
        .prefix("praxis-e2e-host-")
        .tempfile_in("/tmp")
        .unwrap();
    let name = marker
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = in_session(
        &d,
        "room-c",
        &format!("echo \"$TMPDIR\"; ls -a /tmp | grep -c '^{name}$'"),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().next(), Some("/tmp"), "{out:?}");
    assert_eq!(text.lines().nth(1), Some("0"), "{out:?}");
}
