//! praxisd's door, tried as a client and as an attacker: a connection a
//! client made itself is served through it, and the clients fall back to
//! the request socket without it; anything else handed in (a connection
//! someone else made, relayed by another process, a pipe, two descriptors
//! or none) is dropped, and praxisd keeps serving.

mod common;

use std::io::{BufRead, BufReader, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::Daemon;
use nix::sys::socket::{ControlMessage, MsgFlags, UnixAddr, sendmsg};
use praxis_proto::frame::{Frame, read_frame};
use praxis_proto::{ClientMsg, OperatorReply, OperatorRequest, ServerMsg};

fn door(d: &Daemon) -> PathBuf {
    d.socket().with_file_name("praxisd-door.sock")
}

/// Sends one datagram to the door with `fds` beside it.
fn knock(d: &Daemon, fds: &[RawFd]) {
    let socket = UnixDatagram::unbound().unwrap();
    let rights = [ControlMessage::ScmRights(fds)];
    let cmsgs: &[ControlMessage] = if fds.is_empty() { &[] } else { &rights };
    sendmsg(
        socket.as_raw_fd(),
        &[IoSlice::new(&[0])],
        cmsgs,
        MsgFlags::empty(),
        Some(&UnixAddr::new(&door(d)).unwrap()),
    )
    .unwrap();
}

fn frame(msg: &ClientMsg) -> Vec<u8> {
    Frame::message(msg).unwrap().encode().unwrap()
}

/// Asks for the status through the door on a socketpair made here, as
/// praxis-run does.
fn status_through_the_door(d: &Daemon) -> ServerMsg {
    let (ours, theirs) = UnixStream::pair().unwrap();
    (&ours)
        .write_all(&frame(&ClientMsg::Operator {
            request: OperatorRequest::Status,
        }))
        .unwrap();
    knock(d, &[theirs.as_raw_fd()]);
    drop(theirs);
    ours.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    read_frame(&mut &ours).unwrap().parse_message().unwrap()
}

#[test]
fn praxis_run_comes_through_the_door_and_falls_back_without_it() {
    let d = Daemon::start();
    // With the request socket gone, only the door leads in.
    let socket = d.socket();
    let aside = socket.with_file_name("aside.sock");
    std::fs::rename(&socket, &aside).unwrap();
    let out = d.run(&["--", "echo", "through the door"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, b"through the door\n");
    let hook = d.praxis_run(
        &["hook", "claude-code"],
        &serde_json::json!({
            "session_id": "door-1",
            "transcript_path": "/dev/null",
            "cwd": d.work(),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git status"},
        })
        .to_string(),
    );
    assert!(hook.status.success(), "{hook:?}");
    assert!(
        String::from_utf8_lossy(&hook.stdout).contains("allow"),
        "{hook:?}"
    );
    // With the door gone (an older praxisd), the request socket serves.
    std::fs::rename(&aside, &socket).unwrap();
    std::fs::remove_file(door(&d)).unwrap();
    let out = d.run(&["--", "echo", "through the socket"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, b"through the socket\n");
}

/// praxis-run hands its connection in before it has built its request (a
/// hook still reads its event): praxisd waits on it for the request, and a
/// connection its client leaves without one ends quietly.
#[test]
fn a_connection_handed_in_before_its_request_waits_for_it() {
    let d = Daemon::start();
    let (early, theirs) = UnixStream::pair().unwrap();
    knock(&d, &[theirs.as_raw_fd()]);
    drop(theirs);
    let (left, theirs) = UnixStream::pair().unwrap();
    knock(&d, &[theirs.as_raw_fd()]);
    drop(theirs);
    drop(left);
    std::thread::sleep(Duration::from_millis(300));
    (&early)
        .write_all(&frame(&ClientMsg::Operator {
            request: OperatorRequest::Status,
        }))
        .unwrap();
    early
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let reply: ServerMsg = read_frame(&mut &early).unwrap().parse_message().unwrap();
    assert!(
        matches!(
            reply,
            ServerMsg::Operator {
                reply: OperatorReply::Status(_)
            }
        ),
        "{reply:?}"
    );
    assert!(matches!(
        status_through_the_door(&d),
        ServerMsg::Operator {
            reply: OperatorReply::Status(_)
        }
    ));
}

/// An echo server in a process of its own: it sends back whatever its
/// one connection sends it.
struct Echo(Child);

impl Echo {
    fn start(path: &Path) -> Echo {
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import socket, sys\n\
                 s = socket.socket(socket.AF_UNIX)\n\
                 s.bind(sys.argv[1]); s.listen()\n\
                 print('ready', flush=True)\n\
                 c, _ = s.accept()\n\
                 while True:\n    \
                     b = c.recv(65536)\n    \
                     if not b: break\n    \
                     c.sendall(b)\n",
            ])
            .arg(path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        Echo(child)
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_connection_someone_else_made_is_not_served_in_its_name() {
    let d = Daemon::start();
    assert!(matches!(
        status_through_the_door(&d),
        ServerMsg::Operator {
            reply: OperatorReply::Status(_)
        }
    ));
    // A relay in another process: whatever reaches it comes back on the
    // connection to it, whose peer is that process. Handed in, a request
    // written to the relay would reach praxisd as the relay's own; here
    // an operator's kill switch.
    let relay_path = d.dir.path().join("relay.sock");
    let _relay = Echo::start(&relay_path);
    let to_relay = UnixStream::connect(&relay_path).unwrap();
    knock(&d, &[to_relay.as_raw_fd()]);
    // praxisd's own request socket: a connection to it names praxisd.
    let to_praxisd = UnixStream::connect(d.socket()).unwrap();
    knock(&d, &[to_praxisd.as_raw_fd()]);
    let kill = frame(&ClientMsg::Operator {
        request: OperatorRequest::Kill {
            reason: Some(String::from("through a relay")),
        },
    });
    (&to_relay).write_all(&kill).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    // The relay's echo is still there, unread by anyone else, and nothing
    // answered it.
    to_relay.set_nonblocking(true).unwrap();
    let mut echoed = vec![0u8; kill.len() + 4096];
    let got = (&to_relay).read(&mut echoed).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&echoed[..got]),
        String::from_utf8_lossy(&kill),
        "praxisd answered a request it read from the relay"
    );
    // A pipe, two descriptors, none: dropped too.
    let (read_end, write_end) = std::io::pipe().unwrap();
    knock(&d, &[read_end.as_raw_fd()]);
    let (one, two) = UnixStream::pair().unwrap();
    knock(&d, &[one.as_raw_fd(), two.as_raw_fd()]);
    knock(&d, &[]);
    drop((read_end, write_end));
    // praxisd still serves, through the door and the socket, and its kill
    // switch is off.
    let out = d.run(&["--", "echo", "still open"]);
    assert!(out.status.success(), "{out:?}");
    match status_through_the_door(&d) {
        ServerMsg::Operator {
            reply: OperatorReply::Status(status),
        } => assert_eq!(
            status.kill_switch, None,
            "the kill switch was tripped through the door"
        ),
        other => panic!("{other:?}"),
    }
    assert!(d.events_of_kind("kill").is_empty(), "{:?}", d.events());
}
