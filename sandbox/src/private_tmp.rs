//! A private `/tmp` and `/var/tmp`: two directories of the daemon's choice
//! (one pair per session) mounted over the host's in the command's mount
//! namespace. The host's shared `/tmp` is out of sight; what the command
//! leaves in its own stays for the next command of the session.
//!
//! A tree the command must still reach that lies under the host's `/tmp`
//! (a workspace there, a read tree, a grant) is shown again at its own path:
//! its mount point is made inside the private directory, and the child
//! opens the tree before covering `/tmp` and binds it back after.

use std::ffi::{CStr, CString, OsStr};
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::SandboxError;

/// Trees shown again at most (the child holds their descriptors on its
/// stack while it covers `/tmp`).
pub(crate) const MAX_SHOWN: usize = 32;

/// The host directories a private pair covers.
const COVERED: [&str; 2] = ["/tmp", "/var/tmp"];

/// A command's private `/tmp` and `/var/tmp`, as the daemon made them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateTmp {
    /// Mounted at `/tmp`.
    pub tmp: PathBuf,
    /// Mounted at `/var/tmp`.
    pub var_tmp: PathBuf,
}

/// What the child mounts for a private `/tmp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TmpPlan {
    /// Each private directory and the host directory it covers.
    pub(crate) covers: Vec<(CString, CString)>,
    /// Trees under a covered directory shown again at their own path,
    /// outermost first; none inside another.
    pub(crate) shown: Vec<CString>,
    /// Where each of `shown` is mounted on, as made in the private
    /// directory on the host, in the same order.
    pub(crate) mount_points: Vec<PathBuf>,
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Invalid(format!("NUL byte in {}", path.display())))
}

