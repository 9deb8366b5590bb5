//! The thread every sandboxed process is cloned from, and the stacks those
//! processes run on until they exec.
//!
//! The parent-death signal is tied to the thread that created the child, so
//! cloning from a short-lived worker thread would kill the command when that
//! thread retires: one dedicated thread, that never exits and has every
//! signal with a handler blocked (its children start so), does every clone.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use crate::SandboxError;
use crate::child::{self, Plan};

/// Stack size of a child between clone and exec: it runs only
/// `child::run`, a few frames of raw system calls.
const CHILD_STACK: usize = 256 * 1024;

/// The stack a child runs on between `clone` and `execve`, with a guard
/// page below it. The spawner has one for the children it waits for; a
/// launcher has one of its own, kept until it has exec'd.
#[derive(Debug)]
pub(crate) struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; moving it between
// threads moves only its address.
unsafe impl Send for ChildStack {}

/// Stacks given back by launchers that exec'd, for the next ones: unmapping
/// one on the request path cost a TLB flush on every core that ran it.
static RETURNED: Mutex<Vec<ChildStack>> = Mutex::new(Vec::new());

/// Returned stacks kept at most.
const RETURNED_KEPT: usize = 4;

impl ChildStack {
    /// A stack given back by an earlier child, else a fresh mapping.
    pub(crate) fn reused_or_new() -> io::Result<ChildStack> {
        let returned = RETURNED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        returned.map_or_else(ChildStack::new, Ok)
    }

    /// Gives the stack back for a later child, once nothing runs on it
    /// (its child has exec'd or is gone).
    pub(crate) fn give_back(self) {
        let mut returned = RETURNED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if returned.len() < RETURNED_KEPT {
            returned.push(self);
        }
    }

