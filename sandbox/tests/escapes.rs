//! Real children: each escape tried and shown to fail, each allowed path
//! shown to work. Tests run as root in CI, so identity checks use `run_as`.

mod common;

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::time::Duration;

use common::{Fixture, PROBE_VAR, PROXIED, nobody, probe, sh};
use praxis_sandbox::{Network, Profile, SandboxError};

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
}

/// Driven by the other tests: tries one raw system call inside the sandbox
/// and exits with its errno (0 when it succeeded).
#[test]
#[ignore = "runs inside sandboxed children, driven by the other tests"]
fn probe_helper() {
    let Ok(probe) = std::env::var(PROBE_VAR) else {
        return;
    };
    // SAFETY: (whole block) raw system calls on stack data; the forked child
    // only pauses and is killed.
    let code = unsafe {
        match probe.as_str() {
            "io_uring" => {
                let mut params = [0u64; 15];
                if libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) >= 0 {
                    0
                } else {
                    last_errno()
                }
            }
            "ptrace" => {
                let sibling = libc::fork();
                if sibling == 0 {
                    libc::pause();
                    libc::_exit(0);
                }
                let rc = libc::ptrace(libc::PTRACE_ATTACH, sibling, 0, 0);
                let code = if rc == 0 { 0 } else { last_errno() };
                libc::kill(sibling, libc::SIGKILL);
                code
            }
            "tiocsti" => {
                let byte = b'x';
                if libc::ioctl(0, libc::TIOCSTI, &byte) == 0 {
                    0
                } else {
                    last_errno()
                }
            }
            "unshare" => {
                if libc::unshare(libc::CLONE_NEWUSER) == 0 {
                    0
                } else {
                    last_errno()
                }
            }
            // Make a pinned path writable again: clear the read-only
            // attribute of its mount, or clone the mount to attach anew.
            unpin if unpin.starts_with("unpin-setattr:") => {
                let path = std::ffi::CString::new(&unpin[14..]).unwrap();
                let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                let attr = libc::mount_attr {
                    attr_set: 0,
                    attr_clr: libc::MOUNT_ATTR_RDONLY,
                    propagation: 0,
                    userns_fd: 0,
                };
                if fd >= 0
                    && libc::syscall(
                        libc::SYS_mount_setattr,
                        fd,
                        c"".as_ptr(),
                        libc::AT_EMPTY_PATH,
                        &raw const attr,
                        size_of::<libc::mount_attr>(),
                    ) == 0
                {
                    0
                } else {
                    last_errno()
                }
            }
            unpin if unpin.starts_with("unpin-clone:") => {
                let path = std::ffi::CString::new(&unpin[12..]).unwrap();
                let flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC;
                if libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) >= 0 {
                    0
                } else {
                    last_errno()
                }
            }
            "socketpair" => {
                let mut fds = [0; 2];
                if libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) == 0 {
                    0
                } else {
                    last_errno()
                }
            }
            unix if unix.starts_with("unix:") => {
                let path = std::ffi::CString::new(&unix[5..]).unwrap();
                let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                if fd < 0 {
                    last_errno()
                } else {
                    let mut addr: libc::sockaddr_un = std::mem::zeroed();
                    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
                    for (dst, src) in addr.sun_path.iter_mut().zip(path.as_bytes()) {
                        *dst = *src as libc::c_char;
                    }
                    let len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
                    if libc::connect(fd, (&raw const addr).cast(), len) == 0 {
                        0
                    } else {
                        last_errno()
                    }
                }
            }
            other => panic!("unknown probe {other}"),
        }
    };
    std::process::exit(code);
}

