//! A unix socket is reached only through a grant, and only by relay: a rule
//! that names a socket holds the command for an operator, naming the
//! socket; the approved run reaches the service through a TCP listener in
//! its own network namespace, while making a unix socket itself stays
//! refused. A real praxisd, the real sandbox, a stand-in for docker's socket.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Daemon, signal_json};

const VERSION: &str = r#"{"Version":"27.0.0-standin"}"#;

/// Serves `GET /version` on a unix socket at `path` from a thread, for the
/// test's life; counts the requests it answered.
fn stand_in(path: &Path) -> Arc<AtomicUsize> {
    let listener = UnixListener::bind(path).unwrap();
    let answered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&answered);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let body = if request.starts_with(b"GET /version ") {
                VERSION
            } else {
                "{}"
            };
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    answered
}

/// A script in the workspace that makes a unix socket, connects it to its
/// argument and says how it went: `connected`, or `refused <errno>`.
const CONNECT_PY: &str = "\
import socket, sys
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    print('connected')
except OSError as e:
    print('refused', e.errno)
";

#[test]
fn a_granted_socket_is_relayed_after_approval_and_nothing_else_is_reachable() {
    let dir = tempfile::tempdir().unwrap();
    let sockets = dir.path().join("sockets");
    std::fs::create_dir_all(&sockets).unwrap();
    let api = sockets.join("api.sock");
    let other = sockets.join("other.sock");
    let answered = stand_in(&api);
    let other_answered = stand_in(&other);
    let policy = format!(
        r#"
[[rule]]
id = "curl-api-socket"
decision = "hold"
reason = "curl talks to the local API service through its socket"
program = ["curl"]
sockets = ["{}"]
match = ["curl -s http://x/version"]
not_match = ["wget http://x/version"]
"#,
        api.display()
    );
    let d = Daemon::start_in(dir, &[("policy.toml", &policy)], &[]);
    std::fs::write(d.work().join("connect.py"), CONNECT_PY).unwrap();
    let api = api.to_str().unwrap();
    let other = other.to_str().unwrap();

    // Without the grant: making a unix socket is refused (EPERM), whatever
    // the path.
    let out = d.run(&["-c", &format!("python3 connect.py {api}")]);
    assert_ne!(out.status.code(), Some(125), "it must run: {out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("refused {}", libc::EPERM),
        "{out:?}"
    );

    // With it: held for an operator, naming the socket.
    let command = format!(
        "curl -s -m 5 http://$PRAXIS_SOCKET_1/version; echo; \
         python3 connect.py {other}; python3 connect.py {api}"
    );
    let held = d.run(&["-c", &command]);
    assert_eq!(held.status.code(), Some(125), "{held:?}");
    let signal = signal_json(&held);
    assert_eq!(signal["decision"], "HOLD", "{signal}");
    assert!(
        signal["reason"].as_str().unwrap_or_default().contains(api),
        "{signal}"
    );
    let pending = d.praxis(&["pending"]);
    assert!(
        String::from_utf8_lossy(&pending.stdout)
            .contains(&format!("will connect to the socket {api}")),
        "{pending:?}"
    );
    assert_eq!(answered.load(Ordering::SeqCst), 0, "nothing ran yet");

    // Approved: the relay answers, and the wall still holds in that very
    // command, for another socket and for the granted one itself.
    let out = d.approve_and_rerun(&["-c", &command]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let eperm = format!("refused {}", libc::EPERM);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, [VERSION, &eperm, &eperm], "{out:?}");
    assert_eq!(answered.load(Ordering::SeqCst), 1);
    assert_eq!(other_answered.load(Ordering::SeqCst), 0);

    // The audit names the relayed connection.
    let relayed = format!("unix:{api}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !d
        .egress_events()
        .contains(&(relayed.clone(), "allowed".into()))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            d.egress_events()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
