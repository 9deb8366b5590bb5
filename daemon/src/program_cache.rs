//! Where program names resolve on `PATH`, kept between requests while
//! nothing the lookup depended on has changed.
//!
//! Resolving a program and showing that it lies outside every tree a
//! sandboxed command could write (the planted-binary check) looks at every
//! `PATH` entry before the hit, every directory on the way to it and every
//! writable root: about thirty calls per program of every request. Each
//! directory a name is looked up in is watched with inotify *before* the
//! name is looked up, and the names looked up in it are noted. inotify queues
//! an event before the call that made the change returns, and the queue is
//! drained before every use, so a change finished before a request was sent
//! is seen before that request is judged. An event for a noted name, an
//! event on a watched directory itself, or lost events (queue overflow) drop
//! everything kept. Only a program found outside every writable root is kept;
//! one inside is looked up afresh each time. A mount does not notify:
//! mounting over a directory on the way while praxisd runs is not seen until
//! the next change there, and mounting needs privileges an agent lacks.
//! Where inotify cannot be had, every lookup is made afresh, the same way.

use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use praxis_sandbox::dir_watch::{DirWatch, NameAttributes};
use praxis_sandbox::host;

/// A directory's identity.
type Id = (u64, u64);

/// Lookups kept at most; beyond, the oldest answers go and are made again.
const KEPT: usize = 4096;

/// Symlinks followed in one walk, as the kernel allows.
const MAX_LINKS: usize = 40;

/// Where one program resolved: the path found on `PATH`, and the identity
/// of every directory from its canonical path's parent up to `/`.
#[derive(Clone)]
struct Found {
    path: PathBuf,
    ancestors: Vec<Id>,
}

/// The program resolution of every request, and what it depended on.
pub struct ProgramCache {
    state: Mutex<Option<Watched>>,
}

struct Watched {
    /// Per watched directory, the names looked up in it.
    dirs: DirWatch,
    /// (program, `PATH`) → where it resolved, outside every writable root.
    found: HashMap<(String, OsString), Found>,
    /// The writable roots besides the workspace, and their identities
    /// (None: missing).
    roots: Option<(Vec<PathBuf>, Vec<Option<Id>>)>,
    /// Lookups made afresh, for the tests to tell a kept answer from one
    /// made again.
    #[cfg(test)]
    fresh: usize,
}

/// How a walk ended.
enum Walk {
    /// The canonical path, and the identities of the directories on it.
    Found(PathBuf, Vec<Id>),
    Missing,
}

impl Default for ProgramCache {
    /// A cache that keeps lookups; one that keeps none where inotify cannot
    /// be had.
    fn default() -> ProgramCache {
        // A program's own attributes (its execute bit) count.
        let dirs = DirWatch::new(NameAttributes::Count);
        if let Err(e) = &dirs {
            tracing::warn!("program lookups are made afresh for every request: inotify: {e}");
        }
        ProgramCache {
            state: Mutex::new(dirs.ok().map(|dirs| Watched {
                dirs,
                found: HashMap::new(),
                roots: None,
                #[cfg(test)]
                fresh: 0,
            })),
        }
    }
}

impl ProgramCache {
    /// Where `program` resolves on `path_var` from `cwd`, and whether it lies
    /// inside `workspace` or one of `roots` (compared by directory identity,
    /// so a symlinked root or `PATH` entry cannot hide a planted binary).
    pub fn resolve(
        &self,
        program: &str,
        path_var: &OsStr,
        cwd: &Path,
        roots: &[PathBuf],
        workspace: &Path,
    ) -> Option<(PathBuf, bool)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut watched = state.as_mut();
        if let Some(w) = watched.as_deref_mut() {
            w.drain();
        }
        let workspace = identity(workspace);
        let key = (program.to_owned(), path_var.to_owned());
        if let Some(w) = watched.as_deref_mut()
            && let Some(found) = w.found.get(&key).cloned()
        {
            let inside = within(&found.ancestors, &w.root_ids(roots), workspace);
            return Some((found.path, inside));
        }
        #[cfg(test)]
        if let Some(w) = watched.as_deref_mut() {
            w.fresh += 1;
        }
        // Relative entries name the request's own tree: never kept.
        let mut keep = std::env::split_paths(path_var).all(|d| d.is_absolute());
        let mut hit = None;
        for candidate in host::program_candidates(program, path_var, cwd) {
            let (end, all_watched) = walk(watched.as_deref_mut(), &candidate);
            keep &= all_watched;
            if let Walk::Found(canonical, dirs) = end
                && host::is_executable_file(&canonical)
            {
                hit = Some((candidate, dirs));
                break;
            }
        }
        let (path, ancestors) = hit?;
        let root_ids = match watched.as_deref_mut() {
            Some(w) => w.root_ids(roots),
            None => roots.iter().map(|root| identity(root)).collect(),
        };
        let inside = within(&ancestors, &root_ids, workspace);
        if let Some(w) = watched
            && keep
            && !inside
        {
            if w.found.len() >= KEPT {
                w.found.clear();
            }
            w.found.insert(
                key,
                Found {
                    path: path.clone(),
                    ancestors,
                },
            );
        }
        Some((path, inside))
    }
}

