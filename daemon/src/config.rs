//! The daemon's own configuration: its layout (user or system mode) and the
//! optional `praxis.toml` in the config directory. Policy is loaded apart,
//! by the reload module, which reads this configuration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use praxis_policy::{Destination, Tier};
use praxis_proto::{CredentialBinding, CredentialSource, CredentialSpec, Layout, Mode};
use serde::Deserialize;

pub mod fleet;

pub use fleet::{Fleet, FleetUrl};

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
    /// How long an approval stays usable when `praxis approve` names no ttl.
    approval_ttl_secs: Option<u64>,
    /// How long a connection may stay silent (or half-send its request)
    /// before praxisd drops it.
    idle_timeout_ms: Option<u64>,
    #[serde(default)]
    roles: RolesFile,
    #[serde(default)]
    retry_budget: BudgetFile,
    #[serde(default)]
    credentials: Vec<CredentialFile>,
    #[serde(default)]
    snapshots: SnapshotsFile,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    egress: EgressFile,
    #[serde(default)]
    api: ApiFile,
    #[serde(default)]
    console: ConsoleFile,
    #[serde(default)]
    sandbox: SandboxFile,
    #[serde(default)]
    tmp: TmpFile,
    #[serde(default)]
    fleet: fleet::FleetFile,
}

/// `[tmp]`: the private `/tmp` and `/var/tmp` of each session.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TmpFile {
    /// Hours a private tmp dir is kept after its last use (default 168, 7 days).
    retention_hours: Option<u64>,
}

/// How long a private tmp dir is kept after its last use by default.
pub const DEFAULT_TMP_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// `[sandbox]`: what this site adds to the read allow-list of
/// `patterns.toml` (a shared toolchain dir, say).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SandboxFile {
    /// Absolute trees every command may read too.
    #[serde(default)]
    reads: Vec<PathBuf>,
}

/// `[limits]`: each command's ceilings, for its whole process tree.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    /// Processes and threads (default 1024).
    pids_max: Option<u64>,
    /// Memory in MiB (default 8192).
    memory_max_mib: Option<u64>,
}

impl LimitsFile {
    fn into_limits(self) -> Result<praxis_sandbox::Limits, String> {
        let base = praxis_sandbox::Limits::default();
        let limits = praxis_sandbox::Limits {
            pids: self.pids_max.unwrap_or(base.pids),
            memory_bytes: self
                .memory_max_mib
                .map_or(base.memory_bytes, |m| m.saturating_mul(1 << 20)),
        };
        // A shell needs a few processes and some memory to start at all.
        if limits.pids < 8 || limits.memory_bytes < 64 << 20 {
            return Err(String::from(
                "[limits] needs pids_max of at least 8 and memory_max_mib of at least 64",
            ));
        }
        Ok(limits)
    }
}

/// `[egress]`: how the egress proxy reaches upstream hosts.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EgressFile {
    /// PEM files of root certificates trusted for upstream TLS besides the
    /// system's (an internal registry's own CA).
    #[serde(default)]
    upstream_roots: Vec<PathBuf>,
}

/// `[api]`: the judge API beyond its unix socket.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiFile {
    /// A loopback address (`127.0.0.1:8787`, `[::1]:8787`) to also serve
    /// the judge API on over TCP, to holders of the bearer token only.
    tcp: Option<std::net::SocketAddr>,
}

/// `[console]`: the operator's web console.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsoleFile {
    /// The loopback address it listens on; port 0 (the default) takes a
    /// free port at start.
    listen: Option<std::net::SocketAddr>,
    /// A file whose first line is the fleet store's URL with an
    /// operator's login: the console then spans the fleet's hosts. Never
    /// this host's own login, which the store refuses operator changes.
    fleet_url_file: Option<PathBuf>,
}

/// `[snapshots]`: what reversible commands keep for `praxis undo`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotsFile {
    /// Most files one command's snapshot may hold (default 100000).
    max_files: Option<u64>,
    /// Most MiB one command's snapshot may hold (default 256).
    max_mib: Option<u64>,
    /// Most MiB of snapshots taken in any 24 hours (default 2048).
    daily_mib: Option<u64>,
    /// Days a snapshot is kept (default 7).
    keep_days: Option<u64>,
    /// Most MiB kept in all; the oldest go first (default 4096).
    total_mib: Option<u64>,
    /// Roles that get a whole-workspace checkpoint before a script or build
    /// (steer-only roles always do).
    #[serde(default)]
    checkpoint_roles: Vec<String>,
}