#[test]
fn writes_inside_workspace_and_tmpdir_work_outside_fail() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let inside = sh(
        &spec,
        "echo in > inside.txt && mkdir -p sub/dir && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    );
    assert!(inside.ok(), "{}", inside.output);
    assert_eq!(
        fs::read_to_string(fx.ws.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(inside.scratch.starts_with(&fx.scratch_root));
    assert!(
        !inside.scratch.exists(),
        "scratch dir is removed afterwards"
    );

    let out = fx.outside.join("x");
    let outside = sh(&spec, &format!("echo out > {}", out.display()));
    assert!(!outside.ok());
    assert!(!out.exists());
    assert!(!sh(&spec, &format!("touch {}/new", fx.home.display())).ok());
    assert!(!sh(&spec, "echo x > /etc/praxis-test").ok());

    // The same write is allowed where the profile says so: the test can fail.
    let full = sh(
        &fx.spec(Profile::Full, Network::Off),
        &format!("echo out > {}", out.display()),
    );
    assert!(full.ok(), "{}", full.output);
}

#[test]
fn read_only_profile_writes_only_tmpdir() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::ReadOnly, Network::Off);
    assert!(!sh(&spec, "echo in > inside.txt").ok());
    let ran = sh(
        &spec,
        "echo t > \"$TMPDIR/t\" && cat inside.txt 2>/dev/null; ls >/dev/null && echo x > /dev/null",
    );
    assert!(ran.ok(), "{}", ran.output);
}

/// A workspace whose `.git` holds a hooks directory and a config file.
fn with_git_dir() -> Fixture {
    let fx = Fixture::new();
    fs::create_dir_all(fx.ws.join(".git/hooks")).unwrap();
    fs::write(fx.ws.join(".git/config"), "[core]\n").unwrap();
    fx
}

#[test]
fn git_hooks_and_config_stay_unwritable_but_git_dir_works() {
    let fx = with_git_dir();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    assert!(!sh(&spec, "echo evil > .git/hooks/pre-commit").ok());
    assert!(!fx.ws.join(".git/hooks/pre-commit").exists());
    assert!(!sh(&spec, "echo evil >> .git/config").ok());
    assert!(!sh(&spec, "mv .git/hooks .git/old-hooks").ok());
    assert!(!sh(&spec, "mv .git .git-moved").ok());
    assert!(!sh(&spec, "rm .git/config").ok());
    assert_eq!(
        fs::read_to_string(fx.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // Other files in .git and at the workspace root can still be created.
    let prepared = praxis_sandbox::prepare(&spec).unwrap();
    let restrictions = prepared.restrictions();
    for part in [
        "profile workspace-write",
        "network off",
        "2 protected paths mounted read-only",
    ] {
        assert!(restrictions.contains(part), "{restrictions}");
    }
    drop(prepared);
    let ok = sh(
        &spec,
        "echo x > .git/index.lock && mv .git/index.lock .git/index && echo y > top.txt",
    );
    assert!(ok.ok(), "{}", ok.output);
}

/// Each protected path is a mount of its own, read-only, without set-id
/// programs or devices, from the command's first instruction on.
#[test]
fn protected_paths_are_read_only_mounts_of_their_own() {
    let fx = with_git_dir();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    // Field 5 of a mountinfo line is the mount point, field 6 its options.
    let ran = sh(&spec, "cat /proc/self/mountinfo");
    assert!(ran.ok(), "{}", ran.output);
    for pinned in [".git/hooks", ".git/config"] {
        let point = fx.ws.join(pinned);
        let options: Vec<&str> = ran
            .output
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                (fields.get(4) == Some(&point.to_str().unwrap())).then(|| fields[5])
            })
            .collect();
        assert_eq!(options.len(), 1, "{pinned}: {}", ran.output);
        for wanted in ["ro", "nosuid", "nodev"] {
            assert!(
                options[0].split(',').any(|o| o == wanted),
                "{pinned} mounted {}",
                options[0]
            );
        }
    }
}

/// From inside the command, the pins' mounts cannot be changed or cloned
/// to be attached anew (writable): the mount calls are refused.
#[test]
fn a_command_cannot_make_a_pin_writable_again() {
    let fx = with_git_dir();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    for pinned in [".git/hooks", ".git/config"] {
        let path = fx.ws.join(pinned);
        let path = path.to_str().unwrap();
        for how in ["unpin-setattr", "unpin-clone"] {
            let target = format!("{how}:{path}");
            assert_eq!(probe(&spec, &target).code(), libc::EPERM, "{target}");
        }
    }
    assert!(!sh(&spec, "echo evil > .git/hooks/pre-commit").ok());
    assert!(!fx.ws.join(".git/hooks/pre-commit").exists());
}

