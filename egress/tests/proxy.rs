//! The proxy against real loopback listeners standing in for other hosts.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use praxis_egress::{
    BoundCredential, Ca, ConnectionEvent, Destination, Disposition, Egress, Limits, Permit,
    RequestKind,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use zeroize::Zeroizing;

const SECRET: &str = "ghp_real_value_1234";
const PLACEHOLDER: &str = "praxis-placeholder-gh";

/// Answers every request with its method, target, headers (one a line)
/// and body: what the destination saw.
async fn echo(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut seen = format!("{} {}\n", request.method(), request.uri());
    for (name, value) in request.headers() {
        seen.push_str(&format!("{name}: {}\n", value.to_str().unwrap_or("?")));
    }
    let body = request.into_body().collect().await.map(|b| b.to_bytes());
    let body = body.map(|b| String::from_utf8_lossy(&b).into_owned());
    seen.push_str(&format!("body: {}\n", body.unwrap_or_default()));
    Ok(Response::new(Full::new(Bytes::from(seen))))
}

async fn serve_echo<IO: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: IO) {
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), service_fn(echo))
        .await;
}

/// A plain HTTP host on loopback.
async fn http_host() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_echo(stream));
        }
    });
    addr
}

/// A TLS host on loopback with a certificate for 127.0.0.1 from its own
/// test CA; returns its address and that CA.
async fn tls_host() -> (SocketAddr, CertificateDer<'static>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::default();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "test upstream CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf_params = rcgen::CertificateParams::default();
    leaf_params.subject_alt_names = vec![rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(stream).await {
                    serve_echo(tls).await;
                }
            });
        }
    });
    (addr, ca_cert.der().clone())
}

struct Proxy {
    addr: SocketAddr,
    events: mpsc::UnboundedReceiver<ConnectionEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(
        permit: Permit,
        limits: Limits,
        ca: Option<Arc<Ca>>,
        roots: Vec<CertificateDer<'static>>,
    ) -> Proxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let egress = Egress::new(limits, ca, roots).unwrap();
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let _ = egress
                .serve(listener, permit, move |e| {
                    let _ = tx.send(e);
                })
                .await;
        });
        Proxy { addr, events, task }
    }

    async fn event(&mut self) -> ConnectionEvent {
        tokio::time::timeout(Duration::from_secs(10), self.events.recv())
            .await
            .expect("an event in time")
            .expect("the sink is open")
    }

    /// Sends raw bytes on a new connection and reads until the proxy closes.
    async fn exchange(&self, raw: &str) -> String {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(raw.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
            .await
            .expect("the proxy answers in time")
            .unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Opens a CONNECT tunnel and returns the stream past the proxy's 200.
    async fn tunnel(&self, target: &str) -> TcpStream {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        let ask = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
        stream.write_all(ask.as_bytes()).await.unwrap();
        let head = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        stream
    }
}

async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).await.unwrap();
        assert_eq!(n, 1, "closed before the end of the head: {head:?}");
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

fn grants(addrs: &[SocketAddr]) -> Vec<Destination> {
    addrs
        .iter()
        .map(|a| Destination::new(a.ip().to_string(), a.port()))
        .collect()
}

/// A permit for `hosts`, their loopback ports open.
fn open_permit(hosts: &[SocketAddr], credentials: Vec<BoundCredential>) -> Permit {
    Permit::new(grants(hosts), credentials)
        .unwrap()
        .with_loopback_ports(hosts.iter().map(SocketAddr::port))
}

fn credential(to: SocketAddr) -> BoundCredential {
    BoundCredential {
        name: "gh".into(),
        destinations: grants(&[to]),
        header_name: "Authorization".into(),
        header_value: Zeroizing::new(format!("Bearer {SECRET}")),
        secret: Zeroizing::new(SECRET.into()),
        placeholder: PLACEHOLDER.into(),
    }
}

