//! Turning the client's own SIGINT, SIGTERM and SIGHUP into a cancel for
//! the running command, without a thread: a signal handler sends a cancel
//! frame encoded in advance on the connection, starts a one-shot timer for
//! the daemon's confirmation, and a second signal (or the timer) ends the
//! client with 128 + the first signal's number. A thread's start-up would
//! be a good part of a short command's whole run.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};
use std::time::Duration;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use praxis_proto::ClientMsg;
use praxis_proto::frame::Frame;

/// How long a cancelled command may take to be confirmed ended.
pub const GRACE: Duration = Duration::from_secs(3);

/// The signals that cancel the command.
const CANCELLING: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// The connection the cancel goes out on; -1 until [`forward_signals`].
static CONNECTION: AtomicI32 = AtomicI32::new(-1);
/// The encoded cancel frame, leaked so the handler can always read it.
static CANCEL_FRAME: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());
/// The first cancelling signal's number, 0 before it came.
static FIRST: AtomicI32 = AtomicI32::new(0);

#[derive(Debug, thiserror::Error)]
pub enum CancelError {
    #[error("cannot encode the cancel frame: {0}")]
    Frame(#[from] praxis_proto::FrameError),
    #[error("cannot install the signal handlers: {0}")]
    Handler(nix::Error),
}

/// From now on SIGINT, SIGTERM and SIGHUP cancel the command running on
/// `stream` (the daemon ends it and answers with its exit). Call once the
/// request is sent, so the cancel cannot interleave with it.
pub fn forward_signals(stream: &UnixStream) -> Result<(), CancelError> {
    let frame = Frame::message(&ClientMsg::Cancel)?.encode()?;
    CANCEL_FRAME.store(Box::into_raw(Box::new(frame)), Ordering::SeqCst);
    CONNECTION.store(stream.as_raw_fd(), Ordering::SeqCst);
    let on = |sig: Signal, handler: extern "C" fn(libc::c_int)| {
        // Restarted, so the main thread's blocking reads go on undisturbed.
        let action = SigAction::new(
            SigHandler::Handler(handler),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        // SAFETY: both handlers only read atomics and the leaked frame, and
        // call send(2), setitimer(2), write(2) and _exit(2), which are
        // async-signal-safe.
        unsafe { sigaction(sig, &action) }.map(drop)
    };
    on(Signal::SIGALRM, on_grace_over).map_err(CancelError::Handler)?;
    let mut unblock = SigSet::empty();
    unblock.add(Signal::SIGALRM);
    for sig in CANCELLING {
        on(sig, on_cancel).map_err(CancelError::Handler)?;
        unblock.add(sig);
    }
    // A mask inherited from the caller must not hold them back.
    unblock.thread_unblock().map_err(CancelError::Handler)
}

extern "C" fn on_cancel(sig: libc::c_int) {
    if let Err(first) = FIRST.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst) {
        // A second signal: no more waiting.
        // SAFETY: _exit is async-signal-safe and ends the process at once.
        unsafe { libc::_exit(128 + first) }
    }
    // SAFETY: set before the handler was installed, to a leaked Box never freed.
    if let Some(frame) = unsafe { CANCEL_FRAME.load(Ordering::SeqCst).as_ref() } {
        send_all(CONNECTION.load(Ordering::SeqCst), frame);
    }
    // The daemon ends the command and answers with its exit; one that does
    // not answer in time cannot keep this client alive.
    let timer = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: libc::timeval {
            tv_sec: GRACE.as_secs() as libc::time_t,
            tv_usec: 0,
        },
    };
    // SAFETY: setitimer is a plain system call on a stack value.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
}

extern "C" fn on_grace_over(_: libc::c_int) {
    let first = FIRST.load(Ordering::SeqCst);
    let mut line = *b"praxis: praxisd did not confirm the cancel in time; exiting 1__\n";
    let code = 128 + first;
    // The exit status's last two digits (128 + a signal number is 129..=192).
    let at = line.len() - 3;
    line[at] = b'0' + (code / 10 % 10) as u8;
    line[at + 1] = b'0' + (code % 10) as u8;
    // SAFETY: write and _exit are async-signal-safe; the line is on our stack.
    unsafe {
        libc::write(libc::STDERR_FILENO, line.as_ptr().cast(), line.len());
        libc::_exit(code)
    }
}

/// send(2) until all of `bytes` is out or the connection fails.
fn send_all(fd: RawFd, mut bytes: &[u8]) {
    while fd >= 0 && !bytes.is_empty() {
        // SAFETY: the pointer and length describe the live slice.
        let n = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
        match usize::try_from(n) {
            Ok(0) => return,
            Ok(n) => bytes = &bytes[n..],
            Err(_) if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
            }
            Err(_) => return,
        }
    }
}
