//! Walking a scope: every path it covers, as it is now.

use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::path::Path;

use crate::SnapshotError;
use crate::fsops;
use crate::manifest::{Entry, Kind, Scope};

/// Every entry of `scope` that exists, keyed by path: parents sort before
/// their children, so iteration creates in order and reverse iteration
/// removes. Ignored directories (per `.gitignore`: build outputs, dependency
/// trees) are left out, as are ignored files inside a walked directory; an
/// ignored file named by the command itself (`rm .env`) is kept.
pub fn walk(
    root: BorrowedFd<'_>,
    workspace: &Path,
    scope: &Scope,
) -> Result<BTreeMap<String, Entry>, SnapshotError> {
    let mut found = BTreeMap::new();
    match scope {
        Scope::Paths(targets) => {
            for target in targets {
                let Some(entry) = fsops::observe(root, target)? else {
                    continue;
                };
                if entry.kind != Kind::Dir {
                    found.insert(target.clone(), entry);
                } else if target.is_empty() || !ignored_dir(workspace, target) {
                    walk_ignoring(root, workspace, target, false, &mut found)?;
                }
            }
        }
        Scope::Workspace { ignored } => walk_ignoring(root, workspace, "", *ignored, &mut found)?,
    }
    Ok(found)
}

fn walker(dir: &Path, with_ignored: bool) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(dir);
    builder
        .hidden(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(!with_ignored)
        .git_exclude(!with_ignored)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// Whether the directory `rel` is ignored (a build output, a dependency
/// tree): its parent is listed the way git would, and it is not in the list.
fn ignored_dir(workspace: &Path, rel: &str) -> bool {
    let path = workspace.join(rel);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    let name = name.to_owned();
    !walker(parent, false)
        .max_depth(Some(1))
        .build()
        .flatten()
        .any(|e| e.depth() == 1 && e.file_name() == name)
}

/// Everything below `rel` (itself included), the ignored files left out
/// unless `with_ignored`.
fn walk_ignoring(
    root: BorrowedFd<'_>,
    workspace: &Path,
    rel: &str,
    with_ignored: bool,
    found: &mut BTreeMap<String, Entry>,
) -> Result<(), SnapshotError> {
    let io = |e: ignore::Error| {
        SnapshotError::io(workspace.display().to_string(), std::io::Error::other(e))
    };
    for item in walker(&workspace.join(rel), with_ignored).build() {
        let item = item.map_err(io)?;
        let Ok(path) = item.path().strip_prefix(workspace) else {
            continue;
        };
        let path = path.to_str().ok_or(SnapshotError::Unsnapshottable {
            path: path.display().to_string(),
            why: "a file name is not UTF-8",
        })?;
        if found.contains_key(path) {
            continue;
        }
        if let Some(entry) = fsops::observe(root, path)? {
            found.insert(path.to_string(), entry);
        }
    }
    Ok(())
}