#[test]
fn a_write_grant_releases_exactly_the_protected_path_it_names() {
    let fx = with_git_dir();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.write_grants = vec![fx.ws.join(".git/config")];
    // In place, and as git writes it: a lock file beside it renamed over it.
    let appended = sh(&spec, "printf '[x]\\n' >> .git/config");
    assert!(appended.ok(), "{}", appended.output);
    let replaced = sh(
        &spec,
        "cat .git/config > .git/config.lock && printf '[y]\\n' >> .git/config.lock \
         && mv .git/config.lock .git/config",
    );
    assert!(replaced.ok(), "{}", replaced.output);
    assert_eq!(
        fs::read_to_string(fx.ws.join(".git/config")).unwrap(),
        "[core]\n[x]\n[y]\n"
    );
    // The hooks stay pinned in the same command.
    assert!(!sh(&spec, "echo evil > .git/hooks/pre-commit").ok());
    assert!(!sh(&spec, "mv .git/hooks .git/old-hooks").ok());
    assert!(!fx.ws.join(".git/hooks/pre-commit").exists());
    let prepared = praxis_sandbox::prepare(&spec).unwrap();
    assert!(
        prepared
            .restrictions()
            .contains("1 protected paths mounted read-only"),
        "{}",
        prepared.restrictions()
    );
}

#[test]
fn git_hooks_that_do_not_exist_yet_cannot_be_created() {
    let fx = Fixture::new();
    fs::create_dir_all(fx.ws.join(".git/objects")).unwrap();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    assert!(
        !sh(
            &spec,
            "mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit"
        )
        .ok()
    );
    assert!(!fx.ws.join(".git/hooks").exists());
    let prepared = praxis_sandbox::prepare(&spec).unwrap();
    assert_eq!(
        prepared.unguarded(),
        [fx.ws.join(".mcp.json")],
        "a missing top-level name is reported"
    );
}

