//! The proxy itself: serves one command's listener, lets CONNECT and plain
//! HTTP through to the permit's destinations only, injects bound
//! credentials, and reports every request to the sink.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::http::uri::Authority;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio_rustls::{TlsAcceptor, TlsConnector};
use zeroize::Zeroizing;

use crate::ca::Ca;
use crate::event::{ConnectionEvent, Disposition, RequestKind};
use crate::io::{Activity, Counters, Tracked};
use crate::permit::{Host, Injection, Permit};
use crate::scan::{BoxError, OnMatch, Scanned, Tally, Watch, find, replace_all};

/// hyper refuses a read buffer smaller than this.
const MIN_BUFFER: usize = 8192;

/// A request body to a bound destination up to this size is read whole
/// and checked before anything is sent.
const CHECKED_BODY: u64 = 1 << 20;

/// Why a proxy could not be set up or a listener not served.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("the listener cannot be served: {0}")]
    Listener(std::io::Error),
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    #[error("root certificates in {path}: {why}")]
    Roots { path: String, why: String },
}

/// The certificates of a PEM file, for [`Egress::new`]'s `extra_roots`;
/// a file with none is refused, so a wrong path cannot pass unnoticed.
pub fn pem_roots(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, EgressError> {
    use rustls::pki_types::pem::PemObject;
    let failed = |why: String| EgressError::Roots {
        path: path.display().to_string(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| failed(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| failed(e.to_string()))?;
    if certs.is_empty() {
        return Err(failed(String::from("no certificate")));
    }
    Ok(certs)
}

/// Bounds on what one command's proxy will hold open.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections from the command served at once; more wait in the
    /// listener's backlog.
    pub max_connections: usize,
    /// A connection (or tunnel) with no byte moving either way for this
    /// long is closed.
    pub idle_timeout: Duration,
    /// A request's headers must arrive within this.
    pub header_read_timeout: Duration,
    /// The largest request head accepted (at least 8 KiB); larger gets 431.
    pub max_header_bytes: usize,
    /// Resolving and connecting to a destination must finish within this.
    pub connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            idle_timeout: Duration::from_secs(120),
            header_read_timeout: Duration::from_secs(30),
            max_header_bytes: 64 * 1024,
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// The daemon's egress proxy: limits, the CA for interception (if any) and
/// the roots upstream TLS is verified against. One per daemon; each command
/// gets its own [`Egress::serve`]. Cloning is cheap (shared state).
#[derive(Clone)]
pub struct Egress {
    shared: Arc<Shared>,
}

struct Shared {
    limits: Limits,
    ca: Option<Arc<Ca>>,
    upstream_tls: TlsConnector,
}

type Sink = Arc<dyn Fn(ConnectionEvent) + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;
type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Egress {
    /// `ca`: intercept TLS to destinations with a bound credential; without
    /// it such destinations get a blind tunnel and no credential.
    /// `extra_roots`: trusted for upstream TLS besides the system's roots.
    pub fn new(
        limits: Limits,
        ca: Option<Arc<Ca>>,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Egress, EgressError> {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        roots.add_parsable_certificates(extra_roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Egress {
            shared: Arc::new(Shared {
                limits,
                ca,
                upstream_tls: TlsConnector::from(Arc::new(config)),
            }),
        })
    }

    #[must_use]
    pub fn ca(&self) -> Option<&Ca> {
        self.shared.ca.as_deref()
    }

    /// Serves `listener` for one command with `permit`, calling `sink` once
    /// per request (see [`ConnectionEvent`]). Runs until dropped (or
    /// aborted); dropping it ends every connection and tunnel it started,
    /// each of which still reports its event. Returns only if the listener
    /// cannot be used.
    pub async fn serve(
        &self,
        listener: std::net::TcpListener,
        permit: Permit,
        sink: impl Fn(ConnectionEvent) + Send + Sync + 'static,
    ) -> Result<Infallible, EgressError> {
        listener
            .set_nonblocking(true)
            .map_err(EgressError::Listener)?;
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(EgressError::Listener)?;
        let (_alive, ended) = watch::channel(());
        let served = Arc::new(Served {
            shared: self.shared.clone(),
            permit,
            sink: Arc::new(sink),
            ended,
        });
        let slots = Arc::new(Semaphore::new(self.shared.limits.max_connections.max(1)));
        loop {
            let slot = slots
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| EgressError::Listener(std::io::ErrorKind::BrokenPipe.into()))?;
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(served.clone().connection(stream, Arc::new(slot)));
                }
                // Out of descriptors or an aborted handshake: wait, go on.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// What every connection of one served listener shares.
struct Served {
    shared: Arc<Shared>,
    permit: Permit,
    sink: Sink,
    /// Its sender lives in `serve`; when `serve` is dropped, this ends.
    ended: watch::Receiver<()>,
}

/// Where a request asks to go.
struct Target {
    host: Host,
    port: u16,
}

impl Target {
    fn from_authority(authority: Option<&Authority>, default_port: Option<u16>) -> Option<Target> {
        let authority = authority?;
        Some(Target {
            host: Host::parse(authority.host())?,
            port: authority.port_u16().or(default_port)?,
        })
    }

    /// The `Host` header for it, the port left out when it is the scheme's.
    fn host_header(&self, scheme_port: u16) -> Option<HeaderValue> {
        let text = if self.port == scheme_port {
            self.host.to_string()
        } else {
            self.to_string()
        };
        HeaderValue::from_str(&text).ok()
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// One upstream connection's worth of context: where, and what to count.
struct Upstream {
    target: Target,
    tls: bool,
    activity: Arc<Activity>,
    counters: Arc<Counters>,
    /// Times a bound credential's value was masked in its responses.
    masked: Arc<AtomicU64>,
}

impl Upstream {
    fn new(target: Target, tls: bool, activity: Arc<Activity>) -> Upstream {
        Upstream {
            target,
            tls,
            activity,
            counters: Arc::new(Counters::default()),
            masked: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Where the scans of one request report.
    fn tally(&self) -> Tally {
        Tally {
            masked: self.masked.clone(),
            refused: Arc::new(OnceLock::new()),
        }
    }
}

async fn ended(mut ended: watch::Receiver<()>) {
    while ended.changed().await.is_ok() {}
}

/// The HTTP/1 server side, for the child's connections and for the
/// requests inside an intercepted tunnel alike.
fn server(limits: &Limits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(MIN_BUFFER));
    builder
}

/// What the audit records of where a request asked to go: the authority
/// only, since a path or query may carry anything.
fn asked_authority(uri: &Uri) -> String {
    uri.authority().map(ToString::to_string).unwrap_or_default()
}

/// The event of a request that never reached its destination.
fn nothing_sent(
    destination: String,
    kind: RequestKind,
    verdict: Disposition,
    started: Instant,
) -> ConnectionEvent {
    ConnectionEvent {
        destination,
        kind,
        verdict,
        bytes_up: 0,
        bytes_down: 0,
        duration: started.elapsed(),
        credentials: vec![],
        intercepted: false,
        masked: 0,
    }
}

fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Headers that describe one hop, not the message; never forwarded.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

/// Puts each bound credential into its header, and only there: a
/// placeholder in any other header or in the URL refuses the request (the
/// reason says where). The destination is asked for an unencoded response,
/// so that it can be scanned.
fn inject(
    headers: &mut HeaderMap,
    path_and_query: &str,
    injections: &[&Injection],
) -> Result<(), String> {
    for injection in injections {
        let placeholder = injection.placeholder.as_bytes();
        let misplaced = headers
            .iter()
            .find(|(name, value)| {
                **name != injection.header_name && find(value.as_bytes(), placeholder).is_some()
            })
            .map(|(name, _)| format!("the `{name}` header"))
            .or_else(|| {
                (find(path_and_query.as_bytes(), placeholder).is_some()
                    || find(&percent_decoded(path_and_query), placeholder).is_some())
                .then(|| String::from("the URL"))
            });
        if let Some(place) = misplaced {
            return Err(misplaced_placeholder(injection, &place));
        }
        headers.insert(
            injection.header_name.clone(),
            injection.header_value.clone(),
        );
    }
    if !injections.is_empty() {
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
    }
    Ok(())
}

fn misplaced_placeholder(injection: &Injection, place: &str) -> String {
    format!(
        "the placeholder of credential `{}` is in {place}; it goes only in the `{}` header, which the proxy sets",
        injection.name, injection.header_name
    )
}

/// `%XX` escapes decoded (others kept as written).
fn percent_decoded(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// The request as the destination gets it: origin-form, its own `Host`,
/// no hop-by-hop headers, credentials in their headers. To a bound
/// destination, a body carrying a placeholder is refused: one of at most
/// [`CHECKED_BODY`] bytes is read whole first, so nothing is sent; a
/// larger one streams and is cut before the placeholder would pass.
async fn rewrite(
    mut request: Request<Incoming>,
    target: &Target,
    scheme_port: u16,
    injections: &[&Injection],
    tally: &Tally,
) -> Result<Request<ProxyBody>, String> {
    let origin_form = request
        .uri()
        .path_and_query()
        .and_then(|p| Uri::try_from(p.as_str()).ok())
        .unwrap_or_else(|| Uri::from_static("/"));
    let path_and_query = origin_form.to_string();
    *request.uri_mut() = origin_form;
    *request.version_mut() = hyper::Version::HTTP_11;
    let headers = request.headers_mut();
    strip_hop_by_hop(headers);
    if let Some(host) = target.host_header(scheme_port) {
        headers.insert(header::HOST, host);
    }
    inject(headers, &path_and_query, injections)?;
    let (head, body) = request.into_parts();
    if injections.is_empty() {
        return Ok(Request::from_parts(
            head,
            body.map_err(BoxError::from).boxed(),
        ));
    }
    let small = body.size_hint().upper().is_some_and(|n| n <= CHECKED_BODY);
    if small {
        let whole = body
            .collect()
            .await
            .map_err(|e| format!("the request body did not arrive: {e}"))?
            .to_bytes();
        if let Some(injection) = injections
            .iter()
            .find(|i| find(&whole, i.placeholder.as_bytes()).is_some())
        {
            return Err(misplaced_placeholder(injection, "the body"));
        }
        let full = Full::new(whole).map_err(|never| match never {}).boxed();
        return Ok(Request::from_parts(head, full));
    }
    let watches = injections
        .iter()
        .map(|i| Watch {
            text: Zeroizing::new(i.placeholder.as_bytes().to_vec()),
            on_match: OnMatch::Refuse(misplaced_placeholder(i, "the body")),
        })
        .collect();
    let scanned = Scanned::new(body, Arc::new(watches), tally.clone()).boxed();
    Ok(Request::from_parts(head, scanned))
}

/// The response as the child gets it: no hop-by-hop headers and, from a
/// bound destination, every credential's value masked (back to its
/// placeholder) in headers and body. A body in a content-encoding cannot
/// be scanned, so such a response is refused.
fn respond(
    response: Response<Incoming>,
    target: &Target,
    injections: &[&Injection],
    tally: &Tally,
) -> Response<ProxyBody> {
    let mut response = response.map(|body| body.map_err(BoxError::from).boxed());
    strip_hop_by_hop(response.headers_mut());
    if injections.is_empty() {
        return response;
    }
    if let Some(encoding) = response
        .headers()
        .get(header::CONTENT_ENCODING)
        .filter(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        let reason = tally.refuse(format!(
            "the response of {target} is in content-encoding {encoding:?}, which the proxy cannot scan for the credential it sent there"
        ));
        return text(
            StatusCode::BAD_GATEWAY,
            format!("praxis egress: {reason}\n"),
        );
    }
    for value in response.headers_mut().values_mut() {
        for injection in injections {
            let masked = replace_all(
                value.as_bytes(),
                injection.secret.as_bytes(),
                injection.placeholder.as_bytes(),
            );
            if let Some((masked, count)) = masked {
                *value = HeaderValue::from_bytes(&masked)
                    .unwrap_or_else(|_| HeaderValue::from_static("(masked)"));
                tally.masked.fetch_add(count, Ordering::Relaxed);
            }
        }
    }
    // Masking changes the length.
    response.headers_mut().remove(header::CONTENT_LENGTH);
    let watches = injections
        .iter()
        .map(|i| Watch {
            text: Zeroizing::new(i.secret.as_bytes().to_vec()),
            on_match: OnMatch::Mask(Bytes::from(i.placeholder.clone())),
        })
        .collect();
    response.map(|body| Scanned::new(body, Arc::new(watches), tally.clone()).boxed())
}

/// Sends a rewritten request on and answers the child: the response (see
/// [`respond`]), 403 when the scan of its body refused it, 502 when the
/// destination failed.
async fn exchange(
    sender: &mut SendRequest<ProxyBody>,
    request: Request<ProxyBody>,
    target: &Target,
    injections: &[&Injection],
    tally: &Tally,
) -> Response<ProxyBody> {
    match sender.send_request(request).await {
        Ok(response) => respond(response, target, injections, tally),
        Err(e) => match tally.refused.get() {
            Some(reason) => text(StatusCode::FORBIDDEN, format!("praxis egress: {reason}\n")),
            None => text(
                StatusCode::BAD_GATEWAY,
                format!("praxis egress: {target}: {e}\n"),
            ),
        },
    }
}

impl Served {
    fn record(&self, event: ConnectionEvent) {
        (self.sink)(event);
    }

    fn refuse(
        &self,
        status: StatusCode,
        destination: String,
        kind: RequestKind,
        reason: String,
        started: Instant,
    ) -> Response<ProxyBody> {
        let body = format!("praxis egress: {reason}\n");
        self.record(nothing_sent(
            destination,
            kind,
            Disposition::Refused(reason),
            started,
        ));
        text(status, body)
    }

    /// The answer and event for a destination that was granted but could
    /// not be used.
    fn unreachable(
        &self,
        target: &Target,
        kind: RequestKind,
        verdict: Disposition,
        started: Instant,
    ) -> Response<ProxyBody> {
        let status = match verdict {
            Disposition::Refused(_) => StatusCode::FORBIDDEN,
            Disposition::Allowed | Disposition::Failed(_) => StatusCode::BAD_GATEWAY,
        };
        let body = format!("praxis egress: {}\n", reason_of(&verdict));
        self.record(nothing_sent(target.to_string(), kind, verdict, started));
        text(status, body)
    }

    fn not_granted(
        &self,
        target: &Target,
        kind: RequestKind,
        started: Instant,
    ) -> Response<ProxyBody> {
        self.refuse(
            StatusCode::FORBIDDEN,
            target.to_string(),
            kind,
            format!(
                "{target} is not granted to this command; it needs a grant naming it (a policy rule, or `praxis approve` of a request that names it)"
            ),
            started,
        )
    }

    async fn connection(self: Arc<Self>, stream: TcpStream, slot: Arc<OwnedSemaphorePermit>) {
        let _ = stream.set_nodelay(true);
        let activity = Activity::new();
        let io = TokioIo::new(Tracked::new(stream, activity.clone(), None));
        let limits = &self.shared.limits;
        let handler = self.clone();
        let handler_activity = activity.clone();
        let service = service_fn(move |request| {
            let handler = handler.clone();
            let slot = slot.clone();
            let activity = handler_activity.clone();
            async move { Ok::<_, Infallible>(handler.handle(request, slot, activity).await) }
        });
        let started = Instant::now();
        let conn = server(limits).serve_connection(io, service).with_upgrades();
        tokio::select! {
            served = conn => {
                if let Err(e) = served
                    && e.is_parse()
                {
                    // hyper has answered 400 (431 for an oversized head).
                    self.record(nothing_sent(
                        String::new(),
                        RequestKind::Malformed,
                        Disposition::Refused(format!("not an HTTP request: {e}")),
                        started,
                    ));
                }
            }
            () = activity.idle_for(limits.idle_timeout) => {}
            () = ended(self.ended.clone()) => {}
        }
    }

    async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
        slot: Arc<OwnedSemaphorePermit>,
        activity: Arc<Activity>,
    ) -> Response<ProxyBody> {
        let started = Instant::now();
        if request.method() == Method::CONNECT {
            self.connect(request, slot, activity, started).await
        } else {
            self.plain(request, activity, started).await
        }
    }

    async fn plain(
        self: Arc<Self>,
        request: Request<Incoming>,
        activity: Arc<Activity>,
        started: Instant,
    ) -> Response<ProxyBody> {
        let kind = RequestKind::Http(request.method().to_string());
        let asked = asked_authority(request.uri());
        let reason = match request.uri().scheme_str() {
            Some("http") => None,
            Some(_) => Some(
                "only http:// URLs are forwarded as requests; other schemes go through CONNECT",
            ),
            None => Some("not a proxy request: send an absolute http:// URL, or CONNECT host:port"),
        };
        if let Some(reason) = reason {
            return self.refuse(
                StatusCode::BAD_REQUEST,
                asked,
                kind,
                reason.to_owned(),
                started,
            );
        }
        let Some(target) = Target::from_authority(request.uri().authority(), Some(80)) else {
            let reason = format!("{asked:?} is not a valid host");
            return self.refuse(StatusCode::BAD_REQUEST, asked, kind, reason, started);
        };
        if !self.permit.allows(&target.host, target.port) {
            return self.not_granted(&target, kind, started);
        }
        let upstream = Upstream::new(target, false, activity);
        let injections: Vec<&Injection> = self
            .permit
            .injections_for(&upstream.target.host, upstream.target.port)
            .collect();
        let credentials = injections.iter().map(|i| i.name.clone()).collect();
        let tally = upstream.tally();
        let request = match rewrite(request, &upstream.target, 80, &injections, &tally).await {
            Ok(request) => request,
            Err(reason) => {
                let destination = upstream.target.to_string();
                return self.refuse(StatusCode::FORBIDDEN, destination, kind, reason, started);
            }
        };
        let (mut sender, driver) = match self.open(&upstream).await {
            Ok(opened) => opened,
            Err(verdict) => return self.unreachable(&upstream.target, kind, verdict, started),
        };
        let destination = upstream.target.to_string();
        let counters = upstream.counters.clone();
        let masked = upstream.masked.clone();
        let refused = tally.refused.clone();
        let reporter = self.clone();
        // Dropped with the child's response body: the event waits for the
        // whole response, since masks in its body count as it streams.
        let (response_alive, response_done) = oneshot::channel::<()>();
        tokio::spawn(async move {
            tokio::select! {
                () = driver => {}
                () = ended(reporter.ended.clone()) => {}
            }
            tokio::select! {
                _ = response_done => {}
                () = ended(reporter.ended.clone()) => {}
            }
            let (bytes_up, bytes_down) = counters.totals();
            reporter.record(ConnectionEvent {
                destination,
                kind,
                verdict: refused.get().map_or(Disposition::Allowed, |why| {
                    Disposition::Refused(why.clone())
                }),
                bytes_up,
                bytes_down,
                duration: started.elapsed(),
                credentials,
                intercepted: false,
                masked: masked.load(Ordering::Relaxed),
            });
        });
        let response = exchange(&mut sender, request, &upstream.target, &injections, &tally).await;
        response.map(move |body| {
            body.map_frame(move |frame| {
                let _alive = &response_alive;
                frame
            })
            .boxed()
        })
    }

    async fn connect(
        self: Arc<Self>,
        request: Request<Incoming>,
        slot: Arc<OwnedSemaphorePermit>,
        activity: Arc<Activity>,
        started: Instant,
    ) -> Response<ProxyBody> {
        let kind = RequestKind::Connect;
        let Some(target) = Target::from_authority(request.uri().authority(), None) else {
            let asked = asked_authority(request.uri());
            return self.refuse(
                StatusCode::BAD_REQUEST,
                asked,
                kind,
                "CONNECT needs host:port".to_owned(),
                started,
            );
        };
        if !self.permit.allows(&target.host, target.port) {
            return self.not_granted(&target, kind, started);
        }
        let credentials: Vec<String> = self
            .permit
            .injections_for(&target.host, target.port)
            .map(|i| i.name.clone())
            .collect();
        let interception = match &self.shared.ca {
            Some(ca) if !credentials.is_empty() => match ca.server_config(&target.host) {
                Ok(config) => Some(config),
                Err(e) => {
                    let verdict = Disposition::Failed(format!("no certificate for {target}: {e}"));
                    return self.unreachable(&target, kind, verdict, started);
                }
            },
            _ => None,
        };
        let upstream = Upstream::new(target, interception.is_some(), activity);
        let tunnel = match interception {
            None => match self.dial(&upstream).await {
                Ok(stream) => Tunnel::Blind(stream),
                Err(verdict) => return self.unreachable(&upstream.target, kind, verdict, started),
            },
            Some(config) => match self.open(&upstream).await {
                Ok((sender, driver)) => Tunnel::Intercepted {
                    config,
                    sender,
                    driver,
                },
                Err(verdict) => return self.unreachable(&upstream.target, kind, verdict, started),
            },
        };
        let intercepted = matches!(tunnel, Tunnel::Intercepted { .. });
        let credentials = if intercepted { credentials } else { vec![] };
        let this = self.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let limits = &this.shared.limits;
            let work = this.tunnel(request, tunnel, &upstream);
            let outcome = tokio::select! {
                outcome = work => outcome,
                () = upstream.activity.idle_for(limits.idle_timeout) => Ok(()),
                () = ended(this.ended.clone()) => Ok(()),
            };
            let (bytes_up, bytes_down) = upstream.counters.totals();
            this.record(ConnectionEvent {
                destination: upstream.target.to_string(),
                kind: RequestKind::Connect,
                verdict: outcome.map_or_else(Disposition::Failed, |()| Disposition::Allowed),
                bytes_up,
                bytes_down,
                duration: started.elapsed(),
                credentials,
                intercepted,
                masked: upstream.masked.load(Ordering::Relaxed),
            });
        });
        Response::new(
            Full::new(Bytes::new())
                .map_err(|never| match never {})
                .boxed(),
        )
    }

    /// Runs an accepted CONNECT once the child has our 200.
    async fn tunnel(
        self: &Arc<Self>,
        request: Request<Incoming>,
        tunnel: Tunnel,
        upstream: &Upstream,
    ) -> Result<(), String> {
        let upgraded = hyper::upgrade::on(request)
            .await
            .map_err(|e| format!("the tunnel did not start: {e}"))?;
        let mut client = TokioIo::new(upgraded);
        match tunnel {
            Tunnel::Blind(mut stream) => tokio::io::copy_bidirectional(&mut client, &mut stream)
                .await
                .map(drop)
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => Ok(()),
                    _ => Err(format!("tunnel: {e}")),
                }),
            Tunnel::Intercepted {
                config,
                sender,
                driver,
            } => {
                tokio::spawn(self.clone().drive(driver));
                self.intercept(client, config, sender, upstream).await
            }
        }
    }

    async fn drive(self: Arc<Self>, driver: Driver) {
        tokio::select! {
            () = driver => {}
            () = ended(self.ended.clone()) => {}
        }
    }

    /// Terminates the child's TLS with a leaf from our CA and forwards each
    /// request inside it to the destination over verified TLS, credentials
    /// in. The upstream connection is reused while it stays open.
    async fn intercept(
        self: &Arc<Self>,
        client: TokioIo<hyper::upgrade::Upgraded>,
        config: Arc<ServerConfig>,
        first: SendRequest<ProxyBody>,
        upstream: &Upstream,
    ) -> Result<(), String> {
        let tls = TlsAcceptor::from(config)
            .accept(client)
            .await
            .map_err(|e| format!("TLS from the command: {e}"))?;
        let sender = Arc::new(Mutex::new(Some(first)));
        let this = self.clone();
        let upstream = Arc::new(Upstream {
            target: Target {
                host: upstream.target.host.clone(),
                port: upstream.target.port,
            },
            tls: true,
            activity: upstream.activity.clone(),
            counters: upstream.counters.clone(),
            masked: upstream.masked.clone(),
        });
        let service = service_fn(move |request: Request<Incoming>| {
            let this = this.clone();
            let sender = sender.clone();
            let upstream = upstream.clone();
            async move {
                Ok::<_, Infallible>(this.forward_intercepted(request, &sender, &upstream).await)
            }
        });
        server(&self.shared.limits)
            .serve_connection(TokioIo::new(tls), service)
            .await
            .map_err(|e| format!("inside the intercepted tunnel: {e}"))
    }

    async fn forward_intercepted(
        self: &Arc<Self>,
        request: Request<Incoming>,
        sender: &Mutex<Option<SendRequest<ProxyBody>>>,
        upstream: &Upstream,
    ) -> Response<ProxyBody> {
        let started = Instant::now();
        let target = &upstream.target;
        let kind = RequestKind::Http(request.method().to_string());
        let injections: Vec<&Injection> = self
            .permit
            .injections_for(&target.host, target.port)
            .collect();
        let tally = upstream.tally();
        let request = match rewrite(request, target, 443, &injections, &tally).await {
            Ok(request) => request,
            Err(reason) => {
                return self.refuse(
                    StatusCode::FORBIDDEN,
                    target.to_string(),
                    kind,
                    reason,
                    started,
                );
            }
        };
        let mut slot = sender.lock().await;
        let mut reusable = slot.take();
        if let Some(open) = reusable.as_mut()
            && open.ready().await.is_err()
        {
            reusable = None;
        }
        let mut open = match reusable {
            Some(open) => open,
            None => match self.open(upstream).await {
                Ok((open, driver)) => {
                    tokio::spawn(self.clone().drive(driver));
                    open
                }
                Err(verdict) => {
                    return text(
                        StatusCode::BAD_GATEWAY,
                        format!("praxis egress: {}\n", reason_of(&verdict)),
                    );
                }
            },
        };
        let response = exchange(&mut open, request, target, &injections, &tally).await;
        *slot = Some(open);
        // The tunnel's own event is of the tunnel; a refused request in it
        // gets one of its own.
        if let Some(reason) = tally.refused.get() {
            self.record(nothing_sent(
                target.to_string(),
                kind,
                Disposition::Refused(reason.clone()),
                started,
            ));
        }
        response
    }

    /// Resolves (here, never in the child) and connects. A name other than
    /// `localhost` is not connected to a loopback, unspecified or link-local
    /// address it resolves to: a grant by name is for a host elsewhere, and
    /// must not become a way into this machine's own services or a cloud
    /// metadata endpoint. An IP-literal grant is taken as meant, except
    /// that this machine is reached only on the permit's loopback ports,
    /// whatever was granted.
    async fn dial(&self, upstream: &Upstream) -> Result<Tracked<TcpStream>, Disposition> {
        let target = &upstream.target;
        let attempt = async {
            let addresses: Vec<SocketAddr> = match &target.host {
                Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
                Host::Name(name) => tokio::net::lookup_host((name.as_str(), target.port))
                    .await
                    .map_err(|e| {
                        Disposition::Failed(format!("cannot resolve {}: {e}", target.host))
                    })?
                    .collect(),
            };
            let usable = usable_addresses(&target.host, addresses);
            if usable.is_empty() {
                return Err(Disposition::Refused(format!(
                    "{} resolves only to addresses of this machine or its link, which only `localhost` or an IP-literal grant may reach",
                    target.host
                )));
            }
            if !self.permit.loopback_port_open(target.port)
                && usable
                    .iter()
                    .any(|a| is_this_machine(a.ip().to_canonical()))
            {
                return Err(Disposition::Refused(format!(
                    "{target} is port {} of this machine, which is not open to commands (the operator opens one with `[loopback] ports`)",
                    target.port
                )));
            }
            let mut last = None;
            for address in usable {
                match TcpStream::connect(address).await {
                    Ok(stream) => {
                        let _ = stream.set_nodelay(true);
                        return Ok(stream);
                    }
                    Err(e) => last = Some(e),
                }
            }
            Err(Disposition::Failed(format!(
                "cannot connect to {target}: {}",
                last.map(|e| e.to_string()).unwrap_or_default()
            )))
        };
        let stream = tokio::time::timeout(self.shared.limits.connect_timeout, attempt)
            .await
            .unwrap_or_else(|_| {
                Err(Disposition::Failed(format!(
                    "connecting to {target} timed out"
                )))
            })?;
        Ok(Tracked::new(
            stream,
            upstream.activity.clone(),
            Some(upstream.counters.clone()),
        ))
    }

    /// Dials and opens an HTTP/1.1 client connection (over verified TLS when
    /// `upstream.tls`); the driver must be polled for it to make progress.
    async fn open(
        &self,
        upstream: &Upstream,
    ) -> Result<(SendRequest<ProxyBody>, Driver), Disposition> {
        let stream = self.dial(upstream).await?;
        if !upstream.tls {
            return handshake(stream, &upstream.target).await;
        }
        let target = &upstream.target;
        let name = match &target.host {
            Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
            Host::Name(name) => ServerName::try_from(name.clone())
                .map_err(|e| Disposition::Failed(format!("{target}: {e}")))?,
        };
        let tls = self
            .shared
            .upstream_tls
            .connect(name, stream)
            .await
            .map_err(|e| Disposition::Failed(format!("TLS to {target}: {e}")))?;
        handshake(tls, target).await
    }
}

/// An accepted CONNECT, ready to run once the child has its 200.
enum Tunnel {
    Blind(Tracked<TcpStream>),
    Intercepted {
        config: Arc<ServerConfig>,
        sender: SendRequest<ProxyBody>,
        driver: Driver,
    },
}

async fn handshake<IO>(
    io: IO,
    target: &Target,
) -> Result<(SendRequest<ProxyBody>, Driver), Disposition>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| Disposition::Failed(format!("HTTP to {target}: {e}")))?;
    Ok((
        sender,
        Box::pin(async move {
            let _ = connection.await;
        }),
    ))
}

/// The resolved addresses a host's grant may reach (see [`Served::dial`]).
fn usable_addresses(host: &Host, resolved: Vec<SocketAddr>) -> Vec<SocketAddr> {
    if host.is_localhost() || matches!(host, Host::Ip(_)) {
        return resolved;
    }
    resolved
        .into_iter()
        .filter(|a| !is_this_machine_or_link(a.ip().to_canonical()))
        .collect()
}

/// Loopback, or the unspecified address, which reaches loopback on Linux.
fn is_this_machine(ip: IpAddr) -> bool {
    ip.is_loopback() || ip.is_unspecified()
}

fn is_this_machine_or_link(ip: IpAddr) -> bool {
    is_this_machine(ip)
        || match ip {
            IpAddr::V4(v4) => v4.is_link_local(),
            IpAddr::V6(v6) => v6.is_unicast_link_local(),
        }
}

fn reason_of(verdict: &Disposition) -> String {
    match verdict {
        Disposition::Allowed => String::new(),
        Disposition::Refused(reason) | Disposition::Failed(reason) => reason.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn a_granted_name_never_leads_to_this_machine_or_its_link() {
        let name = Host::parse("registry.example.org").unwrap();
        let resolved = addrs(&[
            "127.0.0.1:443",
            "[::1]:443",
            "0.0.0.0:443",
            "169.254.169.254:443",
            "[fe80::1]:443",
            "[::ffff:127.0.0.2]:443",
            "192.0.2.10:443",
            "[2001:db8::1]:443",
        ]);
        assert_eq!(
            usable_addresses(&name, resolved.clone()),
            addrs(&["192.0.2.10:443", "[2001:db8::1]:443"])
        );
        for local in ["localhost", "x.localhost", "127.0.0.1", "169.254.169.254"] {
            let host = Host::parse(local).unwrap();
            assert_eq!(
                usable_addresses(&host, resolved.clone()),
                resolved,
                "{local}"
            );
        }
    }
}
