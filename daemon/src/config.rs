//! The daemon's own configuration: its layout (user or system mode) and the
//! optional `praxis.toml` in the config directory. Policy is loaded apart, by
//! [`crate::reload`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use praxis_proto::{Layout, Mode};
use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// `praxis.toml`, all keys optional, unknown keys rejected.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Kill switch file (default `<state dir>/KILL`).
    kill_file: Option<PathBuf>,
    /// Shell that runs `-c` strings (default bash where installed, else /bin/sh).
    shell: Option<PathBuf>,
    /// Group whose members may run operator commands in system mode.
    operator_group: Option<String>,
    /// Grace between SIGTERM and SIGKILL when the daemon ends a command.
    kill_grace_ms: Option<u64>,
}

/// Everything the daemon needs to know about where it lives and how it runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub layout: Layout,
    pub kill_file: PathBuf,
    pub shell: PathBuf,
    pub operator_group: String,
    pub kill_grace: Duration,
}

/// The config file name inside the config directory.
pub const CONFIG_FILE: &str = "praxis.toml";
/// The operator's policy file inside the config directory.
pub const POLICY_FILE: &str = "policy.toml";

fn default_shell() -> PathBuf {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

impl Config {
    /// Loads `praxis.toml` from the layout's config dir when present.
    pub fn load(layout: Layout) -> Result<Config, ConfigError> {
        let path = layout.config_dir.join(CONFIG_FILE);
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str::<File>(&text).map_err(|e| ConfigError::Invalid {
                path: path.display().to_string(),
                message: crate::errors::one_line(&e),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        Ok(Config {
            kill_file: file.kill_file.unwrap_or_else(|| layout.default_kill_file()),
            shell: file.shell.unwrap_or_else(default_shell),
            operator_group: file
                .operator_group
                .unwrap_or_else(|| String::from("praxis")),
            kill_grace: Duration::from_millis(file.kill_grace_ms.unwrap_or(50)),
            layout,
        })
    }

    pub fn mode(&self) -> Mode {
        self.layout.mode
    }

    pub fn policy_file(&self) -> PathBuf {
        self.layout.config_dir.join(POLICY_FILE)
    }

    pub fn config_dir(&self) -> &Path {
        &self.layout.config_dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dir: &Path) -> Layout {
        Layout {
            mode: Mode::User,
            runtime_dir: dir.join("run"),
            socket: dir.join("run/s.sock"),
            state_dir: dir.join("state"),
            config_dir: dir.to_path_buf(),
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.kill_file, tmp.path().join("state/KILL"));
        std::fs::write(
            tmp.path().join(CONFIG_FILE),
            "kill_file = \"/x/STOP\"\nkill_grace_ms = 10\n",
        )
        .unwrap();
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.kill_file, PathBuf::from("/x/STOP"));
        assert_eq!(c.kill_grace, Duration::from_millis(10));
    }

    #[test]
    fn unknown_keys_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(CONFIG_FILE), "kill_fiel = \"/x\"\n").unwrap();
        assert!(matches!(
            Config::load(layout(tmp.path())),
            Err(ConfigError::Invalid { .. })
        ));
    }
}
