//! What a snapshot records: the scope it covers, every entry in it before the
//! command (with where its bytes are kept), and every entry after.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a snapshot covers, relative to the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// These paths and everything below them (a path may not exist yet: then
    /// undo removes what the command created there).
    Paths(Vec<String>),
    /// The whole workspace but `.git`: a checkpoint before an opaque writer.
    /// Ignored files (per `.gitignore`) only when `ignored` is set.
    Workspace { ignored: bool },
}

impl Scope {
    /// The workspace-relative form of absolute `paths`. A path outside the
    /// workspace, or one with `..` left in it, is not a workspace file and not
    /// this snapshot's to keep.
    pub fn of_paths(workspace: &Path, paths: &[PathBuf]) -> Scope {
        let mut rel: Vec<String> = paths
            .iter()
            .filter_map(|p| relative(workspace, p))
            .collect();
        rel.sort();
        rel.dedup();
        Scope::Paths(rel)
    }
}

/// A path the daemon hands in, made relative to the workspace and checked:
/// no `..`, no empty or `.` components (the workspace itself is `""`).
pub fn relative(workspace: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(workspace).ok()?;
    let mut parts = Vec::new();
    for part in rel.components() {
        match part {
            std::path::Component::Normal(p) => parts.push(p.to_str()?),
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A fifo, socket or device: recorded so a change is seen, never copied.
    Special,
}

/// One path as it was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    pub kind: Kind,
    /// Permission bits, setuid/setgid/sticky included.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub ino: u64,
    /// A symlink's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Index of the saved copy of a file's bytes (before the command only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<u64>,
}

impl Entry {
    /// Whether two observations of a path show the same thing: same inode,
    /// type, mode, size, link target and change times.
    pub fn same_as(&self, other: &Entry) -> bool {
        self.kind == other.kind
            && self.mode == other.mode
            && (self.uid, self.gid) == (other.uid, other.gid)
            && self.ino == other.ino
            && self.link == other.link
            && self.mtime == other.mtime
            && self.ctime == other.ctime
            && (self.kind == Kind::Dir || self.size == other.size)
    }
}

/// Everything kept about one snapshot, stored as `manifest.json` in its directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub request_id: String,
    pub workspace: String,
    /// Device and inode of the workspace directory, so a restore goes into the
    /// same directory even if a path now names another.
    pub workspace_id: (u64, u64),
    pub scope: Scope,
    /// Seconds since the epoch.
    pub created_at: u64,
    /// Entries before the command, parents before children.
    pub before: Vec<Entry>,
    /// Entries after the command; `None` until the command ended.
    #[serde(default)]
    pub after: Option<Vec<Entry>>,
    pub files: u64,
    pub bytes: u64,
    #[serde(default)]
    pub restored_at: Option<u64>,
}

/// A line of `praxis undo --list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub request_id: String,
    pub workspace: String,
    pub created_at: u64,
    pub expires_at: u64,
    pub files: u64,
    pub bytes: u64,
    pub sealed: bool,
    pub restored_at: Option<u64>,
}
