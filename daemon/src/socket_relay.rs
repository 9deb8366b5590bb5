//! Relays of granted unix sockets: a command never makes a unix socket
//! itself; each socket its decision granted is served on a TCP listener the
//! sandbox made on `127.0.0.1` inside the command's network namespace, and
//! every connection accepted there is joined to a fresh connection to the
//! socket's path, made here, until the command ends.

use std::net::TcpListener as StdListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use praxis_egress::{ConnectionEvent, Disposition, RequestKind};
use tokio::net::{TcpListener, UnixStream};
use tokio::task::JoinSet;

/// Where the events of relayed connections go.
pub type Sink = Arc<dyn Fn(ConnectionEvent) + Send + Sync>;

/// How a relayed connection is named in its event: `unix:<path>`.
fn destination(socket: &std::path::Path) -> String {
    format!("unix:{}", socket.display())
}

/// Accepts on `listener` and relays each connection to `socket`, one event
/// each (a socket missing or refusing at connect time closes the
/// connection, and the event says why). Runs until aborted; aborting ends
/// every connection still open.
pub async fn serve(listener: StdListener, socket: PathBuf, sink: Sink) {
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| TcpListener::from_std(listener))
    {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("socket relay for {}: {e}", socket.display());
            return;
        }
    };
    let mut open = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((conn, _)) => {
                    open.spawn(relay(conn, socket.clone(), Arc::clone(&sink)));
                }
                Err(e) => {
                    tracing::warn!("socket relay for {}: accept: {e}", socket.display());
                    return;
                }
            },
            Some(_) = open.join_next(), if !open.is_empty() => {}
        }
    }
}

/// Joins one accepted connection to a new connection to `socket`.
async fn relay(mut conn: tokio::net::TcpStream, socket: PathBuf, sink: Sink) {
    let began = Instant::now();
    let (verdict, bytes_up, bytes_down) = match UnixStream::connect(&socket).await {
        Err(e) => (
            Disposition::Failed(format!("the socket cannot be reached: {e}")),
            0,
            0,
        ),
        Ok(mut upstream) => match tokio::io::copy_bidirectional(&mut conn, &mut upstream).await {
            Ok((up, down)) => (Disposition::Allowed, up, down),
            Err(e) => (Disposition::Failed(format!("relay broke off: {e}")), 0, 0),
        },
    };
    sink(ConnectionEvent {
        destination: destination(&socket),
        kind: RequestKind::Connect,
        verdict,
        bytes_up,
        bytes_down,
        duration: began.elapsed(),
        credentials: Vec::new(),
        intercepted: false,
        masked: 0,
    });
}
