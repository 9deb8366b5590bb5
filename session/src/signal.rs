//! The boundary signals (R5) and the telemetry each one needs (R12).

use serde::{Deserialize, Serialize};

/// A boundary signal. The order is the priority when several fire on one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// The first action of the window at or above the risk tier, or on a protected path.
    FirstRisk,
    /// The same call failed N times in a row.
    FailureLoop,
    /// The same call was made again and again, back to back.
    RepeatLoop,
    /// Work moved up from reading to writing to reaching outside.
    WorkKindShift,
    /// Writes moved into a module not written before.
    ScopeChange,
    /// The runtime said a new prompt or turn began.
    Lifecycle,
    /// The window reached its tool-count backstop.
    ToolBudget,
    /// The window reached its elapsed-time backstop.
    ElapsedBudget,
}

/// Every signal, in priority order.
pub const SIGNALS: [Signal; 8] = [
    Signal::FirstRisk,
    Signal::FailureLoop,
    Signal::RepeatLoop,
    Signal::WorkKindShift,
    Signal::ScopeChange,
    Signal::Lifecycle,
    Signal::ToolBudget,
    Signal::ElapsedBudget,
];

/// An input a signal depends on. A runtime that never sends it turns the
/// signal off, and only that signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Telemetry {
    /// Pre-execution events naming the tool (PreToolUse, praxis-run requests).
    Actions,
    /// Post-execution events with a known status (PostToolUse, run outcomes).
    Outcomes,
    /// Praxis' judgment (tier, protected path) on the actions.
    Judgment,
    /// File paths as targets (file tools), to place work in modules.
    FileTargets,
    /// Runtime lifecycle events (SessionStart, UserPromptSubmit, Stop).
    Lifecycle,
    /// Timestamps on the events.
    Timestamps,
}

impl Signal {
    /// The telemetry this signal cannot work without.
    pub fn needs(self) -> Telemetry {
        match self {
            Signal::FirstRisk => Telemetry::Judgment,
            Signal::FailureLoop => Telemetry::Outcomes,
            Signal::RepeatLoop | Signal::WorkKindShift | Signal::ToolBudget => Telemetry::Actions,
            Signal::ScopeChange => Telemetry::FileTargets,
            Signal::Lifecycle => Telemetry::Lifecycle,
            Signal::ElapsedBudget => Telemetry::Timestamps,
        }
    }

    /// Whether the re-arm floor (R5a) holds this signal back. One-shot
    /// signals cannot flap (first risk fires once per window, loops once per
    /// streak and only after N repeats), and holding them would delay the
    /// reassessment R7 wants early; the others re-fire as state moves.
    pub fn held_by_floor(self) -> bool {
        !matches!(
            self,
            Signal::FirstRisk | Signal::FailureLoop | Signal::RepeatLoop
        )
    }

    /// Whether a boundary on this signal is a backstop expiry of the window
    /// (the window did not end on its own; baselines leave it out).
    pub fn is_budget(self) -> bool {
        matches!(self, Signal::ToolBudget | Signal::ElapsedBudget)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Signal::FirstRisk => "first_risk",
            Signal::FailureLoop => "failure_loop",
            Signal::RepeatLoop => "repeat_loop",
            Signal::WorkKindShift => "work_kind_shift",
            Signal::ScopeChange => "scope_change",
            Signal::Lifecycle => "lifecycle",
            Signal::ToolBudget => "tool_budget",
            Signal::ElapsedBudget => "elapsed_budget",
        }
    }
}
