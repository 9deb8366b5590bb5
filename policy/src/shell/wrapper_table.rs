//! The wrapper table of `patterns.toml` (`[[wrapper]]`): which programs run
//! another command, which of their options take a value, and how the command
//! they run is found. Compiled for lookups by program name and checked
//! against its examples when it loads. The unwrapping itself is in the
//! `wrappers` module; this one holds only the knowledge it reads.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::Deserialize;

use super::launchers::{ExecEnvSpec, ExecOptionSpec, Launchers};
use super::{Script, display_command, parse_script_with};

/// How a wrapper's command is found; each kind is one parsing routine of the
/// front end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unwrap {
    /// Options, skipped operands, assignments, then the command word.
    Command,
    /// `env`: options as whole words, assignments, a split-string option.
    Env,
    /// `su`: no command of its own; a script option's value is a script.
    SwitchUser,
    /// A shell: the operand after `-c` is a script.
    Shell,
    /// Literal operands joined are a script.
    Eval,
    /// Operands joined are a script, or the command after an exec flag.
    Watch,
    /// Operands up to the argument separator joined are a script.
    Parallel,
    /// Judged itself, and each `-exec … ;` command.
    Find,
    /// Reads a file of commands.
    Source,
    /// Defines an alias.
    Alias,
    /// Judged itself with its global options removed.
    Git,
}

impl Unwrap {
    /// The name as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Unwrap::Command => "command",
            Unwrap::Env => "env",
            Unwrap::SwitchUser => "switch_user",
            Unwrap::Shell => "shell",
            Unwrap::Eval => "eval",
            Unwrap::Watch => "watch",
            Unwrap::Parallel => "parallel",
            Unwrap::Find => "find",
            Unwrap::Source => "source",
            Unwrap::Alias => "alias",
            Unwrap::Git => "git",
        }
    }
}

/// One `[[wrapper]]` entry as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapperSpec {
    pub names: Vec<String>,
    pub unwrap: Unwrap,
    #[serde(default)]
    pub escalates: bool,
    #[serde(default)]
    pub value_options: Vec<String>,
    #[serde(default)]
    pub assignments: bool,
    #[serde(default)]
    pub skip: usize,
    #[serde(default)]
    pub no_command_flags: Vec<String>,
    #[serde(default)]
    pub command_flags: Vec<String>,
    #[serde(default)]
    pub end_prefix: Option<String>,
    #[serde(default)]
    pub script_options: Vec<String>,
    #[serde(default)]
    pub stdin_options: Vec<String>,
    #[serde(default)]
    pub exec_options: Vec<String>,
    #[serde(default)]
    pub exec_ends: Vec<String>,
    #[serde(default)]
    pub default_command: Option<String>,
    pub examples: Vec<WrapperExample>,
}

/// A command using the wrapper, and what the front end must make of it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapperExample {
    pub command: String,
    /// The simple command it must yield, as displayed.
    #[serde(default)]
    pub runs: Option<String>,
    /// Text of the reason it must be held for.
    #[serde(default)]
    pub holds: Option<String>,
}

/// A list of options split by form: `-x` letters and `--name` names.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Each option as written.
    pub words: Vec<String>,
    /// Letters of the `-x` options.
    pub short: String,
    /// Names of the `--name` options, without the dashes.
    pub long: Vec<String>,
}

impl Options {
    pub fn compile(entries: &[String]) -> Result<Options, String> {
        let mut out = Options::default();
        for entry in entries {
            if let Some(name) = entry.strip_prefix("--") {
                if name.is_empty() || name.contains('=') {
                    return Err(entry.clone());
                }
                out.long.push(name.to_owned());
            } else {
                let mut letters = entry.strip_prefix('-').unwrap_or_default().chars();
                match (letters.next(), letters.next()) {
                    (Some(c), None) if c != '-' => out.short.push(c),
                    _ => return Err(entry.clone()),
                }
            }
            out.words.push(entry.clone());
        }
        Ok(out)
    }

    /// Whether `word` is one of the options, written whole.
    pub fn has_word(&self, word: &str) -> bool {
        self.words.iter().any(|w| w == word)
    }

    /// Whether `name` (without dashes) is one of the long options.
    pub fn has_long(&self, name: &str) -> bool {
        self.long.iter().any(|l| l == name)
    }
}

/// One compiled wrapper entry.
#[derive(Clone, Debug)]
pub struct Wrapper {
    pub unwrap: Unwrap,
    pub escalates: bool,
    pub value_options: Options,
    pub assignments: bool,
    pub skip: usize,
    pub no_command_flags: Options,
    pub command_flags: Options,
    pub end_prefix: Option<String>,
    pub script_options: Options,
    pub stdin_options: Options,
    pub exec_options: Vec<String>,
    pub exec_ends: Vec<String>,
    pub default_command: Option<String>,
}

