//! Policy test cases kept as data: `[[case]]` tables with a command and the
//! decision it must get, judged in the synthetic example workspace
//! ([`crate::engine::example_context`]).

use std::path::PathBuf;

use serde::Deserialize;

use crate::engine::example_context;
use crate::{CommandText, Policy, Request, Tier, Verdict};

use super::config::{self, ParseError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[serde(rename = "case")]
    cases: Vec<Case>,
}

/// One case: `command` judged as `role` (default `agent`) in `cwd` (default
/// the example workspace; relative paths are taken inside it).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub command: String,
    pub expect: Verdict,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub tier: Option<Tier>,
    /// Why the case is in the corpus.
    #[serde(default)]
    pub note: Option<String>,
}

/// A case's result.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub case: Case,
    pub line: usize,
    pub decision: Verdict,
    pub tier: Tier,
    pub reason: String,
    pub rule_ids: Vec<String>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.decision == self.case.expect && self.case.tier.is_none_or(|t| t == self.tier)
    }

    /// `file:line: command: expected X, got Y (rules; reason)`.
    pub fn describe(&self, file: &str) -> String {
        let tier = match self.case.tier {
            Some(t) if t != self.tier => {
                format!(" tier {} (want {})", self.tier.as_str(), t.as_str())
            }
            _ => String::new(),
        };
        format!(
            "{file}:{}: `{}`: expected {}, got {}{tier} [{}] {}",
            self.line,
            self.case.command,
            self.case.expect.as_str(),
            self.decision.as_str(),
            self.rule_ids.join(","),
            self.reason
        )
    }
}

/// Parses a case file.
pub fn parse(file: &str, text: &str) -> Result<Vec<Case>, ParseError> {
    Ok(config::parse::<CaseFile>(file, text)?.cases)
}

/// Judges every case of `text` with `policy`.
pub fn run(policy: &Policy, file: &str, text: &str) -> Result<Vec<Outcome>, ParseError> {
    let cases = parse(file, text)?;
    let mut search_from = 0;
    Ok(cases
        .into_iter()
        .map(|case| {
            let line = locate(text, &case.command, &mut search_from);
            let mut ctx = example_context::context();
            if let Some(cwd) = &case.cwd {
                ctx.cwd = if cwd.starts_with('/') {
                    PathBuf::from(cwd)
                } else {
                    ctx.workspace.join(cwd)
                };
            }
            let role = case.role.as_deref().unwrap_or("agent");
            let request = Request {
                command: CommandText::Shell(&case.command),
                role,
            };
            let analysis = policy.analyze(&request);
            let d = policy.decide(&request, &analysis, &ctx);
            Outcome {
                line,
                decision: d.decision,
                tier: d.tier,
                reason: d.reason,
                rule_ids: d.rule_ids,
                case,
            }
        })
        .collect())
}

/// Line of the case's command, searching forward so repeated commands get their own line.
fn locate(text: &str, command: &str, from: &mut usize) -> usize {
    let first_line = command.lines().next().unwrap_or("");
    let needle = first_line
        .get(..first_line.len().min(40))
        .unwrap_or(first_line);
    match text[*from..].find(needle) {
        Some(at) => {
            *from += at + needle.len();
            config::line_of(text, *from)
        }
        None => config::line_of(text, *from),
    }
}
