//! What the proxy tells the daemon about each connection it handled.

use std::time::Duration;

/// How the child asked to go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestKind {
    /// `CONNECT host:port`: a tunnel (blind, or intercepted TLS when a
    /// credential is bound to the destination).
    Connect,
    /// A plain HTTP request in absolute form (`GET http://host/path`); the
    /// method as sent.
    Http(String),
    /// Bytes that were not an HTTP request.
    Malformed,
}

/// What the proxy did with the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Granted and connected.
    Allowed,
    /// Not granted, or not a request the proxy serves; the child got an HTTP
    /// error saying so.
    Refused(String),
    /// Granted, but the destination could not be reached (resolution,
    /// connection, or upstream TLS failed); the child got a 502.
    Failed(String),
}

/// One record per CONNECT tunnel, per plain HTTP request, and per refused or
/// malformed request (inside an intercepted tunnel too). Byte counts are those of the upstream connection
/// (encrypted bytes for TLS), so a refused request has zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionEvent {
    /// `host:port` as the child asked, or the raw target when it did not
    /// parse (empty for malformed input).
    pub destination: String,
    pub kind: RequestKind,
    pub verdict: Disposition,
    /// Bytes sent to the destination.
    pub bytes_up: u64,
    /// Bytes received from the destination.
    pub bytes_down: u64,
    /// From the request (or CONNECT) to the end of its upstream connection.
    pub duration: Duration,
    /// Names of the credentials put into requests to this destination.
    pub credentials: Vec<String>,
    /// The TLS inside a CONNECT was terminated by the proxy's CA to inject
    /// credentials.
    pub intercepted: bool,
    /// Times a bound credential's value came back from the destination (in
    /// a response header or body) and was masked before the child saw it.
    pub masked: u64,
}
