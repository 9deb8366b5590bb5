//! Everything the classifier reads from `patterns.toml`, compiled, and the
//! `[interpreters]` section it is built from.

use std::collections::{BTreeSet, HashMap, HashSet};

use aho_corasick::AhoCorasick;
use serde::Deserialize;

use super::destinations;
use super::facts::{Facts, Language};
use super::paths::PathLists;
use super::routines;
use super::table::ProgramTable;
use crate::decision::Destination;
use crate::shell::{Launchers, SimpleCommand};

/// `[argument_paths]`, compiled.
#[derive(Clone, Debug, Default)]
pub struct ArgumentPaths {
    pub read_trees: Vec<String>,
    pub recursive_flags: Vec<String>,
    pub recursive_programs: HashSet<String>,
}

/// Everything the classifier reads from `patterns.toml`, compiled.
#[derive(Clone, Debug)]
pub struct Tables {
    pub programs: ProgramTable,
    pub paths: PathLists,
    pub builtins: HashSet<String>,
    pub shells: HashSet<String>,
    /// Builtins that run a script file in the current shell (`source`, `.`).
    pub sourcing: HashSet<String>,
    pub fetchers: HashSet<String>,
    /// Decoder program to the flags that make it decode (empty: always).
    pub decoders: HashMap<String, Vec<String>>,
    pub local_hosts: Vec<String>,
    /// Ports of this machine a command may reach (`[loopback]`, the
    /// built-in list and the operator's).
    pub loopback_ports: BTreeSet<u16>,
    pub languages: Vec<Language>,
    pub language_of: HashMap<String, usize>,
    /// `git -c` keys that cannot run anything (`section.` covers a section).
    pub git_plain_keys: Vec<String>,
    /// Variables (`*` globs) through which git runs a command.
    pub git_env: Vec<String>,
    /// Git subcommands (words, then at most one flag) that write the
    /// repository's config file.
    pub git_config_writers: Vec<GitConfigWriter>,
    /// `[url_schemes]`: default ports, local schemes, URL and port options.
    pub url_schemes: destinations::UrlSchemes,
    /// `[[detector]]`: the programs each parsing routine reads.
    pub detectors: routines::Detectors,
    /// `[[undo]]`: what a command's undo saves beyond its paths.
    pub undo: routines::UndoTable,
    pub argument_paths: ArgumentPaths,
    /// `[exec_env]` and `[[exec_option]]`.
    pub launchers: Launchers,
    /// `[information]`: flags that, alone, ask only for a version or usage.
    pub information_flags: Vec<String>,
}

/// One `[git_config] writers` entry: `remote add`, `branch -u`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitConfigWriter {
    /// Leading words after `git`: table subcommand words, then operands.
    pub words: Vec<String>,
    /// A flag the command must carry, if any.
    pub flag: Option<String>,
}

impl GitConfigWriter {
    /// Parses `remote add` or `branch --set-upstream-to`; None when empty or
    /// when a flag is followed by more words.
    pub fn parse(entry: &str) -> Option<GitConfigWriter> {
        let mut words: Vec<String> = entry.split_whitespace().map(str::to_owned).collect();
        let flag = words.pop_if(|w| w.starts_with('-'));
        (!words.is_empty() && words.iter().all(|w| !w.starts_with('-')))
            .then_some(GitConfigWriter { words, flag })
    }

    pub(super) fn matches(&self, facts: &Facts) -> bool {
        let said = facts.sub.iter().chain(&facts.operands);
        self.words.len() <= facts.sub.len() + facts.operands.len()
            && self.words.iter().zip(said).all(|(want, got)| want == got)
            && self.flag.as_ref().is_none_or(|f| facts.has_flag(f))
    }
}

impl Tables {
    /// Whether `d` is this machine (in any spelling).
    pub fn is_loopback(&self, d: &Destination) -> bool {
        destinations::is_loopback(&d.host, &self.local_hosts)
    }

    /// Whether `d` is this machine on a port of `[loopback]`.
    pub fn is_open_loopback(&self, d: &Destination) -> bool {
        self.is_loopback(d) && self.loopback_ports.contains(&d.port)
    }