#[test]
fn protected_path_swapped_for_a_symlink_after_prepare_is_refused() {
    let fx = Fixture::new();
    fs::create_dir_all(fx.ws.join(".git/hooks")).unwrap();
    fs::write(fx.ws.join(".git/config"), "").unwrap();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let prepared = praxis_sandbox::prepare(&spec).unwrap();
    fs::remove_dir(fx.ws.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(&fx.outside, fx.ws.join(".git/hooks")).unwrap();
    let null = || -> std::os::fd::OwnedFd { fs::File::open("/dev/null").unwrap().into() };
    let stdio = praxis_sandbox::Stdio {
        stdin: null(),
        stdout: null(),
        stderr: null(),
    };
    let argv = ["/bin/sh", "-c", "touch .git/hooks/pre-commit"].map(std::ffi::OsString::from);
    let err = praxis_sandbox::spawn(prepared, &argv, &fx.ws, stdio).unwrap_err();
    assert_eq!(err.to_string(), "mount of protected paths failed: ELOOP");
    assert!(!fx.outside.join("pre-commit").exists());
}

#[test]
fn symlink_in_workspace_does_not_lead_outside() {
    let fx = Fixture::new();
    std::os::unix::fs::symlink(&fx.outside, fx.ws.join("link")).unwrap();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    assert!(!sh(&spec, "echo x > link/escaped").ok());
    assert!(!fx.outside.join("escaped").exists());
    // A link pointing inside stays usable.
    std::os::unix::fs::symlink(fx.ws.join("sub"), fx.ws.join("inner")).unwrap();
    fs::create_dir(fx.ws.join("sub")).unwrap();
    assert!(sh(&spec, "echo x > inner/f").ok());
    // A workspace that is itself a symlink is refused, not followed.
    let mut linked = spec.clone();
    linked.workspace = fx.ws.join("link");
    assert!(matches!(
        praxis_sandbox::prepare(&linked),
        Err(SandboxError::Rules(_))
    ));
}

#[test]
fn secrets_are_unreadable() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let secret = sh(&spec, "cat \"$HOME/.ssh/id_rsa\"");
    assert!(!secret.ok());
    assert!(!secret.output.contains("PRIVATE KEY"));
    let public = sh(&spec, "cat \"$HOME/notes\"");
    assert!(
        public.ok() && public.output.contains("public"),
        "{}",
        public.output
    );
    // On no list: unreadable by every path to it.
    for path in [
        "$HOME/.config/app/token",
        "/proc/self/root$HOME/.config/app/token",
        "$HOME/./.config/../.config/app/token",
    ] {
        let unlisted = sh(&spec, &format!("cat \"{path}\"; base64 \"{path}\""));
        assert!(
            !unlisted.output.contains("UNLISTED"),
            "{path}: {}",
            unlisted.output
        );
        assert!(
            !unlisted.output.contains("VU5MSVNURU"),
            "{path}: {}",
            unlisted.output
        );
    }
    assert!(!sh(&spec, "ls \"$HOME\"").ok());
    let mut with_shadow = spec.clone();
    with_shadow.secrets.push("/etc/shadow".into());
    if std::path::Path::new("/etc/shadow").exists() {
        assert!(!sh(&with_shadow, "cat /etc/shadow").ok());
        assert!(sh(&with_shadow, "cat /etc/passwd >/dev/null").ok());
    }
    let full = sh(
        &fx.spec(Profile::Full, Network::Off),
        "cat \"$HOME/.ssh/id_rsa\"",
    );
    assert!(
        full.output.contains("PRIVATE KEY"),
        "full profile has no filesystem rules"
    );
}

#[test]
fn secrets_inside_a_writable_workspace_stay_hidden() {
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.workspace = fx.home.clone();
    fs::write(fx.home.join(".netrc"), "machine x password hunter2\n").unwrap();
    spec.secrets.push(fx.home.join(".netrc"));
    let read = run_in_home(&spec, "cat .ssh/id_rsa; cat .netrc; ls -A .ssh");
    assert!(
        !read.output.contains("PRIVATE KEY") && !read.output.contains("hunter2"),
        "{}",
        read.output
    );
    assert!(!run_in_home(&spec, "mv .ssh moved").ok());
    let write = run_in_home(&spec, "echo x > new-at-root && mkdir -p project/src");
    assert!(write.ok(), "{}", write.output);
    assert_eq!(
        fs::read_to_string(fx.home.join(".ssh/id_rsa")).unwrap(),
        "PRIVATE KEY\n"
    );
}

fn run_in_home(spec: &praxis_sandbox::Spec, script: &str) -> common::Ran {
    common::run_in(spec, &spec.home, &["/bin/sh", "-c", script])
}

#[test]
fn the_host_is_out_of_reach_and_a_loopback_of_its_own_works_with_network_off() {
    if !common::have("bash") {
        return;
    }
    let fx = Fixture::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let datagrams = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    datagrams.set_nonblocking(true).unwrap();
    let udp_port = datagrams.local_addr().unwrap().port();
    let tcp = format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'");
    let udp = format!("bash -c 'echo hi > /dev/udp/127.0.0.1/{udp_port}'");
    // A server and its client inside one command.
    let own = "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); \
               s.listen(); c=socket.create_connection(s.getsockname()); \
               a, _=s.accept(); c.sendall(b\"ok\"); print(a.recv(2).decode())'";
    for profile in [Profile::ReadOnly, Profile::WorkspaceWrite, Profile::Full] {
        let off = fx.spec(profile, Network::Off);
        assert!(!sh(&off, &tcp).ok(), "{profile:?}");
        // Sent into the command's own loopback: the host's socket gets nothing.
        let _ = sh(&off, &udp);
        let mut buf = [0u8; 8];
        assert!(datagrams.recv(&mut buf).is_err(), "{profile:?}");
        if common::have("python3") {
            let ran = sh(&off, own);
            assert!(
                ran.ok() && ran.output.trim() == "ok",
                "{profile:?}: {}",
                ran.output
            );
        }
    }
}

