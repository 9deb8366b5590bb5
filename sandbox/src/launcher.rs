//! A process made ahead, with a spare, that already sits in the next
//! command's cgroups and waits for that command's plan.
//!
//! Moving a process into a cgroup waits for the kernel's cgroup lock to
//! change hands, and after an idle moment that takes an RCU grace period
//! (about 10 ms), in every hierarchy: v2 and the v1 `pids` and `memory`
//! ones alike. A child that joined its cgroups after the clone paid it on
//! every command an agent sends seconds apart. A launcher pays it while the
//! daemon is idle: it is cloned sharing our memory and descriptor table,
//! starts a session of its own, joins the cgroups, and blocks. When a
//! command takes the spare, the plan's address goes down a pipe; the
//! launcher takes a descriptor table of its own (so the command's
//! descriptors are its, and ours can be closed) and goes on exactly as a
//! freshly cloned child does after joining (`child::run`). The command's
//! sandbox is the same either way; only where the join happens moves.
//!
//! A daemon holding `CAP_SYS_ADMIN` also has the launcher copy the host's
//! mounts into a mount namespace of its own while it waits (about 75 µs
//! on the request path otherwise). The copy is used only if the host's
//! mount table has not changed since: the kernel flags a change on a
//! descriptor of `/proc/self/mountinfo` opened before the copy
//! ([`Launcher::mount_copy`]). A launcher whose copy is stale, or whose
//! command needs no mount namespace, goes back into the host's before the
//! plan's set-up, so a command sees the host's mounts exactly as they are
//! when it starts, either way. Where the kernel refuses the copy, the
//! launcher waits in the host's mounts, and the plan copies them.
//!
//! In its copy, a spare's launcher also mounts the private `/tmp` of the
//! command that wanted the spare (its binds took a fifth of a millisecond
//! on the request path). The daemon holds every inode those mounts rest
//! on ([`TmpAhead`]); a command whose plan mounts the same, from paths
//! that still name those inodes, takes it as it is, and any other takes
//! the copy as stale.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use crate::SandboxError;
use crate::child::{self, Plan};
use crate::filter;
use crate::own_caps;
use crate::private_tmp::{TmpAhead, TmpPlan};
use crate::spawner::{self, ChildStack, namespace_of, pipe_cloexec};

/// What the launcher answers on its pipe.
const FAILED: u8 = 0;
/// In its session and its cgroups, waiting.
const PLACED: u8 = 1;
/// Holds a descriptor table of its own, running the plan.
const UNSHARED: u8 = 2;
/// As `PLACED`, in a copy of the host's mounts of its own.
const PLACED_IN_COPY: u8 = 3;
/// As `PLACED_IN_COPY`, with the private `/tmp` it was given mounted there.
const PLACED_WITH_TMP: u8 = 4;
/// As `PLACED_IN_COPY`, but a bind of that `/tmp` failed part way: the
/// copy is never a command's.
const PLACED_IN_SPOILED_COPY: u8 = 5;

/// What the launcher reads, in our memory (kept by [`Launcher`]).
#[derive(Debug)]
struct Start {
    /// The `cgroup.procs` of each of the command's cgroups.
    procs: Vec<RawFd>,
    /// The pipe the plan's address comes down.
    go: RawFd,
    /// The pipe it answers on.
    answer: RawFd,
    parent_pid: libc::pid_t,
    /// The last capability to drop from the bounding set ahead, if it can.
    bounding: Option<libc::c_ulong>,
    /// The seccomp program to attach ahead ([`filter::ahead`]), when it
    /// compiled: the plan then attaches only the closing one.
    filter: Option<&'static [libc::sock_filter]>,
    /// Copy the host's mounts into a mount namespace of its own, ahead
    /// (where the kernel lets it).
    copy_mounts: bool,
    /// A private `/tmp` to mount in that copy, ahead: the last command's.
    tmp: Option<TmpAhead>,
}

/// What a launcher mounted in its copy of the host's mounts, ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InCopy {
    Nothing,
    /// The private `/tmp` it was given (`Start::tmp`).
    Tmp,
    /// Part of that `/tmp`: a bind failed, so the copy is never used.
    Spoiled,
}

