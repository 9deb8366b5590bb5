//! `praxis cred list|add|revoke`: the operator's side of the credential
//! broker. References only; values are never shown or stored.

use praxis_proto::{CredentialInfo, CredentialSpec, OperatorReply};

use crate::conn::Peer;
use crate::state::Daemon;
use crate::store::audit::{Durability, Event, EventKind};
use crate::store::credentials::{active, unusable, upsert};
use crate::{config, errors};

fn info(spec: CredentialSpec, origin: &str) -> CredentialInfo {
    CredentialInfo {
        problem: unusable(&spec),
        source_kind: spec.source.kind().to_owned(),
        name: spec.name,
        env: spec.env,
        roles: spec.roles,
        programs: spec.programs,
        origin: origin.to_owned(),
        bound: spec.bound,
    }
}

/// `praxis cred list`: names, roles, programs and source kinds, never values.
pub fn list(daemon: &Daemon) -> OperatorReply {
    match active(&daemon.credentials()) {
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
    let committed = daemon.audit.append_with(event, Durability::Full, op);
    daemon.credential_rows.changed();
    match committed {
        Ok(_) => OperatorReply::Done { message: reason },
        Err(e) => refused(errors::one_line(&e)),
    }
}

/// `praxis cred revoke`: no later request gets the credential.
pub fn revoke(daemon: &Daemon, peer: &Peer, name: &str) -> OperatorReply {
    let current = match active(&daemon.credentials()) {
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
    let committed = daemon.audit.append_with(event, Durability::Full, op);
    daemon.credential_rows.changed();
    match committed {
        Ok(_) => OperatorReply::Done { message: reason },
        Err(e) => OperatorReply::Refused {
            reason: errors::one_line(&e),
        },
    }
}
