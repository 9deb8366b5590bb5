//! Each session's private `/tmp` and `/var/tmp`: a directory of its own
//! under [`Layout::private_tmp_root`], holding `tmp` and `var-tmp`, which
//! the sandbox mounts at `/tmp` and `/var/tmp` in every command of that
//! session. What one command leaves there the next one finds; the host's
//! shared `/tmp` is not visible. A command run without a session gets the
//! private `/tmp` of its workspace.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use praxis_proto::paths::Layout;
use sha2::{Digest, Sha256};

/// The directory holding the private `/tmp` (`tmp`) and `/var/tmp`
/// (`var-tmp`) for `session`, else for `workspace`.
pub fn dir_for(layout: &Layout, session: Option<&str>, workspace: &Path) -> PathBuf {
    let (kind, key) = match session.filter(|s| !s.is_empty()) {
        Some(session) => ("session", session.as_bytes().to_vec()),
        None => (
            "workspace",
            workspace.as_os_str().as_encoded_bytes().to_vec(),
        ),
    };
    let digest = hex::encode(Sha256::digest(&key));
    layout
        .private_tmp_root()
        .join(format!("{kind}-{}", &digest[..24]))
}

/// The two directories a command mounts: `(tmp, var-tmp)` under `dir`.
pub fn mounts_of(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("tmp"), dir.join("var-tmp"))
}

/// Where `path`, as a command sees it, lies on the host: a path in `/tmp`
/// or `/var/tmp` lies in the private ones under `dir`. None for any other
/// path (`path` is normalized: no `..`).
pub fn host_path(dir: &Path, path: &Path) -> Option<PathBuf> {
    let (tmp, var_tmp) = mounts_of(dir);
    [("/tmp", tmp), ("/var/tmp", var_tmp)]
        .into_iter()
        .find_map(|(seen, on_host)| {
            let rest = path.strip_prefix(seen).ok()?;
            Some(if rest.as_os_str().is_empty() {
                on_host
            } else {
                on_host.join(rest)
            })
        })
}

/// Makes `dir` and its two directories if missing: mode 0700, owned by
/// `owner` (uid, gid) when the daemon serves another user. Touches `dir`
/// so its retention counts from its last use.
pub fn make(dir: &Path, owner: Option<(u32, u32)>) -> io::Result<(PathBuf, PathBuf)> {
    let (tmp, var_tmp) = mounts_of(dir);
    // Made already, as this leaves it: four system calls, not a dozen.
    if in_place(dir, &tmp, &var_tmp) {
        touch(dir)?;
        return Ok((tmp, var_tmp));
    }
    let root = dir.parent().unwrap_or(dir);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(root)?;
    for made in [dir, tmp.as_path(), var_tmp.as_path()] {
        match fs::DirBuilder::new().mode(0o700).create(made) {
            Ok(()) => {
                if let Some((uid, gid)) = owner {
                    std::os::unix::fs::chown(made, Some(uid), Some(gid))?;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let meta = fs::symlink_metadata(made)?;
                if !meta.is_dir() {
                    return Err(io::Error::other(format!(
                        "{} is not a directory",
                        made.display()
                    )));
                }
            }
            Err(e) => return Err(e),
        }
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    touch(dir)?;
    Ok((tmp, var_tmp))
}

/// Whether `dir` is a directory of mode 0700 and `tmp` and `var_tmp`
/// directories (none of them a link): what [`make`] leaves.
fn in_place(dir: &Path, tmp: &Path, var_tmp: &Path) -> bool {
    fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o7777 == 0o700)
        && [tmp, var_tmp]
            .iter()
            .all(|d| fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()))
}

/// Sets `dir`'s mtime to now: it is when the dir was last used, and
/// retention counts from there.
fn touch(dir: &Path) -> io::Result<()> {
    let now = nix::sys::time::TimeSpec::UTIME_NOW;
    let unchanged = nix::sys::time::TimeSpec::UTIME_OMIT;
    nix::sys::stat::utimensat(
        nix::fcntl::AT_FDCWD,
        dir,
        &unchanged,
        &now,
        nix::sys::stat::UtimensatFlags::NoFollowSymlink,
    )
    .map_err(io::Error::from)
}

/// Bytes held by the files under `dir` (symlinks not followed; 0 when
/// absent). Unreadable entries count as empty.
pub fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => size_of(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Whether `name` is one [`dir_for`] gives.
fn is_private_tmp_name(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| n.starts_with("session-") || n.starts_with("workspace-"))
}

/// The names of the private tmp dirs (`session-…`) that the processes
/// `pids` have mounted: a command running in one uses it.
pub fn mounted_by(pids: &[i32]) -> BTreeSet<OsString> {
    pids.iter()
        .filter_map(|pid| fs::read_to_string(format!("/proc/{pid}/mountinfo")).ok())
        .flat_map(|mountinfo| mounted_in(&mountinfo))
        .collect()
}

/// The private tmp dir names whose `tmp` or `var-tmp` a `mountinfo` text
/// mounts (its fourth field is a mount's root inside its filesystem).
fn mounted_in(mountinfo: &str) -> Vec<OsString> {
    mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(3).map(Path::new))
        .filter(|root| {
            root.file_name()
                .is_some_and(|name| name == "tmp" || name == "var-tmp")
        })
        .filter_map(|root| root.parent()?.file_name().map(OsString::from))
        .filter(|name| is_private_tmp_name(name))
        .collect()
}

