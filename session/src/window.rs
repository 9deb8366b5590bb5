//! A window as it ended: what the transitions report and what baselines
//! learn from, below both.

use serde::{Deserialize, Serialize};

use crate::event::WorkKind;
use crate::policy::Risk;
use crate::signal::Signal;

/// How a window ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by", content = "signal")]
pub enum WindowEnd {
    /// A boundary on this signal closed it.
    Boundary(Signal),
    /// The agent's turn ended (Stop).
    TurnEnded,
}

/// A window as it was when it ended: the unit baselines learn from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowRecord {
    pub window: u32,
    /// The work kind of the phase the window was opened in.
    pub kind: Option<WorkKind>,
    pub risk: Risk,
    pub actions: u64,
    pub elapsed_ms: u64,
    pub end: WindowEnd,
}

impl WindowRecord {
    /// The window hit a backstop: its length is the budget's, not the work's.
    pub fn cut_short(&self) -> bool {
        matches!(self.end, WindowEnd::Boundary(s) if s.is_budget())
    }
}
