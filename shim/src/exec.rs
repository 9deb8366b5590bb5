//! Running one command through praxisd: the request with its stdin and cwd
//! descriptors, the decision, then output until the exit frame. Shared by
//! `praxis-run` (which streams to its own stdout) and the MCP server (which
//! collects the output into the tool result).

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use praxis_proto::frame::Frame;
use praxis_proto::{
    ClientMsg, DecisionFrame, ExecRequest, ExitFrame, ExitStatus, ServerMsg, Verdict,
};

use crate::client::{self, ClientError};
use crate::deadline;

/// Exit status for a command that hit its time limit.
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status for HOLD and every fail-closed error.
pub const EXIT_HOLD: i32 = 125;
/// Exit status for STOP.
pub const EXIT_STOP: i32 = 126;

/// Where a command's output goes as it arrives.
pub trait Sink {
    fn stdout(&mut self, bytes: &[u8]);
    fn stderr(&mut self, bytes: &[u8]);
    /// The session control plane's advisory text: with the decision
    /// (before any output) and with the exit (after it).
    fn steer(&mut self, text: &str);
}

/// How a request ended.
#[must_use]
#[derive(Debug)]
pub enum Outcome {
    /// HOLD or STOP: nothing ran.
    Refused(DecisionFrame),
    /// Allowed and run to its end.
    Exited(ExitFrame),
}

impl Outcome {
    /// The exit status `praxis-run` reports for this outcome.
    pub fn exit_code(&self) -> Result<i32, ClientError> {
        match self {
            Outcome::Refused(frame) if frame.decision == Verdict::Stop => Ok(EXIT_STOP),
            Outcome::Refused(_) => Ok(EXIT_HOLD),
            Outcome::Exited(exit) => match &exit.status {
                ExitStatus::Code(code) => Ok(*code),
                ExitStatus::Signal(sig) => Ok(128 + sig),
                ExitStatus::TimedOut => Ok(EXIT_TIMEOUT),
                ExitStatus::Failed(why) => Err(ClientError::Refused(why.clone())),
            },
        }
    }
}

/// The audit signal for a command that did not run: the Judgment Boundary
/// fields plus how to get it approved.
pub fn refusal_json(
    verdict: Verdict,
    reason: &str,
    frame: Option<&DecisionFrame>,
) -> serde_json::Value {
    serde_json::json!({
        "decision": verdict.as_str(),
        "execution_prevented": true,
        "reason": reason,
        "request_id": frame.map(|f| f.request_id.as_str()),
        "tier": frame.map(|f| f.tier.as_str()),
        "rule_ids": frame.map(|f| f.rule_ids.clone()).unwrap_or_default(),
        "approve_with": frame.and_then(|f| f.approve_with.as_deref()),
    })
}

/// What a client reports when praxisd ended after allowing the command: it
/// may have run, so this is not a refusal and says nothing was prevented.
pub fn outcome_unknown_json(why: &str) -> serde_json::Value {
    serde_json::json!({
        "decision": "ALLOW",
        "outcome": "unknown",
        "execution_prevented": false,
        "reason": why,
    })
}

/// Sends `request` from `cwd_dir` with `stdin`, then calls `connected` with
/// the connection (to forward signals as cancels: once the request is out, a
/// cancel cannot interleave with it), and feeds the output to `sink`.
pub fn run(
    request: ExecRequest,
    stdin: OwnedFd,
    cwd_dir: File,
    sink: &mut dyn Sink,
    connected: impl FnOnce(&UnixStream),
) -> Result<Outcome, ClientError> {
    // Silence after the decision is the command's until its own limit.
    let limit = request
        .timeout_secs
        .map_or(DEFAULT_COMMAND_LIMIT, Duration::from_secs)
        .saturating_add(deadline::AFTER_LIMIT);
    let fds = [stdin.as_raw_fd(), cwd_dir.as_raw_fd()];
    let (stream, mut in_flight) = client::open_request(&ClientMsg::Exec(request), &fds)?;
    // Closed once praxisd has taken them: stdin may be a unix socket (a
    // Node.js parent's pipes are).
    in_flight.keep(stdin);
    in_flight.keep(cwd_dir);
    connected(&stream);
    replies(&stream, sink, limit, in_flight)
}

/// The longest a command runs when it asks for no limit: the shipped
/// policy's `timeout_secs`; an operator policy may only lower it.
const DEFAULT_COMMAND_LIMIT: Duration = Duration::from_secs(600);

/// Reads the decision, then output until the exit frame. Before the
/// decision nothing ran, so a lost daemon is a HOLD; after an ALLOW the
/// command may have run, so it is [`ClientError::OutcomeUnknown`].
fn replies(
    stream: &UnixStream,
    sink: &mut dyn Sink,
    limit: Duration,
    in_flight: client::InFlight,
) -> Result<Outcome, ClientError> {
    let undecided = |e: ClientError| match e {
        ClientError::Protocol(praxis_proto::FrameError::Closed) => ClientError::Refused(
            String::from("praxisd closed the connection before deciding; nothing was executed"),
        ),
        other => other,
    };
    let started = |e: ClientError| match e {
        ClientError::Protocol(_) | ClientError::Deadline(_) | ClientError::Io(_) => {
            ClientError::OutcomeUnknown(e.to_string())
        }
        other => other,
    };
    let decision = match client::recv_answer(stream, in_flight)
        .map_err(undecided)?
        .parse_message::<ServerMsg>()?
    {
        ServerMsg::Decision(d) => d,
        ServerMsg::Error(e) => return Err(ClientError::Refused(e.reason)),
        _ => {
            return Err(ClientError::Refused(String::from(
                "unexpected reply before the decision",
            )));
        }
    };
    if decision.decision != Verdict::Allow {
        return Ok(Outcome::Refused(decision));
    }
    if let Some(text) = &decision.steer {
        sink.steer(text);
    }
    client::set_deadline(stream, Some(limit)).map_err(started)?;
    loop {
        match client::recv(stream).map_err(started)? {
            Frame::Stdout(bytes) => sink.stdout(&bytes),
            Frame::Stderr(bytes) => sink.stderr(&bytes),
            message @ Frame::Message(_) => match message.parse_message::<ServerMsg>()? {
                ServerMsg::Exit(exit) => {
                    if let Some(text) = &exit.steer {
                        sink.steer(text);
                    }
                    return Ok(Outcome::Exited(exit));
                }
                ServerMsg::Error(e) => return Err(ClientError::Refused(e.reason)),
                _ => {
                    return Err(ClientError::Refused(String::from(
                        "unexpected reply during output",
                    )));
                }
            },
        }
    }
}
