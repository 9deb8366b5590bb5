//! The cloned child: raw, async-signal-safe system calls on data prepared by
//! the parent, ending in `execve` (or in the self-test probes). Nothing here
//! allocates, locks, panics or writes outside its own stack: the child shares
//! the daemon's memory until it execs (`CLONE_VM | CLONE_VFORK`), and the
//! daemon's other threads keep running meanwhile.

use std::ffi::{CStr, c_char};
use std::os::fd::RawFd;

use crate::pins::{Mask, Pin, UserNsMaps};

/// A step of the child's set-up; its code travels through the error pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Stage {
    Setsid = 1,
    Stdio,
    CloseRange,
    Signals,
    Rlimit,
    Unshare,
    IdMap,
    Mount,
    Chdir,
    CapBound,
    Setgroups,
    Setresgid,
    Setresuid,
    Pdeathsig,
    ParentGone,
    CapAmbient,
    Capset,
    CapCheck,
    NoNewPrivs,
    Landlock,
    Seccomp,
    Exec,
    Probe,
    Cgroup,
    Loopback,
    EgressListener,
    Handoff,
}

const STAGES: [Stage; 27] = [
    Stage::Setsid,
    Stage::Stdio,
    Stage::CloseRange,
    Stage::Signals,
    Stage::Rlimit,
    Stage::Unshare,
    Stage::IdMap,
    Stage::Mount,
    Stage::Chdir,
    Stage::CapBound,
    Stage::Setgroups,
    Stage::Setresgid,
    Stage::Setresuid,
    Stage::Pdeathsig,
    Stage::ParentGone,
    Stage::CapAmbient,
    Stage::Capset,
    Stage::CapCheck,
    Stage::NoNewPrivs,
    Stage::Landlock,
    Stage::Seccomp,
    Stage::Exec,
    Stage::Probe,
    Stage::Cgroup,
    Stage::Loopback,
    Stage::EgressListener,
    Stage::Handoff,
];

impl Stage {
    pub(crate) fn from_code(code: u32) -> Option<Stage> {
        STAGES.iter().copied().find(|s| *s as u32 == code)
    }

    /// The system call (or check) the stage is named after, for error messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stage::Setsid => "setsid",
            Stage::Stdio => "dup2 of stdio",
            Stage::CloseRange => "close_range",
            Stage::Signals => "sigprocmask",
            Stage::Rlimit => "setrlimit",
            Stage::Unshare => "unshare of the user, mount or network namespace",
            Stage::IdMap => "writing the user namespace id maps",
            Stage::Mount => "mount of protected paths",
            Stage::Chdir => "chdir",
            Stage::CapBound => "PR_CAPBSET_DROP",
            Stage::Setgroups => "setgroups",
            Stage::Setresgid => "setresgid",
            Stage::Setresuid => "setresuid",
            Stage::Pdeathsig => "PR_SET_PDEATHSIG",
            Stage::ParentGone => "parent check",
            Stage::CapAmbient => "PR_CAP_AMBIENT_CLEAR_ALL",
            Stage::Capset => "capset",
            Stage::CapCheck => "capget check (capabilities remain)",
            Stage::NoNewPrivs => "PR_SET_NO_NEW_PRIVS",
            Stage::Landlock => "landlock_restrict_self",
            Stage::Seccomp => "seccomp(SECCOMP_SET_MODE_FILTER)",
            Stage::Exec => "execve",
            Stage::Probe => "self-test probe",
            Stage::Cgroup => "joining the command's cgroup",
            Stage::Loopback => "bringing up lo in the network namespace",
            Stage::EgressListener => "binding a listener (egress or socket relay)",
            Stage::Handoff => "handing a listener to the parent",
        }
    }
}

/// The identity switch, borrowed from prepared data.
pub(crate) struct Identity<'a> {
    pub(crate) uid: libc::uid_t,
    pub(crate) gid: libc::gid_t,
    pub(crate) groups: &'a [libc::gid_t],
}

