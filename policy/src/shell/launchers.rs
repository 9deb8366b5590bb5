//! Variables and options through which a program runs or loads other code, or
//! touches a file: the `[exec_env]` and `[[exec_option]]` tables of
//! `patterns.toml`, compiled. The front end judges a command value
//! (`PAGER='less -R'`, `tar --to-command=…`) as commands of their own; the
//! classifier reads every other effect.

use std::collections::HashMap;

use serde::Deserialize;

use super::Word;
use super::scope::ShellScope;
use crate::Verdict;
use crate::env::{EnvRole, EnvTable};

/// A command and the decision it must get, judged when the policy loads.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionExample {
    pub command: String,
    pub decision: Verdict,
}

/// `[exec_env]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecEnvSpec {
    /// Values of `command` variables that are a plain editor, pager or shell.
    pub plain_values: Vec<String>,
    /// Commands whose `NAME=value` operands set variables (`export`).
    pub exporters: Vec<String>,
    /// Variables whose directories are searched for the programs a command
    /// runs (`PATH`): judged as code paths.
    #[serde(default)]
    pub search_paths: Vec<String>,
    /// Directories in the home where the user's own tools are installed
    /// (`~/.local/bin`): in a search path they are the host's own.
    #[serde(default)]
    pub tool_bins: Vec<String>,
    /// Variables of no `[[env]]` role whose value is data, never code: a path
    /// in them is not judged as code loading.
    #[serde(default)]
    pub inert: Vec<String>,
    /// What shell builtins do to the variables a script set to literals:
    /// see [`ShellScope`].
    #[serde(default)]
    pub scope: ShellScope,
    pub examples: Vec<DecisionExample>,
}

/// What an option's value (or an operand) is to its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// A command line, judged command by command.
    Command,
    /// Inline code of a language of `[interpreters]`.
    Code,
    /// Runs something the policy cannot see whole.
    Hold,
    /// A path code is loaded from.
    CodePath,
    /// Evaluated as arithmetic: a command substitution in a quoted
    /// subscript (`'a[$(id)]'`) runs.
    Arithmetic,
    Read,
    Write,
    Create,
}

/// One `[[exec_option]]` entry as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecOptionSpec {
    pub programs: Vec<String>,
    #[serde(default)]
    pub sub: Vec<String>,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub operand: Option<usize>,
    #[serde(default)]
    pub stdin: bool,
    /// With `operand`: that operand and every word after it are one command
    /// line (`git bisect run make test`).
    #[serde(default)]
    pub joined: bool,
    #[serde(default)]
    pub attached_only: bool,
    #[serde(default)]
    pub prefixes: Vec<String>,
    #[serde(default)]
    pub separator: Option<String>,
    pub effect: Effect,
    #[serde(default)]
    pub language: Option<String>,
    pub examples: Vec<DecisionExample>,
}

/// Where an entry finds its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// After these options.
    Options {
        words: Vec<String>,
        attached_only: bool,
    },
    /// The Nth operand after the subcommand (1-based); 0 is every operand.
    Operand(usize),
    /// The Nth operand and every word after it, as one command line.
    Joined(usize),
    /// Each line fed on standard input.
    Stdin,
}

/// One compiled `[[exec_option]]` entry.
#[derive(Clone, Debug)]
pub struct ExecOption {
    pub sub: Vec<String>,
    pub source: Source,
    pub prefixes: Vec<String>,
    pub separator: Option<String>,
    pub effect: Effect,
    pub language: Option<String>,
}

/// The compiled `[exec_env]` and `[[exec_option]]` tables.
#[derive(Clone, Debug, Default)]
pub struct Launchers {
    pub env_commands: Vec<String>,
    pub plain_values: Vec<String>,
    pub exporters: Vec<String>,
    pub env_code_paths: Vec<String>,
    pub env_options: Vec<String>,
    pub search_paths: Vec<String>,
    pub tool_bins: Vec<String>,
    /// Variables of no role whose paths are not code.
    pub inert: Vec<String>,
    pub scope: ShellScope,
    variables: EnvTable,
    entries: Vec<ExecOption>,
    by_program: HashMap<String, Vec<usize>>,
}

