//! An operator's side of the store, over an operator's login role: the
//! hosts and their state, the fleet kill switch, policy revisions, the
//! shared memories' review queue, and the holds waiting on any host with
//! the decisions on them.

use serde::Serialize;
use tokio_postgres::Client;

use crate::link::{self, LinkError};
use crate::memory::{COLUMNS, StoredMemory, stored};
use crate::policy::PolicyFiles;
use crate::schema::{SchemaError, check_name};

/// The longest an approval may stay usable, as on a host.
pub const MAX_TTL_SECS: u64 = 7 * 24 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("fleet store: {}", crate::link::chain(.0))]
    Postgres(#[from] tokio_postgres::Error),
    #[error(transparent)]
    Name(#[from] SchemaError),
    #[error("no host {0:?} in the fleet")]
    NoHost(String),
    #[error("no open hold {0}")]
    NoHold(String),
    #[error("{id} is held on {hosts}; name it as HOST/{id}")]
    Ambiguous { id: String, hosts: String },
    #[error("{0} is already decided")]
    Decided(String),
    #[error("ttl must be between 1 second and 7 days")]
    Ttl,
    #[error("no shared memory {0}")]
    NoMemory(String),
    #[error("{0} changed while it was reviewed; look again")]
    Reviewed(String),
    #[error("the policy revision does not load, nothing pushed: {0}")]
    Policy(String),
}

/// One host, as `praxis fleet status` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct HostStatus {
    pub name: String,
    pub version: Option<String>,
    pub policy_revision: Option<String>,
    pub killed: bool,
    pub kill_reason: Option<String>,
    pub audit_seq: i64,
    /// Its last record the store holds a copy of.
    pub audit_copied: i64,
    /// Seconds since its last heartbeat; `None` if never seen.
    pub last_seen_secs: Option<f64>,
    /// Its holds waiting for a decision.
    pub pending: i64,
}

/// A hold waiting for a decision, on any host.
#[derive(Clone, Debug, Serialize)]
pub struct PendingHold {
    /// `HOST/REQUEST`, as `approve` and `deny` take it.
    pub id: String,
    pub host: String,
    pub request_id: String,
    pub command: String,
    pub reason: String,
    pub grants: Vec<String>,
    pub digest: String,
    pub age_secs: f64,
}

/// What `fleet audit verify` found of one host's copied chain.
#[derive(Clone, Debug, Serialize)]
pub struct ChainCheck {
    pub host: String,
    /// Records copied.
    pub records: i64,
    /// The host's anchor: its last reported head.
    pub anchor_seq: i64,
    /// Whether the copy reaches the anchor and matches it there.
    pub anchored: bool,
    /// Each break found; none: the copy holds.
    pub problems: Vec<String>,
}

/// The whole fleet's kill order, if any (`kill_status`).
#[derive(Clone, Debug, Serialize)]
pub struct KillRow {
    pub scope: String,
    pub engaged: bool,
    pub reason: String,
    pub operator: String,
}

/// A policy revision as pushed.
#[derive(Clone, Debug, Serialize)]
pub struct Pushed {
    pub number: i64,
    /// The policy's own revision hash, as hosts report it.
    pub revision: String,
    pub operator: String,
    pub age_secs: f64,
}

/// Which fleet revision one host runs, and which it refused.
#[derive(Clone, Debug, Serialize)]
pub struct HostPolicy {
    pub host: String,
    /// The fleet revision it runs; none: its own local policy.
    pub fleet_policy: Option<i64>,
    pub policy_revision: Option<String>,
    pub refused: Option<i64>,
    pub refused_why: Option<String>,
    pub last_seen_secs: Option<f64>,
}

/// `praxis fleet policy status`: the revisions pushed, newest first, and
/// what each host runs.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyStatus {
    pub revisions: Vec<Pushed>,
    pub hosts: Vec<HostPolicy>,
}

pub struct OperatorLink {
    client: Client,
}

fn pushed(r: &tokio_postgres::Row) -> Pushed {
    Pushed {
        number: r.get(0),
        revision: r.get(1),
        operator: r.get(2),
        age_secs: r.get(3),
    }
}

