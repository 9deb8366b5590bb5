//! What the detector says about one event: typed transitions the daemon
//! audits and delivers. The same state and event always give the same list.

use serde::{Deserialize, Serialize};

use crate::baseline::{Baseline, Lineage};
use crate::event::WorkKind;
use crate::policy::{Backstop, Mechanism, Risk};
use crate::signal::{Signal, Telemetry};
use crate::window::WindowRecord;

/// Why a signal that fired did not arm a boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum SkipReason {
    /// Inside the re-arm floor (R5a): too few actions and too little time since the last boundary.
    RearmFloor {
        actions_since: u64,
        seconds_since: u64,
    },
}

/// The observable evidence that satisfied a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub mechanism: Mechanism,
    /// The tool call that showed it.
    pub tool: String,
    pub target: Option<String>,
}

/// One transition. Every variant is an audit event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Transition {
    /// A material work boundary. `also` lists other signals that fired on the same event.
    Boundary {
        signal: Signal,
        also: Vec<Signal>,
        reason: String,
        action: u64,
    },
    WindowOpened {
        window: u32,
        kind: Option<WorkKind>,
        risk: Risk,
        backstop: Backstop,
    },
    WindowClosed {
        record: WindowRecord,
    },
    /// The window reached its backstop (tool count or time).
    WindowExpired {
        record: WindowRecord,
    },
    /// The window's risk rose; its backstop shrank with it.
    WindowRiskRaised {
        window: u32,
        risk: Risk,
        backstop: Backstop,
    },
    /// Advisory text for the agent, through its runtime's channel.
    Steer {
        signal: Option<Signal>,
        text: String,
    },
    CheckpointRequired {
        checkpoint: u32,
        mechanisms: Vec<Mechanism>,
        /// Files changed in the closed window; re-reading one is evidence.
        reread: Vec<String>,
    },
    CheckpointSatisfied {
        checkpoint: u32,
        evidence: Evidence,
    },
    /// The next boundary came and the checkpoint had no evidence.
    CheckpointSkipped {
        checkpoint: u32,
    },
    /// A signal fired but did not arm a boundary.
    Skip {
        signal: Signal,
        reason: SkipReason,
    },
    SignalDisabled {
        signal: Signal,
        missing: Telemetry,
    },
    SignalEnabled {
        signal: Signal,
    },
    /// The session was seeded with what earlier sessions of its lineage
    /// taught (R8); an empty `learned` means the static backstops hold.
    BaselineSeeded {
        lineage: Lineage,
        learned: Baseline,
    },
    /// A method rule blocks this action for the caller's role (L15).
    Block {
        method: String,
        reason: String,
    },
}

/// All transitions of one event, in order.
#[must_use]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub transitions: Vec<Transition>,
}

impl Outcome {
    /// The steer text to deliver, if any: every steer of the event, one per line.
    pub fn steer(&self) -> Option<String> {
        let texts: Vec<&str> = self
            .transitions
            .iter()
            .filter_map(|t| match t {
                Transition::Steer { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }

    /// The method block that applies, if any: the daemon refuses the action with this reason.
    pub fn block(&self) -> Option<&str> {
        self.transitions.iter().find_map(|t| match t {
            Transition::Block { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
    }
}