impl Launchers {
    /// Compiles the tables; Err names the entry (its first program) and the problem.
    pub fn build(
        env: &ExecEnvSpec,
        variables: &EnvTable,
        options: &[ExecOptionSpec],
    ) -> Result<Launchers, String> {
        let mut out = Launchers {
            env_commands: variables.names(EnvRole::Command),
            plain_values: env.plain_values.clone(),
            exporters: env.exporters.clone(),
            env_code_paths: variables.names(EnvRole::CodePath),
            env_options: variables.names(EnvRole::Options),
            search_paths: env.search_paths.clone(),
            tool_bins: env.tool_bins.clone(),
            inert: env.inert.clone(),
            scope: env.scope.clone(),
            variables: variables.clone(),
            ..Launchers::default()
        };
        for spec in options {
            let name = spec.programs.first().cloned().unwrap_or_default();
            let problem = |p: &str| format!("exec_option `{name}`: {p}");
            let source = match (spec.options.is_empty(), spec.operand, spec.stdin) {
                (false, None, false) => Source::Options {
                    words: spec.options.clone(),
                    attached_only: spec.attached_only,
                },
                (true, Some(n), false) if spec.joined && n > 0 => Source::Joined(n),
                (true, Some(n), false) if !spec.joined => Source::Operand(n),
                (true, None, true) => Source::Stdin,
                _ => {
                    return Err(problem(
                        "needs exactly one of options, operand, stdin (`joined` needs operand > 0)",
                    ));
                }
            };
            if spec
                .options
                .iter()
                .any(|o| !o.starts_with('-') || o.len() < 2)
            {
                return Err(problem("options must be `-x`, `-name` or `--name`"));
            }
            if (spec.effect == Effect::Code) != spec.language.is_some() {
                return Err(problem(
                    "`language` goes with effect = \"code\", and only there",
                ));
            }
            let by_prefix_only = matches!(source, Source::Operand(0) | Source::Stdin)
                && spec.effect != Effect::Arithmetic;
            if by_prefix_only && spec.prefixes.is_empty() {
                return Err(problem("every operand, or stdin, needs prefixes"));
            }
            if matches!(source, Source::Joined(_)) && spec.effect != Effect::Command {
                return Err(problem("`joined` goes with effect = \"command\""));
            }
            if spec.examples.is_empty() {
                return Err(problem("needs at least one example"));
            }
            let index = out.entries.len();
            out.entries.push(ExecOption {
                sub: spec.sub.clone(),
                source,
                prefixes: spec.prefixes.clone(),
                separator: spec.separator.clone(),
                effect: spec.effect,
                language: spec.language.clone(),
            });
            for program in &spec.programs {
                out.by_program
                    .entry(program.clone())
                    .or_default()
                    .push(index);
            }
        }
        Ok(out)
    }

    /// The entries for a program name.
    pub fn for_program<'a>(&'a self, program: &str) -> impl Iterator<Item = &'a ExecOption> {
        self.by_program
            .get(program)
            .into_iter()
            .flatten()
            .map(|&i| &self.entries[i])
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> &[ExecOption] {
        &self.entries
    }

    /// Whether a variable names paths of code the program may load: no
    /// role of the `[[env]]` table claims it and it is not known inert.
    pub fn env_may_load_code(&self, name: &str) -> bool {
        self.variables.role(name).is_none()
            && !self.inert.iter().any(|n| n == name)
            && !self.search_paths.iter().any(|n| n == name)
    }

    /// Whether a variable's value is a command line a program runs.
    pub fn env_runs_command(&self, name: &str) -> bool {
        self.env_commands.iter().any(|n| n == name)
    }

    /// Whether a value of such a variable is a plain editor, pager or shell.
    pub fn is_plain_value(&self, value: &str) -> bool {
        self.plain_values.iter().any(|v| v == value)
    }
}

impl ExecOption {
    /// Whether the command's leading operands are this entry's subcommand.
    pub fn sub_matches(&self, args: &[Word]) -> bool {
        self.sub.len() <= args.len() && self.sub.iter().zip(args).all(|(s, a)| *s == a.text)
    }

