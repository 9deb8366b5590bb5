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

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
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
    for line in BufReader::new(File::from(read)).lines() {
        let Ok(line) = line else { break };
        let (sign, pgid) = line.split_at(line.len().min(1));
        match (sign, pgid.parse::<i32>()) {
            ("+", Ok(pgid)) if pgid > 1 => groups.push(pgid),
            ("-", Ok(pgid)) => groups.retain(|g| *g != pgid),
            _ => {}
        }
    }
    bases.sweep_and_remove();
    for pgid in groups {
        let _ = nix::sys::signal::killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    std::process::exit(0)
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
