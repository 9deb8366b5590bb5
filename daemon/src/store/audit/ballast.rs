//! The reserve: a file of preallocated blocks beside the store
//! (`audit.ballast`). When the filesystem the store shares with workspaces
//! fills up, the ballast is released so the running command's outcome and
//! the refusals that follow still commit; praxisd refuses new work until
//! there is room for the ballast again.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The reserve's size: room for thousands of refusals and outcomes.
pub(crate) const SIZE: u64 = 8 << 20;

pub(crate) fn path_of(db: &Path) -> PathBuf {
    db.with_file_name("audit.ballast")
}

/// Makes sure the reserve is in place, its blocks allocated.
pub(crate) fn ensure(db: &Path) -> std::io::Result<()> {
    let path = path_of(db);
    if fs::metadata(&path).is_ok_and(|m| m.len() >= SIZE) {
        return Ok(());
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)?;
    nix::fcntl::posix_fallocate(&file, 0, SIZE as i64).map_err(|e| {
        let _ = fs::remove_file(&path);
        std::io::Error::from(e)
    })
}

/// Gives the reserve's blocks back to the filesystem; true if it was there.
pub(crate) fn release(db: &Path) -> bool {
    fs::remove_file(path_of(db)).is_ok()
}

/// Bytes free to us on the store's filesystem.
pub(crate) fn free(db: &Path) -> u64 {
    let dir = db.parent().unwrap_or(Path::new("."));
    nix::sys::statvfs::statvfs(dir)
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()))
        .unwrap_or(u64::MAX)
}
