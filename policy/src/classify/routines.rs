//! `[[detector]]` and `[[undo]]` of `patterns.toml`: which programs (and
//! subcommands) the classifier's own parsing routines read, with the option
//! words each routine needs, and what a command's undo must save. The
//! routines stay in Rust; the programs and words they are given are data.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use crate::shell::DecisionExample;

/// A parsing routine of the classifier, named by a `[[detector]]` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routine {
    /// A sed script: `e` runs a command, `w`/`r` write and read files.
    SedScript,
    /// An awk program: `system()` and pipes run commands, `print >` writes.
    AwkScript,
    /// find's actions: deleting, or running a deleter on, what it matches.
    FindActions,
    /// kill's signal: signal 0 only asks whether a process exists.
    KillSignal,
    /// `+ref` and `:ref` refspecs: a forced push, a deleted branch.
    GitRefspecs,
    /// `git config`: a read, a plain write, or a key that can run a command.
    GitConfig,
    /// The `[git_config] writers` subcommands that write the repository's config.
    GitConfigWriters,
    /// The repository or remote a git network subcommand names.
    GitRepository,
    /// `-c key=value`, `--config-env` and the program's config variables
    /// (`[git_config] env`) that can make it run a command.
    GitConfigOverride,
    /// A builtin that changes the directory the next commands run in.
    ChangeDirectory,
    /// A wrapper that takes its command's operands from stdin (`xargs`).
    StdinOperands,
}

impl Routine {
    /// The word lists the routine reads; an entry gives exactly these.
    fn lists(self) -> &'static [&'static str] {
        match self {
            Routine::SedScript => &["script_options"],
            Routine::AwkScript => &["file_options"],
            Routine::FindActions => &["delete_actions", "exec_actions", "deleters"],
            Routine::KillSignal => &["signal_options", "list_options"],
            Routine::GitConfigOverride => &["setting_options", "runnable_options"],
            Routine::GitRefspecs
            | Routine::GitConfigWriters
            | Routine::ChangeDirectory
            | Routine::StdinOperands => &[],
            Routine::GitConfig => &[
                "read_options",
                "write_options",
                "edit_options",
                "beyond_repository",
                "read_actions",
                "write_actions",
                "edit_actions",
            ],
            Routine::GitRepository => &[
                "value_options",
                "all_options",
                "repo_options",
                "every_remote",
                "unknowable",
                "push",
                "push_flags",
            ],
        }
    }
}

/// One `[[detector]]` entry as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorSpec {
    pub routine: Routine,
    pub programs: Vec<String>,
    /// Only under these subcommands (each a word or words: `stash drop`).
    #[serde(default)]
    pub sub: Vec<String>,
    #[serde(default)]
    pub words: BTreeMap<String, Vec<String>>,
    pub examples: Vec<DecisionExample>,
}

/// One compiled entry.
#[derive(Clone, Debug)]
pub struct Detector {
    pub routine: Routine,
    sub: Vec<Vec<String>>,
    words: BTreeMap<String, Vec<String>>,
}

impl Detector {
    /// The entry's word list `list` (one of its routine's lists).
    pub fn words(&self, list: &str) -> &[String] {
        self.words.get(list).map_or(&[], Vec::as_slice)
    }

    /// Whether `word` is in the list `list`.
    pub fn has(&self, list: &str, word: &str) -> bool {
        self.words(list).iter().any(|w| w == word)
    }

    fn sub_matches(&self, sub: &[String]) -> bool {
        self.sub.is_empty() || self.sub.iter().any(|words| sub.starts_with(words))
    }
}

/// Why the `[[detector]]` or `[[undo]]` table does not load.
#[derive(Debug, thiserror::Error)]
pub enum RoutineError {
    #[error("{routine:?} for `{program}`: gives {given:?}, reads {wanted:?}")]
    Lists {
        routine: Routine,
        program: String,
        given: Vec<String>,
        wanted: Vec<&'static str>,
    },
    #[error("an entry names no program")]
    NoProgram,
    #[error("undo for `{0}`: `if_any`, `unless` and `ignored_if` are flags (`-x`, `--name`)")]
    NotFlag(String),
}

/// The `[[detector]]` table by program.
#[derive(Clone, Debug, Default)]
pub struct Detectors {
    by_program: HashMap<String, Vec<Detector>>,
}

/// Files `entry` under each of its programs.
fn file_under<T: Clone>(by_program: &mut HashMap<String, Vec<T>>, programs: &[String], entry: T) {
    for p in programs {
        by_program.entry(p.clone()).or_default().push(entry.clone());
    }
}

fn split_subs(sub: &[String]) -> Vec<Vec<String>> {
    sub.iter()
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .collect()
}

