//! What the front's HTTP doors (the judge API, the console) share: how a
//! connection is served, and how a failed accept is waited out.

use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::HttpService;
use hyper_util::rt::TokioIo;

/// How long a connection may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// After a failed accept (EMFILE and friends): a pause, not a spin.
pub async fn accept_failed(door: &str, e: &std::io::Error) {
    tracing::warn!("{door} accept failed: {e}");
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// Serves HTTP/1.1 on `stream` with `service` until the connection ends.
pub async fn serve_connection<IO, S>(door: &str, stream: IO, service: S)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: HttpService<Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::ResBody: 'static,
    <S::ResBody as Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let served = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(READ_TIMEOUT)
        .timer(hyper_util::rt::TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(e) = served {
        tracing::debug!("{door} connection ended: {e}");
    }
}
