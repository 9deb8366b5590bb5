//! Other paths to the same files: mounts that show a tree somewhere else.
//!
//! Landlock rules follow inodes. A read tree that holds a bind mount of the
//! home (or of a secret) would open the files behind it, whatever their
//! names: the carve looked only at the path the list names. So the carve
//! takes every alias of an excluded path out of the read trees as it takes
//! the path itself, and a carve is redone when the mount table changes.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Where the mount table of the daemon's namespace is read.
pub(crate) const MOUNTINFO: &str = "/proc/self/mountinfo";

/// How many times the mount table is known to have changed. The kernel
/// marks an open `mountinfo` with a priority event on every mount or
/// unmount in its namespace, and each poll that reports it clears it; so a
/// poll with no wait tells a change without reading the table. Where the
/// file cannot be opened, every call counts as a change.
pub(crate) fn generation() -> u64 {
    static WATCH: Mutex<Option<File>> = Mutex::new(None);
    static CHANGES: AtomicU64 = AtomicU64::new(0);
    let mut watch = WATCH.lock().unwrap_or_else(PoisonError::into_inner);
    if watch.is_none() {
        *watch = File::open(MOUNTINFO).ok();
    }
    let changed = watch.as_ref().is_none_or(|file| {
        let mut poll = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        // SAFETY: one pollfd on a live local, no wait.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        ready != 0 && (ready < 0 || poll.revents & (libc::POLLPRI | libc::POLLERR) != 0)
    });
    if changed {
        CHANGES.fetch_add(1, Ordering::Relaxed) + 1
    } else {
        CHANGES.load(Ordering::Relaxed)
    }
}

/// One line of `mountinfo`: which filesystem, which of its directories, and
/// where that directory shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// `major:minor` of the filesystem.
    dev: String,
    /// The directory of the filesystem that is the mount's root.
    root: PathBuf,
    /// Where it is mounted.
    point: PathBuf,
}

/// `mountinfo` text to its mounts, in order; malformed lines are skipped.
pub(crate) fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ').skip(2);
            let dev = fields.next()?;
            let root = fields.next()?;
            let point = fields.next()?;
            Some(Mount {
                dev: dev.to_owned(),
                root: unescape(root),
                point: unescape(point),
            })
        })
        .collect()
}

/// A mountinfo field as a path, its octal escapes undone.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(
        crate::cgroup::mountinfo::unescape_bytes(field),
    ))
}

/// `base` joined with `rest`, without a trailing `/` for an empty `rest`.
fn under(base: &Path, rest: &Path) -> PathBuf {
    if rest.as_os_str().is_empty() {
        base.to_path_buf()
    } else {
        base.join(rest)
    }
}

/// Every other path that shows `path` or a part of it: where another mount
/// of the same filesystem holds the directory `path` lies in (the alias of
/// `path` itself), or a directory inside `path` (that mount's point, whole).
/// `path` is absolute and resolved.
pub(crate) fn aliases(mounts: &[Mount], path: &Path) -> Vec<PathBuf> {
    // The mount `path` is reached through: the longest point above it, the
    // latest of equal ones (a later mount hides an earlier one).
    let Some((at, holder)) = mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| path.starts_with(&m.point))
        .max_by_key(|(i, m)| (m.point.components().count(), *i))
    else {
        return Vec::new();
    };
    let Ok(rest) = path.strip_prefix(&holder.point) else {
        return Vec::new();
    };
    let within = under(&holder.root, rest);
    let mut found: Vec<PathBuf> = mounts
        .iter()
        .enumerate()
        .filter(|(i, m)| *i != at && m.dev == holder.dev)
        .filter_map(|(_, m)| match within.strip_prefix(&m.root) {
            Ok(rest) => Some(under(&m.point, rest)),
            Err(_) => m.root.starts_with(&within).then(|| m.point.clone()),
        })
        .filter(|alias| alias != path)
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
22 27 0:21 / /proc rw,relatime - proc proc rw
50 27 254:0 /home/dev /srv/mirror rw,relatime - ext4 /dev/vda rw
51 27 254:0 /home/dev/.ssh /opt/keys rw,relatime - ext4 /dev/vda rw
52 27 254:0 /home /mnt/all\\040homes rw,relatime - ext4 /dev/vda rw
53 27 0:40 / /home/dev/.cache rw,relatime - tmpfs tmpfs rw
";

    #[test]
    fn a_tree_shows_wherever_its_filesystem_is_mounted_again() {
        let mounts = parse(TABLE);
        assert_eq!(mounts.len(), 6);
        assert_eq!(
            aliases(&mounts, Path::new("/home/dev/.ssh")),
            vec![
                PathBuf::from("/mnt/all homes/dev/.ssh"),
                PathBuf::from("/opt/keys"),
                PathBuf::from("/srv/mirror/.ssh"),
            ]
        );
        // A mount of a part of the tree shows that part, whole.
        assert_eq!(
            aliases(&mounts, Path::new("/home/dev")),
            vec![
                PathBuf::from("/mnt/all homes/dev"),
                PathBuf::from("/opt/keys"),
                PathBuf::from("/srv/mirror"),
            ]
        );
        // Another filesystem mounted inside it is not an alias of it.
        assert!(aliases(&mounts, Path::new("/home/dev/.cache/x")).is_empty());
        assert!(aliases(&mounts, Path::new("/proc/self")).is_empty());
        assert!(aliases(&[], Path::new("/home")).is_empty());
    }

    #[test]
    fn the_generation_moves_only_when_the_table_does() {
        let first = generation();
        assert_eq!(generation(), first, "no mount was made in between");
    }

    #[test]
    fn escapes_and_malformed_lines() {
        assert_eq!(unescape("a\\040b\\134c"), PathBuf::from("a b\\c"));
        assert_eq!(unescape("tail\\04"), PathBuf::from("tail\\04"));
        assert!(parse("garbage\n1 2\n").is_empty());
    }
}
