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

use nix::fcntl::{AT_FDCWD, OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::fstat;
use praxis_policy::context::{git_config_file, remotes_of_config};
use praxis_policy::{Analysis, Context, Policy, Resolution};
use praxis_proto::ExecRequest;
use praxis_sandbox::host;

use crate::config::Config;
use crate::paths::{DEFAULT_PATH, expand_home};
use crate::private_tmp;
use crate::program_cache::ProgramCache;

/// Roots a sandboxed command could write besides the workspace, caches and
/// its private `/tmp`; a program resolved inside one of them may have been
/// planted.
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
///
/// The client's own name for it, `claimed`, is that name when it is
/// absolute, has no `.` or `..` and no symbolic link on the way, and leads
/// to the very directory the descriptor holds (device and inode, which a
/// held directory keeps). Else, or when the client said nothing, the kernel
/// is asked through `/proc`, whose entries for this process it makes on
/// the way: several times the cost of that check.
pub fn cwd_of(fd: &OwnedFd, claimed: &str) -> Result<PathBuf, PreconditionError> {
    if names_held_dir(fd, claimed) {
        return Ok(PathBuf::from(claimed));
    }
    let target = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(PreconditionError::Cwd)?;
    if target.to_string_lossy().ends_with(" (deleted)") || !target.is_absolute() {
        return Err(PreconditionError::CwdDeleted);
    }
    Ok(target)
}

/// Whether `claimed` is the kernel's name of the directory `fd` holds (see
/// [`cwd_of`]).
fn names_held_dir(fd: &OwnedFd, claimed: &str) -> bool {
    let plain = claimed == "/"
        || (claimed.starts_with('/')
            && claimed[1..]
                .split('/')
                .all(|part| !matches!(part, "" | "." | "..")));
    if !plain {
        return false;
    }
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let Ok(named) = openat2(AT_FDCWD, claimed, how) else {
        return false;
    };
    match (fstat(fd), fstat(&named)) {
        (Ok(held), Ok(found)) => (held.st_dev, held.st_ino) == (found.st_dev, found.st_ino),
        _ => false,
    }
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

/// Where a path the command sees lies on the host: one in `/tmp` or
/// `/var/tmp` in the private ones under `tmp_dir`, unless it is in the
/// workspace or home (a home kept under `/tmp` is judged as a home).
fn on_host(seen: &Path, tmp_dir: &Path, own: [&Path; 2]) -> PathBuf {
    if own.iter().any(|tree| seen.starts_with(tree)) {
        return seen.to_path_buf();
    }
    private_tmp::host_path(tmp_dir, seen).unwrap_or_else(|| seen.to_path_buf())
}

/// The request gives the command's `PATH` and its session, which names
/// its private `/tmp`.
pub fn gather(
    policy: &Policy,
    analysis: &Analysis,
    config: &Config,
    programs: &ProgramCache,
    cwd_dir: &OwnedFd,
    uid: u32,
    request: &ExecRequest,
) -> Result<Gathered, PreconditionError> {
    let cwd = cwd_of(cwd_dir, &request.cwd)?;
    let home = home_of(uid)?;
    // The workspace is the git root when there is one: one walk, not two.
    let git_root = host::git_root(&cwd);
    let workspace = git_root.clone().unwrap_or_else(|| cwd.clone());
    let path_var = request
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| OsString::from(v))
        .unwrap_or_else(|| OsString::from(DEFAULT_PATH));

    // The command's /tmp and /var/tmp: its paths there lie under this dir.
    let tmp_dir = private_tmp::dir_for(&config.layout, request.session.as_deref(), &workspace);
    let (private_tmp, private_var_tmp) = private_tmp::mounts_of(&tmp_dir);
    // Writable besides the workspace: a program found in one may have been planted.
    let writable: Vec<PathBuf> = SHARED_WRITABLE
        .iter()
        .map(PathBuf::from)
        .chain([private_tmp, private_var_tmp])
        .chain(
            policy
                .sandbox_lists()
                .writable_caches
                .iter()
                .map(|c| expand_home(c, &home)),
        )
        .collect();

    // A bare name found through `PATH` in /tmp is found in the private one.
    let own = [workspace.as_path(), home.as_path()];
    let search = std::env::join_paths(
        std::env::split_paths(&path_var).map(|entry| on_host(&entry, &tmp_dir, own)),
    )
    .unwrap_or_else(|_| path_var.clone());
    let resolved: BTreeMap<String, Resolution> = analysis
        .programs()
        .into_iter()
        .map(|name| {
            let resolution = match programs.resolve(&name, &search, &cwd, &writable, &workspace) {
                Some((path, in_writable_root)) => {
                    Resolution::found(path, in_writable_root, host::is_virtualenv_entry)
                }
                None => Resolution::NotFound,
            };
            (name, resolution)
        })
        .collect();

    let git_config = git_root
        .as_deref()
        .and_then(|r| git_config_file(r, |p| fs::read_to_string(p).ok()));
    let mut context = Context {
        in_git_work_tree: git_root.is_some(),
        git_branch: git_root.as_deref().and_then(host::git_branch),
        git_default_branch: git_root.as_deref().and_then(host::git_default_branch),
        praxis_dirs: vec![
            config.layout.state_dir.clone(),
            config.layout.config_dir.clone(),
        ],
        praxis_ports: config.praxis_ports(),
        // The site's read trees: reads inside them need no grant.
        reads: config.sandbox_reads.clone(),
        git_remotes: git_config
            .as_deref()
            .and_then(|c| fs::read_to_string(c).ok())
            .map(|text| remotes_of_config(&text))
            .unwrap_or_default(),
        // Where `git config`, `git remote add` … write: granted when they are allowed.
        git_config,
        resolved,
        existing: Vec::new(),
        cwd,
        home,
        workspace,
        // Everything else stays at its default; in particular PATH lookups
        // are never marked as skipped when serving.
        ..Context::default()
    };
    // Paths as the command sees them, looked up where they lie on the host.
    let own = [context.workspace.as_path(), context.home.as_path()];
    let probes = policy.probes(analysis, &context);
    if probes.existence {
        context.existing = probes
            .named
            .iter()
            .filter(|p| on_host(p, &tmp_dir, own).exists())
            .cloned()
            .collect();
    }
    // Paths that lead elsewhere through symbolic links: judged as what they
    // lead to as well (a link in the workspace to a secret).
    context.links = answered(probes.named, |p| {
        host::link_target(&on_host(p, &tmp_dir, own))
    });
    // Programs named by a path in a writable tree (`/tmp/a.out` in the
    // private /tmp too): a project's own tool?
    context.tools = answered(probes.tools, |p| host::own_tool(&on_host(p, &tmp_dir, own)));
    Ok(Gathered { context, path_var })
}

/// Each of `paths` with the host's answer `ask` gives about it, for those
/// it answers.
fn answered<T>(paths: Vec<PathBuf>, ask: impl Fn(&Path) -> Option<T>) -> BTreeMap<PathBuf, T> {
    paths
        .into_iter()
        .filter_map(|p| {
            let answer = ask(&p)?;
            Some((p, answer))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_comes_from_the_descriptor() {
        let tmp = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(tmp.path()).unwrap();
        let dir: OwnedFd = std::fs::File::open(tmp.path()).unwrap().into();
        assert_eq!(cwd_of(&dir, "").unwrap(), real);
        drop(tmp);
        assert!(matches!(
            cwd_of(&dir, ""),
            Err(PreconditionError::CwdDeleted)
        ));
    }

    #[test]
    fn a_claimed_cwd_is_taken_only_when_it_is_the_kernels_name() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let work = root.join("work");
        let other = root.join("other");
        fs::create_dir_all(work.join("sub")).unwrap();
        fs::create_dir(&other).unwrap();
        std::os::unix::fs::symlink(&work, root.join("link")).unwrap();
        let dir: OwnedFd = std::fs::File::open(&work).unwrap().into();
        let name = |p: &Path| p.to_str().unwrap().to_owned();
        assert_eq!(cwd_of(&dir, &name(&work)).unwrap(), work);
        // Another directory, a link to this one, a way round through `..`,
        // a relative or doubled-up spelling: each is answered by the kernel.
        for lie in [
            name(&other),
            name(&root.join("link")),
            format!("{}/sub/..", work.display()),
            format!("{}//", work.display()),
            format!("{}/.", work.display()),
            String::from("work"),
        ] {
            assert_eq!(cwd_of(&dir, &lie).unwrap(), work, "{lie}");
        }
        // A directory put where the deleted one was is not it.
        fs::remove_dir_all(&work).unwrap();
        fs::create_dir(&work).unwrap();
        assert!(matches!(
            cwd_of(&dir, &name(&work)),
            Err(PreconditionError::CwdDeleted)
        ));
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
