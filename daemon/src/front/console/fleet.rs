//! A console spanning a fleet: this host through [`Local`], every other
//! host through the fleet store, over an operator's login (never this
//! host's own, which the store's row-level security refuses to let decide
//! a hold or trip a switch). Holds, approvals, denials and the kill switch
//! cross the store, as `praxis fleet` does; the other pages show this
//! host's own records only and say so for the others.

use praxis_fleet::operator::{OperatorError, OperatorLink};
use praxis_proto::{OperatorReply, OperatorRequest, PendingItem};

use super::backend::{Backend, Local};
use crate::config::FleetUrl;
use crate::conn::Peer;

/// This host and the fleet it belongs to.
pub struct Fleet {
    local: Local,
    /// Where the operator's URL is; read at each connection.
    operator_url: FleetUrl,
}

impl Fleet {
    /// `local` must carry this host's fleet name.
    pub fn new(local: Local, operator_url: FleetUrl) -> Fleet {
        Fleet {
            local,
            operator_url,
        }
    }

    /// A fresh link to the store: a page asks it a few questions, and a
    /// store restarted or a password rotated in between costs nothing.
    async fn link(&self) -> Result<OperatorLink, String> {
        let url = self.operator_url.resolve()?;
        OperatorLink::connect(&url).await.map_err(fleet_error)
    }

    /// Answers `request` for `host`, another host of the fleet.
    async fn remote(&self, host: &str, request: OperatorRequest) -> Result<OperatorReply, String> {
        match request {
            OperatorRequest::Pending => {
                let held = self.link().await?.pending().await.map_err(fleet_error)?;
                let items = held
                    .into_iter()
                    .filter(|h| h.host == host)
                    .map(|h| PendingItem {
                        request_id: h.request_id,
                        command: vec![h.command],
                        role: String::new(),
                        tier: String::new(),
                        reason: h.reason,
                        cwd: String::new(),
                        session: String::new(),
                        // Whole seconds waited; the store keeps fractions.
                        age_secs: h.age_secs.max(0.0) as u64,
                        digest: h.digest,
                    })
                    .collect();
                Ok(OperatorReply::Pending { items })
            }
            OperatorRequest::Approve { remember: true, .. } => Err(String::from(
                "approve and remember proposes a lesson on the host that held it: use its own console",
            )),
            OperatorRequest::Approve {
                request_id,
                ttl_secs,
                note,
                ..
            } => self.decide(host, &request_id, true, ttl_secs, note).await,
            OperatorRequest::Deny { request_id, note } => {
                self.decide(host, &request_id, false, None, note).await
            }
            OperatorRequest::Kill { reason } => {
                let reason = reason.unwrap_or_else(|| String::from("from the console"));
                let link = self.link().await?;
                link.kill(&reason, Some(host)).await.map_err(fleet_error)?;
                Ok(OperatorReply::Done {
                    message: format!("kill order stored for {host}; it trips at its next poll"),
                })
            }
            OperatorRequest::Release { .. } => {
                let fleet_wide = self
                    .link()
                    .await?
                    .release(Some(host))
                    .await
                    .map_err(fleet_error)?;
                let message = if fleet_wide {
                    format!(
                        "released {host}'s own order, but a fleet-wide kill order still holds it"
                    )
                } else {
                    format!("released {host}; it resumes at its next poll")
                };
                Ok(OperatorReply::Done { message })
            }
            OperatorRequest::Status => {
                let hosts = self.link().await?.status().await.map_err(fleet_error)?;
                let status = hosts
                    .into_iter()
                    .find(|h| h.name == host)
                    .ok_or_else(|| format!("no host `{host}` in the fleet"))?;
                let value = serde_json::to_value(status).map_err(|e| e.to_string())?;
                Ok(OperatorReply::Json { value })
            }
            _ => Err(format!(
                "shown for this host only: open {host}'s own console for its audit, sessions and review"
            )),
        }
    }

    async fn decide(
        &self,
        host: &str,
        request_id: &str,
        approve: bool,
        ttl_secs: Option<u64>,
        note: Option<String>,
    ) -> Result<OperatorReply, String> {
        let id = format!("{host}/{request_id}");
        let link = self.link().await?;
        let decided = link
            .decide(&id, approve, ttl_secs, note.as_deref())
            .await
            .map_err(fleet_error)?;
        let verb = if approve { "approved" } else { "denied" };
        Ok(OperatorReply::Done {
            message: format!("{verb} {decided}; the host applies it at its next poll"),
        })
    }
}

impl Backend for Fleet {
    async fn hosts(&self) -> Vec<String> {
        let own = self.local.host().to_owned();
        let mut hosts = vec![own.clone()];
        // A store out of reach leaves this host's pages working.
        if let Ok(link) = self.link().await
            && let Ok(fleet) = link.status().await
        {
            hosts.extend(fleet.into_iter().map(|h| h.name).filter(|h| *h != own));
        }
        hosts
    }

    async fn ask(
        &self,
        host: &str,
        operator: Peer,
        request: OperatorRequest,
    ) -> Vec<OperatorReply> {
        if host == self.local.host() {
            return self.local.ask(host, operator, request).await;
        }
        let reply = self
            .remote(host, request)
            .await
            .unwrap_or_else(|reason| OperatorReply::Refused { reason });
        vec![reply]
    }
}

fn fleet_error(e: OperatorError) -> String {
    format!("fleet store: {e}")
}
