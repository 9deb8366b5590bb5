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
//! Limits: when the base can pass the `pids` and `memory` controllers down
//! (they are in its `cgroup.controllers` and it may enable them in its
//! `cgroup.subtree_control`), each command cgroup gets `pids.max`,
//! `memory.max`, `memory.swap.max` 0 and `memory.oom.group` 1, so a fork or
//! memory bomb ends inside its own command. Otherwise (a hybrid host whose
//! controllers sit in cgroup v1, a daemon cgroup that holds processes and
//! was not given the controllers, or no cgroup at all) the child gets
//! `RLIMIT_NPROC` and `RLIMIT_AS` instead, and [`Tracking`] says so.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::Limits;

/// How long dropping a command's cgroup waits for its killed processes to
/// be gone before leaving the directory to a later sweep.
const EMPTY_WAIT: Duration = Duration::from_millis(500);

/// A failed cgroup operation.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {source}", path.display())]
pub struct CgroupError {
    /// What was being done.
    what: &'static str,
    /// The cgroup file or directory.
    path: PathBuf,
    /// The error.
    #[source]
    source: io::Error,
}

impl CgroupError {
    fn at(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CgroupError {
        let path = path.to_path_buf();
        move |source| CgroupError { what, path, source }
    }
}

/// How the daemon keeps track of a command's processes on this host, and
/// how it limits their number and memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracking {
    /// A cgroup per command under this base: every descendant, whatever its
    /// session, ends with the command.
    Cgroup(CgroupBase),
    /// The command's process group only (the reason no cgroup is used): a
    /// descendant that calls `setsid` can outlive the command. Limits are
    /// rlimits.
    ProcessGroup(String),
}

/// The directory command cgroups are made under, and what limits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupBase {
    /// `praxisd-<pid>` under the daemon's own cgroup.
    pub dir: PathBuf,
    /// `None` when command cgroups carry `pids.max` and `memory.max`; else
    /// why not (limits are then `RLIMIT_NPROC` and `RLIMIT_AS`).
    pub no_limits: Option<String>,
}

impl Tracking {
    /// Whether [`crate::Limits`] are applied as cgroup `pids.max` and
    /// `memory.max` (else as `RLIMIT_NPROC` and `RLIMIT_AS`).
    pub fn limits_by_cgroup(&self) -> bool {
        matches!(self, Tracking::Cgroup(base) if base.no_limits.is_none())
    }
}

const RLIMITS_INSTEAD: &str = "limits by RLIMIT_NPROC and RLIMIT_AS";

impl fmt::Display for Tracking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tracking::Cgroup(CgroupBase {
                dir,
                no_limits: None,
            }) => write!(
                f,
                "cgroup {}, limits by pids.max and memory.max",
                dir.display()
            ),
            Tracking::Cgroup(CgroupBase {
                dir,
                no_limits: Some(why),
            }) => write!(f, "cgroup {}, {RLIMITS_INSTEAD} ({why})", dir.display()),
            Tracking::ProcessGroup(why) => {
                write!(f, "process group only ({why}), {RLIMITS_INSTEAD}")
            }
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

/// The mount point of the `cgroup2` filesystem and the path of its root
/// within the cgroup namespace, from `/proc/self/mountinfo` text.
fn cgroup2_mount(mountinfo: &str) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        // Optional fields end at " - "; the filesystem type follows.
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = fields.nth(3)?;
        let mount_point = fields.next()?;
        Some((PathBuf::from(unescape(mount_point)), unescape(root)))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space and so on).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of our own v2 cgroup: the `0::<path>` line of
/// `/proc/self/cgroup`, under the mount (whose root may be a subtree).
fn own_cgroup_dir(proc_cgroup: &str, mount: &Path, mount_root: &str) -> Option<PathBuf> {
    let path = proc_cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let rel = if mount_root == "/" {
        path
    } else {
        path.strip_prefix(mount_root)
            .filter(|r| r.is_empty() || r.starts_with('/'))?
    };
    Some(mount.join(rel.trim_start_matches('/')))
}

fn detect() -> Result<CgroupBase, String> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("reading /proc/self/mountinfo: {e}"))?;
    let (mount, root) =
        cgroup2_mount(&mountinfo).ok_or_else(|| String::from("no cgroup2 filesystem mounted"))?;
    let proc_cgroup = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("reading /proc/self/cgroup: {e}"))?;
    let own = own_cgroup_dir(&proc_cgroup, &mount, &root)
        .ok_or_else(|| String::from("own cgroup v2 path not under the cgroup2 mount"))?;
    sweep_dead_daemons(&own);
    let base = own.join(format!("praxisd-{}", std::process::id()));
    match fs::create_dir(&base) {
        Ok(()) => {}
        // A dead daemon of the same pid left it: empty it and take it over.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => sweep_commands(&base),
        Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
    }
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

/// Kills and removes the command cgroups of every `praxisd-<pid>` under
/// `parent` whose daemon is gone, then the base itself.
fn sweep_dead_daemons(parent: &Path) {
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
            let base = entry.path();
            sweep_commands(&base);
            let _ = fs::remove_dir(&base);
        }
    }
}

