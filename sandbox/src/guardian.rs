//! The guardian: a small process forked from praxisd at start that outlives
//! it just long enough to end every command still running when praxisd dies,
//! however it dies (SIGKILL included), so no command runs on unwatched.
//!
//! It holds the read end of a pipe whose only write end is praxisd's. When
//! that end closes (the kernel closes it when praxisd exits), it kills every
//! command cgroup under praxisd's bases, v2 and v1 (descendants that left
//! the process group included), and every process group it was told of,
//! then exits.
//! Without cgroups, a descendant that called `setsid` is out of its reach.
//!
//! It waits in `poll` for the close alone, which wakes it at once, and
//! reads the notices of started and reaped commands once a second: a
//! notice does not wake it, so a command does not pay for a wake-up.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

use nix::fcntl::OFlag;
use nix::sys::signal::{SigHandler, Signal, signal};
use nix::unistd::{ForkResult, Pid};

use crate::cgroup::DaemonBases;

/// Why the guardian could not be started.
#[derive(Debug, thiserror::Error)]
pub enum GuardianError {
    #[error("pipe: {0}")]
    Pipe(nix::Error),
    #[error("fork: {0}")]
    Fork(nix::Error),
}

/// praxisd's end of the pipe.
static NOTICE: OnceLock<Mutex<File>> = OnceLock::new();

/// Forks the guardian. Call once, early, while the process has one thread:
/// the child goes on with what `fork` copied and nothing else.
pub fn start() -> Result<(), GuardianError> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(GuardianError::Pipe)?;
    let bases = DaemonBases::current();
    // SAFETY: called while the daemon is single-threaded (before its runtime
    // and watcher threads start), so the child may allocate and do I/O.
    match unsafe { nix::unistd::fork() }.map_err(GuardianError::Fork)? {
        ForkResult::Child => {
            drop(write);
            // Read without blocking: the guardian waits in poll alone.
            let _ = nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK));
            guard(read, &bases)
        }
        ForkResult::Parent { .. } => {
            drop(read);
            // Never block praxisd on a slow guardian: a full pipe drops the
            // notice (the cgroup kill does not need it).
            let flags = nix::fcntl::fcntl(&write, nix::fcntl::FcntlArg::F_GETFL)
                .map(OFlag::from_bits_truncate)
                .unwrap_or(OFlag::empty());
            let _ = nix::fcntl::fcntl(
                &write,
                nix::fcntl::FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
            );
            let _ = NOTICE.set(Mutex::new(File::from(write)));
            Ok(())
        }
    }
}

fn notify(line: String) {
    if let Some(pipe) = NOTICE.get() {
        let mut pipe = pipe.lock().unwrap_or_else(|e| e.into_inner());
        let _ = pipe.write_all(line.as_bytes());
    }
}

/// A command's process group started: end it if praxisd dies.
pub(crate) fn watch(pgid: i32) {
    notify(format!("+{pgid}\n"));
}

/// A command's process group is reaped: its id may be reused, forget it.
pub(crate) fn forget(pgid: i32) {
    notify(format!("-{pgid}\n"));
}

/// The guardian's whole life: follow the notices until the pipe closes,
/// then end what praxisd left running.
fn guard(read: OwnedFd, bases: &DaemonBases) -> ! {
    // Terminal and service signals meant for praxisd must not end us first.
    for sig in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        // SAFETY: installing SIG_IGN runs no handler code.
        let _ = unsafe { signal(sig, SigHandler::SigIgn) };
    }
    let _ = nix::unistd::setsid();
    close_others(read.as_raw_fd());
    let mut groups: Vec<i32> = Vec::new();
    let mut pending = Vec::new();
    let mut pipe = File::from(read);
    loop {
        // Woken at once when praxisd's end closes, and otherwise only to
        // read the notices waiting: a notice does not wake us, so praxisd
        // does not pay a wake-up for each command it starts.
        let mut pfd = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: 0,
            revents: 0,
        };
        // SAFETY: poll on one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, READ_EVERY_MS) };
        let closed = ready > 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0;
        if !read_notices(&mut pipe, &mut pending, &mut groups) || closed {
            break;
        }
    }
    bases.sweep_and_remove();
    for pgid in groups {
        let _ = nix::sys::signal::killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    std::process::exit(0)
}

/// How often the guardian reads the notices waiting in its pipe. The
/// pipe holds thousands of them; one that does not fit is dropped (the
/// cgroup kill does not need it).
const READ_EVERY_MS: libc::c_int = 1000;

/// Reads the notices in the pipe (without blocking) into `groups`, keeping
/// a line cut short in `pending`; false once the pipe is closed and empty.
fn read_notices(pipe: &mut File, pending: &mut Vec<u8>, groups: &mut Vec<i32>) -> bool {
    // What it read before the pipe ran empty (WouldBlock) is kept in
    // `pending`; any other error ends it as a close does.
    let open = match pipe.read_to_end(pending) {
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    };
    let complete = pending
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    for line in pending[..complete].split(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(line);
        let (sign, pgid) = line.split_at(line.len().min(1));
        match (sign, pgid.parse::<i32>()) {
            ("+", Ok(pgid)) if pgid > 1 => groups.push(pgid),
            ("-", Ok(pgid)) => groups.retain(|g| *g != pgid),
            _ => {}
        }
    }
    pending.drain(..complete);
    open
}

/// Closes every descriptor but `keep` and the standard three, so the
/// guardian holds nothing of praxisd's open (its socket, its database).
fn close_others(keep: i32) {
    let Ok(dir) = fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2 && *fd != keep)
        .collect();
    for fd in fds {
        // SAFETY: plain close of a number; the listing's own (already closed)
        // descriptor just gets EBADF.
        unsafe { libc::close(fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_read_whole_lines_at_a_time_until_the_close() {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).unwrap();
        let (mut read, mut write) = (File::from(read), File::from(write));
        let (mut pending, mut groups) = (Vec::new(), Vec::new());
        write.write_all(b"+12\n+13\n-12\n+1").unwrap();
        assert!(read_notices(&mut read, &mut pending, &mut groups));
        assert_eq!(groups, [13]);
        assert_eq!(pending, b"+1");
        // Nothing new: nothing changes, and the pipe is still open.
        assert!(read_notices(&mut read, &mut pending, &mut groups));
        write.write_all(b"4\n+1\n").unwrap();
        drop(write);
        assert!(!read_notices(&mut read, &mut pending, &mut groups));
        assert_eq!(groups, [13, 14], "pgid 1 is never a command's");
    }
}
