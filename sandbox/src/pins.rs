//! Protected paths kept unwritable with bind mounts, in a private mount
//! namespace of the child, and secrets inside writable trees covered.
//!
//! Landlock alone cannot keep `.git/hooks` unwritable while leaving the
//! workspace root writable: any write right on an ancestor covers the whole
//! subtree. A read-only bind mount of the protected path on itself makes the
//! kernel refuse every write beneath it (EROFS), and a mount point cannot be
//! renamed, unlinked or replaced (EBUSY), so each existing ancestor between
//! the writable root and the protected path is also bind-mounted on itself
//! ("pinned") to stop the tree being swapped out from above. With
//! CAP_SYS_ADMIN the child mounts in a new mount namespace; an unprivileged
//! daemon uses a user namespace mapping only its own ids (where the host
//! allows unprivileged user namespaces); failing both, the Landlock carve
//! keeps protected paths' ancestors read-only instead.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Why the pin plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// A protected path, or one of its ancestors inside a writable tree, is a
    /// symlink: the link itself could be replaced, and nothing can pin it.
    #[error("protected path goes through a symlink inside a writable tree: {0}")]
    Symlink(PathBuf),
    /// A path could not be inspected.
    #[error("cannot inspect {path}: {source}")]
    Stat {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A path holds a NUL byte.
    #[error("path holds a NUL byte: {0}")]
    Nul(PathBuf),
}

/// One bind mount of a path on itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pin {
    pub(crate) path: CString,
    pub(crate) read_only: bool,
}

/// The id maps an unprivileged child writes after `unshare(CLONE_NEWUSER)`:
/// its own uid and gid mapped onto themselves, setgroups denied.
#[derive(Debug)]
pub(crate) struct UserNsMaps {
    pub(crate) uid_map: CString,
    pub(crate) gid_map: CString,
}

impl UserNsMaps {
    /// Maps for the calling process's ids.
    pub(crate) fn current() -> UserNsMaps {
        // SAFETY: geteuid/getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let line = |id: u32| CString::new(format!("{id} {id} 1\n")).unwrap_or_default();
        UserNsMaps {
            uid_map: line(uid),
            gid_map: line(gid),
        }
    }
}

/// Whether this process may create a user namespace (probed once in a
/// forked child: a multi-threaded process cannot unshare one itself).
pub(crate) fn user_namespaces_work() -> bool {
    static WORKS: OnceLock<Result<(), i32>> = OnceLock::new();
    WORKS
        .get_or_init(|| unshare_in_child(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))
        .is_ok()
}

/// Whether this process may create a network namespace, inside a user
/// namespace of its own when `in_userns`; the errno of the refusal if not
/// (probed once per kind).
pub(crate) fn net_namespaces_work(in_userns: bool) -> Result<(), i32> {
    static DIRECT: OnceLock<Result<(), i32>> = OnceLock::new();
    static NESTED: OnceLock<Result<(), i32>> = OnceLock::new();
    if in_userns {
        *NESTED.get_or_init(|| unshare_in_child(libc::CLONE_NEWUSER | libc::CLONE_NEWNET))
    } else {
        *DIRECT.get_or_init(|| unshare_in_child(libc::CLONE_NEWNET))
    }
}

/// Tries `unshare(flags)` in a forked child; the errno it failed with.
fn unshare_in_child(flags: libc::c_int) -> Result<(), i32> {
    // SAFETY: the child makes async-signal-safe calls only and exits.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let code = if libc::unshare(flags) == 0 {
                0
            } else {
                *libc::__errno_location()
            };
            libc::_exit(code);
        }
        if pid < 0 {
            return Err(*libc::__errno_location());
        }
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                return Err(*libc::__errno_location());
            }
        }
        match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
            (true, 0) => Ok(()),
            (true, errno) => Err(errno),
            (false, _) => Err(libc::ECHILD),
        }
    }
}

/// A path covered by an empty, read-only mount: `/dev/null` over a file or
/// socket, an empty read-only tmpfs over a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mask {
    pub(crate) path: CString,
    pub(crate) empty_dir: bool,
}

/// What the child mounts, and what could not be guarded.
#[derive(Debug, Default)]
pub(crate) struct PinPlan {
    /// Ancestors first.
    pub(crate) pins: Vec<Pin>,
    /// Secrets inside writable trees, covered.
    pub(crate) masks: Vec<Mask>,
    /// Protected paths that do not exist directly under a writable root.
    pub(crate) unguarded: Vec<PathBuf>,
}

impl PinPlan {
    /// Whether the child needs a mount namespace at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.pins.is_empty() && self.masks.is_empty()
    }
}

fn c_path(path: &Path) -> Result<CString, PinError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| PinError::Nul(path.to_path_buf()))
}

