//! The judge API: the six OpenBrain V1 endpoints as HTTP/1.1 JSON on
//! praxisd's API socket (a unix socket beside the request socket). Every
//! connection's peer is identified by the kernel (`SO_PEERCRED`) and must
//! be an operator of this praxisd. Review actions are operator requests:
//! each is checked on the peer process, pinned by a pidfd at accept, as it
//! is when the request arrives, and refused (and audited as the agent's or
//! an unverified attempt) unless that process lives outside every command.
//! A write-back only proposes memories: they wait for a human in the
//! review queue.
//!
//! Optionally (`[api] tcp` in `praxis.toml`) the same API is served on a
//! loopback TCP address, to holders of a bearer token kept in a 0600 file
//! of the state dir ([`token`]).
//!
//! Documents are parsed strictly by the `praxis_memory` contracts (a
//! refusal names the field), screened for secret-like data and
//! transcript-sized dumps, and every write is an audit event before it is
//! stored.

pub mod token;

use std::convert::Infallible;
use std::os::fd::AsFd;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use praxis_memory::contract::{self, JudgeDecision, JudgeVerdict, RecallRequest};
use praxis_memory::event::{Event as MemoryEvent, EventKind as MemoryEventKind};
use praxis_memory::intake::{IntakeLimits, screen};
use praxis_memory::recall::{policy_hits, recall};
use praxis_memory::writeback::{disputes, memories_from};
use praxis_proto::OperatorRequest;
use serde_json::{Value, json};
use tokio::net::{TcpListener, UnixListener};

use self::token::ApiToken;
use crate::conn::Peer;
use crate::errors;
use crate::front::http;
use crate::front::operator::{self, memory as ops};
use crate::pinned::{PinError, PinnedPeer};
use crate::state::Daemon;
use crate::store::memory::{self, Maker, now};

/// Largest request body read; larger is refused before it is parsed.
const MAX_BODY: usize = 64 * 1024;

/// Who sent a request.
#[derive(Clone, Debug)]
enum Client {
    /// A peer on the unix socket, named by the kernel, its process pinned
    /// at accept; checked as an operator on every request.
    Local {
        peer: Peer,
        process: Arc<Result<PinnedPeer, PinError>>,
    },
    /// A holder of the TCP bearer token. Only the daemon's own user can
    /// read the token file, so the holder acts as that user; its process is
    /// unknown, so it never makes a review action.
    Bearer(Peer),
}

impl Client {
    /// Who this client's memory writes are recorded as made by: for a
    /// local peer, the process as it is now, inside a command (the agent)
    /// or not.
    fn maker(&self, daemon: &Daemon) -> Maker {
        match self {
            Client::Local { peer, process } => {
                let now = process.as_ref().as_ref().ok().and_then(|p| {
                    p.examine(|now| (now.pid, daemon.children.contains(now)))
                        .ok()
                });
                Maker {
                    role: match now {
                        Some((_, true)) => "agent",
                        Some((_, false)) => "api client",
                        None => "unverified process",
                    },
                    uid: Some(peer.uid),
                    pid: now.map(|(pid, _)| pid).or(peer.pid),
                }
            }
            Client::Bearer(peer) => Maker {
                role: "bearer token holder",
                uid: Some(peer.uid),
                pid: None,
            },
        }
    }
}

/// Serves the API on its unix socket until the task is dropped.
pub async fn serve(daemon: Arc<Daemon>, listener: UnixListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                http::accept_failed("API", &e).await;
                continue;
            }
        };
        let peer = match Peer::of(&stream) {
            Ok(peer) => peer,
            Err(e) => {
                tracing::warn!("API peer unknown: {e}");
                continue;
            }
        };
        let process = Arc::new(PinnedPeer::of(stream.as_fd()));
        connection(&daemon, Client::Local { peer, process }, None, stream);
    }
}