/// The listeners the child makes in its network namespace: the egress
/// listener (when the network is on), then one per socket relay.
pub(crate) struct NetNs<'a> {
    /// `127.0.0.1:port` each, network byte order.
    pub(crate) listeners: &'a [libc::sockaddr_in],
    /// The child's end of the close-on-exec socketpair the listeners are
    /// passed over (SCM_RIGHTS, one message each).
    pub(crate) handoff_fd: RawFd,
}

/// What the child does once sandboxed.
pub(crate) enum Then<'a> {
    /// `execve(program, argv, envp)`; both arrays end with a null pointer.
    Exec {
        program: &'a CStr,
        argv: &'a [*const c_char],
        envp: &'a [*const c_char],
    },
    /// Run the self-test probes and report which escapes worked.
    Probe(&'a crate::escape_probes::ProbeArgs),
}

/// Everything the child needs, borrowed from prepared data.
pub(crate) struct Plan<'a> {
    pub(crate) stdio: [RawFd; 3],
    pub(crate) report_fd: RawFd,
    /// The `cgroup.procs` of each of the command's cgroups (none when
    /// neither tracking nor limits are by cgroup).
    pub(crate) cgroup_procs: &'a [RawFd],
    /// Started by a launcher made ahead, which already leads a session of
    /// its own in the command's cgroups (`cgroup_procs` is then empty).
    pub(crate) placed_ahead: bool,
    pub(crate) parent_pid: libc::pid_t,
    pub(crate) rlimits: &'a [(libc::c_int, u64)],
    /// A mount namespace of its own, for a private `/tmp` and the pins.
    pub(crate) mount_ns: bool,
    /// The launcher's copy of the host's mounts, made while it waited, is
    /// current: it is that namespace, and nothing is copied now.
    pub(crate) mounts_copied_ahead: bool,
    /// The host's mount namespace, to go back into first: the launcher
    /// copied the mounts ahead, and the copy is stale or not wanted (-1:
    /// stay where it is).
    pub(crate) host_mount_ns: RawFd,
    /// A network namespace of its own, with its listeners.
    pub(crate) net: Option<&'a NetNs<'a>>,
    /// That namespace made ahead, to join instead of making one (-1: none).
    pub(crate) netns_fd: RawFd,
    /// Maps for a user namespace of its own, made with the other namespaces
    /// when the daemon lacks CAP_SYS_ADMIN (or alone, so that RLIMIT_NPROC
    /// counts the command's processes only).
    pub(crate) userns: Option<&'a UserNsMaps>,
    pub(crate) pins: &'a [Pin],
    pub(crate) masks: &'a [Mask],
    /// A private `/tmp` to mount before the pins.
    pub(crate) tmp: Option<&'a crate::private_tmp::TmpPlan>,
    pub(crate) cwd: &'a CStr,
    pub(crate) drop_bounding: bool,
    pub(crate) last_cap: libc::c_ulong,
    pub(crate) identity: Option<Identity<'a>>,
    pub(crate) ruleset_fd: RawFd,
    pub(crate) landlock_flags: u32,
    pub(crate) filter: &'a [libc::sock_filter],
    pub(crate) then: Then<'a>,
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_VERSION_3: u32 = 0x2008_0522;
const DEV_NULL: &CStr = c"/dev/null";
const ROOT: &CStr = c"/";
const TMPFS: &CStr = c"tmpfs";
const EMPTY_TMPFS: &CStr = c"size=4k,nr_inodes=1,mode=0500";

fn errno() -> i32 {
    // SAFETY: reading the thread's errno location is async-signal-safe.
    unsafe { *libc::__errno_location() }
}

/// Where [`bind`] puts a copy of a tree.
#[derive(Clone, Copy)]
enum Onto<'a> {
    /// A path.
    Path(&'a CStr),
    /// The very place a descriptor (`O_PATH`) names.
    Place(RawFd),
}