/// Removes the private tmp dirs under `root` last used (their mtime, which
/// [`make`] sets) more than `retention` before `now`, except those named in
/// `in_use`. Returns how many went.
pub fn sweep(
    root: &Path,
    retention: Duration,
    now: SystemTime,
    in_use: &BTreeSet<OsString>,
) -> io::Result<usize> {
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = is_private_tmp_name(&name);
        let Ok(meta) = entry.metadata() else { continue };
        let unused_for = meta
            .modified()
            .ok()
            .and_then(|at| now.duration_since(at).ok())
            .unwrap_or_default();
        if !ours || !meta.is_dir() || unused_for <= retention || in_use.contains(&name) {
            continue;
        }
        match fs::remove_dir_all(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!("cannot remove {}: {e}", entry.path().display()),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_or_else_a_workspace_has_its_own() {
        let layout = Layout::for_mode(praxis_proto::Mode::User);
        let a = dir_for(&layout, Some("s1"), Path::new("/w"));
        let b = dir_for(&layout, Some("s2"), Path::new("/w"));
        let c = dir_for(&layout, None, Path::new("/w"));
        let d = dir_for(&layout, Some(""), Path::new("/w"));
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(c, d);
        assert!(a.starts_with(layout.private_tmp_root()));
    }

    #[test]
    fn tmp_paths_lie_in_the_private_dirs() {
        let dir = Path::new("/state/tmp/session-x");
        let on_host = |p: &str| host_path(dir, Path::new(p));
        assert_eq!(on_host("/tmp/a.out"), Some(dir.join("tmp/a.out")));
        assert_eq!(on_host("/tmp"), Some(dir.join("tmp")));
        assert_eq!(on_host("/var/tmp/x/y"), Some(dir.join("var-tmp/x/y")));
        assert_eq!(on_host("/tmpx/a"), None);
        assert_eq!(on_host("/var/tmpfs"), None);
        assert_eq!(on_host("/home/dev/a.out"), None);
    }

    #[test]
    fn a_dir_unused_past_its_retention_goes_and_a_fresh_or_mounted_one_stays() {
        let root = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        let now = SystemTime::now();
        let made = |name: &str, last_used: SystemTime| {
            let dir = root.path().join(name);
            let (tmp, _) = make(&dir, None).unwrap();
            fs::write(tmp.join("left"), "x").unwrap();
            fs::File::open(&dir)
                .unwrap()
                .set_modified(last_used)
                .unwrap();
            dir
        };
        let old = made("session-old", now - 8 * day);
        let fresh = made("session-fresh", now - 6 * day);
        let running = made("workspace-running", now - 30 * day);
        let foreign = root.path().join("not-ours");
        fs::create_dir(&foreign).unwrap();
        fs::File::open(&foreign)
            .unwrap()
            .set_modified(now - 30 * day)
            .unwrap();
        let in_use = BTreeSet::from([OsString::from("workspace-running")]);
        assert_eq!(sweep(root.path(), 7 * day, now, &in_use).unwrap(), 1);
        assert!(!old.exists());
        assert!(fresh.join("tmp/left").exists() && running.exists() && foreign.exists());
        // Without the command, the old dir it ran in goes too.
        assert_eq!(
            sweep(root.path(), 7 * day, now, &BTreeSet::new()).unwrap(),
            1
        );
        assert!(!running.exists() && fresh.exists());
        assert_eq!(
            sweep(&root.path().join("absent"), day, now, &in_use).unwrap(),
            0
        );
    }

    #[test]
    fn the_dirs_a_command_mounted_are_in_use() {
        let mountinfo = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 8:1 /var/lib/praxis-tmp/session-ab12/tmp /tmp rw - ext4 /dev/sda1 rw
41 22 8:1 /var/lib/praxis-tmp/session-ab12/var-tmp /var/tmp rw - ext4 /dev/sda1 rw
42 22 8:2 /workspace-cd34/tmp /tmp rw - ext4 /dev/sdb1 rw
43 22 0:5 /tmp /mnt/tmp rw - tmpfs tmpfs rw";
        assert_eq!(
            mounted_in(mountinfo),
            ["session-ab12", "session-ab12", "workspace-cd34"].map(OsString::from)
        );
        assert!(mounted_by(&[i32::MAX]).is_empty());
    }

    #[test]
    fn made_once_and_again() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("praxis-tmp/session-x");
        assert_eq!(size_of(&dir), 0);
        let (tmp, var_tmp) = make(&dir, None).unwrap();
        fs::write(tmp.join("kept"), "1").unwrap();
        fs::create_dir(var_tmp.join("sub")).unwrap();
        fs::write(var_tmp.join("sub/more"), "234").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tmp.join("link")).unwrap();
        let link = fs::symlink_metadata(tmp.join("link")).unwrap().len();
        assert_eq!(size_of(&dir), 4 + link);
        assert_eq!(make(&dir, None).unwrap(), (tmp.clone(), var_tmp.clone()));
        assert!(tmp.join("kept").exists() && var_tmp.is_dir());
        let mode = fs::metadata(&tmp).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn made_again_it_is_touched_its_mode_kept_and_a_link_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("praxis-tmp/session-y");
        let (tmp, _) = make(&dir, None).unwrap();
        let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mtime = |p: &Path| fs::metadata(p).unwrap().modified().unwrap();
        fs::File::open(&dir)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        make(&dir, None).unwrap();
        assert!(mtime(&dir) > long_ago, "touched when made already");
        // Opened up meanwhile: made again the slow way, mode 0700 again.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        make(&dir, None).unwrap();
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o7777,
            0o700
        );
        // Its /tmp swapped for a link: refused, not followed.
        fs::remove_dir(&tmp).unwrap();
        std::os::unix::fs::symlink(root.path(), &tmp).unwrap();
        assert!(make(&dir, None).is_err());
    }
}
