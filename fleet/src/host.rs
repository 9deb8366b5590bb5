//! A host's side of the store, over its own login role: it reports itself,
//! reads the kill orders that name it and the latest policy revision,
//! copies its open holds, and reads and acknowledges the decisions on
//! them. Row-level security lets it see and change nothing of another
//! host's.

use serde_json::Value;
use tokio_postgres::Client;

use crate::link::{self, LinkError, Notices};
use crate::memory::{COLUMNS, SharedMemory, StoredMemory, stored};
use crate::policy::{PolicyFiles, Revision};

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("fleet store: {}", crate::link::chain(.0))]
    Postgres(#[from] tokio_postgres::Error),
    #[error(
        "this login ({role}) is no registered host; run `praxis fleet init --host NAME` as the store's owner"
    )]
    Unregistered { role: String },
    #[error("this login is host {registered:?}, but [fleet] host is {configured:?}")]
    Mismatch {
        registered: String,
        configured: String,
    },
}

/// What a host says of itself on every heartbeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub version: String,
    pub policy_revision: String,
    pub killed: bool,
    pub kill_reason: Option<String>,
    pub audit_seq: i64,
    /// The hash of the record at `audit_seq`: the chain's anchor.
    pub audit_head: String,
    /// The fleet's policy revision it runs (none: its own local policy).
    pub fleet_policy: Option<i64>,
    /// The last fleet revision it refused to load, and why.
    pub policy_refused: Option<(i64, String)>,
}

/// One audit record as the host's chain holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRow {
    pub seq: i64,
    pub ts: String,
    pub kind: String,
    /// The whole record, as JSON.
    pub record: Value,
    pub prev_hash: String,
    pub hash: String,
}

/// The kill order in force for a host: the latest engaged row of its scope
/// or of every host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KillOrder {
    pub reason: String,
    pub operator: String,
}

/// A HOLD as the host copies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub request_id: String,
    pub command: String,
    pub reason: String,
    pub grants: Vec<String>,
    pub digest: String,
}

/// An operator's decision on one of this host's holds, not yet applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub request_id: String,
    pub approve: bool,
    pub digest: String,
    pub ttl_secs: Option<u64>,
    pub note: Option<String>,
    pub operator: String,
}

/// A host's connection to the store.
pub struct HostLink {
    client: Client,
    pub name: String,
}

impl HostLink {
    /// Connects as a host and listens; `configured` is `[fleet] host`,
    /// which must be the name the login is registered under. The
    /// notifications on [`crate::CHANNEL`] name a table and a scope
    /// (`kill *`, `decision NAME`).
    pub async fn connect(url: &str, configured: &str) -> Result<(HostLink, Notices), HostError> {
        let (client, notices) = link::connect(url).await?;
        let row = client
            .query_one("SELECT fleet.my_host(), session_user::text", &[])
            .await?;
        let name: Option<String> = row.get(0);
        let Some(name) = name else {
            return Err(HostError::Unregistered { role: row.get(1) });
        };
        if name != configured {
            return Err(HostError::Mismatch {
                registered: name,
                configured: configured.to_owned(),
            });
        }
        client
            .batch_execute(&format!("LISTEN {}", crate::CHANNEL))
            .await?;
        Ok((HostLink { client, name }, notices))
    }

    /// Records `report` and that the host is alive now; `started` on the
    /// first heartbeat after praxisd started.
    pub async fn heartbeat(&self, report: &Report, started: bool) -> Result<(), HostError> {
        self.client
            .execute(
                "UPDATE fleet.hosts SET version = $2, policy_revision = $3, killed = $4,
                     kill_reason = $5, audit_seq = $6, last_seen = now(),
                     started_at = CASE WHEN $7 THEN now() ELSE started_at END,
                     audit_head = $8, fleet_policy = $9, fleet_policy_refused = $10,
                     fleet_policy_error = $11
                 WHERE name = $1",
                &[
                    &self.name,
                    &report.version,
                    &report.policy_revision,
                    &report.killed,
                    &report.kill_reason,
                    &report.audit_seq,
                    &started,
                    &report.audit_head,
                    &report.fleet_policy,
                    &report.policy_refused.as_ref().map(|r| r.0),
                    &report.policy_refused.as_ref().map(|r| r.1.as_str()),
                ],
            )
            .await?;
        Ok(())
    }

    /// The kill order in force for this host, if any.
    pub async fn kill_order(&self) -> Result<Option<KillOrder>, HostError> {
        let row = self
            .client
            .query_opt(
                "SELECT reason, operator::text FROM fleet.kill
                 WHERE engaged AND (scope = '*' OR scope = $1)
                 ORDER BY changed_at DESC LIMIT 1",
                &[&self.name],
            )
            .await?;
        Ok(row.map(|r| KillOrder {
            reason: r.get(0),
            operator: r.get(1),
        }))
    }

    /// The number of the latest policy revision pushed, if any: a poll
    /// reads this much, and the files only when the number is new.
    pub async fn latest_policy(&self) -> Result<Option<i64>, HostError> {
        let row = self
            .client
            .query_one("SELECT max(number) FROM fleet.policies", &[])
            .await?;
        Ok(row.get(0))
    }

