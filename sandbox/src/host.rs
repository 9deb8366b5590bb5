//! What the host looks like from a request's point of view: its workspace, git
//! state and where its program names resolve. Read-only lookups, shared by the
//! daemon's preconditions stage and `praxis explain`.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The git root of `cwd` (the directory holding `.git`), if any.
pub fn git_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The workspace of a request: the git root of `cwd`, else `cwd` itself.
pub fn workspace_of(cwd: &Path) -> PathBuf {
    git_root(cwd).unwrap_or_else(|| cwd.to_path_buf())
}

/// The git directory of a work tree root: `.git` itself, or where a `.git` file
/// (worktrees, submodules) points.
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = fs::read_to_string(&dot_git).ok()?;
    let target = text.strip_prefix("gitdir:")?.trim();
    Some(root.join(target))
}

/// The checked-out branch of the work tree at `root`; None when detached or unknown.
pub fn git_branch(root: &Path) -> Option<String> {
    let head = fs::read_to_string(git_dir(root)?.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_owned)
}

/// The default branch as the `origin` remote names it, when recorded.
pub fn git_default_branch(root: &Path) -> Option<String> {
    let dir = git_dir(root)?;
    // A linked worktree keeps shared refs in the common dir.
    let common = fs::read_to_string(dir.join("commondir"))
        .map(|c| dir.join(c.trim()))
        .unwrap_or(dir);
    let head = fs::read_to_string(common.join("refs/remotes/origin/HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/remotes/origin/")
        .map(str::to_owned)
}

fn is_executable_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `program` resolves on `path_var` (a `PATH` value), as the shell would
/// find it: the first executable regular file. Relative `PATH` entries resolve
/// against `cwd`, as the kernel would for the child.
pub fn resolve_program(program: &str, path_var: &OsStr, cwd: &Path) -> Option<PathBuf> {
    std::env::split_paths(path_var)
        .map(|dir| {
            let dir = if dir.as_os_str().is_empty() {
                cwd.to_path_buf()
            } else {
                dir
            };
            let dir = if dir.is_relative() {
                cwd.join(dir)
            } else {
                dir
            };
            dir.join(program)
        })
        .find(|candidate| is_executable_file(candidate))
}

/// Whether `path` lies inside any of `roots`, comparing canonical forms so a
/// symlinked `PATH` entry cannot hide a planted binary.
pub fn is_inside_any(path: &Path, roots: &[PathBuf]) -> bool {
    let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    roots.iter().any(|root| {
        let root = fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        path.starts_with(root)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_is_git_root_or_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let sub = tmp.path().join("a/b");
        fs::create_dir_all(&sub).unwrap();
        assert_eq!(workspace_of(&sub), sub);
        fs::create_dir_all(tmp.path().join("a/.git")).unwrap();
        fs::write(
            tmp.path().join("a/.git/HEAD"),
            "ref: refs/heads/feature/x\n",
        )
        .unwrap();
        assert_eq!(workspace_of(&sub), tmp.path().join("a"));
        assert_eq!(
            git_branch(&tmp.path().join("a")).as_deref(),
            Some("feature/x")
        );
    }

    #[test]
    fn resolves_first_executable_and_spots_planted_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("ls"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(bin.join("ls"), fs::Permissions::from_mode(0o755)).unwrap();
        let path_var = std::env::join_paths([bin.clone(), PathBuf::from("/usr/bin")]).unwrap();
        let found = resolve_program("ls", &path_var, tmp.path()).unwrap();
        assert_eq!(found, bin.join("ls"));
        assert!(is_inside_any(&found, &[tmp.path().to_path_buf()]));
        assert!(resolve_program("no-such-program-praxis", &path_var, tmp.path()).is_none());
    }
}
