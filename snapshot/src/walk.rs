//! Walking a scope: every path it covers, as it is now.

use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::path::Path;

use crate::SnapshotError;
use crate::fsops;
use crate::manifest::{Entry, Kind, Scope};

/// Every entry of `scope` that exists, keyed by path: parents sort before
/// their children, so iteration creates in order and reverse iteration removes.
pub fn walk(
    root: BorrowedFd<'_>,
    workspace: &Path,
    scope: &Scope,
) -> Result<BTreeMap<String, Entry>, SnapshotError> {
    let mut found = BTreeMap::new();
    match scope {
        Scope::Paths(targets) => {
            for target in targets {
                walk_tree(root, target, &mut found)?;
            }
        }
        Scope::Workspace { ignored } => {
            let walker = ignore::WalkBuilder::new(workspace)
                .hidden(false)
                .ignore(false)
                .git_global(false)
                .git_ignore(!ignored)
                .git_exclude(!ignored)
                .require_git(false)
                .follow_links(false)
                .filter_entry(|e| e.file_name() != ".git")
                .sort_by_file_name(|a, b| a.cmp(b))
                .build();
            for item in walker {
                let item = item.map_err(|e| {
                    SnapshotError::io(workspace.display().to_string(), std::io::Error::other(e))
                })?;
                let Ok(rel) = item.path().strip_prefix(workspace) else {
                    continue;
                };
                let rel = rel.to_str().ok_or(SnapshotError::Unsnapshottable {
                    path: rel.display().to_string(),
                    why: "a file name is not UTF-8",
                })?;
                if let Some(entry) = fsops::observe(root, rel)? {
                    found.insert(rel.to_string(), entry);
                }
            }
        }
    }
    Ok(found)
}

fn walk_tree(
    root: BorrowedFd<'_>,
    rel: &str,
    found: &mut BTreeMap<String, Entry>,
) -> Result<(), SnapshotError> {
    if found.contains_key(rel) {
        return Ok(());
    }
    let Some(entry) = fsops::observe(root, rel)? else {
        return Ok(());
    };
    let is_dir = entry.kind == Kind::Dir;
    found.insert(rel.to_string(), entry);
    if is_dir {
        for name in fsops::list_dir(root, rel)? {
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            walk_tree(root, &child, found)?;
        }
    }
    Ok(())
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