impl Watched {
    /// Reads every event queued; one that matters drops what is kept.
    fn drain(&mut self) {
        match self.dirs.changed() {
            Ok(false) => return,
            Ok(true) => {}
            // Changes could go unseen from here on: keep nothing.
            Err(e) => tracing::error!("program lookups kept no longer: inotify: {e}"),
        }
        self.found.clear();
        self.roots = None;
    }

    /// Watches `dir` for changes to `name` before it is looked up; false when
    /// it cannot be, so nothing that depends on it may be kept.
    fn watch(&mut self, dir: &Path, name: &OsStr) -> bool {
        self.dirs.watch_name(dir, name).is_ok()
    }

    /// The identities of `roots` (None: missing), kept while nothing on
    /// their way changes.
    fn root_ids(&mut self, roots: &[PathBuf]) -> Vec<Option<Id>> {
        if let Some((paths, ids)) = &self.roots
            && paths == roots
        {
            return ids.clone();
        }
        let mut all_watched = true;
        let ids: Vec<Option<Id>> = roots
            .iter()
            .map(|root| {
                let (end, watched) = walk(Some(self), root);
                all_watched &= watched;
                match end {
                    Walk::Found(_, dirs) => dirs.last().copied(),
                    Walk::Missing => None,
                }
            })
            .collect();
        self.roots = all_watched.then(|| (roots.to_vec(), ids.clone()));
        ids
    }
}

/// Whether a program whose directories are `ancestors` lies inside the
/// workspace or a root of `root_ids`.
fn within(ancestors: &[Id], root_ids: &[Option<Id>], workspace: Option<Id>) -> bool {
    ancestors
        .iter()
        .any(|a| Some(*a) == workspace || root_ids.contains(&Some(*a)))
}

fn identity(path: &Path) -> Option<Id> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Resolves the absolute `path` as the kernel would, one name at a time,
/// watching each directory before a name is looked up in it; also says
/// whether every lookup was watched. With nothing to watch with, or a watch
/// refused, the walk is still made.
fn walk(mut watched: Option<&mut Watched>, path: &Path) -> (Walk, bool) {
    let mut all_watched = watched.is_some();
    let end = walk_watching(&mut watched, &mut all_watched, path);
    (end, all_watched)
}

fn walk_watching(watched: &mut Option<&mut Watched>, all_watched: &mut bool, path: &Path) -> Walk {
    let Some(root) = identity(Path::new("/")) else {
        return Walk::Missing;
    };
    let mut resolved = PathBuf::from("/");
    let mut dirs: Vec<Id> = vec![root];
    let mut rest: VecDeque<OsString> = names_of(path);
    let mut links = 0;
    while let Some(name) = rest.pop_front() {
        if name == ".." {
            if resolved.pop() {
                dirs.pop();
            }
            continue;
        }
        if let Some(w) = watched.as_deref_mut()
            && !w.watch(&resolved, &name)
        {
            // Unwatchable: resolve on, but keep nothing that depends on it.
            *watched = None;
            *all_watched = false;
        }
        let next = resolved.join(&name);
        let Ok(meta) = fs::symlink_metadata(&next) else {
            return Walk::Missing;
        };
        if meta.file_type().is_symlink() {
            links += 1;
            let Ok(target) = fs::read_link(&next) else {
                return Walk::Missing;
            };
            if links > MAX_LINKS {
                return Walk::Missing;
            }
            if target.is_absolute() {
                resolved = PathBuf::from("/");
                dirs.truncate(1);
            }
            for part in names_of(&target).into_iter().rev() {
                rest.push_front(part);
            }
            continue;
        }
        resolved = next;
        dirs.push((meta.dev(), meta.ino()));
    }
    Walk::Found(resolved, dirs)
}

/// The names of `path`'s components, `..` kept, `/` and `.` dropped.
fn names_of(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
