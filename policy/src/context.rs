//! The host snapshot a decision is computed from. Gathered by the caller (the
//! daemon's preconditions stage, or `praxis explain`), never by this crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a program name resolves on the request's `PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// No executable of that name on `PATH`.
    NotFound,
    /// Resolved to `path`; `in_writable_root` is true when that file sits inside a
    /// tree the sandboxed command could write (a planted `git` or `ls`).
    Found {
        path: PathBuf,
        in_writable_root: bool,
    },
    /// Resolved, inside a writable tree, to an entry point of a Python
    /// virtual environment there (a script whose interpreter is that
    /// environment's own `python`, as pip and uv write them). It runs the
    /// environment's code, as `python -m` from the same environment does, so
    /// it is judged as the program it names rather than as a planted one.
    VirtualEnvEntry { path: PathBuf },
}

impl Resolution {
    /// A program found at `path`. `is_virtualenv_entry` is asked only about
    /// one inside a writable tree.
    pub fn found(
        path: PathBuf,
        in_writable_root: bool,
        is_virtualenv_entry: impl FnOnce(&Path) -> bool,
    ) -> Resolution {
        if in_writable_root && is_virtualenv_entry(&path) {
            Resolution::VirtualEnvEntry { path }
        } else {
            Resolution::Found {
                path,
                in_writable_root,
            }
        }
    }
}

/// Everything `policy` may know about the host when deciding.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The request's working directory (absolute, canonical).
    pub cwd: PathBuf,
    /// The requesting user's home directory.
    pub home: PathBuf,
    /// The workspace: git root of `cwd`, else `cwd` itself.
    pub workspace: PathBuf,
    /// Whether `cwd` is inside a git work tree.
    pub in_git_work_tree: bool,
    /// Current branch when `cwd` is in a git work tree (None when detached).
    pub git_branch: Option<String>,
    /// The repository's default branch when known (e.g. from `origin/HEAD`).
    pub git_default_branch: Option<String>,
    /// Praxis' own state and config directories: always protected.
    pub praxis_dirs: Vec<PathBuf>,
    /// Praxis' own ports on this machine (its TCP API): never reachable
    /// from a command, whatever `[loopback]` opens.
    pub praxis_ports: Vec<u16>,
    /// Program name to its `PATH` resolution, for `Analysis::programs`.
    /// A program absent from this map has not been looked up: it is held as
    /// unknown, unless [`Context::resolution_skipped`] is set.
    pub resolved: BTreeMap<String, Resolution>,
    /// The caller deliberately did no `PATH` lookups (pure evaluation: tests,
    /// the regression corpus, benchmarks): programs absent from `resolved` are
    /// taken as found outside any writable tree. Never set this when serving.
    pub resolution_skipped: bool,
    /// Trees the host lets every command read besides the policy's read
    /// trees (a site's `[sandbox] reads`): reads inside them need no grant.
    pub reads: Vec<PathBuf>,
    /// Paths (absolute) the caller checked and found to exist.
    pub existing: Vec<PathBuf>,
    /// The repository's remotes, name to URL (from its git config), so
    /// `git fetch` knows where it connects.
    pub git_remotes: BTreeMap<String, String>,
    /// The repository's own config file (see [`git_config_file`]): what a
    /// decision on a command that changes it grants.
    pub git_config: Option<PathBuf>,
    /// Programs named by a path inside a tree the request can write (of
    /// `Probes::tools`) that the host found to be a
    /// project's own tool, as its package manager installed it (a virtual
    /// environment's entry point, a `node_modules/.bin` link): the absolute
    /// path to the program name it is judged as. Any other such program is
    /// judged as the workspace's own code.
    pub tools: BTreeMap<PathBuf, String>,
    /// Paths the request names (of `Probes::named`) that the
    /// host resolves, through symbolic links, to another file: the path as
    /// named to the file it leads to. A link to a secret reads the secret.
    pub links: BTreeMap<PathBuf, PathBuf>,
}