fn get(target: SocketAddr, path: &str) -> String {
    format!(
        "GET http://{target}{path} HTTP/1.1\r\nHost: {target}\r\nX-Token: {PLACEHOLDER}\r\nProxy-Authorization: Basic eDp5\r\nConnection: close\r\n\r\n"
    )
}

#[tokio::test]
async fn granted_plain_http_reaches_its_host_in_origin_form() {
    let host = http_host().await;
    let permit = open_permit(&[host], vec![]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;
    let answer = proxy.exchange(&get(host, "/simple/?q=1")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("GET /simple/?q=1\n"), "{answer}");
    assert!(
        !answer.to_lowercase().contains("proxy-authorization"),
        "{answer}"
    );
    let event = proxy.event().await;
    assert_eq!(event.destination, host.to_string());
    assert_eq!(event.kind, RequestKind::Http("GET".into()));
    assert_eq!(event.verdict, Disposition::Allowed);
    assert!(event.bytes_up > 0 && event.bytes_down > 0, "{event:?}");
    assert!(event.credentials.is_empty());
}

#[tokio::test]
async fn granted_connect_tunnels_bytes_to_its_host() {
    let host = http_host().await;
    let permit = open_permit(&[host], vec![]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;
    let mut tunnel = proxy.tunnel(&host.to_string()).await;
    tunnel
        .write_all(b"GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tunnel.read_to_string(&mut answer).await.unwrap();
    assert!(answer.contains("GET /through\n"), "{answer}");
    drop(tunnel);
    let event = proxy.event().await;
    assert_eq!(event.kind, RequestKind::Connect);
    assert_eq!(event.verdict, Disposition::Allowed);
    assert!(!event.intercepted);
    assert!(event.bytes_up >= 50 && event.bytes_down > 0, "{event:?}");
}

#[tokio::test]
async fn ungranted_destinations_are_refused_with_403_and_an_event() {
    let granted = http_host().await;
    let other = http_host().await;
    let permit = open_permit(&[granted], vec![]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;

    let answer = proxy.exchange(&get(other, "/")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains(&other.to_string()) && answer.contains("praxis approve"));
    let event = proxy.event().await;
    assert_eq!(event.destination, other.to_string());
    assert!(
        matches!(event.verdict, Disposition::Refused(_)),
        "{event:?}"
    );
    assert_eq!((event.bytes_up, event.bytes_down), (0, 0));

    let connect = format!("CONNECT {other} HTTP/1.1\r\nHost: {other}\r\nConnection: close\r\n\r\n");
    let answer = proxy.exchange(&connect).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let event = proxy.event().await;
    assert_eq!(event.kind, RequestKind::Connect);
    assert!(matches!(event.verdict, Disposition::Refused(_)));

    // The same host by another name is another destination.
    let by_name = format!("localhost:{}", granted.port());
    let connect =
        format!("CONNECT {by_name} HTTP/1.1\r\nHost: {by_name}\r\nConnection: close\r\n\r\n");
    assert!(proxy.exchange(&connect).await.starts_with("HTTP/1.1 403"));
    assert_eq!(proxy.event().await.destination, by_name);
}

#[tokio::test]
async fn requests_that_are_not_proxy_requests_get_400() {
    let host = http_host().await;
    let permit = open_permit(&[host], vec![]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;

    let answer = proxy.exchange("\x16\x03\x01\x02\x00garbage\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let event = proxy.event().await;
    assert_eq!(event.kind, RequestKind::Malformed);
    assert!(matches!(event.verdict, Disposition::Refused(_)));

    let origin_form = "GET /etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert!(
        proxy
            .exchange(origin_form)
            .await
            .starts_with("HTTP/1.1 400")
    );
    assert!(matches!(
        proxy.event().await.verdict,
        Disposition::Refused(_)
    ));

    let https =
        format!("GET https://{host}/ HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    assert!(proxy.exchange(&https).await.starts_with("HTTP/1.1 400"));
    assert!(matches!(
        proxy.event().await.verdict,
        Disposition::Refused(_)
    ));
}

#[tokio::test]
async fn the_secret_goes_only_into_its_header_at_the_bound_host_and_never_comes_back() {
    let bound = http_host().await;
    let unbound = http_host().await;
    let permit = open_permit(&[bound, unbound], vec![credential(bound)]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;

    // The bound host echoes the request: it got the secret, the child sees
    // the placeholder in its place.
    let answer = proxy.exchange(&get_bound(bound, "/user")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains(&format!("authorization: Bearer {PLACEHOLDER}\n")),
        "{answer}"
    );
    assert!(!answer.contains(SECRET), "{answer}");
    let event = proxy.event().await;
    assert_eq!(event.credentials, vec!["gh".to_string()]);
    assert_eq!(event.verdict, Disposition::Allowed);
    assert_eq!(event.masked, 1, "{event:?}");

    // Another host gets the placeholder as written, never the secret.
    let answer = proxy.exchange(&get(unbound, "/user")).await;
    assert!(
        answer.contains(&format!("x-token: {PLACEHOLDER}\n")),
        "{answer}"
    );
    assert!(!answer.contains(SECRET), "{answer}");
    assert!(!answer.to_lowercase().contains("authorization"), "{answer}");
    assert!(proxy.event().await.credentials.is_empty());
}

#[tokio::test]
async fn a_placeholder_outside_its_header_is_refused_at_the_bound_host() {
    let (bound, accepted) = counting_host().await;
    let permit = open_permit(&[bound], vec![credential(bound)]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;
    let body = format!("{{\"token\":\"{PLACEHOLDER}\"}}");
    let asks = [
        ("the `x-token` header", get(bound, "/user")),
        (
            "the URL",
            get_bound(bound, &format!("/echo?t={PLACEHOLDER}")),
        ),
        (
            "the URL",
            get_bound(
                bound,
                &format!("/echo?t={}", PLACEHOLDER.replace('-', "%2D")),
            ),
        ),
        (
            "the body",
            format!(
                "POST http://{bound}/echo HTTP/1.1\r\nHost: {bound}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        ),
    ];
    for (place, ask) in asks {
        let answer = proxy.exchange(&ask).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{place}: {answer}");
        assert!(
            answer.contains(&format!("credential `gh` is in {place}")),
            "{answer}"
        );
        assert!(!answer.contains(SECRET), "{answer}");
        let event = proxy.event().await;
        assert!(
            matches!(&event.verdict, Disposition::Refused(why) if why.contains(place)),
            "{event:?}"
        );
    }
    // Nothing was sent: not even a connection.
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// A plain HTTP host that reads one request head, then answers with
/// `head` and writes each of `reads` apart, a pause between them.
async fn raw_host(head: &'static str, reads: Vec<String>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let reads = reads.clone();
            tokio::spawn(async move {
                read_head(&mut stream).await;
                stream.write_all(head.as_bytes()).await.unwrap();
                for read in reads {
                    stream.write_all(read.as_bytes()).await.unwrap();
                    stream.flush().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            });
        }
    });
    addr
}

/// The body of a chunked response.
fn dechunked(answer: &str) -> String {
    let (_, mut rest) = answer.split_once("\r\n\r\n").unwrap();
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            return body;
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

fn chunk(text: &str) -> String {
    format!("{:x}\r\n{text}\r\n", text.len())
}

#[tokio::test]
async fn a_secret_split_across_chunks_of_the_response_is_masked() {
    let (first, second) = SECRET.split_at(7);
    let host = raw_host(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        vec![
            chunk(&format!("you sent {first}")),
            chunk(&format!("{second}, and {SECRET}")),
            String::from("0\r\n\r\n"),
        ],
    )
    .await;
    let permit = open_permit(&[host], vec![credential(host)]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;
    let answer = proxy.exchange(&get_bound(host, "/")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body = dechunked(&answer);
    assert_eq!(body, format!("you sent {PLACEHOLDER}, and {PLACEHOLDER}"));
    assert_eq!(proxy.event().await.masked, 2);
}

#[tokio::test]
async fn an_encoded_response_from_a_bound_host_is_refused() {
    let host = raw_host(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\nConnection: close\r\n\r\n",
        vec![String::from("\x1f\x08\x00\x00")],
    )
    .await;
    let permit = open_permit(&[host], vec![credential(host)]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;
    let answer = proxy.exchange(&get_bound(host, "/")).await;
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(answer.contains("content-encoding"), "{answer}");
    assert!(matches!(
        proxy.event().await.verdict,
        Disposition::Refused(_)
    ));
}

/// A GET to a bound host with the placeholder where it belongs.
fn get_bound(host: SocketAddr, path: &str) -> String {
    format!(
        "GET http://{host}{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {PLACEHOLDER}\r\nConnection: close\r\n\r\n"
    )
}

/// A loopback listener that counts the connections it accepts.
async fn counting_host() -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(serve_echo(stream));
        }
    });
    (addr, accepted)
}

#[tokio::test]
async fn this_machine_is_reached_only_on_open_ports_whatever_is_granted() {
    let (host, accepted) = counting_host().await;
    let port = host.port();
    let spellings = [
        format!("127.0.0.1:{port}"),
        format!("0.0.0.0:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("localhost:{port}"),
    ];
    let granted = ["127.0.0.1", "0.0.0.0", "::ffff:127.0.0.1", "localhost"]
        .iter()
        .map(|h| Destination::new(*h, port))
        .collect();
    // Every spelling granted, the port not open.
    let permit = Permit::new(granted, vec![]).unwrap();
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;
    for target in &spellings {
        let answer = proxy
            .exchange(&format!(
                "POST http://{target}/containers/create HTTP/1.1\r\nHost: {target}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
            ))
            .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{target}: {answer}");
        assert!(answer.contains(&format!("port {port}")), "{answer}");
        assert!(matches!(
            proxy.event().await.verdict,
            Disposition::Refused(_)
        ));
        let connect =
            format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n");
        assert!(proxy.exchange(&connect).await.starts_with("HTTP/1.1 403"));
        assert!(matches!(
            proxy.event().await.verdict,
            Disposition::Refused(_)
        ));
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);

    // The same port open: through.
    let mut proxy = Proxy::start(
        open_permit(&[host], vec![]),
        Limits::default(),
        None,
        vec![],
    )
    .await;
    let answer = proxy.exchange(&get(host, "/ok")).await;
    assert!(answer.contains("GET /ok\n"), "{answer}");
    assert_eq!(proxy.event().await.verdict, Disposition::Allowed);
}

#[tokio::test]
async fn tls_to_a_bound_host_is_intercepted_carries_the_secret_and_masks_its_echo() {
    let (host, upstream_ca) = tls_host().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = Arc::new(Ca::load_or_create(dir.path()).unwrap());
    let trusted = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap();
    let permit = open_permit(&[host], vec![credential(host)]);
    let mut proxy = Proxy::start(permit, Limits::default(), Some(ca), vec![upstream_ca]).await;

    // The child trusts only the proxy's CA, as it would through SSL_CERT_FILE.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    for path in ["/first", "/second"] {
        let tunnel = proxy.tunnel(&host.to_string()).await;
        let name = ServerName::IpAddress(host.ip().into());
        let mut tls = connector.connect(name, tunnel).await.unwrap();
        let ask = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {PLACEHOLDER}\r\nConnection: close\r\n\r\n"
        );
        tls.write_all(ask.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tls.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains(&format!("GET {path}\n")), "{answer}");
        // The host got the secret; its echo comes back masked.
        assert!(
            answer.contains(&format!("authorization: Bearer {PLACEHOLDER}\n")),
            "{answer}"
        );
        assert!(!answer.contains(SECRET), "{answer}");
        drop(tls);
        let event = proxy.event().await;
        assert!(event.intercepted, "{event:?}");
        assert_eq!(event.verdict, Disposition::Allowed);
        assert_eq!(event.credentials, vec!["gh".to_string()]);
        assert_eq!(event.masked, 1);
    }
}

#[tokio::test]
async fn an_unverifiable_upstream_is_a_502_not_a_silent_pass() {
    let (host, _their_ca) = tls_host().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = Arc::new(Ca::load_or_create(dir.path()).unwrap());
    let permit = open_permit(&[host], vec![credential(host)]);
    // The upstream's CA is not among the roots.
    let mut proxy = Proxy::start(permit, Limits::default(), Some(ca), vec![]).await;
    let connect = format!("CONNECT {host} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let answer = proxy.exchange(&connect).await;
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(matches!(
        proxy.event().await.verdict,
        Disposition::Failed(_)
    ));
}

#[tokio::test]
async fn tls_to_an_unbound_host_is_a_blind_tunnel() {
    let (host, upstream_ca) = tls_host().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = Arc::new(Ca::load_or_create(dir.path()).unwrap());
    let permit = open_permit(&[host], vec![]);
    let mut proxy = Proxy::start(permit, Limits::default(), Some(ca), vec![]).await;
    // The child verifies the host's own certificate end to end.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(upstream_ca).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tunnel = proxy.tunnel(&host.to_string()).await;
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::IpAddress(host.ip().into()), tunnel)
        .await
        .unwrap();
    let ask = format!(
        "GET /x HTTP/1.1\r\nHost: {host}\r\nX-Token: {PLACEHOLDER}\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(ask.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.contains(&format!("x-token: {PLACEHOLDER}\n")),
        "{answer}"
    );
    drop(tls);
    assert!(!proxy.event().await.intercepted);
}

#[tokio::test]
async fn an_oversized_head_is_refused() {
    let host = http_host().await;
    let permit = open_permit(&[host], vec![]);
    let limits = Limits {
        max_header_bytes: 8192,
        ..Limits::default()
    };
    let mut proxy = Proxy::start(permit, limits, None, vec![]).await;
    let big = format!(
        "GET http://{host}/ HTTP/1.1\r\nHost: {host}\r\nX-Big: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let answer = proxy.exchange(&big).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    assert_eq!(proxy.event().await.kind, RequestKind::Malformed);
}

#[tokio::test]
async fn an_idle_tunnel_is_closed_and_still_reported() {
    let host = http_host().await;
    let permit = open_permit(&[host], vec![]);
    let limits = Limits {
        idle_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let mut proxy = Proxy::start(permit, limits, None, vec![]).await;
    let mut tunnel = proxy.tunnel(&host.to_string()).await;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tunnel.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the idle tunnel was not closed");
    assert_eq!(proxy.event().await.verdict, Disposition::Allowed);
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let host = http_host().await;
    let permit = open_permit(&[host], vec![]);
    let limits = Limits {
        max_connections: 1,
        ..Limits::default()
    };
    let mut proxy = Proxy::start(permit, limits, None, vec![]).await;
    let first = proxy.tunnel(&host.to_string()).await;
    let mut second = TcpStream::connect(proxy.addr).await.unwrap();
    second
        .write_all(get(host, "/second").as_bytes())
        .await
        .unwrap();
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(300), second.read(&mut byte)).await;
    assert!(
        early.is_err(),
        "a second connection was served beside the first"
    );
    drop(first);
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), second.read_to_end(&mut answer))
        .await
        .expect("served once the first closed")
        .unwrap();
    assert!(String::from_utf8_lossy(&answer).contains("GET /second\n"));
    assert_eq!(proxy.event().await.kind, RequestKind::Connect);
}

#[tokio::test]
async fn dropping_serve_ends_its_tunnels() {
    let host = http_host().await;
    let permit = open_permit(&[host], vec![]);
    let mut proxy = Proxy::start(permit, Limits::default(), None, vec![]).await;
    let mut tunnel = proxy.tunnel(&host.to_string()).await;
    proxy.task.abort();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tunnel.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the tunnel outlived serve");
    assert_eq!(proxy.event().await.kind, RequestKind::Connect);
    assert!(TcpStream::connect(proxy.addr).await.is_err());
}
