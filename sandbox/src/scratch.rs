//! Each command's private scratch dir (its `TMPDIR`), and the sweep of
//! those a dead daemon left.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::SandboxError;

/// A command's private `TMPDIR`, removed when dropped.
#[derive(Debug)]
pub(crate) struct ScratchDir(pub(crate) PathBuf);

impl ScratchDir {
    /// A fresh dir under `root`, which is made first if missing.
    pub(crate) fn create(
        root: &Path,
        owner: Option<(u32, u32)>,
    ) -> Result<ScratchDir, SandboxError> {
        ScratchDir::make_root(root)?;
        ScratchDir::create_in(root, owner)
    }

    /// Makes the scratch root if it is missing.
    pub(crate) fn make_root(root: &Path) -> Result<(), SandboxError> {
        if !root.is_dir() {
            // Traversable by the uids commands run as, listable by none of them.
            DirBuilder::new()
                .recursive(true)
                .mode(0o711)
                .create(root)
                .map_err(|e| SandboxError::os("creating the scratch root", e))?;
        }
        Ok(())
    }

    /// A fresh dir under `root`, which must exist.
    pub(crate) fn create_in(
        root: &Path,
        owner: Option<(u32, u32)>,
    ) -> Result<ScratchDir, SandboxError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        loop {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let name = format!(
                "cmd-{}-{}-{nanos:x}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            );
            let path = root.join(name);
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = ScratchDir(path);
                    if let Some((uid, gid)) = owner {
                        std::os::unix::fs::chown(&dir.0, Some(uid), Some(gid)).map_err(|e| {
                            SandboxError::os("handing the scratch dir to the command's user", e)
                        })?;
                    }
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(SandboxError::os("creating the scratch dir", e)),
            }
        }
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Best effort: a leftover only wastes space inside the scratch root.
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Removes every command's dir under the scratch root `root`. For a daemon
/// that holds its instance lock, before it runs anything: they are what an
/// earlier daemon left when it died (a spare, a killed command's). Returns
/// how many were removed.
pub fn sweep_scratch(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("cmd-"))
        .filter(|e| fs::remove_dir_all(e.path()).is_ok())
        .count()
}
