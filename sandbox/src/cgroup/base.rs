//! The daemon's base directory in a cgroup hierarchy (`praxisd-<pid>` under
//! its own cgroup) and the command cgroups under it (`cmd-<pid>-<n>`): their
//! names, and the sweep of what dead daemons left behind. How a command
//! cgroup is emptied differs between v2 and v1 and is passed in.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long emptying a command's cgroup waits for its killed processes to
/// be gone before leaving the directory to a later sweep.
pub(crate) const EMPTY_WAIT: Duration = Duration::from_millis(500);

/// Kills what is in a command cgroup and removes it (best effort).
pub(crate) type Empty = fn(&Path);

/// Creates (or takes over, emptied, from a dead daemon of the same pid) this
/// daemon's base under `own`, after sweeping the bases of dead daemons there.
pub(crate) fn claim(own: &Path, empty: Empty) -> Result<PathBuf, String> {
    sweep_dead_daemons(own, empty);
    let base = own.join(format!("praxisd-{}", std::process::id()));
    match fs::create_dir(&base) {
        Ok(()) => Ok(base),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            sweep_commands(&base, empty);
            Ok(base)
        }
        Err(e) => Err(format!("cannot create {}: {e}", base.display())),
    }
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

/// Empties and removes every `praxisd-<pid>` base under `parent` whose
/// daemon is gone.
fn sweep_dead_daemons(parent: &Path, empty: Empty) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("praxisd-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            sweep_and_remove(&entry.path(), empty);
        }
    }
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
