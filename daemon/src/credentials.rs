//! The credential broker. Praxis stores references only (a file path, an
//! environment variable name, a command line), from `[[credentials]]` in
//! `praxis.toml` and from `praxis cred add` (a table in the audit database,
//! whose rows shadow config entries of the same name: a revoked row hides
//! one). Values are read at exec time, after the audit intent is committed,
//! held in zeroizing buffers, and injected into the child's environment only.
//!
//! Who gets a credential: requests running as one of its roles and, when it
//! names programs, only requests whose every simple command runs one of them
//! (every process of a command inherits its environment, so a pipeline with
//! one unlisted program would hand the secret to that program too).

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;

use praxis_policy::Decision;
use praxis_proto::{CredentialInfo, CredentialSource, CredentialSpec, OperatorReply};
use rusqlite::params;
use zeroize::Zeroizing;

use crate::audit::{AuditError, Durability, Event, EventKind, TxOp};
use crate::conn::Peer;
use crate::pipeline::Permit;
use crate::state::Daemon;
use crate::{approval, config, errors, execute};

/// The broker's table, in the audit database.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS credentials (
    name TEXT PRIMARY KEY,
    env TEXT NOT NULL,
    source_kind TEXT NOT NULL,
    source TEXT NOT NULL,
    roles TEXT NOT NULL,
    programs TEXT NOT NULL,
    changed_ms INTEGER NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0
);
";

/// Largest value a credential file or command may yield.
const MAX_VALUE: u64 = 64 * 1024;