    pub fn build_interpreters(
        spec: &Interpreters,
    ) -> Result<(Vec<Language>, HashMap<String, usize>), String> {
        let mut languages = Vec::new();
        let mut language_of = HashMap::new();
        for lang in &spec.languages {
            let automaton = |tokens: &[String]| {
                AhoCorasick::new(tokens).map_err(|e| format!("language {}: {e}", lang.name))
            };
            for p in &lang.programs {
                language_of.insert(p.clone(), languages.len());
            }
            languages.push(Language {
                name: lang.name.clone(),
                inline_flags: lang.inline_flags.clone(),
                value_flags: lang.value_flags.clone(),
                danger: automaton(&lang.danger)?,
                dynamic: regex::RegexSet::new(&lang.dynamic)
                    .map_err(|e| format!("language {}: {e}", lang.name))?,
                write_calls: automaton(&lang.write_calls)?,
                write_modes: automaton(&lang.write_modes)?,
                in_place_flags: lang.in_place_flags.clone(),
                stdin_data_modules: lang.stdin_data_modules.clone(),
                interactive_flags: lang.interactive_flags.clone(),
            });
        }
        Ok((languages, language_of))
    }

    pub(super) fn language(&self, program: &str) -> Option<&Language> {
        let idx = self.language_of.get(program).or_else(|| {
            let stripped = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
            self.language_of.get(stripped)
        })?;
        Some(&self.languages[*idx])
    }

    /// The language of `[interpreters]` with this name.
    pub fn language_named(&self, name: &str) -> Option<&Language> {
        self.languages.iter().find(|l| l.name == name)
    }

    pub(super) fn is_shell(&self, program: &str) -> bool {
        self.shells.contains(program)
    }

    /// A shell, or a builtin that runs a script file in the current shell
    /// (`[interpreters] sourcing`).
    pub(super) fn runs_shell_script(&self, program: &str) -> bool {
        self.is_shell(program) || self.sourcing.contains(program)
    }

    /// Whether `cmd` downloads or decodes: its output is untrusted code if run.
    pub(super) fn emits_fetched(&self, cmd: &SimpleCommand) -> bool {
        if self.fetchers.contains(&cmd.program) {
            return true;
        }
        self.decoders.get(&cmd.program).is_some_and(|flags| {
            flags.is_empty()
                || cmd.args.iter().any(|a| {
                    flags.iter().any(|f| {
                        a.text == *f
                            || (f.len() == 2
                                && !a.text.starts_with("--")
                                && a.text.starts_with('-')
                                && a.text[1..].contains(&f[1..]))
                    })
                })
        })
    }
}

/// `[interpreters]` of `patterns.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interpreters {
    pub shells: Vec<String>,
    /// Builtins that run a script file in the current shell.
    pub sourcing: Vec<String>,
    /// Per shell, the options that keep it from reading any startup file
    /// (`bash`: `--norc --noprofile`); praxisd puts them before `-c`.
    #[serde(default)]
    pub no_rc: std::collections::BTreeMap<String, Vec<String>>,
    pub fetchers: Vec<String>,
    pub decoders: Vec<DecoderSpec>,
    /// Hosts a fetcher may reach as a local request.
    pub local_hosts: Vec<String>,
    #[serde(rename = "language")]
    pub languages: Vec<LanguageSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecoderSpec {
    pub program: String,
    /// Flags that make it decode; empty means it always decodes.
    #[serde(default)]
    pub flags: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageSpec {
    pub name: String,
    pub programs: Vec<String>,
    /// Flags whose value is inline code (`-c`, `-e`, …).
    pub inline_flags: Vec<String>,
    /// Flags that take a value which is not code (`-m module`, `-W opt`).
    #[serde(default)]
    pub value_flags: Vec<String>,
    /// Tokens in inline code that reach processes, the network or delete files.
    pub danger: Vec<String>,
    /// Regular expressions for a call whose name is built at run time
    /// (looked up by a string, concatenated, aliased): a dynamic command.
    #[serde(default)]
    pub dynamic: Vec<String>,
    /// Calls whose path argument follows them (`writeFileSync(`): it is written.
    #[serde(default)]
    pub write_calls: Vec<String>,
    /// Modes that follow a path argument (`open(p, 'w')`): it is written.
    #[serde(default)]
    pub write_modes: Vec<String>,
    /// Flags with which the file operands after the code are rewritten (`perl -pi`).
    #[serde(default)]
    pub in_place_flags: Vec<String>,
    /// Modules (`-m NAME`) that read standard input as data, not code.
    #[serde(default)]
    pub stdin_data_modules: Vec<String>,
    /// Flags after which the interpreter reads code from standard input
    /// even when given a script (`-i`).
    #[serde(default)]
    pub interactive_flags: Vec<String>,
}
