//! A command's descendants that leave its session (`setsid`) still end with
//! it when tracking is by cgroup: at the command's end, on terminate_group,
//! and on timeout.

mod common;

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

use common::Fixture;
use praxis_sandbox::{Child, Network, PrivateTmp, Profile, Spec, Stdio, Tracking};

/// A shell that starts a grandchild in a session of its own, prints its pid,
/// then runs `rest`.
fn escaping(rest: &str) -> String {
    format!("setsid sleep 1000.5 >/dev/null 2>&1 </dev/null & echo $!; {rest}")
}

/// Whether the host gives commands a cgroup; prints a notice when not.
fn tracked() -> bool {
    match praxis_sandbox::tracking() {
        Tracking::Cgroup(_) => true,
        Tracking::ProcessGroup(why) => {
            println!("skipping: no cgroup per command here ({why})");
            false
        }
    }
}

/// Spawns `sh -c script` and reads the first line it prints (a pid).
fn start(fx: &Fixture, script: &str) -> (Child, i32) {
    start_under(&fx.spec(Profile::WorkspaceWrite, Network::Off), fx, script)
}

/// [`start`] under `spec`.
fn start_under(spec: &Spec, fx: &Fixture, script: &str) -> (Child, i32) {
    let (reader, writer) = std::io::pipe().unwrap();
    let stdio = Stdio {
        stdin: std::fs::File::open("/dev/null").unwrap().into(),
        stdout: OwnedFd::from(writer),
        stderr: std::fs::File::create("/dev/null").unwrap().into(),
    };
    let prepared = praxis_sandbox::prepare(spec).unwrap();
    let argv: Vec<OsString> = ["/bin/sh", "-c", script].map(OsString::from).to_vec();
    let child = praxis_sandbox::spawn(prepared, &argv, &fx.ws, stdio).unwrap();
    let mut line = String::new();
    BufReader::new(reader).read_line(&mut line).unwrap();
    (child, line.trim().parse().expect("a pid"))
}

/// The state letter and session id of `pid`, while it exists.
fn state_and_session(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let session = rest.nth(2)?.parse().ok()?;
    Some((state, session))
}

/// Gone, or a zombie waiting for whoever adopted it.
fn dead(pid: i32) -> bool {
    state_and_session(pid).is_none_or(|(state, _)| state == 'Z')
}

