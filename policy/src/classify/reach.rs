//! What a command reaches beyond the roles the program table gives its
//! arguments: paths anywhere in its words (`[argument_paths]`), code its
//! environment makes it load (`[exec_env]`), files and code its options
//! name (`[[exec_option]]`), and the paths inline code names.

use std::collections::HashSet;

use super::classifier::Classifier;
use super::facts::{Access, Fact, Facts, Language, PathUse, literal, sub_word};
use super::paths::PathClass;
use crate::Tier;
use crate::shell::{Effect, ExecOption, Feed, Script, SimpleCommand, Source, Word, part_of};

/// How far before a path literal a write call may end (`writeFileSync('`).
const CALL_GAP: usize = 8;
/// How far after a path literal a write call may start (`').write_text(`).
const MODE_GAP: usize = 16;
/// How far after a path literal its call's next argument, a write mode, starts.
const MODE_START: usize = 4;

impl Classifier<'_, '_> {
    /// Paths anywhere in the arguments: a secret named is read (also inside
    /// text such as a script or a message), a tree holding one read
    /// recursively is reading it, and a system path given to a program that
    /// can write is held as a write.
    pub(super) fn argument_paths(&self, cmd: &SimpleCommand, facts: &mut Facts) {
        let spec = &self.tables.argument_paths;
        let recursive = spec.recursive_programs.contains(&facts.program)
            || cmd
                .args
                .iter()
                .any(|a| spec.recursive_flags.iter().any(|f| gives_flag(&a.text, f)));
        if recursive {
            for p in facts.paths.iter_mut().filter(|p| p.access == Access::Read) {
                if p.path.as_deref().is_some_and(|d| self.holds_secret(d)) {
                    p.classes |= PathClass::Secret.bit();
                }
            }
        }
        let writer = facts.tier.is_some_and(|t| t >= Tier::ReversibleWrite);
        let stays = |piece: &str| self.stays_in_workspace(piece);
        // Paths the table already placed keep the role it gave them.
        let mut seen: HashSet<String> = facts.paths.iter().map(|p| p.text.clone()).collect();
        // A wrapper's words (`xargs -a FILE`) are read as far as known: only
        // a secret there counts.
        let words = cmd
            .args
            .iter()
            .map(|w| (w, true))
            .chain(cmd.wrapper_options.iter().map(|w| (w, false)));
        for (word, own) in words {
            if word.text.starts_with(['<', '>']) && word.dynamic {
                continue;
            }
            if word.text.contains(char::is_whitespace) {
                // Text (a script, a message, code): only a secret named in it counts.
                for (_, piece) in code_literals(&word.text) {
                    if looks_like_code_path(piece) && !stays(piece) && seen.insert(piece.to_owned())
                    {
                        self.argument_path(&part_of(word, piece), false, false, facts);
                    }
                }
                continue;
            }
            let mut previous = "";
            for piece in word.text.split(['=', '@', ',', ':']) {
                let after_file_scheme = self.tables.url_schemes.is_local(previous);
                previous = piece;
                if (piece.starts_with("//") && !after_file_scheme)
                    || !looks_like_path(piece)
                    || stays(piece)
                    || !seen.insert(piece.to_owned())
                {
                    continue;
                }
                self.argument_path(
                    &part_of(word, piece),
                    recursive && own,
                    writer && own,
                    facts,
                );
            }
        }
    }

