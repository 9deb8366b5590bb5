//! What the boundary exposes: one hook event, with Praxis' own judgment of
//! the action attached by the daemon (never taken from the agent).

use praxis_policy::verdict::{Tier, Verdict};
use serde::{Deserialize, Serialize};

/// The key session state is kept under: the runtime that sent the event and
/// the session id that runtime gave it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ScopeKey {
    pub runtime: String,
    pub session: String,
}

/// Which doorway of the runtime the event came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    SessionStart,
    UserPromptSubmit,
    /// A tool call is about to run.
    PreToolUse,
    /// A tool call has finished (its status is known).
    PostToolUse,
    /// The agent ended its turn.
    Stop,
    /// A `praxis-run` request was judged (the action, for runtimes without hooks).
    RunRequest,
    /// A `praxis-run` request finished (its exit status is known).
    RunFinished,
}

/// How a finished call went, as far as the runtime says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    #[default]
    Unknown,
}

/// Praxis' judgment of the action: facts the daemon computed, not the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgment {
    pub tier: Tier,
    pub verdict: Verdict,
    /// The action touches a protected path.
    #[serde(default)]
    pub protected: bool,
    /// The role the daemon resolved for the caller.
    #[serde(default)]
    pub role: Option<String>,
}

/// One hook event. Time comes in on the event (milliseconds since the Unix
/// epoch, 0 when the runtime gave none); the detector never reads a clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEvent {
    pub runtime: String,
    pub session: String,
    pub kind: EventKind,
    #[serde(default)]
    pub tool: Option<String>,
    /// The one collapsed target: command, file path, pattern, URL or query.
    #[serde(default)]
    pub target: Option<String>,
    /// The working directory the runtime reported, to place relative paths.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The runtime's id of the tool call, to pair a hook with its run.
    #[serde(default)]
    pub call_id: Option<String>,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub at_ms: u64,
    #[serde(default)]
    pub judgment: Option<Judgment>,
}

impl HookEvent {
    pub fn scope(&self) -> ScopeKey {
        ScopeKey {
            runtime: self.runtime.clone(),
            session: self.session.clone(),
        }
    }
}

/// What an action does to the world, from least to most reaching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    Read,
    Write,
    External,
}

impl WorkKind {
    pub fn from_tier(tier: Tier) -> Self {
        match tier {
            Tier::ReadOnly => WorkKind::Read,
            Tier::ReversibleWrite => WorkKind::Write,
            Tier::ExternalSideEffect | Tier::HighRisk => WorkKind::External,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkKind::Read => "read",
            WorkKind::Write => "write",
            WorkKind::External => "external",
        }
    }
}