/// Whether `path` exists; a symlink is an error.
fn exists_plain(path: &Path) -> Result<bool, PinError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(PinError::Symlink(path.to_path_buf())),
        Ok(_) => Ok(true),
        // Below a file (a worktree's `.git` file, say) nothing can exist.
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            Ok(false)
        }
        Err(source) => Err(PinError::Stat {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Plans the mounts for `protected` paths inside `writable_roots`, and the
/// masks for the existing `secrets` inside writable roots (elsewhere the Landlock carve keeps them
/// unreadable). Protected paths outside every writable root need nothing:
/// Landlock already refuses writes there.
pub(crate) fn plan(
    writable_roots: &[PathBuf],
    protected: &[PathBuf],
    secrets: &[PathBuf],
) -> Result<PinPlan, PinError> {
    let mut mounts: BTreeMap<PathBuf, bool> = BTreeMap::new();
    let mut unguarded = Vec::new();
    for target in protected {
        let Some(root) = writable_roots
            .iter()
            .filter(|r| target.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
        else {
            continue;
        };
        let mut deepest = root.clone();
        let mut missing = false;
        let mut ancestors = Vec::new();
        for component in target
            .strip_prefix(root)
            .unwrap_or(Path::new(""))
            .components()
        {
            let next = deepest.join(component);
            if !exists_plain(&next)? {
                missing = true;
                break;
            }
            ancestors.push(next.clone());
            deepest = next;
        }
        if missing && deepest == *root {
            unguarded.push(target.clone());
            continue;
        }
        // The deepest existing path is read-only: the target itself, or the
        // ancestor in which it could otherwise be created.
        let read_only = ancestors.pop().unwrap_or_else(|| root.clone());
        for ancestor in ancestors {
            mounts.entry(ancestor).or_insert(false);
        }
        mounts.insert(read_only, true);
    }
    // A bind inside a read-only pin would come up writable: drop those.
    let read_only: Vec<PathBuf> = mounts
        .iter()
        .filter(|(_, ro)| **ro)
        .map(|(p, _)| p.clone())
        .collect();
    mounts.retain(|path, _| {
        !read_only
            .iter()
            .any(|ro| path != ro && path.starts_with(ro))
    });
    let pins = mounts
        .into_iter()
        .map(|(path, read_only)| {
            Ok(Pin {
                path: c_path(&path)?,
                read_only,
            })
        })
        .collect::<Result<_, PinError>>()?;
    let mut masks = Vec::new();
    for secret in secrets
        .iter()
        .filter(|s| writable_roots.iter().any(|r| s.starts_with(r)))
    {
        if let Ok(meta) = std::fs::metadata(secret) {
            masks.push(Mask {
                path: c_path(secret)?,
                empty_dir: meta.is_dir(),
            });
        }
    }
    Ok(PinPlan {
        pins,
        masks,
        unguarded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn pin(path: &Path, read_only: bool) -> Pin {
        Pin {
            path: c_path(path).unwrap(),
            read_only,
        }
    }

    #[test]
    fn existing_paths_are_pinned_with_their_ancestors() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        fs::write(ws.join(".git/config"), "").unwrap();
        let protected = [
            ws.join(".git/hooks"),
            ws.join(".git/config"),
            tmp.path().join("elsewhere/.bashrc"),
        ];
        let plan = plan(std::slice::from_ref(&ws), &protected, &[]).unwrap();
        assert_eq!(
            plan.pins,
            [
                pin(&ws.join(".git"), false),
                pin(&ws.join(".git/config"), true),
                pin(&ws.join(".git/hooks"), true)
            ]
        );
        assert!(plan.unguarded.is_empty());
    }

    #[test]
    fn missing_paths_make_their_existing_parent_read_only_or_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().to_path_buf();
        fs::create_dir_all(ws.join(".git/objects")).unwrap();
        let protected = [
            ws.join(".git/hooks"),
            ws.join(".mcp.json"),
            ws.join(".git/objects/x/y"),
        ];
        let plan = plan(std::slice::from_ref(&ws), &protected, &[]).unwrap();
        assert_eq!(
            plan.pins,
            [pin(&ws.join(".git"), true)],
            "pins under a read-only pin are dropped"
        );
        assert_eq!(plan.unguarded, [ws.join(".mcp.json")]);
    }

    #[test]
    fn git_file_of_a_worktree_is_pinned_read_only() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().to_path_buf();
        fs::write(ws.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let protected = [ws.join(".git/hooks"), ws.join(".git/config")];
        let plan = plan(std::slice::from_ref(&ws), &protected, &[]).unwrap();
        assert_eq!(plan.pins, [pin(&ws.join(".git"), true)]);
    }

    #[test]
    fn symlinked_protected_path_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().to_path_buf();
        fs::create_dir_all(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink("/tmp", ws.join(".git/hooks")).unwrap();
        let err = plan(std::slice::from_ref(&ws), &[ws.join(".git/hooks")], &[]).unwrap_err();
        assert!(matches!(err, PinError::Symlink(_)), "{err}");
    }
}