/// Kills and removes every `cmd-*` cgroup under `base` (best effort: one
/// still populated after the wait stays for the next sweep).
pub(crate) fn sweep_commands(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with("cmd-") {
            let dir = entry.path();
            let _ = kill(&dir);
            let _ = remove_when_empty(&dir, EMPTY_WAIT);
        }
    }
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

/// One command's cgroup: created by `prepare`, joined by the child, killed
/// and removed when the command is over (on drop at the latest).
#[derive(Debug)]
pub(crate) struct CommandCgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for writing: the child writes `0` to join.
    procs: File,
    removed: bool,
}

impl CommandCgroup {
    /// A fresh cgroup under the base, when tracking by cgroup, carrying
    /// `limits` where the base has the controllers for them.
    pub(crate) fn create(limits: &Limits) -> Result<Option<CommandCgroup>, CgroupError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let Tracking::Cgroup(base) = tracking() else {
            return Ok(None);
        };
        let dir = base.dir.join(format!(
            "cmd-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&dir).map_err(CgroupError::at("creating", &dir))?;
        let path = dir.join("cgroup.procs");
        let procs = match OpenOptions::new().write(true).open(&path) {
            Ok(procs) => procs,
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                return Err(CgroupError::at("opening", &path)(e));
            }
        };
        let cgroup = CommandCgroup {
            dir,
            procs,
            removed: false,
        };
        if base.no_limits.is_none() {
            cgroup.set_limits(limits)?;
        }
        Ok(Some(cgroup))
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

    /// The cgroup's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The descriptor the child writes `0` to (close-on-exec).
    pub(crate) fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// Kills every process left in the cgroup.
    pub(crate) fn kill(&self) -> Result<(), CgroupError> {
        kill(&self.dir)
    }

    /// Kills what is left, waits for it to be gone and removes the cgroup.
    pub(crate) fn remove(mut self) -> Result<(), CgroupError> {
        self.removed = true;
        kill(&self.dir)?;
        remove_when_empty(&self.dir, EMPTY_WAIT)
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        if !self.removed {
            // Best effort: a cgroup still populated stays for the next sweep.
            let _ = kill(&self.dir);
            let _ = remove_when_empty(&self.dir, EMPTY_WAIT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_and_our_dir() {
        let mountinfo = "\
25 30 0:23 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw
";
        let (mount, root) = cgroup2_mount(mountinfo).unwrap();
        assert_eq!(mount, Path::new("/sys/fs/cgroup/unified"));
        assert_eq!(root, "/");
        let own = own_cgroup_dir("1:cpu:/\n0::/system.slice/p.service\n", &mount, &root);
        assert_eq!(
            own.unwrap(),
            Path::new("/sys/fs/cgroup/unified/system.slice/p.service")
        );
        assert_eq!(
            own_cgroup_dir("0::/\n", &mount, &root).unwrap(),
            Path::new("/sys/fs/cgroup/unified")
        );
        assert!(cgroup2_mount("25 30 0:23 / /x rw - cgroup cgroup rw\n").is_none());
    }

    #[test]
    fn a_mount_of_a_subtree_is_resolved_or_refused() {
        let mount = Path::new("/sys/fs/cgroup");
        assert_eq!(
            own_cgroup_dir("0::/a/b/c\n", mount, "/a/b").unwrap(),
            Path::new("/sys/fs/cgroup/c")
        );
        assert!(own_cgroup_dir("0::/a/bc\n", mount, "/a/b").is_none());
        assert!(own_cgroup_dir("1:cpu:/\n", mount, "/").is_none());
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/mnt/with\040space"), "/mnt/with space");
        assert_eq!(unescape(r"/a\b"), r"/a\b");
    }

    #[test]
    fn populated_is_read_from_events() {
        assert!(populated("populated 1\nfrozen 0\n"));
        assert!(!populated("populated 0\nfrozen 0\n"));
    }

    #[test]
    fn tracking_is_described_for_status() {
        let dir = PathBuf::from("/sys/fs/cgroup/praxisd-7");
        let limited = Tracking::Cgroup(CgroupBase {
            dir: dir.clone(),
            no_limits: None,
        });
        assert!(limited.limits_by_cgroup());
        assert_eq!(
            limited.to_string(),
            "cgroup /sys/fs/cgroup/praxisd-7, limits by pids.max and memory.max"
        );
        let unlimited = Tracking::Cgroup(CgroupBase {
            dir,
            no_limits: Some("no controllers".into()),
        });
        assert!(!unlimited.limits_by_cgroup());
        assert_eq!(
            unlimited.to_string(),
            "cgroup /sys/fs/cgroup/praxisd-7, limits by RLIMIT_NPROC and RLIMIT_AS (no controllers)"
        );
        let pg = Tracking::ProcessGroup("EACCES".into());
        assert!(!pg.limits_by_cgroup());
        assert_eq!(
            pg.to_string(),
            "process group only (EACCES), limits by RLIMIT_NPROC and RLIMIT_AS"
        );
    }
}
