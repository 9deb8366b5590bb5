//! The public entry point: a loaded, validated [`Policy`] and its two-phase
//! decision ([`Policy::analyze`] then [`Policy::decide`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use crate::BUILTIN_PATTERNS;
use crate::classify::destinations;
use crate::classify::paths::{
    Classes, Frame, PathClass, PathLists, PathPattern, keeps_private_tmpdir,
};
use crate::classify::routines::{Detectors, Routine, UndoExpect, UndoTable};
use crate::classify::table::ProgramTable;
use crate::classify::{
    Access, ArgumentPaths, Fact, Facts, GitConfigWriter, PathUse, Tables, classify_script,
};
use crate::decision::Undo;
use crate::decision::{CommandJudgment, CommandShape, Decision, Destination, Grants, PartJudgment};
use crate::env::EnvTable;
use crate::redact::{RedactConfig, Redactor};
use crate::rules::config::{
    self, Loopback, OperatorFile, PatternsFile, Posture, RolePosture, UnknownPosture,
};
use crate::rules::{Rule, RuleSet};
pub use crate::shell::display_command;
use crate::shell::{self, DecisionExample, Launchers, Script, SimpleCommand, Wrappers};
use crate::sockets::SocketClients;
use crate::{Context, Profile, Resolution, Tier, Verdict};

mod reads;
use reads::{ReadAllowList, Unreadable};

/// A policy file's name (for error messages) and text.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// The command of a request: a shell string (`-c`) or an argv.
#[derive(Clone, Copy, Debug)]
pub enum CommandText<'a> {
    Shell(&'a str),
    Argv(&'a [String]),
}

#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub command: CommandText<'a>,
    pub role: &'a str,
}

/// What [`Policy::probes`] asks of the host about a request.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Probes {
    /// Every path the request names (absolute, as named), resolved through
    /// symbolic links into [`Context::links`].
    pub named: Vec<PathBuf>,
    /// Whether a rule asks whether a named path exists: then they are
    /// checked into [`Context::existing`].
    pub existence: bool,
    /// Programs the request names by a path inside a tree it can write,
    /// checked for being a project's own tool into [`Context::tools`].
    pub tools: Vec<PathBuf>,
}

/// Phase one: the parsed request, before any host lookups.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub script: Script,
}