fn assert_dies(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !dead(pid) {
        assert!(
            Instant::now() < deadline,
            "the setsid'd grandchild {pid} outlived its command"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The grandchild runs in a session other than the command's.
fn assert_escaped(child: &Child, pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (state, session) = state_and_session(pid).expect("grandchild running");
        assert_ne!(state, 'Z');
        // `setsid` runs in the command's session until it calls setsid(2).
        if session == pid {
            assert_ne!(session, child.pid());
            return;
        }
        assert!(Instant::now() < deadline, "setsid never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn leftovers_in_another_session_die_with_the_command() {
    if !tracked() {
        return;
    }
    let fx = Fixture::new();
    let (mut child, pid) = start(&fx, &escaping("exit 3"));
    let cgroup = child.cgroup().expect("a cgroup").to_path_buf();
    assert!(cgroup.join("cgroup.procs").exists());
    assert_eq!(child.wait().unwrap().shell_code(), 3);
    assert_dies(pid);
    assert!(!cgroup.exists(), "the cgroup is removed once empty");
}

#[test]
fn wait_leaving_kills_leftovers_before_it_returns_and_leaves_only_the_removal() {
    if !tracked() {
        return;
    }
    let fx = Fixture::new();
    let (child, pid) = start(&fx, &escaping("exit 3"));
    let cgroup = child.cgroup().expect("a cgroup").to_path_buf();
    let (waited, leftovers) = child.wait_leaving();
    assert_eq!(waited.unwrap().shell_code(), 3);
    assert_dies(pid);
    assert!(cgroup.exists(), "removed only by the leftovers");
    leftovers.remove().unwrap();
    assert!(!cgroup.exists(), "the cgroup is removed once empty");
}

#[test]
fn wait_leaving_reads_the_exit_and_leaves_the_reap_to_the_leftovers() {
    if !tracked() {
        return;
    }
    let fx = Fixture::new();
    for (script, code) in [("exit 7", 7), ("kill -TERM $$", 128 + libc::SIGTERM)] {
        let (child, _) = start(&fx, &escaping(script));
        let leader = child.pid();
        let (waited, leftovers) = child.wait_leaving();
        assert_eq!(waited.unwrap().shell_code(), code, "{script}");
        assert_eq!(
            state_and_session(leader).map(|(state, _)| state),
            Some('Z'),
            "the leader is reaped only with the leftovers"
        );
        leftovers.remove().unwrap();
        assert!(
            state_and_session(leader).is_none(),
            "the leftovers reap the leader"
        );
    }
}

#[test]
fn terminate_group_reaches_other_sessions() {
    if !tracked() {
        return;
    }
    let fx = Fixture::new();
    let (mut child, pid) = start(&fx, &escaping("sleep 1000"));
    assert_escaped(&child, pid);
    let status = child.terminate_group(Duration::from_millis(200)).unwrap();
    assert_eq!(status.shell_code(), 128 + libc::SIGTERM);
    assert_dies(pid);
}

#[test]
fn a_timeout_reaches_other_sessions() {
    if !tracked() {
        return;
    }
    let fx = Fixture::new();
    let (mut child, pid) = start(&fx, &escaping("sleep 1000"));
    assert_escaped(&child, pid);
    let waited = child
        .wait_timeout(Duration::from_millis(300), Duration::from_millis(100))
        .unwrap();
    assert!(waited.timed_out);
    assert_dies(pid);
}

#[test]
fn a_sigkill_to_the_group_reaches_other_sessions_before_the_reap() {
    if !tracked() {
        return;
    }
    let fx = Fixture::new();
    let (mut child, pid) = start(&fx, &escaping("sleep 1000"));
    assert_escaped(&child, pid);
    child.signal_group(libc::SIGKILL).unwrap();
    assert_dies(pid);
    assert_eq!(child.wait().unwrap().shell_code(), 128 + libc::SIGKILL);
}

#[test]
fn tracking_names_its_base_or_reason() {
    match praxis_sandbox::tracking() {
        Tracking::Cgroup(base) => {
            assert!(base.dir.join("cgroup.kill").exists());
            let name = base.dir.file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(name, format!("praxisd-{}", std::process::id()));
        }
        Tracking::ProcessGroup(why) => assert!(!why.is_empty()),
    }
    assert!(Path::new("/proc/self").exists());
}

/// `pid`'s namespace of `kind` (`mnt`, `net`), as its `/proc` link names it.
fn namespace(pid: i32, kind: &str) -> String {
    let link = std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).unwrap();
    link.to_string_lossy().into_owned()
}

/// Whether this process holds a descriptor on the namespace `ns`.
fn held(ns: &str) -> bool {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|target| target.as_os_str() == ns)
}

/// Whether the kernel hands out a process's namespaces through its pidfd
/// (Linux 6.11).
fn pidfd_namespaces() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut numbers = release
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().unwrap_or(0));
    (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0)) >= (6, 11)
}

/// A command's mount namespace is freed when its last holder lets go, and
/// freeing one waits for an RCU grace period: praxisd holds it from the
/// start, so that wait comes with the leftovers' removal, not inside the
/// command's exit before its status can be read.
#[test]
fn a_commands_mount_namespace_is_held_until_its_leftovers_are_removed() {
    if !pidfd_namespaces() {
        println!("skipping: no namespaces through a pidfd before Linux 6.11");
        return;
    }
    let fx = Fixture::new();
    // A private /tmp is mounted in a mount namespace of the command's own.
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let tmp = fx.scratch_root.with_file_name("private-tmp");
    let private = PrivateTmp {
        tmp: tmp.join("tmp"),
        var_tmp: tmp.join("var-tmp"),
    };
    for dir in [&private.tmp, &private.var_tmp] {
        std::fs::create_dir_all(dir).unwrap();
    }
    spec.private_tmp = Some(private);
    let (child, _) = start_under(&spec, &fx, "echo $$; sleep 0.3");
    let ns = namespace(child.pid(), "mnt");
    assert_ne!(ns, namespace(std::process::id() as i32, "mnt"));
    assert!(held(&ns), "the spawn holds the command's mount namespace");
    let (waited, leftovers) = child.wait_leaving();
    assert_eq!(waited.unwrap().shell_code(), 0);
    assert!(held(&ns), "still held once the command has exited");
    leftovers.remove().unwrap();
    assert!(!held(&ns), "let go with the leftovers");
}
