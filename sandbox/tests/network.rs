//! Network by namespace: a proxied command reaches only the egress listener
//! handed to the parent; host listeners on loopback stand in for other hosts.

mod common;

use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::os::fd::OwnedFd;
use std::time::Duration;

use common::{Fixture, PROXIED, have};
use praxis_sandbox::{Network, Profile, Spec, Stdio};

/// Starts `bash -c script` under `spec`, its stdout and stderr into a pipe.
fn spawn_bash(spec: &Spec, script: &str) -> (praxis_sandbox::Child, std::io::PipeReader) {
    let (reader, writer) = std::io::pipe().unwrap();
    let writer: OwnedFd = writer.into();
    let stdio = Stdio {
        stdin: std::fs::File::open("/dev/null").unwrap().into(),
        stdout: writer.try_clone().unwrap(),
        stderr: writer,
    };
    let prepared = praxis_sandbox::prepare(spec).unwrap();
    let argv: Vec<OsString> = ["bash", "-c", script].iter().map(OsString::from).collect();
    let child = praxis_sandbox::spawn(prepared, &argv, &spec.workspace, stdio).unwrap();
    (child, reader)
}

/// A thread that accepts one connection on `listener` and returns what it sent.
fn serve_once(listener: TcpListener) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = String::new();
        conn.read_to_string(&mut got).unwrap();
        got
    })
}

/// Waits for the command to end and returns its output.
fn finish(mut child: praxis_sandbox::Child, mut reader: std::io::PipeReader) -> String {
    let waited = child
        .wait_timeout(Duration::from_secs(30), Duration::from_secs(1))
        .unwrap();
    drop(child);
    let mut output = String::new();
    reader.read_to_string(&mut output).unwrap();
    assert!(!waited.timed_out, "{output}");
    output
}

/// Runs `bash -c script` under `spec`, serving the egress listener with a
/// thread that accepts one connection and returns what it sent. Returns the
/// command's output, the listener's port and what reached the listener.
fn run_proxied(spec: &Spec, script: &str) -> (String, u16, String) {
    let (mut child, reader) = spawn_bash(spec, script);
    let listener = child.take_egress_listener().expect("an egress listener");
    assert!(child.take_egress_listener().is_none(), "taken once");
    let port = listener.local_addr().unwrap().port();
    let served = serve_once(listener);
    let output = finish(child, reader);
    (output, port, served.join().unwrap())
}

#[test]
fn proxied_command_reaches_the_egress_listener_and_nothing_else() {
    if !have("bash") {
        return;
    }
    let fx = Fixture::new();
    let host_tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    host_tcp.set_nonblocking(true).unwrap();
    let host_udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    host_udp.set_nonblocking(true).unwrap();
    let (tcp_port, udp_port) = (
        host_tcp.local_addr().unwrap().port(),
        host_udp.local_addr().unwrap().port(),
    );
    // Each attempt reports its outcome; the last line goes through the proxy
    // variable's port.
    let script = format!(
        "(echo direct > /dev/tcp/127.0.0.1/{tcp_port}) 2>/dev/null; echo tcp=$?
         (echo dns > /dev/udp/127.0.0.1/{udp_port}) 2>/dev/null; echo udp=$?
         (echo far > /dev/tcp/192.0.2.1/80) 2>/dev/null; echo far=$?
         echo proxy=$http_proxy https=$HTTPS_PROXY all=$ALL_PROXY no=[$no_proxy]
         echo via-proxy > /dev/tcp/127.0.0.1/${{http_proxy##*:}}"
    );
    for profile in [Profile::WorkspaceWrite, Profile::Full] {
        let spec = fx.spec(profile, PROXIED);
        let (output, port, served) = run_proxied(&spec, &script);
        let url = format!("http://127.0.0.1:{port}");
        assert!(output.contains("tcp=1"), "{profile:?}: {output}");
        assert!(output.contains("far=1"), "{profile:?}: {output}");
        assert!(
            output.contains(&format!("proxy={url} https={url} all={url} no=[]")),
            "{profile:?}: {output}"
        );
        assert_eq!(served, "via-proxy\n", "{profile:?}: {output}");
        // Nothing reached the host side, whatever the sender saw.
        assert_eq!(
            host_tcp.accept().unwrap_err().kind(),
            ErrorKind::WouldBlock,
            "{profile:?}"
        );
        let mut buf = [0u8; 16];
        assert_eq!(
            host_udp.recv(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock,
            "{profile:?}: {output}"
        );
    }
}

#[test]
fn a_dropped_listener_leaves_the_command_without_network() {
    if !have("bash") {
        return;
    }
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, PROXIED);
    let (mut reader, writer) = std::io::pipe().unwrap();
    let writer: OwnedFd = writer.into();
    let stdio = Stdio {
        stdin: std::fs::File::open("/dev/null").unwrap().into(),
        stdout: writer.try_clone().unwrap(),
        stderr: writer,
    };
    let prepared = praxis_sandbox::prepare(&spec).unwrap();
    let script = "sleep 0.2; (echo x > /dev/tcp/127.0.0.1/${http_proxy##*:}) 2>/dev/null; echo $?";
    let argv: Vec<OsString> = ["bash", "-c", script].iter().map(OsString::from).collect();
    let mut child = praxis_sandbox::spawn(prepared, &argv, &spec.workspace, stdio).unwrap();
    drop(child.take_egress_listener());
    let waited = child
        .wait_timeout(Duration::from_secs(10), Duration::from_secs(1))
        .unwrap();
    drop(child);
    let mut output = String::new();
    reader.read_to_string(&mut output).unwrap();
    assert!(!waited.timed_out);
    assert_eq!(output, "1\n");
}

#[test]
fn a_fixed_egress_port_is_used() {
    if !have("bash") {
        return;
    }
    let fx = Fixture::new();
    let spec = fx.spec(
        Profile::WorkspaceWrite,
        Network::Proxied { port: Some(3128) },
    );
    let (output, port, served) = run_proxied(&spec, "echo $http_proxy > /dev/tcp/127.0.0.1/3128");
    assert_eq!(port, 3128);
    assert_eq!(served, "http://127.0.0.1:3128\n", "{output}");
}

#[test]
fn raw_and_packet_sockets_stay_refused_in_the_namespace() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::Full, PROXIED);
    assert_eq!(common::probe(&spec, "raw").code(), libc::EPERM);
    assert_eq!(common::probe(&spec, "packet").code(), libc::EPERM);
    assert_eq!(common::probe(&spec, "vsock").code(), libc::EPERM);
    assert_eq!(common::probe(&spec, "inet6").code(), 0);
}