/// Serves the API on a loopback TCP listener until the task is dropped:
/// every request must carry `Authorization: Bearer TOKEN`.
pub async fn serve_tcp(daemon: Arc<Daemon>, listener: TcpListener, token: ApiToken) {
    let token = Arc::new(token);
    let owner = Client::Bearer(Peer {
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
        pid: None,
        inside: None,
    });
    loop {
        match listener.accept().await {
            Ok((stream, _)) => connection(&daemon, owner.clone(), Some(Arc::clone(&token)), stream),
            Err(e) => http::accept_failed("API", &e).await,
        }
    }
}

/// Serves one connection on its own task.
fn connection<IO>(daemon: &Arc<Daemon>, client: Client, token: Option<Arc<ApiToken>>, stream: IO)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let daemon = Arc::clone(daemon);
    tokio::spawn(async move {
        let service = hyper::service::service_fn(move |request| {
            let daemon = Arc::clone(&daemon);
            let token = token.clone();
            let client = client.clone();
            async move {
                let answer = match token.as_deref().map(|t| t.admits(&request)) {
                    Some(false) => unauthorized(),
                    _ => answer(&daemon, client, request).await,
                };
                Ok::<_, Infallible>(answer)
            }
        });
        http::serve_connection("API", stream, service).await;
    });
}

fn unauthorized() -> Response<Full<Bytes>> {
    let mut response = respond(
        StatusCode::UNAUTHORIZED,
        &json!({"error": {"message": "a bearer token is required (the api-token file in the state dir)", "field": null}}),
    );
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// An API refusal: its status and a JSON body naming the field at fault.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct ApiError {
    status: StatusCode,
    message: String,
    field: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            field: None,
        }
    }

    fn invalid(e: &contract::ContractError) -> ApiError {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message: e.to_string(),
            field: e.field_path().map(str::to_owned),
        }
    }
}

fn respond(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

async fn answer(
    daemon: &Arc<Daemon>,
    client: Client,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    match route(daemon, client, request).await {
        Ok((status, body)) => respond(status, &body),
        Err(e) => respond(
            e.status,
            &json!({"error": {"message": e.message, "field": e.field}}),
        ),
    }
}

async fn body_text(request: Request<Incoming>) -> Result<String, ApiError> {
    let bytes = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("request body: {e}")))?
        .to_bytes();
    String::from_utf8(bytes.to_vec())
        .map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "request body is not UTF-8"))
}

/// Runs blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    daemon: &Arc<Daemon>,
    work: impl FnOnce(&Daemon) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let daemon = Arc::clone(daemon);
    tokio::task::spawn_blocking(move || work(&daemon))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
}

/// Admits `client` to make `as_request` as an operator, as its process is
/// now: the operator, or a refusal, audited as its maker's attempt. A
/// bearer of the token was admitted already, to all but the requests only
/// a process outside every command may make.
async fn admitted(
    daemon: &Daemon,
    client: &Client,
    as_request: &OperatorRequest,
) -> Result<Peer, ApiError> {
    let (peer, admitted) = match client {
        Client::Local { peer, process } => {
            (*peer, operator::admit(daemon, peer, process, as_request))
        }
        Client::Bearer(peer) if operator::outside_only(as_request) => (
            *peer,
            Err(operator::Refused {
                actor: operator::Actor::Bearer,
                reason: String::from(
                    "not an operator: a bearer of the API token is no known process; review actions are taken on the API socket or with `praxis review`",
                ),
            }),
        ),
        Client::Bearer(peer) => (*peer, Ok(*peer)),
    };
    match admitted {
        Ok(operator) => Ok(operator),
        Err(refused) => {
            operator::record_refused(daemon, &peer, as_request, &refused).await;
            Err(ApiError::new(StatusCode::FORBIDDEN, refused.reason))
        }
    }
}

fn internal(why: String) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, why)
}

fn not_found(why: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, why)
}