/// The compiled `[[wrapper]]` table.
#[derive(Clone, Debug, Default)]
pub struct Wrappers {
    entries: Vec<Wrapper>,
    by_name: HashMap<String, usize>,
    /// Variables and options whose value is a command the program runs.
    launchers: Launchers,
}

/// Why a wrapper table is refused. Each names the text to locate it by.
#[derive(Debug, thiserror::Error)]
pub enum WrapperError {
    #[error("wrapper `{name}` is declared twice")]
    Duplicate { name: String },
    #[error("wrapper `{name}`: `{option}` is not an option (`-x` or `--name`)")]
    Option { name: String, option: String },
    #[error("wrapper `{name}`: `{field}` means nothing to unwrap = \"{}\"", unwrap.as_str())]
    Field {
        name: String,
        field: &'static str,
        unwrap: Unwrap,
    },
    #[error("wrapper `{name}`: {problem}")]
    Entry { name: String, problem: String },
    #[error("wrapper `{name}`: example `{command}` {problem}")]
    Example {
        name: String,
        command: String,
        problem: String,
    },
}

impl WrapperError {
    /// The text of the file the error is about, to find its line by.
    pub fn subject(&self) -> &str {
        match self {
            WrapperError::Duplicate { name }
            | WrapperError::Field { name, .. }
            | WrapperError::Entry { name, .. } => name,
            WrapperError::Option { option, .. } => option,
            WrapperError::Example { command, .. } => command,
        }
    }
}

/// The fields beyond names, unwrap, escalates and examples each kind reads.
fn fields_read(unwrap: Unwrap) -> &'static [&'static str] {
    match unwrap {
        Unwrap::Command => &[
            "value_options",
            "assignments",
            "skip",
            "no_command_flags",
            "default_command",
        ],
        Unwrap::Env => &["value_options", "script_options"],
        Unwrap::SwitchUser => &["value_options", "script_options"],
        Unwrap::Shell => &["value_options", "script_options", "stdin_options"],
        Unwrap::Watch => &["value_options", "command_flags"],
        Unwrap::Parallel => &["value_options", "end_prefix"],
        Unwrap::Find => &["exec_options", "exec_ends"],
        Unwrap::Git => &["value_options"],
        Unwrap::Eval | Unwrap::Source | Unwrap::Alias => &[],
    }
}

/// The optional fields `spec` gives a value.
fn fields_given(spec: &WrapperSpec) -> Vec<&'static str> {
    [
        ("value_options", !spec.value_options.is_empty()),
        ("assignments", spec.assignments),
        ("skip", spec.skip != 0),
        ("no_command_flags", !spec.no_command_flags.is_empty()),
        ("command_flags", !spec.command_flags.is_empty()),
        ("end_prefix", spec.end_prefix.is_some()),
        ("script_options", !spec.script_options.is_empty()),
        ("stdin_options", !spec.stdin_options.is_empty()),
        ("exec_options", !spec.exec_options.is_empty()),
        ("exec_ends", !spec.exec_ends.is_empty()),
        ("default_command", spec.default_command.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, given)| given.then_some(field))
    .collect()
}

fn compile(spec: &WrapperSpec) -> Result<Wrapper, WrapperError> {
    let name = spec.names.join(", ");
    if let Some(field) = fields_given(spec)
        .into_iter()
        .find(|f| !fields_read(spec.unwrap).contains(f))
    {
        return Err(WrapperError::Field {
            name,
            field,
            unwrap: spec.unwrap,
        });
    }
    let entry_problem = |problem: &str| WrapperError::Entry {
        name: name.clone(),
        problem: problem.to_owned(),
    };
    if spec.names.is_empty() || spec.names.iter().any(|n| n.is_empty() || n.contains('/')) {
        return Err(entry_problem("names must be program names"));
    }
    let needs_script_option = matches!(
        spec.unwrap,
        Unwrap::Env | Unwrap::SwitchUser | Unwrap::Shell
    );
    if needs_script_option && spec.script_options.is_empty() {
        return Err(entry_problem("needs script_options"));
    }
    if spec.unwrap == Unwrap::Find && (spec.exec_options.is_empty() || spec.exec_ends.is_empty()) {
        return Err(entry_problem("needs exec_options and exec_ends"));
    }
    if spec.end_prefix.as_deref() == Some("") || spec.default_command.as_deref() == Some("") {
        return Err(entry_problem(
            "end_prefix and default_command cannot be empty",
        ));
    }
    if spec.examples.is_empty() {
        return Err(entry_problem("needs at least one example"));
    }
    let options = |entries: &[String]| {
        Options::compile(entries).map_err(|option| WrapperError::Option {
            name: name.clone(),
            option,
        })
    };
    Ok(Wrapper {
        unwrap: spec.unwrap,
        escalates: spec.escalates,
        value_options: options(&spec.value_options)?,
        assignments: spec.assignments,
        skip: spec.skip,
        no_command_flags: options(&spec.no_command_flags)?,
        command_flags: options(&spec.command_flags)?,
        end_prefix: spec.end_prefix.clone(),
        script_options: options(&spec.script_options)?,
        stdin_options: options(&spec.stdin_options)?,
        exec_options: spec.exec_options.clone(),
        exec_ends: spec.exec_ends.clone(),
        default_command: spec.default_command.clone(),
    })
}

