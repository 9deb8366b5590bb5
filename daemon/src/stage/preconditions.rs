//! The contract-preconditions stage: gathers the host snapshot the rules'
//! preconditions are decided on (canonical cwd from the passed directory
//! descriptor, the peer's home, workspace, git branch, where each program
//! resolves on the request's `PATH`, which named paths exist). The policy then
//! decides from this snapshot alone.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use praxis_policy::context::{Entry, git_remotes};
use praxis_policy::{Analysis, Context, Policy, Resolution};
use praxis_sandbox::host;

use crate::config::Config;
use crate::paths::{DEFAULT_PATH, expand_home};

/// Roots a sandboxed command could write besides the workspace and caches;
/// a program resolved inside one of them may have been planted.
const SHARED_WRITABLE: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

#[derive(Debug, thiserror::Error)]
pub enum PreconditionError {
    #[error("cannot resolve the working directory: {0}")]
    Cwd(std::io::Error),
    #[error("working directory no longer exists")]
    CwdDeleted,
    #[error("no home directory for uid {0}")]
    NoHome(u32),
}

/// The snapshot plus what the later stages reuse.
#[derive(Debug)]
pub struct Gathered {
    pub context: Context,
    pub path_var: OsString,
}

/// The directory a passed descriptor refers to, as the kernel names it.
pub fn cwd_of(fd: &OwnedFd) -> Result<PathBuf, PreconditionError> {
    let target = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(PreconditionError::Cwd)?;
    if target.to_string_lossy().ends_with(" (deleted)") || !target.is_absolute() {
        return Err(PreconditionError::CwdDeleted);
    }
    Ok(target)
}

/// How long a looked-up home directory is reused while `/etc/passwd` is
/// unchanged; bounds how stale an entry from another user database can be.
const HOME_TTL: Duration = Duration::from_secs(30);

/// The last home directory looked up, and what it was looked up against.
struct HomeEntry {
    uid: u32,
    passwd: Option<(u64, u64, i64, i64, u64)>,
    at: Instant,
    home: PathBuf,
}

/// Nearly every request is from the same uid; one entry saves reading and
/// parsing the user database per request.
static HOME_CACHE: Mutex<Option<HomeEntry>> = Mutex::new(None);

/// Identity and change time of `/etc/passwd`, so an edit is seen at once.
fn passwd_stamp() -> Option<(u64, u64, i64, i64, u64)> {
    fs::metadata("/etc/passwd")
        .ok()
        .map(|m| (m.dev(), m.ino(), m.mtime(), m.mtime_nsec(), m.size()))
}

/// The home directory of `uid` from the user database.
pub fn home_of(uid: u32) -> Result<PathBuf, PreconditionError> {
    let passwd = passwd_stamp();
    let mut cache = HOME_CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(entry) = cache.as_ref()
        && entry.uid == uid
        && entry.passwd == passwd
        && entry.at.elapsed() < HOME_TTL
    {
        return Ok(entry.home.clone());
    }
    let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.dir)
        .ok_or(PreconditionError::NoHome(uid))?;
    *cache = Some(HomeEntry {
        uid,
        passwd,
        at: Instant::now(),
        home: home.clone(),
    });
    Ok(home)
}

