//! The operator's web console: server-rendered pages on host loopback.
//!
//! `praxis console` asks for a login URL (see [`crate::logins`]); opening
//! it sets a session cookie (HttpOnly, SameSite=Strict) and lands on the
//! Pending page. A request without a live session is 401. A request whose
//! `Host` is not the console's own address is refused (a page of another
//! site that rebinds its name to loopback). Every change is a POST that
//! carries the session's CSRF token, and is made through [`backend`] as the
//! operator the session belongs to, so it is audited as that operator's,
//! exactly as from `praxis`.
//!
//! The console listens on host loopback only; commands run in their own
//! network namespace and reach the host only through the egress proxy,
//! which never opens Praxis' own ports (the console's among them).

pub mod backend;
pub mod fleet;
mod form;
mod pages;

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use maud::Markup;
use praxis_proto::{OperatorReply, OperatorRequest};
use tokio::net::TcpListener;

use self::backend::Backend;
use self::form::Form;
use crate::front::http;
use crate::logins::{Logins, Session};

/// Largest form body read.
const MAX_BODY: usize = 16 * 1024;

/// The session cookie's name.
const COOKIE: &str = "praxis_console";

const SCRIPT: &str = include_str!("console.js");
const STYLE: &str = include_str!("console.css");

/// A console: its pages' backend and its logins.
pub struct Console<B> {
    pub backend: B,
    pub logins: Arc<Logins>,
}

/// Serves the console on `listener` until the task is dropped.
pub async fn serve<B: Backend>(console: Arc<Console<B>>, listener: TcpListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                http::accept_failed("console", &e).await;
                continue;
            }
        };
        let console = Arc::clone(&console);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let console = Arc::clone(&console);
                async move { Ok::<_, Infallible>(hardened(console.answer(request).await)) }
            });
            http::serve_connection("console", stream, service).await;
        });
    }
}

type Reply = Response<Full<Bytes>>;

