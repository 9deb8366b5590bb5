//! Steer templates: reviewable text with `{placeholders}` that are filled
//! from the detector's own state only, so the same state gives the same text.

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TemplateError {
    #[error("unknown placeholder {{{0}}}; known: {known}", known = Slot::NAMES.join(", "))]
    UnknownPlaceholder(String),
    #[error("unclosed '{{' at byte {0}")]
    Unclosed(usize),
    #[error("the template is empty")]
    Empty,
}

/// A value a template may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// The signal that fired, e.g. `failure_loop`.
    Signal,
    /// Why it fired, one deterministic sentence.
    Reason,
    /// Work kind before and after a shift.
    From,
    To,
    /// Actions and whole minutes in the window that just closed.
    WindowActions,
    WindowMinutes,
    /// How many times the looping call failed or repeated.
    Count,
    /// The module work moved into.
    Module,
    /// Files changed in the window that just closed: how many, and up to three of them.
    ChangedCount,
    ChangedFiles,
    /// The method block that applied.
    Method,
}

impl Slot {
    const NAMES: [&'static str; 11] = [
        "signal",
        "reason",
        "from",
        "to",
        "window_actions",
        "window_minutes",
        "count",
        "module",
        "changed_count",
        "changed_files",
        "method",
    ];
    const ALL: [Slot; 11] = [
        Slot::Signal,
        Slot::Reason,
        Slot::From,
        Slot::To,
        Slot::WindowActions,
        Slot::WindowMinutes,
        Slot::Count,
        Slot::Module,
        Slot::ChangedCount,
        Slot::ChangedFiles,
        Slot::Method,
    ];

    fn parse(name: &str) -> Option<Slot> {
        Slot::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Slot::ALL[i])
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Slot(Slot),
}

/// A parsed steer template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        if text.trim().is_empty() {
            return Err(TemplateError::Empty);
        }
        let mut pieces = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or(TemplateError::Unclosed(offset + open))?;
            let name = &rest[open + 1..open + close];
            let slot = Slot::parse(name)
                .ok_or_else(|| TemplateError::UnknownPlaceholder(name.to_owned()))?;
            pieces.push(Piece::Slot(slot));
            offset += open + close + 1;
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Template { pieces })
    }

    /// Fills the placeholders; `value` answers each slot from state.
    pub fn render(&self, value: impl Fn(Slot) -> String) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Slot(s) => out.push_str(&value(*s)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_named_slots_and_keeps_text() {
        let t = Template::parse("{count} failures of the same call ({signal}).").unwrap();
        let text = t.render(|s| match s {
            Slot::Count => "3".into(),
            Slot::Signal => "failure_loop".into(),
            _ => "?".into(),
        });
        assert_eq!(text, "3 failures of the same call (failure_loop).");
    }

    #[test]
    fn rejects_unknown_and_unclosed_placeholders() {
        assert_eq!(
            Template::parse("run {command} again"),
            Err(TemplateError::UnknownPlaceholder("command".into()))
        );
        assert_eq!(
            Template::parse("ab {count"),
            Err(TemplateError::Unclosed(3))
        );
        assert_eq!(Template::parse("  "), Err(TemplateError::Empty));
    }
}
