//! Asking the daemon to judge without executing, and reporting notes: what
//! the hook adapters, the guardrail and the contract check send.

use std::os::fd::AsRawFd;
use std::path::Path;

use praxis_proto::{
    ClientMsg, DecisionFrame, JudgeRequest, NoteRequest, OperatorReply, ServerMsg, Subject,
};

use crate::client::{self, ClientError};

/// Who is asking: the agent runtime and its ids, for the audit record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    pub runtime: Option<String>,
    pub session: Option<String>,
    pub tool_call_id: Option<String>,
    /// The runtime's name of the tool, for the session's trajectory.
    pub tool: Option<String>,
    pub role: Option<String>,
    /// The runtime asks its user about a HOLD: a held command gets a
    /// one-time approval token (see `JudgeRequest::attended`).
    pub attended: bool,
    /// An allowed command is run through praxis-run, judged and audited again
    /// (see `JudgeRequest::runs_through_praxis_run`).
    pub runs_through_praxis_run: bool,
    /// The agent's own text of a shell call (see `JudgeRequest::agent_text`).
    pub agent_text: Option<String>,
}

/// Judges `subject` as if run from `cwd`; the daemon records the decision.
pub fn judge(subject: Subject, cwd: &Path, caller: &Caller) -> Result<DecisionFrame, ClientError> {
    let cwd_dir = std::fs::File::open(cwd)?;
    let request = JudgeRequest {
        subject,
        cwd: cwd.display().to_string(),
        role: caller.role.clone(),
        session: caller.session.clone(),
        runtime: caller.runtime.clone(),
        tool_call_id: caller.tool_call_id.clone(),
        tool: caller.tool.clone(),
        env: praxis_proto::forwarded_env(praxis_policy::env::forwarded),
        attended: caller.attended,
        runs_through_praxis_run: caller.runs_through_praxis_run,
        agent_text: caller.agent_text.clone(),
    };
    let (stream, in_flight) =
        client::open_request(&ClientMsg::Judge(request), &[cwd_dir.as_raw_fd()])?;
    match client::recv_answer(&stream, in_flight)?.parse_message::<ServerMsg>()? {
        ServerMsg::Decision(frame) => Ok(frame),
        ServerMsg::Error(e) => Err(ClientError::Refused(e.reason)),
        _ => Err(ClientError::Refused(String::from(
            "unexpected reply to a judge request",
        ))),
    }
}

/// Records a note in the audit log; an error when it was not recorded.
/// Returns the session control plane's steer for the agent, if the note
/// reached a boundary.
pub fn note(request: NoteRequest) -> Result<Option<String>, ClientError> {
    let (stream, in_flight) = client::open_request(&ClientMsg::Note(request), &[])?;
    match client::recv_answer(&stream, in_flight)?.parse_message::<ServerMsg>()? {
        ServerMsg::Operator {
            reply: OperatorReply::Noted { steer },
        } => Ok(Some(steer)),
        ServerMsg::Operator {
            reply: OperatorReply::Done { .. },
        } => Ok(None),
        ServerMsg::Operator {
            reply: OperatorReply::Refused { reason },
        }
        | ServerMsg::Error(praxis_proto::ErrorFrame { reason }) => {
            Err(ClientError::Refused(reason))
        }
        _ => Err(ClientError::Refused(String::from(
            "unexpected reply to a note",
        ))),
    }
}
