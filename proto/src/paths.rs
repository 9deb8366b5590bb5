//! Where the daemon's socket, state and config live, in user and system mode.
//! Shared so the client finds exactly the socket the daemon binds.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// System config whose presence selects system mode.
pub const SYSTEM_CONFIG: &str = "/etc/praxis/praxis.toml";

/// How praxisd runs on this host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Per-user daemon, auto-started by `praxis-run`.
    User,
    /// One root daemon under systemd; never auto-started.
    System,
}

impl Mode {
    /// System mode when `PRAXIS_SYSTEM=1` or the system config exists; user mode otherwise.
    pub fn detect() -> Mode {
        match env::var_os("PRAXIS_SYSTEM") {
            Some(v) if v == "1" => Mode::System,
            Some(v) if v == "0" => Mode::User,
            _ if Path::new(SYSTEM_CONFIG).exists() => Mode::System,
            _ => Mode::User,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::User => "user",
            Mode::System => "system",
        }
    }
}

/// The daemon's directories and socket for one mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub mode: Mode,
    /// Directory holding the socket and lock files (mode 0700 in user mode).
    pub runtime_dir: PathBuf,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    pub config_dir: PathBuf,
}

fn var_dir(name: &str) -> Option<PathBuf> {
    env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

fn home() -> PathBuf {
    var_dir("HOME").unwrap_or_else(|| PathBuf::from("/"))
}

impl Layout {
    /// The layout for `mode` from the environment (XDG variables in user mode).
    /// `PRAXIS_SOCKET` overrides the socket path in either mode.
    pub fn for_mode(mode: Mode) -> Layout {
        let mut layout = match mode {
            Mode::System => Layout {
                mode,
                runtime_dir: PathBuf::from("/run/praxis"),
                socket: PathBuf::from("/run/praxis/praxisd.sock"),
                state_dir: PathBuf::from("/var/lib/praxis"),
                config_dir: PathBuf::from("/etc/praxis"),
            },
            Mode::User => {
                let runtime_dir = var_dir("XDG_RUNTIME_DIR")
                    .map(|d| d.join("praxis"))
                    .unwrap_or_else(|| {
                        PathBuf::from(format!("/tmp/praxis-{}", nix::unistd::getuid()))
                    });
                Layout {
                    mode,
                    socket: runtime_dir.join("praxisd.sock"),
                    runtime_dir,
                    state_dir: var_dir("XDG_STATE_HOME")
                        .unwrap_or_else(|| home().join(".local/state"))
                        .join("praxis"),
                    config_dir: var_dir("XDG_CONFIG_HOME")
                        .unwrap_or_else(|| home().join(".config"))
                        .join("praxis"),
                }
            }
        };
        if let Some(socket) = env::var_os("PRAXIS_SOCKET").filter(|s| !s.is_empty()) {
            layout.socket = PathBuf::from(socket);
        }
        layout
    }

    /// The layout of the detected mode.
    pub fn detect() -> Layout {
        Layout::for_mode(Mode::detect())
    }

    /// The door beside the socket: a datagram socket through which a
    /// client hands praxisd a connection it made itself (a socketpair),
    /// its request already written, so praxisd is woken once per request.
    pub fn door(&self) -> PathBuf {
        self.socket.with_file_name("praxisd-door.sock")
    }

    /// Lock held by the running daemon for its whole life (single instance).
    pub fn instance_lock(&self) -> PathBuf {
        self.runtime_dir.join("praxisd.lock")
    }

    /// Lock a client holds while it auto-starts the daemon, so concurrent
    /// clients start one.
    pub fn autostart_lock(&self) -> PathBuf {
        self.runtime_dir.join("autostart.lock")
    }

    /// Where each command's private `TMPDIR` is made: beside the state dir,
    /// on disk, and not in the shared `/tmp`, whose every change would make
    /// the sandbox re-walk the directories around secrets kept under it.
    pub fn scratch_root(&self) -> PathBuf {
        self.state_dir.with_file_name("praxis-scratch")
    }

    /// Where the private `/tmp` and `/var/tmp` of each session (or of each
    /// workspace, for commands run without a session) are kept: beside the
    /// state dir, on disk; a command sees its own at `/tmp` and `/var/tmp`.
    pub fn private_tmp_root(&self) -> PathBuf {
        self.state_dir.with_file_name("praxis-tmp")
    }

    /// Where the egress proxy's CA certificate and the trust bundle that
    /// includes it are kept for sandboxed commands to read: beside the state
    /// dir, which commands can never read (the CA's key stays there).
    pub fn egress_public_dir(&self) -> PathBuf {
        self.state_dir.with_file_name("praxis-egress")
    }

    /// Default kill switch file.
    pub fn default_kill_file(&self) -> PathBuf {
        self.state_dir.join("KILL")
    }

    /// The audit database.
    pub fn audit_db(&self) -> PathBuf {
        self.state_dir.join("audit.db")
    }

    /// The spill journal beside the audit store: refusals that could not be
    /// committed (or, from clients, sent) wait there to join the chain.
    pub fn audit_spill(&self) -> PathBuf {
        self.state_dir.join("audit.spill")
    }
}

/// Collects the part of the current environment a client forwards for its
/// command: the names `forwarded` keeps (the policy's environment table,
/// given by the caller, which sits above this crate).
pub fn forwarded_env(forwarded: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    env::vars_os()
        .filter_map(|(k, v): (OsString, OsString)| {
            Some((k.into_string().ok()?, v.into_string().ok()?))
        })
        .filter(|(k, _)| forwarded(k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_layout_is_fixed() {
        let l = Layout::for_mode(Mode::System);
        assert_eq!(l.state_dir, PathBuf::from("/var/lib/praxis"));
        assert_eq!(l.config_dir, PathBuf::from("/etc/praxis"));
        assert_eq!(l.default_kill_file(), PathBuf::from("/var/lib/praxis/KILL"));
    }
}
