//! The daemon's running commands: their process groups (each child calls
//! `setsid`, so its session id, process group id and pid are one number),
//! for the kill switch, drain, and telling operators from agents.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::pinned::{Process, cgroup_v2, read_proc};

/// One running command.
#[derive(Debug)]
pub struct Slot {
    pub pgid: i32,
    /// Why the daemon ended it (kill switch, shutdown), when it did.
    ended_because: OnceLock<String>,
}

impl Slot {
    pub fn ended_because(&self) -> Option<&str> {
        self.ended_because.get().map(String::as_str)
    }
}

/// Registry of running commands.
#[derive(Debug, Default)]
pub struct Children {
    slots: Mutex<HashMap<i32, Arc<Slot>>>,
}

/// Keeps a command registered while it runs; unregisters on drop.
#[must_use]
pub struct Registration {
    children: Arc<Children>,
    slot: Arc<Slot>,
}

impl Registration {
    pub fn slot(&self) -> &Slot {
        &self.slot
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.children.lock().remove(&self.slot.pgid);
    }
}

/// Sends `sig` to the process group `pgid`; a group already gone is not an error.
pub fn signal_group(pgid: i32, sig: Signal) {
    if pgid > 1 {
        let _ = kill(Pid::from_raw(-pgid), sig);
    }
}

/// The parent pid of `pid`, from `/proc/<pid>/stat` (the field after the
/// parenthesised command name, which may itself contain spaces or parens).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = read_proc(&format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The cgroup v2 path every command cgroup of this daemon lies under
/// (`praxisd-<pid>` under its own cgroup), as `/proc/<pid>/cgroup` names it.
/// Read once, on first use (every peer check needs it): praxisd moved
/// later leaves the cgroups its commands get where they were.
fn commands_cgroup() -> Option<&'static Path> {
    static COMMANDS: OnceLock<Option<PathBuf>> = OnceLock::new();
    COMMANDS
        .get_or_init(|| {
            let own = read_proc("/proc/self/cgroup").ok()?;
            Some(cgroup_v2(&own)?.join(format!("praxisd-{}", std::process::id())))
        })
        .as_deref()
}

impl Children {
    fn lock(&self) -> MutexGuard<'_, HashMap<i32, Arc<Slot>>> {
        // A panic while holding this lock cannot leave the map inconsistent.
        self.slots
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub fn register(self: &Arc<Self>, pgid: i32) -> Registration {
        let slot = Arc::new(Slot {
            pgid,
            ended_because: OnceLock::new(),
        });
        self.lock().insert(pgid, Arc::clone(&slot));
        Registration {
            children: Arc::clone(self),
            slot,
        }
    }

    /// The process group of each running command (its first process's pid).
    pub fn pgids(&self) -> Vec<i32> {
        self.lock().keys().copied().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Whether `pid` runs inside one of our commands: its session is one of
    /// theirs, or one of its ancestors is a command we started (catches a
    /// process that called `setsid` again to leave the session).
    pub fn contains_process(&self, pid: i32) -> bool {
        let slots = self.lock();
        if slots.is_empty() {
            return false;
        }
        if let Ok(sid) = nix::unistd::getsid(Some(Pid::from_raw(pid)))
            && slots.contains_key(&sid.as_raw())
        {
            return true;
        }
        let mut current = pid;
        // Bounded walk: pid chains are short, and a cycle is impossible but cheap to guard.
        for _ in 0..4096 {
            if slots.contains_key(&current) {
                return true;
            }
            match parent_of(current) {
                Some(parent) if parent > 1 => current = parent,
                _ => return false,
            }
        }
        false
    }

    /// Whether `process` runs inside one of our commands: in a cgroup under
    /// this daemon's command cgroups (whatever its session or parent, even
    /// after its command ended), or inside by session or ancestry.
    pub fn contains(&self, process: &Process) -> bool {
        process
            .cgroup
            .as_deref()
            .zip(commands_cgroup())
            .is_some_and(|(cgroup, commands)| cgroup.starts_with(commands))
            || self.contains_process(process.pid)
    }

    /// Ends every running command: SIGTERM to each group, SIGKILL after
    /// `grace`. Blocking; call from a thread that may sleep.
    pub fn terminate_all(&self, because: &str, grace: Duration) -> usize {
        let slots: Vec<Arc<Slot>> = self.lock().values().cloned().collect();
        for slot in &slots {
            let _ = slot.ended_because.set(because.to_owned());
            signal_group(slot.pgid, Signal::SIGTERM);
        }
        if !slots.is_empty() {
            std::thread::sleep(grace);
            for slot in &slots {
                signal_group(slot.pgid, Signal::SIGKILL);
            }
        }
        slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_is_scoped_and_finds_descendants() {
        let children = Arc::new(Children::default());
        let me = std::process::id() as i32;
        let parent = parent_of(me).unwrap();
        assert!(!children.contains_process(me));
        {
            let _reg = children.register(parent);
            assert_eq!(children.len(), 1);
            assert!(
                children.contains_process(me),
                "a descendant of a registered command is inside it"
            );
        }
        assert!(children.is_empty());
        assert!(!children.contains_process(me));
    }

    #[test]
    fn a_process_in_a_command_cgroup_is_inside_whatever_its_ancestry() {
        let children = Children::default();
        let commands = commands_cgroup().unwrap();
        let at = |cgroup: std::path::PathBuf| Process {
            pid: i32::MAX,
            cgroup: Some(cgroup),
        };
        assert!(children.contains(&at(commands.join("cmd-1-2"))));
        assert!(children.contains(&at(commands.join("cmd-1-2/deeper"))));
        assert!(!children.contains(&at(commands.with_file_name("praxisd-1"))));
        assert!(!children.contains(&Process {
            pid: i32::MAX,
            cgroup: None
        }));
    }
}
