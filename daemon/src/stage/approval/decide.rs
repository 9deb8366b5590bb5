//! What becomes of a policy HOLD, as a pure function of what the stores
//! returned: no SQL, no clock, no daemon.

use crate::gate::{Approval, Approver};
use crate::store::approvals::{Found, TokenRow};

/// The one-time token a request presented, as looked up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presented {
    /// The request may come from inside a command praxis runs: not looked up.
    FromInside,
    Looked(Result<Option<TokenRow>, String>),
}

/// What the stores said about a policy HOLD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The request's role is steer-only and the policy defines it.
    pub steer_only: bool,
    /// The held command can be undone, which steering relies on.
    pub steerable: bool,
    /// The token the request presented, if it presented one.
    pub token: Option<Presented>,
    /// The operator approval of the request digest.
    pub approval: Result<Option<Found>, String>,
    /// Now, in milliseconds since the epoch.
    pub now_ms: i64,
}

/// What becomes of a policy HOLD.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lifted {
    /// A steer-only role runs it, the agent told so by `advisory`.
    Steered { advisory: String },
    /// An approval lifts it; the run consumes the approval.
    Approved(Approval),
    /// It stays held, its reason extended by `note`.
    Held {
        note: Option<String>,
        /// An operator approval expired unused: the expiry is to be recorded.
        expired: bool,
        /// The approvals could not be read (logged, not shown).
        unreadable: Option<String>,
    },
}

/// A steer-only role first, then a presented token, then an operator approval.
pub fn held(role: &str, hold_reason: &str, lookup: Lookup) -> Lifted {
    if lookup.steer_only && lookup.steerable {
        return Lifted::Steered {
            advisory: format!(
                "praxis: advisory: role `{role}` is steer-only, so this ran although the policy says HOLD: {hold_reason}"
            ),
        };
    }
    let still = |note: String| Lifted::Held {
        note: Some(note),
        expired: false,
        unreadable: None,
    };
    if let Some(presented) = lookup.token {
        return match presented {
            Presented::FromInside => still(String::from(
                "an approval token is not accepted from inside a command praxis runs",
            )),
            Presented::Looked(Ok(Some(row))) if row.expires_ms > lookup.now_ms => {
                Lifted::Approved(Approval {
                    id: row.id,
                    by: Approver::Prompt(row.runtime),
                })
            }
            Presented::Looked(Ok(Some(row))) => {
                still(format!("approval token {} expired unused", row.id))
            }
            Presented::Looked(Ok(None)) => still(String::from(
                "the approval token does not apply: it was used already, or was minted for another command or session",
            )),
            Presented::Looked(Err(e)) => still(format!("approval tokens unreadable: {e}")),
        };
    }
    match lookup.approval {
        Ok(Some(Found::Usable(id))) => Lifted::Approved(Approval {
            id,
            by: Approver::Operator,
        }),
        Ok(Some(Found::Expired(id))) => Lifted::Held {
            note: Some(format!(
                "approval {id} expired unused; a new approval is needed"
            )),
            expired: true,
            unreadable: None,
        },
        Ok(None) => Lifted::Held {
            note: None,
            expired: false,
            unreadable: None,
        },
        Err(e) => Lifted::Held {
            note: None,
            expired: false,
            unreadable: Some(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup() -> Lookup {
        Lookup {
            steer_only: false,
            steerable: true,
            token: None,
            approval: Ok(None),
            now_ms: 1_000,
        }
    }

    fn row(expires_ms: i64) -> TokenRow {
        TokenRow {
            id: "apr-1".into(),
            runtime: "claude-code".into(),
            expires_ms,
        }
    }

    #[test]
    fn a_steer_only_role_runs_only_what_can_be_undone() {
        let steer = Lookup {
            steer_only: true,
            ..lookup()
        };
        assert!(matches!(
            held("director", "T2", steer.clone()),
            Lifted::Steered { advisory } if advisory.contains("`director` is steer-only") && advisory.ends_with(": T2")
        ));
        let irreversible = Lookup {
            steerable: false,
            ..steer
        };
        assert_eq!(
            held("director", "T2", irreversible),
            Lifted::Held {
                note: None,
                expired: false,
                unreadable: None
            }
        );
    }

    #[test]
    fn a_presented_token_decides_alone() {
        let usable = Lookup {
            token: Some(Presented::Looked(Ok(Some(row(2_000))))),
            // An operator approval does not rescue a token that fails, nor is needed.
            approval: Ok(Some(Found::Usable("apr-op".into()))),
            ..lookup()
        };
        assert_eq!(
            held("agent", "T2", usable),
            Lifted::Approved(Approval {
                id: "apr-1".into(),
                by: Approver::Prompt("claude-code".into())
            })
        );
        for (token, says) in [
            (Presented::FromInside, "not accepted from inside"),
            (Presented::Looked(Ok(Some(row(1_000)))), "expired unused"),
            (Presented::Looked(Ok(None)), "does not apply"),
            (Presented::Looked(Err("disk".into())), "unreadable: disk"),
        ] {
            let failed = Lookup {
                token: Some(token),
                approval: Ok(Some(Found::Usable("apr-op".into()))),
                ..lookup()
            };
            match held("agent", "T2", failed) {
                Lifted::Held {
                    note: Some(note), ..
                } => assert!(note.contains(says), "{note}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_operator_approval_lifts_until_it_expires() {
        let usable = Lookup {
            approval: Ok(Some(Found::Usable("apr-2".into()))),
            ..lookup()
        };
        assert_eq!(
            held("agent", "T3", usable),
            Lifted::Approved(Approval {
                id: "apr-2".into(),
                by: Approver::Operator
            })
        );
        let expired = Lookup {
            approval: Ok(Some(Found::Expired("apr-3".into()))),
            ..lookup()
        };
        assert!(matches!(
            held("agent", "T3", expired),
            Lifted::Held { note: Some(n), expired: true, .. } if n.contains("apr-3 expired unused")
        ));
        let unreadable = Lookup {
            approval: Err("locked".into()),
            ..lookup()
        };
        assert!(matches!(
            held("agent", "T3", unreadable),
            Lifted::Held { note: None, unreadable: Some(e), .. } if e == "locked"
        ));
    }
}
