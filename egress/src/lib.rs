//! The egress proxy: the only way out of a command's network namespace.
//!
//! A command that has network grants runs in a network namespace with only
//! loopback; its proxy variables (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`
//! and lowercase forms) point at a listener inside that namespace, which the
//! sandbox hands to praxisd. praxisd serves it with this crate:
//!
//! ```no_run
//! # async fn run(listener: std::net::TcpListener, state_dir: &std::path::Path)
//! #     -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use praxis_egress::{Ca, Destination, Egress, Limits, Permit};
//!
//! // Once per daemon.
//! let ca = Arc::new(Ca::load_or_create(&state_dir.join("egress"))?);
//! ca.write_bundle(&state_dir.join("egress/bundle.pem"))?;
//! let egress = Egress::new(Limits::default(), Some(ca), vec![])?;
//!
//! // Per command, on the daemon's runtime; abort the task when the command ends.
//! let permit = Permit::new(vec![Destination::new("pypi.org", 443)], vec![])?;
//! let (events, mut audit) = tokio::sync::mpsc::unbounded_channel();
//! let proxy = tokio::spawn(async move {
//!     egress.serve(listener, permit, move |event| { let _ = events.send(event); }).await
//! });
//! // ... the command runs; each `audit.recv()` is one ConnectionEvent ...
//! proxy.abort();
//! # Ok(()) }
//! ```
//!
//! What it lets through:
//! - `CONNECT host:port` to a granted destination: `200`, then a byte tunnel.
//!   When a credential is bound to that destination and the proxy has a
//!   [`Ca`], the tunnel's TLS is terminated with a leaf for the host (the
//!   child trusts the CA through `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`,
//!   `CARGO_HTTP_CAINFO`, `GIT_SSL_CAINFO` = [`Ca::write_bundle`]'s file and
//!   `NODE_EXTRA_CA_CERTS` = [`Ca::cert_path`]), and every request inside is
//!   sent on over TLS verified against the system roots, credential in its
//!   header and nowhere else (a placeholder elsewhere refuses the request),
//!   the credential's value masked in what comes back.
//! - Plain HTTP in absolute form (`GET http://host:port/path`) to a granted
//!   destination: sent on in origin form, credentials in, response streamed
//!   back.
//! - Anything else: `403` naming the destination and how to get it granted,
//!   `400` for what is not a proxy request, `502` when a granted destination
//!   cannot be reached. Every request gives one [`ConnectionEvent`].
//!
//! Grants are by name. The proxy resolves names itself, in praxisd's
//! namespace; the child resolves nothing. An IP-literal grant matches only a
//! request for that IP literal, and a name grant never matches an IP literal.
//! A name other than `localhost` that resolves only to loopback addresses is
//! refused. This machine (loopback or the unspecified address) is reached
//! only on the ports of [`Permit::with_loopback_ports`], whatever is granted.

#![forbid(unsafe_code)]

mod ca;
mod event;
mod io;
mod permit;
mod proxy;
mod scan;

pub use ca::{Ca, CaError};
pub use event::{ConnectionEvent, Disposition, RequestKind};
pub use permit::{BoundCredential, Destination, Permit, PermitError};
pub use proxy::{Egress, EgressError, Limits, pem_roots};
