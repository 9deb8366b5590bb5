//! Process tracking with a cgroup v2 per command, so that a descendant which
//! starts a session of its own (`setsid`) still ends with its command.
//!
//! At first use the daemon creates `praxisd-<pid>` under its own v2 cgroup
//! (the `0::` line of `/proc/self/cgroup`, under the `cgroup2` mount found in
//! `/proc/self/mountinfo`), after killing and removing what dead daemons
//! left there. Each command then gets `cmd-<pid>-<n>` under that base; the
//! child moves itself in right after `setsid` by writing `0` to the
//! `cgroup.procs` descriptor prepared here, so everything it starts stays
//! inside. When the command's first process has been reaped, the rest of
//! the cgroup is killed with `cgroup.kill` and the directory removed once
//! `cgroup.events` reports it empty.
//!
//! Where no cgroup can be created (no v2 hierarchy, no `cgroup.kill`, or no
//! permission: an unprivileged daemon without delegation), commands are
//! tracked by process group only, and [`tracking`] says why.
//!
//! Limits ([`limiting`]): when the base can pass the `pids` and `memory`
//! controllers down (they are in its `cgroup.controllers` and it may enable
//! them in its `cgroup.subtree_control`), each command cgroup gets
//! `pids.max`, `memory.max`, `memory.swap.max` 0 and `memory.oom.group` 1,
//! so a fork or memory bomb ends inside its own command. Where the host
//! keeps those controllers in cgroup v1 (a hybrid host), each command gets a
//! cgroup in the v1 `pids` and `memory` hierarchies instead (see `v1.rs`). With
//! neither, the child gets `RLIMIT_NPROC` and `RLIMIT_AS`.

mod base;
mod error;
pub(crate) mod mountinfo;
mod v1;

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use error::CgroupError;
pub use v1::V1Bases;

use base::EMPTY_WAIT;
use mountinfo::Hierarchy;

use crate::Limits;

/// How the daemon keeps track of a command's processes on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracking {
    /// A cgroup v2 per command under this base: every descendant, whatever
    /// its session, ends with the command.
    Cgroup(CgroupBase),
    /// The command's process group only (the reason no cgroup is used): a
    /// descendant that calls `setsid` can outlive the command.
    ProcessGroup(String),
}

/// The directory command cgroups are made under in the v2 hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupBase {
    /// `praxisd-<pid>` under the daemon's own cgroup.
    pub dir: PathBuf,
    /// `None` when command cgroups here can carry `pids.max` and
    /// `memory.max`; else why not ([`limiting`] then looks further).
    pub no_limits: Option<String>,
}

impl fmt::Display for Tracking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tracking::Cgroup(base) => write!(f, "cgroup {}", base.dir.display()),
            Tracking::ProcessGroup(why) => write!(f, "process group only ({why})"),
        }
    }
}

/// The tracking in force for this process, detected (and the base created,
/// stale leftovers swept) on first call.
pub fn tracking() -> &'static Tracking {
    static TRACKING: OnceLock<Tracking> = OnceLock::new();
    TRACKING.get_or_init(|| match detect() {
        Ok(base) => Tracking::Cgroup(base),
        Err(why) => Tracking::ProcessGroup(why),
    })
}

/// What carries a command's [`Limits`] on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limiting {
    /// `pids.max` and `memory.max` of the command's v2 cgroup.
    CgroupV2,
    /// `pids.max` and `memory.limit_in_bytes` of a cgroup per command in
    /// the v1 `pids` and `memory` hierarchies, under these bases.
    CgroupV1(V1Bases),
    /// `RLIMIT_NPROC` and `RLIMIT_AS` in the child (why no cgroup can):
    /// per user and per process, and no process ceiling for root.
    Rlimits(String),
}

impl Limiting {
    /// Whether a cgroup carries the limits (else they are rlimits).
    pub fn by_cgroup(&self) -> bool {
        !matches!(self, Limiting::Rlimits(_))
    }
}

impl fmt::Display for Limiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limiting::CgroupV2 => write!(f, "limits by pids.max and memory.max"),
            Limiting::CgroupV1(bases) => write!(
                f,
                "limits by cgroup v1 pids.max and memory.limit_in_bytes under {} and {}",
                bases.pids.display(),
                bases.memory.display()
            ),
            Limiting::Rlimits(why) => write!(f, "limits by RLIMIT_NPROC and RLIMIT_AS ({why})"),
        }
    }
}