/// Plans the mounts of `private`, showing again each of `keep` that lies
/// under a covered directory (its mount point made now, inside the private
/// directory, owned by `owner`).
pub(crate) fn plan(
    private: &PrivateTmp,
    keep: &[PathBuf],
    owner: Option<(u32, u32)>,
) -> Result<TmpPlan, SandboxError> {
    let pairs = [(&private.tmp, COVERED[0]), (&private.var_tmp, COVERED[1])];
    let mut covers = Vec::new();
    for (dir, covered) in pairs {
        let meta = fs::symlink_metadata(dir)
            .map_err(|e| SandboxError::os("opening the private /tmp", e))?;
        if !meta.is_dir() {
            return Err(SandboxError::Invalid(format!(
                "private {covered} {} is not a directory",
                dir.display()
            )));
        }
        covers.push((c_path(dir)?, c_path(Path::new(covered))?));
    }
    let mut kept: Vec<&PathBuf> = keep
        .iter()
        .filter(|p| {
            COVERED
                .iter()
                .any(|c| p.starts_with(c) && p.as_path() != Path::new(c))
        })
        .collect();
    kept.sort();
    kept.dedup();
    let mut shown: Vec<&PathBuf> = Vec::new();
    let mut mount_points = Vec::new();
    for path in kept {
        if shown.iter().any(|outer| path.starts_with(outer)) {
            continue;
        }
        // Only what exists and is no symlink: a link would be followed.
        let Ok(meta) = fs::symlink_metadata(path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        let (dir, covered) = pairs
            .iter()
            .find(|(_, c)| path.starts_with(c))
            .map(|(d, c)| (*d, *c))
            .unwrap_or((&private.tmp, COVERED[0]));
        let inside = path.strip_prefix(covered).unwrap_or(path);
        let made = mount_point(dir, inside, meta.is_dir(), owner)
            .map_err(|e| SandboxError::os("making a mount point in the private /tmp", e))?;
        shown.push(path);
        mount_points.push(made);
    }
    if shown.len() > MAX_SHOWN {
        return Err(SandboxError::Invalid(format!(
            "more than {MAX_SHOWN} trees under /tmp to show in the private /tmp"
        )));
    }
    Ok(TmpPlan {
        covers,
        shown: shown
            .into_iter()
            .map(|p| c_path(p))
            .collect::<Result<_, _>>()?,
        mount_points,
    })
}

/// A plan's mounts as a launcher made ahead mounts them while it waits, in
/// its copy of the host's mounts: the plan, and every inode those mounts
/// rest on held open here (the daemon's namespace, where a plan's paths
/// are looked up) with the path that named it: the sources (each of which
/// the launcher, opening it in its copy, checks is the one held) and the
/// mount points of the trees shown again. Held, none of them is freed and
/// its number given to another, so a path that still names the same inode
/// names the very one that was mounted.
#[derive(Debug)]
pub(crate) struct TmpAhead {
    plan: TmpPlan,
    /// The sources' descriptors, in the plan's order (views of `held`).
    sources: Vec<RawFd>,
    held: Vec<(OwnedFd, PathBuf)>,
}

impl TmpAhead {
    /// Opens what `plan` mounts and rests on.
    pub(crate) fn open(plan: &TmpPlan) -> io::Result<TmpAhead> {
        let path = |c: &CStr| PathBuf::from(OsStr::from_bytes(c.to_bytes()));
        let sources: Vec<PathBuf> = plan
            .covers
            .iter()
            .map(|(source, _)| path(source))
            .chain(plan.shown.iter().map(|shown| path(shown)))
            .collect();
        let count = sources.len();
        let held = sources
            .into_iter()
            .chain(plan.mount_points.iter().cloned())
            .map(|path| {
                let file = File::options()
                    .read(true)
                    .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
                    .open(&path)?;
                Ok((OwnedFd::from(file), path))
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(TmpAhead {
            sources: held[..count].iter().map(|(fd, _)| fd.as_raw_fd()).collect(),
            plan: plan.clone(),
            held,
        })
    }

    /// The plan it holds the inodes of.
    pub(crate) fn plan(&self) -> &TmpPlan {
        &self.plan
    }

    /// The descriptors of the plan's sources, in its order, each to be
    /// the one bound.
    pub(crate) fn sources(&self) -> &[RawFd] {
        &self.sources
    }

    /// Whether its mounts are what `plan` would mount now: the same plan,
    /// and each path still naming the inode held (not removed, replaced or
    /// swapped for a link since).
    pub(crate) fn serves(&self, plan: &TmpPlan) -> bool {
        self.plan == *plan && self.held.iter().all(|(fd, path)| names(path, fd))
    }
}

/// Whether `path` (its last component not followed) names the inode `fd`
/// holds.
fn names(path: &Path, fd: &OwnedFd) -> bool {
    match (nix::sys::stat::fstat(fd), fs::symlink_metadata(path)) {
        (Ok(held), Ok(now)) => held.st_dev == now.dev() && held.st_ino == now.ino(),
        _ => false,
    }
}

/// Makes `dir/inside` (and the directories above it) to mount on: a
/// directory or an empty file. Returns its path.
fn mount_point(
    dir: &Path,
    inside: &Path,
    is_dir: bool,
    owner: Option<(u32, u32)>,
) -> io::Result<PathBuf> {
    let target = dir.join(inside);
    let parent = if is_dir {
        target.as_path()
    } else {
        target.parent().unwrap_or(dir)
    };
    let mut made = Vec::new();
    for ancestor in parent.ancestors().take_while(|a| *a != dir) {
        if fs::symlink_metadata(ancestor).is_err() {
            made.push(ancestor.to_path_buf());
        }
    }
    fs::create_dir_all(parent)?;
    if !is_dir && fs::symlink_metadata(&target).is_err() {
        fs::File::create(&target)?;
        made.push(target.clone());
    }
    if let Some((uid, gid)) = owner {
        for path in made {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))?;
        }
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_under_tmp_get_mount_points_outer_ones_only() {
        let root = tempfile::tempdir().unwrap();
        let private = PrivateTmp {
            tmp: root.path().join("tmp"),
            var_tmp: root.path().join("var-tmp"),
        };
        fs::create_dir_all(&private.tmp).unwrap();
        fs::create_dir_all(&private.var_tmp).unwrap();
        // A workspace and a file under the host's /tmp, one inside the other
        // and one outside both.
        let host = tempfile::Builder::new()
            .prefix("praxis-private-tmp-")
            .tempdir_in("/tmp")
            .unwrap();
        let work = host.path().join("work");
        fs::create_dir_all(work.join("src")).unwrap();
        let bundle = host.path().join("bundle.pem");
        fs::write(&bundle, "pem").unwrap();
        let planned = plan(
            &private,
            &[
                work.clone(),
                work.join("src"),
                bundle.clone(),
                PathBuf::from("/usr"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(planned.covers.len(), 2);
        assert_eq!(
            planned.shown,
            vec![c_path(&bundle).unwrap(), c_path(&work).unwrap()]
        );
        let inside = host.path().strip_prefix("/tmp").unwrap();
        assert!(private.tmp.join(inside).join("work").is_dir());
        assert!(private.tmp.join(inside).join("bundle.pem").is_file());
        assert_eq!(
            planned.mount_points,
            vec![
                private.tmp.join(inside).join("bundle.pem"),
                private.tmp.join(inside).join("work")
            ]
        );
    }
}
