//! Tier classifier: what each simple command does, driven by `patterns.toml`.
//!
//! For every [`SimpleCommand`] it finds the program's entry in the table, the
//! subcommand, the flags, which arguments are paths and how they are used,
//! where those paths point, and a few structural facts that no table can say
//! (code fed to an interpreter, a fork bomb, `sed`'s `e` command…). The rule
//! engine then matches rules against these [`Facts`].

mod classifier;
pub mod destinations;
mod facts;
pub mod paths;
mod reach;
pub mod routines;
pub mod table;
mod tables;

use crate::Tier;
use crate::shell::{Feed, Origin, RedirectKind, Script, SimpleCommand, Word};
use destinations::{Connect, GitRepository, Target};
use paths::{Frame, PathClass};
use routines::{Detector, Routine};
use table::{Operands, Program, TableTier};

use classifier::Classifier;
pub use facts::{Access, Fact, Facts, Language, PathUse};
use facts::{literal, sub_word};
pub use tables::{ArgumentPaths, DecoderSpec, GitConfigWriter, Interpreters, LanguageSpec, Tables};

/// Splits arguments into flags and operands. `value_flags` take the next word
/// (or the rest of a short cluster) as their value; values of `output_flags`
/// are returned as written paths.
struct Parsed<'a> {
    flags: Vec<String>,
    operands: Vec<&'a Word>,
    /// (flag, value) pairs, for flags that take values.
    values: Vec<(String, &'a str)>,
}

fn parse_args<'a>(args: &'a [Word], value_flags: &[String]) -> Parsed<'a> {
    parse_program_args(args, value_flags, &[], &[])
}

/// [`parse_args`] for a program-table entry: words matching `dash_operands`
/// are operands, and a long flag that only begins options of `long_options`
/// is each of them.
fn parse_program_args<'a>(
    args: &'a [Word],
    value_flags: &[String],
    dash_operands: &[String],
    long_options: &[String],
) -> Parsed<'a> {
    let takes_value = |f: &str| value_flags.iter().any(|v| v == f);
    let mut out = Parsed {
        flags: Vec::new(),
        operands: Vec::new(),
        values: Vec::new(),
    };
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let word = &args[i];
        let t = word.text.as_str();
        i += 1;
        if only_operands
            || word.dynamic
            || t.len() < 2
            || !t.starts_with('-')
            || dash_operands.iter().any(|p| table::glob_match(p, t))
        {
            out.operands.push(word);
            continue;
        }
        if t == "--" {
            out.flags.push(t.to_owned());
            only_operands = true;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (&t[..n.len() + 2], Some(v)),
                None => (t, None),
            };
            let spelled: Vec<&str> = if long_options.iter().any(|o| o == name) {
                Vec::new()
            } else {
                long_options
                    .iter()
                    .filter(|o| o.starts_with(name))
                    .map(String::as_str)
                    .collect()
            };
            let name = spelled.first().copied().unwrap_or(name);
            out.flags
                .extend(spelled.iter().skip(1).map(|s| (*s).to_owned()));
            out.flags.push(name.to_owned());
            match value {
                Some(v) => out.values.push((name.to_owned(), v)),
                None if takes_value(name) && i < args.len() => {
                    out.values.push((name.to_owned(), args[i].text.as_str()));
                    i += 1;
                }
                None => {}
            }
            continue;
        }
        // A whole word can itself be a (single-dash long) flag: `-delete`, `-name`.
        if t.len() > 2 {
            out.flags.push(t.to_owned());
            if takes_value(t) {
                if i < args.len() {
                    out.values.push((t.to_owned(), args[i].text.as_str()));
                    i += 1;
                }
                continue;
            }
        }
        for (pos, c) in t.char_indices().skip(1) {
            let flag = format!("-{c}");
            let value_here = takes_value(&flag);
            out.flags.push(flag.clone());
            if value_here {
                let rest = &t[pos + c.len_utf8()..];
                if !rest.is_empty() {
                    out.values.push((flag, rest));
                } else if i < args.len() {
                    out.values.push((flag, args[i].text.as_str()));
                    i += 1;
                }
                break;
            }
        }
    }
    out
}

/// Whether the words (operands) start with `pattern` (words may be `*` globs).
fn sub_matches(pattern: &[String], operands: &[&Word]) -> bool {
    pattern.len() <= operands.len()
        && pattern
            .iter()
            .zip(operands)
            .all(|(p, w)| table::glob_match(p, &w.text))
}

impl Classifier<'_, '_> {
    /// Adds a path the program names without opening it.
    fn add_named(&self, facts: &mut Facts, word: &Word) {
        let before = facts.paths.len();
        self.add_path(facts, word, Access::Read);
        for p in &mut facts.paths[before..] {
            p.opens = false;
        }
    }

