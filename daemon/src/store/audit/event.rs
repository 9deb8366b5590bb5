//! What goes into the audit log: event kinds, the event a caller appends, and
//! the event as stored (with its place in the chain).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The kind of an audit event, stored as text in the `kind` column.
///
/// Kinds unknown to this build (written by a newer daemon, or added by a later
/// feature) are kept as [`EventKind::Other`] so old readers still verify and
/// export them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// The pipeline reached a decision (ALLOW, HOLD or STOP) for a request.
    Decided,
    /// An allowed command was spawned.
    Started,
    /// A command exited, was killed or timed out.
    Finished,
    /// A command was running when praxisd ended; recorded at the next start.
    Interrupted,
    /// The kill switch was engaged.
    Kill,
    /// The kill switch was released.
    Release,
    /// The policy was reloaded (or a reload was refused).
    Reload,
    /// An operator approved a held request.
    Approved,
    /// An operator denied a held request.
    Denied,
    /// A run consumed a one-shot approval.
    ApprovalConsumed,
    /// An approval expired unused.
    ApprovalExpired,
    /// A brokered credential was added (by name).
    CredentialAdded,
    /// A brokered credential was revoked (by name).
    CredentialRevoked,
    /// A granted credential could not be resolved; its command ran without it.
    CredentialUnresolved,
    /// A request hit its retry budget.
    BudgetExhausted,
    /// A judgment-memory review operation.
    Review,
    /// A judgment-memory operation other than a review (a lesson proposed).
    Memory,
    /// What a reversible command was about to remove was saved.
    Snapshot,
    /// An operator request was refused: its maker is not an operator, or
    /// is a process inside a command, or cannot be verified.
    OperatorRefused,
    /// An operator restored a command's snapshot (`praxis undo`).
    Undo,
    /// A snapshot was dropped by retention.
    SnapshotExpired,
    /// A command's connection through the egress proxy: allowed, refused or failed.
    Egress,
    /// The daemon started serving.
    Startup,
    /// The daemon stopped serving.
    Shutdown,
    /// A kind this build does not name.
    Other(String),
}

impl EventKind {
    /// Every kind this build names, for parsing and documentation.
    const NAMED: [EventKind; 24] = [
        EventKind::Decided,
        EventKind::Started,
        EventKind::Finished,
        EventKind::Interrupted,
        EventKind::Kill,
        EventKind::Release,
        EventKind::Reload,
        EventKind::Approved,
        EventKind::Denied,
        EventKind::ApprovalConsumed,
        EventKind::ApprovalExpired,
        EventKind::CredentialAdded,
        EventKind::CredentialRevoked,
        EventKind::CredentialUnresolved,
        EventKind::BudgetExhausted,
        EventKind::Review,
        EventKind::Memory,
        EventKind::Snapshot,
        EventKind::OperatorRefused,
        EventKind::Undo,
        EventKind::SnapshotExpired,
        EventKind::Egress,
        EventKind::Startup,
        EventKind::Shutdown,
    ];

    /// The text stored in the `kind` column.
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::Decided => "decided",
            EventKind::Started => "started",
            EventKind::Finished => "finished",
            EventKind::Interrupted => "interrupted",
            EventKind::Kill => "kill",
            EventKind::Release => "release",
            EventKind::Reload => "reload",
            EventKind::Approved => "approved",
            EventKind::Denied => "denied",
            EventKind::ApprovalConsumed => "approval_consumed",
            EventKind::ApprovalExpired => "approval_expired",
            EventKind::CredentialAdded => "credential_added",
            EventKind::CredentialRevoked => "credential_revoked",
            EventKind::CredentialUnresolved => "credential_unresolved",
            EventKind::BudgetExhausted => "budget_exhausted",
            EventKind::Review => "review",
            EventKind::Memory => "memory",
            EventKind::Snapshot => "snapshot",
            EventKind::OperatorRefused => "operator_refused",
            EventKind::Undo => "undo",
            EventKind::SnapshotExpired => "snapshot_expired",
            EventKind::Egress => "egress",
            EventKind::Startup => "startup",
            EventKind::Shutdown => "shutdown",
            EventKind::Other(kind) => kind,
        }
    }

    /// The kind named by `text`; never fails, unknown text becomes `Other`.
    pub fn parse(text: &str) -> EventKind {
        EventKind::NAMED
            .iter()
            .find(|kind| kind.as_str() == text)
            .cloned()
            .unwrap_or_else(|| EventKind::Other(text.to_owned()))
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(EventKind::parse(&text))
    }
}