/// What a launcher holds of the host's mounts when its command starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MountCopy {
    /// It shares the host's mount namespace.
    None,
    /// A copy of its own, made ahead, of the mounts the host still has;
    /// with the command's private `/tmp` mounted in it already when
    /// `tmp_mounted`.
    Current { tmp_mounted: bool },
    /// A copy of its own that the host's mounts have changed since (or
    /// whose currency could not be told), or one with a private `/tmp`
    /// mounted that is not the command's as it would be mounted now.
    Stale,
}

/// A launcher waiting in a command's cgroups. Dropped unused, it is killed
/// and reaped.
#[derive(Debug)]
pub(crate) struct Launcher {
    pid: libc::pid_t,
    /// Its pidfd: polled with the answer pipe, which its death leaves open
    /// (the write end is in the table it shares with us).
    pidfd: OwnedFd,
    /// Once it copied the host's mounts: their table, opened before the
    /// copy; the kernel flags it once the table changes.
    mount_table: Option<OwnedFd>,
    /// The copy, held from when it was made (where the kernel can name it).
    mount_copy: Option<OwnedFd>,
    in_copy: InCopy,
    go: (OwnedFd, OwnedFd),
    answer: (OwnedFd, OwnedFd),
    /// What it reads and the stack it runs on, held until it has exec'd
    /// or is gone; boxed, so its address stays put.
    start: Box<Start>,
    stack: Option<ChildStack>,
    /// Handed over as a command's process: no longer ours to kill.
    handed: bool,
}

/// Writes one byte (async-signal-safe).
///
/// # Safety
/// `fd` must be open.
unsafe fn tell(fd: RawFd, byte: u8) -> bool {
    // SAFETY: writing one byte from a stack value.
    unsafe { libc::write(fd, (&raw const byte).cast(), 1) == 1 }
}

/// The launcher's entry point after `clone`.
extern "C" fn launcher_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: (whole block) `arg` is the `Start` its `Launcher` keeps alive
    // (and mapped, with this stack) until we have exec'd or are gone; every
    // call is a raw system call or an async-signal-safe libc wrapper, and
    // nothing allocates. Sharing the spawner thread's TLS, a failed call
    // may set its errno: nothing there reads errno but after a failed clone.
    unsafe {
        let start = &*arg.cast::<Start>();
        // Dies with the spawner thread, that is with the daemon.
        let placed = libc::setsid() >= 0
            && libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == 0
            && libc::getppid() == start.parent_pid
            && start
                .procs
                .iter()
                .all(|&procs| libc::write(procs, c"0".as_ptr().cast(), 1) == 1)
            && start
                .bounding
                .is_none_or(|last| child::drop_bounding_set(last));
        // Where the copy is refused, the launcher stays in the host's
        // mounts, as a launcher without it; one whose mounts would
        // propagate back is never placed.
        let copied = start.copy_mounts && libc::unshare(libc::CLONE_NEWNS) == 0;
        let placed = placed && (!copied || child::one_way());
        // The last command's private /tmp, mounted in the copy now: the
        // next command of the same session takes it as it is.
        let tmp_bound = match &start.tmp {
            Some(tmp) if placed && copied => {
                Some(child::mount_tmp(tmp.plan(), Some(tmp.sources())).is_ok())
            }
            _ => None,
        };
        // What every command's set-up does first whatever its plan, done
        // while waiting (signals stay blocked until the plan unblocks them).
        child::default_handlers();
        // The large part of the command's seccomp filter, attached now:
        // attaching it takes the kernel a tenth of a millisecond or more.
        // No-new-privs first (every plan sets it anyway): without
        // CAP_SYS_ADMIN the kernel requires it.
        let placed = placed
            && start.filter.is_none_or(|filter| {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                    && child::attach_filter(filter)
            });
        let answer = match (placed, copied, tmp_bound) {
            (false, _, _) => FAILED,
            (true, false, _) => PLACED,
            (true, true, None) => PLACED_IN_COPY,
            (true, true, Some(true)) => PLACED_WITH_TMP,
            (true, true, Some(false)) => PLACED_IN_SPOILED_COPY,
        };
        if !tell(start.answer, answer) || !placed {
            libc::_exit(1);
        }
        let mut addr = [0u8; size_of::<usize>()];
        let mut got = 0;
        while got < addr.len() {
            let n = libc::read(start.go, addr[got..].as_mut_ptr().cast(), addr.len() - got);
            if n <= 0 {
                if n < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                libc::_exit(0);
            }
            got += n as usize;
        }
        // A table of our own: the command's descriptors (open in the
        // shared one now) stay ours when the daemon closes its copies.
        if libc::unshare(libc::CLONE_FILES) != 0 {
            tell(start.answer, FAILED);
            libc::_exit(1);
        }
        tell(start.answer, UNSHARED);
        let plan = usize::from_ne_bytes(addr) as *const Plan<'static>;
        child::run(&*plan)
    }
}

