//! Capture and restore of what a reversible command is about to remove.
//!
//! Before a T1 command deletes, moves over, truncates or overwrites files in
//! its workspace, the daemon saves them here, keyed by request id; after the
//! command it records what the command left; `praxis undo` puts the saved
//! state back, refusing when something changed since the command ran.
//!
//! Every path is opened relative to the workspace directory with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so neither a symlink nor
//! `..` can take a capture or a restore outside the workspace. File contents
//! are reflinked where the filesystem can, and copied otherwise.

#![forbid(unsafe_code)]

mod fsops;
mod manifest;
mod store;
mod walk;

pub use manifest::{Entry, Kind, Manifest, Scope, Summary};
pub use store::{Expired, Limits, Plan, Restored, Store};

use std::path::PathBuf;

/// Why a snapshot could not be planned, taken or restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(
        "a snapshot would hold {files} files, {bytes} bytes: over the per-command limit of {max_files} files, {max_bytes} bytes"
    )]
    OverCommandLimit {
        files: u64,
        bytes: u64,
        max_files: u64,
        max_bytes: u64,
    },
    #[error(
        "snapshots of the last 24 hours would reach {bytes} bytes: over the daily limit of {max_bytes} bytes"
    )]
    OverDailyLimit { bytes: u64, max_bytes: u64 },
    #[error("cannot snapshot {path}: {why}")]
    Unsnapshottable { path: String, why: &'static str },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no snapshot is kept for request {0}")]
    NotFound(String),
    #[error(
        "the snapshot of request {0} was already restored; restoring it again would overwrite what was written since"
    )]
    AlreadyRestored(String),
    #[error("the snapshot of request {0} has no record of what the command left")]
    NotSealed(String),
    #[error("changed since the command ran: {}", .0.join(", "))]
    Changed(Vec<String>),
    #[error("the workspace {0} is not the directory the snapshot was taken in")]
    WorkspaceMoved(PathBuf),
    #[error("snapshot {id} is damaged: {why}")]
    Damaged { id: String, why: String },
}

impl SnapshotError {
    fn io(path: impl Into<String>, source: impl Into<std::io::Error>) -> SnapshotError {
        SnapshotError::Io {
            path: path.into(),
            source: source.into(),
        }
    }
}
