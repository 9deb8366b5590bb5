//! The credential broker's references: `[[credentials]]` in `praxis.toml`
//! and the operator's table in the audit database (`praxis cred add`), whose
//! rows shadow config entries of the same name (a revoked row hides one).
//! Praxis stores references only: a file path, an environment variable
//! name, a command line; never a value.
//!
//! Who gets a credential: requests running as one of its roles and, when it
//! names programs, only requests whose every simple command runs one of them
//! (every process of a command inherits its environment, so a pipeline with
//! one unlisted program would hand the secret to that program too).

use std::sync::Arc;

use praxis_policy::Decision;
use praxis_proto::{CredentialSource, CredentialSpec};
use rusqlite::params;

use crate::store::audit::{AuditError, AuditStore, TxOp};
use crate::store::credential_rows::{Row, RowCache};
use crate::{clock, errors};

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
CREATE TABLE IF NOT EXISTS credential_bindings (
    name TEXT PRIMARY KEY,
    binding TEXT NOT NULL
);
";

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

/// Where credentials come from: the configuration's, and the operator's
/// rows in the audit database (with the cache of them as last read).
pub struct Sources<'a> {
    pub configured: &'a [CredentialSpec],
    pub audit: &'a AuditStore,
    pub rows: &'a RowCache,
}

/// The operator's rows, read from the table only after a change.
fn rows(sources: &Sources<'_>) -> Result<Arc<Vec<Row>>, AuditError> {
    sources.rows.get(|| read_rows(sources))
}

fn read_rows(sources: &Sources<'_>) -> Result<Vec<Row>, AuditError> {
    sources.audit.read(|conn| {
        let mut stmt = conn.prepare_cached(
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
                        bound: None,
                    },
                    kind,
                    r.get::<_, String>(3)?,
                    revoked != 0,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut stmt = conn.prepare_cached("SELECT name, binding FROM credential_bindings")?;
        let bindings = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // A row of an unknown source kind, or a binding that does not read,
        // is kept as a revocation: fail closed (never unbound by accident).
        Ok(rows
            .into_iter()
            .map(|(mut spec, kind, text, revoked)| {
                let binding = bindings.iter().find(|(name, _)| *name == spec.name);
                let unreadable = match binding {
                    Some((_, json)) => match serde_json::from_str(json) {
                        Ok(bound) => {
                            spec.bound = Some(bound);
                            false
                        }
                        Err(_) => true,
                    },
                    None => false,
                };
                (spec, kind, text, revoked || unreadable)
            })
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
pub fn active(sources: &Sources<'_>) -> Result<Vec<(CredentialSpec, &'static str)>, AuditError> {
    let rows = rows(sources)?;
    let mut out: Vec<(CredentialSpec, &'static str)> = sources
        .configured
        .iter()
        .filter(|c| !rows.iter().any(|r| r.spec.name == c.name))
        .map(|c| (c.clone(), "config"))
        .collect();
    out.extend(
        rows.iter()
            .filter(|r| !r.revoked)
            .map(|r| (r.spec.clone(), "operator")),
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
    sources: &Sources<'_>,
    role: &str,
    decision: &Decision,
) -> Result<Vec<CredentialSpec>, String> {
    let programs: Vec<&str> = decision
        .commands
        .iter()
        .map(|c| bare(&c.program))
        .filter(|p| !p.is_empty())
        .collect();
    let all = active(sources).map_err(|e| format!("credential store: {}", errors::one_line(&e)))?;
    Ok(all
        .into_iter()
        .map(|(spec, _)| spec)
        .filter(|spec| granted(spec, role, &programs))
        .collect())
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

/// Each credential whose source cannot give a value now, with why.
pub fn problems(sources: &Sources<'_>) -> Vec<String> {
    active(sources)
        .unwrap_or_default()
        .iter()
        .filter_map(|(spec, _)| unusable(spec).map(|why| format!("{}: {why}", spec.name)))
        .collect()
}

pub fn upsert(spec: &CredentialSpec, revoked: bool) -> Result<TxOp, String> {
    let (kind, source) = source_parts(&spec.source);
    let row = (
        spec.name.clone(),
        spec.env.clone(),
        kind,
        source.to_owned(),
        serde_json::to_string(&spec.roles).map_err(|e| e.to_string())?,
        serde_json::to_string(&spec.programs).map_err(|e| e.to_string())?,
    );
    let binding = spec
        .bound
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| e.to_string())?;
    Ok(Box::new(move |tx| {
        tx.execute(
            "INSERT INTO credentials (name, env, source_kind, source, roles, programs, changed_ms, revoked)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (name) DO UPDATE SET env = ?2, source_kind = ?3, source = ?4,
                 roles = ?5, programs = ?6, changed_ms = ?7, revoked = ?8",
            params![row.0, row.1, row.2, row.3, row.4, row.5, clock::now_ms(), revoked],
        )
        .and_then(|_| match &binding {
            Some(json) => tx.execute(
                "INSERT INTO credential_bindings (name, binding) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET binding = ?2",
                params![row.0, json],
            ),
            None => tx.execute(
                "DELETE FROM credential_bindings WHERE name = ?1",
                params![row.0],
            ),
        })
        .map(drop)
        .map_err(|e| errors::one_line(&e))
    }))
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
            bound: None,
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
}
