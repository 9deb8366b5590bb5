//! What the classifier finds about one simple command: its facts, the
//! paths it uses, and the interpreted languages it may run.

use aho_corasick::AhoCorasick;

use super::paths::Classes;
use crate::Tier;
use crate::decision::Destination;
use crate::shell::{SimpleCommand, Word};

/// Structural facts the detectors find; rules name them in `facts = [...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fact {
    /// Reached through sudo/doas/… .
    Escalated,
    ForkBomb,
    /// Downloaded or decoded content runs as code.
    FetchToInterpreter,
    /// Text from another command runs as a shell script.
    PipeToShell,
    InlineCode,
    /// Inline code uses process, network or destructive file APIs.
    InlineCodeDanger,
    /// Inline code calls a name it builds at run time (`getattr(os, n)`).
    InlineCodeDynamic,
    /// `sed`'s `e`, `awk`'s `system(`: the tool runs commands.
    CodeExecution,
    Interactive,
    UnknownProgram,
    /// A script or binary that lives in a writable tree (`./x.sh`).
    WorkspaceScript,
    /// An operand names another host (`host:path`).
    RemoteOperand,
    /// Every URL operand is a local host.
    LocalUrls,
    GitForceRefspec,
    GitDeleteRefspec,
    GitConfigWrite,
    /// Writes the repository's own git config file (`git config user.email
    /// a@b`, `git remote add`, `git branch -u`): the decision grants that file.
    GitRepoConfig,
    /// `find -delete` or `find -exec rm`.
    FindDelete,
    /// Operands arrive on stdin (`xargs`): targets unknown.
    StdinOperands,
    /// Calls a shell function the request itself defines.
    DefinedFunction,
    /// A variable makes the program load code from outside the workspace, or
    /// from a place only known at run time (`[exec_env]`).
    ExecEnv,
    /// An option makes the program run code the policy cannot judge, or load
    /// code from outside the workspace (`[[exec_option]]`).
    ExecOption,
    /// Inline code names a system path.
    CodeNamesSystemPath,
    /// `kill` sends a signal to init or to every process (`kill -9 -1`).
    SignalsEveryProcess,
}

const FACTS: [(Fact, &str); 24] = [
    (Fact::Escalated, "escalated"),
    (Fact::ForkBomb, "fork_bomb"),
    (Fact::FetchToInterpreter, "fetch_to_interpreter"),
    (Fact::PipeToShell, "pipe_to_shell"),
    (Fact::InlineCode, "inline_code"),
    (Fact::InlineCodeDanger, "inline_code_danger"),
    (Fact::InlineCodeDynamic, "inline_code_dynamic"),
    (Fact::CodeExecution, "code_execution"),
    (Fact::Interactive, "interactive"),
    (Fact::UnknownProgram, "unknown_program"),
    (Fact::WorkspaceScript, "workspace_script"),
    (Fact::RemoteOperand, "remote_operand"),
    (Fact::LocalUrls, "local_urls"),
    (Fact::GitForceRefspec, "git_force_refspec"),
    (Fact::GitDeleteRefspec, "git_delete_refspec"),
    (Fact::GitConfigWrite, "git_config_write"),
    (Fact::GitRepoConfig, "git_repo_config"),
    (Fact::FindDelete, "find_delete"),
    (Fact::StdinOperands, "stdin_operands"),
    (Fact::DefinedFunction, "defined_function"),
    (Fact::ExecEnv, "exec_env"),
    (Fact::ExecOption, "exec_option"),
    (Fact::CodeNamesSystemPath, "code_names_system_path"),
    (Fact::SignalsEveryProcess, "signals_every_process"),
];

impl Fact {
    pub fn bit(self) -> u32 {
        1 << (self as u32)
    }

    pub fn from_name(name: &str) -> Option<Fact> {
        FACTS.iter().find(|(_, n)| *n == name).map(|(f, _)| *f)
    }

    pub fn names(set: u32) -> Vec<&'static str> {
        FACTS
            .iter()
            .filter(|(f, _)| set & f.bit() != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// How a command uses a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Create,
    Write,
    Append,
    Delete,
    Meta,
}

impl Access {
    pub fn bit(self) -> u8 {
        1 << (self as u8)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Create => "creates",
            Access::Write => "overwrites",
            Access::Append => "appends to",
            Access::Delete => "deletes",
            Access::Meta => "changes permissions of",
        }
    }
}

