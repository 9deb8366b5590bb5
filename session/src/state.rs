//! Per-session state: everything the detector remembers between events.
//! Serializable so the daemon can persist it and resume it as it was.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::baseline::{Baseline, Lineage};
use crate::event::{ScopeKey, WorkKind};
use crate::policy::{Backstop, Risk};
use crate::signal::{Signal, Telemetry};
use crate::window::WindowRecord;

/// How many changed files a window remembers for the re-read checkpoint.
pub(crate) const CHANGED_FILES_KEPT: usize = 32;
/// How many recent call ids are kept to pair a hook with its praxis-run.
pub(crate) const RECENT_CALLS_KEPT: usize = 32;

/// A value that has held for `count` observations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Streak<T> {
    pub value: T,
    pub count: u32,
    /// A boundary was armed for this streak already.
    pub reported: bool,
}

impl<T: PartialEq> Streak<T> {
    pub(crate) fn new(value: T) -> Self {
        Streak {
            value,
            count: 1,
            reported: false,
        }
    }

    /// Counts `value` on `streak`: one more if it is the same value, else a new streak.
    pub(crate) fn bump(streak: &mut Option<Streak<T>>, value: T) -> &mut Streak<T> {
        match streak {
            Some(s) if s.value == value => s.count += 1,
            _ => *streak = Some(Streak::new(value)),
        }
        streak.as_mut().expect("set just above")
    }
}

/// A point in the session: action count and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub action: u64,
    pub at_ms: u64,
}

/// The open window: an advisory interval over a batch of actions. It licenses nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub id: u32,
    pub opened: Mark,
    pub actions: u64,
    pub kind: Option<WorkKind>,
    pub risk: Risk,
    pub backstop: Backstop,
    /// Files written in this window (paths as the runtime gave them, made absolute with its cwd).
    pub changed: BTreeSet<String>,
    /// An action at or above the risk tier was seen in this window.
    pub risk_seen: bool,
}

/// The last window that did work, as it ended: what a steer at the next
/// boundary reports and a re-read checkpoint offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stretch {
    pub record: WindowRecord,
    /// The files it changed.
    pub changed: Vec<String>,
}

/// A checkpoint waiting for evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenCheckpoint {
    pub id: u32,
    pub reread: Vec<String>,
}

/// A call id seen recently, and which of its events were counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentCall {
    pub id: String,
    pub action_counted: bool,
    pub outcome_counted: bool,
}

/// Everything the detector knows about one session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    pub scope: ScopeKey,
    /// Actions counted in the session.
    pub actions: u64,
    pub last_ms: u64,
    pub seen: BTreeSet<Telemetry>,
    pub disabled: BTreeSet<Signal>,
    /// Work kind of the current phase, and the hysteresis around it.
    pub phase: Option<WorkKind>,
    pub rise: Option<Streak<WorkKind>>,
    /// Consecutive actions that did not rise above the phase.
    pub calm: u32,
    /// Consecutive actions below the phase.
    pub fall: u32,
    /// The module writes happen in, the one they may be moving to, and all written so far.
    pub module: Option<String>,
    pub module_move: Option<Streak<String>>,
    pub modules: BTreeSet<String>,
    pub failing: Option<Streak<String>>,
    pub repeating: Option<Streak<String>>,
    pub window: Option<Window>,
    pub windows: u32,
    #[serde(default)]
    pub last_stretch: Option<Stretch>,
    pub last_boundary: Option<Mark>,
    pub checkpoint: Option<OpenCheckpoint>,
    pub checkpoints: u32,
    pub plan_seen: bool,
    /// Files were written since the last test run.
    pub untested_writes: bool,
    /// The agent stopped; the next activity begins a new turn.
    pub turn_ended: bool,
    pub recent_calls: Vec<RecentCall>,
    /// Learned backstops for this session's lineage (R8), if any.
    pub learned: Option<Baseline>,
    /// Whose past windows seeded this session, and whom its windows teach;
    /// none until the session was seeded.
    #[serde(default)]
    pub lineage: Option<Lineage>,
}

impl SessionState {
    /// A new session's state, with the baseline learned for its repository.
    pub fn new(scope: ScopeKey, learned: Option<Baseline>) -> Self {
        SessionState {
            scope,
            learned,
            ..SessionState::default()
        }
    }

    /// Records that `id`'s action (or outcome) is counted; false if it was already.
    pub(crate) fn first_sight(&mut self, id: &str, outcome: bool) -> bool {
        let entry = match self.recent_calls.iter().position(|c| c.id == id) {
            Some(i) => &mut self.recent_calls[i],
            None => {
                if self.recent_calls.len() == RECENT_CALLS_KEPT {
                    self.recent_calls.remove(0);
                }
                self.recent_calls.push(RecentCall {
                    id: id.to_owned(),
                    action_counted: false,
                    outcome_counted: false,
                });
                self.recent_calls.last_mut().expect("pushed just above")
            }
        };
        let flag = if outcome {
            &mut entry.outcome_counted
        } else {
            &mut entry.action_counted
        };
        !std::mem::replace(flag, true)
    }
}
