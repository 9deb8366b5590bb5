//! Wrapper unwrapping: `sudo`, `env`, `timeout`, `xargs`, `find -exec`,
//! `sh -c`, literal `eval`, … are peeled off so the command they run is judged
//! as its own [`SimpleCommand`], with the wrapper recorded in `wrappers`.
//! Which programs are wrappers, and their options, is the `[[wrapper]]` table
//! of `patterns.toml` ([`Wrappers`]); this module is the parsing it drives.
//!
//! `git` global options are stripped so `args[0]` is the subcommand; each one
//! that carries a value is kept as a wrapper entry such as `git -c core.pager=less`
//! or `git -C /srv/repo`, so configuration tricks stay visible to the classifier.

use std::ops::Range;

use super::invocation::{ShellRun, long_attached, shell_invocation};
use super::scope::as_assignment;
use super::walk::{Ctx, Frontend, env_commands};
use super::words::excerpt;
use super::wrapper_table::{Options, Unwrap, Wrapper};
use super::{Feed, MAX_NESTING, Origin, SimpleCommand, Word};

/// What to do with a command word after looking at its program.
enum Step {
    /// Judge the command as it is.
    Final { escalated: bool },
    /// A wrapper: the wrapped command word is `skip` words after the first argument.
    Inner {
        skip: usize,
        escalated: bool,
        assignments: Vec<(String, Word)>,
        default: Option<String>,
    },
    /// A wrapper running shell text: parse `text` as a script.
    Script {
        wrapper: String,
        text: String,
        escalated: bool,
    },
    /// Hold for `reason`, and judge the command as it is.
    Hold(String),
    /// `find`: judge find itself, and each `-exec …;` range of its arguments.
    Find(Vec<Range<usize>>),
}