impl Analysis {
    /// Program names to resolve on `PATH` into [`Context::resolved`].
    pub fn programs(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .script
            .commands
            .iter()
            .filter(|c| !c.program.is_empty() && !c.invoked_as.contains('/'))
            .map(|c| c.program.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// Path lists from `patterns.toml` that the sandbox stage enforces.
#[derive(Clone, Debug, Default)]
pub struct SandboxLists {
    /// Tool caches kept writable under workspace-write (`~/.cache`, `~/.cargo/registry`, …).
    pub writable_caches: Vec<String>,
    /// Names kept read-only inside writable trees (`.git/hooks`, `.bashrc`, `.claude`, …).
    pub protected: Vec<String>,
    /// Paths unreadable in every restricted profile (`~/.ssh`, `/etc/shadow`, …).
    pub secrets: Vec<String>,
    /// The trees a restricted profile may read besides the workspace, its
    /// writable trees and its grants: system trees (absolute) and the home's
    /// tool dirs (`~/…`). Nothing else is readable.
    pub reads: Vec<String>,
}

impl SandboxLists {
    /// The read trees with `~/` put under `home`.
    pub fn reads_in(&self, home: &std::path::Path) -> Vec<std::path::PathBuf> {
        self.reads
            .iter()
            .map(|tree| match tree.strip_prefix("~/") {
                Some(inside) => home.join(inside),
                None => std::path::PathBuf::from(tree),
            })
            .collect()
    }
}

/// Limits from policy, applied by the daemon.
#[derive(Clone, Debug)]
pub struct Limits {
    pub timeout_secs: u64,
    pub output_cap_bytes: u64,
    pub rlimit_fsize_bytes: u64,
    pub rlimit_nofile: u64,
    pub rlimit_cpu_secs: u64,
}

impl From<&config::LimitsSpec> for Limits {
    fn from(l: &config::LimitsSpec) -> Limits {
        Limits {
            timeout_secs: l.timeout_secs,
            output_cap_bytes: l.output_cap_bytes,
            rlimit_fsize_bytes: l.rlimit_fsize_bytes,
            rlimit_nofile: l.rlimit_nofile,
            rlimit_cpu_secs: l.rlimit_cpu_secs,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("{file}:{line}: {message}")]
    At {
        file: String,
        line: usize,
        message: String,
    },
    /// Several rule examples failed; each is located.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Examples(Vec<LoadError>),
}

impl From<config::ParseError> for LoadError {
    fn from(e: config::ParseError) -> LoadError {
        LoadError::At {
            file: e.file,
            line: e.line,
            message: e.message,
        }
    }
}

/// Where rule examples are judged: a fixed, synthetic workspace.
pub mod example_context {
    use super::*;

    pub const HOME: &str = "/home/dev";
    pub const WORKSPACE: &str = "/home/dev/project";

    /// A git work tree at [`WORKSPACE`] on branch `feature/x` (default `main`)
    /// whose `origin` is `https://github.com/acme/app.git`, with `PATH`
    /// lookups skipped.
    pub fn context() -> Context {
        Context {
            cwd: PathBuf::from(WORKSPACE),
            home: PathBuf::from(HOME),
            workspace: PathBuf::from(WORKSPACE),
            in_git_work_tree: true,
            git_branch: Some("feature/x".to_owned()),
            git_default_branch: Some("main".to_owned()),
            praxis_dirs: vec![
                PathBuf::from("/home/dev/.config/praxis"),
                PathBuf::from("/home/dev/.local/state/praxis"),
            ],
            resolution_skipped: true,
            git_remotes: [(
                "origin".to_owned(),
                "https://github.com/acme/app.git".to_owned(),
            )]
            .into(),
            git_config: Some(PathBuf::from(format!("{WORKSPACE}/.git/config"))),
            ..Context::default()
        }
    }
}

#[derive(Clone, Debug)]
pub struct Policy {
    revision: String,
    sandbox: SandboxLists,
    limits: Limits,
    tables: Tables,
    wrappers: Wrappers,
    rules: RuleSet,
    roles: BTreeMap<String, RolePosture>,
    redactor: Redactor,
    runtime_tools: HashSet<String>,
    no_rc: BTreeMap<String, Vec<String>>,
    socket_clients: SocketClients,
}

fn invalid(file: &str, message: impl Into<String>) -> LoadError {
    LoadError::Invalid {
        file: file.to_owned(),
        message: message.into(),
    }
}

fn at(source: &Source<'_>, needle: &str, message: impl Into<String>) -> LoadError {
    LoadError::At {
        file: source.name.to_owned(),
        line: config::line_of_value(source.text, needle),
        message: message.into(),
    }
}

fn patterns(source: &Source<'_>, entries: &[String]) -> Result<Vec<PathPattern>, LoadError> {
    entries
        .iter()
        .map(|e| PathPattern::parse(e).map_err(|m| at(source, e, m)))
        .collect()
}

fn absolute_dirs(source: &Source<'_>, entries: &[String]) -> Result<Vec<String>, LoadError> {
    entries
        .iter()
        .map(|e| {
            if e.starts_with('/') && !e.contains('*') {
                Ok(crate::lexical::normalize(e))
            } else {
                Err(at(
                    source,
                    e,
                    format!("`{e}` must be an absolute directory"),
                ))
            }
        })
        .collect()
}

/// The read allow-list: `system_reads` absolute, `home_reads` under `~/`,
/// neither with a pattern, neither the root or the home itself (either would
/// make every secret's neighbours readable).
fn read_trees(
    source: &Source<'_>,
    system: &[String],
    home: &[String],
) -> Result<Vec<String>, LoadError> {
    let mut trees = absolute_dirs(source, system)?;
    if let Some(root) = trees.iter().find(|t| t.as_str() == "/") {
        return Err(at(
            source,
            root,
            String::from("`/` cannot be a read tree: reads are an allow-list"),
        ));
    }
    for entry in home {
        let inside = entry.strip_prefix("~/").unwrap_or_default();
        if inside.is_empty() || entry.contains('*') || inside.split('/').any(|c| c == "..") {
            return Err(at(
                source,
                entry,
                format!("home read `{entry}` must name a path below `~/`, without patterns"),
            ));
        }
        trees.push(entry.clone());
    }
    Ok(trees)
}

/// Lowercase, digits and `_`/`-`: names of roles.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// `[loopback] ports`; port 0 is no port.
fn loopback_ports(source: &Source<'_>, spec: &Loopback) -> Result<BTreeSet<u16>, LoadError> {
    if spec.ports.contains(&0) {
        return Err(at(
            source,
            "[loopback]",
            "[loopback] ports: 0 is not a port",
        ));
    }
    Ok(spec.ports.iter().copied().collect())
}

/// Registry name to its destinations.
type Registries = BTreeMap<String, Vec<Destination>>;

fn build_tables(
    source: &Source<'_>,
    file: &PatternsFile,
    registries: &Registries,
    launchers: &Launchers,
) -> Result<Tables, LoadError> {
    let p = &file.paths;
    let paths = PathLists {
        system: absolute_dirs(source, &p.system)?,
        critical: patterns(source, &p.critical)?,
        scratch: absolute_dirs(source, &p.scratch)?,
        secrets: patterns(source, &p.secrets)?,
        protected: p
            .protected
            .iter()
            .map(|e| {
                if e.starts_with('/') || e.starts_with('~') || e.is_empty() {
                    Err(at(
                        source,
                        e,
                        format!("protected name `{e}` must be relative"),
                    ))
                } else {
                    Ok(e.split('/')
                        .filter(|c| !c.is_empty())
                        .map(str::to_owned)
                        .collect())
                }
            })
            .collect::<Result<_, _>>()?,
        caches: patterns(source, &p.writable_caches)?,
        autorun: patterns(source, &p.autorun)?,
        block_devices: patterns(source, &p.block_devices)?,
        harmless_devices: patterns(source, &p.harmless_devices)?,
    };
    let programs =
        ProgramTable::build(&file.programs, registries).map_err(|m| invalid(source.name, m))?;
    let i = &file.interpreters;
    let (languages, language_of) =
        Tables::build_interpreters(i).map_err(|m| invalid(source.name, m))?;
    for name in i
        .shells
        .iter()
        .chain(&i.fetchers)
        .chain(&i.sourcing)
        .chain(language_of.keys())
        .chain(&file.builtins.names)
        .chain(file.detectors.iter().flat_map(|d| &d.programs))
        .chain(file.undo.iter().flat_map(|u| &u.programs))
    {
        if programs.get(name).is_none() {
            return Err(at(
                source,
                name,
                format!("`{name}` has no [[program]] entry"),
            ));
        }
    }
    Ok(Tables {
        programs,
        paths,
        builtins: file.builtins.names.iter().cloned().collect(),
        shells: i.shells.iter().cloned().collect(),
        sourcing: i.sourcing.iter().cloned().collect(),
        fetchers: i.fetchers.iter().cloned().collect(),
        decoders: i
            .decoders
            .iter()
            .map(|d| (d.program.clone(), d.flags.clone()))
            .collect::<HashMap<_, _>>(),
        local_hosts: i.local_hosts.clone(),
        loopback_ports: loopback_ports(source, &file.loopback)?,
        languages,
        language_of,
        git_plain_keys: git_plain_keys(source, &file.git_config.plain_keys)?,
        git_env: git_env(source, &file.git_config.env)?,
        git_config_writers: file
            .git_config
            .writers
            .iter()
            .map(|w| {
                GitConfigWriter::parse(w).ok_or_else(|| {
                    at(
                        source,
                        w,
                        format!("git_config writer `{w}` must be subcommand words, then at most one flag"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        url_schemes: {
            file.url_schemes
                .check()
                .map_err(|m| at(source, "[url_schemes]", m))?;
            file.url_schemes.clone()
        },
        detectors: Detectors::build(&file.detectors)
            .map_err(|e| at(source, "[[detector]]", e.to_string()))?,
        undo: UndoTable::build(&file.undo).map_err(|e| at(source, "[[undo]]", e.to_string()))?,
        argument_paths: ArgumentPaths {
            read_trees: absolute_dirs(source, &file.argument_paths.read_trees)?,
            recursive_flags: file.argument_paths.recursive_flags.clone(),
            recursive_programs: file
                .argument_paths
                .recursive_programs
                .iter()
                .cloned()
                .collect(),
        },
        launchers: launchers.clone(),
        information_flags: file.information.flags.clone(),
    })
}

/// `[exec_env]` and `[[exec_option]]`, with every language they name known.
fn build_launchers(source: &Source<'_>, file: &PatternsFile) -> Result<Launchers, LoadError> {
    let variables = EnvTable::build(&file.env).map_err(|e| at(source, "[[env]]", e.to_string()))?;
    let launchers = Launchers::build(&file.exec_env, &variables, &file.exec_options)
        .map_err(|m| at(source, "[[exec_option]]", m))?;
    let languages: HashSet<&str> = file
        .interpreters
        .languages
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    if let Some(name) = launchers
        .entries()
        .iter()
        .filter_map(|e| e.language.as_deref())
        .find(|n| !languages.contains(n))
    {
        return Err(at(
            source,
            name,
            format!("exec_option language `{name}` is not in [interpreters]"),
        ));
    }
    Ok(launchers)
}

/// `[git_config] plain_keys`: git lowercases keys before they are compared.
fn git_plain_keys(source: &Source<'_>, keys: &[String]) -> Result<Vec<String>, LoadError> {
    match keys
        .iter()
        .find(|k| k.is_empty() || k.chars().any(|c| c.is_ascii_uppercase() || c == '='))
    {
        Some(k) => Err(at(
            source,
            k,
            format!("git_config key `{k}` must be a lowercase key or `section.`"),
        )),
        None => Ok(keys.to_vec()),
    }
}

/// `[git_config] env`: variable names, `*` globs allowed.
fn git_env(source: &Source<'_>, names: &[String]) -> Result<Vec<String>, LoadError> {
    let valid = |n: &String| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'*')
    };
    match names.iter().find(|n| !valid(n)) {
        Some(n) => Err(at(
            source,
            n,
            format!("git_config env `{n}` is not a variable name"),
        )),
        None => Ok(names.to_vec()),
    }
}

fn compile_rules(
    source: &Source<'_>,
    specs: &[config::RuleSpec],
    registries: &Registries,
    out: &mut Vec<(Rule, usize)>,
    file_index: usize,
) -> Result<(), LoadError> {
    for spec in specs {
        let rule = Rule::compile(spec, registries)
            .map_err(|m| at(source, &spec.id, format!("rule `{}`: {m}", spec.id)))?;
        out.push((rule, file_index));
    }
    Ok(())
}

fn validate_operator(
    source: &Source<'_>,
    file: &OperatorFile,
    roles: &BTreeMap<String, RolePosture>,
) -> Result<(), LoadError> {
    for uid in &file.uid {
        for role in uid.roles.iter().chain(std::iter::once(&uid.default_role)) {
            if !roles.contains_key(role) {
                return Err(at(
                    source,
                    role,
                    format!("uid {}: unknown role `{role}`", uid.uid),
                ));
            }
        }
        if !uid.roles.contains(&uid.default_role) {
            return Err(at(
                source,
                &uid.default_role,
                format!("uid {}: default_role must be one of its roles", uid.uid),
            ));
        }
    }
    let mut names = HashSet::new();
    for cred in &file.credentials {
        if !names.insert(cred.name.as_str()) {
            return Err(at(
                source,
                &cred.name,
                format!("credential `{}` is declared twice", cred.name),
            ));
        }
        let sources = usize::from(cred.from_file.is_some())
            + usize::from(cred.from_env.is_some())
            + usize::from(cred.from_command.is_some());
        if sources != 1 {
            return Err(at(
                source,
                &cred.name,
                format!(
                    "credential `{}` needs exactly one of from_file, from_env, from_command",
                    cred.name
                ),
            ));
        }
        let env_ok = cred
            .env
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
            && cred
                .env
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if !env_ok {
            return Err(at(
                source,
                &cred.env,
                format!(
                    "credential `{}`: `{}` is not an environment variable name",
                    cred.name, cred.env
                ),
            ));
        }
        if cred.from_command.as_ref().is_some_and(Vec::is_empty) {
            return Err(at(
                source,
                &cred.name,
                format!("credential `{}`: from_command is empty", cred.name),
            ));
        }
        if let Some(role) = cred.roles.iter().find(|r| !roles.contains_key(*r)) {
            return Err(at(
                source,
                role,
                format!("credential `{}`: unknown role `{role}`", cred.name),
            ));
        }
    }
    Ok(())
}

/// What one command was judged, before display.
struct Judged {
    verdict: Verdict,
    tier: Tier,
    rule_ids: Vec<String>,
    reason: String,
    profile: Profile,
    grants: Grants,
    /// Why a write or destination the command needs is not granted.
    ungranted: Vec<String>,
    /// Held by a rule marked `not_relaxable`.
    not_relaxable: bool,
    /// Each part of the command with its own verdict.
    parts: Vec<PartJudgment>,
}

impl Policy {
    pub fn load(patterns: Source<'_>, operator: Option<Source<'_>>) -> Result<Policy, LoadError> {
        let file: PatternsFile = config::parse(patterns.name, patterns.text)?;
        if file.meta.version != 1 {
            return Err(invalid(
                patterns.name,
                format!("unsupported patterns version {}", file.meta.version),
            ));
        }
        let registries = destinations::compile_registries(&file.registries)
            .map_err(|m| at(&patterns, "[registries]", m))?;
        let launchers = build_launchers(&patterns, &file)?;
        let tables = build_tables(&patterns, &file, &registries, &launchers)?;
        let wrappers = Wrappers::build(&file.wrappers)
            .map_err(|e| at(&patterns, e.subject(), e.to_string()))?
            .with_launchers(launchers);
        let mut roles = file.roles.clone();
        let mut limits = Limits::from(&file.defaults.limits);
        let mut compiled = Vec::new();
        compile_rules(&patterns, &file.rules, &registries, &mut compiled, 0)?;
        let op_file = match &operator {
            Some(src) => Some(config::parse::<OperatorFile>(src.name, src.text)?),
            None => None,
        };
        if let (Some(src), Some(op)) = (&operator, &op_file) {
            roles.extend(op.roles.iter().map(|(k, v)| (k.clone(), v.clone())));
            if let Some(l) = &op.limits {
                limits = Limits::from(l);
            }
            compile_rules(src, &op.rules, &registries, &mut compiled, 1)?;
        }
        let operator_ports = match (
            &operator,
            op_file.as_ref().and_then(|o| o.loopback.as_ref()),
        ) {
            (Some(src), Some(loopback)) => loopback_ports(src, loopback)?,
            _ => BTreeSet::new(),
        };
        let sources = [Some(patterns), operator];
        for name in roles.keys() {
            if !valid_name(name) {
                return Err(invalid(
                    patterns.name,
                    format!("role name `{name}` must be lowercase letters, digits, `-` or `_`"),
                ));
            }
        }
        for (rule, idx) in &compiled {
            if let Some(role) = rule_unknown_role(rule, &roles) {
                let src = sources[*idx].as_ref().unwrap_or(&patterns);
                return Err(at(
                    src,
                    &rule.id,
                    format!("rule `{}`: unknown role `{role}`", rule.id),
                ));
            }
        }
        if let (Some(src), Some(op)) = (&operator, &op_file) {
            validate_operator(src, op, &roles)?;
        }
        let origins: Vec<usize> = compiled.iter().map(|(_, i)| *i).collect();
        let ids: Vec<String> = compiled.iter().map(|(r, _)| r.id.clone()).collect();
        let rules = RuleSet::new(compiled.into_iter().map(|(r, _)| r).collect())
            .map_err(|m| invalid(patterns.name, m))?;
        let mut hasher = Sha256::new();
        for src in sources.iter().flatten() {
            hasher.update(src.name.as_bytes());
            hasher.update([0]);
            hasher.update(src.text.as_bytes());
            hasher.update([0]);
        }
        let redactor = build_redactor(
            &patterns,
            file.redact,
            operator
                .as_ref()
                .zip(op_file.as_ref().and_then(|o| o.redact.clone())),
        )?;
        let p = &file.paths;
        let mut policy = Policy {
            revision: hex::encode(hasher.finalize()),
            sandbox: SandboxLists {
                writable_caches: p.writable_caches.clone(),
                protected: p.protected.clone(),
                // An entry with a `*` component (`/proc/*/environ`) is the
                // judge's: other processes' files are kept from a command
                // by ptrace scoping, not by a read rule.
                secrets: p
                    .secrets
                    .iter()
                    .filter(|s| !s.split('/').any(|c| c == "*"))
                    .cloned()
                    .collect(),
                reads: read_trees(&patterns, &p.system_reads, &p.home_reads)?,
            },
            limits,
            tables,
            wrappers,
            rules,
            roles,
            redactor,
            runtime_tools: file.runtime_tools.allow.iter().cloned().collect(),
            no_rc: file.interpreters.no_rc.clone(),
            socket_clients: SocketClients::build(&file.sockets)
                .map_err(|m| at(&patterns, "[[socket]]", m))?,
        };
        policy.check_examples(|id| {
            let at_index = ids.iter().position(|x| x == id).map_or(0, |i| origins[i]);
            sources[at_index].unwrap_or(patterns)
        })?;
        let table_examples = file
            .argument_paths
            .examples
            .iter()
            .chain(&file.exec_env.examples)
            .chain(file.exec_options.iter().flat_map(|o| &o.examples))
            .chain(&file.information.examples)
            .chain(file.programs.iter().flat_map(|p| &p.examples))
            .chain(file.detectors.iter().flat_map(|d| &d.examples));
        policy.check_decision_examples(&patterns, table_examples)?;
        policy.check_undo_examples(&patterns, file.undo.iter().flat_map(|u| &u.examples))?;
        // Examples are judged with the built-in ports: what the shipped file
        // says must hold whatever an operator opens. A rule that names a
        // port of this machine in its `connect` opens that port too.
        let named_by_rules: Vec<u16> = policy
            .rules
            .rules
            .iter()
            .flat_map(|r| r.connect.iter().flatten())
            .filter(|d| policy.tables.is_loopback(d))
            .map(|d| d.port)
            .collect();
        policy
            .tables
            .loopback_ports
            .extend(operator_ports.into_iter().chain(named_by_rules));
        Ok(policy)
    }

    /// The built-in `patterns.toml` alone.
    pub fn builtin() -> Result<Policy, LoadError> {
        Policy::load(
            Source {
                name: "patterns.toml",
                text: BUILTIN_PATTERNS,
            },
            None,
        )
    }

    /// Every rule's `match` examples must match it, `not_match` ones must not,
    /// judged in [`example_context`].
    fn check_examples<'s>(&self, source_of: impl Fn(&str) -> Source<'s>) -> Result<(), LoadError> {
        let ctx = example_context::context();
        let mut failures = Vec::new();
        for rule in &self.rules.rules {
            for (examples, want) in [(&rule.matches, true), (&rule.not_matches, false)] {
                for example in examples {
                    let script = shell::parse_script_with(example, &self.wrappers);
                    let got = self.rule_matches_any(rule, &script, &ctx);
                    if got != want {
                        let verb = if want { "does not match" } else { "matches" };
                        failures.push(at(
                            &source_of(&rule.id),
                            example,
                            format!("rule `{}` {verb} its example `{example}`", rule.id),
                        ));
                    } else if let Some(part) = self.unspoken_part(rule, &script, &ctx)
                        && want
                    {
                        failures.push(at(
                            &source_of(&rule.id),
                            example,
                            format!(
                                "rule `{}` does not speak for `{part}` of its example `{example}` (name it in `paths`, `connect` or `covers`)",
                                rule.id
                            ),
                        ));
                    }
                }
            }
        }
        match failures.len() {
            0 => Ok(()),
            1 => Err(failures.remove(0)),
            _ => Err(LoadError::Examples(failures)),
        }
    }

    /// Every example of the `[argument_paths]`, `[exec_env]`,
    /// `[[exec_option]]`, `[information]` and `[[program]]` tables must get its decision, judged as role `agent`
    /// in [`example_context`].
    fn check_decision_examples<'e>(
        &self,
        source: &Source<'_>,
        examples: impl Iterator<Item = &'e DecisionExample>,
    ) -> Result<(), LoadError> {
        let ctx = example_context::context();
        let failures: Vec<LoadError> = examples
            .filter_map(|example| {
                let request = Request {
                    command: CommandText::Shell(&example.command),
                    role: "agent",
                };
                let analysis = self.analyze(&request);
                let got = self.decide(&request, &analysis, &ctx);
                (got.decision != example.decision).then(|| {
                    at(
                        source,
                        &example.command,
                        format!(
                            "example `{}` must be {}, is {} ({})",
                            example.command,
                            example.decision.as_str(),
                            got.decision.as_str(),
                            got.reason
                        ),
                    )
                })
            })
            .collect();
        match failures.len() {
            0 => Ok(()),
            1 => Err(failures.into_iter().next().expect("one failure")),
            _ => Err(LoadError::Examples(failures)),
        }
    }

    /// Every `[[undo]]` example saves what it states.
    fn check_undo_examples<'e>(
        &self,
        source: &Source<'_>,
        examples: impl Iterator<Item = &'e crate::classify::routines::UndoExample>,
    ) -> Result<(), LoadError> {
        let ctx = example_context::context();
        for example in examples {
            let request = Request {
                command: CommandText::Shell(&example.command),
                role: "agent",
            };
            let undo = self.decide(&request, &self.analyze(&request), &ctx).undo;
            let saves = match (undo.workspace, undo.git_stash) {
                (Some(true), _) => UndoExpect::WorkspaceWithIgnored,
                (Some(false), _) => UndoExpect::Workspace,
                (None, true) => UndoExpect::Stash,
                (None, false) => UndoExpect::Nothing,
            };
            if saves != example.saves {
                return Err(at(
                    source,
                    &example.command,
                    format!(
                        "undo example `{}` must save {:?}, saves {saves:?}",
                        example.command, example.saves
                    ),
                ));
            }
        }
        Ok(())
    }

    /// For an ALLOW rule: a part beyond a workspace write (T2 or more) of a
    /// command the rule matches that the rule does not speak for.
    fn unspoken_part(&self, rule: &Rule, script: &Script, ctx: &Context) -> Option<String> {
        if rule.verdict != Verdict::Allow {
            return None;
        }
        let facts = classify_script(script, &self.tables, &dirs(ctx).frame(ctx));
        script
            .commands
            .iter()
            .zip(&facts)
            .filter(|(cmd, f)| rule.matches(f, &display_command(cmd)))
            .find_map(|(_, f)| {
                let connect = rule.connect.as_deref().unwrap_or(&f.connect);
                Part::beside_program(f, connect)
                    .find(|p| p.tier > Tier::ReversibleWrite && !self.speaks_for(rule, p, ctx))
                    .map(|p| p.label())
            })
    }

    fn rule_matches_any(&self, rule: &Rule, script: &Script, ctx: &Context) -> bool {
        let facts = classify_script(script, &self.tables, &dirs(ctx).frame(ctx));
        script
            .commands
            .iter()
            .zip(&facts)
            .any(|(cmd, f)| rule.matches(f, &display_command(cmd)))
    }

    pub fn analyze(&self, request: &Request<'_>) -> Analysis {
        let script = match request.command {
            CommandText::Shell(text) => shell::parse_script_with(text, &self.wrappers),
            CommandText::Argv(argv) => shell::parse_argv_with(argv, &self.wrappers),
        };
        Analysis { script }
    }

    pub fn decide(
        &self,
        request: &Request<'_>,
        analysis: &Analysis,
        context: &Context,
    ) -> Decision {
        let Some(posture) = self.roles.get(request.role) else {
            return self.whole_hold(format!("unknown role `{}`", request.role), "role.unknown");
        };
        let script = &analysis.script;
        let dirs = dirs(context);
        let frame = Frame {
            private_tmpdir: match request.command {
                CommandText::Shell(text) => keeps_private_tmpdir(text),
                CommandText::Argv(_) => false,
            },
            ..dirs.frame(context)
        };
        let facts = classify_script(script, &self.tables, &frame);
        let texts: Vec<String> = script.commands.iter().map(display_command).collect();
        let mut judged: Vec<Judged> = script
            .commands
            .iter()
            .zip(&facts)
            .zip(&texts)
            .map(|((cmd, f), text)| self.judge(cmd, f, text, request.role, posture, context))
            .collect();
        let readable = self.read_allow_list(&judged, context);
        let mut commands = Vec::with_capacity(script.commands.len());
        for ((f, text), j) in facts.iter().zip(texts).zip(&mut judged) {
            hold_unreadable(j, f, &readable);
            self.hold_closed_loopback(j, context);
            commands.push(CommandJudgment {
                command: self.redactor.redact_str(&text).into_owned(),
                program: f.program.clone(),
                verdict: j.verdict,
                tier: j.tier,
                rule_ids: j.rule_ids.clone(),
                reason: with_ungranted(&j.reason, &j.ungranted),
                grants: j.grants.clone(),
                shape: self.shape(f),
                parts: j.parts.clone(),
            });
        }
        let mut decision = Decision {
            decision: Verdict::Allow,
            tier: Tier::ReadOnly,
            reason: String::from("nothing to run"),
            rule_ids: Vec::new(),
            profile: Profile::ReadOnly,
            grants: Grants::default(),
            escalation: script.commands.iter().any(|c| c.escalated),
            not_relaxable: false,
            commands,
            undo: Undo::default(),
            policy_revision: self.revision.clone(),
        };
        for (f, j) in facts.iter().zip(&judged) {
            decision.undo.add(f, j.tier, &self.tables.undo);
        }
        let worst = judged
            .iter()
            .map(|j| j.verdict)
            .max()
            .unwrap_or(Verdict::Allow);
        for j in &judged {
            decision.tier = decision.tier.max(j.tier);
            decision.profile = decision.profile.max(j.profile);
            decision.grants.extend(&j.grants);
        }
        // The reason comes from a rule that decided, when one did, over a tier posture.
        let by_rule = |j: &&Judged| {
            j.verdict == worst && j.rule_ids.iter().any(|id| !id.starts_with("posture."))
        };
        // Else the reason of the highest tier among the most severe.
        let highest = judged
            .iter()
            .filter(|j| j.verdict == worst)
            .max_by_key(|j| j.tier);
        if let Some(first) = judged.iter().find(by_rule).or(highest) {
            decision.decision = worst;
            decision.reason = first.reason.clone();
        }
        decision.not_relaxable = worst == Verdict::Hold && judged.iter().any(|j| j.not_relaxable);
        for j in judged.iter().filter(|j| j.verdict == worst) {
            for id in &j.rule_ids {
                if !decision.rule_ids.contains(id) {
                    decision.rule_ids.push(id.clone());
                }
            }
        }
        if worst < Verdict::Stop && !script.holds.is_empty() {
            decision.decision = Verdict::Hold;
            decision.tier = Tier::HighRisk;
            decision.reason = script.holds.join("; ");
            decision.rule_ids = vec![String::from("shell.unanalysable")];
        }
        let mut ungranted: Vec<String> = Vec::new();
        for why in judged.iter().flat_map(|j| &j.ungranted) {
            if !ungranted.contains(why) {
                ungranted.push(why.clone());
            }
        }
        decision.reason = with_ungranted(&decision.reason, &ungranted);
        hold_uncontained_unknown(&mut decision, &judged);
        hold_shared_config_grant(&mut decision, &facts, &judged, context, &self.tables);
        if decision.decision == Verdict::Stop {
            // Nothing runs; an approval can never turn a STOP into a run.
            decision.grants = Grants::default();
        }
        decision
    }

    fn whole_hold(&self, reason: String, id: &str) -> Decision {
        Decision {
            decision: Verdict::Hold,
            tier: Tier::HighRisk,
            reason,
            rule_ids: vec![id.to_owned()],
            profile: Profile::ReadOnly,
            grants: Grants::default(),
            escalation: false,
            not_relaxable: false,
            commands: Vec::new(),
            undo: Undo::default(),
            policy_revision: self.revision.clone(),
        }
    }

    /// The command as a whole ([`Policy::judge_whole`]), then each of its
    /// parts on its own: an ALLOW rule speaks only for the parts it matched,
    /// and the most severe other part decides over it.
    fn judge(
        &self,
        cmd: &SimpleCommand,
        f: &Facts,
        text: &str,
        role: &str,
        posture: &RolePosture,
        ctx: &Context,
    ) -> Judged {
        let matched: Vec<&Rule> = self
            .rules
            .matching(f, text)
            .into_iter()
            .map(|i| &self.rules.rules[i])
            .filter(|r| r.applies_to(role))
            .collect();
        let (mut out, allowed_by) = self.judge_whole(cmd, f, &matched, role, posture, ctx);
        out.parts = self.judge_parts(f, &out, &matched, allowed_by, posture, ctx);
        out.tier = out.parts.iter().map(|p| p.tier).fold(out.tier, Tier::max);
        if let Some(rule) = allowed_by
            && let Some(worst) = out
                .parts
                .iter()
                .filter(|p| p.verdict > Verdict::Allow)
                .max_by_key(|p| p.tier)
        {
            out.verdict = worst.verdict;
            out.rule_ids = vec![worst.decided_by.clone()];
            out.reason = format!(
                "{} ({} {} held for role {role}): rule `{}` speaks only for what it matched",
                worst.part,
                worst.tier.label(),
                worst.tier.as_str(),
                rule.id
            );
        }
        out
    }

    /// Each part of the command and what decides it alone: a STOP or HOLD rule
    /// whose `paths` name it, else the ALLOW rule that decided when it speaks
    /// for it, else the role's posture for the part's own tier. Without an
    /// ALLOW rule the program (and the destinations its table gives it) takes
    /// the whole command's judgment.
    fn judge_parts(
        &self,
        f: &Facts,
        out: &Judged,
        matched: &[&Rule],
        allowed_by: Option<&Rule>,
        posture: &RolePosture,
        ctx: &Context,
    ) -> Vec<PartJudgment> {
        let redact = |t: String| self.redactor.redact_str(&t).into_owned();
        let whole = |part: String, tier: Tier| PartJudgment {
            part: redact(part),
            verdict: out.verdict,
            tier,
            decided_by: out.rule_ids.join(", "),
        };
        let by_rule = |part: String, tier: Tier, rule: &Rule| PartJudgment {
            part: redact(part),
            verdict: rule.verdict,
            tier,
            decided_by: rule.id.clone(),
        };
        let by_posture = |part: String, tier: Tier| PartJudgment {
            part: redact(part),
            verdict: posture_verdict(posture, tier),
            tier,
            decided_by: format!("posture.{}", tier.as_str()),
        };
        let mut words = vec![f.program.as_str()];
        // `sub` is the first operand when no subcommand of the table matched.
        if !f.operands.starts_with(&f.sub) {
            words.extend(f.sub.iter().map(String::as_str));
        }
        let program = format!("runs `{}`", words.join(" "));
        let mut parts = vec![match allowed_by {
            Some(rule) => by_rule(program, rule.tier.unwrap_or(out.tier), rule),
            None => whole(program, out.tier),
        }];
        for beside in Part::beside_program(f, &out.grants.connect) {
            let (label, tier) = (beside.label(), beside.tier);
            let naming = match beside.of {
                PartOf::Path(p) => matched
                    .iter()
                    .filter(|r| r.verdict > Verdict::Allow && r.speaks_for_path(p))
                    .max_by_key(|r| r.verdict),
                PartOf::Destination(_) => None,
            };
            parts.push(match (naming, allowed_by) {
                (Some(rule), _) => by_rule(label, tier, rule),
                (None, Some(rule)) if self.speaks_for(rule, &beside, ctx) => {
                    by_rule(label, tier, rule)
                }
                (None, Some(_)) => by_posture(label, tier),
                // The program table gave the command its destinations.
                (None, None) if matches!(beside.of, PartOf::Destination(_)) => {
                    whole(label, out.tier)
                }
                (None, None) => by_posture(label, tier),
            });
        }
        parts
    }

    /// Whether an ALLOW by `rule` speaks for this part of the command.
    fn speaks_for(&self, rule: &Rule, part: &Part<'_>, ctx: &Context) -> bool {
        match part.of {
            PartOf::Path(p) => rule.speaks_for_path(p),
            PartOf::Destination(d) => {
                let remotes: Vec<Destination> = ctx
                    .git_remotes
                    .values()
                    .filter_map(|url| {
                        match destinations::repository_target(url, false, &self.tables.url_schemes)
                        {
                            destinations::Target::To(d) => Some(d),
                            _ => None,
                        }
                    })
                    .collect();
                rule.speaks_for_destination(d, &self.tables.local_hosts, &remotes)
            }
        }
    }

    /// STOP rules, then the default preconditions, then HOLD rules, then ALLOW
    /// rules (with their preconditions), then the role's posture for the tier.
    /// Also the ALLOW rule that decided, if one did.
    fn judge_whole<'r>(
        &self,
        cmd: &SimpleCommand,
        f: &Facts,
        matched: &[&'r Rule],
        role: &str,
        posture: &RolePosture,
        ctx: &Context,
    ) -> (Judged, Option<&'r Rule>) {
        let base_tier = f.tier.unwrap_or(Tier::HighRisk);
        let tier = matched
            .iter()
            .filter_map(|r| r.tier)
            .fold(base_tier, Tier::max);
        let default_profile = if tier == Tier::ReadOnly {
            Profile::ReadOnly
        } else {
            Profile::WorkspaceWrite
        };
        let mut out = Judged {
            verdict: Verdict::Hold,
            tier,
            rule_ids: Vec::new(),
            reason: String::new(),
            profile: default_profile,
            grants: Grants {
                write: Vec::new(),
                read: Vec::new(),
                connect: f.connect.clone(),
                sockets: Vec::new(),
            },
            ungranted: f
                .unknown_destinations
                .iter()
                .map(|why| format!("{UNKNOWN_DESTINATION}{why}"))
                .collect(),
            not_relaxable: false,
            parts: Vec::new(),
        };
        write_grants(f, &mut out);
        if f.has(Fact::GitRepoConfig)
            && let Some(config) = &ctx.git_config
            && !out.grants.write.contains(config)
        {
            out.grants.write.push(config.clone());
        }
        let decided_by = |out: &mut Judged, verdict: Verdict, rules: &[&Rule]| {
            out.verdict = verdict;
            out.rule_ids = rules.iter().map(|r| r.id.clone()).collect();
            out.reason = rules[0].reason.clone();
        };
        let stops: Vec<&Rule> = matched
            .iter()
            .copied()
            .filter(|r| r.verdict == Verdict::Stop)
            .collect();
        if !stops.is_empty() {
            decided_by(&mut out, Verdict::Stop, &stops);
            return (out, None);
        }
        if let Err(reason) = self.resolution(cmd, f, ctx) {
            out.rule_ids = vec![String::from("precondition.resolution")];
            out.reason = reason;
            return (out, None);
        }
        let holds: Vec<&Rule> = matched
            .iter()
            .copied()
            .filter(|r| r.verdict == Verdict::Hold)
            .collect();
        if !holds.is_empty() {
            decided_by(&mut out, Verdict::Hold, &holds);
            grant_sockets(&mut out, &holds);
            out.not_relaxable =
                holds.iter().any(|r| r.not_relaxable) || !out.grants.sockets.is_empty();
            return (out, None);
        }
        if let Some(allow) = matched.iter().find(|r| r.verdict == Verdict::Allow) {
            out.rule_ids = vec![allow.id.clone()];
            match allow.check_preconditions(f, ctx) {
                Ok(()) => {
                    out.verdict = Verdict::Allow;
                    out.reason = allow.reason.clone();
                    out.profile = allow.profile.unwrap_or(out.profile);
                    if let Some(connect) = &allow.connect {
                        out.grants.connect = connect.clone();
                        out.ungranted
                            .retain(|why| !why.starts_with(UNKNOWN_DESTINATION));
                    }
                    return (out, Some(allow));
                }
                Err(why) => {
                    out.verdict = allow.on_failure;
                    out.reason = format!("precondition failed: {why}");
                }
            }
            return (out, None);
        }
        let Some(tier_known) = f.tier else {
            if f.has(Fact::UnknownProgram)
                && !f.plantable_path
                && posture.unknown == UnknownPosture::Contained
            {
                // Bounded by the sandbox and undone from the checkpoint
                // `Undo::add` asks for: nothing irreversible to hold for.
                out.verdict = Verdict::Allow;
                out.tier = Tier::ReversibleWrite;
                out.profile = Profile::WorkspaceWrite;
                out.rule_ids = vec![String::from(UNKNOWN_CONTAINED)];
                out.reason = format!(
                    "unknown program `{}`, run contained: workspace checkpointed, no network",
                    f.program
                );
                return (out, None);
            }
            out.rule_ids = vec![String::from("unknown")];
            out.reason = if f.plantable_path {
                format!(
                    "{}: unknown, and named by a path a request can write (it may have been planted), so held",
                    f.note
                )
            } else {
                format!("{}: unknown, so held", f.note)
            };
            return (out, None);
        };
        out.verdict = posture_verdict(posture, tier_known.max(tier));
        out.rule_ids = vec![format!("posture.{}", tier.as_str())];
        let verb = if out.verdict == Verdict::Allow {
            "allowed"
        } else {
            "held for approval"
        };
        out.reason = format!(
            "{} ({} {} {verb} for role {role})",
            f.note,
            tier.label(),
            tier.as_str()
        );
        (out, None)
    }

    /// What the request's commands can read without a grant: the read trees
    /// (the policy's, with the home put in, and the host's own) and what
    /// the request is granted to write.
    fn read_allow_list<'a>(
        &'a self,
        judged: &[Judged],
        ctx: &'a Context,
    ) -> ReadAllowList<impl FnOnce() -> Vec<String> + 'a> {
        let trees = || {
            self.sandbox
                .reads_in(&ctx.home)
                .iter()
                .chain(&ctx.reads)
                .filter_map(|t| text_of(t))
                .collect()
        };
        let written = judged
            .iter()
            .flat_map(|j| &j.grants.write)
            .filter_map(|w| text_of(w))
            .collect();
        ReadAllowList::new(trees, written)
    }

    /// A command that would reach this machine on a port outside
    /// `[loopback]`, or on one of Praxis' own ports, is held whatever
    /// allowed it, and the hold names the port: the egress proxy refuses
    /// such a destination anyway, so only the operator's config opens it.
    fn hold_closed_loopback(&self, j: &mut Judged, ctx: &Context) {
        if j.verdict == Verdict::Stop {
            return;
        }
        let Some(closed) = j.grants.connect.iter().find(|d| {
            self.tables.is_loopback(d)
                && (!self.tables.loopback_ports.contains(&d.port)
                    || ctx.praxis_ports.contains(&d.port))
        }) else {
            return;
        };
        let port = closed.port;
        j.verdict = Verdict::Hold;
        j.rule_ids = vec![String::from(CLOSED_LOOPBACK)];
        j.not_relaxable = true;
        j.reason = if ctx.praxis_ports.contains(&port) {
            format!(
                "`{closed}` is port {port} of this machine, Praxis' own API or console: never reachable from a command"
            )
        } else {
            format!(
                "`{closed}` is port {port} of this machine, which is not open to commands (open ones: {}; the operator adds one with `[loopback] ports` in policy.toml)",
                self.open_ports()
            )
        };
    }

    /// `[loopback] ports` as a reason lists them.
    fn open_ports(&self) -> String {
        let ports: Vec<String> = self
            .tables
            .loopback_ports
            .iter()
            .map(ToString::to_string)
            .collect();
        if ports.is_empty() {
            String::from("none")
        } else {
            ports.join(", ")
        }
    }

    /// The variables that point a program at `socket`, relayed at `addr`
    /// (`[[socket]]`).
    #[must_use]
    pub fn socket_env(&self, socket: &Path, addr: &str) -> Vec<(String, String)> {
        self.socket_clients.env(socket, addr)
    }

    /// The ports of this machine commands may reach (`[loopback] ports`, the
    /// built-in and the operator's), for the egress proxy.
    #[must_use]
    pub fn loopback_ports(&self) -> &BTreeSet<u16> {
        &self.tables.loopback_ports
    }

    /// Every command's program must resolve on `PATH` outside the trees the
    /// request can write (shell builtins need no resolution). A program of the
    /// table that is not installed passes: it cannot run, so the shell answers
    /// 127 and holding it would only ask a human to approve an error.
    fn resolution(&self, cmd: &SimpleCommand, f: &Facts, ctx: &Context) -> Result<(), String> {
        if f.has(Fact::DefinedFunction) {
            // The definition may not run; a program of that name must not hide.
            return match ctx.resolved.get(&cmd.program) {
                Some(Resolution::Found { path, .. } | Resolution::VirtualEnvEntry { path }) => {
                    Err(format!(
                        "`{}` is both a function of this request and {} on PATH",
                        cmd.program,
                        path.display()
                    ))
                }
                _ => Ok(()),
            };
        }
        if cmd.program.is_empty()
            || cmd.invoked_as.contains('/')
            || self.tables.builtins.contains(&cmd.program)
        {
            return Ok(());
        }
        match ctx.resolved.get(&cmd.program) {
            Some(Resolution::Found {
                in_writable_root: false,
                ..
            })
            | Some(Resolution::VirtualEnvEntry { .. }) => Ok(()),
            Some(Resolution::Found {
                path,
                in_writable_root: true,
            }) => Err(format!(
                "`{}` resolves to {}, inside a writable tree: a planted binary could shadow the real one",
                cmd.program,
                path.display()
            )),
            Some(Resolution::NotFound) if self.tables.programs.contains(&cmd.program) => Ok(()),
            Some(Resolution::NotFound) => Err(format!("`{}` is not found on PATH", cmd.program)),
            None if ctx.resolution_skipped => Ok(()),
            None => Err(format!("`{}` was not looked up on PATH", cmd.program)),
        }
    }

    /// A command's parts for lesson matchers: operands without the
    /// subcommand words, everything redacted.
    fn shape(&self, f: &Facts) -> CommandShape {
        let redact = |t: &str| self.redactor.redact_str(t).into_owned();
        let skip = if f.operands.starts_with(&f.sub) {
            f.sub.len()
        } else {
            0
        };
        CommandShape {
            subcommand: f.sub.clone(),
            flags: f.flags.clone(),
            operands: f.operands[skip..].iter().map(|o| redact(o)).collect(),
            paths: f
                .paths
                .iter()
                .map(|p| {
                    let classes = PathClass::names(p.classes);
                    (
                        redact(&p.text),
                        classes.into_iter().map(str::to_owned).collect(),
                    )
                })
                .collect(),
        }
    }

    pub fn revision(&self) -> &str {
        &self.revision
    }

    pub fn sandbox_lists(&self) -> &SandboxLists {
        &self.sandbox
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The options that keep `shell` (a path or a name) from reading any
    /// startup file; none for a shell that reads none when run with `-c`.
    pub fn no_rc_options(&self, shell: &std::path::Path) -> &[String] {
        shell
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| self.no_rc.get(name))
            .map_or(&[], Vec::as_slice)
    }

    /// The redactor built from the policy's `[redact]` rules.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Roles this policy defines.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.roles.keys().map(String::as_str)
    }

    /// Whether `tool`, a tool of an agent runtime with no command or file
    /// equivalent, is one `[runtime_tools]` allows (it runs nothing on the host).
    pub fn runtime_tool_allowed(&self, tool: &str) -> bool {
        self.runtime_tools.contains(tool)
    }

    /// The loaded rules, in evaluation order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules.rules
    }

    /// What the host is asked before the request is judged, from one
    /// classification of it (what it names does not depend on the answers).
    pub fn probes(&self, analysis: &Analysis, context: &Context) -> Probes {
        let facts = classify_script(
            &analysis.script,
            &self.tables,
            &dirs(context).frame(context),
        );
        let sorted = |mut paths: Vec<PathBuf>| {
            paths.sort();
            paths.dedup();
            paths
        };
        Probes {
            named: sorted(
                facts
                    .iter()
                    .flat_map(|f| f.paths.iter())
                    .filter_map(|p| p.path.as_ref().map(PathBuf::from))
                    .collect(),
            ),
            existence: self.rules.rules.iter().any(Rule::wants_existence),
            tools: sorted(
                facts
                    .iter()
                    .filter_map(|f| f.local_program.as_ref().map(PathBuf::from))
                    .collect(),
            ),
        }
    }
}

/// The patterns' `[redact]` section (else the built-in one), plus the
/// operator's extra rules.
fn build_redactor(
    patterns: &Source<'_>,
    section: Option<RedactConfig>,
    operator: Option<(&Source<'_>, RedactConfig)>,
) -> Result<Redactor, LoadError> {
    let mut config = match section {
        Some(c) => c,
        None => crate::redact::builtin_config()
            .map_err(|e| invalid(patterns.name, format!("built-in redaction rules: {e}")))?,
    };
    let mut file = patterns.name;
    if let Some((src, extra)) = operator {
        config.rules.extend(extra.rules);
        file = src.name;
    }
    Redactor::new(&config).map_err(|e| invalid(file, e.to_string()))
}

fn rule_unknown_role<'r>(rule: &'r Rule, roles: &BTreeMap<String, RolePosture>) -> Option<&'r str> {
    rule.roles()
        .iter()
        .find(|r| !roles.contains_key(*r))
        .map(String::as_str)
}

