//! The messages of the exec and operator protocols.

use serde::{Deserialize, Serialize};

use crate::verdict::{Profile, Verdict};

/// The command of a request: an argv, or a shell string run with the configured shell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Argv(Vec<String>),
    Shell(String),
}

/// A request to run a command. The client's stdin and an `O_PATH` descriptor
/// of its working directory travel beside it with `SCM_RIGHTS`; `cwd` is the
/// client's own view of that directory, kept for the audit record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecRequest {
    pub command: Command,
    pub cwd: String,
    /// Role the client claims; the daemon decides whether it may.
    pub role: Option<String>,
    pub session: Option<String>,
    /// Agent runtime name (`claude-code`, `codex`, …), for the audit record.
    pub runtime: Option<String>,
    pub tool_call_id: Option<String>,
    /// Allowlisted environment of the client (PATH, TERM, LANG, …).
    pub env: Vec<(String, String)>,
    /// Requested wall-clock limit; the daemon takes the lower of this and policy's.
    pub timeout_secs: Option<u64>,
    /// A one-time approval token the daemon minted when it judged this exact
    /// request for a runtime that asks its user. It only lifts a policy HOLD
    /// of the same request digest and session, once; it never widens anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_token: Option<String>,
}

/// How a file tool touches its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAccess {
    Read,
    Write,
}

/// What a judge request asks about: a command an agent wants to run, or the
/// action of one of its runtime's own tools.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Subject {
    Command {
        command: Command,
    },
    /// A file tool (Write, Edit, Read…) on one path.
    File {
        path: String,
        access: FileAccess,
    },
    /// A fetch of one URL by the runtime itself.
    Fetch {
        url: String,
    },
    /// Any other tool of the runtime, by name.
    Tool {
        name: String,
        /// The call's arguments as JSON with sorted keys: what an operator's
        /// approval of a held call binds besides the name, so the same tool
        /// with another target is a new request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<String>,
    },
}

/// A request to decide and audit without executing: the hook adapters and
/// guardrails ask this before their runtime acts. A cwd descriptor travels
/// beside it with `SCM_RIGHTS`, as for exec.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeRequest {
    pub subject: Subject,
    pub cwd: String,
    pub role: Option<String>,
    pub session: Option<String>,
    pub runtime: Option<String>,
    pub tool_call_id: Option<String>,
    /// The runtime's name of the tool (`Edit`, `Bash`, `TodoWrite`, ...), for
    /// the session's trajectory; the subject is what is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub env: Vec<(String, String)>,
    /// The runtime puts a HOLD to its human user (Claude Code's `ask`): the
    /// daemon mints a one-time approval token for a held command, so that
    /// the user's yes is the approval.
    #[serde(default)]
    pub attended: bool,
    /// The adapter runs an allowed command through praxis-run, which judges
    /// and audits it again before it runs: the decision record of this ALLOW
    /// commits right after the answer instead of before it.
    #[serde(default)]
    pub runs_through_praxis_run: bool,
    /// The agent's own text of a shell call, as it wrote it (the subject is
    /// what a `praxis-run` call in it wraps): praxisd refuses a call that
    /// names the operator CLI or carries an approval token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_text: Option<String>,
}

/// Something an adapter reports for the audit trail, with no decision to
/// make: a tool call's outcome, a session's end, a contract verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteRequest {
    /// `tool_finished`, `session_ended`, `contract_checked`.
    pub kind: String,
    pub session: Option<String>,
    pub runtime: Option<String>,
    pub tool_call_id: Option<String>,
    /// For a contract verdict: ALLOW or STOP.
    pub decision: Option<Verdict>,
    pub reason: Option<String>,
    /// Adapter-specific facts (exit code, contract name, digest); never raw output.
    pub detail: serde_json::Map<String, serde_json::Value>,
}

/// Client to daemon.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ClientMsg {
    Exec(ExecRequest),
    /// Stop the running command (the client got SIGINT/SIGTERM).
    Cancel,
    Operator {
        request: OperatorRequest,
    },
    /// Decide and audit, never execute; answered with a decision frame.
    Judge(JudgeRequest),
    /// Record an adapter's note; answered with `OperatorReply::Done` or an error.
    Note(NoteRequest),
}

/// The daemon's decision on an exec request, sent before any output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionFrame {
    pub request_id: String,
    pub decision: Verdict,
    pub tier: String,
    pub reason: String,
    pub rule_ids: Vec<String>,
    pub profile: Profile,
    /// For HOLD: the operator command that would approve it.
    pub approve_with: Option<String>,
    /// For a HOLD judged for an attended runtime: the one-time token that
    /// runs this exact request once, in this session, if the user says yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_token: Option<String>,
    /// Advisory text of the session control plane for the agent (a boundary
    /// was reached): delivered through the runtime's own channel, it stops nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steer: Option<String>,
    /// The revision (hash) of the policy that decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_revision: Option<String>,
    /// The memories the decision used, and how (`instruction`, `evidence`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_used: Vec<MemoryUsed>,
}

