//! The snapshot store: one directory per request under the state dir, with
//! the saved bytes, a manifest and a one-line summary for listings and limits.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use crate::SnapshotError;
use crate::fsops;
use crate::manifest::{Entry, Kind, Manifest, Scope, Summary};
use crate::walk;

const DAY: u64 = 24 * 60 * 60;
const MANIFEST: &str = "manifest.json";
const SUMMARY: &str = "summary.json";
const BLOBS: &str = "blobs";

/// How much may be kept, per command, per day and in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_files: u64,
    pub max_bytes: u64,
    pub max_daily_bytes: u64,
    /// Seconds a snapshot is kept.
    pub keep_for: u64,
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_files: 100_000,
            max_bytes: 256 << 20,
            max_daily_bytes: 2 << 30,
            keep_for: 7 * DAY,
            max_total_bytes: 4 << 30,
        }
    }
}

/// What a snapshot of a scope would hold, counted before the command is decided.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct Plan {
    pub scope: Scope,
    pub files: u64,
    pub bytes: u64,
}

/// What an undo put back.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct Restored {
    /// Regular files put back, counted as the snapshot's `files` counts them
    /// (directories and links are remade with them, uncounted).
    pub restored: u64,
    pub removed: u64,
    pub bytes: u64,
}

/// A snapshot dropped by retention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired {
    pub request_id: String,
    pub bytes: u64,
    pub reason: &'static str,
}

pub struct Store {
    root: PathBuf,
    limits: Limits,
}

fn valid_id(id: &str) -> Result<&str, SnapshotError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(id)
    } else {
        Err(SnapshotError::NotFound(id.to_string()))
    }
}

struct Workspace {
    fd: OwnedFd,
    id: (u64, u64),
}

fn open_workspace(path: &Path) -> Result<Workspace, SnapshotError> {
    let file = File::open(path).map_err(|e| SnapshotError::io(path.display().to_string(), e))?;
    let meta = file
        .metadata()
        .map_err(|e| SnapshotError::io(path.display().to_string(), e))?;
    if !meta.is_dir() {
        return Err(SnapshotError::Unsnapshottable {
            path: path.display().to_string(),
            why: "the workspace is not a directory",
        });
    }
    Ok(Workspace {
        fd: OwnedFd::from(file),
        id: (meta.dev(), meta.ino()),
    })
}

fn count(entries: &BTreeMap<String, Entry>) -> (u64, u64) {
    entries
        .values()
        .filter(|e| e.kind == Kind::File)
        .fold((0, 0), |(files, bytes), e| (files + 1, bytes + e.size))
}

/// Writes beside the file, then renames over it: a reader (`praxis undo`
/// racing the seal) sees the old record or the new one, never a torn one.
fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), SnapshotError> {
    let text = serde_json::to_vec(value).expect("snapshot records serialize");
    let mut staged = path.as_os_str().to_owned();
    staged.push(".new");
    let staged = PathBuf::from(staged);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&staged)
        .map_err(|e| SnapshotError::io(staged.display().to_string(), e))?;
    file.write_all(&text)
        .and_then(|()| file.sync_data())
        .and_then(|()| fs::rename(&staged, path))
        .map_err(|e| SnapshotError::io(path.display().to_string(), e))
}

fn read_json<T: serde::de::DeserializeOwned>(id: &str, path: &Path) -> Result<T, SnapshotError> {
    let text = fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SnapshotError::NotFound(id.to_string()),
        _ => SnapshotError::io(path.display().to_string(), e),
    })?;
    serde_json::from_slice(&text).map_err(|e| SnapshotError::Damaged {
        id: id.to_string(),
        why: e.to_string(),
    })
}