/// A shared memory read for review, with what the review is stamped by.
#[derive(Clone, Debug)]
pub struct UnderReview {
    pub seen: StoredMemory,
    /// The login the store knows this operator by.
    pub login: String,
    /// The store's clock, in Unix seconds: a review's times (when it was
    /// confirmed, when it goes stale) are the store's, which every host
    /// shares, not this machine's own.
    pub store_now_secs: i64,
}

impl OperatorLink {
    pub async fn connect(url: &str) -> Result<OperatorLink, OperatorError> {
        let (client, _notices) = link::connect(url).await?;
        Ok(OperatorLink { client })
    }

    pub async fn status(&self) -> Result<Vec<HostStatus>, OperatorError> {
        let rows = self
            .client
            .query(
                "SELECT h.name, h.version, h.policy_revision, h.killed, h.kill_reason, h.audit_seq,
                     extract(epoch FROM now() - h.last_seen)::float8,
                     (SELECT count(*) FROM fleet.holds o
                      WHERE o.host = h.name AND o.open
                        AND NOT EXISTS (SELECT 1 FROM fleet.decisions d
                                        WHERE d.host = o.host AND d.request_id = o.request_id)),
                     (SELECT coalesce(max(seq), 0) FROM fleet.audit a WHERE a.host = h.name)
                 FROM fleet.hosts h ORDER BY h.name",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| HostStatus {
                name: r.get(0),
                version: r.get(1),
                policy_revision: r.get(2),
                killed: r.get(3),
                kill_reason: r.get(4),
                audit_seq: r.get(5),
                last_seen_secs: r.get(6),
                pending: r.get(7),
                audit_copied: r.get(8),
            })
            .collect())
    }

    /// The kill rows, engaged or not.
    pub async fn kill_rows(&self) -> Result<Vec<KillRow>, OperatorError> {
        let rows = self
            .client
            .query(
                "SELECT scope, engaged, reason, operator::text FROM fleet.kill ORDER BY scope",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| KillRow {
                scope: r.get(0),
                engaged: r.get(1),
                reason: r.get(2),
                operator: r.get(3),
            })
            .collect())
    }

    async fn known_host(&self, host: &str) -> Result<(), OperatorError> {
        check_name(host)?;
        let found = self
            .client
            .query_opt("SELECT 1 FROM fleet.hosts WHERE name = $1", &[&host])
            .await?;
        match found {
            Some(_) => Ok(()),
            None => Err(OperatorError::NoHost(host.to_owned())),
        }
    }

    /// Engages the kill switch of `host`, or of every host.
    pub async fn kill(&self, reason: &str, host: Option<&str>) -> Result<(), OperatorError> {
        if let Some(host) = host {
            self.known_host(host).await?;
        }
        let scope = host.unwrap_or("*");
        self.client
            .execute(
                "INSERT INTO fleet.kill (scope, engaged, reason) VALUES ($1, true, $2)
                 ON CONFLICT (scope) DO UPDATE SET engaged = true, reason = EXCLUDED.reason",
                &[&scope, &reason],
            )
            .await?;
        Ok(())
    }

    /// Releases the kill order of `host`, or every kill order; returns
    /// whether a fleet-wide order still holds `host`.
    pub async fn release(&self, host: Option<&str>) -> Result<bool, OperatorError> {
        match host {
            Some(host) => {
                self.known_host(host).await?;
                self.client
                    .execute(
                        "UPDATE fleet.kill SET engaged = false, reason = 'released'
                         WHERE scope = $1 AND engaged",
                        &[&host],
                    )
                    .await?;
                let all = self
                    .client
                    .query_opt(
                        "SELECT 1 FROM fleet.kill WHERE scope = '*' AND engaged",
                        &[],
                    )
                    .await?;
                Ok(all.is_some())
            }
            None => {
                self.client
                    .execute(
                        "UPDATE fleet.kill SET engaged = false, reason = 'released' WHERE engaged",
                        &[],
                    )
                    .await?;
                Ok(false)
            }
        }
    }

    /// Loads `files` as a host would, every example checked, and stores
    /// them as the fleet's next revision; returns it as stored.
    pub async fn push_policy(&self, files: &PolicyFiles) -> Result<Pushed, OperatorError> {
        let policy = files
            .load()
            .map_err(|e| OperatorError::Policy(e.to_string()))?;
        let row = self
            .client
            .query_one(
                "INSERT INTO fleet.policies (revision, patterns, policy) VALUES ($1, $2, $3)
                 RETURNING number, revision, operator::text, 0::float8",
                &[&policy.revision(), &files.patterns, &files.policy],
            )
            .await?;
        Ok(pushed(&row))
    }

    /// The last `limit` revisions pushed and what every host runs.
    pub async fn policy_status(&self, limit: i64) -> Result<PolicyStatus, OperatorError> {
        let revisions = self
            .client
            .query(
                "SELECT number, revision, operator::text,
                     extract(epoch FROM now() - pushed_at)::float8
                 FROM fleet.policies ORDER BY number DESC LIMIT $1",
                &[&limit],
            )
            .await?
            .iter()
            .map(pushed)
            .collect();
        let hosts = self
            .client
            .query(
                "SELECT name, fleet_policy, policy_revision, fleet_policy_refused,
                     fleet_policy_error, extract(epoch FROM now() - last_seen)::float8
                 FROM fleet.hosts ORDER BY name",
                &[],
            )
            .await?
            .iter()
            .map(|r| HostPolicy {
                host: r.get(0),
                fleet_policy: r.get(1),
                policy_revision: r.get(2),
                refused: r.get(3),
                refused_why: r.get(4),
                last_seen_secs: r.get(5),
            })
            .collect();
        Ok(PolicyStatus { revisions, hosts })
    }

    /// The shared memories waiting for review, oldest change first.
    pub async fn review_queue(&self) -> Result<Vec<StoredMemory>, OperatorError> {
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM fleet.memories
                     WHERE review IN ('pending', 'escalated') ORDER BY changed"
                ),
                &[],
            )
            .await?;
        Ok(rows.iter().map(stored).collect())
    }

    /// One shared memory, as a review starts from it.
    pub async fn memory(&self, id: &str) -> Result<UnderReview, OperatorError> {
        let row = self
            .client
            .query_opt(
                &format!(
                    "SELECT {COLUMNS}, session_user::text, extract(epoch FROM now())::bigint
                     FROM fleet.memories WHERE id = $1"
                ),
                &[&id],
            )
            .await?
            .ok_or_else(|| OperatorError::NoMemory(id.to_owned()))?;
        Ok(UnderReview {
            seen: stored(&row),
            login: row.get(8),
            store_now_secs: row.get(9),
        })
    }

    /// Replaces a shared memory's review and body, unless it changed since
    /// `seen` was read (another operator's review came first).
    pub async fn review_memory(
        &self,
        seen: &StoredMemory,
        review: &str,
        body: &serde_json::Value,
    ) -> Result<(), OperatorError> {
        let n = self
            .client
            .execute(
                "UPDATE fleet.memories SET review = $3, body = $4 WHERE id = $1 AND changed = $2",
                &[&seen.memory.id, &seen.changed, &review, &body],
            )
            .await?;
        if n == 0 {
            return Err(OperatorError::Reviewed(seen.memory.id.clone()));
        }
        Ok(())
    }

    /// The holds waiting for a decision, oldest first.
    pub async fn pending(&self) -> Result<Vec<PendingHold>, OperatorError> {
        let rows = self
            .client
            .query(
                "SELECT o.host, o.request_id, o.command, o.reason, o.grants, o.digest,
                     extract(epoch FROM now() - o.held_at)::float8
                 FROM fleet.holds o
                 WHERE o.open AND NOT EXISTS (SELECT 1 FROM fleet.decisions d
                     WHERE d.host = o.host AND d.request_id = o.request_id)
                 ORDER BY o.held_at, o.host",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                let host: String = r.get(0);
                let request_id: String = r.get(1);
                let grants: serde_json::Value = r.get(4);
                PendingHold {
                    id: format!("{host}/{request_id}"),
                    host,
                    request_id,
                    command: r.get(2),
                    reason: r.get(3),
                    grants: serde_json::from_value(grants).unwrap_or_default(),
                    digest: r.get(5),
                    age_secs: r.get(6),
                }
            })
            .collect())
    }

    /// Approves (`approve`) or denies the open hold `id` (`HOST/REQUEST`,
    /// or a request id held on one host only), bound to its digest.
    /// Returns the hold's `HOST/REQUEST`.
    pub async fn decide(
        &self,
        id: &str,
        approve: bool,
        ttl_secs: Option<u64>,
        note: Option<&str>,
    ) -> Result<String, OperatorError> {
        let ttl = match ttl_secs {
            Some(t) if t == 0 || t > MAX_TTL_SECS => return Err(OperatorError::Ttl),
            Some(t) => Some(i32::try_from(t).map_err(|_| OperatorError::Ttl)?),
            None => None,
        };
        let (host, request_id) = match id.split_once('/') {
            Some((host, request_id)) => (Some(host), request_id),
            None => (None, id),
        };
        let rows = self
            .client
            .query(
                "SELECT host, digest FROM fleet.holds
                 WHERE request_id = $1 AND open AND ($2::text IS NULL OR host = $2)",
                &[&request_id, &host],
            )
            .await?;
        let (host, digest): (String, String) = match rows.as_slice() {
            [] => return Err(OperatorError::NoHold(id.to_owned())),
            [one] => (one.get(0), one.get(1)),
            many => {
                let hosts: Vec<String> = many.iter().map(|r| r.get(0)).collect();
                return Err(OperatorError::Ambiguous {
                    id: id.to_owned(),
                    hosts: hosts.join(", "),
                });
            }
        };
        let inserted = self
            .client
            .execute(
                "INSERT INTO fleet.decisions (host, request_id, approve, digest, ttl_secs, note)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (host, request_id) DO NOTHING",
                &[&host, &request_id, &approve, &digest, &ttl, &note],
            )
            .await?;
        let full = format!("{host}/{request_id}");
        if inserted == 0 {
            return Err(OperatorError::Decided(full));
        }
        Ok(full)
    }

    /// Checks each host's copied chain: every seq from 1 on, each record
    /// naming the one before it, each record's own fields agreeing with its
    /// columns, and the record at the host's anchor carrying its hash.
    pub async fn verify_audit(&self) -> Result<Vec<ChainCheck>, OperatorError> {
        let hosts = self
            .client
            .query(
                "SELECT name, audit_seq, audit_head FROM fleet.hosts ORDER BY name",
                &[],
            )
            .await?;
        let mut checks = Vec::new();
        for host in hosts {
            let name: String = host.get(0);
            let anchor_seq: i64 = host.get(1);
            let anchor_hash: Option<String> = host.get(2);
            let rows = self
                .client
                .query(
                    "SELECT seq, prev_hash, hash, record FROM fleet.audit WHERE host = $1 ORDER BY seq",
                    &[&name],
                )
                .await?;
            let mut problems = Vec::new();
            let mut previous: Option<(i64, String)> = None;
            let mut anchored = false;
            for row in &rows {
                let seq: i64 = row.get(0);
                let prev_hash: String = row.get(1);
                let hash: String = row.get(2);
                let record: serde_json::Value = row.get(3);
                let expected = previous.as_ref().map_or(1, |p| p.0 + 1);
                if seq != expected {
                    problems.push(format!("records {expected} to {} are missing", seq - 1));
                } else if let Some((_, before)) = &previous
                    && *before != prev_hash
                {
                    problems.push(format!("record {seq} does not follow record {}", seq - 1));
                }
                let fields_agree = record["seq"] == seq
                    && record["prev_hash"] == prev_hash.as_str()
                    && record["hash"] == hash.as_str();
                if !fields_agree {
                    problems.push(format!("record {seq} disagrees with its own fields"));
                }
                if seq == anchor_seq {
                    if anchor_hash.as_deref() == Some(hash.as_str()) {
                        anchored = true;
                    } else {
                        problems.push(format!("record {seq} is not the host's anchor"));
                    }
                }
                previous = Some((seq, hash));
            }
            checks.push(ChainCheck {
                host: name,
                records: i64::try_from(rows.len()).unwrap_or(i64::MAX),
                anchor_seq,
                anchored,
                problems,
            });
        }
        Ok(checks)
    }
}