impl Detectors {
    /// Compiles the table: each entry names a program and gives exactly the
    /// word lists its routine reads.
    pub fn build(specs: &[DetectorSpec]) -> Result<Detectors, RoutineError> {
        let mut table = Detectors::default();
        for spec in specs {
            let program = spec.programs.first().ok_or(RoutineError::NoProgram)?;
            let wanted = spec.routine.lists();
            if spec.words.len() != wanted.len()
                || wanted.iter().any(|w| !spec.words.contains_key(*w))
            {
                return Err(RoutineError::Lists {
                    routine: spec.routine,
                    program: program.clone(),
                    given: spec.words.keys().cloned().collect(),
                    wanted: wanted.to_vec(),
                });
            }
            let detector = Detector {
                routine: spec.routine,
                sub: split_subs(&spec.sub),
                words: spec.words.clone(),
            };
            file_under(&mut table.by_program, &spec.programs, detector);
        }
        Ok(table)
    }

    /// The entries for `program` whose subcommand `sub` matches, in table order.
    pub fn of<'t>(
        &'t self,
        program: &str,
        sub: &'t [String],
    ) -> impl Iterator<Item = &'t Detector> {
        self.by_program
            .get(program)
            .into_iter()
            .flatten()
            .filter(move |d| d.sub_matches(sub))
    }

    /// The entry of `routine` for `program`, if the program has one.
    pub fn find(&self, program: &str, routine: Routine) -> Option<&Detector> {
        self.by_program
            .get(program)?
            .iter()
            .find(|d| d.routine == routine)
    }
}

/// What an `[[undo]]` entry makes the undo save.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoSave {
    /// The program's other writes go to its own store, where its log keeps
    /// them (git's reflog): nothing beyond the paths it names.
    OwnStore,
    /// A checkpoint of the whole workspace (ignored files too with `ignored_if`).
    Workspace,
    /// The stash ref and its log.
    Stash,
}

/// One `[[undo]]` entry as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoSpec {
    pub programs: Vec<String>,
    #[serde(default)]
    pub sub: Vec<String>,
    pub save: UndoSave,
    /// Only with one of these flags.
    #[serde(default)]
    pub if_any: Vec<String>,
    /// Never with one of these flags.
    #[serde(default)]
    pub unless: Vec<String>,
    /// With one of these, the workspace checkpoint keeps ignored files too.
    #[serde(default)]
    pub ignored_if: Vec<String>,
    pub examples: Vec<UndoExample>,
}

/// `{ command = "git clean -fdx", saves = "workspace_with_ignored" }`:
/// checked at load against the undo the command gets.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoExample {
    pub command: String,
    pub saves: UndoExpect,
}

/// What an undo example states is saved beyond the paths it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoExpect {
    Nothing,
    Workspace,
    WorkspaceWithIgnored,
    Stash,
}

/// One compiled `[[undo]]` entry.
#[derive(Clone, Debug)]
pub struct UndoEntry {
    pub save: UndoSave,
    sub: Vec<Vec<String>>,
    if_any: Vec<String>,
    unless: Vec<String>,
    ignored_if: Vec<String>,
}

impl UndoEntry {
    /// Whether the entry applies to a command with subcommand words `sub`
    /// and flags `flags`.
    pub fn applies(&self, sub: &[String], flags: &[String]) -> bool {
        let any = |list: &[String]| list.iter().any(|f| flags.contains(f));
        (self.sub.is_empty() || self.sub.iter().any(|w| sub.starts_with(w)))
            && (self.if_any.is_empty() || any(&self.if_any))
            && !any(&self.unless)
    }

    /// Whether the workspace checkpoint must keep ignored files too.
    pub fn keeps_ignored(&self, flags: &[String]) -> bool {
        self.ignored_if.iter().any(|f| flags.contains(f))
    }
}

/// The `[[undo]]` table by program.
#[derive(Clone, Debug, Default)]
pub struct UndoTable {
    by_program: HashMap<String, Vec<UndoEntry>>,
}

impl UndoTable {
    pub fn build(specs: &[UndoSpec]) -> Result<UndoTable, RoutineError> {
        let mut table = UndoTable::default();
        for spec in specs {
            let program = spec.programs.first().ok_or(RoutineError::NoProgram)?;
            let flags = spec
                .if_any
                .iter()
                .chain(&spec.unless)
                .chain(&spec.ignored_if);
            if flags.clone().any(|f| !f.starts_with('-') || f.len() < 2) {
                return Err(RoutineError::NotFlag(program.clone()));
            }
            let entry = UndoEntry {
                save: spec.save,
                sub: split_subs(&spec.sub),
                if_any: spec.if_any.clone(),
                unless: spec.unless.clone(),
                ignored_if: spec.ignored_if.clone(),
            };
            file_under(&mut table.by_program, &spec.programs, entry);
        }
        Ok(table)
    }

    /// The entries for `program`.
    pub fn of(&self, program: &str) -> &[UndoEntry] {
        self.by_program.get(program).map_or(&[], Vec::as_slice)
    }
}