/// The limit mechanism in force for this process, detected on first call
/// (after [`tracking`]): the v2 controllers where the v2 base has them,
/// else the v1 hierarchies, else rlimits.
pub fn limiting() -> &'static Limiting {
    static LIMITING: OnceLock<Limiting> = OnceLock::new();
    LIMITING.get_or_init(|| {
        let no_v2 = match tracking() {
            Tracking::Cgroup(CgroupBase {
                no_limits: None, ..
            }) => return Limiting::CgroupV2,
            Tracking::Cgroup(CgroupBase {
                no_limits: Some(why),
                ..
            })
            | Tracking::ProcessGroup(why) => why,
        };
        match v1::detect() {
            Ok(bases) => Limiting::CgroupV1(bases),
            Err(no_v1) => Limiting::Rlimits(format!("cgroup v2: {no_v2}; cgroup v1: {no_v1}")),
        }
    })
}

/// How commands are tracked and limited, in one line for `praxis status`.
pub fn process_control() -> String {
    format!("{}, {}", tracking(), limiting())
}

/// The controllers a command cgroup's limits need.
const LIMIT_CONTROLLERS: [&str; 2] = ["pids", "memory"];

/// Whether the `cgroup.controllers` of `dir` lists every limit controller.
fn offers_limit_controllers(dir: &Path) -> bool {
    fs::read_to_string(dir.join("cgroup.controllers")).is_ok_and(|text| {
        LIMIT_CONTROLLERS
            .iter()
            .all(|c| text.split_whitespace().any(|have| have == *c))
    })
}

/// Enables the limit controllers for the children of `dir`.
fn enable_limit_controllers(dir: &Path) -> io::Result<()> {
    let line = LIMIT_CONTROLLERS.map(|c| format!("+{c}")).join(" ");
    OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.subtree_control"))
        .and_then(|mut f| f.write_all(line.as_bytes()))
}

/// Makes command cgroups under `base` able to carry `pids.max` and
/// `memory.max`: the daemon's own cgroup `own` passes the controllers down
/// (already, or now, which cgroup v2 allows only where `own` holds no
/// process itself or is the root), and `base` enables them for its children.
fn limit_controllers(own: &Path, base: &Path) -> Result<(), String> {
    let names = LIMIT_CONTROLLERS.join(" and ");
    if !offers_limit_controllers(base) {
        if !offers_limit_controllers(own) {
            return Err(format!(
                "the cgroup v2 hierarchy offers no {names} controller at {} \
                 (held by cgroup v1, or not delegated)",
                own.display()
            ));
        }
        enable_limit_controllers(own).map_err(|e| {
            format!(
                "cannot pass the {names} controllers down from {}: {e}",
                own.display()
            )
        })?;
    }
    enable_limit_controllers(base).map_err(|e| {
        format!(
            "cannot enable the {names} controllers in {}: {e}",
            base.display()
        )
    })
}

fn detect() -> Result<CgroupBase, String> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("reading /proc/self/mountinfo: {e}"))?;
    let (mount, root) = mountinfo::mount(&mountinfo, Hierarchy::V2)
        .ok_or_else(|| String::from("no cgroup2 filesystem mounted"))?;
    let proc_cgroup = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("reading /proc/self/cgroup: {e}"))?;
    let own = mountinfo::own_dir(&proc_cgroup, Hierarchy::V2, &mount, &root)
        .ok_or_else(|| String::from("own cgroup v2 path not under the cgroup2 mount"))?;
    let base = base::claim(&own, empty_quietly)?;
    if !base.join("cgroup.kill").exists() {
        let _ = fs::remove_dir(&base);
        return Err(String::from("the kernel lacks cgroup.kill (5.14 or later)"));
    }
    let no_limits = limit_controllers(&own, &base).err();
    Ok(CgroupBase {
        dir: base,
        no_limits,
    })
}

/// Empties and removes every cgroup this daemon made, in every hierarchy
/// (the guardian, once praxisd is gone). Detected before the fork, run after.
#[derive(Debug)]
pub(crate) struct DaemonBases {
    v2: Option<PathBuf>,
    v1: Option<V1Bases>,
}

impl DaemonBases {
    /// This daemon's bases (detecting them if not done yet).
    pub(crate) fn current() -> DaemonBases {
        DaemonBases {
            v2: match tracking() {
                Tracking::Cgroup(base) => Some(base.dir.clone()),
                Tracking::ProcessGroup(_) => None,
            },
            v1: match limiting() {
                Limiting::CgroupV1(bases) => Some(bases.clone()),
                Limiting::CgroupV2 | Limiting::Rlimits(_) => None,
            },
        }
    }

    /// Kills what is left in every command cgroup and removes them all.
    pub(crate) fn sweep_and_remove(&self) {
        if let Some(dir) = &self.v2 {
            base::sweep_and_remove(dir, empty_quietly);
        }
        if let Some(bases) = &self.v1 {
            bases.sweep_and_remove();
        }
    }
}