/// The config file of the repository whose work tree is `work_tree`, as
/// `git config` without a scope flag writes it, read with `read` (a file's
/// text, None when unreadable or a directory): `.git/config`, or for a
/// linked work tree or a submodule the config of the common directory its
/// `.git` file leads to (`gitdir:`, then that dir's `commondir`). Absolute
/// and normalized; None when the `.git` file says nothing usable.
pub fn git_config_file(
    work_tree: &Path,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<PathBuf> {
    let dot_git = work_tree.join(".git");
    let config = match read(&dot_git) {
        Some(text) => {
            let dir = text.trim().strip_prefix("gitdir:").map(str::trim)?;
            let git_dir = work_tree.join(dir);
            let common = read(&git_dir.join("commondir"))
                .map(|c| git_dir.join(c.trim()))
                .unwrap_or(git_dir);
            common.join("config")
        }
        None => dot_git.join("config"),
    };
    Some(PathBuf::from(crate::lexical::normalize(
        &config.to_string_lossy(),
    )))
}

/// The remotes (name to URL) of the repository whose work tree is
/// `work_tree`, read with `read` from its [`git_config_file`].
pub fn git_remotes(
    work_tree: &Path,
    read: impl Fn(&Path) -> Option<String>,
) -> BTreeMap<String, String> {
    git_config_file(work_tree, &read)
        .and_then(|config| read(&config))
        .map(|t| remotes_of_config(&t))
        .unwrap_or_default()
}

/// `[remote "name"] url = …` entries of a git config file's text (the first
/// `url` of each remote, as git fetches from it).
pub fn remotes_of_config(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut remote: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            remote = line
                .strip_prefix("[remote")
                .and_then(|r| r.trim().strip_prefix('"'))
                .and_then(|r| r.split_once('"'))
                .map(|(name, _)| name.to_owned());
            continue;
        }
        let Some(name) = &remote else { continue };
        if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("url")
        {
            let value = value.trim().trim_matches('"').to_owned();
            out.entry(name.clone()).or_insert(value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_come_from_the_config_and_linked_work_trees() {
        let config = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@github.com:acme/app.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[remote \"up\"]\n\turl = \"https://gitlab.com/acme/app\"\n[branch \"main\"]\n\tremote = origin\n\turl = nope\n";
        let remotes = remotes_of_config(config);
        assert_eq!(remotes.len(), 2);
        assert_eq!(remotes["origin"], "git@github.com:acme/app.git");
        assert_eq!(remotes["up"], "https://gitlab.com/acme/app");
        let files: BTreeMap<PathBuf, String> = [
            ("/w/.git".into(), "gitdir: /r/.git/worktrees/w\n".to_owned()),
            ("/r/.git/worktrees/w/commondir".into(), "../..\n".to_owned()),
            ("/r/.git/config".into(), config.to_owned()),
        ]
        .into();
        let read = |p: &Path| {
            let normal = crate::lexical::normalize(&p.to_string_lossy());
            files.get(Path::new(&normal)).cloned()
        };
        assert_eq!(git_remotes(Path::new("/w"), read).len(), 2);
        assert!(git_remotes(Path::new("/elsewhere"), read).is_empty());
        assert_eq!(
            git_config_file(Path::new("/w"), read),
            Some(PathBuf::from("/r/.git/config")),
            "a linked work tree writes the common directory's config"
        );
        assert_eq!(
            git_config_file(Path::new("/plain"), read),
            Some(PathBuf::from("/plain/.git/config"))
        );
        let submodule = |p: &Path| {
            (p == Path::new("/top/sub/.git")).then(|| "gitdir: ../.git/modules/sub\n".to_owned())
        };
        assert_eq!(
            git_config_file(Path::new("/top/sub"), submodule),
            Some(PathBuf::from("/top/.git/modules/sub/config"))
        );
        let garbled = |p: &Path| (p == Path::new("/g/.git")).then(|| "nonsense".to_owned());
        assert_eq!(git_config_file(Path::new("/g"), garbled), None);
    }
}