impl SnapshotsFile {
    fn into_snapshots(self) -> Snapshots {
        let base = praxis_snapshot::Limits::default();
        let mib = |v: Option<u64>, default: u64| v.map_or(default, |m| m.saturating_mul(1 << 20));
        Snapshots {
            limits: praxis_snapshot::Limits {
                max_files: self.max_files.unwrap_or(base.max_files),
                max_bytes: mib(self.max_mib, base.max_bytes),
                max_daily_bytes: mib(self.daily_mib, base.max_daily_bytes),
                keep_for: self
                    .keep_days
                    .map_or(base.keep_for, |d| d.saturating_mul(86_400)),
                max_total_bytes: mib(self.total_mib, base.max_total_bytes),
            },
            checkpoint_roles: self.checkpoint_roles,
        }
    }
}

/// Snapshot limits and who gets workspace checkpoints.
#[derive(Clone, Debug, Default)]
pub struct Snapshots {
    pub limits: praxis_snapshot::Limits,
    pub checkpoint_roles: Vec<String>,
}

/// `[roles]`: who runs as which role.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RolesFile {
    /// Role of a request that claims none (default `agent`).
    default: Option<String>,
    /// Roles whose HOLDs become ALLOW with an advisory line (never a STOP).
    #[serde(default)]
    steer_only: Vec<String>,
    /// System mode: per uid or gid, the default role and the roles it may claim.
    #[serde(default)]
    map: Vec<RoleMap>,
}

/// One `[[roles.map]]` entry: exactly one of `uid` and `gid`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RoleMap {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub default: String,
    #[serde(default)]
    pub may_claim: Vec<String>,
}

/// `[retry_budget]`: executions per session and request digest, per tier;
/// 0 means unlimited.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    read_only: Option<u32>,
    reversible_write: Option<u32>,
    external_side_effect: Option<u32>,
    high_risk: Option<u32>,
}

/// One `[[credentials]]` entry: a reference to a secret, never the secret.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialFile {
    name: String,
    env: String,
    from_file: Option<String>,
    from_env: Option<String>,
    from_command: Option<String>,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(default)]
    programs: Vec<String>,
    /// With `to`: bound to destinations, put into requests by the egress
    /// proxy (`Authorization: Bearer {}`).
    header: Option<String>,
    #[serde(default)]
    to: Vec<String>,
}

/// Roles as the daemon assigns them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roles {
    pub default: String,
    pub steer_only: Vec<String>,
    pub map: Vec<RoleMap>,
}

impl Roles {
    /// Whether `role` is steer-only: its policy HOLDs run with an advisory line.
    pub fn is_steer_only(&self, role: &str) -> bool {
        self.steer_only.iter().any(|r| r == role)
    }
}

/// Executions allowed per session and request digest, by tier; `None` is unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryBudget([Option<u32>; 4]);

impl RetryBudget {
    /// T0/T1 unlimited; T2/T3 once plus one retry.
    pub const DEFAULT: RetryBudget = RetryBudget([None, None, Some(2), Some(2)]);

    pub fn limit(&self, tier: Tier) -> Option<u32> {
        self.0[tier_index(tier)]
    }
}

fn tier_index(tier: Tier) -> usize {
    match tier {
        Tier::ReadOnly => 0,
        Tier::ReversibleWrite => 1,
        Tier::ExternalSideEffect => 2,
        Tier::HighRisk => 3,
    }
}

/// Whether `name` may name a role or a credential: lowercase ASCII letters,
/// digits, `-`, `_`, `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        })
}

/// Whether `name` may name an injected environment variable.
pub fn valid_env_name(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && !praxis_policy::env::stripped(name)
        && !["PATH", "HOME", "TMPDIR", "PWD", "SHELL", "USER", "LOGNAME"].contains(&name)
}