fn empty_quietly(dir: &Path) {
    let _ = kill(dir);
    let _ = remove_when_empty(dir, EMPTY_WAIT);
}

/// SIGKILL to every process in the cgroup at `dir`, descendants included.
fn kill(dir: &Path) -> Result<(), CgroupError> {
    let path = dir.join("cgroup.kill");
    OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(b"1"))
        .map_err(CgroupError::at("writing", &path))
}

/// Whether `cgroup.events` text says processes remain.
fn populated(events: &str) -> bool {
    events
        .lines()
        .any(|l| l.split_whitespace().eq(["populated", "1"]))
}

/// Waits up to `within` for the cgroup at `dir` to be empty, then removes it.
fn remove_when_empty(dir: &Path, within: Duration) -> Result<(), CgroupError> {
    let path = dir.join("cgroup.events");
    let mut events = File::open(&path).map_err(CgroupError::at("opening", &path))?;
    let deadline = Instant::now() + within;
    let mut text = String::new();
    loop {
        text.clear();
        events
            .rewind()
            .and_then(|()| events.read_to_string(&mut text))
            .map_err(CgroupError::at("reading", &path))?;
        if !populated(&text) {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(CgroupError::at("waiting for the cgroup to empty", dir)(
                io::Error::from(io::ErrorKind::TimedOut),
            ));
        }
        // The file signals a change with POLLPRI (and POLLERR).
        let mut pfd = libc::pollfd {
            fd: events.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        // SAFETY: poll on one valid pollfd; an error or EINTR just re-reads.
        unsafe { libc::poll(&mut pfd, 1, ms) };
    }
    fs::remove_dir(dir).map_err(CgroupError::at("removing", dir))
}

/// One command's cgroups: the v2 one that tracks it (when tracking by
/// cgroup) and the v1 ones that limit it (when limits are by cgroup v1);
/// created by `prepare`, joined by the child, killed and removed when the
/// command is over (on drop at the latest).
#[derive(Debug)]
pub(crate) struct CommandCgroup {
    tracked: Option<TrackedCgroup>,
    limited: Option<v1::CommandLimits>,
}

/// The command's v2 cgroup.
#[derive(Debug)]
struct TrackedCgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for writing: the child writes `0` to join.
    procs: File,
    /// `cgroup.events`, open for reading: whether processes remain, in one
    /// read when the command ends.
    events: File,
    removed: bool,
}

impl CommandCgroup {
    /// The command's cgroups, carrying `limits` where a cgroup can; `None`
    /// when neither tracking nor limits are by cgroup.
    pub(crate) fn create(limits: &Limits) -> Result<Option<CommandCgroup>, CgroupError> {
        let name = base::command_name();
        let tracked = match tracking() {
            Tracking::Cgroup(base) => Some(TrackedCgroup::create(base, &name, limits)?),
            Tracking::ProcessGroup(_) => None,
        };
        let limited = match limiting() {
            Limiting::CgroupV1(bases) => Some(v1::CommandLimits::create(bases, &name, limits)?),
            Limiting::CgroupV2 | Limiting::Rlimits(_) => None,
        };
        Ok((tracked.is_some() || limited.is_some()).then_some(CommandCgroup { tracked, limited }))
    }

    /// The v2 cgroup's directory, when the command is tracked by one.
    pub(crate) fn dir(&self) -> Option<&Path> {
        self.tracked.as_ref().map(|t| t.dir.as_path())
    }

    /// The descriptors the child writes `0` to, in order (close-on-exec).
    pub(crate) fn procs_fds(&self) -> Vec<RawFd> {
        let tracked = self.tracked.iter().map(|t| t.procs.as_raw_fd());
        tracked
            .chain(self.limited.iter().flat_map(v1::CommandLimits::procs_fds))
            .collect()
    }

    /// Kills every process left in the command's cgroups.
    pub(crate) fn kill(&self) -> Result<(), CgroupError> {
        if let Some(tracked) = &self.tracked {
            kill(&tracked.dir)?;
        }
        self.limited
            .as_ref()
            .map_or(Ok(()), v1::CommandLimits::kill)
    }

    /// Kills every process left in the command's cgroups, unless the
    /// tracking cgroup reports none: it holds every process the others do
    /// (the child joins it first), so an empty one means nothing is left to
    /// kill anywhere, and the writes and listings of [`CommandCgroup::kill`]
    /// are spared on the usual end of a command.
    pub(crate) fn kill_remaining(&self) -> Result<(), CgroupError> {
        if let Some(tracked) = &self.tracked
            && !tracked.populated()?
        {
            return Ok(());
        }
        self.kill()
    }