/// One memory a decision used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryUsed {
    pub memory_id: String,
    pub used_as: String,
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
    TimedOut,
    /// Ran, but the daemon could not see it through (one-line reason).
    Failed(String),
}

/// The last frame of an executed request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitFrame {
    pub status: ExitStatus,
    pub duration_ms: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub truncated: bool,
    /// Set when the daemon ended the command: kill switch, cancel, shutdown.
    pub killed_because: Option<String>,
    /// Advisory text of the session control plane that the command's end
    /// reached (a failure loop): the client shows it after the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steer: Option<String>,
}

/// A refusal at the protocol level (malformed, oversized, wrong version…).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorFrame {
    pub reason: String,
}

/// Operator requests: state changes are refused from inside sandboxed
/// commands and from uids the daemon does not trust.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum OperatorRequest {
    Status,
    Kill {
        reason: Option<String>,
    },
    Release {
        /// Why, for the audit log.
        #[serde(default)]
        reason: Option<String>,
    },
    Reload,
    AuditVerify,
    /// Checks the chain and that it holds event `seq` with hash `hash`, a
    /// head kept outside this host (`praxis audit anchor`).
    AuditVerifyAnchor {
        seq: u64,
        hash: String,
    },
    /// The chain's head (`seq hash`), for keeping outside this host.
    AuditAnchor,
    AuditTail {
        count: u32,
    },
    /// Events after `seq`, for `tail -f` and `watch`.
    AuditAfter {
        seq: u64,
        limit: u32,
    },
    AuditShow {
        request_id: String,
    },
    /// Events since an RFC 3339 timestamp or unix seconds (all when None).
    AuditExport {
        since: Option<String>,
    },
    /// Held requests waiting for an operator.
    Pending,
    /// One-shot approval of a held request, valid for `ttl_secs` (daemon default when None).
    Approve {
        request_id: String,
        ttl_secs: Option<u64>,
        note: Option<String>,
        /// Also propose a lesson generalised from the request, for review.
        #[serde(default)]
        remember: bool,
    },
    /// Closes a held request (or withdraws its unused approval).
    Deny {
        request_id: String,
        note: Option<String>,
    },
    /// Adds (or replaces) a brokered credential: a reference, never a value.
    CredAdd(CredentialSpec),
    CredList,
    CredRevoke {
        name: String,
    },
    /// Puts back what a command removed or overwrote, from its snapshot;
    /// refused when the files changed since, unless `force`.
    Undo {
        request_id: String,
        force: bool,
    },
    /// The snapshots kept, and until when.
    UndoList,
    /// Ends a user-mode daemon cleanly (as SIGTERM does).
    Stop,
    /// The agent sessions the session control plane keeps state for.
    SessionList,
    /// One session's trajectory: every audit event recorded under its id
    /// (actions, boundaries, windows, steers, checkpoints), in order.
    SessionShow {
        session: String,
    },
    /// The judgment-memory review queue.
    Review,
    /// A review action on a queued memory: `action` is the action object,
    /// e.g. `{"action": "confirm", "as_instruction": true, "fresh_for": null}`.
    ReviewAct {
        item_id: String,
        action: serde_json::Value,
    },
    /// The inspector's answers about one memory.
    Inspect {
        memory_id: String,
    },
    /// Judge, recall and governance metrics from the memory store.
    MemoryStats,
    /// A one-time login to the web console for this operator.
    ConsoleLogin,
}

/// Where the daemon reads a brokered credential's value when a command needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "from")]
pub enum CredentialSource {
    /// A file, read by the daemon.
    File(String),
    /// A variable of the daemon's own environment.
    Env(String),
    /// A command line run by the daemon; its standard output is the value.
    Command(String),
}

impl CredentialSource {
    pub fn kind(&self) -> &'static str {
        match self {
            CredentialSource::File(_) => "file",
            CredentialSource::Env(_) => "env",
            CredentialSource::Command(_) => "command",
        }
    }
}

/// A brokered credential: injected as `env` into commands of `roles`
/// (every role when empty) whose programs are all in `programs` (any when empty).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialSpec {
    pub name: String,
    pub env: String,
    pub source: CredentialSource,
    pub roles: Vec<String>,
    pub programs: Vec<String>,
    /// Bound to destinations: the command's `env` holds a placeholder, and
    /// the egress proxy puts the value into requests to `to` only.
    #[serde(default)]
    pub bound: Option<CredentialBinding>,
}

/// Where a destination-bound credential goes, and how.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialBinding {
    /// The header, with `{}` where the value goes: `Authorization: Bearer {}`.
    pub header: String,
    /// Destinations, `host` (port 443) or `host:port`.
    pub to: Vec<String>,
}

