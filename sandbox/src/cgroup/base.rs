//! The daemon's base directory in a cgroup hierarchy (`praxisd-<pid>` under
//! its own cgroup) and the command cgroups under it (`cmd-<pid>-<n>`): their
//! names, and the sweep of what dead daemons left behind. How a command
//! cgroup is emptied differs between v2 and v1 and is passed in.
//!
//! A daemon holds an exclusive `flock` on its base for as long as it (or
//! its guardian, which inherits the lock) lives, and a base is a dead
//! daemon's only when that lock can be taken. A pid says nothing here: a
//! daemon in a PID namespace of its own sees other daemons' pids as gone
//! (or as someone else), and two daemons in two namespaces can share one.
//! Claiming holds a lock on the parent directory, so a base is never seen
//! between its creation and its lock.

use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long emptying a command's cgroup waits for its killed processes to
/// be gone before leaving the directory to a later sweep.
pub(crate) const EMPTY_WAIT: Duration = Duration::from_millis(500);

/// Kills what is in a command cgroup and removes it (best effort).
pub(crate) type Empty = fn(&Path);

/// The locks on this daemon's bases, held until the process ends.
static HELD: Mutex<Vec<File>> = Mutex::new(Vec::new());

/// `flock` on `file`: `Ok(false)` when another open file holds it and
/// `wait` is false.
fn lock(file: &File, wait: bool) -> io::Result<bool> {
    let op = libc::LOCK_EX | if wait { 0 } else { libc::LOCK_NB };
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(err),
        }
    }
}

/// Creates this daemon's base under `own` and locks it, then sweeps the
/// bases of dead daemons there.
pub(crate) fn claim(own: &Path, empty: Empty) -> Result<PathBuf, String> {
    let parent = File::open(own).map_err(|e| format!("cannot open {}: {e}", own.display()))?;
    lock(&parent, true).map_err(|e| format!("cannot lock {}: {e}", own.display()))?;
    // Under the parent's lock only what is quick: taking the dead bases'
    // locks and making and locking our own. Emptying the dead ones can wait
    // on their processes, and other daemons starting meanwhile would wait
    // on the parent's lock; holding each dead base's lock is enough to keep
    // it ours to sweep.
    let dead = dead_daemons(own);
    let claimed = make_base(own);
    drop(parent);
    for (base, _held) in &dead {
        sweep_and_remove(base, empty);
    }
    claimed
}

/// Creates and locks this daemon's base under `own`: the plain name, unless
/// a live daemon of the same pid in another PID namespace holds it.
fn make_base(own: &Path) -> Result<PathBuf, String> {
    let pid = std::process::id();
    for n in 0u32.. {
        let name = match n {
            0 => format!("praxisd-{pid}"),
            n => format!("praxisd-{pid}-{n}"),
        };
        let base = own.join(name);
        match fs::create_dir(&base) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
        }
        let held = File::open(&base)
            .and_then(|file| lock(&file, false).map(|got| (file, got)))
            .map_err(|e| format!("cannot lock {}: {e}", base.display()));
        return match held {
            Ok((file, true)) => {
                HELD.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(file);
                Ok(base)
            }
            Ok((_, false)) => Err(format!("{} was locked at birth", base.display())),
            Err(e) => {
                let _ = fs::remove_dir(&base);
                Err(e)
            }
        };
    }
    Err(format!("no free base name under {}", own.display()))
}

/// A fresh name for a command cgroup, the same in every hierarchy.
pub(crate) fn command_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "cmd-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The `praxisd-*` bases under `parent` whose lock can be taken (their
/// daemon and guardian are gone), each with its lock, held until swept.
fn dead_daemons(parent: &Path) -> Vec<(PathBuf, File)> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("praxisd-"))
        .filter_map(|entry| {
            let path = entry.path();
            // Not ours to judge when it cannot be opened or locked.
            let file = File::open(&path).ok()?;
            lock(&file, false).unwrap_or(false).then_some((path, file))
        })
        .collect()
}

/// Empties every command cgroup under `base` (one still populated after
/// the wait stays for the next sweep).
fn sweep_commands(base: &Path, empty: Empty) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with("cmd-") {
            empty(&entry.path());
        }
    }
}

/// Empties every command cgroup under `base`, then removes the base.
pub(crate) fn sweep_and_remove(base: &Path, empty: Empty) {
    sweep_commands(base, empty);
    let _ = fs::remove_dir(base);
}
