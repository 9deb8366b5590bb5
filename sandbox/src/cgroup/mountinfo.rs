//! Where the cgroup hierarchies are mounted and where this process sits in
//! them, from the text of `/proc/self/mountinfo` and `/proc/self/cgroup`
//! (never from fixed paths: hosts mount them in different places).

use std::path::{Path, PathBuf};

/// Which hierarchy is meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hierarchy<'a> {
    /// The unified (`cgroup2`) hierarchy.
    V2,
    /// The cgroup v1 hierarchy that carries this controller.
    V1(&'a str),
}

/// The mount point of `hierarchy` and the path of its root within the cgroup
/// namespace.
pub(crate) fn mount(mountinfo: &str, hierarchy: Hierarchy<'_>) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        // Optional fields end at " - "; the filesystem type, the source and
        // the super options follow.
        let (left, right) = line.split_once(" - ")?;
        let mut after = right.split_whitespace();
        let fs_type = after.next()?;
        let matches = match hierarchy {
            Hierarchy::V2 => fs_type == "cgroup2",
            Hierarchy::V1(controller) => {
                fs_type == "cgroup" && after.nth(1)?.split(',').any(|o| o == controller)
            }
        };
        if !matches {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = fields.nth(3)?;
        let mount_point = fields.next()?;
        Some((PathBuf::from(unescape(mount_point)), unescape(root)))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space and so on).
pub(crate) fn unescape_bytes(field: &str) -> Vec<u8> {
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
    out
}

/// [`unescape_bytes`] as text (names that are not UTF-8 come out lossy).
fn unescape(field: &str) -> String {
    String::from_utf8_lossy(&unescape_bytes(field)).into_owned()
}

/// The directory of our own cgroup in `hierarchy`: its line of
/// `/proc/self/cgroup` (`0::<path>` for v2, `<n>:<controllers>:<path>` for
/// v1), under the mount (whose root may be a subtree).
pub(crate) fn own_dir(
    proc_cgroup: &str,
    hierarchy: Hierarchy<'_>,
    mount: &Path,
    mount_root: &str,
) -> Option<PathBuf> {
    let path = proc_cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        let ours = match hierarchy {
            Hierarchy::V2 => id == "0" && controllers.is_empty(),
            Hierarchy::V1(controller) => {
                id != "0" && controllers.split(',').any(|c| c == controller)
            }
        };
        ours.then_some(path)
    })?;
    let rel = if mount_root == "/" {
        path
    } else {
        path.strip_prefix(mount_root)
            .filter(|r| r.is_empty() || r.starts_with('/'))?
    };
    Some(mount.join(rel.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw
";

    const PROC_CGROUP: &str = "\
9:name=systemd:/
8:pids:/user.slice
4:memory:/process_api/ab12
1:cpu,cpuacct:/
0::/system.slice/p.service
";

    #[test]
    fn finds_the_cgroup2_mount_and_our_dir() {
        let (mount, root) = super::mount(HYBRID, Hierarchy::V2).unwrap();
        assert_eq!(mount, Path::new("/sys/fs/cgroup/unified"));
        assert_eq!(root, "/");
        assert_eq!(
            own_dir(PROC_CGROUP, Hierarchy::V2, &mount, &root).unwrap(),
            Path::new("/sys/fs/cgroup/unified/system.slice/p.service")
        );
        assert_eq!(
            own_dir("0::/\n", Hierarchy::V2, &mount, &root).unwrap(),
            Path::new("/sys/fs/cgroup/unified")
        );
        assert!(super::mount("25 30 0:23 / /x rw - cgroup cgroup rw\n", Hierarchy::V2).is_none());
    }

    #[test]
    fn finds_each_v1_controller_by_its_super_options() {
        let (memory, root) = super::mount(HYBRID, Hierarchy::V1("memory")).unwrap();
        assert_eq!(memory, Path::new("/sys/fs/cgroup/memory"));
        assert_eq!(
            own_dir(PROC_CGROUP, Hierarchy::V1("memory"), &memory, &root).unwrap(),
            Path::new("/sys/fs/cgroup/memory/process_api/ab12")
        );
        let (pids, root) = super::mount(HYBRID, Hierarchy::V1("pids")).unwrap();
        assert_eq!(
            own_dir(PROC_CGROUP, Hierarchy::V1("pids"), &pids, &root).unwrap(),
            Path::new("/sys/fs/cgroup/pids/user.slice")
        );
        // A co-mounted controller is found in its list; a name is not one.
        let (cpu, _) = super::mount(HYBRID, Hierarchy::V1("cpuacct")).unwrap();
        assert_eq!(cpu, Path::new("/sys/fs/cgroup/cpu,cpuacct"));
        assert!(super::mount(HYBRID, Hierarchy::V1("systemd")).is_none());
        assert!(super::mount(HYBRID, Hierarchy::V1("hugetlb")).is_none());
        // The v2 line is never taken for a v1 controller, nor the reverse.
        assert!(own_dir("0::/x\n", Hierarchy::V1("pids"), &pids, "/").is_none());
        assert!(own_dir("8:pids:/x\n", Hierarchy::V2, &pids, "/").is_none());
    }

    #[test]
    fn a_mount_of_a_subtree_is_resolved_or_refused() {
        let mount = Path::new("/sys/fs/cgroup");
        assert_eq!(
            own_dir("0::/a/b/c\n", Hierarchy::V2, mount, "/a/b").unwrap(),
            Path::new("/sys/fs/cgroup/c")
        );
        assert!(own_dir("0::/a/bc\n", Hierarchy::V2, mount, "/a/b").is_none());
        assert!(own_dir("1:cpu:/\n", Hierarchy::V2, mount, "/").is_none());
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/mnt/with\040space"), "/mnt/with space");
        assert_eq!(unescape(r"/a\b"), r"/a\b");
    }
}