/// Binds a copy of the tree `source` names (with the mounts below it when
/// `recursive`) onto `onto`, `attrs` (`MOUNT_ATTR_*`) set on the copy
/// before it is attached; the errno when it fails. By the mount API's
/// descriptors rather than by `/proc/self/fd/<fd>` paths: looking those
/// up makes the kernel fill `/proc` for a process that has not used it
/// yet, most of a bind's time.
///
/// # Safety
/// Raw system calls on open descriptors and prepared C strings.
unsafe fn bind(source: RawFd, recursive: bool, attrs: u64, onto: Onto<'_>) -> Result<(), i32> {
    let here = c"".as_ptr();
    let mut flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | libc::AT_EMPTY_PATH as u32;
    if recursive {
        flags |= libc::AT_RECURSIVE as u32;
    }
    // SAFETY: (whole block) raw system calls on descriptors, an empty C
    // string, a static one and a stack value; the tree opened here is
    // closed here.
    unsafe {
        let tree = libc::syscall(libc::SYS_open_tree, source, here, flags) as RawFd;
        if tree < 0 {
            return Err(errno());
        }
        let attr = libc::mount_attr {
            attr_set: attrs,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        let set = attrs == 0
            || libc::syscall(
                libc::SYS_mount_setattr,
                tree,
                here,
                libc::AT_EMPTY_PATH,
                &raw const attr,
                size_of::<libc::mount_attr>(),
            ) == 0;
        let (dir, path, to) = match onto {
            Onto::Path(path) => (libc::AT_FDCWD, path.as_ptr(), 0),
            Onto::Place(fd) => (fd, here, libc::MOVE_MOUNT_T_EMPTY_PATH),
        };
        let moved = set
            && libc::syscall(
                libc::SYS_move_mount,
                tree,
                here,
                dir,
                path,
                libc::MOVE_MOUNT_F_EMPTY_PATH | to,
            ) == 0;
        let err = errno();
        libc::close(tree);
        if moved { Ok(()) } else { Err(err) }
    }
}

/// Writes `(stage, value)` to the report pipe.
pub(crate) fn report(report_fd: RawFd, stage: Stage, value: i32) {
    let mut buf = [0u8; 8];
    buf[..4].copy_from_slice(&(stage as u32).to_ne_bytes());
    buf[4..].copy_from_slice(&value.to_ne_bytes());
    // SAFETY: write is async-signal-safe; buf outlives the call. A short
    // write shows up as a truncated report in the parent.
    unsafe { libc::write(report_fd, buf.as_ptr().cast(), buf.len()) };
}

/// Reports `(stage, errno)` and exits without running anything: the parent
/// turns it into a `SandboxError`.
fn fail(report_fd: RawFd, stage: Stage, err: i32) -> ! {
    report(report_fd, stage, err);
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(127) }
}

/// In the command's network namespace: brings `lo` up (the kernel gives it
/// 127.0.0.1 and ::1) unless `lo_up` says it is (a namespace made ahead),
/// binds and listens on each of `net.listeners`, and
/// sends each listening socket to the parent over the handoff socketpair.
/// The child's own copies are closed: only the parent accepts on them.
///
/// # Safety
/// Raw system calls on stack data only; to be called in the cloned child.
unsafe fn net_listeners(net: &NetNs<'_>, lo_up: bool) -> Result<(), (Stage, i32)> {
    // SAFETY: (whole block) raw system calls on stack values.
    unsafe {
        if !lo_up {
            crate::netns::loopback_up().map_err(|errno| (Stage::Loopback, errno))?;
        }
        for addr in net.listeners {
            listen_and_hand_over(addr, net.handoff_fd)?;
        }
    }
    Ok(())
}

