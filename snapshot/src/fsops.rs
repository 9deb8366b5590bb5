//! File operations relative to the workspace directory. Every path is
//! resolved by `openat2` beneath the workspace with no symlink followed, so a
//! link planted by the command cannot redirect a capture or a restore.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::{self, AtFlags, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{self, FileStat, Mode, SFlag};
use nix::sys::time::TimeSpec;
use nix::unistd::{self, UnlinkatFlags};
use rustix::fs::ioctl_ficlone;

use crate::SnapshotError;
use crate::manifest::{Entry, Kind};

const BENEATH: ResolveFlag = ResolveFlag::RESOLVE_BENEATH.union(ResolveFlag::RESOLVE_NO_SYMLINKS);

/// Opens `rel` (relative to `root`, `""` for `root` itself) without leaving
/// `root` and without following any symlink.
pub fn open_beneath(root: BorrowedFd<'_>, rel: &str, flags: OFlag) -> nix::Result<OwnedFd> {
    let path = if rel.is_empty() { "." } else { rel };
    let how = OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
        .resolve(BENEATH);
    fcntl::openat2(root, path, how)
}

fn kind_of(st: &FileStat) -> Kind {
    match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFLNK => Kind::Symlink,
        _ => Kind::Special,
    }
}

/// What is at `rel` now, without following it; `None` when nothing is.
pub fn observe(root: BorrowedFd<'_>, rel: &str) -> Result<Option<Entry>, SnapshotError> {
    let fd = match open_beneath(root, rel, OFlag::O_PATH) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(Errno::ELOOP | Errno::EXDEV | Errno::ENOTDIR) => {
            return Err(SnapshotError::Unsnapshottable {
                path: rel.to_string(),
                why: "a parent is a symlink or not a directory",
            });
        }
        Err(e) => return Err(SnapshotError::io(rel, e)),
    };
    let st = stat::fstat(&fd).map_err(|e| SnapshotError::io(rel, e))?;
    let kind = kind_of(&st);
    let link = if kind == Kind::Symlink {
        let target = fcntl::readlinkat(&fd, "").map_err(|e| SnapshotError::io(rel, e))?;
        Some(utf8(rel, &target)?.to_string())
    } else {
        None
    };
    Ok(Some(Entry {
        path: rel.to_string(),
        kind,
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u64,
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
        ino: st.st_ino,
        link,
        blob: None,
    }))
}

fn utf8<'a>(rel: &str, name: &'a OsStr) -> Result<&'a str, SnapshotError> {
    name.to_str().ok_or(SnapshotError::Unsnapshottable {
        path: rel.to_string(),
        why: "a file name is not UTF-8",
    })
}

/// Copies the file at `rel` into a new file `name` in `dest`: a reflink where
/// the filesystem shares blocks, else a copy. Returns the bytes kept.
pub fn save_file(
    root: BorrowedFd<'_>,
    rel: &str,
    dest: BorrowedFd<'_>,
    name: &str,
) -> Result<u64, SnapshotError> {
    let src = open_beneath(root, rel, OFlag::O_RDONLY).map_err(|e| SnapshotError::io(rel, e))?;
    let out = fcntl::openat(
        dest,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(|e| SnapshotError::io(name, e))?;
    let cloned = ioctl_ficlone(&out, &src).is_ok();
    let mut src = File::from(src);
    let mut out = File::from(out);
    if cloned {
        return Ok(src.metadata().map_err(|e| SnapshotError::io(rel, e))?.len());
    }
    io::copy(&mut src, &mut out).map_err(|e| SnapshotError::io(rel, e))
}

/// Opens the directory that holds `rel` and returns it with the last name.
pub fn parent_of<'a>(
    root: BorrowedFd<'_>,
    rel: &'a str,
) -> Result<(OwnedFd, &'a str), SnapshotError> {
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let fd = open_beneath(root, parent, OFlag::O_RDONLY | OFlag::O_DIRECTORY)
        .map_err(|e| SnapshotError::io(rel, e))?;
    Ok((fd, name))
}

