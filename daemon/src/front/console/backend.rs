//! What the console's pages read and change: one interface, host by host,
//! so that a backend spanning a fleet serves the same pages. Every page
//! speaks the operator protocol (`OperatorRequest` in, `OperatorReply`
//! out), the one `praxis` speaks; [`Local`] answers it with the very
//! handlers that answer `praxis` on the socket.

use std::future::Future;
use std::sync::Arc;

use praxis_proto::{OperatorReply, OperatorRequest};

use crate::conn::Peer;
use crate::front::operator;
use crate::state::Daemon;

/// The hosts a console spans and how to ask each of them.
pub trait Backend: Send + Sync + 'static {
    /// The hosts served, in the order the pages list them.
    fn hosts(&self) -> impl Future<Output = Vec<String>> + Send;

    /// Answers `request` on `host` as `operator`, a logged-in operator.
    fn ask(
        &self,
        host: &str,
        operator: Peer,
        request: OperatorRequest,
    ) -> impl Future<Output = Vec<OperatorReply>> + Send;
}

/// This praxisd alone.
pub struct Local {
    daemon: Arc<Daemon>,
    host: String,
}

impl Local {
    /// This host, under its fleet name if it has one, else its hostname.
    pub fn new(daemon: Arc<Daemon>) -> Local {
        let host = match &daemon.config.fleet {
            Some(fleet) => fleet.host.clone(),
            None => std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .ok()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| String::from("localhost")),
        };
        Local { daemon, host }
    }

    pub fn host(&self) -> &str {
        &self.host
    }
}

impl Backend for Local {
    async fn hosts(&self) -> Vec<String> {
        vec![self.host.clone()]
    }

    async fn ask(
        &self,
        host: &str,
        operator: Peer,
        request: OperatorRequest,
    ) -> Vec<OperatorReply> {
        if host != self.host {
            return vec![OperatorReply::Refused {
                reason: format!("no host `{host}` here (this is {})", self.host),
            }];
        }
        operator::answer(&self.daemon, operator, request).await
    }
}