impl Store {
    /// Opens (creating) the store at `root`; leftovers of captures that never
    /// finished are removed.
    pub fn open(root: PathBuf, limits: Limits) -> Result<Store, SnapshotError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|e| SnapshotError::io(root.display().to_string(), e))?;
        if let Ok(dir) = fs::read_dir(&root) {
            for item in dir.flatten() {
                if item.file_name().to_string_lossy().ends_with(".partial") {
                    let _ = fs::remove_dir_all(item.path());
                }
            }
        }
        Ok(Store { root, limits })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Counts what a snapshot of `scope` would hold and checks it against the
    /// per-command and daily limits. Reads metadata only.
    pub fn plan(&self, workspace: &Path, scope: Scope, now: u64) -> Result<Plan, SnapshotError> {
        let ws = open_workspace(workspace)?;
        let (files, bytes) = count(&walk::walk(ws.fd.as_fd(), workspace, &scope)?);
        self.check(files, bytes, now)?;
        Ok(Plan {
            scope,
            files,
            bytes,
        })
    }

    fn check(&self, files: u64, bytes: u64, now: u64) -> Result<(), SnapshotError> {
        let limits = &self.limits;
        if files > limits.max_files || bytes > limits.max_bytes {
            return Err(SnapshotError::OverCommandLimit {
                files,
                bytes,
                max_files: limits.max_files,
                max_bytes: limits.max_bytes,
            });
        }
        let today: u64 = self
            .summaries()?
            .iter()
            .filter(|s| s.created_at + DAY > now)
            .map(|s| s.bytes)
            .sum();
        if today + bytes > limits.max_daily_bytes {
            return Err(SnapshotError::OverDailyLimit {
                bytes: today + bytes,
                max_bytes: limits.max_daily_bytes,
            });
        }
        Ok(())
    }

    fn dir(&self, id: &str) -> Result<PathBuf, SnapshotError> {
        Ok(self.root.join(valid_id(id)?))
    }

    /// Saves everything in the plan's scope as it is now, for request `id`.
    pub fn capture(
        &self,
        id: &str,
        workspace: &Path,
        plan: &Plan,
        now: u64,
    ) -> Result<Manifest, SnapshotError> {
        let dir = self.dir(id)?;
        let ws = open_workspace(workspace)?;
        let mut before = walk::walk(ws.fd.as_fd(), workspace, &plan.scope)?;
        let (files, bytes) = count(&before);
        self.check(files, bytes, now)?;

        let partial = self.root.join(format!("{id}.partial"));
        let blobs = partial.join(BLOBS);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&blobs)
            .map_err(|e| SnapshotError::io(blobs.display().to_string(), e))?;
        let blobs_fd = OwnedFd::from(
            File::open(&blobs).map_err(|e| SnapshotError::io(blobs.display().to_string(), e))?,
        );
        let mut kept = 0;
        let mut gone = Vec::new();
        for (index, entry) in before
            .values_mut()
            .filter(|e| e.kind == Kind::File)
            .enumerate()
        {
            match fsops::save_file(
                ws.fd.as_fd(),
                &entry.path,
                blobs_fd.as_fd(),
                &index.to_string(),
            ) {
                Ok(n) => {
                    entry.blob = Some(index as u64);
                    kept += n;
                }
                // Removed since the walk, before the command started: nothing to keep.
                Err(SnapshotError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    gone.push(entry.path.clone())
                }
                Err(e) => {
                    let _ = fs::remove_dir_all(&partial);
                    return Err(e);
                }
            }
        }
        let files = files - gone.len() as u64;
        for path in gone {
            before.remove(&path);
        }
        let manifest = Manifest {
            request_id: id.to_string(),
            workspace: workspace.display().to_string(),
            workspace_id: ws.id,
            scope: plan.scope.clone(),
            created_at: now,
            before: before.into_values().collect(),
            after: None,
            files,
            bytes: kept,
            restored_at: None,
        };
        write_json(&partial.join(MANIFEST), &manifest)?;
        write_json(&partial.join(SUMMARY), &self.summary(&manifest))?;
        fs::rename(&partial, &dir).map_err(|e| SnapshotError::io(dir.display().to_string(), e))?;
        Ok(manifest)
    }

    fn summary(&self, m: &Manifest) -> Summary {
        Summary {
            request_id: m.request_id.clone(),
            workspace: m.workspace.clone(),
            created_at: m.created_at,
            expires_at: m.created_at + self.limits.keep_for,
            files: m.files,
            bytes: m.bytes,
            sealed: m.after.is_some(),
            restored_at: m.restored_at,
        }
    }

    fn load(&self, id: &str) -> Result<Manifest, SnapshotError> {
        read_json(id, &self.dir(id)?.join(MANIFEST))
    }

    fn save(&self, m: &Manifest) -> Result<(), SnapshotError> {
        let dir = self.dir(&m.request_id)?;
        write_json(&dir.join(MANIFEST), m)?;
        write_json(&dir.join(SUMMARY), &self.summary(m))
    }

    /// Records what the command left in the scope, so an undo can tell
    /// whether anything changed since.
    pub fn seal(&self, id: &str) -> Result<(), SnapshotError> {
        let mut m = self.load(id)?;
        let workspace = PathBuf::from(&m.workspace);
        let ws = self.reopen(&m)?;
        m.after = Some(
            walk::walk(ws.fd.as_fd(), &workspace, &m.scope)?
                .into_values()
                .collect(),
        );
        self.save(&m)
    }

    fn reopen(&self, m: &Manifest) -> Result<Workspace, SnapshotError> {
        let workspace = PathBuf::from(&m.workspace);
        let ws = open_workspace(&workspace)?;
        if ws.id != m.workspace_id {
            return Err(SnapshotError::WorkspaceMoved(workspace));
        }
        Ok(ws)
    }

    /// Drops the snapshot of a command that never ran.
    pub fn discard(&self, id: &str) -> Result<(), SnapshotError> {
        let dir = self.dir(id)?;
        fs::remove_dir_all(&dir).map_err(|e| SnapshotError::io(dir.display().to_string(), e))
    }

    /// Puts the scope back as it was before the command. Refuses when the
    /// scope is not as the command left it, unless `force`. A snapshot is
    /// restored once: `force` overrides later edits, never a second undo,
    /// which would lay the old state over whatever was written since.
    pub fn restore(&self, id: &str, force: bool, now: u64) -> Result<Restored, SnapshotError> {
        let mut m = self.load(id)?;
        if m.restored_at.is_some() {
            return Err(SnapshotError::AlreadyRestored(id.to_string()));
        }
        let workspace = PathBuf::from(&m.workspace);
        let ws = self.reopen(&m)?;
        let root = ws.fd.as_fd();
        let current = walk::walk(root, &workspace, &m.scope)?;
        if !force {
            let after = m
                .after
                .as_ref()
                .ok_or_else(|| SnapshotError::NotSealed(id.to_string()))?;
            let changed = changed_since(after, &current);
            if !changed.is_empty() {
                return Err(SnapshotError::Changed(changed));
            }
        }
        let before: BTreeMap<&str, &Entry> =
            m.before.iter().map(|e| (e.path.as_str(), e)).collect();
        let mut done = Restored {
            restored: 0,
            removed: 0,
            bytes: 0,
        };

        // What the command created goes first, deepest first.
        for path in current
            .keys()
            .rev()
            .filter(|p| !before.contains_key(p.as_str()))
        {
            let (dir, name) = fsops::parent_of(root, path)?;
            fsops::remove(dir.as_fd(), OsStr::new(name)).map_err(|e| SnapshotError::io(path, e))?;
            done.removed += 1;
        }
        let blobs = self.dir(id)?.join(BLOBS);
        for entry in &m.before {
            if current.get(&entry.path).is_some_and(|c| c.same_as(entry)) || entry.path.is_empty() {
                continue;
            }
            let (dir, name) = fsops::parent_of(root, &entry.path)?;
            match entry.kind {
                Kind::Dir => fsops::restore_dir(dir.as_fd(), name, entry)?,
                Kind::Symlink => fsops::restore_symlink(dir.as_fd(), name, entry)?,
                Kind::File => {
                    let blob = blobs.join(entry.blob.unwrap_or_default().to_string());
                    let mut file = File::open(&blob).map_err(|e| SnapshotError::Damaged {
                        id: id.to_string(),
                        why: format!("{}: {e}", entry.path),
                    })?;
                    fsops::restore_file(dir.as_fd(), name, &mut file, entry)?;
                    done.bytes += entry.size;
                    done.restored += 1;
                }
                Kind::Special => continue,
            }
        }
        // Directory modes and times last: restoring their children changed them.
        for entry in m.before.iter().rev().filter(|e| e.kind == Kind::Dir) {
            finish_dir(root, entry)?;
        }
        m.restored_at = Some(now);
        self.save(&m)?;
        Ok(done)
    }

    fn summaries(&self) -> Result<Vec<Summary>, SnapshotError> {
        let dir = fs::read_dir(&self.root)
            .map_err(|e| SnapshotError::io(self.root.display().to_string(), e))?;
        let mut all: Vec<Summary> = dir
            .flatten()
            .filter_map(|item| {
                let id = item.file_name().into_string().ok()?;
                if id.ends_with(".partial") {
                    return None;
                }
                read_json(&id, &item.path().join(SUMMARY)).ok()
            })
            .collect();
        all.sort_by(|a, b| (a.created_at, &a.request_id).cmp(&(b.created_at, &b.request_id)));
        Ok(all)
    }

    /// Every snapshot kept, newest first: the command just run heads the list.
    pub fn list(&self) -> Result<Vec<Summary>, SnapshotError> {
        let mut all = self.summaries()?;
        all.reverse();
        Ok(all)
    }

    /// Drops snapshots older than the retention time, then the oldest until
    /// the total fits the size budget.
    pub fn expire(&self, now: u64) -> Result<Vec<Expired>, SnapshotError> {
        let mut all = self.summaries()?;
        let mut expired = Vec::new();
        let mut total: u64 = all.iter().map(|s| s.bytes).sum();
        all.retain(|s| {
            let reason = if s.created_at + self.limits.keep_for <= now {
                "age"
            } else if total > self.limits.max_total_bytes {
                "size"
            } else {
                return true;
            };
            total -= s.bytes;
            expired.push(Expired {
                request_id: s.request_id.clone(),
                bytes: s.bytes,
                reason,
            });
            false
        });
        for gone in &expired {
            let dir = self.dir(&gone.request_id)?;
            fs::remove_dir_all(&dir)
                .map_err(|e| SnapshotError::io(dir.display().to_string(), e))?;
        }
        Ok(expired)
    }
}

/// Paths whose state differs between what the command left and now.
fn changed_since(after: &[Entry], current: &BTreeMap<String, Entry>) -> Vec<String> {
    let after: BTreeMap<&str, &Entry> = after.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut changed: Vec<String> = current
        .iter()
        .filter(|(p, c)| after.get(p.as_str()).is_none_or(|a| !a.same_as(c)))
        .map(|(p, _)| p.clone())
        .chain(
            after
                .keys()
                .filter(|p| !current.contains_key(**p))
                .map(|p| p.to_string()),
        )
        .collect();
    changed.sort();
    changed
}

fn finish_dir(root: BorrowedFd<'_>, entry: &Entry) -> Result<(), SnapshotError> {
    let fd = fsops::open_beneath(root, &entry.path, OFlag::O_RDONLY | OFlag::O_DIRECTORY)
        .map_err(|e| SnapshotError::io(&entry.path, e))?;
    fsops::finish(fd.as_fd(), entry)
}
