//! Shell front end: finds every simple command a string (or an argv) would run.
//!
//! Output is a flat list of [`SimpleCommand`]s with canonical words (quotes
//! removed as the shell would), wrappers unwrapped, nested scripts (`sh -c`,
//! literal `eval`, substitutions, here-docs fed to shells) parsed recursively,
//! plus the reasons the text itself must be held ([`Script::holds`]).
//!
//! Conventions the classifier relies on:
//! - A process substitution used as a word (`bash <(curl …)`) is a dynamic
//!   [`Word`] whose text starts with `<(` or `>(`; its commands are listed with
//!   [`Origin::ProcessSubstitution`].
//! - `git` global options are stripped so `args[0]` is the subcommand; those
//!   with a value are kept in `wrappers` as `git -c key=value`, `git -C dir`,
//!   `git --git-dir=dir`, … so `-c core.hooksPath=` or `-c alias.x=!cmd` stay visible.
//! - A shell given a here-doc or here-string and no script operand stays in
//!   the list with its [`Feed`]; the body's commands follow with [`Origin::FedScript`].

use serde::Serialize;

/// One word after quote removal, as the shell would pass it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Word {
    /// Canonical text. Literal parts are unquoted (`r''m` → `rm`); expansions that
    /// cannot be known statically keep their source form (`$DIR`, `$(pwd)`).
    /// `$HOME`, `${HOME}` and a leading unquoted `~` are written as `~`.
    pub text: String,
    /// Contains a parameter, command or arithmetic expansion whose value is unknown.
    pub dynamic: bool,
    /// Contains an unquoted glob character (`*`, `?`, `[`).
    pub glob: bool,
}

/// What a redirection does to its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectKind {
    Read,
    Write,
    Append,
    ReadWrite,
    /// `2>&1`, `>&-`: fd duplication or close, touches no path.
    Duplicate,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Redirect {
    pub fd: Option<u32>,
    pub kind: RedirectKind,
    pub target: Word,
}

/// What a command reads on its standard input, when that matters for judging
/// (content fed to a shell or interpreter is code).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Feed {
    #[default]
    Inherited,
    /// Piped from an earlier pipeline stage: indices into [`Script::commands`] of
    /// the commands of that stage (several when the stage is a compound command).
    Pipe { from: Vec<usize> },
    /// A here-document body (after expansion markers, as text).
    HereDoc { body: String },
    /// A here-string word.
    HereString { body: Word },
}

/// Where a simple command was found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    #[default]
    TopLevel,
    /// Inside `$(…)` or backticks.
    CommandSubstitution,
    /// Inside `<(…)` or `>(…)`.
    ProcessSubstitution,
    /// The script of `sh -c`, `bash -c`, literal `eval`, … .
    ShellString,
    /// A here-doc or here-string fed to a shell.
    FedScript,
    /// A function body.
    FunctionBody,
}

/// One command the shell would execute.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SimpleCommand {
    /// Canonical program name: basename of `invoked_as` (`/usr/bin/git` → `git`).
    /// Empty for an assignment-only or redirection-only command.
    pub program: String,
    /// The command word as written, canonicalized (`./x.sh`, `/usr/bin/git`, `git`).
    pub invoked_as: String,
    /// Arguments after the command word.
    pub args: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Leading `NAME=value` assignments (also those given to `env`).
    pub assignments: Vec<(String, Word)>,
    /// Wrappers unwrapped to reach this command, outermost first
    /// (`sudo`, `env`, `nohup`, `timeout`, `xargs`, `find -exec`, `sh -c`, `eval`, …).
    pub wrappers: Vec<String>,
    /// Reached through `sudo`, `doas`, `su -c`, `pkexec` or similar.
    pub escalated: bool,
    /// The words the wrappers took before this command (`xargs -a FILE`,
    /// `sudo -u root`), assignments aside: paths there are judged too.
    pub wrapper_options: Vec<Word>,
    pub stdin: Feed,
    pub origin: Origin,
}

/// The front end's result for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Script {
    pub commands: Vec<SimpleCommand>,
    /// Names of the shell functions the request defines (their bodies are in
    /// [`Script::commands`] with [`Origin::FunctionBody`]).
    pub functions: Vec<String>,
    /// Reasons the request must be held whatever its commands are: a parse
    /// error, a dynamic command word, `eval` of non-literal text, input over the
    /// size cap, nesting too deep. Each names the construct.
    pub holds: Vec<String>,
}