impl Launcher {
    /// Clones a launcher and waits until it sits in the cgroups whose
    /// `cgroup.procs` are `procs` (paying the move here, off the request
    /// path). One that copies the host's mounts mounts `tmp` there too,
    /// a private `/tmp` the next command is likely to have.
    pub(crate) fn place(procs: &[RawFd], tmp: Option<&TmpPlan>) -> Result<Launcher, SandboxError> {
        // Opened before the clone, so that it is flagged by any change
        // the copy may miss.
        let mount_table = match own_caps::effective(caps::Capability::CAP_SYS_ADMIN) {
            Ok(true) => std::fs::File::open("/proc/self/mountinfo")
                .ok()
                .map(OwnedFd::from),
            _ => None,
        };
        let go = pipe_cloexec()?;
        let answer = pipe_cloexec()?;
        let start = Box::new(Start {
            procs: procs.to_vec(),
            go: go.0.as_raw_fd(),
            answer: answer.1.as_raw_fd(),
            // SAFETY: getpid has no preconditions.
            parent_pid: unsafe { libc::getpid() },
            bounding: own_caps::droppable_bounding(),
            filter: filter::ahead().ok(),
            copy_mounts: mount_table.is_some(),
            // Not mounted ahead if its paths cannot be opened now: the
            // command's plan mounts them (or fails) as it would anyway.
            tmp: tmp
                .filter(|_| mount_table.is_some())
                .and_then(|plan| TmpAhead::open(plan).ok()),
        });
        let stack =
            ChildStack::reused_or_new().map_err(|e| SandboxError::os("a launcher's stack", e))?;
        let arg = (&raw const *start).cast_mut().cast();
        // SAFETY: `launcher_entry` keeps to raw system calls; `start` and
        // `stack` live in the `Launcher` made below, which kills and reaps
        // the process before dropping them (or hands it over once exec'd).
        let pid = unsafe { spawner::clone_alongside(launcher_entry, arg, &stack)? };
        let pidfd = match spawner::pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) => {
                // SAFETY: our own unreaped child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
                return Err(e);
            }
        };
        let mut launcher = Launcher {
            pid,
            pidfd,
            mount_table,
            mount_copy: None,
            in_copy: InCopy::Nothing,
            go,
            answer,
            start,
            stack: Some(stack),
            handed: false,
        };
        match launcher.answer()? {
            PLACED => {
                launcher.mount_table = None;
                Ok(launcher)
            }
            answer @ (PLACED_IN_COPY | PLACED_WITH_TMP | PLACED_IN_SPOILED_COPY) => {
                launcher.mount_copy =
                    namespace_of(launcher.pidfd.as_fd(), libc::PIDFD_GET_MNT_NAMESPACE);
                launcher.in_copy = match answer {
                    PLACED_WITH_TMP => InCopy::Tmp,
                    PLACED_IN_SPOILED_COPY => InCopy::Spoiled,
                    _ => InCopy::Nothing,
                };
                Ok(launcher)
            }
            _ => Err(SandboxError::os(
                "placing a launcher in the command's cgroups",
                io::Error::from_raw_os_error(libc::EPERM),
            )),
        }
    }

    /// Whether its bounding set is empty already (a launcher that was to
    /// drop it and could not is never placed), so a plan that keeps our
    /// user namespace need not drop it again.
    pub(crate) fn bounding_dropped(&self) -> bool {
        self.start.bounding.is_some()
    }

    /// Whether it attached [`filter::ahead`] while it waited, so a plan
    /// attaches [`filter::closing`] on top rather than the whole program.
    pub(crate) fn filtered_ahead(&self) -> bool {
        self.start.filter.is_some()
    }

    /// Whether it copied the host's mounts ahead, and whether that copy is
    /// still the one a command with the private `/tmp` of `tmp` would get:
    /// the host's mounts unchanged since, and the `/tmp` mounted in it, if
    /// any, that very one.
    pub(crate) fn mount_copy(&self, tmp: Option<&TmpPlan>) -> MountCopy {
        let Some(table) = &self.mount_table else {
            return MountCopy::None;
        };
        let fits = match (self.in_copy, tmp) {
            (InCopy::Nothing, _) => true,
            (InCopy::Tmp, Some(plan)) => self.start.tmp.as_ref().is_some_and(|a| a.serves(plan)),
            (InCopy::Tmp, None) | (InCopy::Spoiled, _) => false,
        };
        if !fits {
            return MountCopy::Stale;
        }
        let mut pfd = libc::pollfd {
            fd: table.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        // SAFETY: poll on one valid pollfd, without waiting.
        let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
        if rc < 0 || pfd.revents & (libc::POLLPRI | libc::POLLERR) != 0 {
            MountCopy::Stale
        } else {
            MountCopy::Current {
                tmp_mounted: self.in_copy == InCopy::Tmp,
            }
        }
    }

    /// Its copy of the mounts, to hold past the command's last exit.
    pub(crate) fn take_mount_copy(&mut self) -> Option<OwnedFd> {
        self.mount_copy.take()
    }

    /// The launcher's next answer; `FAILED` if it died first.
    fn answer(&self) -> Result<u8, SandboxError> {
        let mut fds = [
            libc::pollfd {
                fd: self.answer.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        loop {
            // SAFETY: poll on two valid pollfds.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if rc < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(SandboxError::os("waiting for a launcher", err));
            }
            if fds[0].revents & libc::POLLIN != 0 {
                let mut byte = FAILED;
                // SAFETY: reading one byte into a stack value.
                let n = unsafe { libc::read(self.answer.0.as_raw_fd(), (&raw mut byte).cast(), 1) };
                return Ok(if n == 1 { byte } else { FAILED });
            }
            if fds[1].revents != 0 {
                return Ok(FAILED);
            }
        }
    }

    /// Hands `plan` to the launcher and returns its pid once it has exec'd
    /// or exited (the plan is read until then). `report` is our copy of the
    /// write end of the plan's report pipe, closed once the launcher holds
    /// its own, and `report_read` its read end.
    pub(crate) fn start(
        mut self,
        plan: &Plan<'_>,
        report: OwnedFd,
        report_read: &OwnedFd,
    ) -> Result<libc::pid_t, SandboxError> {
        let addr = (plan as *const Plan<'_> as usize).to_ne_bytes();
        // SAFETY: writing from a live stack buffer.
        let n = unsafe { libc::write(self.go.1.as_raw_fd(), addr.as_ptr().cast(), addr.len()) };
        if n != addr.len() as isize {
            return Err(SandboxError::last_os("handing a plan to a launcher"));
        }
        if self.answer()? != UNSHARED {
            return Err(SandboxError::os(
                "a launcher taking its own descriptor table",
                io::Error::from_raw_os_error(libc::ENOMEM),
            ));
        }
        // From here on the process is the command's: its caller reaps it.
        self.handed = true;
        drop(report);
        // The report pipe hangs up when the launcher execs or exits; until
        // then it reads the plan (and runs on the stack dropped with self).
        let mut pfd = libc::pollfd {
            fd: report_read.as_raw_fd(),
            events: 0,
            revents: 0,
        };
        // SAFETY: poll on one valid pollfd; an interruption (or a lack of
        // memory, the only other failure) polls again.
        while unsafe { libc::poll(&mut pfd, 1, -1) } <= 0
            || pfd.revents & (libc::POLLHUP | libc::POLLERR) == 0
        {}
        Ok(self.pid)
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        if !self.handed {
            // SAFETY: our own unreaped child; its stack and `Start` outlive
            // it (they are dropped after this).
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                while libc::waitpid(self.pid, std::ptr::null_mut(), 0) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
            }
        }
        // Exec'd or gone: nothing runs on its stack any more.
        if let Some(stack) = self.stack.take() {
            stack.give_back();
        }
    }
}

/// Our mount namespace, for a launcher that copied it ahead to go back
/// into when its copy is not used. Opened once: the daemon never leaves
/// its own.
pub(crate) fn host_mount_ns() -> Result<RawFd, SandboxError> {
    static HOST: OnceLock<OwnedFd> = OnceLock::new();
    if let Some(fd) = HOST.get() {
        return Ok(fd.as_raw_fd());
    }
    let fd = std::fs::File::open("/proc/self/ns/mnt")
        .map(OwnedFd::from)
        .map_err(|e| SandboxError::os("opening our mount namespace", e))?;
    Ok(HOST.get_or_init(|| fd).as_raw_fd())
}