    /// Adds the paths among `operands` as `role` says. `script_first`: the
    /// first operand is a pattern or script, not a file.
    fn add_operand_paths(
        &self,
        facts: &mut Facts,
        role: Operands,
        operands: &[&Word],
        script_first: bool,
    ) {
        let n = operands.len();
        let files = if script_first && n > 0 {
            &operands[1..]
        } else {
            operands
        };
        match role {
            Operands::None => {}
            Operands::Read => operands
                .iter()
                .for_each(|w| self.add_path(facts, w, Access::Read)),
            Operands::Name => operands.iter().for_each(|w| self.add_named(facts, w)),
            Operands::Link => {
                for (i, w) in operands.iter().enumerate() {
                    if i + 1 == n && n > 1 {
                        self.add_path(facts, w, Access::Create);
                    } else {
                        self.add_named(facts, w);
                    }
                }
            }
            Operands::ReadAfterFirst => files
                .iter()
                .for_each(|w| self.add_path(facts, w, Access::Read)),
            Operands::WriteAfterFirst => files
                .iter()
                .for_each(|w| self.add_path(facts, w, Access::Write)),
            Operands::Create => operands
                .iter()
                .for_each(|w| self.add_path(facts, w, Access::Create)),
            Operands::Write => operands
                .iter()
                .for_each(|w| self.add_path(facts, w, Access::Write)),
            Operands::Append => operands
                .iter()
                .for_each(|w| self.add_path(facts, w, Access::Append)),
            Operands::Delete => operands
                .iter()
                .for_each(|w| self.add_path(facts, w, Access::Delete)),
            Operands::MetaAfterFirst => operands
                .iter()
                .skip(1)
                .for_each(|w| self.add_path(facts, w, Access::Meta)),
            Operands::CreateAfterFirst => operands
                .iter()
                .skip(1)
                .for_each(|w| self.add_path(facts, w, Access::Create)),
            Operands::Copy | Operands::Move => {
                let source = if role == Operands::Copy {
                    Access::Read
                } else {
                    Access::Delete
                };
                for (i, w) in operands.iter().enumerate() {
                    let remote = is_remote(&w.text);
                    if remote {
                        facts.set(Fact::RemoteOperand);
                    } else {
                        self.add_path(
                            facts,
                            w,
                            if i + 1 == n && n > 1 {
                                Access::Write
                            } else {
                                source
                            },
                        );
                    }
                }
            }
            Operands::KeyValue => {
                for w in operands {
                    if let Some(target) = w.text.strip_prefix("of=") {
                        self.add_path(facts, &sub_word(w, target), Access::Write);
                    } else if let Some(source) = w.text.strip_prefix("if=") {
                        self.add_path(facts, &sub_word(w, source), Access::Read);
                    }
                }
            }
        }
    }

    /// Classifies `program args` against the table (no redirects, no stdin).
    fn argv(&self, program: &str, args: &[Word], facts: &mut Facts) {
        facts.program = program.to_owned();
        if let [only] = args
            && !only.dynamic
            && self.tables.information_flags.contains(&only.text)
        {
            facts.tier = Some(Tier::ReadOnly);
            facts.flags = vec![only.text.clone()];
            facts.note = format!("`{program} {}` only prints information", only.text);
            return;
        }
        let Some(entry) = self.tables.programs.get(program) else {
            facts.set(Fact::UnknownProgram);
            facts.tier = None;
            facts.note = format!("`{program}` is not a known program");
            return;
        };
        if let Some(lang) = self.tables.language(program) {
            return self.interpreter(lang, entry, args, facts);
        }
        self.table_entry(program, entry, args, facts);
    }

    fn table_entry(&self, program: &str, entry: &Program, args: &[Word], facts: &mut Facts) {
        let parsed = parse_program_args(
            args,
            &entry.takes_value,
            &entry.dash_operands,
            &entry.long_options,
        );
        let sub = entry
            .subs
            .iter()
            .find(|s| sub_matches(&s.words, &parsed.operands));
        let sub_len = sub.map_or(0, |s| s.words.len());
        let rest = &parsed.operands[sub_len..];
        let bare = rest.is_empty();
        let mut tier: TableTier = match sub {
            Some(s) => {
                if bare {
                    s.bare_tier.unwrap_or(s.tier)
                } else {
                    s.tier
                }
            }
            None => {
                if bare && parsed.operands.is_empty() {
                    entry.bare_tier.unwrap_or(entry.tier)
                } else {
                    entry.tier
                }
            }
        };
        let mut operands = sub.and_then(|s| s.operands).unwrap_or(entry.operands);
        let mut connect: Vec<Connect> = sub
            .and_then(|s| s.connect.clone())
            .unwrap_or_else(|| entry.connect.clone());
        let first_word = parsed
            .operands
            .first()
            .map(|w| w.text.as_str())
            .unwrap_or("");
        for raise in &entry.flags {
            let applies = (raise.subs.is_empty() || raise.subs.iter().any(|s| s == first_word))
                && !raise.not_subs.iter().any(|s| s == first_word)
                && raise
                    .flags
                    .iter()
                    .any(|f| parsed.flags.iter().any(|g| g == f));
            if applies {
                if let Some(t) = raise.tier {
                    tier = match (tier, t) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                }
                operands = raise.operands.unwrap_or(operands);
                connect.extend(raise.connect.iter().cloned());
            }
        }
        let dry_run = tier.is_some()
            && parsed.flags.iter().any(|f| {
                entry.dry_run_flags.contains(f) || sub.is_some_and(|s| s.dry_run_flags.contains(f))
            })
            && !rest.iter().any(|w| is_remote(&w.text));
        if dry_run {
            // It only shows what it would do: nothing is written.
            tier = Some(Tier::ReadOnly);
            operands = Operands::Read;
        }
        facts.tier = tier;
        facts.note = match (tier, sub) {
            (Some(_), _) if dry_run => format!("`{program}` is asked for a dry run: read_only"),
            (None, _) => format!("`{program}` with these arguments is not in the table"),
            (Some(t), Some(s)) => format!("`{program} {}` is {}", s.words.join(" "), t.as_str()),
            (Some(t), None) => format!("`{program}` is {}", t.as_str()),
        };
        facts.sub = match sub {
            Some(s) => parsed.operands[..s.words.len()]
                .iter()
                .map(|w| w.text.clone())
                .collect(),
            None => parsed
                .operands
                .first()
                .map(|w| vec![w.text.clone()])
                .unwrap_or_default(),
        };
        let script_in_flags = parsed.flags.iter().any(|f| entry.script_flags.contains(f));
        self.add_operand_paths(facts, operands, rest, !script_in_flags);
        for (flag, value) in &parsed.values {
            let read = if entry.input_at_flags.contains(flag) {
                value
                    .split_once('@')
                    .map(|(_, file)| file.split(';').next().unwrap_or(file))
            } else if entry.input_flags.contains(flag) {
                Some(*value)
            } else {
                None
            };
            if entry.output_flags.contains(flag) && !dry_run {
                self.add_path(facts, &literal(value), Access::Write);
            } else if let Some(file) = read.filter(|f| !f.is_empty()) {
                self.add_path(facts, &literal(file), Access::Read);
            }
        }
        self.destinations(&connect, rest, &parsed.values, args, facts);
        facts.flags = parsed.flags;
        facts.operands = rest.iter().map(|w| w.text.clone()).collect();
        self.detectors(program, args, &parsed.values, facts);
    }