/// Binds and listens on `addr`, then sends the socket over `handoff_fd`
/// and closes the child's copy.
///
/// # Safety
/// Raw system calls on stack data only; to be called in the cloned child.
unsafe fn listen_and_hand_over(
    addr: &libc::sockaddr_in,
    handoff_fd: RawFd,
) -> Result<(), (Stage, i32)> {
    // SAFETY: (whole block) raw system calls on stack values; the
    // descriptor opened here is closed here.
    unsafe {
        let listener = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if listener < 0 {
            return Err((Stage::EgressListener, errno()));
        }
        let raw = (addr as *const libc::sockaddr_in).cast::<libc::sockaddr>();
        let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(listener, raw, len) != 0 || libc::listen(listener, libc::SOMAXCONN) != 0 {
            let err = errno();
            libc::close(listener);
            return Err((Stage::EgressListener, err));
        }

        // One byte of data carries one descriptor (SCM_RIGHTS); the control
        // buffer is u64-aligned as cmsghdr requires.
        let mut byte = 0u8;
        let mut iov = libc::iovec {
            iov_base: (&raw mut byte).cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 4];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as usize;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as usize;
        libc::CMSG_DATA(cmsg)
            .cast::<RawFd>()
            .write_unaligned(listener);
        let sent = libc::sendmsg(handoff_fd, &msg, libc::MSG_NOSIGNAL);
        let err = errno();
        libc::close(listener);
        if sent != 1 {
            return Err((Stage::Handoff, err));
        }
    }
    Ok(())
}

/// Mounts the private `/tmp` and `/var/tmp` over the host's, then binds
/// back each tree that must stay in reach at its own path; the errno of the
/// first step that fails (the mounts made before it stay). Every source is
/// opened first: once `/tmp` is covered, a source under it is out of sight.
/// With `held` (a launcher made ahead: one descriptor per source, in the
/// plan's order, that the daemon opened), each source must be the very
/// inode held.
///
/// # Safety
/// Raw system calls on prepared data only; to be called in the cloned
/// child or a launcher, in its own mount namespace.
pub(crate) unsafe fn mount_tmp(
    tmp: &crate::private_tmp::TmpPlan,
    held: Option<&[RawFd]>,
) -> Result<(), i32> {
    let mut covers = [-1 as RawFd; 2];
    let mut shown = [-1 as RawFd; crate::private_tmp::MAX_SHOWN];
    let sources = covers
        .iter_mut()
        .zip(tmp.covers.iter().map(|(source, _)| source))
        .chain(shown.iter_mut().zip(tmp.shown.iter()));
    let mut opened = Ok(());
    // SAFETY: (whole block) raw system calls on prepared C strings, stack
    // values and open descriptors; every descriptor opened here is closed
    // here.
    unsafe {
        for (i, (slot, path)) in sources.enumerate() {
            *slot = libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            );
            let same = held.is_none_or(|held| held.get(i).is_some_and(|&h| same_inode(*slot, h)));
            if *slot < 0 || !same {
                opened = Err(if *slot < 0 { errno() } else { libc::ESTALE });
                break;
            }
        }
        let mounted = opened.and_then(|()| bind_tmp(&covers, &shown, tmp));
        for source in covers.into_iter().chain(shown).filter(|&s| s >= 0) {
            libc::close(source);
        }
        mounted
    }
}

/// Whether two descriptors name the same inode. Async-signal-safe.
fn same_inode(a: RawFd, b: RawFd) -> bool {
    // SAFETY: fstat into zeroed stack values.
    unsafe {
        let (mut x, mut y): (libc::stat, libc::stat) = (std::mem::zeroed(), std::mem::zeroed());
        libc::fstat(a, &mut x) == 0
            && libc::fstat(b, &mut y) == 0
            && (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino)
    }
}