/// Refuses secret-like data and transcript-sized text, naming the field.
fn screened<T: serde::Serialize>(daemon: &Daemon, document: &T) -> Result<(), ApiError> {
    let is_secret = |text: &str| daemon.redact(text) != text;
    screen(document, &is_secret, &IntakeLimits::default()).map_err(|e| ApiError {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        message: e.to_string(),
        field: e.field().map(str::to_owned),
    })
}

/// A path segment percent-decoded: memory ids hold `/`
/// (`DECISION_ID/lesson/0`), sent as `%2F`.
fn decoded(segment: &str) -> Result<String, ApiError> {
    let bad = || {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("bad path segment {segment:?}"),
        )
    };
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3).ok_or_else(bad)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

async fn route(
    daemon: &Arc<Daemon>,
    client: Client,
    request: Request<Incoming>,
) -> Result<(StatusCode, Value), ApiError> {
    admitted(daemon, &client, &OperatorRequest::Status).await?;
    let path = request.uri().path().to_owned();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let method = request.method().clone();
    match (method, parts.as_slice()) {
        (Method::POST, ["v1", "judge", "recall"]) => {
            let text = body_text(request).await?;
            blocking(daemon, move |d| recalled(d, &text)).await
        }
        (Method::POST, ["v1", "judge", "decisions"]) => {
            let text = body_text(request).await?;
            let maker = client.maker(daemon);
            blocking(daemon, move |d| decided(d, maker, &text)).await
        }
        (Method::GET, ["v1", "judge", "decisions", id]) => {
            let id = decoded(id)?;
            blocking(daemon, move |d| {
                let store = ops::store(d).map_err(internal)?;
                match store
                    .decision(&id)
                    .map_err(|e| internal(errors::one_line(&e)))?
                {
                    Some(body) => Ok((StatusCode::OK, body)),
                    None => Err(not_found(format!("no decision {id}"))),
                }
            })
            .await
        }
        (Method::GET, ["v1", "memories", id, "inspector"]) => {
            let id = decoded(id)?;
            blocking(daemon, move |d| {
                ops::inspect_value(d, &id)
                    .map(|v| (StatusCode::OK, v))
                    .map_err(not_found)
            })
            .await
        }
        (Method::GET, ["v1", "review-queue"]) => {
            blocking(daemon, |d| {
                ops::queue_value(d)
                    .map(|v| (StatusCode::OK, v))
                    .map_err(internal)
            })
            .await
        }
        (Method::POST, ["v1", "review-queue", id, "actions"]) => {
            let id = decoded(id)?;
            let text = body_text(request).await?;
            let action: Value = serde_json::from_str(&text)
                .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("not JSON: {e}")))?;
            let operator = admitted(
                daemon,
                &client,
                &OperatorRequest::ReviewAct {
                    item_id: id.clone(),
                    action: action.clone(),
                },
            )
            .await?;
            blocking(daemon, move |d| {
                ops::acted(d, &operator, &id, action)
                    .map(|message| (StatusCode::OK, json!({"item_id": id, "message": message})))
                    .map_err(|why| ApiError::new(StatusCode::CONFLICT, why))
            })
            .await
        }
        _ => Err(not_found(format!(
            "no endpoint {} {path}",
            request.method()
        ))),
    }
}

/// `POST /v1/judge/recall`: scoped, labelled memories for a judge.
fn recalled(daemon: &Daemon, text: &str) -> Result<(StatusCode, Value), ApiError> {
    let request: RecallRequest = contract::parse(text).map_err(|e| ApiError::invalid(&e))?;
    screened(daemon, &request)?;
    let store = ops::store(daemon).map_err(internal)?;
    let memories = store.all().map_err(|e| internal(errors::one_line(&e)))?;
    let at = now();
    let hits = daemon
        .policy()
        .map(|p| policy_hits(p.rules(), &request, p.revision()))
        .unwrap_or_default();
    let answer = recall(&memories, &request, hits, at);
    let event = MemoryEvent {
        at,
        kind: MemoryEventKind::Recalled {
            request_id: request.request_id.clone(),
            workflow: request.flow_id.clone(),
            memory_ids: answer
                .response
                .memories
                .iter()
                .map(|m| m.memory_id.clone())
                .collect(),
            stale: answer.stale_returned,
            disputed: answer.disputed_returned,
        },
    };
    store
        .add_event(&event)
        .map_err(|e| internal(errors::one_line(&e)))?;
    let body = serde_json::to_value(&answer.response).map_err(|e| internal(e.to_string()))?;
    Ok((StatusCode::OK, body))
}