impl Wrappers {
    /// Compiles `specs`, then checks every example against the compiled table.
    pub fn build(specs: &[WrapperSpec]) -> Result<Wrappers, WrapperError> {
        let mut table = Wrappers::default();
        for spec in specs {
            let index = table.entries.len();
            table.entries.push(compile(spec)?);
            for name in &spec.names {
                if table.by_name.insert(name.clone(), index).is_some() {
                    return Err(WrapperError::Duplicate { name: name.clone() });
                }
            }
        }
        for spec in specs {
            let wrapper = &table.entries[table.by_name[&spec.names[0]]];
            for example in &spec.examples {
                let script = parse_script_with(&example.command, &table);
                example_problem(example, &spec.names, wrapper, &script).map_or(
                    Ok(()),
                    |problem| {
                        Err(WrapperError::Example {
                            name: spec.names.join(", "),
                            command: example.command.clone(),
                            problem,
                        })
                    },
                )?;
            }
        }
        Ok(table)
    }

    /// The entry for a program name.
    pub fn get(&self, program: &str) -> Option<&Wrapper> {
        self.by_name.get(program).map(|&i| &self.entries[i])
    }

    /// The table with the `[exec_env]` and `[[exec_option]]` tables, whose
    /// command values the front end judges as commands.
    #[must_use]
    pub fn with_launchers(mut self, launchers: Launchers) -> Wrappers {
        self.launchers = launchers;
        self
    }

    pub fn launchers(&self) -> &Launchers {
        &self.launchers
    }

    /// The table of the built-in `patterns.toml`.
    pub fn builtin() -> &'static Wrappers {
        &BUILTIN
    }
}

/// Why the front end's reading of `example` is not what it states, if it is not.
fn example_problem(
    example: &WrapperExample,
    names: &[String],
    wrapper: &Wrapper,
    script: &Script,
) -> Option<String> {
    if example.runs.is_none() && example.holds.is_none() {
        return Some("states neither `runs` nor `holds`".to_owned());
    }
    if let Some(runs) = &example.runs {
        let Some(cmd) = script.commands.iter().find(|c| display_command(c) == *runs) else {
            let found: Vec<String> = script.commands.iter().map(display_command).collect();
            return Some(format!("runs {found:?}, not `{runs}`"));
        };
        if cmd.wrappers.is_empty() && !names.contains(&cmd.program) {
            return Some(format!("does not unwrap to `{runs}`"));
        }
        if cmd.escalated != wrapper.escalates {
            return Some(format!(
                "runs `{runs}` {} escalated",
                if cmd.escalated { "as" } else { "not" }
            ));
        }
        if example.holds.is_none() && !script.holds.is_empty() {
            return Some(format!("is held: {}", script.holds.join("; ")));
        }
    }
    if let Some(holds) = &example.holds
        && !script.holds.iter().any(|h| h.contains(holds.as_str()))
    {
        return Some(format!("is not held for `{holds}`"));
    }
    None
}

/// The sections the front end reads; the rest of the file is read elsewhere.
#[derive(Deserialize)]
struct WrapperSection {
    #[serde(rename = "wrapper")]
    wrappers: Vec<WrapperSpec>,
    exec_env: ExecEnvSpec,
    exec_option: Vec<ExecOptionSpec>,
}

static BUILTIN: LazyLock<Wrappers> = LazyLock::new(|| {
    // The built-in file is the one every policy test loads and checks, so a
    // failure here is a broken build, never a run-time condition.
    let section: WrapperSection =
        toml::from_str(crate::BUILTIN_PATTERNS).expect("built-in patterns parse");
    let launchers = Launchers::build(
        &section.exec_env,
        crate::env::EnvTable::builtin(),
        &section.exec_option,
    )
    .expect("built-in exec tables are valid");
    Wrappers::build(&section.wrappers)
        .expect("built-in wrapper table is valid")
        .with_launchers(launchers)
});