    /// Resolves the `connect` list against the command's words into exact
    /// destinations; what cannot be known is recorded, never granted.
    fn destinations(
        &self,
        connect: &[Connect],
        operands: &[&Word],
        values: &[(String, &str)],
        args: &[Word],
        facts: &mut Facts,
    ) {
        let mut targets: Vec<Target> = Vec::new();
        for c in connect {
            match c {
                Connect::To(d) => targets.push(Target::To(d.clone())),
                Connect::Unknown => targets.push(Target::Unknowable(format!(
                    "`{}` connects where the command does not say",
                    facts.program
                ))),
                Connect::UrlOperands => {
                    let schemes = &self.tables.url_schemes;
                    let scheme = if schemes.https_programs.contains(&facts.program) {
                        "https"
                    } else {
                        "http"
                    };
                    let url_values = values
                        .iter()
                        .filter(|(f, _)| schemes.url_options.contains(f))
                        .map(|(_, v)| literal(v));
                    let found: Vec<Target> = operands
                        .iter()
                        .map(|w| (*w).clone())
                        .chain(url_values)
                        .map(|w| destinations::url_target(&w, scheme, schemes))
                        .filter(|t| *t != Target::NotRemote)
                        .collect();
                    if found.is_empty() {
                        targets.push(Target::Unknowable("it names no URL".to_owned()));
                    }
                    targets.extend(found);
                }
                Connect::RemoteOperands => {
                    let schemes = &self.tables.url_schemes;
                    let port = values
                        .iter()
                        .find(|(f, _)| schemes.port_options.contains(f))
                        .and_then(|(_, v)| v.parse::<u16>().ok());
                    targets.extend(
                        operands
                            .iter()
                            .map(|w| destinations::remote_operand_target(w, port, schemes))
                            .filter(|t| *t != Target::NotRemote),
                    );
                }
                Connect::GitRemote => {
                    let repo = match self
                        .tables
                        .detectors
                        .find(&facts.program, Routine::GitRepository)
                    {
                        Some(detector) => destinations::git_repository(detector, &facts.sub, args),
                        None => GitRepository::Unknowable(format!(
                            "`{}` has no git_repository detector",
                            facts.program
                        )),
                    };
                    targets.extend(destinations::git_targets(
                        &repo,
                        self.frame.git_remotes,
                        &self.tables.url_schemes,
                    ));
                }
            }
        }
        for t in targets {
            match t {
                Target::To(d) if !facts.connect.contains(&d) => facts.connect.push(d),
                Target::Unknowable(why) => facts.unknown_destinations.push(why),
                Target::To(_) | Target::Local | Target::NotRemote => {}
            }
        }
    }

    /// Program-specific structure no table can express: the routines the
    /// `[[detector]]` entries of the program (and subcommand) name.
    fn detectors(
        &self,
        program: &str,
        args: &[Word],
        values: &[(String, &str)],
        facts: &mut Facts,
    ) {
        let sub = facts.sub.clone();
        for detector in self.tables.detectors.of(program, &sub) {
            match detector.routine {
                Routine::SedScript => {
                    let is_script = |f: &str| detector.has("script_options", f);
                    let scripts: Vec<String> = if values.iter().any(|(f, _)| is_script(f)) {
                        values
                            .iter()
                            .filter(|(f, _)| is_script(f))
                            .map(|(_, v)| (*v).to_owned())
                            .collect()
                    } else {
                        facts.sub.first().cloned().into_iter().collect()
                    };
                    for script in &scripts {
                        self.sed_script(script, facts);
                    }
                }
                Routine::AwkScript => {
                    if let Some(script) =
                        facts.sub.first().cloned().filter(|_| {
                            !values.iter().any(|(f, _)| detector.has("file_options", f))
                        })
                    {
                        self.awk_script(&script, facts);
                    }
                }
                Routine::FindActions => self.find(detector, args, facts),
                Routine::KillSignal => kill(detector, args, facts),
                Routine::GitRefspecs => {
                    if facts.operands.iter().any(|op| op.starts_with('+')) {
                        facts.set(Fact::GitForceRefspec);
                    }
                    if facts
                        .operands
                        .iter()
                        .any(|op| op.len() > 1 && op.starts_with(':'))
                    {
                        facts.set(Fact::GitDeleteRefspec);
                    }
                }
                Routine::GitConfig => {
                    let change =
                        git_config_change(detector, &facts.flags, &facts.operands, self.tables);
                    match change {
                        GitConfigChange::None => {}
                        GitConfigChange::Plain => facts.raise(Tier::ReversibleWrite, || {
                            "`git config` changes a plain key of the repository's configuration"
                                .to_owned()
                        }),
                        GitConfigChange::Runnable { .. } => facts.set(Fact::GitConfigWrite),
                    }
                    if change.in_repository() {
                        facts.set(Fact::GitRepoConfig);
                    }
                }
                Routine::GitConfigWriters => {
                    if self
                        .tables
                        .git_config_writers
                        .iter()
                        .any(|w| w.matches(facts))
                    {
                        facts.set(Fact::GitRepoConfig);
                    }
                }
                // Read where they apply: destinations, the next commands'
                // directory, the wrappers and the command's own configuration.
                Routine::GitRepository
                | Routine::GitConfigOverride
                | Routine::ChangeDirectory
                | Routine::StdinOperands => {}
            }
        }
        if self.tables.fetchers.contains(program) {
            let urls: Vec<&str> = facts
                .operands
                .iter()
                .map(String::as_str)
                .filter(|o| !o.is_empty())
                .collect();
            if !urls.is_empty() && urls.iter().all(|u| self.is_local_url(u)) {
                facts.set(Fact::LocalUrls);
            }
        }
    }

