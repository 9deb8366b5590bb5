//! The host snapshot a decision is computed from. Gathered by the caller (the
//! daemon's preconditions stage, or `praxis explain`), never by this crate.

use std::collections::BTreeMap;
use std::path::PathBuf;

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
    /// Program name to its `PATH` resolution, for [`crate::Analysis::programs`].
    /// A program absent from this map has not been looked up: it is held as
    /// unknown, unless [`Context::resolution_skipped`] is set.
    pub resolved: BTreeMap<String, Resolution>,
    /// The caller deliberately did no `PATH` lookups (pure evaluation: tests,
    /// the regression corpus, benchmarks): programs absent from `resolved` are
    /// taken as found outside any writable tree. Never set this when serving.
    pub resolution_skipped: bool,
    /// Paths (absolute) the caller checked and found to exist.
    pub existing: Vec<PathBuf>,
}