    fn argument_path(&self, word: &Word, recursive: bool, writer: bool, facts: &mut Facts) {
        let located = self.tables.paths.locate(word, self.frame, false);
        let classes = located.classes;
        if classes & PathClass::HarmlessDevice.bit() != 0 {
            return;
        }
        let named = PathClass::Secret.bit() | PathClass::Praxis.bit();
        let holds_secret = recursive
            && located
                .path
                .as_deref()
                .is_some_and(|p| self.holds_secret(p));
        if classes & named != 0 || holds_secret {
            let secret = if holds_secret {
                PathClass::Secret.bit()
            } else {
                0
            };
            facts.paths.push(PathUse {
                text: word.text.clone(),
                path: located.path,
                access: Access::Read,
                classes: classes | secret,
                exact: !word.dynamic && !word.glob,
                opens: true,
            });
            return;
        }
        let read_tree = located.path.as_deref().is_some_and(|p| {
            self.tables
                .argument_paths
                .read_trees
                .iter()
                .any(|t| crate::lexical::is_within(p, t))
        });
        if writer && classes & PathClass::SystemPath.bit() != 0 && !read_tree {
            let program = facts.program.clone();
            facts.raise(Tier::HighRisk, || {
                format!(
                    "`{}`, a system path, is given to `{program}`, which can write",
                    word.text
                )
            });
            // Whether it writes is not known: a storage device is held, not stopped.
            self.add_path_as(
                facts,
                word,
                Access::Create,
                false,
                PathClass::BlockDevice.bit(),
            );
        }
    }

    /// A relative path that does not climb, from a working directory in the
    /// workspace: it names nothing but the workspace, so there is nothing to
    /// find by locating it.
    fn stays_in_workspace(&self, piece: &str) -> bool {
        !piece.starts_with(['/', '~'])
            && !piece.contains("..")
            && self
                .frame
                .cwd
                .zip(self.frame.workspace)
                .is_some_and(|(cwd, ws)| crate::lexical::is_within(cwd, ws))
    }

    /// Whether a secret of `[paths] secrets` lies inside directory `dir`.
    fn holds_secret(&self, dir: &str) -> bool {
        self.tables
            .paths
            .secrets
            .iter()
            .any(|s| s.lies_within(dir, self.frame.home))
    }

    /// `[exec_env]`: code the environment makes the program load.
    pub(super) fn exec_env(&self, env: &[(String, Word)], facts: &mut Facts) {
        let launchers = &self.tables.launchers;
        for (name, value) in env {
            if launchers.env_code_paths.contains(name) || launchers.search_paths.contains(name) {
                let own = [format!("${name}"), format!("${{{name}}}")];
                let tool_bin = |p: &str| {
                    let in_home = ["$HOME", "${HOME}", "~", self.frame.home]
                        .iter()
                        .find_map(|h| p.strip_prefix(h).filter(|r| r.starts_with('/')));
                    in_home.is_some_and(|rest| {
                        let rest = rest.trim_end_matches('/');
                        launchers
                            .tool_bins
                            .iter()
                            .any(|b| b.strip_prefix('~') == Some(rest))
                    })
                };
                for piece in value.text.split([':', ' ']) {
                    if !piece.is_empty() && !own.iter().any(|o| o == piece) && !tool_bin(piece) {
                        self.code_path(&part_of(value, piece), Fact::ExecEnv, facts);
                    }
                }
            } else if launchers.env_options.contains(name) {
                for word in value.text.split_whitespace() {
                    // `-javaagent:/x.jar`, `--require=/x.js`, `-I/x`, `/x.js`
                    let pieces = word.split(['=', ':']).enumerate().map(|(i, p)| match i {
                        0 if !p.starts_with("--") => {
                            p.strip_prefix('-').map_or(p, |o| o.get(1..).unwrap_or(""))
                        }
                        _ => p,
                    });
                    for piece in pieces {
                        if looks_like_path(piece)
                            || (piece.contains('$') && !piece.starts_with('-'))
                        {
                            self.code_path(&part_of(value, piece), Fact::ExecEnv, facts);
                        }
                    }
                }
            } else if launchers.env_runs_command(name) {
                // The program of a command value, named by its path, is code
                // loaded from there (`CC=/elsewhere/cc`).
                let program = value.text.trim_start_matches('|').split_whitespace().next();
                if let Some(program) = program.filter(|p| p.starts_with(['/', '~'])) {
                    self.code_path(&part_of(value, program), Fact::ExecEnv, facts);
                }
            } else if launchers.env_may_load_code(name) && !value.dynamic {
                for piece in value.text.split(':') {
                    // `//` follows a URL's scheme (`sqlite:///x.db`): not a path.
                    if piece.starts_with(['/', '~']) && !piece.starts_with("//") {
                        self.code_path(&part_of(value, piece), Fact::ExecEnv, facts);
                    }
                }
            }
        }
    }

