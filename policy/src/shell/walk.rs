//! Walks brush-parser's syntax tree and collects every simple command, with
//! redirections, stdin feeds and substitutions parsed recursively.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ast::{
    self, AndOrList, Assignment, AssignmentName, AssignmentValue, Command,
    CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, ExtendedTestExpr, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, ProcessSubstitutionKind, RedirectList,
    SubshellCommand,
};
use brush_parser::{Parser, ParserOptions};

use super::launchers::{Effect, Launchers};
use super::scan::{ScanError, scan};
use super::scope::{Known, ScopeEffect, as_assignment, effect};
use super::words::{canonicalize, excerpt, substitutions_in};
use super::wrapper_table::Wrappers;
use super::{
    Feed, MAX_NESTING, MAX_PARSED_BYTES, MAX_TOKENS, Origin, Redirect, RedirectKind, Script,
    SimpleCommand, Word,
};

/// Where the walker is: how deep, and what every command found here inherits.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    /// Nesting so far: compound commands, substitutions and nested scripts.
    pub depth: usize,
    pub origin: Origin,
    pub wrappers: Vec<String>,
    pub escalated: bool,
}

impl Ctx {
    /// One level deeper, same origin and wrappers.
    pub fn deeper(&self) -> Self {
        Self {
            depth: self.depth + 1,
            ..self.clone()
        }
    }

    /// One level deeper with another origin.
    pub fn with_origin(&self, origin: Origin) -> Self {
        Self {
            depth: self.depth + 1,
            origin,
            ..self.clone()
        }
    }
}

/// Accumulates the result for one request.
pub struct Frontend<'w> {
    pub script: Script,
    /// Which programs are wrappers, and how to find what they run.
    pub wrappers: &'w Wrappers,
    tokens_left: usize,
    bytes_left: usize,
    options: ParserOptions,
    /// Literal values of the variables of the script being walked.
    known: Known,
    /// Above zero while walking code that may not run, or not in this shell
    /// (a branch, a loop, after `&&`/`||`, a pipeline stage, `&`): its
    /// assignments make their variable unknown instead of known.
    uncertain: usize,
}

impl<'w> Frontend<'w> {
    pub fn new(wrappers: &'w Wrappers) -> Self {
        Self {
            script: Script::default(),
            wrappers,
            tokens_left: MAX_TOKENS,
            bytes_left: MAX_PARSED_BYTES,
            options: ParserOptions::default(),
            known: Known::default(),
            uncertain: 0,
        }
    }

    pub fn hold(&mut self, reason: String) {
        if !self.script.holds.contains(&reason) {
            self.script.holds.push(reason);
        }
    }

    /// Parses `src` as a shell script and collects its commands. A
    /// substitution sees the variables of its shell; any other script runs
    /// in a new shell and starts knowing none. Neither changes the caller's.
    pub fn script(&mut self, src: &str, ctx: &Ctx) {
        let outer = if is_subshell(ctx.origin) {
            self.known.clone()
        } else {
            std::mem::take(&mut self.known)
        };
        let uncertain = std::mem::take(&mut self.uncertain);
        self.script_in_scope(src, ctx);
        self.known = outer;
        self.uncertain = uncertain;
    }