impl Frontend<'_> {
    /// Judges `words` (command word first) as one command, peeling wrappers.
    pub fn dispatch(&mut self, mut cmd: SimpleCommand, words: &[Word], ctx: &Ctx) {
        if ctx.depth >= MAX_NESTING {
            self.hold(format!(
                "wrapped commands nested deeper than {MAX_NESTING} levels"
            ));
            return;
        }
        let mut at = 0;
        loop {
            let Some(head) = words.get(at) else {
                self.push(cmd, ctx);
                return;
            };
            self.command_word(&mut cmd, head);
            let args = &words[at + 1..];
            let wrappers = self.wrappers;
            match step(wrappers.get(&cmd.program), &cmd.program, args) {
                Step::Final { escalated } => {
                    cmd.escalated |= escalated;
                    self.finish(cmd, args, ctx);
                    return;
                }
                Step::Hold(reason) => {
                    self.hold(reason);
                    self.finish(cmd, args, ctx);
                    return;
                }
                Step::Inner {
                    skip,
                    escalated,
                    assignments,
                    default,
                } => {
                    cmd.wrappers.push(cmd.program.clone());
                    cmd.escalated |= escalated;
                    cmd.assignments.extend(assignments);
                    let taken = args.get(..skip).unwrap_or(args);
                    cmd.wrapper_options
                        .extend(taken.iter().filter(|w| as_assignment(w).is_none()).cloned());
                    at += 1 + skip;
                    if at >= words.len() {
                        let program = default.unwrap_or_default();
                        cmd.invoked_as.clone_from(&program);
                        cmd.program = program;
                        self.push(cmd, ctx);
                        return;
                    }
                }
                Step::Script {
                    wrapper,
                    text,
                    escalated,
                } => {
                    let mut inner = ctx.with_origin(Origin::ShellString);
                    inner.wrappers = cmd.wrappers.clone();
                    inner.escalated = cmd.escalated || escalated;
                    // The wrapper's environment reaches the script's commands.
                    let launched = env_commands(self.wrappers.launchers(), &cmd);
                    self.judge_launched(launched, &inner);
                    inner.wrappers.push(wrapper);
                    self.script_with_io(&text, &inner, cmd);
                    return;
                }
                Step::Find(execs) => {
                    let mut exec_ctx = ctx.deeper();
                    exec_ctx.wrappers = cmd.wrappers.clone();
                    exec_ctx.wrappers.push(cmd.program.clone());
                    exec_ctx.escalated = cmd.escalated;
                    let base = SimpleCommand {
                        wrappers: exec_ctx.wrappers.clone(),
                        escalated: cmd.escalated,
                        origin: cmd.origin,
                        ..SimpleCommand::default()
                    };
                    self.finish(cmd, args, ctx);
                    for range in execs {
                        self.dispatch(base.clone(), &args[range], &exec_ctx);
                    }
                    return;
                }
            }
        }
    }

    /// Sets program and invoked_as from the command word, holding when the
    /// word is not known statically.
    fn command_word(&mut self, cmd: &mut SimpleCommand, head: &Word) {
        if head.dynamic {
            self.hold(format!("dynamic command word `{}`", excerpt(&head.text)));
        } else if head.glob {
            self.hold(format!("glob in command word `{}`", excerpt(&head.text)));
        }
        cmd.invoked_as = head.text.clone();
        cmd.program = basename(&head.text).to_owned();
    }

    fn finish(&mut self, mut cmd: SimpleCommand, args: &[Word], ctx: &Ctx) {
        cmd.args = args.to_vec();
        if let Some(git) = self
            .wrappers
            .get(&cmd.program)
            .filter(|w| w.unwrap == Unwrap::Git)
        {
            strip_git_globals(&mut cmd, &git.value_options);
        }
        self.push(cmd, ctx);
    }

    /// Parses a wrapper's shell text; the wrapper's redirections and stdin
    /// apply to the commands of the text.
    fn script_with_io(&mut self, text: &str, ctx: &Ctx, wrapper: SimpleCommand) {
        let start = self.script.commands.len();
        self.script(text, ctx);
        let end = self.script.commands.len();
        let mut found = false;
        for i in start..end {
            let c = &mut self.script.commands[i];
            if matches!(
                c.origin,
                Origin::CommandSubstitution | Origin::ProcessSubstitution
            ) {
                continue;
            }
            found = true;
            c.redirects.extend(wrapper.redirects.iter().cloned());
            c.assignments.extend(wrapper.assignments.iter().cloned());
            if c.stdin == Feed::Inherited {
                c.stdin = wrapper.stdin.clone();
            }
        }
        if !found && !wrapper.redirects.is_empty() {
            // `sh -c '' > f` still truncates f.
            let synthetic = SimpleCommand {
                redirects: wrapper.redirects,
                assignments: wrapper.assignments,
                wrappers: ctx.wrappers.clone(),
                escalated: ctx.escalated,
                origin: ctx.origin,
                ..SimpleCommand::default()
            };
            self.script.commands.push(synthetic);
        }
    }
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn step(wrapper: Option<&Wrapper>, program: &str, args: &[Word]) -> Step {
    let Some(w) = wrapper else {
        return Step::Final { escalated: false };
    };
    let escalated = w.escalates;
    match w.unwrap {
        Unwrap::Command => command_step(w, args),
        Unwrap::Env => env_step(w, program, args),
        Unwrap::SwitchUser => switch_user_step(w, program, args),
        Unwrap::Shell => shell_step(w, program, args),
        Unwrap::Watch => watch_step(w, program, args),
        Unwrap::Parallel => parallel_step(w, program, args),
        Unwrap::Find => {
            let execs = find_execs(w, args);
            if execs.is_empty() {
                Step::Final { escalated }
            } else {
                Step::Find(execs)
            }
        }
        Unwrap::Eval => {
            if args.iter().any(|a| a.dynamic) {
                Step::Hold(format!("{program} of non-literal text"))
            } else if args.is_empty() {
                Step::Final { escalated }
            } else {
                Step::Script {
                    wrapper: program.to_owned(),
                    text: join(args),
                    escalated,
                }
            }
        }
        Unwrap::Source => match args.first() {
            Some(path) if path.dynamic => Step::Hold(format!(
                "{program} of a dynamic path `{}`",
                excerpt(&path.text)
            )),
            _ => Step::Final { escalated },
        },
        Unwrap::Alias if args.iter().any(|a| a.text.contains('=')) => {
            Step::Hold(format!("{program} definition"))
        }
        Unwrap::Alias | Unwrap::Git => Step::Final { escalated },
    }
}