/// `POST /v1/judge/decisions`: a judge decision written back, once per
/// idempotency key; the memories it proposes wait for review.
fn decided(daemon: &Daemon, maker: Maker, text: &str) -> Result<(StatusCode, Value), ApiError> {
    let decision: JudgeDecision = contract::parse(text).map_err(|e| ApiError::invalid(&e))?;
    screened(daemon, &decision)?;
    let store = ops::store(daemon).map_err(internal)?;
    let at = now();
    let memories = memories_from(&decision, None, at);
    let body = serde_json::to_value(&decision).map_err(|e| internal(e.to_string()))?;
    let event = MemoryEvent {
        at,
        kind: MemoryEventKind::Decided {
            decision_id: decision.decision_id.clone(),
            decision: decision.decision,
            judge: decision.judge.kind,
            memory_used: decision.memory_used.clone(),
        },
    };
    if let Some(stored) = store
        .decision_id_for(&decision.idempotency_key)
        .map_err(|e| internal(errors::one_line(&e)))?
    {
        return Ok((
            StatusCode::OK,
            json!({"decision_id": stored, "replayed": true}),
        ));
    }
    // A human correction disputes the memories it decided against.
    let mut disputed = Vec::new();
    for id in disputes(&decision) {
        if let Some(memory) = store.get(id).map_err(|e| internal(errors::one_line(&e)))? {
            disputed.push(praxis_memory::memory::disputed(
                &memory,
                &decision.decision_id,
            ));
        }
    }
    // What it disputes was used to allow: a false allow a human corrected.
    let mut events: Vec<MemoryEvent> = std::iter::once(event)
        .chain(memories.iter().map(|m| MemoryEvent::proposed(m, at)))
        .collect();
    if !disputed.is_empty() {
        events.push(MemoryEvent {
            at,
            kind: MemoryEventKind::Overridden {
                decision_id: decision.decision_id.clone(),
                from: JudgeVerdict::Allow,
                to: decision.decision,
                by: String::from("human judge"),
            },
        });
    }
    let mut detail = serde_json::Map::new();
    detail.insert(
        "disputes".into(),
        json!(disputed.iter().map(|m| m.id()).collect::<Vec<_>>()),
    );
    detail.insert(
        "idempotency_key".into(),
        decision.idempotency_key.clone().into(),
    );
    detail.insert("decision".into(), json!(decision.decision));
    detail.insert(
        "memories".into(),
        json!(memories.iter().map(|m| m.id()).collect::<Vec<_>>()),
    );
    memory::record(
        &daemon.audit,
        "decision",
        &decision.decision_id,
        maker,
        format!("judge decision {} written back", decision.decision_id),
        detail,
    )
    .map_err(internal)?;
    let stored = store
        .put_decision(
            &decision.idempotency_key,
            &decision.decision_id,
            &body,
            &[memories.as_slice(), disputed.as_slice()].concat(),
            &events,
        )
        .map_err(|e| internal(errors::one_line(&e)))?;
    let replayed = stored.is_err();
    let decision_id = match stored {
        Ok(()) => decision.decision_id.clone(),
        Err(earlier) => earlier,
    };
    Ok((
        StatusCode::OK,
        json!({
            "decision_id": decision_id,
            "replayed": replayed,
            "memories_proposed": memories.iter().map(|m| m.id()).collect::<Vec<_>>(),
            "memories_disputed": disputed.iter().map(|m| m.id()).collect::<Vec<_>>(),
        }),
    ))
}
