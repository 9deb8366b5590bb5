//! How a shell invocation gets its script (`-c`, a file operand, or stdin),
//! read from its `[[wrapper]]` options. Below both the walker, which feeds
//! here-docs to a shell reading stdin, and the wrapper unwrapping.

use super::wrapper_table::{Options, Unwrap, Wrapper, Wrappers};
use super::{SimpleCommand, Word};

/// Whether `cmd` is a shell that reads its script from stdin (no `-c`, no
/// script-file operand, or `-s`).
pub(super) fn shell_reads_stdin(wrappers: &Wrappers, cmd: &SimpleCommand) -> bool {
    wrappers
        .get(&cmd.program)
        .filter(|w| w.unwrap == Unwrap::Shell)
        .is_some_and(|w| matches!(shell_invocation(w, &cmd.args), ShellRun::Stdin))
}

/// How a shell invocation gets its script.
pub(super) enum ShellRun {
    /// `-c`: the operand at this index is the script.
    Command(usize),
    /// A script-file operand.
    File,
    /// Reads the script from stdin.
    Stdin,
    /// `-c` with no operand after it.
    Missing,
}

pub(super) fn shell_invocation(w: &Wrapper, args: &[Word]) -> ShellRun {
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
            if w.script_options.has_long(long) {
                return if i + 1 < args.len() {
                    ShellRun::Command(i + 1)
                } else {
                    ShellRun::Missing
                };
            }
            if long_attached(t, &w.script_options).is_some() {
                return ShellRun::Command(i);
            }
            i += if w.value_options.has_long(long) { 2 } else { 1 };
            continue;
        }
        let cluster = &t[1..];
        let in_cluster = |opts: &Options| cluster.contains(|c| opts.short.contains(c));
        has_c |= t.starts_with('-') && in_cluster(&w.script_options);
        has_s |= t.starts_with('-') && in_cluster(&w.stdin_options);
        // Short options with a value (`-o name`) take the next word.
        i += if in_cluster(&w.value_options) { 2 } else { 1 };
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

/// The value of `--name=value` for a long option of `opts`.
pub(super) fn long_attached<'t>(word: &'t str, opts: &Options) -> Option<&'t str> {
    let rest = word.strip_prefix("--")?;
    opts.long.iter().find_map(|name| {
        rest.strip_prefix(name.as_str())
            .and_then(|r| r.strip_prefix('='))
    })
}