    fn script_in_scope(&mut self, src: &str, ctx: &Ctx) {
        if ctx.depth >= MAX_NESTING {
            self.hold(format!(
                "shell text nested deeper than {MAX_NESTING} levels"
            ));
            return;
        }
        if src.len() > self.bytes_left {
            self.hold(format!("shell text too large to analyse: more than {MAX_PARSED_BYTES} bytes, nested scripts included"));
            return;
        }
        self.bytes_left -= src.len();
        match scan(src, MAX_NESTING - ctx.depth, self.tokens_left) {
            Ok(stats) => self.tokens_left -= stats.tokens,
            Err(ScanError::TooManyTokens { .. }) => {
                self.hold(format!(
                    "shell text too large to analyse: more than {MAX_TOKENS} tokens and expansions, nested scripts included"
                ));
                return;
            }
            Err(e) => {
                self.hold(e.to_string());
                return;
            }
        }
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            Parser::new(Cursor::new(src.as_bytes()), &self.options).parse_program()
        }));
        match parsed {
            Ok(Ok(program)) => {
                for list in &program.complete_commands {
                    self.list(list, ctx);
                }
            }
            Ok(Err(e)) => {
                let msg = e.to_string().replace('\n', " ");
                self.hold(format!("shell parse error: {msg} in `{}`", excerpt(src)));
            }
            Err(_) => self.hold(format!("shell parser failed on `{}`", excerpt(src))),
        }
    }

    fn list(&mut self, list: &CompoundList, ctx: &Ctx) {
        for item in &list.0 {
            let background = matches!(item.1, ast::SeparatorOperator::Async);
            self.uncertain_if(background, |fe| fe.and_or(&item.0, ctx));
        }
    }

    fn and_or(&mut self, list: &AndOrList, ctx: &Ctx) {
        self.pipeline(&list.first, ctx);
        self.uncertain_if(true, |fe| {
            for next in &list.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                fe.pipeline(p, ctx);
            }
        });
    }

    /// Walks `body` as code whose assignments may not reach what follows.
    fn uncertain_if(&mut self, uncertain: bool, body: impl FnOnce(&mut Self)) {
        self.uncertain += usize::from(uncertain);
        body(self);
        self.uncertain -= usize::from(uncertain);
    }

    /// Walks `body` in a subshell: it sees the variables, its assignments
    /// do not come back.
    fn subshell(&mut self, body: impl FnOnce(&mut Self)) {
        let outer = self.known.clone();
        body(self);
        self.known = outer;
    }

    fn pipeline(&mut self, p: &Pipeline, ctx: &Ctx) {
        let mut previous: Option<Vec<usize>> = None;
        for cmd in &p.seq {
            let start = self.script.commands.len();
            self.uncertain_if(p.seq.len() > 1, |fe| fe.command(cmd, ctx));
            let end = self.script.commands.len();
            let stage: Vec<usize> = (start..end)
                .filter(|&i| !is_substitution(&self.script.commands[i]))
                .collect();
            if let Some(from) = previous {
                for &i in &stage {
                    if self.script.commands[i].stdin == Feed::Inherited {
                        self.script.commands[i].stdin = Feed::Pipe { from: from.clone() };
                    }
                }
            }
            previous = Some(stage);
        }
    }

    fn command(&mut self, cmd: &Command, ctx: &Ctx) {
        match cmd {
            Command::Simple(sc) => self.simple(sc, ctx),
            Command::Compound(cc, redirects) => {
                let inner = ctx.deeper();
                self.with_redirects(redirects.as_ref(), &inner, |fe| fe.compound(cc, &inner));
            }
            Command::Function(def) => {
                let name = &def.fname.value;
                if !self.script.functions.contains(name) {
                    self.script.functions.push(name.clone());
                }
                let inner = ctx.with_origin(Origin::FunctionBody);
                let ast::FunctionBody(body, redirects) = &def.body;
                // The body runs when called, with whatever values then.
                let outer = std::mem::take(&mut self.known);
                self.uncertain_if(true, |fe| {
                    fe.with_redirects(redirects.as_ref(), &inner, |fe| fe.compound(body, &inner));
                });
                self.known = outer;
            }
            Command::ExtendedTest(test, redirects) => {
                self.with_redirects(redirects.as_ref(), ctx, |fe| {
                    fe.extended_test(&test.expr, ctx)
                });
                // Its arithmetic operands may assign.
                self.known.clear();
            }
        }
    }

    /// Runs `body`, then applies `redirects` to every command it produced
    /// (or to a synthetic redirection-only command when it produced none).
    fn with_redirects(
        &mut self,
        redirects: Option<&RedirectList>,
        ctx: &Ctx,
        body: impl FnOnce(&mut Self),
    ) {
        let mut converted = Vec::new();
        let mut feed = None;
        for r in redirects.map(|l| l.0.as_slice()).unwrap_or_default() {
            self.redirect(r, ctx, &mut converted, &mut feed);
        }
        let start = self.script.commands.len();
        body(self);
        let end = self.script.commands.len();
        if converted.is_empty() && feed.is_none() {
            return;
        }
        let targets: Vec<usize> = (start..end)
            .filter(|&i| !is_substitution(&self.script.commands[i]))
            .collect();
        if targets.is_empty() {
            let cmd = SimpleCommand {
                redirects: converted,
                stdin: feed.unwrap_or_default(),
                wrappers: ctx.wrappers.clone(),
                escalated: ctx.escalated,
                origin: ctx.origin,
                ..SimpleCommand::default()
            };
            self.script.commands.push(cmd);
            return;
        }
        for i in targets {
            self.script.commands[i]
                .redirects
                .extend(converted.iter().cloned());
            if let Some(f) = &feed
                && self.script.commands[i].stdin == Feed::Inherited
            {
                self.script.commands[i].stdin = f.clone();
                self.fed_script(i, ctx);
            }
        }
    }

    fn compound(&mut self, cc: &CompoundCommand, ctx: &Ctx) {
        match cc {
            CompoundCommand::Arithmetic(a) => {
                self.substitutions(&a.expr.value, ctx);
                self.known.clear();
            }
            CompoundCommand::ArithmeticForClause(f) => {
                self.known.clear();
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.substitutions(&e.value, ctx);
                }
                self.uncertain_if(true, |fe| fe.list(&f.body.list, ctx));
                self.known.clear();
            }
            CompoundCommand::BraceGroup(b) => self.list(&b.list, ctx),
            CompoundCommand::Subshell(s) => self.subshell(|fe| fe.list(&s.list, ctx)),
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w, ctx);
                }
                // A later pass sees what an earlier one assigned.
                self.known.clear();
                self.uncertain_if(true, |fe| fe.list(&f.body.list, ctx));
                self.known.clear();
            }
            CompoundCommand::CaseClause(c) => {
                self.word(&c.value, ctx);
                self.uncertain_if(true, |fe| {
                    for item in &c.cases {
                        for w in &item.patterns {
                            fe.word(w, ctx);
                        }
                        if let Some(list) = &item.cmd {
                            fe.list(list, ctx);
                        }
                    }
                });
            }
            CompoundCommand::IfClause(c) => {
                self.list(&c.condition, ctx);
                self.uncertain_if(true, |fe| {
                    fe.list(&c.then, ctx);
                    for e in c.elses.iter().flatten() {
                        if let Some(cond) = &e.condition {
                            fe.list(cond, ctx);
                        }
                        fe.list(&e.body, ctx);
                    }
                });
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.known.clear();
                self.uncertain_if(true, |fe| {
                    fe.list(&w.0, ctx);
                    fe.list(&w.1.list, ctx);
                });
                self.known.clear();
            }
            CompoundCommand::Coprocess(c) => self.subshell(|fe| fe.command(&c.body, ctx)),
        }
    }

    fn extended_test(&mut self, expr: &ExtendedTestExpr, ctx: &Ctx) {
        match expr {
            ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
                self.extended_test(a, ctx);
                self.extended_test(b, ctx);
            }
            ExtendedTestExpr::Not(a) | ExtendedTestExpr::Parenthesized(a) => {
                self.extended_test(a, ctx)
            }
            ExtendedTestExpr::UnaryTest(_, w) => self.test_word(w, ctx),
            ExtendedTestExpr::BinaryTest(_, a, b) => {
                self.test_word(a, ctx);
                self.test_word(b, ctx);
            }
        }
    }

    /// A word of `[[ … ]]`: `-v` and the arithmetic operators evaluate a
    /// quoted subscript, running the command substitutions in it.
    fn test_word(&mut self, w: &ast::Word, ctx: &Ctx) {
        let word = self.word(w, ctx);
        if quoted_subscript_code(&word) {
            self.substitutions(&word.text, &ctx.with_origin(Origin::ShellString));
        }
    }

    fn simple(&mut self, sc: &ast::SimpleCommand, ctx: &Ctx) {
        let mut cmd = SimpleCommand {
            wrappers: ctx.wrappers.clone(),
            escalated: ctx.escalated,
            origin: ctx.origin,
            ..SimpleCommand::default()
        };
        let mut feed = None;
        let mut words = Vec::new();
        let prefix = sc
            .prefix
            .as_ref()
            .map(|p| p.0.as_slice())
            .unwrap_or_default();
        let suffix = sc
            .suffix
            .as_ref()
            .map(|s| s.0.as_slice())
            .unwrap_or_default();
        // With no command word the assignments stay in the shell, in order.
        let assigns_to_shell = sc.word_or_name.is_none();
        for item in prefix {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(a, _) => {
                    let assignment = self.assignment(a, ctx);
                    let (name, value) = &assignment;
                    if assigns_to_shell && self.uncertain == 0 && !a.append {
                        self.known.set(name, value);
                    } else {
                        self.known.forget(name);
                    }
                    cmd.assignments.push(assignment);
                }
                other => self.item(other, ctx, &mut words, &mut cmd.redirects, &mut feed),
            }
        }
        if let Some(w) = &sc.word_or_name {
            words.push(self.word(w, ctx));
        }
        for item in suffix {
            self.item(item, ctx, &mut words, &mut cmd.redirects, &mut feed);
        }
        cmd.stdin = feed.unwrap_or_default();
        self.scope_after(&words);
        self.dispatch(cmd, &words, ctx);
    }

    /// What running the command `words` does to the known values.
    fn scope_after(&mut self, words: &[Word]) {
        match effect(
            words,
            &self.wrappers.launchers().scope,
            &self.script.functions,
        ) {
            ScopeEffect::None => {}
            ScopeEffect::Clear => self.known.clear(),
            ScopeEffect::Freeze => self.known.freeze(),
            ScopeEffect::Declares(operands) => {
                for (name, value) in operands.iter().filter_map(as_assignment) {
                    if self.uncertain == 0 {
                        self.known.set(&name, &value);
                    } else {
                        self.known.forget(&name);
                    }
                }
            }
        }
    }

    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        ctx: &Ctx,
        words: &mut Vec<Word>,
        redirects: &mut Vec<Redirect>,
        feed: &mut Option<Feed>,
    ) {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, ctx, redirects, feed),
            // After the command word an assignment is just an argument (`export A=b`).
            CommandPrefixOrSuffixItem::Word(w)
            | CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                words.push(self.word(w, ctx));
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
                words.push(self.process_substitution(kind, sub, ctx));
            }
        }
    }

    fn assignment(&mut self, a: &Assignment, ctx: &Ctx) -> (String, Word) {
        let name = match &a.name {
            AssignmentName::VariableName(n) => n.clone(),
            AssignmentName::ArrayElementName(n, i) => format!("{n}[{i}]"),
        };
        let value = match &a.value {
            AssignmentValue::Scalar(w) => self.word(w, ctx),
            AssignmentValue::Array(items) => {
                let mut parts = Vec::new();
                let mut dynamic = false;
                for (key, value) in items {
                    if let Some(k) = key {
                        dynamic |= self.word(k, ctx).dynamic;
                    }
                    let v = self.word(value, ctx);
                    dynamic |= v.dynamic;
                    parts.push(v.text);
                }
                Word {
                    text: format!("({})", parts.join(" ")),
                    dynamic,
                    glob: false,
                }
            }
        };
        (name, value)
    }

    fn redirect(
        &mut self,
        r: &IoRedirect,
        ctx: &Ctx,
        out: &mut Vec<Redirect>,
        feed: &mut Option<Feed>,
    ) {
        let on_stdin = |fd: &Option<i32>| matches!(fd, None | Some(0));
        match r {
            IoRedirect::File(fd, kind, target) => {
                let (target, is_fd) = match target {
                    IoFileRedirectTarget::Filename(w) => (self.word(w, ctx), false),
                    IoFileRedirectTarget::Fd(n) => (literal(n.to_string()), true),
                    IoFileRedirectTarget::ProcessSubstitution(k, sub) => {
                        (self.process_substitution(k, sub, ctx), false)
                    }
                    IoFileRedirectTarget::Duplicate(w) => {
                        let w = self.word(w, ctx);
                        let fd_like = !w.dynamic && is_fd_text(&w.text);
                        (w, fd_like)
                    }
                };
                let kind = match kind {
                    IoFileRedirectKind::Read => RedirectKind::Read,
                    IoFileRedirectKind::Write | IoFileRedirectKind::Clobber => RedirectKind::Write,
                    IoFileRedirectKind::Append => RedirectKind::Append,
                    IoFileRedirectKind::ReadAndWrite => RedirectKind::ReadWrite,
                    // `>&file` (no digits) writes stdout and stderr to a file.
                    IoFileRedirectKind::DuplicateOutput if !is_fd => RedirectKind::Write,
                    IoFileRedirectKind::DuplicateInput if !is_fd => RedirectKind::Read,
                    IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput => {
                        RedirectKind::Duplicate
                    }
                };
                let fd = fd.and_then(|n| u32::try_from(n).ok());
                out.push(Redirect { fd, kind, target });
            }
            IoRedirect::HereDocument(fd, doc) => {
                if doc.requires_expansion {
                    self.substitutions(&doc.doc.value, ctx);
                }
                if on_stdin(fd) {
                    *feed = Some(Feed::HereDoc {
                        body: doc.doc.value.clone(),
                    });
                }
            }
            IoRedirect::HereString(fd, w) => {
                let body = self.word(w, ctx);
                if on_stdin(fd) {
                    *feed = Some(Feed::HereString { body });
                }
            }
            IoRedirect::OutputAndError(w, append) => {
                let kind = if *append {
                    RedirectKind::Append
                } else {
                    RedirectKind::Write
                };
                let target = self.word(w, ctx);
                out.push(Redirect {
                    fd: None,
                    kind,
                    target,
                });
            }
        }
    }

    /// Canonicalizes a word and collects the commands of its substitutions.
    pub fn word(&mut self, w: &ast::Word, ctx: &Ctx) -> Word {
        match canonicalize(&w.value, &self.options, &self.known) {
            Ok(canon) => {
                if canon.assigns {
                    self.known.clear();
                }
                let sub_ctx = ctx.with_origin(Origin::CommandSubstitution);
                for text in &canon.substitutions {
                    self.script(text, &sub_ctx);
                }
                canon.word
            }
            Err(e) => {
                self.hold(e.to_string());
                Word {
                    text: w.value.clone(),
                    dynamic: true,
                    glob: false,
                }
            }
        }
    }

    /// Collects the commands of the substitutions in here-doc or arithmetic text.
    fn substitutions(&mut self, text: &str, ctx: &Ctx) {
        match substitutions_in(text, &self.options) {
            Ok(found) => {
                let sub_ctx = ctx.with_origin(Origin::CommandSubstitution);
                for t in &found {
                    self.script(t, &sub_ctx);
                }
            }
            Err(e) => self.hold(e.to_string()),
        }
    }

    /// Collects the commands of `<(…)` / `>(…)`; the word standing for it is
    /// dynamic and its text starts with `<(` or `>(`.
    fn process_substitution(
        &mut self,
        kind: &ProcessSubstitutionKind,
        sub: &SubshellCommand,
        ctx: &Ctx,
    ) -> Word {
        let inner = ctx.with_origin(Origin::ProcessSubstitution);
        self.subshell(|fe| fe.list(&sub.list, &inner));
        Word {
            text: format!("{kind}{sub}"),
            dynamic: true,
            glob: false,
        }
    }

    /// Adds a finished command; a here-doc or here-string fed to a shell that
    /// reads its script from stdin is parsed as a script too.
    pub fn push(&mut self, cmd: SimpleCommand, ctx: &Ctx) {
        self.script.commands.push(cmd);
        let index = self.script.commands.len() - 1;
        self.fed_script(index, ctx);
        self.launched(index, ctx);
    }

    /// Commands a command runs through its environment (`PAGER=…`) or its
    /// options (`tar --to-command=…`): each value is parsed as a script, or
    /// held when it is only known at run time.
    fn launched(&mut self, index: usize, ctx: &Ctx) {
        let launchers = self.wrappers.launchers();
        let cmd = &self.script.commands[index];
        let mut found = env_commands(launchers, cmd);
        let mut subscripts = Vec::new();
        for entry in launchers.for_program(&cmd.program) {
            if entry.effect == Effect::Arithmetic {
                subscripts.extend(
                    cmd.args
                        .iter()
                        .filter(|w| quoted_subscript_code(w))
                        .cloned(),
                );
            }
            if entry.effect != Effect::Command {
                continue;
            }
            let values = entry.command_values(&cmd.args);
            let label = format!("{} option", cmd.program);
            for value in values {
                match entry.judged_text(&value.text) {
                    Some(_) if value.dynamic => found.push((
                        label.clone(),
                        Err(format!(
                            "{label} with a command only known at run time `{}`",
                            excerpt(&value.text)
                        )),
                    )),
                    Some(text) => found.push((label.clone(), Ok(text))),
                    None => {}
                }
            }
        }
        let base = Ctx {
            depth: ctx.depth + 1,
            origin: Origin::ShellString,
            wrappers: cmd.wrappers.clone(),
            escalated: cmd.escalated,
        };
        self.judge_launched(found, &base);
        for word in subscripts {
            self.substitutions(&word.text, &base);
        }
    }

    fn fed_script(&mut self, index: usize, ctx: &Ctx) {
        let cmd = &self.script.commands[index];
        if !super::invocation::shell_reads_stdin(self.wrappers, cmd) {
            return;
        }
        let body = match &cmd.stdin {
            Feed::HereDoc { body } => Ok(body.clone()),
            Feed::HereString { body } if body.dynamic => Err(format!(
                "here-string with dynamic text fed to {}",
                cmd.program
            )),
            Feed::HereString { body } => Ok(body.text.clone()),
            Feed::Inherited | Feed::Pipe { .. } => return,
        };
        let mut wrappers = cmd.wrappers.clone();
        wrappers.push(cmd.program.clone());
        let fed = Ctx {
            depth: ctx.depth + 1,
            origin: Origin::FedScript,
            wrappers,
            escalated: cmd.escalated,
        };
        let body = match body {
            Ok(b) => b,
            Err(reason) => {
                self.hold(reason);
                return;
            }
        };
        self.script(&body, &fed);
    }

    /// Parses each found command value as a script (its label added to the
    /// wrappers), or holds for why it cannot be.
    pub fn judge_launched(&mut self, found: Vec<(String, Result<String, String>)>, base: &Ctx) {
        for (label, text) in found {
            match text {
                Ok(text) => {
                    let mut inner = base.clone();
                    inner.wrappers.push(label);
                    self.script(&text, &inner);
                }
                Err(why) => self.hold(why),
            }
        }
    }
}