    /// Policy revision `number`.
    pub async fn policy(&self, number: i64) -> Result<Option<Revision>, HostError> {
        let row = self
            .client
            .query_opt(
                "SELECT patterns, policy FROM fleet.policies WHERE number = $1",
                &[&number],
            )
            .await?;
        Ok(row.map(|r| Revision {
            number,
            files: PolicyFiles {
                patterns: r.get(0),
                policy: r.get(1),
            },
        }))
    }

    /// Proposes memories to the fleet's review queue; one the store holds
    /// already is left as it is.
    pub async fn propose_memories(&self, proposed: &[SharedMemory]) -> Result<(), HostError> {
        for m in proposed {
            self.client
                .execute(
                    "INSERT INTO fleet.memories (id, visibility, workspace, review, body, host)
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
                    &[
                        &m.id,
                        &m.visibility,
                        &m.workspace,
                        &m.review,
                        &m.body,
                        &self.name,
                    ],
                )
                .await?;
        }
        Ok(())
    }

    /// Every shared memory's id and change number: what changed since a
    /// host last looked, whatever order the changes committed in.
    pub async fn memory_changes(&self) -> Result<Vec<(String, i64)>, HostError> {
        let rows = self
            .client
            .query("SELECT id, changed FROM fleet.memories", &[])
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// The shared memories `ids`.
    pub async fn memories(&self, ids: &[String]) -> Result<Vec<StoredMemory>, HostError> {
        let rows = self
            .client
            .query(
                &format!("SELECT {COLUMNS} FROM fleet.memories WHERE id = ANY($1)"),
                &[&ids],
            )
            .await?;
        Ok(rows.iter().map(stored).collect())
    }

    /// Makes the store's open holds of this host exactly `open`: new ones
    /// are added, the ones no longer waiting are closed.
    pub async fn sync_holds(&mut self, open: &[Hold]) -> Result<(), HostError> {
        let tx = self.client.transaction().await?;
        let ids: Vec<&str> = open.iter().map(|h| h.request_id.as_str()).collect();
        tx.execute(
            "UPDATE fleet.holds SET open = false
             WHERE host = $1 AND open AND NOT (request_id = ANY($2))",
            &[&self.name, &ids],
        )
        .await?;
        for hold in open {
            let grants = Value::from(hold.grants.clone());
            tx.execute(
                "INSERT INTO fleet.holds (host, request_id, command, reason, grants, digest)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (host, request_id) DO NOTHING",
                &[
                    &self.name,
                    &hold.request_id,
                    &hold.command,
                    &hold.reason,
                    &grants,
                    &hold.digest,
                ],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The decisions on this host's holds not applied yet, oldest first.
    pub async fn decisions(&self) -> Result<Vec<Decision>, HostError> {
        let rows = self
            .client
            .query(
                "SELECT request_id, approve, digest, ttl_secs, note, operator::text
                 FROM fleet.decisions WHERE host = $1 AND applied_at IS NULL
                 ORDER BY decided_at",
                &[&self.name],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| Decision {
                request_id: r.get(0),
                approve: r.get(1),
                digest: r.get(2),
                ttl_secs: r
                    .get::<_, Option<i32>>(3)
                    .and_then(|t| u64::try_from(t).ok()),
                note: r.get(4),
                operator: r.get(5),
            })
            .collect())
    }

    /// Marks a decision applied, with what became of it; false when it was
    /// applied already.
    pub async fn applied(&self, request_id: &str, outcome: &str) -> Result<bool, HostError> {
        let n = self
            .client
            .execute(
                "UPDATE fleet.decisions SET applied_at = now(), outcome = $3
                 WHERE host = $1 AND request_id = $2 AND applied_at IS NULL",
                &[&self.name, &request_id, &outcome],
            )
            .await?;
        Ok(n == 1)
    }

    /// The last record of this host the store holds (0: none): where the
    /// copy resumes.
    pub async fn audit_copied(&self) -> Result<i64, HostError> {
        let row = self
            .client
            .query_one(
                "SELECT coalesce(max(seq), 0) FROM fleet.audit WHERE host = $1",
                &[&self.name],
            )
            .await?;
        Ok(row.get(0))
    }

    /// Copies `rows` in one statement; a row the store holds already is
    /// left as it is, so a batch resent after an outage doubles nothing.
    pub async fn copy_audit(&self, rows: &[AuditRow]) -> Result<(), HostError> {
        let mut seqs = Vec::with_capacity(rows.len());
        let mut ts = Vec::with_capacity(rows.len());
        let mut kinds = Vec::with_capacity(rows.len());
        let mut records = Vec::with_capacity(rows.len());
        let mut prev = Vec::with_capacity(rows.len());
        let mut hashes = Vec::with_capacity(rows.len());
        for r in rows {
            seqs.push(r.seq);
            ts.push(r.ts.as_str());
            kinds.push(r.kind.as_str());
            records.push(r.record.clone());
            prev.push(r.prev_hash.as_str());
            hashes.push(r.hash.as_str());
        }
        self.client
            .execute(
                "INSERT INTO fleet.audit (host, seq, ts, kind, record, prev_hash, hash)
                 SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::jsonb[],
                                          $6::text[], $7::text[])
                 ON CONFLICT (host, seq) DO NOTHING",
                &[&self.name, &seqs, &ts, &kinds, &records, &prev, &hashes],
            )
            .await?;
        Ok(())
    }
}