mod invocation;
mod launchers;
mod scan;
mod scope;
mod walk;
mod words;
mod wrapper_table;
mod wrappers;

#[cfg(test)]
mod tests;

pub use launchers::{
    DecisionExample, Effect, ExecEnvSpec, ExecOption, ExecOptionSpec, Launchers, Source, part_of,
};
use walk::{Ctx, Frontend, literal};
pub use wrapper_table::{Unwrap, WrapperError, WrapperExample, WrapperSpec, Wrappers};

/// Requests longer than this are held unread.
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Deepest nesting of (), {}, $(), quotes, if/case/loops, nested `sh -c` and
/// `eval` scripts and wrappers that is analysed; deeper text is held.
pub const MAX_NESTING: usize = 64;

/// Most shell text handed to the parser per request, nested scripts included.
/// The parser costs tens of nanoseconds per byte; longer text is held so one
/// request stays within a few tens of milliseconds.
pub const MAX_PARSED_BYTES: usize = 256 << 10;

/// Most shell tokens analysed per request, nested scripts included; keeps the
/// front end's time bounded on any input.
pub const MAX_TOKENS: usize = 8_192;

/// Finds every simple command the shell would run for `src`, with the
/// built-in wrapper table. Total: every input gets a [`Script`]; what cannot
/// be analysed is in [`Script::holds`].
#[must_use]
pub fn parse_script(src: &str) -> Script {
    parse_script_with(src, Wrappers::builtin())
}

/// [`parse_script`] with the wrapper table of a loaded policy.
#[must_use]
pub fn parse_script_with(src: &str, wrappers: &Wrappers) -> Script {
    let mut fe = Frontend::new(wrappers);
    if src.len() > MAX_INPUT_BYTES {
        fe.hold(format!(
            "input of {} bytes is over the {MAX_INPUT_BYTES}-byte limit",
            src.len()
        ));
        return fe.script;
    }
    fe.script(src, &Ctx::default());
    fe.script
}

/// Analyses an argv executed directly (no shell), with the built-in wrapper
/// table: words are literal, but wrappers are still unwrapped and `sh -c`
/// scripts parsed.
#[must_use]
pub fn parse_argv(argv: &[String]) -> Script {
    parse_argv_with(argv, Wrappers::builtin())
}

/// [`parse_argv`] with the wrapper table of a loaded policy.
#[must_use]
pub fn parse_argv_with(argv: &[String], wrappers: &Wrappers) -> Script {
    let mut fe = Frontend::new(wrappers);
    let total: usize = argv.iter().map(String::len).sum();
    if total > MAX_INPUT_BYTES {
        fe.hold(format!(
            "argv of {total} bytes is over the {MAX_INPUT_BYTES}-byte limit"
        ));
        return fe.script;
    }
    if argv.is_empty() {
        fe.hold("empty argv".to_owned());
        return fe.script;
    }
    let words: Vec<Word> = argv.iter().map(|a| literal(a.clone())).collect();
    fe.dispatch(SimpleCommand::default(), &words, &Ctx::default());
    fe.script
}

/// The simple command as text, for display, audit and regex rules.
pub fn display_command(cmd: &SimpleCommand) -> String {
    let mut out = String::with_capacity(
        cmd.invoked_as.len() + cmd.args.iter().map(|a| a.text.len() + 1).sum::<usize>(),
    );
    out.push_str(if cmd.invoked_as.is_empty() {
        &cmd.program
    } else {
        &cmd.invoked_as
    });
    for a in &cmd.args {
        out.push(' ');
        out.push_str(&a.text);
    }
    out
}

/// The environment a command sets: its assignments (also those given to `env`
/// or `sudo`), and the `NAME=value` operands of `export` and its kin (and of
/// `env` running no command): `[exec_env] exporters`.
pub fn environment(cmd: &SimpleCommand, launchers: &Launchers) -> Vec<(String, Word)> {
    let mut out = cmd.assignments.clone();
    if launchers.exporters.contains(&cmd.program) {
        out.extend(cmd.args.iter().filter_map(scope::as_assignment));
    }
    out
}
