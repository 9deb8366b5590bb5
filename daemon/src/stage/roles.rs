//! The role stage: which role a request runs as, and why. The peer's uid (as
//! the kernel reports it) decides what it may claim; the policy then sets the
//! role's posture.
//!
//! User mode: the user owns the daemon and its config, so any claimed role is
//! taken (the policy HOLDs a role it does not define); no claim is the
//! configured default. System mode: the first `[[roles.map]]` entry for the
//! peer's uid, else for its gid, gives the default and the claimable roles; a
//! peer with no entry gets the default role and may claim nothing else.

use praxis_proto::Mode;

use crate::config::{RoleMap, Roles, valid_name};
use crate::conn::Peer;

/// The role a request runs as, and the one-line reason it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assigned {
    pub role: String,
    pub why: String,
}

/// Why a claimed role was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RoleError {
    #[error("`{0}` is not a role name")]
    BadName(String),
    #[error("uid {uid} may not claim role `{role}` (it may claim: {allowed})")]
    NotAllowed {
        uid: u32,
        role: String,
        allowed: String,
    },
}

fn entry_for<'a>(roles: &'a Roles, peer: &Peer) -> Option<&'a RoleMap> {
    roles
        .map
        .iter()
        .find(|m| m.uid == Some(peer.uid))
        .or_else(|| roles.map.iter().find(|m| m.gid == Some(peer.gid)))
}

/// Assigns the role of a request from `peer` claiming `claimed`.
pub fn assign(
    roles: &Roles,
    mode: Mode,
    peer: &Peer,
    claimed: Option<&str>,
) -> Result<Assigned, RoleError> {
    if let Some(claim) = claimed
        && !valid_name(claim)
    {
        return Err(RoleError::BadName(claim.to_owned()));
    }
    match (mode, claimed) {
        (Mode::User, Some(claim)) => Ok(Assigned {
            role: claim.to_owned(),
            why: format!(
                "claimed with --role; user mode lets uid {} claim any role of its own config",
                peer.uid
            ),
        }),
        (Mode::User, None) => Ok(Assigned {
            role: roles.default.clone(),
            why: String::from("no role claimed: the configured default"),
        }),
        (Mode::System, _) => {
            let (default, may_claim, source) = match entry_for(roles, peer) {
                Some(m) => {
                    let source = match (m.uid, m.gid) {
                        (Some(uid), _) => format!("roles.map entry for uid {uid}"),
                        (None, Some(gid)) => format!("roles.map entry for gid {gid}"),
                        (None, None) => String::from("roles.map entry"),
                    };
                    (m.default.clone(), m.may_claim.clone(), source)
                }
                None => (
                    roles.default.clone(),
                    Vec::new(),
                    format!("no roles.map entry for uid {}", peer.uid),
                ),
            };
            match claimed {
                None => Ok(Assigned {
                    why: format!("no role claimed: the default of the {source}"),
                    role: default,
                }),
                Some(claim) if claim == default || may_claim.iter().any(|r| r == claim) => {
                    Ok(Assigned {
                        role: claim.to_owned(),
                        why: format!("claimed with --role, allowed by the {source}"),
                    })
                }
                Some(claim) => {
                    let mut allowed = may_claim;
                    allowed.insert(0, default);
                    allowed.dedup();
                    Err(RoleError::NotAllowed {
                        uid: peer.uid,
                        role: claim.to_owned(),
                        allowed: allowed.join(", "),
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles() -> Roles {
        Roles {
            default: "agent".into(),
            steer_only: vec!["director".into()],
            map: vec![
                RoleMap {
                    uid: Some(1000),
                    gid: None,
                    default: "agent".into(),
                    may_claim: vec!["ci".into()],
                },
                RoleMap {
                    uid: None,
                    gid: Some(50),
                    default: "ci".into(),
                    may_claim: Vec::new(),
                },
            ],
        }
    }

    fn peer(uid: u32, gid: u32) -> Peer {
        Peer {
            uid,
            gid,
            pid: None,
            inside: None,
        }
    }

    #[test]
    fn user_mode_takes_any_claim_and_defaults_to_agent() {
        let r = roles();
        let a = assign(&r, Mode::User, &peer(7, 7), None).unwrap();
        assert_eq!(a.role, "agent");
        let a = assign(&r, Mode::User, &peer(7, 7), Some("director")).unwrap();
        assert_eq!(a.role, "director");
        assert!(a.why.contains("user mode"));
        assert_eq!(
            assign(&r, Mode::User, &peer(7, 7), Some("Bad Role")),
            Err(RoleError::BadName("Bad Role".into()))
        );
    }

    #[test]
    fn system_mode_follows_the_map() {
        let r = roles();
        assert_eq!(
            assign(&r, Mode::System, &peer(1000, 1), Some("ci"))
                .unwrap()
                .role,
            "ci"
        );
        let refused = assign(&r, Mode::System, &peer(1000, 1), Some("director")).unwrap_err();
        assert!(
            refused.to_string().contains("may claim: agent, ci"),
            "{refused}"
        );
        let by_gid = assign(&r, Mode::System, &peer(5, 50), None).unwrap();
        assert_eq!(by_gid.role, "ci");
        assert!(by_gid.why.contains("gid 50"));
        let unmapped = assign(&r, Mode::System, &peer(5, 5), None).unwrap();
        assert_eq!(unmapped.role, "agent");
        assert!(assign(&r, Mode::System, &peer(5, 5), Some("ci")).is_err());
        assert!(r.is_steer_only("director") && !r.is_steer_only("agent"));
    }
}
