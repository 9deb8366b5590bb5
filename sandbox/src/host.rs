//! What the host looks like from a request's point of view: its workspace, git
//! state and where its program names resolve. Read-only lookups, shared by the
//! daemon's preconditions stage and `praxis explain`.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
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

/// Whether `path` is a regular file someone may execute (symlinks followed).
pub fn is_executable_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `program` is looked for on `path_var` (a `PATH` value), in order.
/// Relative `PATH` entries resolve against `cwd`, as the kernel would for
/// the child.
pub fn program_candidates<'a>(
    program: &'a str,
    path_var: &'a OsStr,
    cwd: &'a Path,
) -> impl Iterator<Item = PathBuf> + 'a {
    std::env::split_paths(path_var).map(move |dir| {
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
}

/// Where `program` resolves on `path_var`, as the shell would find it: the
/// first executable regular file among its candidates.
pub fn resolve_program(program: &str, path_var: &OsStr, cwd: &Path) -> Option<PathBuf> {
    program_candidates(program, path_var, cwd).find(|candidate| is_executable_file(candidate))
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

/// Whether `path` is an entry point of the Python virtual environment it
/// sits in: `VENV/bin/NAME` beside a `VENV/pyvenv.cfg`, starting with a `#!`
/// line whose interpreter is in that same `VENV/bin` (compared by directory
/// identity, so a symlinked workspace still matches). That is how pip and
/// uv write console scripts; a script naming another interpreter is not one.
pub fn is_virtualenv_entry(path: &Path) -> bool {
    let Ok(path) = fs::canonicalize(path) else {
        return false;
    };
    let Some(bin) = path
        .parent()
        .filter(|b| b.file_name() == Some("bin".as_ref()))
    else {
        return false;
    };
    let Some(venv) = bin.parent() else {
        return false;
    };
    if !fs::metadata(venv.join("pyvenv.cfg")).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 512];
    let Ok(read) = fs::File::open(&path).and_then(|mut f| std::io::Read::read(&mut f, &mut head))
    else {
        return false;
    };
    let first_line = head[..read]
        .split(|b| *b == b'\n')
        .next()
        .unwrap_or_default();
    let Some(interpreter) = first_line
        .strip_prefix(b"#!")
        .and_then(|rest| std::str::from_utf8(rest).ok())
        .and_then(|rest| rest.split_whitespace().next())
    else {
        return false;
    };
    let same_dir = |a: &Path, b: &Path| match (fs::metadata(a), fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    };
    Path::new(interpreter)
        .parent()
        .is_some_and(|dir| same_dir(dir, bin))
}

/// The program a file named by its path inside a writable tree is, when it
/// is a project's own tool as its package manager installed it: an entry
/// point of a Python virtual environment (`.venv/bin/pip`, the same check as
/// for an activated one, [`is_virtualenv_entry`]), or a symlink in
/// `node_modules/.bin` or Composer's `vendor/bin` to a file of its own name
/// (extension aside) inside a package of that same tree
/// (`node_modules/.bin/jest` to `node_modules/jest/bin/jest.js`). The name
/// is the file's own; anything else is None.
pub fn own_tool(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?.to_owned();
    if is_virtualenv_entry(path) {
        return Some(name);
    }
    let bin = path.parent()?;
    let tree = bin.parent()?;
    let layout = (bin.file_name()?.to_str()?, tree.file_name()?.to_str()?);
    if !matches!(layout, (".bin", "node_modules") | ("bin", "vendor")) {
        return None;
    }
    if !fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return None;
    }
    let target = fs::canonicalize(path).ok()?;
    let packages = fs::canonicalize(tree).ok()?;
    let inside = target.strip_prefix(&packages).ok()?;
    // A package's file, not the bin directory itself.
    let in_package = inside.components().count() > 1
        && inside.components().next()?.as_os_str() != bin.file_name()?;
    let same_name = target.file_stem()?.to_str()? == name;
    (in_package && same_name && fs::metadata(&target).is_ok_and(|m| m.is_file())).then_some(name)
}

/// Where `path` leads through symbolic links (of any of its components),
/// when that is another file: None for a path that is its own file or does
/// not exist.
pub fn link_target(path: &Path) -> Option<PathBuf> {
    let target = fs::canonicalize(path).ok()?;
    (target != path).then_some(target)
}

/// [`link_target`] of each path, for those that lead elsewhere.
pub fn link_targets(paths: Vec<PathBuf>) -> std::collections::BTreeMap<PathBuf, PathBuf> {
    paths
        .into_iter()
        .filter_map(|p| link_target(&p).map(|target| (p, target)))
        .collect()
}

/// [`own_tool`] of each path, for those that are one.
pub fn own_tools(paths: Vec<PathBuf>) -> std::collections::BTreeMap<PathBuf, String> {
    paths
        .into_iter()
        .filter_map(|p| own_tool(&p).map(|name| (p, name)))
        .collect()
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

    #[test]
    fn virtualenv_entries_are_scripts_of_their_own_python() {
        let tmp = tempfile::tempdir().unwrap();
        let venv = tmp.path().join(".venv");
        let bin = venv.join("bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("python"), "").unwrap();
        let script = |name: &str, first_line: String| {
            let path = bin.join(name);
            fs::write(&path, format!("{first_line}\nimport sys\n")).unwrap();
            path
        };
        let entry = script("pytest", format!("#!{}/python", bin.display()));
        let foreign = script("git", "#!/bin/sh".to_owned());
        // A symlinked view of the same environment still matches.
        let via = tmp.path().join("via");
        std::os::unix::fs::symlink(&venv, &via).unwrap();
        let through_link = script("ruff", format!("#!{}/bin/python -E", via.display()));
        assert!(
            !is_virtualenv_entry(&entry),
            "no pyvenv.cfg: not an environment"
        );
        fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert!(is_virtualenv_entry(&entry));
        assert!(is_virtualenv_entry(&through_link));
        assert!(!is_virtualenv_entry(&foreign), "another interpreter");
        assert!(!is_virtualenv_entry(&bin.join("missing")));
        assert_eq!(own_tool(&entry).as_deref(), Some("pytest"));
        assert_eq!(own_tool(&foreign), None);
    }

    #[test]
    fn package_links_are_tools_of_their_own_name() {
        let tmp = tempfile::tempdir().unwrap();
        let modules = tmp.path().join("node_modules");
        let dot_bin = modules.join(".bin");
        fs::create_dir_all(modules.join("jest/bin")).unwrap();
        fs::create_dir_all(&dot_bin).unwrap();
        fs::write(modules.join("jest/bin/jest.js"), "").unwrap();
        let link = |name: &str, target: &str| {
            let path = dot_bin.join(name);
            std::os::unix::fs::symlink(target, &path).unwrap();
            path
        };
        let jest = link("jest", "../jest/bin/jest.js");
        let renamed = link("curl", "../jest/bin/jest.js");
        let outside = link("ls", "/bin/ls");
        fs::write(dot_bin.join("plain"), "#!/bin/sh\n").unwrap();
        assert_eq!(own_tool(&jest).as_deref(), Some("jest"));
        assert_eq!(own_tool(&renamed), None, "a link names its package's file");
        assert_eq!(own_tool(&outside), None, "a link out of node_modules");
        assert_eq!(own_tool(&dot_bin.join("plain")), None, "not a link");
        assert_eq!(own_tool(&tmp.path().join("jest")), None);
    }
}
