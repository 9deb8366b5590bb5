//! Replay: what a lesson would have done to past held requests, so the
//! review queue can say "would have allowed 14 of the last 200 held
//! requests" before a human confirms it.

use praxis_policy::Verdict;
use serde::Serialize;

use crate::lesson::{Action, Lesson, matches};

/// How many examples a replay keeps.
pub const MAX_EXAMPLES: usize = 5;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Replay {
    /// Held requests looked at.
    pub held: usize,
    /// Of those, the ones the lesson would have allowed.
    pub would_allow: usize,
    /// Indices (into the slice given) of the first few it would have allowed.
    pub examples: Vec<usize>,
}

impl Replay {
    /// The sentence the queue shows.
    pub fn sentence(&self) -> String {
        format!(
            "would have allowed {} of the last {} held requests",
            self.would_allow, self.held
        )
    }
}

/// Replays `lesson` over past actions (newest first or oldest first, as
/// the caller likes: the indices follow the slice). Only held, relaxable
/// actions count: a STOP or a non-relaxable HOLD is never allowed by memory.
pub fn replay(lesson: &Lesson, past: &[Action]) -> Replay {
    let mut result = Replay::default();
    for (index, action) in past.iter().enumerate() {
        if action.verdict != Verdict::Hold {
            continue;
        }
        result.held += 1;
        if action.relaxable && matches(lesson, action) {
            result.would_allow += 1;
            if result.examples.len() < MAX_EXAMPLES {
                result.examples.push(index);
            }
        }
    }
    result
}