    pub(crate) fn new() -> io::Result<ChildStack> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = CHILD_STACK + page;
        // SAFETY: a fresh anonymous private mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = ChildStack { base, len };
        // SAFETY: the lowest page of our own mapping becomes the guard.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The initial stack pointer: the stack grows down from the mapping's end.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of our own mapping.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping; no child runs on it any more
        // (its owner keeps it until the child has exec'd or is gone).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// The entry point of a cloned process, given its argument.
pub(crate) type Entry = extern "C" fn(*mut libc::c_void) -> libc::c_int;

/// What the spawner thread clones.
enum Job {
    /// A child applying a plan that lives on the caller's stack, on the
    /// spawner's own stack; the caller blocks until it has exec'd or exited.
    Plan(*const Plan<'static>),
    /// A process that runs `entry(arg)` on `stack` alongside us, sharing
    /// our memory and descriptor table (see `launcher`).
    Alongside {
        entry: Entry,
        arg: *mut libc::c_void,
        stack_top: *mut libc::c_void,
    },
}

// SAFETY: the pointers are only read, by the spawner thread, while their
// owner waits for the reply.
unsafe impl Send for Job {}

/// The child's entry point after `clone`.
extern "C" fn child_entry(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `plan` is the `Plan` the spawner passed to clone; its owner
    // keeps it alive until the child has exec'd or exited.
    unsafe { child::run(&*plan.cast::<Plan<'_>>()) }
}

/// Clones on the spawner thread (whose stack, when `job` runs on it, is
/// `stack`); a negative result is the errno.
fn clone_job(stack: &ChildStack, job: &Job) -> Result<libc::pid_t, i32> {
    let pid = match *job {
        // Starts the child sharing our memory, the spawner suspended until
        // the child execs or exits (`CLONE_VM | CLONE_VFORK`, as
        // `posix_spawn` does): no page tables are copied at the clone, and
        // none are torn down at the exec, which a daemon with a large
        // address space would otherwise pay on every command. The child
        // writes only to its own stack.
        Job::Plan(plan) => {
            // SAFETY: the child runs `child_entry` on its own stack and
            // makes only raw system calls on the plan (see `child::run`);
            // the spawner thread blocks every signal but an unhandled
            // SIGCHLD, so no handler of ours runs in the child before it
            // resets them; CLONE_VFORK keeps this thread, and so the plan's
            // owner, waiting until the child no longer uses our memory.
            unsafe {
                libc::clone(
                    child_entry,
                    stack.top(),
                    libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                    plan.cast_mut().cast(),
                )
            }
        }
        Job::Alongside {
            entry,
            arg,
            stack_top,
        } => {
            // SAFETY: `entry` runs on a stack of its own that its owner
            // keeps mapped until the process has exec'd or is gone, and
            // makes only raw system calls (see `launcher`); it starts with
            // every handled signal blocked, as this thread has them.
            unsafe {
                libc::clone(
                    entry,
                    stack_top,
                    libc::CLONE_VM | libc::CLONE_FILES | libc::SIGCHLD,
                    arg,
                )
            }
        }
    };
    if pid < 0 {
        Err(io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(pid)
    }
}

/// Blocks the spawner thread's signals, for good: it handles none, and its
/// children start with them blocked. All but SIGCHLD, if its action is the
/// default (to ignore it) when the spawner starts, as praxisd leaves it: a
/// command's exit signals its parent, this thread, and a signal blocked
/// here is not dropped but queued for the daemon, waking another of its
/// threads for nothing at every exit. Unblocked and ignored, the kernel
/// drops it at once. With a handler, it would run in a child that was sent
/// one before the child resets its handlers, so then it is blocked too.
fn block_signals() -> io::Result<()> {
    // SAFETY: sigset_t and sigaction are plain data, filled by the calls.
    let (mut blocked, mut child_action): (libc::sigset_t, libc::sigaction) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: valid pointers to locals; sigaction only reads the action.
    let rc = unsafe {
        libc::sigfillset(&mut blocked);
        if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut child_action) == 0
            && child_action.sa_sigaction == libc::SIG_DFL
        {
            libc::sigdelset(&mut blocked, libc::SIGCHLD);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

type Reply = mpsc::SyncSender<Result<libc::pid_t, i32>>;

/// Runs `job` on the spawner thread, started on first use.
fn on_spawner(job: Job) -> Result<libc::pid_t, SandboxError> {
    static SPAWNER: OnceLock<Result<mpsc::Sender<(Job, Reply)>, String>> = OnceLock::new();
    let sender = SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<(Job, Reply)>();
            std::thread::Builder::new()
                .name("praxis-spawner".into())
                .spawn(move || {
                    let stack = block_signals().and_then(|()| ChildStack::new());
                    for (job, reply) in rx {
                        let result = match &stack {
                            Ok(stack) => clone_job(stack, &job),
                            Err(e) => Err(e.raw_os_error().unwrap_or(libc::ENOMEM)),
                        };
                        // The caller is blocked on the reply; it cannot be gone.
                        let _ = reply.send(result);
                    }
                })
                .map(|_| tx)
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| {
            SandboxError::os("starting the spawner thread", io::Error::other(e.clone()))
        })?;
    let (reply, answer) = mpsc::sync_channel(1);
    sender
        .send((job, reply))
        .map_err(|_| SandboxError::os("spawner thread", io::Error::other("gone")))?;
    match answer.recv() {
        Ok(Ok(pid)) => Ok(pid),
        Ok(Err(errno)) => Err(SandboxError::os(
            "clone",
            io::Error::from_raw_os_error(errno),
        )),
        Err(_) => Err(SandboxError::os("spawner thread", io::Error::other("gone"))),
    }
}

/// A pipe, both ends close-on-exec: (read, write).
pub(crate) fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SandboxError::last_os("pipe2"));
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A pidfd for our child `pid`.
pub(crate) fn pidfd_open(pid: libc::pid_t) -> Result<OwnedFd, SandboxError> {
    // SAFETY: pidfd_open takes a pid and flags; it returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(SandboxError::last_os("pidfd_open"));
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A new descriptor on the namespace the process behind `pidfd` is in, of
/// the kind `request` (a `PIDFD_GET_*_NAMESPACE`) names. `None` once the
/// process has exited, and before Linux 6.11, which lacks these requests:
/// the namespace is then freed by the command's last exit, as it was.
pub(crate) fn namespace_of(pidfd: BorrowedFd<'_>, request: libc::Ioctl) -> Option<OwnedFd> {
    // SAFETY: an argument-less pidfd ioctl on a live descriptor; it returns
    // a new descriptor or -1.
    let fd = unsafe { libc::ioctl(pidfd.as_raw_fd(), request, 0) };
    // SAFETY: a fresh descriptor owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Clones a child that applies `plan`; returns once it has exec'd or exited.
pub(crate) fn clone_child(plan: &Plan<'_>) -> Result<libc::pid_t, SandboxError> {
    // The lifetime is erased only for the trip; the reply is awaited before
    // this returns, and the child has exec'd or exited by then.
    on_spawner(Job::Plan((plan as *const Plan<'_>).cast()))
}

/// Clones a process that runs `entry(arg)` on `stack`, sharing our memory
/// and descriptor table, and returns at once.
///
/// # Safety
/// `entry` must make only raw system calls and async-signal-safe calls,
/// and `arg` and `stack` must stay valid until the process has exec'd or
/// is gone.
pub(crate) unsafe fn clone_alongside(
    entry: Entry,
    arg: *mut libc::c_void,
    stack: &ChildStack,
) -> Result<libc::pid_t, SandboxError> {
    on_spawner(Job::Alongside {
        entry,
        arg,
        stack_top: stack.top(),
    })
}
