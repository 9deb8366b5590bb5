//! The contract-preconditions stage: gathers the host snapshot the rules'
//! preconditions are decided on (canonical cwd from the passed directory
//! descriptor, the peer's home, workspace, git branch, where each program
//! resolves on the request's `PATH`, which named paths exist). The policy then
//! decides from this snapshot alone.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use praxis_policy::{Analysis, Context, Policy, Resolution};
use praxis_sandbox::host;

use crate::config::Config;

/// `PATH` used when the client sent none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

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

/// The home directory of `uid` from the user database.
pub fn home_of(uid: u32) -> Result<PathBuf, PreconditionError> {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.dir)
        .ok_or(PreconditionError::NoHome(uid))
}

/// `~/x` against `home`; other paths as they are.
pub fn expand_home(path: &str, home: &Path) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None if path == "~" => home.to_path_buf(),
        None => PathBuf::from(path),
    }
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
    let workspace = host::workspace_of(&cwd);
    let git_root = host::git_root(&cwd);
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
                Some(path) => Resolution::Found {
                    in_writable_root: host::is_inside_any(&path, &writable),
                    path,
                },
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
    fn expands_home() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_home("~/.cache", home),
            PathBuf::from("/home/u/.cache")
        );
        assert_eq!(expand_home("/opt/x", home), PathBuf::from("/opt/x"));
    }
}
