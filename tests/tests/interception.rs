//! TLS interception end to end through praxisd: a credential bound to a
//! loopback HTTPS host (with a certificate from its own test CA, trusted by
//! praxisd through `[egress] upstream_roots`) reaches that host as the real
//! value, while the command holds only a placeholder and trusts praxisd's
//! per-daemon CA through `SSL_CERT_FILE` and the like. Without the setting
//! the proxy refuses to talk to an upstream it cannot verify, and the value
//! goes nowhere.

mod common;

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::Daemon;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

const SECRET: &str = "s3cr3t-intercepted-value-91b4";

/// A loopback HTTPS host with a certificate for 127.0.0.1 from a CA of its
/// own: answers "tls ok" and keeps the `Authorization` headers it was sent,
/// which it also echoes back in an `X-Seen-Authorization` header.
struct TlsHost {
    port: u16,
    /// The test CA's certificate, PEM.
    ca_pem: String,
    authorization: Arc<Mutex<Vec<String>>>,
}

impl TlsHost {
    fn start() -> TlsHost {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::default();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "e2e upstream CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let mut leaf_params = rcgen::CertificateParams::default();
        leaf_params.subject_alt_names =
            vec![rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap())];
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let authorization = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&authorization);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let Ok(conn) = rustls::ServerConnection::new(Arc::clone(&config)) else {
                    continue;
                };
                let mut tls = rustls::StreamOwned::new(conn, stream);
                let mut reader = BufReader::new(&mut tls);
                // A failed handshake (an unverified peer) ends the read.
                let echo = common::read_authorization(&mut reader, &seen)
                    .map(|a| format!("X-Seen-Authorization: {a}\r\n"))
                    .unwrap_or_default();
                let body = "tls ok\n";
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\n{echo}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        });
        TlsHost {
            port,
            ca_pem: ca_cert.pem(),
            authorization,
        }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    fn authorization(&self) -> Vec<String> {
        self.authorization.lock().unwrap().clone()
    }
}

/// A daemon whose egress proxy trusts `roots` (PEM files) upstream, with
/// the `api` credential bound to `host`.
fn daemon(roots: &[&Path], host: &TlsHost) -> Daemon {
    let list: Vec<String> = roots
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    let config = format!("[egress]\nupstream_roots = [{}]\n", list.join(", "));
    let d = Daemon::start_with(
        &[("praxis.toml", &config)],
        &[("PRAXIS_E2E_API_SECRET", SECRET)],
    );
    let to = format!("127.0.0.1:{}", host.port);
    d.bind_api_credential(&to);
    d.open_loopback(&[host.port]);
    d
}

/// [`daemon`] trusting `host`'s CA upstream (the directory holds its file).
fn trusting_daemon(host: &TlsHost) -> (Daemon, tempfile::TempDir) {
    let roots = tempfile::tempdir().unwrap();
    let ca_file = roots.path().join("upstream-ca.pem");
    std::fs::write(&ca_file, &host.ca_pem).unwrap();
    (daemon(&[&ca_file], host), roots)
}

#[test]
fn a_bound_credential_reaches_an_https_host_through_interception() {
    let host = TlsHost::start();
    let (d, _roots) = trusting_daemon(&host);

    // curl verifies the proxy's certificate for 127.0.0.1 against the
    // bundle in SSL_CERT_FILE (no -k), and sends the placeholder.
    let out = d.run(&["--", "curl", "-sS", &host.url()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tls ok\n");
    assert_eq!(host.authorization(), vec![format!("Bearer {SECRET}")]);
    let intercepted = d
        .events_of_kind("egress")
        .iter()
        .any(|e| e["detail"]["intercepted"] == true);
    assert!(intercepted, "{:?}", d.events_of_kind("egress"));

    // Inside, the variable is a placeholder, and a command with network
    // has the CA variables naming praxisd's published files, which hold its
    // CA and not the value.
    let names =
        "SSL_CERT_FILE REQUESTS_CA_BUNDLE CARGO_HTTP_CAINFO GIT_SSL_CAINFO NODE_EXTRA_CA_CERTS";
    let env = d.run(&[
        "-c",
        &format!("printenv API_TOKEN {names} && curl -sS {}", host.url()),
    ]);
    let text = String::from_utf8_lossy(&env.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{env:?}");
    assert!(lines[0].starts_with("praxis-placeholder-api-"), "{text}");
    assert!(!text.contains(SECRET));
    assert!(lines[2..5].iter().all(|l| *l == lines[1]), "{text}");
    let bundle = std::fs::read_to_string(lines[1]).unwrap();
    let ca = std::fs::read_to_string(lines[5]).unwrap();
    assert!(ca.contains("BEGIN CERTIFICATE"), "{ca}");
    assert!(bundle.contains(ca.trim()), "the bundle lacks praxisd's CA");
    assert!(!bundle.contains(SECRET) && !ca.contains(SECRET));
    assert_eq!(lines[6], "tls ok");
}

#[test]
fn an_https_host_that_echoes_the_credential_hands_back_only_the_placeholder() {
    let host = TlsHost::start();
    let (d, _roots) = trusting_daemon(&host);
    let out = d.run(&["--", "curl", "-sS", "-D", "seen.txt", &host.url()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(host.authorization(), vec![format!("Bearer {SECRET}")]);
    let seen = std::fs::read_to_string(d.work().join("seen.txt")).unwrap();
    assert!(!seen.contains(SECRET), "{seen}");
    assert!(
        seen.to_lowercase()
            .contains("x-seen-authorization: bearer praxis-placeholder-api-"),
        "{seen}"
    );
    // A placeholder in another header is refused inside the tunnel too.
    let out = d.run(&[
        "-c",
        &format!("curl -sS -H \"X-Echo: $API_TOKEN\" {}", host.url()),
    ]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("is in the `x-echo` header"), "{out:?}");
    assert_eq!(host.authorization().len(), 1);
    let egress = d.events_of_kind("egress");
    assert!(
        egress.iter().any(|e| e["detail"]["masked"] == 1),
        "{egress:?}"
    );
}

#[test]
fn an_upstream_the_proxy_cannot_verify_gets_no_credential() {
    let host = TlsHost::start();
    let d = daemon(&[], &host);
    let out = d.run(&["--", "curl", "-sS", &host.url()]);
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert!(
        host.authorization().is_empty(),
        "{:?}",
        host.authorization()
    );
}