/// Checks a credential reference; `default_role` fills an empty role list.
/// A binding's header as name and value template: `Authorization: Bearer {}`
/// is `("Authorization", "Bearer {}")`; the value goes where `{}` is, once.
pub fn binding_header(binding: &CredentialBinding) -> Result<(&str, &str), String> {
    let (name, template) = binding
        .header
        .split_once(':')
        .ok_or_else(|| format!("header `{}` is not `Name: value`", binding.header))?;
    let name = name.trim();
    let template = template.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(format!("`{name}` is not a header name"));
    }
    if template.matches("{}").count() != 1 {
        return Err(format!(
            "header `{}` needs exactly one `{{}}` where the value goes",
            binding.header
        ));
    }
    Ok((name, template))
}

/// A binding's destinations; a bare host means port 443.
pub fn binding_destinations(binding: &CredentialBinding) -> Result<Vec<Destination>, String> {
    if binding.to.is_empty() {
        return Err(String::from("a bound credential needs a destination"));
    }
    binding
        .to
        .iter()
        .map(|to| {
            Destination::parse(to)
                .or_else(|| Destination::parse(&format!("{to}:443")))
                .ok_or_else(|| format!("`{to}` is not host or host:port"))
        })
        .collect()
}

pub fn check_credential(spec: &mut CredentialSpec, default_role: &str) -> Result<(), String> {
    if !valid_name(&spec.name) {
        return Err(format!(
            "credential name `{}` must be lowercase letters, digits, `-`, `_` or `.`",
            spec.name
        ));
    }
    if !valid_env_name(&spec.env) {
        return Err(format!(
            "credential `{}`: `{}` is not an environment variable a command may get",
            spec.name, spec.env
        ));
    }
    let empty = match &spec.source {
        CredentialSource::File(s) | CredentialSource::Env(s) | CredentialSource::Command(s) => {
            s.trim().is_empty()
        }
    };
    if empty {
        return Err(format!("credential `{}`: empty source", spec.name));
    }
    if let CredentialSource::File(path) = &spec.source
        && !Path::new(path).is_absolute()
    {
        return Err(format!(
            "credential `{}`: file `{path}` must be an absolute path",
            spec.name
        ));
    }
    if let Some(bad) = spec.roles.iter().find(|r| !valid_name(r)) {
        return Err(format!("credential `{}`: bad role name `{bad}`", spec.name));
    }
    if let Some(binding) = &spec.bound {
        binding_header(binding).map_err(|why| format!("credential `{}`: {why}", spec.name))?;
        binding_destinations(binding)
            .map_err(|why| format!("credential `{}`: {why}", spec.name))?;
    }
    if spec
        .programs
        .iter()
        .any(|p| p.is_empty() || p.contains('/'))
    {
        return Err(format!(
            "credential `{}`: programs are bare names, e.g. `gh`",
            spec.name
        ));
    }
    if spec.roles.is_empty() {
        spec.roles.push(default_role.to_owned());
    }
    spec.roles.sort();
    spec.roles.dedup();
    spec.programs.sort();
    spec.programs.dedup();
    Ok(())
}

impl CredentialFile {
    fn into_spec(self, default_role: &str) -> Result<CredentialSpec, String> {
        let source = match (self.from_file, self.from_env, self.from_command) {
            (Some(f), None, None) => CredentialSource::File(f),
            (None, Some(e), None) => CredentialSource::Env(e),
            (None, None, Some(c)) => CredentialSource::Command(c),
            _ => {
                return Err(format!(
                    "credential `{}` needs exactly one of from_file, from_env, from_command",
                    self.name
                ));
            }
        };
        let bound = match (self.header, self.to.is_empty()) {
            (Some(header), false) => Some(CredentialBinding {
                header,
                to: self.to,
            }),
            (None, true) => None,
            _ => {
                return Err(format!(
                    "credential `{}`: header and to go together",
                    self.name
                ));
            }
        };
        let mut spec = CredentialSpec {
            name: self.name,
            env: self.env,
            source,
            roles: self.roles,
            programs: self.programs,
            bound,
        };
        check_credential(&mut spec, default_role)?;
        Ok(spec)
    }
}

impl RolesFile {
    fn into_roles(self) -> Result<Roles, String> {
        let default = self.default.unwrap_or_else(|| String::from("agent"));
        for name in std::iter::once(&default).chain(&self.steer_only) {
            if !valid_name(name) {
                return Err(format!("bad role name `{name}`"));
            }
        }
        for m in &self.map {
            if m.uid.is_some() == m.gid.is_some() {
                return Err(String::from(
                    "each [[roles.map]] entry needs exactly one of uid and gid",
                ));
            }
            if let Some(bad) = std::iter::once(&m.default)
                .chain(&m.may_claim)
                .find(|r| !valid_name(r))
            {
                return Err(format!("bad role name `{bad}`"));
            }
        }
        Ok(Roles {
            default,
            steer_only: self.steer_only,
            map: self.map,
        })
    }
}