/// Removes `name` in `dir`, a whole tree if it is a directory, following no link.
pub fn remove(dir: BorrowedFd<'_>, name: &OsStr) -> nix::Result<()> {
    match unistd::unlinkat(dir, name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(Errno::EISDIR) => {
            let sub = fcntl::openat(
                dir,
                name,
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )?;
            let mut listing = Dir::from_fd(sub.try_clone().map_err(|_| Errno::EMFILE)?)?;
            let children: Vec<Vec<u8>> = listing
                .iter()
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_bytes().to_vec())
                .filter(|n| n != b"." && n != b"..")
                .collect();
            for child in children {
                remove(sub.as_fd(), OsStr::from_bytes(&child))?;
            }
            unistd::unlinkat(dir, name, UnlinkatFlags::RemoveDir)
        }
        Err(e) => Err(e),
    }
}

/// Writes a saved file back as `name` in `dir` with its mode and times:
/// into a temporary name first, then renamed over whatever is there.
pub fn restore_file(
    dir: BorrowedFd<'_>,
    name: &str,
    blob: &mut File,
    entry: &Entry,
) -> Result<(), SnapshotError> {
    let temp = format!(".{name}.praxis-undo");
    let _ = unistd::unlinkat(dir, temp.as_str(), UnlinkatFlags::NoRemoveDir);
    let out = fcntl::openat(
        dir,
        temp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(|e| SnapshotError::io(&entry.path, e))?;
    let cloned = ioctl_ficlone(&out, &*blob).is_ok();
    let mut out = File::from(out);
    if !cloned {
        io::copy(blob, &mut out).map_err(|e| SnapshotError::io(&entry.path, e))?;
    }
    finish(out.as_fd(), entry)?;
    // A directory that cannot be removed stays, and the rename reports it.
    let _ = remove(dir, OsStr::new(name));
    fcntl::renameat(dir, temp.as_str(), dir, name).map_err(|e| SnapshotError::io(&entry.path, e))
}

/// Makes directory `name` in `dir`, unless one is there. It is left
/// writable by its owner; [`finish`] gives it its mode once its children are back.
pub fn restore_dir(dir: BorrowedFd<'_>, name: &str, entry: &Entry) -> Result<(), SnapshotError> {
    if let Ok(fd) = open_beneath(dir, name, OFlag::O_PATH)
        && stat::fstat(&fd).map(|s| kind_of(&s)) == Ok(Kind::Dir)
    {
        return Ok(());
    }
    remove(dir, OsStr::new(name)).map_err(|e| SnapshotError::io(&entry.path, e))?;
    stat::mkdirat(dir, name, Mode::from_bits_truncate(0o700))
        .map_err(|e| SnapshotError::io(&entry.path, e))
}

/// Makes symlink `name` in `dir` pointing where the entry's did.
pub fn restore_symlink(
    dir: BorrowedFd<'_>,
    name: &str,
    entry: &Entry,
) -> Result<(), SnapshotError> {
    remove(dir, OsStr::new(name)).map_err(|e| SnapshotError::io(&entry.path, e))?;
    let target = entry.link.as_deref().unwrap_or_default();
    unistd::symlinkat(target, dir, name).map_err(|e| SnapshotError::io(&entry.path, e))?;
    own(
        unistd::fchownat(
            dir,
            name,
            owner(entry.uid),
            group(entry.gid),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        ),
        entry,
    )
}

fn owner(uid: u32) -> Option<unistd::Uid> {
    Some(unistd::Uid::from_raw(uid))
}

fn group(gid: u32) -> Option<unistd::Gid> {
    Some(unistd::Gid::from_raw(gid))
}

/// Ownership is put back where the daemon may (as root); a daemon running as
/// the workspace's owner makes files that are already its own.
fn own(result: nix::Result<()>, entry: &Entry) -> Result<(), SnapshotError> {
    match result {
        Ok(()) | Err(Errno::EPERM) => Ok(()),
        Err(e) => Err(SnapshotError::io(&entry.path, e)),
    }
}

/// Sets owner, mode and times on a restored file or directory (the owner
/// first: a chown clears setuid and setgid bits).
pub fn finish(fd: BorrowedFd<'_>, entry: &Entry) -> Result<(), SnapshotError> {
    own(
        unistd::fchown(fd, owner(entry.uid), group(entry.gid)),
        entry,
    )?;
    stat::fchmod(fd, Mode::from_bits_truncate(entry.mode))
        .map_err(|e| SnapshotError::io(&entry.path, e))?;
    let mtime = TimeSpec::new(entry.mtime.0, entry.mtime.1);
    stat::futimens(fd, &TimeSpec::UTIME_OMIT, &mtime).map_err(|e| SnapshotError::io(&entry.path, e))
}