/// What the role's posture gives a part or command of this tier.
/// An unknown program runs only contained: a request that would also give
/// it network, or that holds a part beyond T1, is held whatever allowed the
/// rest, since the sandbox and the checkpoint bound only T1 work.
fn hold_uncontained_unknown(decision: &mut Decision, judged: &[Judged]) {
    if decision.decision != Verdict::Allow {
        return;
    }
    let Some(unknown) = decision
        .commands
        .iter()
        .zip(judged)
        .find(|(_, j)| j.rule_ids.iter().any(|id| id == UNKNOWN_CONTAINED))
        .map(|(c, _)| c.program.clone())
    else {
        return;
    };
    let why = if !decision.grants.connect.is_empty() {
        format!(
            "the request also reaches {}",
            decision
                .grants
                .connect
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else if decision.tier > Tier::ReversibleWrite {
        format!(
            "the request also has a {} {} part",
            decision.tier.label(),
            decision.tier.as_str()
        )
    } else {
        return;
    };
    decision.decision = Verdict::Hold;
    // A lesson learned for the known part must not widen the unknown one.
    decision.not_relaxable = true;
    decision.rule_ids = vec![String::from(UNKNOWN_UNCONTAINED)];
    decision.reason = format!(
        "unknown program `{unknown}` runs only contained (no network, nothing beyond T1): {why}"
    );
}

fn posture_verdict(posture: &RolePosture, tier: Tier) -> Verdict {
    let p = match tier {
        Tier::ReadOnly => posture.read_only,
        Tier::ReversibleWrite => posture.reversible_write,
        Tier::ExternalSideEffect => posture.external_side_effect,
        Tier::HighRisk => posture.high_risk,
    };
    if p == Posture::Allow {
        Verdict::Allow
    } else {
        Verdict::Hold
    }
}

/// A part of a simple command beside its program.
enum PartOf<'f> {
    /// A change of a path, or a read of a guarded one.
    Path(&'f PathUse),
    Destination(&'f Destination),
}

/// A part and its own tier.
struct Part<'f> {
    of: PartOf<'f>,
    tier: Tier,
}

impl<'f> Part<'f> {
    /// The command's parts beside its program: each change of a path, each
    /// read of a guarded one, each destination it is granted (T2).
    fn beside_program(f: &'f Facts, connect: &'f [Destination]) -> impl Iterator<Item = Part<'f>> {
        let paths = f.paths.iter().filter_map(|p| {
            own_tier(p).map(|tier| Part {
                of: PartOf::Path(p),
                tier,
            })
        });
        let destinations = connect.iter().map(|d| Part {
            of: PartOf::Destination(d),
            tier: Tier::ExternalSideEffect,
        });
        paths.chain(destinations)
    }

    fn label(&self) -> String {
        match self.of {
            PartOf::Path(p) => format!("{} `{}`", p.access.as_str(), p.text),
            PartOf::Destination(d) => format!("connects to {d}"),
        }
    }
}

/// Reads of these classes are parts of their own (a HOLD rule names them).
const GUARDED_READ: Classes =
    PathClass::Secret.bit() | PathClass::Protected.bit() | PathClass::Praxis.bit();

/// A path's own tier as a part of its command, as the classifier raises it: a
/// change outside the workspace is T3, any other change T1, a read of a
/// guarded path T0. None: an ordinary read, no part of its own.
fn own_tier(p: &PathUse) -> Option<Tier> {
    if p.access != Access::Read {
        Some(if p.classes & PathClass::OutsideWorkspace.bit() != 0 {
            Tier::HighRisk
        } else {
            Tier::ReversibleWrite
        })
    } else if p.classes & GUARDED_READ != 0 {
        Some(Tier::ReadOnly)
    } else {
        None
    }
}

/// How a note about a destination that is not granted starts.
const UNKNOWN_DESTINATION: &str = "no connect grant: ";

/// Classes of a changed path that the workspace-write profile does not
/// already let the command write: it needs a write grant of its own.
const NEEDS_WRITE_GRANT: Classes = PathClass::OutsideWorkspace.bit() | PathClass::Protected.bit();

/// The unix sockets the HOLD rules that decided grant, named in the reason:
/// the operator approves exactly these, each time (a socket's service is
/// reached whole, so no learned lesson lifts the HOLD).
fn grant_sockets(out: &mut Judged, holds: &[&Rule]) {
    for socket in holds.iter().flat_map(|r| &r.sockets) {
        if !out.grants.sockets.contains(socket) {
            out.grants.sockets.push(socket.clone());
        }
    }
    if !out.grants.sockets.is_empty() {
        let names: Vec<String> = out
            .grants
            .sockets
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        out.reason = format!(
            "{} (approving it lets the command connect to the unix socket {})",
            out.reason,
            names.join(", ")
        );
    }
}

/// Every literal path the command changes outside what its profile writes;
/// a dynamic or globbed one is noted, never granted.
fn write_grants(f: &Facts, out: &mut Judged) {
    let mut granted: HashSet<PathBuf> = out.grants.write.iter().cloned().collect();
    for p in f.paths.iter().filter(|p| p.access != Access::Read) {
        if p.classes & NEEDS_WRITE_GRANT == 0 {
            continue;
        }
        match p.path.as_ref().filter(|_| p.exact) {
            Some(path) => {
                let path = PathBuf::from(path);
                if granted.insert(path.clone()) {
                    out.grants.write.push(path);
                }
            }
            None => out.ungranted.push(format!(
                "no write grant: `{}` is not one path known before it runs",
                p.text
            )),
        }
    }
}

/// A grant is the whole request's: an ALLOW that grants the repository's
/// git config (a plain `git config` key, `git remote add`) is held when
/// another command of the request, not git, may write too, since it could
/// set a key that runs code later (`core.hooksPath`). Run the git command
/// on its own, or approve the whole request.
fn hold_shared_config_grant(
    decision: &mut Decision,
    facts: &[Facts],
    judged: &[Judged],
    ctx: &Context,
    tables: &Tables,
) {
    let Some(config) = &ctx.git_config else {
        return;
    };
    if decision.decision != Verdict::Allow || !decision.grants.write.contains(config) {
        return;
    }
    if let Some(other) = facts.iter().zip(judged).find(|(f, j)| {
        let writes_config = tables
            .detectors
            .find(&f.program, Routine::GitConfigWriters)
            .is_some();
        !writes_config && j.tier > Tier::ReadOnly
    }) {
        decision.decision = Verdict::Hold;
        decision.rule_ids = vec![String::from(SHARED_CONFIG_GRANT)];
        decision.reason = format!(
            "the write grant for the repository's git config would also cover `{}` in the same \
             request; run the git command on its own",
            other.0.program
        );
    }
}

/// A command that reads a path its sandbox does not let it read is held
/// (whatever allowed it, a STOP aside), and carries a grant of that exact
/// path, so an approval runs it able to read that path and nothing more. A
/// secret's read grant keeps the HOLD out of memory's reach.
fn hold_unreadable(
    j: &mut Judged,
    f: &Facts,
    readable: &ReadAllowList<impl FnOnce() -> Vec<String>>,
) {
    if j.verdict == Verdict::Stop || j.profile == Profile::Full {
        return;
    }
    let mut first = None;
    for p in &f.paths {
        let Some(unreadable) = readable.unreadable(p) else {
            continue;
        };
        match unreadable {
            Unreadable::Grantable(path) => {
                if p.classes & PathClass::Secret.bit() != 0 {
                    j.not_relaxable = true;
                }
                // The grant itself is named where the HOLD is shown
                // ("if approved it will read …").
                first.get_or_insert_with(|| {
                    format!("reads `{}`, which commands cannot read", p.text)
                });
                if !j.grants.read.contains(&path) {
                    j.grants.read.push(path);
                }
            }
            Unreadable::Ungrantable => {
                let why = format!(
                    "no read grant: `{}` is not one path an approval can grant",
                    p.text
                );
                first.get_or_insert_with(|| {
                    format!("reads `{}`, which commands cannot read ({why})", p.text)
                });
                if !j.ungranted.contains(&why) {
                    j.ungranted.push(why);
                }
            }
        }
    }
    if let Some(reason) = first
        && j.verdict == Verdict::Allow
    {
        j.verdict = Verdict::Hold;
        j.rule_ids = vec![String::from(UNREADABLE)];
        j.reason = reason;
    }
}

/// The rule id of [`hold_unreadable`].
const UNREADABLE: &str = "read.outside-allow-list";

/// The rule id of [`Policy::hold_closed_loopback`].
const CLOSED_LOOPBACK: &str = "loopback.port";

/// The rule id of an unknown program the role runs contained.
const UNKNOWN_CONTAINED: &str = "unknown.contained";

/// The rule id of [`hold_uncontained_unknown`].
const UNKNOWN_UNCONTAINED: &str = "unknown.not-contained";

/// The rule id of [`hold_shared_config_grant`].
const SHARED_CONFIG_GRANT: &str = "grant.shared-git-config";

/// `reason (not granted: …)`.
fn with_ungranted(reason: &str, ungranted: &[String]) -> String {
    let missing: Vec<&str> = ungranted
        .iter()
        .map(String::as_str)
        .filter(|why| !reason.contains(why))
        .collect();
    if missing.is_empty() {
        reason.to_owned()
    } else {
        format!("{reason} ({})", missing.join("; "))
    }
}

/// The context's directories as normalized strings (non-UTF-8 paths are unknown).
struct Dirs {
    cwd: Option<String>,
    home: String,
    workspace: Option<String>,
    praxis: Vec<String>,
}

fn text_of(p: &Path) -> Option<String> {
    p.to_str()
        .filter(|s| s.starts_with('/'))
        .map(crate::lexical::normalize)
}

fn dirs(ctx: &Context) -> Dirs {
    Dirs {
        cwd: text_of(&ctx.cwd),
        home: text_of(&ctx.home).unwrap_or_default(),
        workspace: text_of(&ctx.workspace).filter(|w| w != "/"),
        praxis: ctx.praxis_dirs.iter().filter_map(|p| text_of(p)).collect(),
    }
}

impl Dirs {
    fn frame<'a>(&'a self, ctx: &'a Context) -> Frame<'a> {
        Frame {
            cwd: self.cwd.as_deref(),
            home: &self.home,
            workspace: self.workspace.as_deref(),
            praxis_dirs: &self.praxis,
            private_tmpdir: false,
            git_remotes: &ctx.git_remotes,
            tools: &ctx.tools,
            links: &ctx.links,
        }
    }
}