/// Everything the daemon needs to know about where it lives and how it runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub layout: Layout,
    pub kill_file: PathBuf,
    pub shell: PathBuf,
    pub operator_group: String,
    pub kill_grace: Duration,
    pub approval_ttl: Duration,
    pub idle_timeout: Duration,
    pub roles: Roles,
    pub retry_budget: RetryBudget,
    /// Credentials declared in `praxis.toml` (references only).
    pub credentials: Vec<CredentialSpec>,
    pub snapshots: Snapshots,
    /// Each command's process and memory ceilings.
    pub command_limits: praxis_sandbox::Limits,
    /// Extra roots for the egress proxy's upstream TLS (PEM files).
    pub egress_upstream_roots: Vec<PathBuf>,
    /// Trees this site adds to every command's read allow-list.
    pub sandbox_reads: Vec<PathBuf>,
    /// The loopback address the judge API is also served on, with a bearer
    /// token; None: the unix socket only.
    pub api_tcp: Option<std::net::SocketAddr>,
    /// The loopback address of the operator's web console: as configured
    /// until praxisd binds it, then the address bound (its port taken).
    pub console: std::net::SocketAddr,
    /// How long a session's private tmp dir is kept after its last use.
    pub tmp_retention: Duration,
    /// The fleet store this host joins, if any.
    pub fleet: Option<Fleet>,
    /// The fleet store as an operator, for a console spanning the fleet.
    pub console_fleet: Option<FleetUrl>,
}