    /// A path code is loaded from: in a writable tree it runs sandboxed (T1);
    /// in a system tree it is the host's own; anywhere else, or only known at
    /// run time, it is `fact`.
    fn code_path(&self, piece: &Word, fact: Fact, facts: &mut Facts) {
        let word = match strip_pwd(&piece.text) {
            Some(rest) => literal(&format!(".{rest}")),
            None => piece.clone(),
        };
        let c = self.tables.paths.locate(&word, self.frame, false).classes;
        let writable =
            PathClass::Workspace.bit() | PathClass::Scratch.bit() | PathClass::Cache.bit();
        let unsafe_classes =
            PathClass::Dynamic.bit() | PathClass::Secret.bit() | PathClass::Praxis.bit();
        if c & unsafe_classes == 0 && c & writable != 0 {
            facts.raise(Tier::ReversibleWrite, || {
                format!(
                    "loads code from `{}` in a writable tree, sandboxed",
                    piece.text
                )
            });
        } else if c & unsafe_classes != 0 || c & PathClass::SystemPath.bit() == 0 {
            facts.set(fact);
            facts.note = format!(
                "loads code from `{}`, outside the workspace or only known at run time",
                piece.text
            );
        }
    }

    /// `[[exec_option]]` entries other than commands (the front end judges those).
    pub(super) fn exec_options(&self, cmd: &SimpleCommand, script: &Script, facts: &mut Facts) {
        for entry in self.tables.launchers.for_program(&cmd.program) {
            let values = match entry.source {
                _ if matches!(entry.effect, Effect::Command | Effect::Arithmetic) => continue,
                Source::Options { .. } => entry.option_values(&cmd.args),
                Source::Operand(n) => entry_operands(entry, n, facts),
                Source::Stdin => fed_lines(cmd, script),
                Source::Joined(_) => continue,
            };
            for value in values {
                let Some(text) = entry.judged_text(&value.text) else {
                    continue;
                };
                let word = sub_word(&value, &text);
                match entry.effect {
                    Effect::Read => self.add_path(facts, &word, Access::Read),
                    Effect::Write => self.add_path(facts, &word, Access::Write),
                    Effect::Create => self.add_path(facts, &word, Access::Create),
                    Effect::CodePath => self.code_path(&word, Fact::ExecOption, facts),
                    Effect::Hold => {
                        facts.set(Fact::ExecOption);
                        facts.note = format!(
                            "`{}` is told to run `{}`, which cannot be judged",
                            cmd.program, value.text
                        );
                    }
                    Effect::Code => {
                        let lang = entry
                            .language
                            .as_deref()
                            .and_then(|n| self.tables.language_named(n));
                        if let Some(lang) = lang {
                            facts.raise(Tier::ReversibleWrite, || {
                                format!("inline {} code runs sandboxed", lang.name)
                            });
                            self.inline_code(lang, &text, facts);
                        }
                    }
                    Effect::Command | Effect::Arithmetic => {}
                }
            }
        }
    }

