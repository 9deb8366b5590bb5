//! The Landlock carve, reused across commands while the directories it
//! depended on are unchanged.
//!
//! Carving secrets out of `/` opens and lists hundreds of inodes (the
//! siblings of `/etc`, of the home directory, and so on down each secret's
//! path). The result depends only on the spec's path lists and on what was
//! looked at: the directories listed for `*` patterns and by the carve,
//! each recorded with its device, inode, mtime and ctime, and the
//! resolution of every secret and carved protected path. A later command
//! with the same lists reuses the opened descriptors when no listed
//! directory changed and no component of a path that resolved without
//! symlinks has become one; a path whose resolution went through a symlink
//! is resolved again and compared.
//!
//! A kept carve watches (inotify) each listed directory whole, and in the
//! parent of each listed directory and of each component of a resolved
//! path, that one name, so the check before a command is one read of its
//! queue, not one `lstat` per directory: a name made, removed or renamed in
//! a listed directory, the same for a watched name, or a change to a
//! watched directory's own attributes, is a change. Where the watches
//! cannot be had (the user's inotify limits), the `lstat`s are made
//! instead.
//!
//! A directory changed within [`RACY`] of the carve is not trusted (its
//! timestamps may not have ticked yet): such a carve is used once and not
//! kept. A reused carve holds descriptors to the inodes granted at carve
//! time, so it can only be stricter than a fresh one, never looser: a name
//! created since then inside a carved directory changes that directory and
//! the carve is redone.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use crate::dir_watch::{DirWatch, NameAttributes};
use crate::fs_rules::{Exclusion, Rule, RulesError, resolve_lenient};

/// Carves kept at most.
const ENTRIES: usize = 8;

/// How recent a directory change may be before its timestamps are not
/// trusted to show the next change (coarse timestamps tick per jiffy).
const RACY: Duration = Duration::from_millis(50);

/// What the carve is computed from: equal keys carve the same paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    /// Whether the read trees are granted with secrets carved out.
    pub(crate) restricted: bool,
    /// Trees granted read (and execute), as the spec lists them, the
    /// workspace included.
    pub(crate) reads: Vec<PathBuf>,
    /// Base of relative secrets.
    pub(crate) home: PathBuf,
    /// Writable trees (workspace and existing caches).
    pub(crate) writable_roots: Vec<PathBuf>,
    /// Secret entries as the spec lists them.
    pub(crate) secrets: Vec<PathBuf>,
    /// Protected paths carved out of writable trees (when there are no mounts).
    pub(crate) carved_protected: Vec<PathBuf>,
    /// Whether writable trees are granted whole (mounts guard them).
    pub(crate) can_mount: bool,
}

/// What one directory looked like: absent, or its identity and change times.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Look {
    path: PathBuf,
    seen: Option<(u64, u64, i64, i64, i64, i64)>,
}