/// A resolved credential, alive only until the command is spawned and its
/// output masked.
pub struct Brokered {
    pub name: String,
    pub env: String,
    pub value: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for Brokered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Brokered({} as {}, value hidden)", self.name, self.env)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("credential `{name}`: cannot read {path}: {source}")]
    File {
        name: String,
        path: String,
        source: std::io::Error,
    },
    #[error("credential `{name}`: the daemon's environment has no {var}")]
    Env { name: String, var: String },
    #[error("credential `{name}`: command failed: {why}")]
    Command { name: String, why: String },
    #[error("credential `{name}`: value is empty")]
    Empty { name: String },
    #[error("credential `{name}`: value is over {MAX_VALUE} bytes or holds a NUL byte")]
    Unusable { name: String },
    #[error("credential store: {0}")]
    Store(#[from] AuditError),
}

/// A row of the table: a spec, or a revocation when `revoked`.
struct Row {
    spec: CredentialSpec,
    revoked: bool,
}

fn source_parts(source: &CredentialSource) -> (&'static str, &str) {
    match source {
        CredentialSource::File(s) | CredentialSource::Env(s) | CredentialSource::Command(s) => {
            (source.kind(), s)
        }
    }
}

fn source_of(kind: &str, text: String) -> Option<CredentialSource> {
    match kind {
        "file" => Some(CredentialSource::File(text)),
        "env" => Some(CredentialSource::Env(text)),
        "command" => Some(CredentialSource::Command(text)),
        _ => None,
    }
}

fn rows(daemon: &Daemon) -> Result<Vec<Row>, AuditError> {
    daemon.audit.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT name, env, source_kind, source, roles, programs, revoked FROM credentials ORDER BY name",
        )?;
        let rows = stmt
            .query_map([], |r| {
                let kind: String = r.get(2)?;
                let roles: String = r.get(4)?;
                let programs: String = r.get(5)?;
                let revoked: i64 = r.get(6)?;
                Ok((
                    CredentialSpec {
                        name: r.get(0)?,
                        env: r.get(1)?,
                        source: CredentialSource::File(String::new()),
                        roles: serde_json::from_str(&roles).unwrap_or_default(),
                        programs: serde_json::from_str(&programs).unwrap_or_default(),
                    },
                    kind,
                    r.get::<_, String>(3)?,
                    revoked != 0,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // A row of an unknown source kind is kept as a revocation: fail closed.
        Ok(rows
            .into_iter()
            .map(|(mut spec, kind, text, revoked)| match source_of(&kind, text) {
                Some(source) => {
                    spec.source = source;
                    Row { spec, revoked }
                }
                None => Row {
                    spec,
                    revoked: true,
                },
            })
            .collect())
    })
}

/// Every credential in force, with its origin (`config` or `operator`).
fn active(daemon: &Daemon) -> Result<Vec<(CredentialSpec, &'static str)>, AuditError> {
    let rows = rows(daemon)?;
    let mut out: Vec<(CredentialSpec, &'static str)> = daemon
        .config
        .credentials
        .iter()
        .filter(|c| !rows.iter().any(|r| r.spec.name == c.name))
        .map(|c| (c.clone(), "config"))
        .collect();
    out.extend(
        rows.into_iter()
            .filter(|r| !r.revoked)
            .map(|r| (r.spec, "operator")),
    );
    out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    Ok(out)
}

/// Whether `spec` is granted to a request of `role` running `programs`.
fn granted(spec: &CredentialSpec, role: &str, programs: &[&str]) -> bool {
    spec.roles.iter().any(|r| r == role)
        && (spec.programs.is_empty()
            || (!programs.is_empty()
                && programs
                    .iter()
                    .all(|p| spec.programs.iter().any(|g| g == p))))
}

/// The program of a simple command as a bare name (`/usr/bin/gh` → `gh`).
fn bare(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// The credentials a request of `role`, judged as `decision`, gets.
pub fn grants(
    daemon: &Daemon,
    role: &str,
    decision: &Decision,
) -> Result<Vec<CredentialSpec>, String> {
    let programs: Vec<&str> = decision
        .commands
        .iter()
        .map(|c| bare(&c.program))
        .filter(|p| !p.is_empty())
        .collect();
    let all = active(daemon).map_err(|e| format!("credential store: {}", errors::one_line(&e)))?;
    Ok(all
        .into_iter()
        .map(|(spec, _)| spec)
        .filter(|spec| granted(spec, role, &programs))
        .collect())
}

/// Reads at most [`MAX_VALUE`] bytes of a credential file.
fn read_file(name: &str, path: &str) -> Result<Zeroizing<Vec<u8>>, BrokerError> {
    let file = std::fs::File::open(path).map_err(|source| BrokerError::File {
        name: name.to_owned(),
        path: path.to_owned(),
        source,
    })?;
    let mut value = Zeroizing::new(Vec::new());
    file.take(MAX_VALUE + 1)
        .read_to_end(&mut value)
        .map_err(|source| BrokerError::File {
            name: name.to_owned(),
            path: path.to_owned(),
            source,
        })?;
    Ok(value)
}

/// Drops the line ending a file or command leaves after the secret.
fn trim_end(value: &mut Zeroizing<Vec<u8>>) {
    while value.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        value.pop();
    }
}

/// Why a credential's source cannot give a value now, if it cannot: a file
/// that is missing, unreadable or empty, a variable praxisd does not have, a
/// command whose program is not found. Nothing is run to find out.
pub fn unusable(spec: &CredentialSpec) -> Option<String> {
    match &spec.source {
        // Opened, not read: the value stays where it is until a command needs it.
        CredentialSource::File(path) => {
            match std::fs::File::open(path).and_then(|f| f.metadata()) {
                Ok(meta) if meta.len() == 0 => Some(format!("{path} is empty")),
                Ok(_) => None,
                Err(e) => Some(format!("cannot read {path}: {e}")),
            }
        }
        CredentialSource::Env(var) => std::env::var_os(var)
            .is_none()
            .then(|| format!("praxisd's environment has no {var}")),
        CredentialSource::Command(command) => {
            let program = command.split_whitespace().next().unwrap_or_default();
            let path = std::env::var_os("PATH").unwrap_or_default();
            let found =
                praxis_sandbox::host::resolve_program(program, &path, std::path::Path::new("/"));
            found
                .is_none()
                .then(|| format!("`{program}` is not found on praxisd's PATH"))
        }
    }
}

/// Reads one credential's value now.
async fn resolve(
    daemon: &Daemon,
    spec: &CredentialSpec,
) -> Result<Zeroizing<Vec<u8>>, BrokerError> {
    let name = spec.name.clone();
    let mut value = match &spec.source {
        CredentialSource::File(path) => read_file(&name, path)?,
        CredentialSource::Env(var) => std::env::var_os(var)
            .map(|v| Zeroizing::new(v.into_vec()))
            .ok_or_else(|| BrokerError::Env {
                name: name.clone(),
                var: var.clone(),
            })?,
        CredentialSource::Command(command) => execute::capture(daemon, command, MAX_VALUE + 1)
            .await
            .map_err(|why| BrokerError::Command {
                name: name.clone(),
                why,
            })?,
    };
    trim_end(&mut value);
    if value.is_empty() {
        return Err(BrokerError::Empty { name });
    }
    if value.len() as u64 > MAX_VALUE || value.contains(&0) {
        return Err(BrokerError::Unusable { name });
    }
    Ok(value)
}

/// The credentials stage: resolves the granted values into the permit. Runs
/// after the intent is committed. A credential that cannot be resolved
/// affects only this command: it runs without it, the agent is told in one
/// line, and the failure is audited.
pub async fn inject(
    daemon: &Daemon,
    permit: &mut Permit,
    grants: &[CredentialSpec],
) -> Result<(), String> {
    for spec in grants {
        match resolve(daemon, spec).await {
            Ok(value) => permit.brokered.push(Brokered {
                name: spec.name.clone(),
                env: spec.env.clone(),
                value,
            }),
            Err(e) => {
                let why = errors::one_line(&e);
                let line = format!(
                    "praxis: credential `{}` could not be resolved ({why}); the command runs without {}",
                    spec.name, spec.env
                );
                let event = Event {
                    request_id: Some(permit.request_id.clone()),
                    credentials: Some(vec![spec.name.clone()]),
                    reason: Some(line.clone()),
                    ..Event::new(EventKind::CredentialUnresolved)
                };
                if let Err(e) = daemon.record(event, Durability::Normal).await {
                    tracing::error!("audit of an unresolved credential failed: {e}");
                }
                permit.advisory = Some(match permit.advisory.take() {
                    Some(earlier) => format!("{earlier}\n{line}"),
                    None => line,
                });
            }
        }
    }
    Ok(())
}

/// The environment entries for the brokered values: copies the sandbox
/// spec holds until [`wipe`] clears them.
pub fn env_entries(brokered: &[Brokered]) -> Vec<(OsString, OsString)> {
    brokered
        .iter()
        .map(|b| (OsString::from(&b.env), OsString::from_vec(b.value.to_vec())))
        .collect()
}

/// Zeroes and drops the brokered values among `env` (names in `names`).
pub fn wipe(env: &mut Vec<(OsString, OsString)>, names: &[String]) {
    env.retain_mut(|(k, v)| {
        if names.iter().any(|n| k == n.as_str()) {
            let mut bytes = Zeroizing::new(std::mem::take(v).into_vec());
            bytes.fill(0);
            false
        } else {
            true
        }
    });
}

fn info(spec: CredentialSpec, origin: &str) -> CredentialInfo {
    CredentialInfo {
        problem: unusable(&spec),
        source_kind: spec.source.kind().to_owned(),
        name: spec.name,
        env: spec.env,
        roles: spec.roles,
        programs: spec.programs,
        origin: origin.to_owned(),
    }
}

/// Each credential whose source cannot give a value now, with why.
pub fn problems(daemon: &Daemon) -> Vec<String> {
    active(daemon)
        .unwrap_or_default()
        .iter()
        .filter_map(|(spec, _)| unusable(spec).map(|why| format!("{}: {why}", spec.name)))
        .collect()
}

/// `praxis cred list`: names, roles, programs and source kinds, never values.
pub fn list(daemon: &Daemon) -> OperatorReply {
    match active(daemon) {
        Ok(all) => OperatorReply::Credentials {
            items: all.into_iter().map(|(s, o)| info(s, o)).collect(),
        },
        Err(e) => OperatorReply::Refused {
            reason: errors::one_line(&e),
        },
    }
}

fn cred_event(kind: EventKind, peer: &Peer, name: &str, reason: String) -> Event {
    let mut detail = serde_json::Map::new();
    detail.insert("credential".into(), name.into());
    Event {
        uid: Some(peer.uid),
        pid: peer.pid.and_then(|p| u32::try_from(p).ok()),
        credentials: Some(vec![name.to_owned()]),
        reason: Some(reason),
        detail: Some(detail),
        ..Event::new(kind)
    }
}

fn upsert(spec: &CredentialSpec, revoked: bool) -> Result<TxOp, String> {
    let (kind, source) = source_parts(&spec.source);
    let row = (
        spec.name.clone(),
        spec.env.clone(),
        kind,
        source.to_owned(),
        serde_json::to_string(&spec.roles).map_err(|e| e.to_string())?,
        serde_json::to_string(&spec.programs).map_err(|e| e.to_string())?,
    );
    Ok(Box::new(move |tx| {
        tx.execute(
            "INSERT INTO credentials (name, env, source_kind, source, roles, programs, changed_ms, revoked)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (name) DO UPDATE SET env = ?2, source_kind = ?3, source = ?4,
                 roles = ?5, programs = ?6, changed_ms = ?7, revoked = ?8",
            params![row.0, row.1, row.2, row.3, row.4, row.5, approval::now_ms(), revoked],
        )
        .map(drop)
        .map_err(|e| errors::one_line(&e))
    }))
}

/// `praxis cred add`: stores the reference (replacing one of the same name).
pub fn add(daemon: &Daemon, peer: &Peer, mut spec: CredentialSpec) -> OperatorReply {
    let refused = |reason: String| OperatorReply::Refused { reason };
    if let Err(why) = config::check_credential(&mut spec, &daemon.config.roles.default) {
        return refused(why);
    }
    if let Some(why) = unusable(&spec) {
        return refused(format!("credential `{}` cannot be used: {why}", spec.name));
    }
    if let Ok(policy) = daemon.policy()
        && let Some(role) = spec
            .roles
            .iter()
            .find(|r| !policy.roles().any(|known| known == r.as_str()))
    {
        return refused(format!("the policy defines no role `{role}`"));
    }
    let op = match upsert(&spec, false) {
        Ok(op) => op,
        Err(why) => return refused(why),
    };
    let reason = format!(
        "credential `{}` added as {} from its {} source, for roles {} and {}",
        spec.name,
        spec.env,
        spec.source.kind(),
        spec.roles.join(", "),
        if spec.programs.is_empty() {
            String::from("any program")
        } else {
            format!("programs {}", spec.programs.join(", "))
        }
    );
    let event = cred_event(EventKind::CredentialAdded, peer, &spec.name, reason.clone());
    match daemon.audit.append_with(event, Durability::Full, op) {
        Ok(_) => OperatorReply::Done { message: reason },
        Err(e) => refused(errors::one_line(&e)),
    }
}

/// `praxis cred revoke`: no later request gets the credential.
pub fn revoke(daemon: &Daemon, peer: &Peer, name: &str) -> OperatorReply {
    let current = match active(daemon) {
        Ok(all) => all.into_iter().find(|(s, _)| s.name == name),
        Err(e) => {
            return OperatorReply::Refused {
                reason: errors::one_line(&e),
            };
        }
    };
    let Some((spec, _)) = current else {
        return OperatorReply::Refused {
            reason: format!("no credential `{name}` is in force"),
        };
    };
    let op = match upsert(&spec, true) {
        Ok(op) => op,
        Err(reason) => return OperatorReply::Refused { reason },
    };
    let reason = format!("credential `{name}` revoked");
    let event = cred_event(EventKind::CredentialRevoked, peer, name, reason.clone());
    match daemon.audit.append_with(event, Durability::Full, op) {
        Ok(_) => OperatorReply::Done { message: reason },
        Err(e) => OperatorReply::Refused {
            reason: errors::one_line(&e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(roles: &[&str], programs: &[&str]) -> CredentialSpec {
        CredentialSpec {
            name: "gh".into(),
            env: "GH_TOKEN".into(),
            source: CredentialSource::Env("GH".into()),
            roles: roles.iter().map(|s| s.to_string()).collect(),
            programs: programs.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn grants_follow_role_and_every_program() {
        let any = spec(&["agent"], &[]);
        assert!(granted(&any, "agent", &["printf", "sha256sum"]));
        assert!(!granted(&any, "ci", &["printf"]));
        let gh = spec(&["agent", "ci"], &["gh", "git"]);
        assert!(granted(&gh, "ci", &["gh"]));
        assert!(granted(&gh, "agent", &["git", "gh"]));
        assert!(!granted(&gh, "agent", &["gh", "curl"]), "curl would see it");
        assert!(!granted(&gh, "agent", &[]));
        assert_eq!(bare("/usr/bin/gh"), "gh");
    }

    #[test]
    fn wipe_removes_only_brokered_entries() {
        let brokered = vec![Brokered {
            name: "gh".into(),
            env: "GH_TOKEN".into(),
            value: Zeroizing::new(b"tok-123456".to_vec()),
        }];
        let mut env = vec![(OsString::from("PATH"), OsString::from("/bin"))];
        env.extend(env_entries(&brokered));
        assert_eq!(env.len(), 2);
        wipe(&mut env, &["GH_TOKEN".to_owned()]);
        assert_eq!(env, vec![(OsString::from("PATH"), OsString::from("/bin"))]);
        assert!(!format!("{brokered:?}").contains("tok-123456"));
    }

    #[test]
    fn trailing_newlines_are_trimmed() {
        let mut v = Zeroizing::new(b"abc\r\n\n".to_vec());
        trim_end(&mut v);
        assert_eq!(&v[..], b"abc");
    }
}
