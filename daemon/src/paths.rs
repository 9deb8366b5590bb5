//! Host path conventions shared by the stage that gathers a request's
//! context and the one that builds its sandbox.

use std::path::{Path, PathBuf};

/// `PATH` used when the client sent none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `~/x` against `home`; other paths as they are.
pub fn expand_home(path: &str, home: &Path) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None if path == "~" => home.to_path_buf(),
        None => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_home() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_home("~/.cache", home),
            PathBuf::from("/home/u/.cache")
        );
        assert_eq!(expand_home("~", home), PathBuf::from("/home/u"));
        assert_eq!(expand_home("/opt/x", home), PathBuf::from("/opt/x"));
    }
}