/// Where the console listens unless `[console] listen` says: host
/// loopback, a free port.
const DEFAULT_CONSOLE: std::net::SocketAddr =
    std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// Default lifetime of an approval.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(15 * 60);

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
        let invalid = |message: String| ConfigError::Invalid {
            path: path.display().to_string(),
            message,
        };
        let roles = file.roles.into_roles().map_err(invalid)?;
        let command_limits = file.limits.into_limits().map_err(invalid)?;
        if let Some(relative) = file.egress.upstream_roots.iter().find(|p| !p.is_absolute()) {
            return Err(invalid(format!(
                "[egress] upstream_roots: `{}` must be an absolute path",
                relative.display()
            )));
        }
        if let Some(bad) = file
            .sandbox
            .reads
            .iter()
            .find(|p| !p.is_absolute() || p.parent().is_none())
        {
            return Err(invalid(format!(
                "[sandbox] reads: `{}` must be an absolute path below `/`",
                bad.display()
            )));
        }
        let mut names = std::collections::BTreeSet::new();
        let credentials = file
            .credentials
            .into_iter()
            .map(|c| {
                let spec = c.into_spec(&roles.default)?;
                if names.insert(spec.name.clone()) {
                    Ok(spec)
                } else {
                    Err(format!("credential `{}` is declared twice", spec.name))
                }
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(invalid)?;
        let b = &file.retry_budget;
        let mut budget = RetryBudget::DEFAULT;
        for (i, set) in [
            b.read_only,
            b.reversible_write,
            b.external_side_effect,
            b.high_risk,
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(n) = set {
                budget.0[i] = (n > 0).then_some(n);
            }
        }
        if file.tmp.retention_hours == Some(0) {
            return Err(invalid(String::from(
                "[tmp] retention_hours must be at least 1",
            )));
        }
        if let Some(addr) = file.api.tcp
            && !addr.ip().is_loopback()
        {
            return Err(invalid(format!(
                "api.tcp must be a loopback address (127.0.0.0/8 or ::1), not {addr}"
            )));
        }
        let fleet = file.fleet.into_fleet().map_err(invalid)?;
        let console = file.console.listen.unwrap_or(DEFAULT_CONSOLE);
        if !console.ip().is_loopback() {
            return Err(invalid(format!(
                "console.listen must be a loopback address (127.0.0.0/8 or ::1), not {console}"
            )));
        }
        let console_fleet = match (&fleet, file.console.fleet_url_file) {
            (_, None) => None,
            (Some(_), Some(path)) => Some(FleetUrl::File(path)),
            (None, Some(_)) => {
                return Err(invalid(String::from(
                    "[console] fleet_url_file needs [fleet]: this host must be in the fleet",
                )));
            }
        };
        Ok(Config {
            fleet,
            console_fleet,
            api_tcp: file.api.tcp,
            console,
            tmp_retention: file.tmp.retention_hours.map_or(DEFAULT_TMP_RETENTION, |h| {
                Duration::from_secs(h.saturating_mul(3600))
            }),
            approval_ttl: file
                .approval_ttl_secs
                .map_or(DEFAULT_APPROVAL_TTL, Duration::from_secs),
            roles,
            retry_budget: budget,
            credentials,
            snapshots: file.snapshots.into_snapshots(),
            command_limits,
            egress_upstream_roots: file.egress.upstream_roots,
            sandbox_reads: file.sandbox.reads,
            kill_file: file.kill_file.unwrap_or_else(|| layout.default_kill_file()),
            shell: file.shell.unwrap_or_else(default_shell),
            operator_group: file
                .operator_group
                .unwrap_or_else(|| String::from("praxis")),
            kill_grace: Duration::from_millis(file.kill_grace_ms.unwrap_or(50)),
            idle_timeout: Duration::from_millis(file.idle_timeout_ms.unwrap_or(10_000).max(1)),
            layout,
        })
    }

    pub fn mode(&self) -> Mode {
        self.layout.mode
    }

    /// Praxis' own ports on this machine (the judge API's TCP port, the
    /// console's): no command reaches them, whatever `[loopback]` opens.
    pub fn praxis_ports(&self) -> Vec<u16> {
        self.api_tcp
            .iter()
            .chain([&self.console])
            .map(std::net::SocketAddr::port)
            .filter(|&port| port != 0)
            .collect()
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
    fn tmp_retention_is_hours_and_at_least_one() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.tmp_retention, Duration::from_secs(7 * 24 * 3600));
        let write = |text: &str| std::fs::write(tmp.path().join(CONFIG_FILE), text).unwrap();
        write("[tmp]\nretention_hours = 2\n");
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.tmp_retention, Duration::from_secs(7200));
        for bad in [
            "[tmp]\nretention_hours = 0\n",
            "[tmp]\nretention = \"7d\"\n",
        ] {
            write(bad);
            assert!(Config::load(layout(tmp.path())).is_err(), "{bad}");
        }
    }

    #[test]
    fn command_limits_and_upstream_roots() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.command_limits, praxis_sandbox::Limits::default());
        assert!(c.egress_upstream_roots.is_empty());
        let write = |text: &str| std::fs::write(tmp.path().join(CONFIG_FILE), text).unwrap();
        write(
            "[limits]\npids_max = 64\nmemory_max_mib = 256\n[egress]\nupstream_roots = [\"/etc/r.pem\"]\n",
        );
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.command_limits.pids, 64);
        assert_eq!(c.command_limits.memory_bytes, 256 << 20);
        assert_eq!(c.egress_upstream_roots, [PathBuf::from("/etc/r.pem")]);
        for bad in [
            "[limits]\npids_max = 2\n",
            "[limits]\nmemory_max_mib = 1\n",
            "[egress]\nupstream_roots = [\"r.pem\"]\n",
        ] {
            write(bad);
            assert!(Config::load(layout(tmp.path())).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_tcp_api_listens_on_loopback_only() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |text: &str| std::fs::write(tmp.path().join(CONFIG_FILE), text).unwrap();
        assert_eq!(Config::load(layout(tmp.path())).unwrap().api_tcp, None);
        write("[api]\ntcp = \"127.0.0.1:8787\"\n");
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.api_tcp, Some("127.0.0.1:8787".parse().unwrap()));
        write("[api]\ntcp = \"[::1]:8787\"\n");
        assert!(Config::load(layout(tmp.path())).unwrap().api_tcp.is_some());
        for outside in ["0.0.0.0:8787", "192.0.2.7:8787", "[::]:8787"] {
            write(&format!("[api]\ntcp = \"{outside}\"\n"));
            let err = Config::load(layout(tmp.path())).unwrap_err().to_string();
            assert!(err.contains("loopback"), "{outside}: {err}");
        }
    }

    #[test]
    fn the_console_listens_on_loopback_only_and_its_port_is_praxis_own() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |text: &str| std::fs::write(tmp.path().join(CONFIG_FILE), text).unwrap();
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.console, "127.0.0.1:0".parse().unwrap());
        assert!(c.praxis_ports().is_empty(), "no port before it is bound");
        write("[console]\nlisten = \"127.0.0.1:8740\"\n[api]\ntcp = \"127.0.0.1:8787\"\n");
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.praxis_ports(), vec![8787, 8740]);
        write("[console]\nlisten = \"0.0.0.0:8740\"\n");
        let err = Config::load(layout(tmp.path())).unwrap_err().to_string();
        assert!(err.contains("console.listen must be a loopback"), "{err}");
    }

    #[test]
    fn a_console_spans_the_fleet_only_on_a_host_of_the_fleet() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |text: &str| std::fs::write(tmp.path().join(CONFIG_FILE), text).unwrap();
        assert_eq!(
            Config::load(layout(tmp.path())).unwrap().console_fleet,
            None
        );
        write("[console]\nfleet_url_file = \"/etc/praxis/operator-url\"\n");
        let err = Config::load(layout(tmp.path())).unwrap_err().to_string();
        assert!(err.contains("fleet_url_file needs [fleet]"), "{err}");
        write(
            "[fleet]\nurl = \"postgresql://h@db/praxis\"\nhost = \"a\"\n\
             [console]\nfleet_url_file = \"/etc/praxis/operator-url\"\n",
        );
        let c = Config::load(layout(tmp.path())).unwrap();
        let file = FleetUrl::File("/etc/praxis/operator-url".into());
        assert_eq!(c.console_fleet, Some(file));
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

    #[test]
    fn roles_budget_and_credentials() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.roles.default, "agent");
        assert_eq!(c.retry_budget.limit(Tier::ReadOnly), None);
        assert_eq!(c.retry_budget.limit(Tier::ExternalSideEffect), Some(2));
        assert_eq!(c.approval_ttl, DEFAULT_APPROVAL_TTL);
        std::fs::write(
            tmp.path().join(CONFIG_FILE),
            r#"
approval_ttl_secs = 60
[roles]
steer_only = ["director"]
[[roles.map]]
uid = 1000
default = "agent"
may_claim = ["agent", "ci"]
[retry_budget]
high_risk = 1
external_side_effect = 0
[[credentials]]
name = "gh"
env = "GH_TOKEN"
from_file = "/etc/gh-token"
programs = ["gh"]
"#,
        )
        .unwrap();
        let c = Config::load(layout(tmp.path())).unwrap();
        assert_eq!(c.approval_ttl, Duration::from_secs(60));
        assert_eq!(c.roles.steer_only, vec!["director"]);
        assert_eq!(c.roles.map[0].may_claim, vec!["agent", "ci"]);
        assert_eq!(c.retry_budget.limit(Tier::HighRisk), Some(1));
        assert_eq!(c.retry_budget.limit(Tier::ExternalSideEffect), None);
        assert_eq!(
            c.credentials[0].roles,
            vec!["agent"],
            "no role: the default role"
        );
        assert_eq!(
            c.credentials[0].source,
            CredentialSource::File("/etc/gh-token".into())
        );
    }

    #[test]
    fn bad_credentials_are_rejected() {
        let tmp = tempfile::tempdir().unwrap();
        for bad in [
            "[[credentials]]\nname = \"x\"\nenv = \"X\"\nfrom_file = \"/a\"\nfrom_env = \"B\"\n",
            "[[credentials]]\nname = \"x\"\nenv = \"LD_PRELOAD\"\nfrom_env = \"B\"\n",
            "[[credentials]]\nname = \"x\"\nenv = \"JAVA_TOOL_OPTIONS\"\nfrom_env = \"B\"\n",
            "[[credentials]]\nname = \"x\"\nenv = \"X\"\nfrom_file = \"rel\"\n",
            "[[roles.map]]\nuid = 1\ngid = 1\ndefault = \"agent\"\n",
        ] {
            std::fs::write(tmp.path().join(CONFIG_FILE), bad).unwrap();
            assert!(Config::load(layout(tmp.path())).is_err(), "{bad}");
        }
    }
}