/// Index of the first operand: past flags, options with values, and a `--`.
fn options_end(args: &[Word], spec: &Options) -> usize {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if a.dynamic || !t.starts_with('-') || t == "-" {
            return i;
        }
        if let Some(long) = t.strip_prefix("--") {
            let takes_value = !long.contains('=') && spec.has_long(long);
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        // A short cluster: the first letter taking a value ends it; the value is
        // the rest of the cluster or, when that is empty, the next word.
        let cluster = &t[1..];
        let mut step_by = 1;
        for (pos, c) in cluster.char_indices() {
            if spec.short.contains(c) {
                if pos + c.len_utf8() == cluster.len() {
                    step_by = 2;
                }
                break;
            }
        }
        i += step_by;
    }
    args.len()
}

fn has_short_flag(opts: &[Word], flag: char) -> bool {
    opts.iter()
        .any(|o| o.text.starts_with('-') && !o.text.starts_with("--") && o.text[1..].contains(flag))
}

/// Whether one of `flags` is among the options `opts` (short ones also in a cluster).
fn has_flag(opts: &[Word], flags: &Options) -> bool {
    flags.short.chars().any(|f| has_short_flag(opts, f))
        || opts
            .iter()
            .filter_map(|o| o.text.strip_prefix("--"))
            .any(|long| flags.has_long(long))
}

/// The value written right after a short option of `opts` (`-Svalue`).
fn short_attached<'t>(word: &'t str, opts: &Options) -> Option<&'t str> {
    let rest = word.strip_prefix('-')?;
    let letter = rest.chars().next().filter(|&c| c != '-')?;
    opts.short
        .contains(letter)
        .then(|| &rest[letter.len_utf8()..])
        .filter(|value| !value.is_empty())
}

/// The wrapper entry of a wrapper whose script came from its first script option.
fn script_label(program: &str, w: &Wrapper) -> String {
    match w.script_options.words.first() {
        Some(option) => format!("{program} {option}"),
        None => program.to_owned(),
    }
}

/// Options, skipped operands, `NAME=value` assignments (when the entry reads
/// them), then the command.
fn command_step(w: &Wrapper, args: &[Word]) -> Step {
    let options = options_end(args, &w.value_options);
    let escalated = w.escalates;
    if has_flag(&args[..options], &w.no_command_flags) {
        return Step::Final { escalated };
    }
    let mut end = options + w.skip;
    let mut assignments = Vec::new();
    while let Some(a) = args
        .get(end)
        .and_then(as_assignment)
        .filter(|_| w.assignments)
    {
        assignments.push(a);
        end += 1;
    }
    if end >= args.len() && w.default_command.is_none() {
        return Step::Final { escalated };
    }
    Step::Inner {
        skip: end,
        escalated,
        assignments,
        default: w.default_command.clone(),
    }
}

fn env_step(w: &Wrapper, program: &str, args: &[Word]) -> Step {
    let mut i = 0;
    let mut split: Option<String> = None;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if a.dynamic || !t.starts_with('-') {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if w.script_options.has_word(t) {
            split = args.get(i + 1).map(|w| w.text.clone());
            i += 2;
            break;
        }
        if let Some(s) =
            long_attached(t, &w.script_options).or_else(|| short_attached(t, &w.script_options))
        {
            split = Some(s.to_owned());
            i += 1;
            break;
        }
        i += if w.value_options.has_word(t) { 2 } else { 1 };
    }
    if let Some(text) = split {
        // `env -S 'cmd args'` splits the string into the command and its arguments.
        let rest = args.get(i..).unwrap_or_default();
        let text = if rest.is_empty() {
            text
        } else {
            format!("{text} {}", join(rest))
        };
        return Step::Script {
            wrapper: script_label(program, w),
            text,
            escalated: w.escalates,
        };
    }
    let mut assignments = Vec::new();
    while let Some(a) = args.get(i).and_then(as_assignment) {
        assignments.push(a);
        i += 1;
    }
    if i >= args.len() {
        return Step::Final {
            escalated: w.escalates,
        };
    }
    Step::Inner {
        skip: i,
        escalated: w.escalates,
        assignments,
        default: None,
    }
}