    /// Kills what is left, waits for it to be gone and removes the cgroups.
    pub(crate) fn remove(mut self) -> Result<(), CgroupError> {
        let tracked = self.tracked.take().map_or(Ok(()), TrackedCgroup::remove);
        let limited = self
            .limited
            .take()
            .map_or(Ok(()), v1::CommandLimits::remove);
        tracked.and(limited)
    }
}

impl TrackedCgroup {
    /// A fresh cgroup under the v2 base, carrying `limits` where the base
    /// has the controllers for them.
    fn create(
        base: &CgroupBase,
        name: &str,
        limits: &Limits,
    ) -> Result<TrackedCgroup, CgroupError> {
        let dir = base.dir.join(name);
        fs::create_dir(&dir).map_err(CgroupError::at("creating", &dir))?;
        let opened = |name: &str, write: bool| {
            let path = dir.join(name);
            OpenOptions::new()
                .read(!write)
                .write(write)
                .open(&path)
                .map_err(CgroupError::at("opening", &path))
        };
        let (procs, events) = match opened("cgroup.procs", true)
            .and_then(|procs| Ok((procs, opened("cgroup.events", false)?)))
        {
            Ok(files) => files,
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let cgroup = TrackedCgroup {
            dir,
            procs,
            events,
            removed: false,
        };
        if base.no_limits.is_none() {
            cgroup.set_limits(limits)?;
        }
        Ok(cgroup)
    }

    /// Writes the limits; on drop after a failure the cgroup is removed.
    /// Swap is closed so `memory.max` bounds what the command holds, and an
    /// out-of-memory kill takes the whole command, not one process of it.
    fn set_limits(&self, limits: &Limits) -> Result<(), CgroupError> {
        let mut settings = vec![
            ("pids.max", limits.pids.to_string()),
            ("memory.max", limits.memory_bytes.to_string()),
            ("memory.oom.group", String::from("1")),
        ];
        // Absent where the kernel has no swap accounting: nothing to close.
        if self.dir.join("memory.swap.max").exists() {
            settings.push(("memory.swap.max", String::from("0")));
        }
        for (file, value) in settings {
            let path = self.dir.join(file);
            OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|mut f| f.write_all(value.as_bytes()))
                .map_err(CgroupError::at("writing", &path))?;
        }
        Ok(())
    }

    /// Whether processes remain in the cgroup, from `cgroup.events`.
    fn populated(&self) -> Result<bool, CgroupError> {
        let mut buf = [0u8; 128];
        let n = self
            .events
            .read_at(&mut buf, 0)
            .map_err(CgroupError::at("reading", &self.dir.join("cgroup.events")))?;
        Ok(populated(&String::from_utf8_lossy(&buf[..n])))
    }

    fn remove(mut self) -> Result<(), CgroupError> {
        self.removed = true;
        kill(&self.dir)?;
        remove_when_empty(&self.dir, EMPTY_WAIT)
    }
}

impl Drop for TrackedCgroup {
    fn drop(&mut self) {
        if !self.removed {
            // Best effort: a cgroup still populated stays for the next sweep.
            empty_quietly(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populated_is_read_from_events() {
        assert!(populated("populated 1\nfrozen 0\n"));
        assert!(!populated("populated 0\nfrozen 0\n"));
    }

    #[test]
    fn tracking_and_limiting_are_described_for_status() {
        let dir = PathBuf::from("/sys/fs/cgroup/praxisd-7");
        let tracked = Tracking::Cgroup(CgroupBase {
            dir,
            no_limits: None,
        });
        assert_eq!(tracked.to_string(), "cgroup /sys/fs/cgroup/praxisd-7");
        let pg = Tracking::ProcessGroup("EACCES".into());
        assert_eq!(pg.to_string(), "process group only (EACCES)");
        assert!(Limiting::CgroupV2.by_cgroup());
        assert_eq!(
            Limiting::CgroupV2.to_string(),
            "limits by pids.max and memory.max"
        );
        let v1 = Limiting::CgroupV1(V1Bases {
            pids: "/sys/fs/cgroup/pids/praxisd-7".into(),
            memory: "/sys/fs/cgroup/memory/praxisd-7".into(),
        });
        assert!(v1.by_cgroup());
        assert_eq!(
            v1.to_string(),
            "limits by cgroup v1 pids.max and memory.limit_in_bytes under \
             /sys/fs/cgroup/pids/praxisd-7 and /sys/fs/cgroup/memory/praxisd-7"
        );
        let rlimits = Limiting::Rlimits("no controllers".into());
        assert!(!rlimits.by_cgroup());
        assert_eq!(
            rlimits.to_string(),
            "limits by RLIMIT_NPROC and RLIMIT_AS (no controllers)"
        );
    }
}