    /// A URL to this machine on a port of `[loopback]`.
    fn is_local_url(&self, url: &str) -> bool {
        let word = literal(url);
        match destinations::url_target(&word, "http", &self.tables.url_schemes) {
            Target::To(d) => self.tables.is_open_loopback(&d),
            _ => false,
        }
    }

    fn sed_script(&self, script: &str, facts: &mut Facts) {
        for piece in script.split([';', '\n']) {
            let cmd = skip_sed_address(piece.trim_start());
            let mut chars = cmd.chars();
            match chars.next() {
                Some('e') => facts.set(Fact::CodeExecution),
                Some('w' | 'W') => {
                    let target = chars.as_str().trim();
                    if !target.is_empty() {
                        self.add_path(facts, &literal(target), Access::Write);
                    }
                }
                Some('r' | 'R') => {
                    let source = chars.as_str().trim();
                    if !source.is_empty() {
                        self.add_path(facts, &literal(source), Access::Read);
                    }
                }
                Some('s') => {
                    if let Some((flags, tail)) = sed_substitute_flags(chars.as_str()) {
                        if flags.contains('e') {
                            facts.set(Fact::CodeExecution);
                        }
                        if flags.contains('w') && !tail.trim().is_empty() {
                            self.add_path(facts, &literal(tail.trim()), Access::Write);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn awk_script(&self, script: &str, facts: &mut Facts) {
        let compact: String = script.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.contains("system(")
            || compact.contains("|&")
            || compact.contains("|\"")
            || compact.contains("|getline")
        {
            facts.set(Fact::CodeExecution);
        }
        // `print > "file"` and `print >> "file"` write that file.
        let bytes = script.as_bytes();
        let mut i = 0;
        while let Some(off) = script[i..].find('>') {
            let mut j = i + off + 1;
            let append = bytes.get(j) == Some(&b'>');
            if append {
                j += 1;
            }
            while bytes.get(j) == Some(&b' ') {
                j += 1;
            }
            if bytes.get(j) == Some(&b'"')
                && let Some(end) = script[j + 1..].find('"')
            {
                let target = &script[j + 1..j + 1 + end];
                let access = if append {
                    Access::Append
                } else {
                    Access::Write
                };
                self.add_path(facts, &literal(target), access);
                i = j + 1 + end + 1;
                continue;
            }
            i = j;
        }
    }

    fn find(&self, detector: &Detector, args: &[Word], facts: &mut Facts) {
        let expr_start = args
            .iter()
            .position(|a| a.text.starts_with('-') || a.text == "(" || a.text == "!")
            .unwrap_or(args.len());
        let deletes = args.iter().enumerate().any(|(i, a)| {
            detector.has("delete_actions", &a.text)
                || (detector.has("exec_actions", &a.text)
                    && args
                        .get(i + 1)
                        .is_some_and(|n| detector.has("deleters", &n.text)))
        });
        let access = if deletes {
            Access::Delete
        } else {
            Access::Read
        };
        if deletes {
            facts.set(Fact::FindDelete);
            facts.raise(Tier::ReversibleWrite, || {
                "find deletes what it matches".to_owned()
            });
        }
        let dot = literal(".");
        let starts: Vec<&Word> = if expr_start == 0 {
            vec![&dot]
        } else {
            args[..expr_start].iter().collect()
        };
        for w in starts {
            // What find deletes lies below its start directory.
            self.add_path_as(facts, w, access, false, PathClass::WorkspaceRoot.bit());
        }
    }

    fn interpreter(&self, lang: &Language, entry: &Program, args: &[Word], facts: &mut Facts) {
        let mut i = 0;
        let mut code: Vec<&str> = Vec::new();
        let mut script = None;
        let mut flags = Vec::new();
        // Where the arguments after inline code start.
        let mut after_code = args.len();
        while i < args.len() {
            let t = args[i].text.as_str();
            i += 1;
            if lang.inline_flags.iter().any(|f| f == t) {
                if let Some(c) = args.get(i) {
                    code.push(&c.text);
                }
                after_code = i + 1;
                break;
            }
            if let Some(attached) = lang.inline_flags.iter().find_map(|f| {
                t.strip_prefix(f.as_str())
                    .filter(|r| f.starts_with("--") && r.starts_with('='))
            }) {
                code.push(&attached[1..]);
                after_code = i;
                break;
            }
            if t == "-m" && lang.value_flags.iter().any(|f| f == "-m") {
                // `python -m pip …` is pip; any other module runs like a script.
                if let Some(module) = args.get(i) {
                    if self.tables.programs.contains(&module.text)
                        && self.tables.language(&module.text).is_none()
                    {
                        return self.argv(&module.text.clone(), &args[i + 1..], facts);
                    }
                    script = Some(module);
                }
                break;
            }
            if lang.value_flags.iter().any(|f| f == t) {
                i += 1;
                continue;
            }
            if t.starts_with('-') && t.len() > 1 && !args[i - 1].dynamic {
                flags.push(t.to_owned());
                continue;
            }
            script = Some(&args[i - 1]);
            break;
        }
        facts.flags = flags;
        self.destinations(&entry.connect, &[], &[], args, facts);
        if !code.is_empty() {
            facts.tier = Some(Tier::ReversibleWrite);
            facts.note = format!("inline {} code runs sandboxed", lang.name);
            for c in &code {
                self.inline_code(lang, c, facts);
            }
            if facts
                .flags
                .iter()
                .any(|f| reach::in_place(f, &lang.in_place_flags))
            {
                for file in args.iter().skip(after_code) {
                    if !file.text.starts_with('-') {
                        self.add_path(facts, file, Access::Write);
                    }
                }
            }
        } else if let Some(s) = script {
            facts.tier = Some(Tier::ReversibleWrite);
            facts.note = format!("{} script `{}` runs sandboxed", lang.name, s.text);
            facts.operands = vec![s.text.clone()];
            if s.text != "-" && !s.dynamic && !s.text.starts_with("<(") {
                self.add_path(facts, s, Access::Read);
            }
        } else if facts.flags.is_empty() {
            facts.tier = Some(Tier::ReversibleWrite);
            facts.note = format!("{} reads its program from standard input", lang.name);
        } else {
            facts.tier = Some(Tier::ReadOnly);
            facts.note = format!("{} asked only for information", lang.name);
        }
        if args
            .iter()
            .any(|a| a.dynamic && (a.text.starts_with("<(") || a.text.starts_with("$(")))
        {
            // Judged against substitutions in `stdin_and_substitutions`.
            facts.set(Fact::InlineCode);
        }
    }
}

/// `kill`'s signal and targets. Signal 0 sends nothing: it only asks whether
/// the processes exist. A target of 1 or -1 (in any spelling the shell reads
/// as that number) is init or every process.
fn kill(detector: &Detector, args: &[Word], facts: &mut Facts) {
    let number = |t: &str| t.trim().parse::<i64>().ok();
    let mut signal: Option<&str> = None;
    let mut targets: Vec<&Word> = Vec::new();
    let mut only_targets = false;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let t = word.text.as_str();
        // Options come first: after a target, `-1` is a process group.
        if only_targets
            || !targets.is_empty()
            || word.dynamic
            || !t.starts_with('-')
            || t.len() == 1
        {
            targets.push(word);
            continue;
        }
        let attached = detector.words("signal_options").iter().find_map(|o| {
            t.strip_prefix(o.as_str())
                .filter(|_| o.starts_with("--"))
                .and_then(|r| r.strip_prefix('='))
        });
        match t {
            "--" => only_targets = true,
            _ if detector.has("signal_options", t) => {
                signal = words.next().map(|w| w.text.as_str());
            }
            _ if detector.has("list_options", t) => return,
            _ if attached.is_some() => signal = attached,
            // The first `-X` names the signal; a later one is a process group.
            _ if signal.is_none() => signal = Some(&t[1..]),
            _ => targets.push(word),
        }
    }
    if signal.and_then(number) == Some(0) && !targets.is_empty() {
        facts.tier = Some(Tier::ReadOnly);
        facts.note =
            "`kill -0` sends no signal: it only asks whether the process exists".to_owned();
        return;
    }
    // `kill -1` alone: bash reads the `-1` as a signal and errors; it stays held as every process.
    let lone = targets.is_empty() && signal.and_then(number) == Some(1);
    if lone
        || targets
            .iter()
            .any(|w| !w.dynamic && matches!(number(&w.text), Some(1 | -1)))
    {
        facts.set(Fact::SignalsEveryProcess);
    }
}

/// Skips a sed address (`1,5`, `$`, `/re/`, `\%re%`, `!`) and braces.
fn skip_sed_address(s: &str) -> &str {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' | b',' | b'$' | b'~' | b'+' | b'!' | b' ' | b'{' | b'}' => i += 1,
            b'/' | b'\\' => {
                let delim = if b[i] == b'\\' {
                    i += 1;
                    b.get(i).copied().unwrap_or(b'/')
                } else {
                    b'/'
                };
                i += 1;
                while i < b.len() && b[i] != delim {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                if b.get(i) == Some(&b'I') || b.get(i) == Some(&b'M') {
                    i += 1;
                }
            }
            _ => break,
        }
    }
    s.get(i.min(s.len())..).unwrap_or("")
}

/// After `s`: returns (flags, text after a `w` flag) of `s/re/repl/flags`.
fn sed_substitute_flags(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    let delim = *b.first()?;
    if delim == b'\n' || delim == b'\\' || delim.is_ascii_alphanumeric() {
        return None;
    }
    let mut i = 1;
    let mut seen = 0;
    while i < b.len() && seen < 2 {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == delim {
            seen += 1;
        }
        i += 1;
    }
    if seen < 2 {
        return None;
    }
    let rest = s.get(i.min(s.len())..)?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric()))
        .unwrap_or(rest.len());
    let flags = &rest[..end];
    let tail = match flags.find('w') {
        Some(w) => &rest[w + 1..],
        None => "",
    };
    Some((flags, tail))
}

/// `host:path`, `user@host:path`, `rsync://…`: an operand on another host.
fn is_remote(text: &str) -> bool {
    if text.contains("://") {
        return true;
    }
    match text.find(':') {
        Some(colon) => {
            let before = &text[..colon];
            !before.is_empty() && !before.contains('/') && !text.starts_with('.')
        }
        None => false,
    }
}

/// Classifies every command of `script` against `frame`'s directories. Literal
/// top-level `cd` moves the working directory for the commands after it.
pub fn classify_script(script: &Script, tables: &Tables, frame: &Frame<'_>) -> Vec<Facts> {
    let mut cwd: Option<String> = frame.cwd.map(str::to_owned);
    let mut out = Vec::with_capacity(script.commands.len());
    for cmd in &script.commands {
        let local = Frame {
            cwd: cwd.as_deref(),
            ..frame.clone()
        };
        let classifier = Classifier {
            tables,
            frame: &local,
        };
        out.push(classifier.command(cmd, script));
        let changes_directory = tables
            .detectors
            .find(&cmd.program, Routine::ChangeDirectory)
            .is_some();
        if changes_directory && cmd.origin == Origin::TopLevel {
            cwd = next_cwd(cmd, &local, tables);
        }
    }
    mark_fork_bombs(script, &mut out);
    out
}

fn next_cwd(cmd: &SimpleCommand, frame: &Frame<'_>, tables: &Tables) -> Option<String> {
    let target = cmd
        .args
        .iter()
        .find(|a| !a.text.starts_with('-') || a.text == "-");
    match target {
        None => Some(frame.home.to_owned()),
        Some(w) if w.dynamic || w.text == "-" => None,
        Some(w) => tables.paths.locate(w, frame, false).path,
    }
}

/// A function body that pipes itself into itself (`:(){ :|:& };:`).
fn mark_fork_bombs(script: &Script, facts: &mut [Facts]) {
    for (i, cmd) in script.commands.iter().enumerate() {
        if cmd.origin != Origin::FunctionBody {
            continue;
        }
        if let Feed::Pipe { from } = &cmd.stdin
            && from.iter().any(|&j| {
                script.commands.get(j).is_some_and(|src| {
                    src.program == cmd.program && src.origin == Origin::FunctionBody
                })
            })
        {
            facts[i].set(Fact::ForkBomb);
        }
    }
}

impl Classifier<'_, '_> {
    fn command(&self, cmd: &SimpleCommand, script: &Script) -> Facts {
        let mut facts = Facts {
            tier: Some(Tier::ReadOnly),
            ..Facts::default()
        };
        if cmd.escalated {
            facts.set(Fact::Escalated);
        }
        if cmd.program.is_empty() {
            facts.note = "assignments and redirections only".to_owned();
        } else if !cmd.invoked_as.contains('/')
            && script.functions.contains(&cmd.program)
            && !self.tables.programs.contains(&cmd.program)
            && !self.tables.builtins.contains(&cmd.program)
        {
            // A definition may sit in a branch that never runs, so a name that
            // is also a known program is judged as that program.
            facts.program = cmd.program.clone();
            facts.set(Fact::DefinedFunction);
            facts.note = format!(
                "`{}` calls a function this request defines; its body is judged",
                cmd.program
            );
        } else if cmd.invoked_as.contains('/')
            && let Some(path) = self.local_program(cmd)
        {
            match self.frame.tools.get(std::path::Path::new(&path)) {
                // A project's own tool (`.venv/bin/pip`): judged as the program it is.
                Some(program) => self.argv(program, &cmd.args, &mut facts),
                None => {
                    facts.program = cmd.program.clone();
                    facts.set(Fact::WorkspaceScript);
                    facts.tier = Some(Tier::ReversibleWrite);
                    facts.note = format!(
                        "`{}` lives in a writable tree and runs sandboxed",
                        cmd.invoked_as
                    );
                }
            }
            facts.local_program = Some(path);
        } else if cmd.invoked_as.contains('/') && !cmd.invoked_as.starts_with('/') {
            facts.program = cmd.program.clone();
            facts.set(Fact::UnknownProgram);
            facts.tier = None;
            facts.note = format!("`{}` lies outside the workspace", cmd.invoked_as);
        } else if self.tables.runs_shell_script(&cmd.program) {
            self.shell(cmd, &mut facts);
        } else {
            self.argv(&cmd.program, &cmd.args, &mut facts);
        }
        if facts.local_program.is_none() && cmd.invoked_as.contains('/') {
            facts.plantable_path = self.plantable(&cmd.invoked_as);
        }
        let overrides = self
            .tables
            .detectors
            .find(&cmd.program, Routine::GitConfigOverride);
        if overrides.is_some_and(|detector| git_config_override(detector, cmd, self.tables)) {
            facts.set(Fact::GitConfigWrite);
        }
        if self
            .tables
            .programs
            .get(&facts.program)
            .is_some_and(|p| p.interactive)
        {
            facts.set(Fact::Interactive);
        }
        let from_stdin = |w: &String| {
            self.tables
                .detectors
                .find(w, Routine::StdinOperands)
                .is_some()
        };
        if cmd.wrappers.iter().any(from_stdin) {
            self.stdin_operands(cmd, script, &mut facts);
        }
        for r in &cmd.redirects {
            let access = match r.kind {
                RedirectKind::Read => Access::Read,
                RedirectKind::Write | RedirectKind::ReadWrite => Access::Write,
                RedirectKind::Append => Access::Append,
                RedirectKind::Duplicate => continue,
            };
            self.add_path(&mut facts, &r.target, access);
        }
        self.fed_code(cmd, script, &mut facts);
        let env = crate::shell::environment(cmd, &self.tables.launchers);
        self.exec_env(&env, &mut facts);
        self.exec_options(cmd, script, &mut facts);
        self.argument_paths(cmd, &mut facts);
        facts.env = env.into_iter().map(|(name, _)| name).collect();
        facts
    }

    /// Where a program invoked by path lives, when the request can write
    /// there: the workspace, a tool cache, or the command's private scratch
    /// (`/tmp/a.out` it just built). It is the agent's own code.
    fn local_program(&self, cmd: &SimpleCommand) -> Option<String> {
        let word = literal(&cmd.invoked_as);
        let located = self.tables.paths.locate(&word, self.frame, false);
        let local = PathClass::Workspace.bit() | PathClass::Scratch.bit() | PathClass::Cache.bit();
        let path = located.path?;
        (located.classes & local != 0 && located.classes & PathClass::Dynamic.bit() == 0)
            .then_some(path)
    }

    /// Whether a program path lies where a request could have put it.
    fn plantable(&self, invoked_as: &str) -> bool {
        let located = self
            .tables
            .paths
            .locate(&literal(invoked_as), self.frame, false);
        let writable = PathClass::Workspace.bit()
            | PathClass::Scratch.bit()
            | PathClass::Cache.bit()
            | PathClass::Dynamic.bit()
            | PathClass::Unknown.bit();
        located.path.is_none() || located.classes & writable != 0
    }

    fn shell(&self, cmd: &SimpleCommand, facts: &mut Facts) {
        facts.program = cmd.program.clone();
        let parsed = parse_args(&cmd.args, &["-o".to_owned(), "-O".to_owned()]);
        facts.flags = parsed.flags;
        if facts.has_flag("-c") {
            facts.note = "its script is judged command by command".to_owned();
            return;
        }
        match parsed.operands.first() {
            Some(first) if first.dynamic => {
                facts.tier = Some(Tier::ReversibleWrite);
                facts.set(Fact::PipeToShell);
                facts.note = format!("runs a script whose text is not known: `{}`", first.text);
            }
            Some(first) => {
                facts.tier = Some(Tier::ReversibleWrite);
                facts.set(Fact::WorkspaceScript);
                facts.note = format!("script `{}` runs sandboxed", first.text);
                facts.operands = vec![first.text.clone()];
                self.add_path(facts, first, Access::Read);
            }
            None => match &cmd.stdin {
                Feed::HereDoc { .. } | Feed::HereString { .. } => {
                    facts.note = "its fed script is judged command by command".to_owned();
                }
                Feed::Pipe { .. } => {
                    facts.tier = Some(Tier::HighRisk);
                    facts.set(Fact::PipeToShell);
                    facts.note = "text from another command runs as a shell script".to_owned();
                }
                Feed::Inherited
                    if cmd.origin == Origin::FedScript
                        || facts.flags.iter().any(|f| f == "--version") => {}
                Feed::Inherited => {
                    facts.set(Fact::Interactive);
                    facts.tier = None;
                    facts.note = "an interactive shell cannot be judged".to_owned();
                }
            },
        }
    }

    /// Operands arriving on stdin (`xargs rm`): the targets are whatever the
    /// feeding command lists. Only a `find` over known directories says where.
    fn stdin_operands(&self, cmd: &SimpleCommand, script: &Script, facts: &mut Facts) {
        let Some(entry) = self.tables.programs.get(&facts.program) else {
            return;
        };
        let access = match entry.operands {
            Operands::Delete | Operands::Move => Access::Delete,
            Operands::Write | Operands::WriteAfterFirst | Operands::Copy => Access::Write,
            Operands::Append => Access::Append,
            Operands::Create | Operands::CreateAfterFirst | Operands::Link => Access::Create,
            Operands::MetaAfterFirst => Access::Meta,
            Operands::None
            | Operands::Read
            | Operands::Name
            | Operands::ReadAfterFirst
            | Operands::KeyValue => {
                return;
            }
        };
        facts.set(Fact::StdinOperands);
        let sources: Vec<&SimpleCommand> = match &cmd.stdin {
            Feed::Pipe { from } => from
                .iter()
                .filter_map(|&j| script.commands.get(j))
                .collect(),
            _ => Vec::new(),
        };
        // find's start directories hold what it lists.
        let from_find = !sources.is_empty()
            && sources.iter().all(|s| {
                self.tables
                    .detectors
                    .find(&s.program, Routine::FindActions)
                    .is_some()
            });
        if from_find {
            for src in sources {
                let starts: Vec<&Word> = src
                    .args
                    .iter()
                    .take_while(|a| !a.text.starts_with('-') && a.text != "(" && a.text != "!")
                    .collect();
                let dot = literal(".");
                let starts = if starts.is_empty() {
                    vec![&dot]
                } else {
                    starts
                };
                for w in starts {
                    // The found entries lie below the start directory.
                    self.add_path_as(facts, w, access, false, PathClass::WorkspaceRoot.bit());
                }
            }
        } else {
            self.add_path(facts, &literal("$STDIN"), access);
        }
    }

    /// Code reaching a shell or interpreter through stdin or a substitution.
    fn fed_code(&self, cmd: &SimpleCommand, script: &Script, facts: &mut Facts) {
        let lang = self.tables.language(&cmd.program);
        let is_shell = self.tables.runs_shell_script(&cmd.program);
        if lang.is_none() && !is_shell {
            return;
        }
        let substituted = cmd.args.iter().any(|a| {
            a.dynamic && (a.text.contains("<(") || a.text.contains("$(") || a.text.contains('`'))
        });
        if substituted
            && script.commands.iter().any(|c| {
                matches!(
                    c.origin,
                    Origin::ProcessSubstitution | Origin::CommandSubstitution
                ) && self.tables.emits_fetched(c)
            })
        {
            facts.set(Fact::FetchToInterpreter);
        }
        match &cmd.stdin {
            Feed::Pipe { from } => {
                let sources: Vec<&SimpleCommand> = from
                    .iter()
                    .filter_map(|&j| script.commands.get(j))
                    .collect();
                let code_from_stdin = lang.is_none_or(|l| l.code_from_stdin(cmd, facts));
                if code_from_stdin && sources.iter().any(|s| self.tables.emits_fetched(s)) {
                    facts.set(Fact::FetchToInterpreter);
                } else if let Some(lang) = lang {
                    let reads_stdin = facts.operands.is_empty()
                        || facts.operands.first().is_some_and(|o| o == "-");
                    if reads_stdin && !facts.has(Fact::InlineCode) {
                        facts.set(Fact::InlineCode);
                        facts.raise(Tier::ReversibleWrite, || {
                            format!("{} code piped in runs sandboxed", lang.name)
                        });
                        for arg in sources.iter().flat_map(|s| &s.args) {
                            self.inline_code(lang, &arg.text, facts);
                        }
                    }
                }
            }
            Feed::HereDoc { body } => self.fed_text(lang, body, facts),
            Feed::HereString { body } => self.fed_text(lang, &body.text, facts),
            Feed::Inherited => {
                // Judged on the words as given: `python3 -m pytest` hands its
                // arguments to the module, which leaves the facts bare.
                let bare = cmd.args.is_empty() && !facts.has(Fact::InlineCode);
                if lang.is_some() && bare && cmd.origin != Origin::FedScript {
                    facts.set(Fact::Interactive);
                    facts.note = "an interactive interpreter cannot be judged".to_owned();
                }
            }
        }
    }

    fn fed_text(&self, lang: Option<&Language>, body: &str, facts: &mut Facts) {
        let reads_stdin = facts.operands.first().is_none_or(|o| o == "-");
        if let Some(lang) = lang
            && reads_stdin
        {
            facts.raise(Tier::ReversibleWrite, || {
                format!("{} here-document runs sandboxed", lang.name)
            });
            self.inline_code(lang, body, facts);
        }
    }
}

/// Whether `setting` (`key` or `key=value`) names one of the table's plain
/// keys, which cannot make git run anything.
fn is_plain_git_key(setting: &str, tables: &Tables) -> bool {
    let key = setting
        .split('=')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    tables
        .git_plain_keys
        .iter()
        .any(|p| match p.strip_suffix('.') {
            Some(section) => key
                .strip_prefix(section)
                .is_some_and(|k| k.starts_with('.')),
            None => key == *p,
        })
}

/// What a `git config` run changes.
enum GitConfigChange {
    /// Nothing: a read.
    None,
    /// A plain key in the repository's own config (`git config user.email a@b`).
    Plain,
    /// Configuration that can make git run something: a key that is not
    /// plain, any key beyond the repository (`--global`, `--system`,
    /// `--file`), or an edit in the editor.
    Runnable {
        /// Whether the file changed is the repository's own config.
        in_repository: bool,
    },
}

impl GitConfigChange {
    /// Whether the repository's own config file is written.
    fn in_repository(&self) -> bool {
        match self {
            GitConfigChange::None => false,
            GitConfigChange::Plain => true,
            GitConfigChange::Runnable { in_repository } => *in_repository,
        }
    }
}

fn git_config_change(
    detector: &Detector,
    flags: &[String],
    operands: &[String],
    tables: &Tables,
) -> GitConfigChange {
    let any = |list: &str| flags.iter().any(|f| detector.has(list, f));
    let is_action = |list: &str, word: &str| detector.has(list, word);
    let (action, rest) = match operands.split_first() {
        Some((first, rest))
            if ["read_actions", "write_actions", "edit_actions"]
                .iter()
                .any(|list| is_action(list, first)) =>
        {
            (Some(first.as_str()), rest)
        }
        _ => (None, operands),
    };
    let writes = match action {
        Some(word) => !is_action("read_actions", word),
        None => any("write_options") || (rest.len() >= 2 && !any("read_options")),
    };
    // An edit runs the configured editor on the file.
    let edits = action.is_some_and(|word| is_action("edit_actions", word)) || any("edit_options");
    let beyond = any("beyond_repository");
    if edits
        || (writes
            && (beyond
                || !rest
                    .first()
                    .is_some_and(|key| is_plain_git_key(key, tables))))
    {
        GitConfigChange::Runnable {
            in_repository: !beyond,
        }
    } else if writes {
        GitConfigChange::Plain
    } else {
        GitConfigChange::None
    }
}

/// Whether a git run configures itself with `-c key=value`, `--config-env`,
/// `--exec-path` or `GIT_*` variables that can run commands (hooks path,
/// pager, ssh command, aliases …). Only the table's plain keys cannot run
/// anything.
fn git_config_override(detector: &Detector, cmd: &SimpleCommand, tables: &Tables) -> bool {
    let plain_key = |setting: &str| is_plain_git_key(setting, tables);
    // The front end keeps each global option with a value as a wrapper
    // entry of the program itself: `git -c key=value`.
    let own = format!("{} ", cmd.program);
    let by_option = cmd
        .wrappers
        .iter()
        .filter_map(|w| w.strip_prefix(own.as_str()))
        .any(|w| {
            let setting = detector
                .words("setting_options")
                .iter()
                .find_map(|o| w.strip_prefix(o.as_str())?.strip_prefix(' '));
            match setting {
                Some(setting) => !plain_key(setting),
                None => detector
                    .words("runnable_options")
                    .iter()
                    .any(|o| w.starts_with(o.as_str())),
            }
        });
    let by_env = cmd.assignments.iter().any(|(name, _)| {
        tables
            .git_env
            .iter()
            .any(|pattern| table::glob_match(pattern, name))
    });
    by_option || by_env
}