/// The command lines a command's environment makes a program run
/// (`[exec_env] commands`), each labelled `NAME=`, or why one cannot be known.
pub fn env_commands(
    launchers: &Launchers,
    cmd: &SimpleCommand,
) -> Vec<(String, Result<String, String>)> {
    let mut found = Vec::new();
    for (name, value) in super::environment(cmd, launchers) {
        if !launchers.env_runs_command(&name) {
            continue;
        }
        let text = value.text.trim_start_matches('|').trim();
        if value.dynamic {
            let why = format!("`{name}` is set to a command only known at run time");
            found.push((name, Err(why)));
        } else if !text.is_empty() && !launchers.is_plain_value(text) {
            found.push((format!("{name}="), Ok(text.to_owned())));
        }
    }
    found
}

fn is_substitution(cmd: &SimpleCommand) -> bool {
    is_subshell(cmd.origin)
}

/// Code run by a subshell of the shell it is written in.
fn is_subshell(origin: Origin) -> bool {
    matches!(
        origin,
        Origin::CommandSubstitution | Origin::ProcessSubstitution
    )
}

/// A literal word with a subscript that holds a command substitution
/// (`'a[$(id)]'`): evaluated as arithmetic, the substitution runs.
fn quoted_subscript_code(word: &Word) -> bool {
    !word.dynamic
        && word.text.split_once('[').is_some_and(|(name, rest)| {
            !name.is_empty() && (rest.contains("$(") || rest.contains('`'))
        })
}

/// A duplication target: digits, `-` (close), or digits then `-` (move).
fn is_fd_text(t: &str) -> bool {
    let digits = t.strip_suffix('-').unwrap_or(t);
    t == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// A word with no expansion in it.
pub fn literal(text: String) -> Word {
    Word {
        text,
        dynamic: false,
        glob: false,
    }
}
