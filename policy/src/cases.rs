//! Policy test cases kept as data: `[[case]]` tables with a command and the
//! decision it must get, judged in the synthetic example workspace
//! ([`crate::engine::example_context`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::engine::example_context;
use crate::rules::config::{self, ParseError};
use crate::{
    BUILTIN_PATTERNS, CommandText, Grants, Policy, Request, Resolution, Source, Tier, Verdict,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    /// An operator `policy.toml`: the file's cases are judged with the
    /// built-in patterns and it, instead of the policy given to [`run`].
    #[serde(default)]
    operator: Option<String>,
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
    /// The exact write grants expected (absolute paths), when given.
    #[serde(default)]
    pub write: Option<Vec<String>>,
    /// The exact read grants expected (absolute paths), when given.
    #[serde(default)]
    pub read: Option<Vec<String>>,
    /// The exact destinations expected (`host:port`), when given.
    #[serde(default)]
    pub connect: Option<Vec<String>>,
    /// The exact unix sockets expected (absolute paths), when given.
    #[serde(default)]
    pub sockets: Option<Vec<String>>,
    /// The host's answer for programs named by a path (relative to the
    /// workspace, or absolute): the program each is found to be, as a
    /// project's own tool (`".venv/bin/pip" = "pip"`). Unlisted: none is.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
    /// The host's answer for symbolic links: a path named (relative to the
    /// workspace, or absolute) to the file it leads to (`~/` is the home).
    #[serde(default)]
    pub links: BTreeMap<String, String>,
    /// The host's answer for `PATH` lookups: the file each program name
    /// resolves to; one inside the workspace is in a writable tree. Unlisted:
    /// lookups are skipped.
    #[serde(default)]
    pub path: BTreeMap<String, String>,
    /// Why the case is in the corpus.
    #[serde(default)]
    pub note: Option<String>,
    /// Agent traffic held because it is not ordinary work (an effect outside
    /// the machine or the workspace, one git cannot undo): why.
    #[serde(default)]
    pub by_design: Option<String>,
    /// Ordinary work the policy still holds: why it stays (a false block).
    #[serde(default)]
    pub false_block: Option<String>,
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
    pub grants: Grants,
}

impl Outcome {
    fn paths_match(want: Option<&Vec<String>>, got: &[PathBuf]) -> bool {
        want.is_none_or(|want| want.iter().map(PathBuf::from).collect::<Vec<_>>() == got)
    }

    fn grants_match(&self) -> bool {
        Self::paths_match(self.case.write.as_ref(), &self.grants.write)
            && Self::paths_match(self.case.read.as_ref(), &self.grants.read)
            && Self::paths_match(self.case.sockets.as_ref(), &self.grants.sockets)
            && self.connect_matches()
    }

    fn connect_matches(&self) -> bool {
        self.case.connect.as_ref().is_none_or(|want| {
            *want
                == self
                    .grants
                    .connect
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
        })
    }

    pub fn passed(&self) -> bool {
        self.decision == self.case.expect
            && self.case.tier.is_none_or(|t| t == self.tier)
            && self.grants_match()
    }

    /// `file:line: command: expected X, got Y (rules; reason)`.
    pub fn describe(&self, file: &str) -> String {
        let tier = match self.case.tier {
            Some(t) if t != self.tier => {
                format!(" tier {} (want {})", self.tier.as_str(), t.as_str())
            }
            _ => String::new(),
        };
        let grants = if self.grants_match() {
            String::new()
        } else {
            format!(
                " grants `{}` (want write {:?}, read {:?}, connect {:?}, sockets {:?})",
                self.grants.summary(),
                self.case.write,
                self.case.read,
                self.case.connect,
                self.case.sockets
            )
        };
        format!(
            "{file}:{}: `{}`: expected {}, got {}{tier}{grants} [{}] {}",
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

/// Why a case file cannot be judged.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("{file}: its operator policy does not load: {why}")]
    Operator { file: String, why: String },
}

/// Judges every case of `text` with `policy` (or with the file's own
/// operator policy over the built-in patterns).
pub fn run(policy: &Policy, file: &str, text: &str) -> Result<Vec<Outcome>, RunError> {
    let CaseFile { operator, cases } = config::parse::<CaseFile>(file, text)?;
    let own = match operator {
        Some(operator) => Some(
            Policy::load(
                Source {
                    name: "patterns.toml",
                    text: BUILTIN_PATTERNS,
                },
                Some(Source {
                    name: file,
                    text: &operator,
                }),
            )
            .map_err(|e| RunError::Operator {
                file: file.to_owned(),
                why: e.to_string(),
            })?,
        ),
        None => None,
    };
    let policy = own.as_ref().unwrap_or(policy);
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
            for (name, file) in &case.path {
                let file = PathBuf::from(file);
                let in_writable_root = file.starts_with(&ctx.workspace);
                ctx.resolved.insert(
                    name.clone(),
                    Resolution::Found {
                        path: file,
                        in_writable_root,
                    },
                );
            }
            for (path, program) in &case.tools {
                ctx.tools.insert(ctx.workspace.join(path), program.clone());
            }
            for (link, target) in &case.links {
                let target = match target.strip_prefix("~/") {
                    Some(rest) => ctx.home.join(rest),
                    None => ctx.workspace.join(target),
                };
                ctx.links.insert(ctx.workspace.join(link), target);
            }
            let d = policy.decide(&request, &analysis, &ctx);
            Outcome {
                line,
                decision: d.decision,
                tier: d.tier,
                reason: d.reason,
                rule_ids: d.rule_ids,
                grants: d.grants,
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