/// A credential as `praxis cred list` shows it: never its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialInfo {
    pub name: String,
    pub env: String,
    /// `file`, `env` or `command`.
    pub source_kind: String,
    pub roles: Vec<String>,
    pub programs: Vec<String>,
    /// `config` (praxis.toml) or `operator` (`praxis cred add`).
    pub origin: String,
    /// Its binding to destinations, if bound (header template and destinations).
    #[serde(default)]
    pub bound: Option<CredentialBinding>,
    /// Why its source cannot give a value now (commands that would get it
    /// run without it), if it cannot.
    #[serde(default)]
    pub problem: Option<String>,
}

/// A held request as `praxis pending` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingItem {
    pub request_id: String,
    /// The request's simple commands, redacted.
    pub command: Vec<String>,
    pub role: String,
    pub tier: String,
    pub reason: String,
    pub cwd: String,
    pub session: String,
    pub age_secs: u64,
    /// Hex SHA-256 of the canonical request an approval is bound to.
    pub digest: String,
}

/// The daemon's state, for `praxis status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    pub mode: String,
    pub socket: String,
    pub state_dir: String,
    pub pid: u32,
    pub policy_revision: String,
    /// Why the daemon serves only HOLD (bad policy at start, failed self-test), if it does.
    pub hold_all: Option<String>,
    pub self_test: String,
    /// How commands' processes are tracked: "cgroup <base>", or "process
    /// group only (<why>)", when a descendant that calls `setsid` can
    /// outlive its command.
    #[serde(default)]
    pub process_tracking: String,
    /// How commands with network grants go out: their own network namespace
    /// and the egress proxy, or why they cannot (they are HOLD then).
    #[serde(default)]
    pub egress: String,
    pub kill_switch: Option<String>,
    pub kill_file: String,
    /// Why the audit store cannot be trusted (deleted, replaced or cut while
    /// praxisd ran, or not holding its anchored head): all work is refused.
    #[serde(default)]
    pub audit_problem: Option<String>,
    /// Credentials whose source cannot give a value now, with why.
    #[serde(default)]
    pub credential_problems: Vec<String>,
    pub in_flight: u64,
    pub requests: u64,
    pub allowed: u64,
    pub held: u64,
    pub stopped: u64,
    pub audit_events: u64,
}

/// A session as `praxis session list` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub runtime: String,
    pub session: String,
    /// Actions counted, windows opened, checkpoints required so far.
    pub actions: u64,
    pub windows: u32,
    pub checkpoints: u32,
    /// The work kind of the current phase (`read`, `write`, `external`).
    pub phase: Option<String>,
    /// The open window's number, if one is open.
    pub open_window: Option<u32>,
    /// A checkpoint waits for evidence.
    pub checkpoint_pending: bool,
    /// Signals turned off for missing telemetry.
    pub disabled: Vec<String>,
    pub cwd: Option<String>,
    /// First and last activity, ms since the Unix epoch.
    pub first_ms: u64,
    pub last_ms: u64,
}

/// A snapshot as `praxis undo --list` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    pub request_id: String,
    pub workspace: String,
    /// Unix seconds.
    pub created_at: u64,
    pub expires_at: u64,
    pub files: u64,
    pub bytes: u64,
    /// The command ended and what it left is recorded (an undo can check it).
    pub sealed: bool,
    pub restored_at: Option<u64>,
}

/// Result of checking the audit chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifySummary {
    pub ok: bool,
    pub events_checked: u64,
    pub first_broken: Option<u64>,
    pub problem: Option<String>,
}

/// Daemon to operator client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reply")]
pub enum OperatorReply {
    Status(Box<StatusReport>),
    Done {
        message: String,
    },
    /// A note was recorded and reached a session boundary: `steer` is the
    /// session control plane's advisory text for the agent. (A note that
    /// reached none is answered `Done`, as before.)
    Noted {
        steer: String,
    },
    Verify(VerifySummary),
    /// A batch of audit events as JSON objects; more may follow until `End`.
    Events {
        events: Vec<serde_json::Value>,
    },
    End,
    Refused {
        reason: String,
    },
    Pending {
        items: Vec<PendingItem>,
    },
    Credentials {
        items: Vec<CredentialInfo>,
    },
    Snapshots {
        items: Vec<SnapshotInfo>,
    },
    Sessions {
        items: Vec<SessionInfo>,
    },
    /// A JSON document (the review queue, an inspection, memory metrics).
    Json {
        value: serde_json::Value,
    },
    /// Where a session's private `/tmp` and `/var/tmp` lie on the host,
    /// whether they were made yet, and the bytes they hold; `praxis session
    /// show`'s events follow.
    PrivateTmp {
        tmp: String,
        var_tmp: String,
        exists: bool,
        bytes: u64,
    },
    /// The console's login URL: it holds a one-time token that opens a
    /// session as the operator who asked.
    Console {
        url: String,
    },
}

/// Daemon to client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ServerMsg {
    Decision(DecisionFrame),
    Exit(ExitFrame),
    Operator { reply: OperatorReply },
    Error(ErrorFrame),
}
