//! A launcher made ahead by a daemon holding `CAP_SYS_ADMIN` copies the
//! host's mounts while it waits. Its command must still see the host's
//! mounts as they are when it starts: a mount made or removed on the host
//! after the copy counts, and the stale copy is not used. (A test binary
//! of its own: spares are a per-process setting.)

mod common;

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Fixture, start_in};
use praxis_sandbox::{ExitStatus, Network, Profile, Spec};

/// A tmpfs the host mounts, with a marker file in it; unmounted when dropped.
struct HostMount(PathBuf);

impl HostMount {
    fn new(at: &Path) -> HostMount {
        let target = CString::new(at.as_os_str().as_bytes()).unwrap();
        // SAFETY: mounting a tmpfs on a live path with static strings.
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "mount: {}", std::io::Error::last_os_error());
        fs::write(at.join("marker"), "on the host's tmpfs\n").unwrap();
        HostMount(at.to_path_buf())
    }
}

impl Drop for HostMount {
    fn drop(&mut self) {
        let target = CString::new(self.0.as_os_str().as_bytes()).unwrap();
        // SAFETY: unmounting a live path.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// What a command started by a launcher found: whether it ran in its
/// launcher's copy of the mounts, and whether it saw the marker.
#[derive(Debug, PartialEq)]
struct Found {
    copied_ahead: bool,
    saw_marker: bool,
}

/// Makes a spare, lets `change` act on the host once its launcher has
/// copied the mounts, then runs a command that looks for the marker;
/// retried (up to 10 s) until a launcher started it. `change` is given the
/// mount of the try before, to keep or drop.
fn after_the_copy(
    spec: &Spec,
    ws: &Path,
    mut mount: Option<HostMount>,
    change: impl Fn(Option<HostMount>) -> Option<HostMount>,
) -> (Found, Option<HostMount>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        praxis_sandbox::make_spare();
        std::thread::sleep(Duration::from_millis(300));
        let before = mount.take();
        let started_unmounted = before.is_none();
        mount = change(before);
        let mut child = start_in(spec, ws, &["/bin/sh", "-c", "test -e mnt/marker"]);
        let placed = child.placed_ahead();
        let found = Found {
            copied_ahead: child.mounts_copied_ahead(),
            saw_marker: child.wait().unwrap() == ExitStatus::Code(0),
        };
        if placed {
            return (found, mount);
        }
        assert!(
            Instant::now() < deadline,
            "no command was started by a launcher"
        );
        // Back as the try found it.
        if started_unmounted {
            drop(mount.take());
        } else if mount.is_none() {
            mount = Some(HostMount::new(&ws.join("mnt")));
        }
    }
}

/// The mount namespaces this process holds descriptors on.
fn mount_namespaces_held() -> Vec<PathBuf> {
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("mnt:"))
        .collect()
}

#[test]
fn a_command_on_a_spare_sees_the_hosts_mounts_as_they_are_when_it_starts() {
    if !common::launchers_copy_mounts_here() {
        return;
    }
    praxis_sandbox::keep_spares();
    let fx = Fixture::new();
    fs::create_dir_all(&fx.scratch_root).unwrap();
    fs::create_dir(fx.ws.join("mnt")).unwrap();
    // A protected path that exists, so that commands are pinned in a mount
    // namespace of their own.
    fs::write(fx.ws.join(".mcp.json"), "{}\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    drop(start_in(&spec, &fx.ws, &["/bin/true"]));

    // Nothing changed since the copy: the command runs in it, which is not
    // the host's namespace.
    let (found, mount) = after_the_copy(&spec, &fx.ws, None, |none| none);
    assert_eq!(
        found,
        Found {
            copied_ahead: true,
            saw_marker: false
        }
    );
    assert!(mount.is_none());
    let deadline = Instant::now() + Duration::from_secs(10);
    let (held, mut sleeper) = loop {
        praxis_sandbox::make_spare();
        std::thread::sleep(Duration::from_millis(300));
        let held = mount_namespaces_held();
        let mut sleeper = start_in(&spec, &fx.ws, &["/bin/sleep", "30"]);
        if sleeper.placed_ahead() || Instant::now() > deadline {
            break (held, sleeper);
        }
        sleeper.terminate_group(Duration::from_secs(1)).unwrap();
    };
    assert!(sleeper.mounts_copied_ahead());
    let ns = |pid: &str| fs::read_link(format!("/proc/{pid}/ns/mnt")).unwrap();
    let its = ns(&sleeper.pid().to_string());
    assert_ne!(its, ns("self"));
    // Held before the command started, so that its last exit does not
    // free it and wait for an RCU grace period before we hear of it.
    assert!(held.contains(&its), "{its:?} not among {held:?}");
    sleeper.terminate_group(Duration::from_secs(1)).unwrap();
    drop(sleeper);

    // The host mounts a tmpfs after the launcher's copy: the copy is
    // stale, and the command sees the new mount.
    let (found, mount) = after_the_copy(&spec, &fx.ws, None, |_| {
        Some(HostMount::new(&fx.ws.join("mnt")))
    });
    assert_eq!(
        found,
        Found {
            copied_ahead: false,
            saw_marker: true
        },
        "a mount made after the launcher's copy"
    );
    assert!(mount.is_some());

    // The host unmounts it after the next launcher's copy (which still
    // holds it): the command does not see it.
    let (found, mount) = after_the_copy(&spec, &fx.ws, mount, |mount| {
        drop(mount);
        None
    });
    assert_eq!(
        found,
        Found {
            copied_ahead: false,
            saw_marker: false
        },
        "a mount removed after the launcher's copy"
    );
    assert!(mount.is_none());
    praxis_sandbox::discard_spare();
}