fn switch_user_step(w: &Wrapper, program: &str, args: &[Word]) -> Step {
    let label = script_label(program, w);
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        let script = if w.script_options.has_word(t) {
            Some(args.get(i + 1))
        } else {
            long_attached(t, &w.script_options).map(|_| Some(a))
        };
        if let Some(script) = script {
            return match script {
                Some(s) if s.dynamic => Step::Hold(format!("{label} with a dynamic command")),
                Some(s) => Step::Script {
                    wrapper: label,
                    text: long_attached(&s.text, &w.script_options)
                        .unwrap_or(&s.text)
                        .to_owned(),
                    escalated: w.escalates,
                },
                None => Step::Final {
                    escalated: w.escalates,
                },
            };
        }
        i += if w.value_options.has_word(t) { 2 } else { 1 };
    }
    Step::Final {
        escalated: w.escalates,
    }
}

fn shell_step(w: &Wrapper, program: &str, args: &[Word]) -> Step {
    match shell_invocation(w, args) {
        ShellRun::Command(i) => {
            let s = &args[i];
            let label = script_label(program, w);
            if s.dynamic {
                return Step::Hold(format!(
                    "{label} with a dynamic script `{}`",
                    excerpt(&s.text)
                ));
            }
            Step::Script {
                wrapper: label,
                text: long_attached(&s.text, &w.script_options)
                    .unwrap_or(&s.text)
                    .to_owned(),
                escalated: w.escalates,
            }
        }
        ShellRun::File | ShellRun::Stdin | ShellRun::Missing => Step::Final {
            escalated: w.escalates,
        },
    }
}

fn watch_step(w: &Wrapper, program: &str, args: &[Word]) -> Step {
    let end = options_end(args, &w.value_options);
    let rest = args.get(end..).unwrap_or_default();
    let escalated = w.escalates;
    if rest.is_empty() {
        return Step::Final { escalated };
    }
    if has_flag(&args[..end], &w.command_flags) {
        return Step::Inner {
            skip: end,
            escalated,
            assignments: Vec::new(),
            default: None,
        };
    }
    if rest.iter().any(|a| a.dynamic) {
        return Step::Hold(format!("{program} of a dynamic command"));
    }
    Step::Script {
        wrapper: program.to_owned(),
        text: join(rest),
        escalated,
    }
}

fn parallel_step(w: &Wrapper, program: &str, args: &[Word]) -> Step {
    let end = options_end(args, &w.value_options);
    let rest = args.get(end..).unwrap_or_default();
    let cmd_len = w
        .end_prefix
        .as_deref()
        .and_then(|prefix| rest.iter().position(|a| a.text.starts_with(prefix)))
        .unwrap_or(rest.len());
    let command = &rest[..cmd_len];
    if command.is_empty() {
        return Step::Final {
            escalated: w.escalates,
        };
    }
    if command.iter().any(|a| a.dynamic) {
        return Step::Hold(format!("{program} of a dynamic command"));
    }
    // parallel composes a command line and runs it through a shell.
    Step::Script {
        wrapper: program.to_owned(),
        text: join(command),
        escalated: w.escalates,
    }
}