#[derive(Clone, Debug)]
pub struct PathUse {
    /// The argument as written (canonical).
    pub text: String,
    /// Normalized absolute path, when known.
    pub path: Option<String>,
    pub access: Access,
    pub classes: Classes,
    /// Names exactly one path: no expansion, no glob.
    pub exact: bool,
    /// The program opens the path (reads, lists or changes it); false for
    /// one it only names (`stat`, `realpath`, a link's target).
    pub opens: bool,
}

/// What the classifier found about one simple command.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// The program judged (`python -m pip` is judged as `pip`).
    pub program: String,
    /// Subcommand words matched in the table (`["stash", "drop"]`), else the first operand.
    pub sub: Vec<String>,
    /// Flags, short clusters split (`-rf` also gives `-r` and `-f`), long ones without `=value`.
    pub flags: Vec<String>,
    /// Non-flag arguments.
    pub operands: Vec<String>,
    pub paths: Vec<PathUse>,
    pub facts: u32,
    /// None: unknown (held).
    pub tier: Option<Tier>,
    /// Exact destinations it connects to.
    pub connect: Vec<Destination>,
    /// Why some destination it needs is not known (so not granted).
    pub unknown_destinations: Vec<String>,
    /// The absolute path of a program named by its path inside a tree the
    /// request can write (`./a.out`, `.venv/bin/pip`).
    pub local_program: Option<String>,
    /// A program named by a path that lies in a tree some request can write
    /// (a shared scratch, a cache), or that cannot be told: it may have been
    /// planted there (`/tmp/a.out`).
    pub plantable_path: bool,
    /// Names of the environment variables it sets (`NAME=v cmd`, `env`, `export`).
    pub env: Vec<String>,
    /// Why the tier is what it is, for explanations.
    pub note: String,
}

impl Facts {
    pub(super) fn raise(&mut self, tier: Tier, note: impl FnOnce() -> String) {
        if let Some(current) = self.tier
            && tier > current
        {
            self.tier = Some(tier);
            self.note = note();
        }
    }

    pub(super) fn set(&mut self, fact: Fact) {
        self.facts |= fact.bit();
    }

    pub fn has(&self, fact: Fact) -> bool {
        self.facts & fact.bit() != 0
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// One interpreted language of `[interpreters]`.
#[derive(Clone, Debug)]
pub struct Language {
    pub name: String,
    pub inline_flags: Vec<String>,
    pub value_flags: Vec<String>,
    pub danger: AhoCorasick,
    /// Spellings of a call whose name is built at run time.
    pub dynamic: regex::RegexSet,
    pub write_calls: AhoCorasick,
    pub write_modes: AhoCorasick,
    pub in_place_flags: Vec<String>,
    pub stdin_data_modules: Vec<String>,
    pub interactive_flags: Vec<String>,
}

impl Language {
    /// Whether `cmd`, this language's interpreter as classified in `facts`,
    /// takes code from standard input: no inline code and no script but `-`
    /// or standard input itself, a module not known to read data there, or
    /// an interactive flag.
    pub(super) fn code_from_stdin(&self, cmd: &SimpleCommand, facts: &Facts) -> bool {
        if cmd
            .args
            .iter()
            .any(|a| self.interactive_flags.contains(&a.text))
        {
            return true;
        }
        if facts.has(Fact::InlineCode) {
            return false;
        }
        let Some(first) = facts.operands.first() else {
            return true;
        };
        let module = cmd
            .args
            .windows(2)
            .any(|w| w[0].text == "-m" && w[1].text == *first);
        matches!(
            first.as_str(),
            "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0"
        ) || (module && !self.stdin_data_modules.contains(first))
    }
}

pub(super) fn literal(text: &str) -> Word {
    Word {
        text: text.to_owned(),
        dynamic: text.contains(['$', '`']),
        glob: false,
    }
}

pub(super) fn sub_word(of: &Word, text: &str) -> Word {
    Word {
        text: text.to_owned(),
        dynamic: of.dynamic,
        glob: of.glob,
    }
}