#[test]
fn network_off_has_no_listener() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let prepared = praxis_sandbox::prepare(&spec).unwrap();
    assert!(prepared.restrictions().contains("network off"));
    let null = || -> OwnedFd { std::fs::File::open("/dev/null").unwrap().into() };
    let stdio = Stdio {
        stdin: null(),
        stdout: null(),
        stderr: null(),
    };
    let mut child = praxis_sandbox::spawn(
        prepared,
        &[OsString::from("/bin/true")],
        &spec.workspace,
        stdio,
    )
    .unwrap();
    assert!(child.take_egress_listener().is_none());
    child.wait().unwrap();
}

/// Driven by the other tests: opens one kind of socket and exits with its
/// errno (0 when it worked).
#[test]
#[ignore = "runs inside sandboxed children, driven by the other tests"]
fn probe_helper() {
    let Ok(probe) = std::env::var(common::PROBE_VAR) else {
        return;
    };
    let (family, kind) = match probe.as_str() {
        "raw" => (libc::AF_INET, libc::SOCK_RAW),
        "packet" => (libc::AF_PACKET, libc::SOCK_RAW),
        "vsock" => (libc::AF_VSOCK, libc::SOCK_STREAM),
        "inet6" => (libc::AF_INET6, libc::SOCK_STREAM),
        other => panic!("unknown probe {other}"),
    };
    // SAFETY: a raw socket call; the process exits right after.
    let fd = unsafe { libc::socket(family, kind, 0) };
    let code = if fd >= 0 {
        0
    } else {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
    };
    std::process::exit(code);
}

/// Runs `bash -c script` under `spec`, serving each socket relay listener
/// with a thread that accepts one connection. Returns the command's output
/// and what reached each listener, in the spec's order.
fn run_relayed(spec: &Spec, script: &str) -> (String, Vec<String>) {
    let (mut child, reader) = spawn_bash(spec, script);
    let listeners = child.take_socket_listeners();
    assert!(child.take_socket_listeners().is_empty(), "taken once");
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    assert_eq!(
        ports, spec.socket_relays,
        "one listener per relay, in order"
    );
    let served: Vec<_> = listeners.into_iter().map(serve_once).collect();
    let output = finish(child, reader);
    let served = served.into_iter().map(|s| s.join().unwrap()).collect();
    (output, served)
}

#[test]
fn socket_relays_hand_over_one_listener_each_with_the_network_off() {
    if !have("bash") {
        return;
    }
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.socket_relays = praxis_sandbox::relay_ports(2);
    let [first, second] = [spec.socket_relays[0], spec.socket_relays[1]];
    let script = "echo to-first > /dev/tcp/${PRAXIS_SOCKET_1/://}
         echo to-second > /dev/tcp/${PRAXIS_SOCKET_2/://}
         echo proxy=[$http_proxy] $PRAXIS_SOCKET_1 $PRAXIS_SOCKET_2";
    let (output, served) = run_relayed(&spec, script);
    assert_eq!(served, ["to-first\n", "to-second\n"], "{output}");
    assert!(
        output.contains(&format!("127.0.0.1:{first} 127.0.0.1:{second}")),
        "{output}"
    );
    // Network off stays off: no proxy to go out through.
    assert!(output.contains("proxy=[]"), "{output}");
}

#[test]
fn socket_relays_come_beside_the_egress_listener() {
    if !have("bash") {
        return;
    }
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, PROXIED);
    spec.socket_relays = praxis_sandbox::relay_ports(1);
    let relay = spec.socket_relays[0];
    let (output, served) =
        run_relayed(&spec, &format!("echo relayed > /dev/tcp/127.0.0.1/{relay}"));
    assert_eq!(served, ["relayed\n"], "{output}");
}