/// Argument ranges of each `-exec`/`-execdir`/`-ok`/`-okdir` command.
fn find_execs(w: &Wrapper, args: &[Word]) -> Vec<Range<usize>> {
    let is_in = |list: &[String], word: &Word| list.contains(&word.text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if is_in(&w.exec_options, &args[i]) {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && !is_in(&w.exec_ends, &args[end]) {
                end += 1;
            }
            if end > start {
                out.push(start..end);
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// Joins literal words with spaces, as `eval` and `sh -c` composition do.
fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Removes git's global options so `args[0]` is the subcommand; options with
/// values become wrapper entries (`git -c k=v`, `git -C dir`, `git --git-dir=d`).
fn strip_git_globals(cmd: &mut SimpleCommand, with_value: &Options) {
    let mut i = 0;
    let args = &cmd.args;
    let program = &cmd.program;
    let mut recorded = Vec::new();
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if a.dynamic || !t.starts_with('-') {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if with_value.has_word(t) {
            let value = args.get(i + 1).map(|w| w.text.as_str()).unwrap_or_default();
            recorded.push(format!("{program} {t} {value}"));
            i += 2;
        } else if let Some((name, _)) = t.split_once('=') {
            if with_value.has_word(name) {
                recorded.push(format!("{program} {t}"));
            }
            i += 1;
        } else if let Some(value) = short_attached(t, with_value) {
            let option = &t[..t.len() - value.len()];
            recorded.push(format!("{program} {option} {value}"));
            i += 1;
        } else {
            i += 1;
        }
    }
    cmd.args.drain(..i);
    cmd.wrappers.extend(recorded);
}

#[cfg(test)]
mod tests {
    use super::super::walk::literal;
    use super::super::wrapper_table::Wrappers;
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace()
            .map(|t| literal(t.to_owned()))
            .collect()
    }

    fn entry(program: &str) -> &'static Wrapper {
        Wrappers::builtin().get(program).unwrap()
    }

    #[test]
    fn options_end_handles_values_and_clusters() {
        let spec = Options::compile(&["-u".to_owned(), "--user".to_owned()]).unwrap();
        assert_eq!(options_end(&words("-u root rm"), &spec), 2);
        assert_eq!(options_end(&words("-uroot rm"), &spec), 1);
        assert_eq!(options_end(&words("-nu root rm"), &spec), 2);
        assert_eq!(options_end(&words("--user root rm"), &spec), 2);
        assert_eq!(options_end(&words("--user=root rm"), &spec), 1);
        assert_eq!(options_end(&words("-- -rm"), &spec), 1);
        assert_eq!(options_end(&words("-E -H"), &spec), 2);
    }

    #[test]
    fn shell_invocations() {
        let sh = |args: &str| shell_invocation(entry("bash"), &words(args));
        assert!(matches!(sh("-c x"), ShellRun::Command(1)));
        assert!(matches!(sh("-lc x"), ShellRun::Command(1)));
        assert!(matches!(sh("-l -c x"), ShellRun::Command(2)));
        assert!(matches!(sh("--norc -ec x"), ShellRun::Command(2)));
        assert!(matches!(sh("-o pipefail -c x"), ShellRun::Command(3)));
        assert!(matches!(sh("--command x"), ShellRun::Command(1)));
        assert!(matches!(sh("--command=x"), ShellRun::Command(0)));
        assert!(matches!(sh(""), ShellRun::Stdin));
        assert!(matches!(sh("-s arg"), ShellRun::Stdin));
        assert!(matches!(sh("-x script.sh"), ShellRun::File));
        assert!(matches!(sh("--rcfile f script.sh"), ShellRun::File));
        assert!(matches!(sh("-c"), ShellRun::Missing));
    }

    #[test]
    fn find_exec_ranges() {
        assert_eq!(
            find_execs(
                entry("find"),
                &words(". -exec rm {} ; -print -execdir sh -c x {} +")
            ),
            vec![2..4, 7..11]
        );
        assert!(find_execs(entry("find"), &words(". -name x -delete")).is_empty());
    }

    #[test]
    fn git_globals() {
        let mut cmd = SimpleCommand {
            program: "git".into(),
            args: words("-C /r -c core.hooksPath=/x --no-pager --git-dir=/g -P push origin"),
            ..SimpleCommand::default()
        };
        strip_git_globals(&mut cmd, &entry("git").value_options);
        assert_eq!(cmd.args, words("push origin"));
        assert_eq!(
            cmd.wrappers,
            vec!["git -C /r", "git -c core.hooksPath=/x", "git --git-dir=/g"]
        );
    }
}