    /// Inline code: its process and network APIs, and the paths it names.
    pub(super) fn inline_code(&self, lang: &Language, code: &str, facts: &mut Facts) {
        facts.set(Fact::InlineCode);
        if lang.danger.is_match(code) {
            facts.set(Fact::InlineCodeDanger);
        }
        if lang.dynamic.is_match(code) {
            facts.set(Fact::InlineCodeDynamic);
        }
        for (start, piece) in code_literals(code) {
            if !looks_like_code_path(piece) {
                continue;
            }
            let word = literal(piece);
            if written(lang, code, start, start + piece.len()) {
                self.add_path(facts, &word, Access::Write);
                continue;
            }
            if self.stays_in_workspace(piece) {
                continue;
            }
            let located = self.tables.paths.locate(&word, self.frame, false);
            let c = located.classes;
            let named = PathClass::Secret.bit() | PathClass::Praxis.bit();
            let system = c & PathClass::SystemPath.bit() != 0
                && c & (PathClass::HarmlessDevice.bit() | PathClass::Home.bit()) == 0;
            if c & named == 0 && !system {
                continue;
            }
            if c & named == 0 {
                facts.set(Fact::CodeNamesSystemPath);
            }
            facts.paths.push(PathUse {
                text: word.text.clone(),
                path: located.path,
                access: Access::Read,
                classes: c,
                exact: !word.dynamic,
                opens: true,
            });
        }
    }
}

/// The Nth operand after the entry's subcommand (0: every one), as literal words.
fn entry_operands(entry: &ExecOption, n: usize, facts: &Facts) -> Vec<Word> {
    let ops = &facts.operands;
    // The table may have matched the subcommand (operands after it) or not.
    let after = if entry.sub.is_empty() {
        &ops[..]
    } else if ops.starts_with(&entry.sub) {
        &ops[entry.sub.len()..]
    } else if facts.sub == entry.sub {
        &ops[..]
    } else {
        return Vec::new();
    };
    match n {
        0 => after.iter().map(|o| literal(o)).collect(),
        n => after.get(n - 1).map(|o| literal(o)).into_iter().collect(),
    }
}

/// The lines fed on standard input: a here-document, a here-string, or the
/// words of the commands piped in.
fn fed_lines(cmd: &SimpleCommand, script: &Script) -> Vec<Word> {
    let texts: Vec<&str> = match &cmd.stdin {
        Feed::HereDoc { body } => vec![body.as_str()],
        Feed::HereString { body } => vec![body.text.as_str()],
        Feed::Pipe { from } => from
            .iter()
            .filter_map(|&j| script.commands.get(j))
            .flat_map(|s| s.args.iter().map(|a| a.text.as_str()))
            .collect(),
        Feed::Inherited => Vec::new(),
    };
    texts
        .iter()
        .flat_map(|t| t.split(['\n']).flat_map(|l| l.split("\\n")))
        .map(|line| literal(line.trim()))
        .collect()
}

/// Whether argument `arg` gives `flag`: the word itself, or a letter of a
/// short cluster of at most [`CLUSTER_MAX`] letters (`-rf` and `-rnw` give
/// `-r`; `-print` is a word of its own).
fn gives_flag(arg: &str, flag: &str) -> bool {
    if arg == flag {
        return true;
    }
    match (flag.strip_prefix('-'), arg.strip_prefix('-')) {
        (Some(letter), Some(cluster)) if letter.len() == 1 && !cluster.starts_with('-') => {
            cluster.len() <= CLUSTER_MAX
                && cluster.bytes().all(|b| b.is_ascii_alphabetic())
                && cluster.contains(letter)
        }
        _ => false,
    }
}

/// Longest cluster of one-letter flags read as such.
const CLUSTER_MAX: usize = 3;

/// Whether a flag word is one of the in-place flags, alone (`-i`, `-i.bak`)
/// or in a cluster of lowercase switches (`-pi`, `-pie`).
pub(super) fn in_place(flag: &str, in_place_flags: &[String]) -> bool {
    in_place_flags.iter().any(|f| {
        flag.starts_with(f.as_str())
            || f.strip_prefix('-').is_some_and(|letter| {
                let cluster = flag.strip_prefix('-').unwrap_or("");
                !cluster.starts_with('-')
                    && cluster.bytes().all(|b| b.is_ascii_lowercase())
                    && cluster.contains(letter)
            })
    })
}