impl Look {
    fn take(path: &Path) -> Look {
        let seen = fs::symlink_metadata(path).ok().map(|m| {
            (
                m.dev(),
                m.ino(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            )
        });
        Look {
            path: path.to_path_buf(),
            seen,
        }
    }

    /// Whether the directory changed so recently, relative to `at`, that a
    /// change right after it could leave its timestamps as they are.
    fn racy(&self, at: SystemTime) -> bool {
        let Some((.., secs, nanos)) = self.seen else {
            return false;
        };
        let changed = u64::try_from(secs)
            .ok()
            .and_then(|s| {
                SystemTime::UNIX_EPOCH.checked_add(Duration::new(s, u32::try_from(nanos).ok()?))
            })
            .unwrap_or(SystemTime::UNIX_EPOCH);
        changed + RACY >= at
    }
}

/// A carve: the rules (opened inodes), the resolved paths it was made from,
/// and what it depended on.
#[derive(Debug)]
pub(crate) struct Carved {
    /// Read grants with secrets carved out, then writable trees.
    pub(crate) rules: Vec<Rule>,
    /// Secrets resolved (symlinks followed, missing tails kept).
    pub(crate) secrets: Vec<PathBuf>,
    /// What writable grants carve out (the per-command scratch dir included).
    pub(crate) write_exclusions: Vec<Exclusion>,
    looks: Vec<Look>,
    /// Components of paths that resolved to themselves: none may become a symlink.
    plain: Vec<PathBuf>,
    /// Entries whose resolution went through a symlink, and where to.
    relinks: Vec<(PathBuf, PathBuf)>,
    /// The mount table's generation when the carve read it, if it did.
    mount_generation: Option<u64>,
    /// Watches on what it depended on, once it is kept.
    watch: OnceLock<Watch>,
}

/// Watches on the directories a carve depended on.
#[derive(Debug)]
struct Watch {
    /// The watches, and whether a change was read from them (a change
    /// stays seen: the events are gone once read).
    queue: Mutex<(DirWatch, bool)>,
}

impl Watch {
    /// Watches each of `listed` (its listing), and for each of `listed`
    /// and `named`, its name in its parent, or where the parent is
    /// missing, the missing ancestor's name in the nearest existing one
    /// (where it would appear). None when any watch cannot be had.
    fn new<'a>(
        listed: impl Iterator<Item = &'a Path> + Clone,
        named: impl Iterator<Item = &'a Path>,
    ) -> Option<Watch> {
        let mut watch = DirWatch::new(NameAttributes::Ignore).ok()?;
        let missing = |e: &nix::Error| matches!(e, nix::Error::ENOENT | nix::Error::ENOTDIR);
        for dir in listed.clone() {
            match watch.watch_listing(dir) {
                Err(e) if !missing(&e) => return None,
                _ => {}
            }
        }
        for path in listed.chain(named) {
            let mut child = path;
            while let (Some(parent), Some(name)) = (child.parent(), child.file_name()) {
                match watch.watch_name(parent, name) {
                    Ok(()) => break,
                    Err(e) if missing(&e) => child = parent,
                    Err(_) => return None,
                }
            }
        }
        Some(Watch {
            queue: Mutex::new((watch, false)),
        })
    }

    /// Whether nothing changed since the watches were set.
    fn quiet(&self) -> bool {
        let mut queue = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (watch, changed) = &mut *queue;
        *changed = *changed || !matches!(watch.changed(), Ok(false));
        !*changed
    }
}

/// Records what a carve depends on while it is made.
#[derive(Debug, Default)]
pub(crate) struct Deps {
    dirs: Vec<PathBuf>,
    plain: Vec<PathBuf>,
    relinks: Vec<(PathBuf, PathBuf)>,
    mount_generation: Option<u64>,
}

impl Deps {
    /// A directory that was listed.
    pub(crate) fn listed(&mut self, dir: &Path) {
        self.dirs.push(dir.to_path_buf());
    }

    /// Resolves `path` like [`resolve_lenient`], recording its ancestors.
    pub(crate) fn resolve(&mut self, path: &Path) -> Result<PathBuf, RulesError> {
        let resolved = resolve_lenient(path)?;
        if resolved == path {
            self.plain.extend(path.ancestors().map(Path::to_path_buf));
        } else {
            self.relinks.push((path.to_path_buf(), resolved.clone()));
        }
        Ok(resolved)
    }

    /// The mount table now (empty when it cannot be read: then no alias is
    /// found); its generation is taken first, so a change while it is read
    /// redoes the carve at the next look.
    pub(crate) fn mount_table(&mut self) -> String {
        self.mount_generation = Some(crate::mounts::generation());
        fs::read_to_string(crate::mounts::MOUNTINFO).unwrap_or_default()
    }

    /// Directories the carve listed.
    pub(crate) fn dirs_mut(&mut self) -> &mut Vec<PathBuf> {
        &mut self.dirs
    }