/// Whether `path` lies inside any of `roots`, compared by directory identity
/// (device, inode): each root as the kernel resolves it against every
/// ancestor of the canonical `path`, so a symlinked root or `PATH` entry
/// cannot hide a planted binary. One `stat` per root and per ancestor, where
/// canonicalizing every root costs a `readlink` per component.
fn inside_any(path: &Path, roots: &[PathBuf]) -> bool {
    let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let ancestors: Vec<(u64, u64)> = canonical
        .ancestors()
        .filter_map(|dir| fs::metadata(dir).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    roots
        .iter()
        .filter_map(|root| fs::metadata(root).ok())
        .any(|m| ancestors.contains(&(m.dev(), m.ino())))
}

pub fn gather(
    policy: &Policy,
    analysis: &Analysis,
    config: &Config,
    cwd_dir: &OwnedFd,
    uid: u32,
    env: &[(String, String)],
) -> Result<Gathered, PreconditionError> {
    let cwd = cwd_of(cwd_dir)?;
    let home = home_of(uid)?;
    // The workspace is the git root when there is one: one walk, not two.
    let git_root = host::git_root(&cwd);
    let workspace = git_root.clone().unwrap_or_else(|| cwd.clone());
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .unwrap_or_else(|| OsString::from(DEFAULT_PATH));

    let mut writable: Vec<PathBuf> = vec![workspace.clone()];
    writable.extend(SHARED_WRITABLE.iter().map(PathBuf::from));
    writable.extend(
        policy
            .sandbox_lists()
            .writable_caches
            .iter()
            .map(|c| expand_home(c, &home)),
    );

    let resolved: BTreeMap<String, Resolution> = analysis
        .programs()
        .into_iter()
        .map(|name| {
            let resolution = match host::resolve_program(&name, &path_var, &cwd) {
                Some(path) => {
                    let in_writable_root = inside_any(&path, &writable);
                    Resolution::found(path, in_writable_root, host::is_virtualenv_entry)
                }
                None => Resolution::NotFound,
            };
            (name, resolution)
        })
        .collect();

    let mut context = Context {
        in_git_work_tree: git_root.is_some(),
        git_branch: git_root.as_deref().and_then(host::git_branch),
        git_default_branch: git_root.as_deref().and_then(host::git_default_branch),
        praxis_dirs: vec![
            config.layout.state_dir.clone(),
            config.layout.config_dir.clone(),
        ],
        git_remotes: git_root
            .as_deref()
            .map(|r| git_remotes(r, |p| fs::read_to_string(p).ok()))
            .unwrap_or_default(),
        resolved,
        existing: Vec::new(),
        cwd,
        home,
        workspace,
        // Everything else stays at its default; in particular PATH lookups
        // are never marked as skipped when serving.
        ..Context::default()
    };
    context.existing = policy
        .paths_to_probe(analysis, &context)
        .into_iter()
        .filter(|p| p.exists())
        .collect();
    // Literal /tmp paths the command writes: new, or the caller's own all the way down?
    context.scratch = policy.scratch_states(analysis, &context, uid, |p| {
        fs::symlink_metadata(p)
            .ok()
            .map(|m| Entry::from_mode(m.uid(), m.mode()))
    });
    Ok(Gathered { context, path_var })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_comes_from_the_descriptor() {
        let tmp = tempfile::tempdir().unwrap();
        let dir: OwnedFd = std::fs::File::open(tmp.path()).unwrap().into();
        assert_eq!(
            cwd_of(&dir).unwrap(),
            std::fs::canonicalize(tmp.path()).unwrap()
        );
        drop(tmp);
        assert!(matches!(cwd_of(&dir), Err(PreconditionError::CwdDeleted)));
    }

    #[test]
    fn inside_any_sees_through_symlinks_both_ways() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        let other = tmp.path().join("other");
        fs::create_dir_all(real.join("bin")).unwrap();
        fs::create_dir_all(&other).unwrap();
        let program = real.join("bin/tool");
        fs::write(&program, "").unwrap();
        // A symlinked PATH entry into the root.
        let via = tmp.path().join("via");
        std::os::unix::fs::symlink(real.join("bin"), &via).unwrap();
        // A root that is itself a symlink.
        let root_link = tmp.path().join("root-link");
        std::os::unix::fs::symlink(&real, &root_link).unwrap();

        assert!(inside_any(&via.join("tool"), std::slice::from_ref(&real)));
        assert!(inside_any(&program, &[root_link]));
        assert!(inside_any(&program, std::slice::from_ref(&program)));
        assert!(!inside_any(&via.join("tool"), std::slice::from_ref(&other)));
        assert!(!inside_any(&program, &[tmp.path().join("missing")]));
        assert!(!inside_any(&other, &[real]));
    }

    #[test]
    fn home_is_looked_up_and_reused() {
        let uid = nix::unistd::geteuid().as_raw();
        let first = home_of(uid).unwrap();
        assert!(first.is_absolute());
        assert_eq!(home_of(uid).unwrap(), first);
        assert!(matches!(
            home_of(u32::MAX - 7),
            Err(PreconditionError::NoHome(_))
        ));
        // A different uid in between does not serve the cached entry.
        assert_eq!(home_of(uid).unwrap(), first);
    }
}
