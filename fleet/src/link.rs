//! One connection to the fleet store: a `postgresql://` URL, TLS by rustls
//! with the server's name checked against its certificate, and the
//! notifications the server sends on it.
//!
//! `sslmode` is read here, not by the driver: `disable` is plain text
//! (fit only for a unix socket or loopback), every other value, and the
//! default on a TCP host, verifies the certificate chain and the host name
//! (libpq's `verify-full`), against `sslrootcert` when given, else the
//! system's roots.

use std::path::PathBuf;
use std::time::Duration;

use futures_util::future::poll_fn;
use tokio::sync::mpsc;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{AsyncMessage, Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("fleet url: {0}")]
    Url(String),
    #[error("fleet store: {}", crate::link::chain(.0))]
    Postgres(#[from] tokio_postgres::Error),
    #[error("sslrootcert {path}: {why}")]
    RootCert { path: String, why: String },
    #[error("no usable root certificates on this system")]
    NoRoots,
}

/// An error with every cause behind it, on one line: the driver's own
/// text ("db error", "error performing TLS handshake") says little alone.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// How the connection is protected.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tls {
    /// `sslmode=disable`.
    Off,
    /// Verify chain and host name, against these roots (none: the system's).
    VerifyFull { root_cert: Option<PathBuf> },
}

/// The notifications that arrive on a connection; closed when it ends.
pub type Notices = mpsc::UnboundedReceiver<String>;

/// Splits the TLS parameters off `url`, which the driver would refuse or
/// read more loosely, and parses the rest.
fn parse(url: &str) -> Result<(Config, Tls), LinkError> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => (url, ""),
    };
    let mut mode = None;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", value)) => mode = Some(value.to_owned()),
            Some(("sslrootcert", value)) => root_cert = Some(PathBuf::from(value)),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config: Config = rest
        .parse()
        .map_err(|e: tokio_postgres::Error| LinkError::Url(e.to_string()))?;
    let only_sockets = config
        .get_hosts()
        .iter()
        .all(|h| matches!(h, Host::Unix(_)));
    let tls = match mode.as_deref() {
        Some("disable") => Tls::Off,
        None if only_sockets => Tls::Off,
        None | Some("require" | "verify-ca" | "verify-full") => Tls::VerifyFull { root_cert },
        Some(other) => {
            return Err(LinkError::Url(format!(
                "sslmode={other} is not supported: use verify-full (the default) or disable"
            )));
        }
    };
    config.ssl_mode(match tls {
        Tls::Off => SslMode::Disable,
        Tls::VerifyFull { .. } => SslMode::Require,
    });
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config.application_name("praxis");
    Ok((config, tls))
}

fn rustls_config(root_cert: Option<&PathBuf>) -> Result<rustls::ClientConfig, LinkError> {
    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(path) => {
            let root_err = |why: String| LinkError::RootCert {
                path: path.display().to_string(),
                why,
            };
            let pem = std::fs::read(path).map_err(|e| root_err(e.to_string()))?;
            for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
                let cert: rustls::pki_types::CertificateDer<'static> =
                    cert.map_err(|e| root_err(e.to_string()))?;
                roots.add(cert).map_err(|e| root_err(e.to_string()))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                // A system root rustls cannot parse is skipped, as browsers do.
                let _ = roots.add(cert);
            }
        }
    }
    if roots.is_empty() {
        return Err(LinkError::NoRoots);
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LinkError::Url(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Connects to `url`. The connection is driven by a task of its own, which
/// forwards every notification to the returned receiver and closes it when
/// the connection ends.
pub async fn connect(url: &str) -> Result<(Client, Notices), LinkError> {
    let (config, tls) = parse(url)?;
    let (sender, notices) = mpsc::unbounded_channel();
    let client = match tls {
        Tls::Off => {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(drive(connection, sender));
            client
        }
        Tls::VerifyFull { root_cert } => {
            let tls = MakeRustlsConnect::new(rustls_config(root_cert.as_ref())?);
            let (client, connection) = config.connect(tls).await?;
            tokio::spawn(drive(connection, sender));
            client
        }
    };
    Ok((client, notices))
}

async fn drive<S, T>(
    mut connection: tokio_postgres::Connection<S, T>,
    notices: mpsc::UnboundedSender<String>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
        match message {
            Ok(AsyncMessage::Notification(n)) => {
                // The receiver may be gone; the connection still serves queries.
                let _ = notices.send(n.payload().to_owned());
            }
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_is_verified_unless_disabled_or_on_a_socket() {
        let (_, tls) = parse("postgresql://u@db.example.invalid/fleet").unwrap();
        assert_eq!(tls, Tls::VerifyFull { root_cert: None });
        let (_, tls) =
            parse("postgresql://u@db.example.invalid/fleet?sslmode=require&sslrootcert=/ca.pem")
                .unwrap();
        assert_eq!(
            tls,
            Tls::VerifyFull {
                root_cert: Some(PathBuf::from("/ca.pem"))
            }
        );
        let (config, tls) = parse("postgresql://u@/fleet?host=/run/pg&port=5444").unwrap();
        assert_eq!(tls, Tls::Off);
        assert_eq!(config.get_ports(), [5444]);
        assert!(parse("postgresql://u@h/fleet?sslmode=prefer").is_err());
        assert!(parse("postgresql://u@h/fleet?sslmode=allow").is_err());
    }
}
