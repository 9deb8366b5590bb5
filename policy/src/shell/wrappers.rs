//! Wrapper unwrapping: `sudo`, `env`, `timeout`, `xargs`, `find -exec`,
//! `sh -c`, literal `eval`, … are peeled off so the command they run is judged
//! as its own [`SimpleCommand`], with the wrapper recorded in `wrappers`.
//!
//! `git` global options are stripped so `args[0]` is the subcommand; each one
//! that carries a value is kept as a wrapper entry such as `git -c core.pager=less`
//! or `git -C /srv/repo`, so configuration tricks stay visible to the classifier.

use std::ops::Range;

use super::walk::{Ctx, Frontend};
use super::words::excerpt;
use super::{Feed, MAX_NESTING, Origin, SimpleCommand, Word};

/// Programs that read a script: with `-c` from an argument, otherwise from a
/// file operand or, when there is none, from stdin.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "mksh", "rbash",
];

/// What to do with a command word after looking at its program.
enum Step {
    /// Judge the command as it is.
    Final { escalated: bool },
    /// A wrapper: the wrapped command word is `skip` words after the first argument.
    Inner {
        skip: usize,
        escalated: bool,
        assignments: Vec<(String, Word)>,
        default: Option<&'static str>,
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

/// Options taking a separate value (`-u root`), by letter and long name.
struct OptSpec {
    short: &'static str,
    long: &'static [&'static str],
}

impl Frontend {
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
            match step(&cmd.program, args) {
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
                    at += 1 + skip;
                    if at >= words.len() {
                        let program = default.unwrap_or_default();
                        cmd.program = program.to_owned();
                        cmd.invoked_as = program.to_owned();
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
                    inner.wrappers.push(wrapper);
                    inner.escalated = cmd.escalated || escalated;
                    self.script_with_io(&text, &inner, cmd);
                    return;
                }
                Step::Find(execs) => {
                    let mut exec_ctx = ctx.deeper();
                    exec_ctx.wrappers = cmd.wrappers.clone();
                    exec_ctx.wrappers.push("find".to_owned());
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
        if cmd.program == "git" {
            strip_git_globals(&mut cmd);
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

/// Whether `cmd` is a shell that reads its script from stdin (no `-c`, no
/// script-file operand, or `-s`).
pub fn shell_reads_stdin(cmd: &SimpleCommand) -> bool {
    SHELLS.contains(&cmd.program.as_str()) && matches!(shell_invocation(&cmd.args), ShellRun::Stdin)
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn step(program: &str, args: &[Word]) -> Step {
    match program {
        "env" => env_step(args),
        "sudo" => inner_after(
            args,
            &OptSpec {
                short: "ugCDhpTrtUR",
                long: &[
                    "--user",
                    "--group",
                    "--close-from",
                    "--chdir",
                    "--host",
                    "--prompt",
                    "--role",
                    "--type",
                    "--other-user",
                    "--command-timeout",
                    "--chroot",
                ],
            },
            true,
        ),
        "doas" => inner_after(
            args,
            &OptSpec {
                short: "uC",
                long: &[],
            },
            true,
        ),
        "pkexec" => inner_after(
            args,
            &OptSpec {
                short: "",
                long: &["--user"],
            },
            true,
        ),
        "su" | "runuser" => su_step(args),
        "command" => {
            let end = options_end(
                args,
                &OptSpec {
                    short: "",
                    long: &[],
                },
            );
            if has_short_flag(&args[..end], 'v') || has_short_flag(&args[..end], 'V') {
                Step::Final { escalated: false }
            } else {
                inner_at(end, args.len(), false)
            }
        }
        "builtin" | "nohup" | "setsid" => inner_at(
            options_end(
                args,
                &OptSpec {
                    short: "",
                    long: &[],
                },
            ),
            args.len(),
            false,
        ),
        "exec" => inner_at(
            options_end(
                args,
                &OptSpec {
                    short: "a",
                    long: &[],
                },
            ),
            args.len(),
            false,
        ),
        "nice" => inner_at(
            options_end(
                args,
                &OptSpec {
                    short: "n",
                    long: &["--adjustment"],
                },
            ),
            args.len(),
            false,
        ),
        "ionice" => {
            let end = options_end(
                args,
                &OptSpec {
                    short: "cnpPu",
                    long: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
                },
            );
            if ['p', 'P', 'u']
                .into_iter()
                .any(|f| has_short_flag(&args[..end], f))
            {
                Step::Final { escalated: false }
            } else {
                inner_at(end, args.len(), false)
            }
        }
        "time" => inner_at(
            options_end(
                args,
                &OptSpec {
                    short: "fo",
                    long: &["--format", "--output"],
                },
            ),
            args.len(),
            false,
        ),
        "stdbuf" => inner_at(
            options_end(
                args,
                &OptSpec {
                    short: "ioe",
                    long: &["--input", "--output", "--error"],
                },
            ),
            args.len(),
            false,
        ),
        "timeout" => {
            let end = options_end(
                args,
                &OptSpec {
                    short: "sk",
                    long: &["--signal", "--kill-after"],
                },
            );
            // The operand after the options is the duration.
            inner_at(end + 1, args.len(), false)
        }
        "xargs" => {
            let spec = OptSpec {
                short: "aEdILnPs",
                long: &[
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-procs",
                    "--max-chars",
                    "--process-slot-var",
                ],
            };
            let end = options_end(args, &spec);
            Step::Inner {
                skip: end,
                escalated: false,
                assignments: Vec::new(),
                default: Some("echo"),
            }
        }
        "watch" => watch_step(args),
        "parallel" => parallel_step(args),
        "find" => {
            let execs = find_execs(args);
            if execs.is_empty() {
                Step::Final { escalated: false }
            } else {
                Step::Find(execs)
            }
        }
        "eval" => {
            if args.iter().any(|a| a.dynamic) {
                Step::Hold("eval of non-literal text".to_owned())
            } else if args.is_empty() {
                Step::Final { escalated: false }
            } else {
                Step::Script {
                    wrapper: "eval".to_owned(),
                    text: join(args),
                    escalated: false,
                }
            }
        }
        "source" | "." => match args.first() {
            Some(path) if path.dynamic => Step::Hold(format!(
                "{program} of a dynamic path `{}`",
                excerpt(&path.text)
            )),
            _ => Step::Final { escalated: false },
        },
        "alias" if args.iter().any(|a| a.text.contains('=')) => {
            Step::Hold("alias definition".to_owned())
        }
        p if SHELLS.contains(&p) => shell_step(p, args),
        _ => Step::Final { escalated: false },
    }
}

/// Index of the first operand: past flags, options with values, and a `--`.
fn options_end(args: &[Word], spec: &OptSpec) -> usize {
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
            let takes_value =
                !long.contains('=') && spec.long.iter().any(|l| l.trim_start_matches('-') == long);
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

/// Wrapper whose command starts at operand index `end` (when there is one).
fn inner_at(end: usize, len: usize, escalated: bool) -> Step {
    if end >= len {
        Step::Final { escalated }
    } else {
        Step::Inner {
            skip: end,
            escalated,
            assignments: Vec::new(),
            default: None,
        }
    }
}

/// `sudo`-like wrappers: options, then `NAME=value` assignments, then the command.
fn inner_after(args: &[Word], spec: &OptSpec, escalated: bool) -> Step {
    let mut end = options_end(args, spec);
    let mut assignments = Vec::new();
    while let Some(a) = args.get(end).and_then(as_assignment) {
        assignments.push(a);
        end += 1;
    }
    match inner_at(end, args.len(), escalated) {
        Step::Inner {
            skip,
            escalated,
            default,
            ..
        } => Step::Inner {
            skip,
            escalated,
            assignments,
            default,
        },
        other => other,
    }
}

/// `NAME=value` as `env` and `sudo` read it.
fn as_assignment(w: &Word) -> Option<(String, Word)> {
    let (name, value) = w.text.split_once('=')?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    valid.then(|| {
        (
            name.to_owned(),
            Word {
                text: value.to_owned(),
                dynamic: w.dynamic,
                glob: false,
            },
        )
    })
}

fn env_step(args: &[Word]) -> Step {
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
        if t == "-S" || t == "--split-string" {
            split = args.get(i + 1).map(|w| w.text.clone());
            i += 2;
            break;
        }
        if let Some(s) = t
            .strip_prefix("--split-string=")
            .or_else(|| t.strip_prefix("-S"))
        {
            split = Some(s.to_owned());
            i += 1;
            break;
        }
        i += match t {
            "-u" | "--unset" | "-C" | "--chdir" => 2,
            _ => 1,
        };
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
            wrapper: "env -S".to_owned(),
            text,
            escalated: false,
        };
    }
    let mut assignments = Vec::new();
    while let Some(a) = args.get(i).and_then(as_assignment) {
        assignments.push(a);
        i += 1;
    }
    if i >= args.len() {
        return Step::Final { escalated: false };
    }
    Step::Inner {
        skip: i,
        escalated: false,
        assignments,
        default: None,
    }
}

fn su_step(args: &[Word]) -> Step {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        let script = match t {
            "-c" | "--command" => Some(args.get(i + 1)),
            _ => t.strip_prefix("--command=").map(|_| Some(a)),
        };
        if let Some(script) = script {
            return match script {
                Some(w) if w.dynamic => Step::Hold("su -c with a dynamic command".to_owned()),
                Some(w) => {
                    let text = w
                        .text
                        .strip_prefix("--command=")
                        .unwrap_or(&w.text)
                        .to_owned();
                    Step::Script {
                        wrapper: "su -c".to_owned(),
                        text,
                        escalated: true,
                    }
                }
                None => Step::Final { escalated: true },
            };
        }
        i += match t {
            "-s"
            | "--shell"
            | "-g"
            | "--group"
            | "-G"
            | "--supp-group"
            | "-w"
            | "--whitelist-environment" => 2,
            _ => 1,
        };
    }
    Step::Final { escalated: true }
}

/// How a shell invocation gets its script.
enum ShellRun {
    /// `-c`: the operand at this index is the script.
    Command(usize),
    /// A script-file operand.
    File,
    /// Reads the script from stdin.
    Stdin,
    /// `-c` with no operand after it.
    Missing,
}

fn shell_invocation(args: &[Word]) -> ShellRun {
    let mut i = 0;
    let mut has_c = false;
    let mut has_s = false;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if a.dynamic || !(t.starts_with('-') || t.starts_with('+')) {
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            if long == "command" {
                return if i + 1 < args.len() {
                    ShellRun::Command(i + 1)
                } else {
                    ShellRun::Missing
                };
            }
            if long.starts_with("command=") {
                return ShellRun::Command(i);
            }
            i += if matches!(long, "rcfile" | "init-file" | "init-command") {
                2
            } else {
                1
            };
            continue;
        }
        let cluster = &t[1..];
        has_c |= t.starts_with('-') && cluster.contains('c');
        has_s |= t.starts_with('-') && cluster.contains('s');
        // `-o name` / `-O name` take the next word.
        i += if cluster.contains(['o', 'O']) { 2 } else { 1 };
    }
    if has_c {
        if i < args.len() {
            ShellRun::Command(i)
        } else {
            ShellRun::Missing
        }
    } else if has_s || i >= args.len() {
        ShellRun::Stdin
    } else {
        ShellRun::File
    }
}

fn shell_step(program: &str, args: &[Word]) -> Step {
    match shell_invocation(args) {
        ShellRun::Command(i) => {
            let w = &args[i];
            if w.dynamic {
                return Step::Hold(format!(
                    "{program} -c with a dynamic script `{}`",
                    excerpt(&w.text)
                ));
            }
            let text = w
                .text
                .strip_prefix("--command=")
                .unwrap_or(&w.text)
                .to_owned();
            Step::Script {
                wrapper: format!("{program} -c"),
                text,
                escalated: false,
            }
        }
        ShellRun::File | ShellRun::Stdin | ShellRun::Missing => Step::Final { escalated: false },
    }
}

fn watch_step(args: &[Word]) -> Step {
    let spec = OptSpec {
        short: "nq",
        long: &["--interval", "--equexit"],
    };
    let end = options_end(args, &spec);
    let rest = args.get(end..).unwrap_or_default();
    if rest.is_empty() {
        return Step::Final { escalated: false };
    }
    let exec = has_short_flag(&args[..end], 'x') || args[..end].iter().any(|a| a.text == "--exec");
    if exec {
        return Step::Inner {
            skip: end,
            escalated: false,
            assignments: Vec::new(),
            default: None,
        };
    }
    if rest.iter().any(|a| a.dynamic) {
        return Step::Hold("watch of a dynamic command".to_owned());
    }
    Step::Script {
        wrapper: "watch".to_owned(),
        text: join(rest),
        escalated: false,
    }
}

fn parallel_step(args: &[Word]) -> Step {
    let spec = OptSpec {
        short: "jSNnLIaEd",
        long: &[
            "--jobs",
            "--sshlogin",
            "--max-args",
            "--max-lines",
            "--arg-file",
            "--delay",
            "--timeout",
            "--joblog",
            "--results",
        ],
    };
    let end = options_end(args, &spec);
    let rest = args.get(end..).unwrap_or_default();
    let cmd_len = rest
        .iter()
        .position(|a| a.text.starts_with(":::"))
        .unwrap_or(rest.len());
    let command = &rest[..cmd_len];
    if command.is_empty() {
        return Step::Final { escalated: false };
    }
    if command.iter().any(|a| a.dynamic) {
        return Step::Hold("parallel of a dynamic command".to_owned());
    }
    // parallel composes a command line and runs it through a shell.
    Step::Script {
        wrapper: "parallel".to_owned(),
        text: join(command),
        escalated: false,
    }
}

/// Argument ranges of each `-exec`/`-execdir`/`-ok`/`-okdir` command.
fn find_execs(args: &[Word]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(
            args[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && !matches!(args[end].text.as_str(), ";" | "+") {
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
fn strip_git_globals(cmd: &mut SimpleCommand) {
    const WITH_VALUE: &[&str] = &[
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--config-env",
        "--exec-path",
        "--super-prefix",
        "--attr-source",
        "--list-cmds",
    ];
    let mut i = 0;
    let args = &cmd.args;
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
        if WITH_VALUE.contains(&t) {
            let value = args.get(i + 1).map(|w| w.text.as_str()).unwrap_or_default();
            recorded.push(format!("git {t} {value}"));
            i += 2;
        } else if let Some((name, _)) = t.split_once('=') {
            if WITH_VALUE.contains(&name) {
                recorded.push(format!("git {t}"));
            }
            i += 1;
        } else if t.starts_with("-c") && t.len() > 2 {
            recorded.push(format!("git -c {}", &t[2..]));
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
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace()
            .map(|t| literal(t.to_owned()))
            .collect()
    }

    #[test]
    fn options_end_handles_values_and_clusters() {
        let spec = OptSpec {
            short: "u",
            long: &["--user"],
        };
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
        assert!(matches!(
            shell_invocation(&words("-c x")),
            ShellRun::Command(1)
        ));
        assert!(matches!(
            shell_invocation(&words("-lc x")),
            ShellRun::Command(1)
        ));
        assert!(matches!(
            shell_invocation(&words("-l -c x")),
            ShellRun::Command(2)
        ));
        assert!(matches!(
            shell_invocation(&words("--norc -ec x")),
            ShellRun::Command(2)
        ));
        assert!(matches!(
            shell_invocation(&words("-o pipefail -c x")),
            ShellRun::Command(3)
        ));
        assert!(matches!(shell_invocation(&words("")), ShellRun::Stdin));
        assert!(matches!(
            shell_invocation(&words("-s arg")),
            ShellRun::Stdin
        ));
        assert!(matches!(
            shell_invocation(&words("-x script.sh")),
            ShellRun::File
        ));
        assert!(matches!(shell_invocation(&words("-c")), ShellRun::Missing));
    }

    #[test]
    fn find_exec_ranges() {
        assert_eq!(
            find_execs(&words(". -exec rm {} ; -print -execdir sh -c x {} +")),
            vec![2..4, 7..11]
        );
        assert!(find_execs(&words(". -name x -delete")).is_empty());
    }

    #[test]
    fn git_globals() {
        let mut cmd = SimpleCommand {
            program: "git".into(),
            args: words("-C /r -c core.hooksPath=/x --no-pager --git-dir=/g -P push origin"),
            ..SimpleCommand::default()
        };
        strip_git_globals(&mut cmd);
        assert_eq!(cmd.args, words("push origin"));
        assert_eq!(
            cmd.wrappers,
            vec!["git -C /r", "git -c core.hooksPath=/x", "git --git-dir=/g"]
        );
    }
}
