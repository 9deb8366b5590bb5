//! The error of a cgroup file operation, in either hierarchy.

use std::io;
use std::path::{Path, PathBuf};

/// A failed cgroup operation.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {source}", path.display())]
pub struct CgroupError {
    /// What was being done.
    what: &'static str,
    /// The cgroup file or directory.
    path: PathBuf,
    /// The error.
    #[source]
    source: io::Error,
}

impl CgroupError {
    pub(crate) fn at(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CgroupError {
        let path = path.to_path_buf();
        move |source| CgroupError { what, path, source }
    }
}