    /// The finished carve, with the directories it depended on as they are now.
    pub(crate) fn seal(
        mut self,
        rules: Vec<Rule>,
        secrets: Vec<PathBuf>,
        write_exclusions: Vec<Exclusion>,
    ) -> Carved {
        self.dirs.sort();
        self.dirs.dedup();
        self.plain.sort();
        self.plain.dedup();
        Carved {
            rules,
            secrets,
            write_exclusions,
            looks: self.dirs.iter().map(|d| Look::take(d)).collect(),
            plain: self.plain,
            relinks: self.relinks,
            mount_generation: self.mount_generation,
            watch: OnceLock::new(),
        }
    }
}

impl Carved {
    /// Whether every directory it depended on is as it was: by its watches
    /// when it has them, else by looking again.
    fn current(&self) -> bool {
        self.watch
            .get()
            .map_or_else(|| self.looked_unchanged(), Watch::quiet)
            && self.resolved_unchanged()
    }

    /// Whether each listed directory looks as it did and no component of a
    /// plain path has become a symlink.
    fn looked_unchanged(&self) -> bool {
        self.looks
            .iter()
            .all(|look| Look::take(&look.path) == *look)
            && !self
                .plain
                .iter()
                .any(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
    }

    /// Whether paths resolved through symlinks resolve as they did, and the
    /// mount table is the one read.
    fn resolved_unchanged(&self) -> bool {
        self.relinks
            .iter()
            .all(|(path, was)| resolve_lenient(path).is_ok_and(|now| now == *was))
            && self
                .mount_generation
                .is_none_or(|was| was == crate::mounts::generation())
    }

    /// Whether it may be kept for later commands: every directory it
    /// depended on was last changed well before `started`. Its watches are
    /// set here, then everything is looked at once more: a change before
    /// they were set shows there, one after in their queue.
    fn keepable(&self, started: SystemTime) -> bool {
        if self.looks.iter().any(|look| look.racy(started)) {
            return false;
        }
        let listed = self.looks.iter().map(|look| look.path.as_path());
        let named = self.plain.iter().map(PathBuf::as_path);
        if let Some(watch) = Watch::new(listed, named) {
            let _ = self.watch.set(watch);
        }
        self.looked_unchanged() && self.resolved_unchanged()
    }
}

static CACHE: Mutex<Vec<(Key, Arc<Carved>)>> = Mutex::new(Vec::new());

/// How many descriptors the cache may hold: a quarter of the soft limit.
fn descriptor_budget() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit with a valid out pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    usize::try_from(limit.rlim_cur / 4).unwrap_or(usize::MAX)
}

/// The carve for `key`: a kept one whose directories are unchanged, or a
/// fresh one from `make` (kept when its directories were quiet).
pub(crate) fn carve(
    key: &Key,
    make: impl FnOnce() -> Result<Carved, crate::SandboxError>,
) -> Result<Arc<Carved>, crate::SandboxError> {
    let kept = {
        let cache = CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, carved)| Arc::clone(carved))
    };
    if let Some(carved) = kept.filter(|c| c.current()) {
        return Ok(carved);
    }
    let started = SystemTime::now();
    let carved = Arc::new(make()?);
    if carved.keepable(started) {
        let mut cache = CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.retain(|(k, _)| k != key);
        cache.insert(0, (key.clone(), Arc::clone(&carved)));
        let budget = descriptor_budget();
        let mut held = 0;
        let mut keep = 0;
        for (_, c) in cache.iter() {
            if keep == ENTRIES || held + c.rules.len() > budget {
                break;
            }
            held += c.rules.len();
            keep += 1;
        }
        cache.truncate(keep);
    }
    Ok(carved)
}

