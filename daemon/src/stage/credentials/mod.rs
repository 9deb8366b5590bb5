//! The credentials stage: after the intent is committed, the values of the
//! credentials granted to a request are read from their sources (`store`
//! holds the references), held in zeroizing buffers, and put into the
//! permit, whose command gets them in its environment only.

use std::io::Read;
use std::os::unix::ffi::OsStringExt;

use praxis_proto::{CredentialSource, CredentialSpec};
use zeroize::Zeroizing;

use crate::config::Config;
use crate::gate::{Brokered, Permit};
use crate::store::audit::AuditStore;
use crate::store::audit::{AuditError, Durability, Event, EventKind};
use crate::{errors, spawn};

/// Largest value a credential file or command may yield.
const MAX_VALUE: u64 = 64 * 1024;

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

/// Reads one credential's value now.
async fn resolve(
    config: &Config,
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
        CredentialSource::Command(command) => {
            spawn::capture(&config.shell, &config.layout, command, MAX_VALUE + 1)
                .await
                .map_err(|why| BrokerError::Command {
                    name: name.clone(),
                    why,
                })?
        }
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
    config: &Config,
    audit: &AuditStore,
    permit: &mut Permit,
    grants: &[CredentialSpec],
) {
    for spec in grants {
        match resolve(config, spec).await {
            Ok(value) => permit.brokered.push(Brokered {
                name: spec.name.clone(),
                env: spec.env.clone(),
                value,
                // What the command holds instead: not a secret, it stands for
                // one only in requests to the binding's destinations.
                bound: spec.bound.clone().map(|binding| {
                    let placeholder =
                        format!("praxis-placeholder-{}-{}", spec.name, permit.request_id);
                    (binding, placeholder)
                }),
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
                if let Err(e) = crate::store::record(audit, event, Durability::Normal).await {
                    tracing::error!("audit of an unresolved credential failed: {e}");
                }
                permit.advisory = Some(match permit.advisory.take() {
                    Some(earlier) => format!("{earlier}\n{line}"),
                    None => line,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_newlines_are_trimmed() {
        let mut v = Zeroizing::new(b"abc\r\n\n".to_vec());
        trim_end(&mut v);
        assert_eq!(&v[..], b"abc");
    }
}