/// Headers every answer carries: no framing, no inline or foreign code,
/// no caching, no referrer to other sites (a form post carries its own
/// origin, which is checked).
fn hardened(mut response: Reply) -> Reply {
    let headers = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn with_body(status: StatusCode, kind: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}

fn html(status: StatusCode, page: Markup) -> Reply {
    with_body(status, "text/html; charset=utf-8", page.into_string())
}

fn see_other(to: &str) -> Reply {
    let mut response = with_body(StatusCode::SEE_OTHER, "text/plain", "");
    if let Ok(value) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

fn refusal(status: StatusCode, why: &str) -> Reply {
    html(status, pages::refusal(status, why))
}

/// The session cookie's value in `request`, if any.
fn cookie<B>(request: &Request<B>) -> Option<String> {
    request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// Equality whose time depends on the lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && std::hint::black_box(a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y))) == 0
}

/// A logged-in request: its session and the session's id.
struct Visit {
    id: String,
    session: Session,
}

impl<B: Backend> Console<B> {
    async fn answer(&self, request: Request<Incoming>) -> Reply {
        let Some(origin) = self.logins.origin() else {
            return refusal(StatusCode::SERVICE_UNAVAILABLE, "the console is starting");
        };
        let own_host = origin.strip_prefix("http://").unwrap_or(&origin);
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        if host != Some(own_host) {
            return refusal(
                StatusCode::MISDIRECTED_REQUEST,
                "this console answers only at its own address",
            );
        }
        let path = request.uri().path().to_owned();
        let query = Form::parse(request.uri().query().unwrap_or(""));
        if (request.method(), path.as_str()) == (&Method::GET, "/login") {
            return self.login(query.get("token").unwrap_or(""));
        }
        let Some(visit) = cookie(&request).and_then(|id| {
            let session = self.logins.session(&id)?;
            Some(Visit { id, session })
        }) else {
            return refusal(
                StatusCode::UNAUTHORIZED,
                "not logged in: run `praxis console` and open the URL it prints",
            );
        };
        match *request.method() {
            Method::GET => self.page(&visit, &path, &query).await,
            Method::POST => {
                let foreign = request
                    .headers()
                    .get(header::ORIGIN)
                    .is_some_and(|o| o.as_bytes() != origin.as_bytes());
                let form = match Limited::new(request.into_body(), MAX_BODY).collect().await {
                    Ok(body) => Form::parse(&String::from_utf8_lossy(&body.to_bytes())),
                    Err(_) => return refusal(StatusCode::PAYLOAD_TOO_LARGE, "form too large"),
                };
                let token = form.get("csrf").unwrap_or("");
                if foreign || !same_secret(token.as_bytes(), visit.session.csrf.as_bytes()) {
                    return refusal(
                        StatusCode::FORBIDDEN,
                        "refused: the form did not come from this console (no valid CSRF token)",
                    );
                }
                self.change(&visit, &path, &form).await
            }
            _ => refusal(StatusCode::METHOD_NOT_ALLOWED, "GET or POST only"),
        }
    }

    fn login(&self, token: &str) -> Reply {
        match self.logins.redeem(token) {
            Ok(Some(id)) => {
                let mut response = see_other("/pending");
                let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/");
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().insert(header::SET_COOKIE, value);
                }
                response
            }
            Ok(None) => refusal(
                StatusCode::UNAUTHORIZED,
                "this login URL is spent, expired or unknown: run `praxis console` for a new one",
            ),
            Err(e) => refusal(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        }
    }

    /// Asks every host in `hosts`, each reply tagged with its host.
    async fn ask_all(
        &self,
        visit: &Visit,
        hosts: &[String],
        request: &OperatorRequest,
    ) -> Vec<(String, OperatorReply)> {
        let mut all = Vec::new();
        for host in hosts {
            let replies = self
                .backend
                .ask(host, visit.session.operator, request.clone())
                .await;
            all.extend(replies.into_iter().map(|r| (host.clone(), r)));
        }
        all
    }

    async fn page(&self, visit: &Visit, path: &str, query: &Form) -> Reply {
        match path {
            "/console.js" => return with_body(StatusCode::OK, "text/javascript", SCRIPT),
            "/console.css" => return with_body(StatusCode::OK, "text/css", STYLE),
            _ => {}
        }
        let every = self.backend.hosts().await;
        // The host filter: one host's rows, or every host's.
        let chosen = query.get("host").filter(|h| !h.is_empty());
        let hosts: Vec<String> = every
            .iter()
            .filter(|h| chosen.is_none_or(|c| c == h.as_str()))
            .cloned()
            .collect();
        let frame = |title: &str, body: Markup| {
            let flash = self.logins.take_flash(&visit.id);
            let filter = pages::HostFilter {
                page: path,
                hosts: &every,
                chosen,
            };
            html(
                StatusCode::OK,
                pages::frame(title, &visit.session, flash.as_deref(), &filter, body),
            )
        };
        match path {
            "/" => see_other("/pending"),
            "/pending" => {
                let held = self.ask_all(visit, &hosts, &OperatorRequest::Pending).await;
                frame("Pending", pages::pending(&visit.session, chosen, &held))
            }
            "/pending/rows" => {
                let held = self.ask_all(visit, &hosts, &OperatorRequest::Pending).await;
                html(StatusCode::OK, pages::pending_rows(&visit.session, &held))
            }
            "/audit" => {
                let verify = self
                    .ask_all(visit, &hosts, &OperatorRequest::AuditVerify)
                    .await;
                let request = match query.get("since").filter(|s| !s.is_empty()) {
                    Some(since) => OperatorRequest::AuditExport {
                        since: Some(since.to_owned()),
                    },
                    None => OperatorRequest::AuditTail { count: 2000 },
                };
                let events = self.ask_all(visit, &hosts, &request).await;
                frame("Audit", pages::audit(query, &verify, &events))
            }
            "/kill" => {
                let status = self.ask_all(visit, &hosts, &OperatorRequest::Status).await;
                frame("Kill switch", pages::kill(&visit.session, &status))
            }
            "/sessions" => {
                let sessions = self
                    .ask_all(visit, &hosts, &OperatorRequest::SessionList)
                    .await;
                let snapshots = self
                    .ask_all(visit, &hosts, &OperatorRequest::UndoList)
                    .await;
                frame("Sessions", pages::sessions(&sessions, &snapshots))
            }
            "/review" => {
                let queue = self.ask_all(visit, &hosts, &OperatorRequest::Review).await;
                frame("Review", pages::review(&visit.session, &queue))
            }
            "/audit/request" | "/sessions/show" => {
                // One thing on one host: a request's chain, or a session's
                // timeline.
                let (Some(host), Some(id)) = (query.get("host"), query.get("id")) else {
                    return refusal(StatusCode::BAD_REQUEST, "which host, and which id?");
                };
                let (title, request) = if path == "/audit/request" {
                    let request_id = id.to_owned();
                    ("Request", OperatorRequest::AuditShow { request_id })
                } else {
                    let session = id.to_owned();
                    ("Session", OperatorRequest::SessionShow { session })
                };
                let replies = self
                    .backend
                    .ask(host, visit.session.operator, request)
                    .await;
                let body = if path == "/audit/request" {
                    pages::request(host, id, &replies)
                } else {
                    pages::session(host, id, &replies)
                };
                frame(title, body)
            }
            _ => refusal(StatusCode::NOT_FOUND, "no such page"),
        }
    }

    /// A change: made through the backend as the session's operator, its
    /// outcome kept for the next page, then back to the page it came from.
    async fn change(&self, visit: &Visit, path: &str, form: &Form) -> Reply {
        let field = |name: &str| form.get(name).map(str::trim).filter(|v| !v.is_empty());
        let (request, back) = match path {
            "/logout" => {
                self.logins.end(&visit.id);
                return refusal(StatusCode::OK, "logged out");
            }
            "/pending/decide" => {
                let Some(request_id) = field("request_id") else {
                    return refusal(StatusCode::BAD_REQUEST, "which request?");
                };
                let note = field("note").map(str::to_owned);
                let request = match field("action") {
                    Some(action @ ("approve" | "remember")) => {
                        let ttl_secs = match field("ttl").map(str::parse::<u64>) {
                            None => None,
                            Some(Ok(ttl)) => Some(ttl),
                            Some(Err(_)) => {
                                return self.told(
                                    visit,
                                    "/pending",
                                    "the TTL is a number of seconds",
                                );
                            }
                        };
                        OperatorRequest::Approve {
                            request_id: request_id.to_owned(),
                            ttl_secs,
                            note,
                            remember: action == "remember",
                        }
                    }
                    Some("deny") => OperatorRequest::Deny {
                        request_id: request_id.to_owned(),
                        note,
                    },
                    _ => return refusal(StatusCode::BAD_REQUEST, "approve, remember or deny?"),
                };
                (request, "/pending")
            }
            "/kill" => {
                if field("confirm") != Some("yes") {
                    return self.told(visit, "/kill", "not changed: tick the confirmation first");
                }
                let Some(reason) = field("reason").map(str::to_owned) else {
                    return self.told(visit, "/kill", "not changed: give a reason");
                };
                let request = match field("action") {
                    Some("trip") => OperatorRequest::Kill {
                        reason: Some(reason),
                    },
                    Some("release") => OperatorRequest::Release {
                        reason: Some(reason),
                    },
                    _ => return refusal(StatusCode::BAD_REQUEST, "trip or release?"),
                };
                (request, "/kill")
            }
            "/review" => {
                let Some(item_id) = field("item_id") else {
                    return refusal(StatusCode::BAD_REQUEST, "which item?");
                };
                let action = match review_action(&field) {
                    Ok(action) => action,
                    Err(why) => return self.told(visit, "/review", &why),
                };
                let item_id = item_id.to_owned();
                (OperatorRequest::ReviewAct { item_id, action }, "/review")
            }
            _ => return refusal(StatusCode::NOT_FOUND, "no such action"),
        };
        let Some(host) = field("host") else {
            return refusal(StatusCode::BAD_REQUEST, "which host?");
        };
        // `*` on the Kill switch page: every host, one after the other.
        let hosts = match host {
            "*" if back == "/kill" => self.backend.hosts().await,
            one => vec![one.to_owned()],
        };
        let outcome = self
            .ask_all(visit, &hosts, &request)
            .await
            .into_iter()
            .map(|(host, r)| match r {
                OperatorReply::Done { message } => format!("{host}: {message}"),
                OperatorReply::Refused { reason } => format!("{host}: refused: {reason}"),
                other => format!("{host}: {other:?}"),
            })
            .collect::<Vec<_>>()
            .join("\n");
        self.told(visit, back, &outcome)
    }

    fn told(&self, visit: &Visit, back: &str, message: &str) -> Reply {
        self.logins.flash(&visit.id, message.to_owned());
        see_other(back)
    }
}

/// A review action as `praxis review` sends it, from the Review page's
/// form: the action's name and only the fields that action takes.
fn review_action<'a>(
    field: &impl Fn(&str) -> Option<&'a str>,
) -> Result<serde_json::Value, String> {
    let action = field("action").ok_or("choose an action")?;
    let mut object = serde_json::Map::new();
    object.insert("action".into(), action.into());
    let mut take = |names: &[&str]| {
        for name in names {
            if let Some(value) = field(name) {
                object.insert((*name).into(), value.into());
            }
        }
    };
    match action {
        "confirm" => {
            let fresh_for = match field("fresh_days").map(str::parse::<i64>) {
                None => None,
                Some(Ok(days)) => Some(days.saturating_mul(86_400)),
                Some(Err(_)) => return Err(String::from("fresh for: a number of days")),
            };
            object.insert(
                "as_instruction".into(),
                (field("as_instruction") == Some("yes")).into(),
            );
            object.insert("fresh_for".into(), fresh_for.into());
        }
        "edit" => take(&["summary", "content"]),
        "restrict" => take(&["project_id", "visibility", "role"]),
        "merge" => take(&["into"]),
        "evidence-only" | "stale" | "reject" | "escalate" => {}
        other => return Err(format!("no review action `{other}`")),
    }
    Ok(serde_json::Value::Object(object))
}