/// A word piece that reads as a path: absolute, under home, relative with
/// `./` or a `/` inside; never an option.
fn looks_like_path(piece: &str) -> bool {
    !piece.is_empty()
        && !piece.starts_with('-')
        && (piece.starts_with('/')
            || piece == "~"
            || piece.starts_with("~/")
            || piece.starts_with('.')
            || piece.contains('/'))
}

/// A literal of code that reads as a path: as [`looks_like_path`], but `/`
/// must start a name (not `//`, `/*`, a regex or a division).
fn looks_like_code_path(piece: &str) -> bool {
    let mut chars = piece.chars();
    match chars.next() {
        Some('/') => chars
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~')),
        Some('~') => piece == "~" || piece.starts_with("~/"),
        Some('.') => chars
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_')),
        _ => false,
    }
}

/// The pieces of code between quotes, brackets, operators and spaces, with
/// their byte offsets.
fn code_literals(code: &str) -> impl Iterator<Item = (usize, &str)> {
    let delimiter = |c: char| c.is_whitespace() || "'\"`(),;[]{}<>=|:!&+".contains(c);
    let mut start = 0;
    code.char_indices()
        .chain(std::iter::once((code.len(), ' ')))
        .filter_map(move |(i, c)| {
            if !delimiter(c) {
                return None;
            }
            let piece = (start, &code[start..i]);
            start = i + c.len_utf8();
            (!piece.1.is_empty()).then_some(piece)
        })
}

/// Whether the literal at `start..end` of `code` is written: a write call
/// ends just before it, a write mode is the next argument of its call, or
/// a write call starts just after it (`Path('x').write_text(`).
fn written(lang: &Language, code: &str, start: usize, end: usize) -> bool {
    let before = floor(code, start.saturating_sub(CALL_GAP + 24));
    let after_end = floor(code, (end + MODE_GAP).min(code.len()));
    let calls_before = lang
        .write_calls
        .find_iter(&code[before..start])
        .any(|m| start - (before + m.end()) <= CALL_GAP);
    let after = &code[end..after_end];
    // A mode is the next argument of the call the literal is in (`', 'w'`).
    let mode_next = lang
        .write_modes
        .find_iter(after)
        .any(|m| m.start() <= MODE_START && !after[..m.start()].contains(')'));
    calls_before || mode_next || lang.write_calls.is_match(after)
}

/// The largest char boundary of `s` at or below `i`.
fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `$PWD/x`, `${PWD}/x`, `$(pwd)/x`: the part after the working directory.
fn strip_pwd(text: &str) -> Option<&str> {
    ["$PWD", "${PWD}", "$(pwd)"]
        .iter()
        .find_map(|p| text.strip_prefix(p))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_literals_split_at_quotes_and_calls() {
        let found: Vec<&str> = code_literals("open('/etc/passwd', 'w').write(x)")
            .map(|(_, p)| p)
            .collect();
        assert_eq!(found, ["open", "/etc/passwd", "w", ".write", "x"]);
        assert!(looks_like_code_path("/etc/passwd"));
        assert!(!looks_like_code_path("//comment"));
        assert!(!looks_like_code_path("/*"));
        assert!(looks_like_code_path(".git/hooks/pre-commit"));
        assert!(!looks_like_code_path("/\\d+/"));
    }

    #[test]
    fn flags_and_clusters() {
        assert!(gives_flag("-rf", "-r"));
        assert!(gives_flag("--recursive", "--recursive"));
        assert!(!gives_flag("--rr", "-r"));
        assert!(!gives_flag("-print", "-r"));
        let perl = ["-i".to_owned()];
        assert!(in_place("-pi", &perl));
        assert!(in_place("-i.bak", &perl));
        assert!(!in_place("-Mstrict", &perl));
        assert!(!in_place("-n", &perl));
    }
}