    /// The command lines this entry finds among `args`: option values, the
    /// Nth operand, or the words from the Nth operand on, quoted back into
    /// one line (dynamic when one of them is).
    pub fn command_values(&self, args: &[Word]) -> Vec<Word> {
        // A lone `-` is an operand (`trap - EXIT` resets: it runs nothing).
        let operand_at = |n: usize| {
            args.iter()
                .enumerate()
                .skip(self.sub.len())
                .filter(|(_, a)| !a.text.starts_with('-') || a.text == "-")
                .nth(n - 1)
                .map(|(i, _)| i)
        };
        match self.source {
            Source::Operand(0) if self.sub_matches(args) => args[self.sub.len()..]
                .iter()
                .filter(|a| !a.text.starts_with('-'))
                .cloned()
                .collect(),
            Source::Operand(n) if self.sub_matches(args) => operand_at(n)
                .map(|i| args[i].clone())
                .filter(|w| w.text != "-")
                .into_iter()
                .collect(),
            Source::Joined(n) if self.sub_matches(args) => match operand_at(n) {
                Some(i) if i + 1 == args.len() => vec![args[i].clone()],
                Some(i) => vec![Word {
                    text: args[i..]
                        .iter()
                        .map(|a| super::words::quoted(&a.text))
                        .collect::<Vec<_>>()
                        .join(" "),
                    dynamic: args[i..].iter().any(|a| a.dynamic),
                    glob: false,
                }],
                None => Vec::new(),
            },
            _ => self.option_values(args),
        }
    }

    /// The values of this entry's options among `args` (after the subcommand).
    pub fn option_values(&self, args: &[Word]) -> Vec<Word> {
        let Source::Options {
            words,
            attached_only,
        } = &self.source
        else {
            return Vec::new();
        };
        if !self.sub_matches(args) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut i = self.sub.len();
        while let Some(word) = args.get(i) {
            let t = word.text.as_str();
            i += 1;
            if t == "--" {
                break;
            }
            for option in words {
                if let Some(value) = option_value(t, option, *attached_only) {
                    match value {
                        Some(v) => out.push(part_of(word, v)),
                        None => {
                            if let Some(next) = args.get(i) {
                                out.push(next.clone());
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The text a value stands for: after one of the prefixes (None when it
    /// starts with none of them), separators as spaces.
    pub fn judged_text(&self, value: &str) -> Option<String> {
        let rest = if self.prefixes.is_empty() {
            value
        } else {
            let trimmed = value.trim_start();
            self.prefixes
                .iter()
                .find_map(|p| trimmed.strip_prefix(p.as_str()))?
        };
        Some(match &self.separator {
            Some(sep) => rest.replace(sep.as_str(), " "),
            None => rest.to_owned(),
        })
    }
}

/// Whether word `t` gives `option`: Some(Some(value)) when the value is in
/// the word (`--opt=v`, `-opt=v`, `-Pv`, `-O'v'`), Some(None) when it is the
/// next word (`--opt v`, `-ae v` with `-e` last in a cluster).
fn option_value<'t>(t: &'t str, option: &str, attached_only: bool) -> Option<Option<&'t str>> {
    if t == option {
        return (!attached_only).then_some(None);
    }
    let short = option.len() == 2 && !option.starts_with("--");
    if let Some(rest) = t.strip_prefix(option) {
        return match rest.strip_prefix('=') {
            Some(v) => Some(Some(v)),
            None if short && !rest.is_empty() => Some(Some(rest)),
            None => None,
        };
    }
    if !short || attached_only {
        return None;
    }
    let cluster = t.strip_prefix('-').filter(|c| !c.starts_with('-'))?;
    (cluster.len() > 1
        && cluster.ends_with(&option[1..])
        && cluster.bytes().all(|b| b.is_ascii_alphabetic()))
    .then_some(None)
}

/// A piece of a word, dynamic when the piece holds an expansion.
pub fn part_of(word: &Word, text: &str) -> Word {
    Word {
        text: text.to_owned(),
        dynamic: word.dynamic && text.contains(['$', '`']),
        glob: word.glob && text.contains(['*', '?', '[']),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_in_every_spelling() {
        assert_eq!(
            option_value("--to-command=id", "--to-command", false),
            Some(Some("id"))
        );
        assert_eq!(
            option_value("--to-command", "--to-command", false),
            Some(None)
        );
        assert_eq!(option_value("-Pless", "-P", false), Some(Some("less")));
        assert_eq!(option_value("-ae", "-e", false), Some(None));
        assert_eq!(option_value("-exec", "-ex", false), None);
        assert_eq!(option_value("-ex=x", "-ex", false), Some(Some("x")));
        assert_eq!(option_value("-O", "-O", true), None);
        assert_eq!(option_value("-Ovim", "-O", true), Some(Some("vim")));
        assert_eq!(option_value("-av", "-e", false), None);
    }
}