#[test]
fn unix_socket_outside_is_unreachable_but_socketpair_works() {
    let fx = Fixture::new();
    let path = fx.outside.join("daemon.sock");
    let _listener = UnixListener::bind(&path).unwrap();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let target = format!("unix:{}", path.display());
    assert_eq!(probe(&spec, &target).code(), libc::EPERM);
    assert_eq!(probe(&spec, "socketpair").code(), 0);
    // With network (path-named sockets are not in the network namespace),
    // in every profile, and a socket in the command's own workspace alike:
    // no `socket(AF_UNIX)`, so no path-named socket is reachable.
    for profile in [Profile::ReadOnly, Profile::WorkspaceWrite, Profile::Full] {
        let on = fx.spec(profile, PROXIED);
        assert_eq!(probe(&on, &target).code(), libc::EPERM, "{profile:?}");
        assert_eq!(probe(&on, "socketpair").code(), 0, "{profile:?}");
    }
    let inside = fx.ws.join("own.sock");
    let _own = UnixListener::bind(&inside).unwrap();
    let target = format!("unix:{}", inside.display());
    assert_eq!(probe(&spec, &target).code(), libc::EPERM);
}

#[test]
fn kernel_attack_surface_is_refused() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::Full, PROXIED);
    assert_eq!(probe(&spec, "io_uring").code(), libc::EPERM);
    assert_eq!(probe(&spec, "ptrace").code(), libc::EPERM);
    // Without the filter this would be ENOTTY (stdin is /dev/null).
    assert_eq!(probe(&spec, "tiocsti").code(), libc::EPERM);
    assert_eq!(probe(&spec, "unshare").code(), libc::EPERM);
}

#[test]
fn signals_do_not_leave_the_sandbox() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::Full, PROXIED);
    assert!(!sh(&spec, "kill -0 1").ok());
    assert!(sh(&spec, "kill -0 $$").ok());
}

#[test]
fn setuid_binary_gains_nothing() {
    if !common::may_switch_user() {
        return;
    }
    let fx = Fixture::new();
    let id = fx.ws.join("suid-id");
    fs::copy("/usr/bin/id", &id).unwrap();
    fs::set_permissions(&id, fs::Permissions::from_mode(0o4755)).unwrap();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.run_as = Some(nobody());
    let ran = common::run_in(&spec, &fx.ws, &[id.to_str().unwrap(), "-u"]);
    assert!(ran.ok(), "{}", ran.output);
    assert_eq!(ran.output.trim(), "65534");
}

#[test]
fn setuid_and_setgid_bits_cannot_be_set() {
    let fx = Fixture::new();
    let file = fx.ws.join("tool");
    fs::write(&file, "#!/bin/sh\n").unwrap();
    for profile in [Profile::WorkspaceWrite, Profile::Full] {
        let spec = fx.spec(profile, Network::Off);
        for mode in ["u+s", "g+s", "4755", "6700"] {
            let ran = sh(&spec, &format!("chmod {mode} tool"));
            assert!(!ran.ok(), "{profile:?} chmod {mode}");
            assert!(
                ran.output.contains("Operation not permitted"),
                "{profile:?} chmod {mode}: {}",
                ran.output
            );
        }
        let plain = sh(&spec, "chmod 1755 tool && chmod 755 tool");
        assert!(plain.ok(), "{profile:?}: {}", plain.output);
    }
    let mode = fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o755);
}