/// Whether `carved` is the carve kept for `key` (a later command with the
/// same key may reuse it).
pub(crate) fn is_kept(key: &Key, carved: &Arc<Carved>) -> bool {
    CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|(k, c)| k == key && Arc::ptr_eq(c, carved))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs_rules::{self, Grant};
    use std::cell::Cell;
    use std::os::unix::fs::PermissionsExt;

    fn key(home: &Path) -> Key {
        Key {
            restricted: true,
            reads: vec![home.to_path_buf()],
            home: home.to_path_buf(),
            writable_roots: Vec::new(),
            secrets: vec![PathBuf::from("a/b/key")],
            carved_protected: Vec::new(),
            can_mount: true,
        }
    }

    /// Carves `root` read-only with `root/a/b/key` out, counting the carves.
    fn make(root: &Path, made: &Cell<u32>) -> Result<Carved, crate::SandboxError> {
        made.set(made.get() + 1);
        let mut deps = Deps::default();
        let secret = deps.resolve(&root.join("a/b/key"))?;
        let grants = [Grant {
            path: root.to_path_buf(),
            access: fs_rules::read_rights(),
        }];
        let excl = [Exclusion {
            path: secret.clone(),
            withheld: fs_rules::secret_withheld(),
        }];
        let rules = fs_rules::carve(&grants, &excl, deps.dirs_mut())?;
        Ok(deps.seal(rules, vec![secret], Vec::new()))
    }

    #[test]
    fn unchanged_directories_reuse_the_carve_and_a_new_name_redoes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::create_dir_all(root.join("a/c")).unwrap();
        std::thread::sleep(RACY * 2);
        let made = Cell::new(0);
        let first = carve(&key(&root), || make(&root, &made)).unwrap();
        let again = carve(&key(&root), || make(&root, &made)).unwrap();
        assert_eq!(made.get(), 1);
        assert!(Arc::ptr_eq(&first, &again));
        assert!(
            !first
                .rules
                .iter()
                .any(|r| r.path.starts_with(root.join("a/b")) && r.path != root.join("a/b")),
            "nothing under the secret's directory exists yet"
        );

        // The secret appears where it was missing: its directory changed.
        fs::write(root.join("a/b/key"), "k").unwrap();
        let fresh = carve(&key(&root), || make(&root, &made)).unwrap();
        assert_eq!(made.get(), 2);
        assert!(!Arc::ptr_eq(&first, &fresh));
        // Changed moments ago: used, but not kept.
        carve(&key(&root), || make(&root, &made)).unwrap();
        assert_eq!(made.get(), 3);
    }

    #[test]
    fn a_kept_carve_is_checked_by_its_watches() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("a/notes"), "n").unwrap();
        std::thread::sleep(RACY * 2);
        let made = Cell::new(0);
        let kept = carve(&key(&root), || make(&root, &made)).unwrap();
        let watch = kept.watch.get().expect("a kept carve watches");
        assert!(watch.quiet());
        // A file's own attributes leave its directory as it was.
        fs::set_permissions(root.join("a/notes"), fs::Permissions::from_mode(0o600)).unwrap();
        assert!(watch.quiet(), "a child's attributes are no change");
        // A name beside a path the carve resolved is no change either.
        let beside = tempfile::NamedTempFile::new_in(root.parent().unwrap()).unwrap();
        assert!(watch.quiet(), "a new name beside the root is no change");
        drop(beside);
        assert!(Arc::ptr_eq(
            &kept,
            &carve(&key(&root), || make(&root, &made)).unwrap()
        ));
        assert_eq!(made.get(), 1);
        // A name made in a listed directory is, and stays, seen.
        fs::write(root.join("a/b/other"), "o").unwrap();
        assert!(!watch.quiet());
        assert!(!watch.quiet(), "a change read once stays seen");
        assert!(!kept.current());
    }

    #[test]
    fn a_directory_replaced_under_an_ancestor_redoes_the_carve() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::thread::sleep(RACY * 2);
        let made = Cell::new(0);
        let first = carve(&key(&root), || make(&root, &made)).unwrap();
        assert_eq!(made.get(), 1);
        // `a` becomes a link to another tree: the secret now lives there.
        fs::rename(root.join("a"), root.join("old")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("a")).unwrap();
        let fresh = carve(&key(&root), || make(&root, &made)).unwrap();
        assert_eq!(made.get(), 2);
        assert_eq!(fresh.secrets, [root.join("elsewhere/b/key")]);
        assert!(!Arc::ptr_eq(&first, &fresh));
    }
}
