//! Limits in the cgroup v1 `pids` and `memory` hierarchies, for hosts that
//! keep those controllers in v1 (hybrid hosts), where no v2 cgroup can carry
//! them and `RLIMIT_NPROC` would bind no command running as root.
//!
//! At first use the daemon creates `praxisd-<pid>` under its own cgroup in
//! each of the two hierarchies (both found from `/proc/self/mountinfo` and
//! `/proc/self/cgroup`), after emptying what dead daemons left there. Each
//! command gets `cmd-<pid>-<n>` in both, with `pids.max`,
//! `memory.limit_in_bytes` and (where swap is accounted)
//! `memory.memsw.limit_in_bytes`; the child joins them by writing `0` to
//! their `cgroup.procs`, as it does for its v2 cgroup.
//!
//! v1 has no `cgroup.kill`: a command cgroup is emptied by setting its
//! `pids.max` to 0 (no process in it can fork any more) and sending SIGKILL
//! to each process `cgroup.procs` lists, until it lists none. Where the
//! command also has a v2 cgroup that kill comes first, and the v1 cgroups
//! are then found empty.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::base::{self, EMPTY_WAIT};
use super::error::CgroupError;
use super::mountinfo::{self, Hierarchy};
use crate::Limits;

/// This daemon's bases in the v1 hierarchies that carry the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Bases {
    /// `praxisd-<pid>` in the `pids` hierarchy.
    pub pids: PathBuf,
    /// `praxisd-<pid>` in the `memory` hierarchy.
    pub memory: PathBuf,
}

impl V1Bases {
    /// Empties and removes both bases (the guardian, once praxisd is gone).
    pub(crate) fn sweep_and_remove(&self) {
        for dir in [&self.pids, &self.memory] {
            base::sweep_and_remove(dir, empty_quietly);
        }
    }
}

/// Finds both hierarchies and claims a base in each; why not, else.
pub(crate) fn detect() -> Result<V1Bases, String> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("reading /proc/self/mountinfo: {e}"))?;
    let proc_cgroup = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("reading /proc/self/cgroup: {e}"))?;
    let pids = claim(&mountinfo, &proc_cgroup, "pids")?;
    let memory = claim(&mountinfo, &proc_cgroup, "memory").inspect_err(|_| {
        let _ = fs::remove_dir(&pids);
    })?;
    Ok(V1Bases { pids, memory })
}

/// This daemon's base in the v1 hierarchy of `controller`.
fn claim(mountinfo: &str, proc_cgroup: &str, controller: &str) -> Result<PathBuf, String> {
    let hierarchy = Hierarchy::V1(controller);
    let (mount, root) = mountinfo::mount(mountinfo, hierarchy)
        .ok_or_else(|| format!("no v1 {controller} hierarchy mounted"))?;
    let own = mountinfo::own_dir(proc_cgroup, hierarchy, &mount, &root)
        .ok_or_else(|| format!("own v1 {controller} cgroup not under its mount"))?;
    base::claim(&own, empty_quietly)
}

fn empty_quietly(dir: &Path) {
    let _ = empty_and_remove(dir);
}

/// Stops forks (where `dir` carries `pids.max`), kills every process in
/// the cgroup until none is left, then removes it.
///
/// A pid read from `cgroup.procs` could in principle be reused between the
/// read and the kill; with forks stopped and only exits left, that needs a
/// whole pid-space wrap in that window.
fn empty_and_remove(dir: &Path) -> Result<(), CgroupError> {
    let pids_max = dir.join("pids.max");
    if pids_max.exists() {
        write(&pids_max, "0")?;
    }
    let deadline = Instant::now() + EMPTY_WAIT;
    while kill_listed(dir)? > 0 {
        if Instant::now() >= deadline {
            return Err(CgroupError::at("waiting for the cgroup to empty", dir)(
                io::Error::from(io::ErrorKind::TimedOut),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    fs::remove_dir(dir).map_err(CgroupError::at("removing", dir))
}

/// SIGKILL to every process the cgroup at `dir` lists now; how many.
fn kill_listed(dir: &Path) -> Result<usize, CgroupError> {
    let procs = dir.join("cgroup.procs");
    let listed = fs::read_to_string(&procs).map_err(CgroupError::at("reading", &procs))?;
    let pids: Vec<libc::pid_t> = listed.lines().filter_map(|l| l.parse().ok()).collect();
    for &pid in &pids {
        // SAFETY: kill with a plain pid; one that is gone gets ESRCH.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    Ok(pids.len())
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(CgroupError::at("writing", path))
}

/// One command's cgroups in the v1 `pids` and `memory` hierarchies, removed
/// (emptied first) when the command is over, on drop at the latest.
#[derive(Debug)]
pub(crate) struct CommandLimits {
    /// Each directory with its `cgroup.procs` open for writing.
    joined: Vec<(PathBuf, File)>,
    removed: bool,
}

impl CommandLimits {
    /// Cgroups named `name` under `bases`, carrying `limits`. Swap is
    /// capped at the same figure, so the memory limit bounds what the
    /// command holds.
    pub(crate) fn create(
        bases: &V1Bases,
        name: &str,
        limits: &Limits,
    ) -> Result<CommandLimits, CgroupError> {
        let pids = limits.pids.to_string();
        let memory = limits.memory_bytes.to_string();
        let settings: [(&Path, &[(&str, &str)]); 2] = [
            (&bases.pids, &[("pids.max", &pids)]),
            (
                &bases.memory,
                &[
                    ("memory.limit_in_bytes", &memory),
                    ("memory.memsw.limit_in_bytes", &memory),
                ],
            ),
        ];
        let mut made = CommandLimits {
            joined: Vec::with_capacity(2),
            removed: false,
        };
        for (base, files) in settings {
            let dir = base.join(name);
            fs::create_dir(&dir).map_err(CgroupError::at("creating", &dir))?;
            let path = dir.join("cgroup.procs");
            let procs = OpenOptions::new().write(true).open(&path);
            let procs = match procs {
                Ok(procs) => procs,
                Err(e) => {
                    let _ = fs::remove_dir(&dir);
                    return Err(CgroupError::at("opening", &path)(e));
                }
            };
            made.joined.push((dir.clone(), procs));
            for &(file, value) in files {
                let path = dir.join(file);
                // Absent where the kernel has no swap accounting.
                if file != "memory.memsw.limit_in_bytes" || path.exists() {
                    write(&path, value)?;
                }
            }
        }
        Ok(made)
    }

    /// The descriptors the child writes `0` to (close-on-exec).
    pub(crate) fn procs_fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.joined.iter().map(|(_, procs)| procs.as_raw_fd())
    }

    /// SIGKILL to every process listed in the cgroups now.
    pub(crate) fn kill(&self) -> Result<(), CgroupError> {
        for (dir, _) in &self.joined {
            kill_listed(dir)?;
        }
        Ok(())
    }

    /// Empties and removes the cgroups.
    pub(crate) fn remove(mut self) -> Result<(), CgroupError> {
        self.removed = true;
        self.joined
            .iter()
            .map(|(dir, _)| empty_and_remove(dir))
            .fold(Ok(()), Result::and)
    }
}

impl Drop for CommandLimits {
    fn drop(&mut self) {
        if !self.removed {
            for (dir, _) in &self.joined {
                empty_quietly(dir);
            }
        }
    }
}