#[test]
fn environment_is_allowlisted() {
    let fx = Fixture::new();
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.env.push(("LD_PRELOAD".into(), "/evil.so".into()));
    spec.env.push(("BASH_ENV".into(), "/evil".into()));
    spec.env.push(("GH_TOKEN".into(), "brokered".into()));
    spec.extra_env_allow
        .extend(["LD_PRELOAD".to_owned(), "GH_TOKEN".to_owned()]);
    let ran = common::run_in(&spec, &fx.ws, &["/usr/bin/env"]);
    assert!(ran.ok(), "{}", ran.output);
    let lines: Vec<&str> = ran.output.lines().collect();
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("LD_PRELOAD=") || l.starts_with("BASH_ENV="))
    );
    assert!(lines.contains(&"GH_TOKEN=brokered"));
    assert!(lines.contains(&"PRAXIS_SANDBOX=workspace-write"));
    assert!(lines.contains(&"PRAXIS_SANDBOX_NETWORK_DISABLED=1"));
    assert!(lines.contains(&format!("HOME={}", fx.home.display()).as_str()));
    assert!(lines.contains(&format!("TMPDIR={}", ran.scratch.display()).as_str()));
}

#[test]
fn capabilities_are_zero_and_privileges_frozen() {
    let fx = Fixture::new();
    let others = common::may_switch_user().then(nobody);
    for run_as in [None, others] {
        let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
        spec.run_as = run_as.clone();
        let ran = common::run_in(&spec, &fx.ws, &["/bin/cat", "/proc/self/status"]);
        assert!(ran.ok(), "{}", ran.output);
        let field = |name: &str| {
            ran.output
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_owned())
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        for cap in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
            assert_eq!(
                field(cap),
                "0000000000000000",
                "{cap} with run_as {run_as:?}"
            );
        }
        assert_eq!(field("NoNewPrivs:"), "1");
        assert_eq!(field("Seccomp:"), "2");
        if run_as.is_some() {
            assert!(field("Uid:").starts_with("65534\t65534\t65534"));
            assert_eq!(field("Groups:"), "");
        }
    }
}

#[test]
fn rlimits_are_applied() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::ReadOnly, Network::Off);
    let ran = common::run_in(&spec, &fx.ws, &["/bin/cat", "/proc/self/limits"]);
    assert!(ran.ok(), "{}", ran.output);
    let limit = |name: &str| {
        let line = ran.output.lines().find(|l| l.starts_with(name)).unwrap();
        line[name.len()..]
            .split_whitespace()
            .take(2)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(limit("Max cpu time"), ["7", "7"]);
    assert_eq!(limit("Max file size"), ["1048576", "1048576"]);
    assert_eq!(limit("Max open files"), ["64", "64"]);
    assert_eq!(limit("Max core file size"), ["0", "0"]);
    // The file size limit bites.
    let big = sh(
        &fx.spec(Profile::WorkspaceWrite, Network::Off),
        "head -c 2000000 /dev/zero > big",
    );
    assert!(!big.ok());
    assert!(fs::metadata(fx.ws.join("big")).unwrap().len() <= 1 << 20);
}

fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn timeout_kills_the_whole_process_tree() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let prepared = praxis_sandbox::prepare(&spec).unwrap();
    let null = || -> std::os::fd::OwnedFd { fs::File::open("/dev/null").unwrap().into() };
    let stdio = praxis_sandbox::Stdio {
        stdin: null(),
        stdout: null(),
        stderr: null(),
    };
    // The tree ignores SIGTERM, so only the SIGKILL after the grace ends it.
    let script = "trap '' TERM; sleep 100 & echo $! > pids; sleep 100 & echo $! >> pids; wait";
    let argv = ["/bin/sh", "-c", script].map(std::ffi::OsString::from);
    let mut child = praxis_sandbox::spawn(prepared, &argv, &fx.ws, stdio).unwrap();
    let waited = child
        .wait_timeout(Duration::from_millis(500), Duration::from_millis(200))
        .unwrap();
    assert!(waited.timed_out);
    assert_eq!(
        waited.status,
        praxis_sandbox::ExitStatus::Signal(libc::SIGKILL)
    );
    let pids: Vec<i32> = fs::read_to_string(fx.ws.join("pids"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    std::thread::sleep(Duration::from_millis(100));
    for pid in pids {
        assert!(!alive(pid), "grandchild {pid} survived");
    }
    assert!(
        child.signal_group(libc::SIGTERM).is_err(),
        "a reaped group is not signalled"
    );
}

#[test]
fn a_command_that_finishes_in_time_is_not_timed_out() {
    let fx = Fixture::new();
    let ran = sh(&fx.spec(Profile::ReadOnly, Network::Off), "exit 3");
    assert!(!ran.waited.timed_out);
    assert_eq!(ran.code(), 3);
}

#[test]
fn failures_before_exec_are_reported_and_nothing_runs() {
    let fx = Fixture::new();
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    let null = || -> std::os::fd::OwnedFd { fs::File::open("/dev/null").unwrap().into() };
    let stdio = praxis_sandbox::Stdio {
        stdin: null(),
        stdout: null(),
        stderr: null(),
    };
    let argv = ["/bin/sh", "-c", "touch ran"].map(std::ffi::OsString::from);
    let err = praxis_sandbox::spawn(
        praxis_sandbox::prepare(&spec).unwrap(),
        &argv,
        &fx.ws.join("no-such-dir"),
        stdio,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "chdir failed: ENOENT");
    assert!(!fx.ws.join("ran").exists());
    let stdio = praxis_sandbox::Stdio {
        stdin: null(),
        stdout: null(),
        stderr: null(),
    };
    let missing = ["no-such-praxis-program"].map(std::ffi::OsString::from);
    let err = praxis_sandbox::spawn(
        praxis_sandbox::prepare(&spec).unwrap(),
        &missing,
        &fx.ws,
        stdio,
    );
    assert!(matches!(err, Err(SandboxError::NotFound(_))));
}

#[test]
fn self_test_passes_and_support_is_complete() {
    let fx = Fixture::new();
    let report = praxis_sandbox::self_test(&fx.scratch_root).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
    assert!(report.restrictions.contains("workspace-write"));
    let support = praxis_sandbox::support();
    assert!(support.problems().is_empty(), "{:?}", support.problems());
    assert!(support.landlock_abi >= praxis_sandbox::MIN_LANDLOCK_ABI);
    assert!(support.net_namespace, "root can make network namespaces");
}

/// A bind mount that the test makes and always removes.
struct BindMount(std::path::PathBuf);

impl BindMount {
    fn new(source: &std::path::Path, target: &std::path::Path) -> Option<BindMount> {
        fs::create_dir_all(target).unwrap();
        let made = std::process::Command::new("mount")
            .arg("--bind")
            .arg(source)
            .arg(target)
            .status()
            .is_ok_and(|s| s.success());
        made.then(|| BindMount(target.to_path_buf()))
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("--lazy")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn another_mount_of_the_home_opens_nothing() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: making a bind mount needs root");
        return;
    }
    let fx = Fixture::new();
    // The home, and its secret dir alone, shown again inside a read tree.
    let mirror = fx.outside.join("mirror");
    let keys = fx.outside.join("keys");
    let (Some(_mirror), Some(_keys)) = (
        BindMount::new(&fx.home, &mirror),
        BindMount::new(&fx.home.join(".ssh"), &keys),
    ) else {
        eprintln!("skipped: mount --bind refused");
        return;
    };
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    for path in [
        mirror.join(".ssh/id_rsa"),
        keys.join("id_rsa"),
        mirror.join(".config/app/token"),
        fx.home.join(".ssh/id_rsa"),
    ] {
        let ran = sh(&spec, &format!("cat '{}'", path.display()));
        assert!(!ran.ok(), "{}: {}", path.display(), ran.output);
        assert!(!ran.output.contains("PRIVATE KEY"), "{}", ran.output);
        assert!(!ran.output.contains("UNLISTED"), "{}", ran.output);
    }
    // What the list names stays readable through the other path too.
    assert!(sh(&spec, &format!("cat '{}'", mirror.join("notes").display())).ok());
}