/// One event to append. Every field but `kind` is optional; the store adds
/// `seq`, `ts`, `prev_hash` and `hash`.
///
/// The store writes exactly what it is given: redacting `argv_redacted`,
/// `reason` and `detail`, and digesting the raw request into
/// `arguments_digest`, are the caller's job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    pub request_id: Option<String>,
    pub session: Option<String>,
    pub role: Option<String>,
    pub uid: Option<u32>,
    pub pid: Option<u32>,
    /// The agent runtime that sent the request (e.g. `claude-code`).
    pub runtime: Option<String>,
    pub cwd: Option<String>,
    /// The request's argv, already redacted.
    pub argv_redacted: Option<Vec<String>>,
    /// Hex SHA-256 of the raw request.
    pub arguments_digest: Option<String>,
    pub tier: Option<String>,
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub rule_ids: Option<Vec<String>>,
    pub policy_revision: Option<String>,
    pub profile: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration_ms: Option<u64>,
    pub stdout_bytes: Option<u64>,
    pub stderr_bytes: Option<u64>,
    /// Hex SHA-256 of the output, never the output itself.
    pub output_digest: Option<String>,
    pub truncated: Option<bool>,
    pub approval_id: Option<String>,
    /// Names of the credentials injected, never their values.
    pub credentials: Option<Vec<String>>,
    /// Anything else, as a JSON object.
    pub detail: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Who made an operator change that is not a request's: the uid and the
/// pid of the operator's process, as examined when it asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Maker {
    pub uid: u32,
    pub pid: Option<u32>,
}

impl Event {
    /// This event, made by `by` (none: by praxisd itself, a signal or a
    /// file's change).
    pub fn made_by(self, by: Option<Maker>) -> Event {
        Event {
            uid: by.map(|m| m.uid),
            pid: by.and_then(|m| m.pid),
            ..self
        }
    }

    /// An event of `kind` with every other field empty; fill the rest with
    /// struct update syntax: `Event { reason: Some(r), ..Event::new(kind) }`.
    pub fn new(kind: EventKind) -> Event {
        Event {
            kind,
            request_id: None,
            session: None,
            role: None,
            uid: None,
            pid: None,
            runtime: None,
            cwd: None,
            argv_redacted: None,
            arguments_digest: None,
            tier: None,
            decision: None,
            reason: None,
            rule_ids: None,
            policy_revision: None,
            profile: None,
            exit_code: None,
            signal: None,
            duration_ms: None,
            stdout_bytes: None,
            stderr_bytes: None,
            output_digest: None,
            truncated: None,
            approval_id: None,
            credentials: None,
            detail: None,
        }
    }
}

/// An event read back from the store, with its position in the chain.
/// Serializes to one flat JSON object whose keys are the column names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    pub seq: i64,
    /// RFC 3339 UTC with milliseconds, e.g. `2025-03-01T12:00:00.123Z`.
    pub ts: String,
    #[serde(flatten)]
    pub event: Event,
    pub prev_hash: String,
    pub hash: String,
}

/// How hard a batch containing this event must be pushed to disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Durability {
    /// `synchronous=NORMAL`: in the OS at COMMIT, so it survives a daemon
    /// crash; fsynced by the background checkpoint within about a tenth of a
    /// second, so power loss may lose that much. For T0/T1.
    Normal,
    /// `synchronous=FULL`: the WAL is fsynced before the commit returns. For
    /// T2 and above, and for operator actions.
    Full,
}

/// Where an appended event landed in the chain. Returned only after COMMIT.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Appended {
    pub seq: i64,
    pub ts: String,
    pub hash: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_text() {
        for kind in EventKind::NAMED {
            assert_eq!(EventKind::parse(kind.as_str()), kind);
        }
        assert_eq!(
            EventKind::parse("lesson_proposed"),
            EventKind::Other("lesson_proposed".into())
        );
        assert_eq!(
            EventKind::parse("lesson_proposed").as_str(),
            "lesson_proposed"
        );
    }

    #[test]
    fn stored_event_serializes_flat_with_column_names() {
        let stored = StoredEvent {
            seq: 3,
            ts: "2025-01-01T00:00:00.000Z".into(),
            event: Event {
                rule_ids: Some(vec!["stop.rm_root".into()]),
                truncated: Some(false),
                ..Event::new(EventKind::ApprovalConsumed)
            },
            prev_hash: "0".repeat(64),
            hash: "a".repeat(64),
        };
        let value = serde_json::to_value(&stored).unwrap();
        assert_eq!(value["seq"], 3);
        assert_eq!(value["kind"], "approval_consumed");
        assert_eq!(value["rule_ids"], serde_json::json!(["stop.rm_root"]));
        assert_eq!(value["truncated"], false);
        assert!(value["detail"].is_null());
        let back: StoredEvent = serde_json::from_value(value).unwrap();
        assert_eq!(back, stored);
    }
}