/// Binds the private `/tmp` of `tmp` from its sources, opened already, in
/// their order: each private directory over the one it covers, then each
/// tree shown again at its own path.
///
/// # Safety
/// Raw system calls on open descriptors and prepared C strings.
unsafe fn bind_tmp(
    covers: &[RawFd],
    shown: &[RawFd],
    tmp: &crate::private_tmp::TmpPlan,
) -> Result<(), i32> {
    // SAFETY: (whole block) binds of open descriptors onto prepared paths.
    unsafe {
        for (&source, (_, covered)) in covers.iter().zip(tmp.covers.iter()) {
            bind(source, false, 0, Onto::Path(covered))?;
        }
        for (&source, path) in shown.iter().zip(tmp.shown.iter()) {
            bind(source, true, 0, Onto::Path(path))?;
        }
    }
    Ok(())
}

/// Sets every catchable signal's disposition back to the default, the
/// real-time ones included (an ignored signal stays ignored across exec).
/// The spawner blocks every handled signal, so none of the daemon's handlers
/// (copied at the clone) can run in a child, in the daemon's memory,
/// before this.
///
/// # Safety
/// Only in a child cloned by the spawner, before it execs.
pub(crate) unsafe fn default_handlers() {
    // The kernel's `struct sigaction` all zero: handler SIG_DFL, no flags,
    // empty mask, whatever its layout on this architecture. The raw call,
    // because libc refuses the two signals its threads use itself.
    let default = [0u64; 4];
    for sig in 1..=64 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // SAFETY: rt_sigaction reads a zeroed struct at least as large
            // as the kernel's, with the kernel's signal set size.
            unsafe {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig,
                    default.as_ptr(),
                    std::ptr::null_mut::<libc::c_void>(),
                    size_of::<u64>(),
                )
            };
        }
    }
}

/// Makes the mounts of our new mount namespace slaves of the host's: ours
/// must not propagate back. Async-signal-safe.
pub(crate) fn one_way() -> bool {
    let no_type: *const c_char = std::ptr::null();
    // SAFETY: a raw mount call on a static path and null pointers.
    unsafe {
        libc::mount(
            no_type,
            ROOT.as_ptr(),
            no_type,
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) == 0
    }
}

/// Drops every capability up to `last_cap` from the bounding set, which
/// needs `CAP_SETPCAP`; whether all drops succeeded. A drop that returns 0
/// has cleared the bit (the kernel does nothing else); reading each one
/// back doubled the calls.
///
/// # Safety
/// Only in a child cloned by the spawner, before it execs.
pub(crate) unsafe fn drop_bounding_set(last_cap: libc::c_ulong) -> bool {
    // SAFETY: prctl with plain integer arguments.
    (0..=last_cap).all(|cap| unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } == 0)
}

/// Attaches the seccomp program `filter` to the calling thread (which has
/// set no-new-privs, or holds CAP_SYS_ADMIN); whether it is attached.
///
/// # Safety
/// Only in a child cloned by the spawner, before it execs.
pub(crate) unsafe fn attach_filter(filter: &[libc::sock_filter]) -> bool {
    let prog = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: seccomp reads the program through a pointer to a live local.
    unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog) == 0 }
}

/// Runs the child's set-up. Called right after `clone` in the child.
///
/// # Safety
/// Must run in a freshly cloned child, with every pointer in `plan` valid
/// (the parent keeps the data alive until the child has exec'd or exited).
pub(crate) unsafe fn run(plan: &Plan<'_>) -> ! {
    let fd = plan.report_fd;
    let check = |stage: Stage, ok: bool| {
        if !ok {
            fail(fd, stage, errno());
        }
    };
    // SAFETY: (whole block) every call is a raw system call or an
    // async-signal-safe libc wrapper, on pointers to stack values or to
    // data the parent keeps alive until the exec.
    unsafe {
        if !plan.placed_ahead {
            check(Stage::Setsid, libc::setsid() >= 0);
        }
        // Into the command's cgroups before anything else can fork, and
        // while still privileged enough to write there.
        for &procs in plan.cgroup_procs {
            check(
                Stage::Cgroup,
                libc::write(procs, c"0".as_ptr().cast(), 1) == 1,
            );
        }

        // Move stdio above 2 first so overlapping numbers cannot clobber each
        // other, then onto 0..2 (dup2 clears close-on-exec there).
        let mut high = [0; 3];
        for (slot, &src) in high.iter_mut().zip(plan.stdio.iter()) {
            *slot = libc::fcntl(src, libc::F_DUPFD_CLOEXEC, 3);
            check(Stage::Stdio, *slot >= 0);
        }
        for (target, &src) in high.iter().enumerate() {
            check(Stage::Stdio, libc::dup2(src, target as RawFd) >= 0);
        }
        check(
            Stage::CloseRange,
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            ) == 0,
        );

        // The daemon may block or ignore signals; a command starts clean.
        // Handlers go first (a launcher made ahead reset them already).
        if !plan.placed_ahead {
            default_handlers();
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        check(
            Stage::Signals,
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) == 0,
        );

        if plan.host_mount_ns >= 0 {
            check(
                Stage::Unshare,
                libc::setns(plan.host_mount_ns, libc::CLONE_NEWNS) == 0,
            );
        }
        let copy_mounts_now = plan.mount_ns && !plan.mounts_copied_ahead;
        let mut namespaces = 0;
        if copy_mounts_now {
            namespaces |= libc::CLONE_NEWNS;
        }
        if plan.net.is_some() && plan.netns_fd < 0 {
            namespaces |= libc::CLONE_NEWNET;
        }
        if plan.netns_fd >= 0 {
            check(
                Stage::Unshare,
                libc::setns(plan.netns_fd, libc::CLONE_NEWNET) == 0,
            );
        }
        if namespaces != 0 || plan.userns.is_some() {
            match plan.userns {
                None => check(Stage::Unshare, libc::unshare(namespaces) == 0),
                Some(maps) => {
                    check(
                        Stage::Unshare,
                        libc::unshare(libc::CLONE_NEWUSER | namespaces) == 0,
                    );
                    for (file, content) in [
                        (c"/proc/self/setgroups", c"deny"),
                        (c"/proc/self/uid_map", maps.uid_map.as_c_str()),
                        (c"/proc/self/gid_map", maps.gid_map.as_c_str()),
                    ] {
                        let out = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                        check(Stage::IdMap, out >= 0);
                        let len = content.to_bytes().len();
                        check(
                            Stage::IdMap,
                            libc::write(out, content.as_ptr().cast(), len) == len as isize,
                        );
                        libc::close(out);
                    }
                }
            }
        }
        if let Some(net) = plan.net
            && let Err((stage, err)) = net_listeners(net, plan.netns_fd >= 0)
        {
            fail(fd, stage, err);
        }

        if plan.mount_ns {
            let no_type: *const c_char = std::ptr::null();
            let no_data: *const libc::c_void = std::ptr::null();
            if copy_mounts_now {
                check(Stage::Mount, one_way());
            }
            if let Some(tmp) = plan.tmp
                && let Err(err) = mount_tmp(tmp, None)
            {
                fail(fd, Stage::Mount, err);
            }
            for pin in plan.pins {
                let path = pin.path.as_ptr();
                // Bind the very inode that was planned, through its descriptor:
                // a pin swapped for a symlink since then fails instead of
                // being followed. Ancestors are pinned first, so they hold.
                let inode = libc::open(path, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC);
                check(Stage::Mount, inode >= 0);
                let mut st: libc::stat = std::mem::zeroed();
                check(Stage::Mount, libc::fstat(inode, &mut st) == 0);
                if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                    fail(fd, Stage::Mount, libc::ELOOP);
                }
                // A read-only pin's copy is made read-only before it is
                // attached: it is never writable where the command looks.
                let attrs = if pin.read_only {
                    libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV
                } else {
                    0
                };
                if let Err(err) = bind(inode, false, attrs, Onto::Place(inode)) {
                    fail(fd, Stage::Mount, err);
                }
                libc::close(inode);
            }
            for mask in plan.masks {
                let target = mask.path.as_ptr();
                let covered = if mask.empty_dir {
                    let flags =
                        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                    libc::mount(
                        TMPFS.as_ptr(),
                        target,
                        TMPFS.as_ptr(),
                        flags,
                        EMPTY_TMPFS.as_ptr().cast(),
                    )
                } else {
                    libc::mount(DEV_NULL.as_ptr(), target, no_type, libc::MS_BIND, no_data)
                };
                check(Stage::Mount, covered == 0);
            }
        }

        // After the mounts, so a cwd inside a pinned tree sees them.
        check(Stage::Chdir, libc::chdir(plan.cwd.as_ptr()) == 0);

        // Dropping the bounding set needs CAP_SETPCAP, so it comes before the
        // identity switch.
        if plan.drop_bounding {
            check(Stage::CapBound, drop_bounding_set(plan.last_cap));
        }
        if let Some(id) = &plan.identity {
            check(
                Stage::Setgroups,
                libc::syscall(libc::SYS_setgroups, id.groups.len(), id.groups.as_ptr()) == 0,
            );
            check(
                Stage::Setresgid,
                libc::syscall(libc::SYS_setresgid, id.gid, id.gid, id.gid) == 0,
            );
            check(
                Stage::Setresuid,
                libc::syscall(libc::SYS_setresuid, id.uid, id.uid, id.uid) == 0,
            );
        }

        // A credential change clears the parent-death signal, so it is set
        // after it; the parent may already be gone by then.
        check(
            Stage::Pdeathsig,
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == 0,
        );
        if libc::getppid() != plan.parent_pid {
            fail(fd, Stage::ParentGone, libc::ESRCH);
        }

        check(
            Stage::CapAmbient,
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            ) == 0,
        );
        let mut header = CapHeader {
            version: CAP_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        check(
            Stage::Capset,
            libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) == 0,
        );
        data = [CapData {
            effective: u32::MAX,
            permitted: u32::MAX,
            inheritable: u32::MAX,
        }; 2];
        check(
            Stage::CapCheck,
            libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) == 0,
        );
        if data
            .iter()
            .any(|d| d.effective | d.permitted | d.inheritable != 0)
        {
            fail(fd, Stage::CapCheck, libc::EPERM);
        }

        // Limits come last, after every descriptor the set-up opens: the
        // daemon's own descriptors are still open here and could exceed a
        // low RLIMIT_NOFILE. prlimit64 is the call every architecture has.
        let zero = libc::rlimit64 {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let limits = std::iter::once((libc::RLIMIT_CORE as libc::c_int, zero)).chain(
            plan.rlimits.iter().map(|&(r, v)| {
                (
                    r,
                    libc::rlimit64 {
                        rlim_cur: v,
                        rlim_max: v,
                    },
                )
            }),
        );
        for (resource, limit) in limits {
            let null: *mut libc::rlimit64 = std::ptr::null_mut();
            check(
                Stage::Rlimit,
                libc::syscall(libc::SYS_prlimit64, 0, resource, &limit, null) == 0,
            );
        }

        check(
            Stage::NoNewPrivs,
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0,
        );
        check(
            Stage::Landlock,
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                plan.ruleset_fd,
                plan.landlock_flags,
            ) == 0,
        );
        check(Stage::Seccomp, attach_filter(plan.filter));

        match &plan.then {
            Then::Exec {
                program,
                argv,
                envp,
            } => {
                libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
                fail(fd, Stage::Exec, errno())
            }
            Then::Probe(args) => {
                report(fd, Stage::Probe, crate::escape_probes::run(args, fd));
                libc::_exit(0)
            }
        }
    }
}
