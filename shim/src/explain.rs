//! `praxis explain` and `praxis policy`: judge locally, no daemon needed.
//!
//! `explain` exits 0 whenever it produced a judgment (ALLOW, HOLD or STOP
//! alike; read the decision from the output), and 2 on bad usage. With
//! `--json`, the last line of stdout is one JSON object: the decision.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use praxis_policy::cases;
use praxis_policy::context::{git_config_file, git_remotes};
use praxis_policy::engine::BUILTIN_PATTERNS;
use praxis_policy::rules::config::{OperatorFile, PatternsFile, parse};
use praxis_policy::{
    CommandText, Context, Decision, Policy, Profile, Request, Resolution, Source, Tier, Verdict,
};
use praxis_sandbox::host;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Print the decision as one JSON object (the last line of output).
    #[arg(long)]
    pub json: bool,
    /// The role the command is judged for.
    #[arg(long, default_value = "agent")]
    pub role: String,
    /// Judge as if run from this directory (default: the current one).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// The command, as a shell string.
    #[arg(short = 'c', conflicts_with = "argv")]
    pub command: Option<String>,
    /// The command, as an argv executed without a shell (after `--`).
    #[arg(last = true)]
    pub argv: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCmd {
    /// Validate policy files and their rule examples (default: the built-in
    /// patterns and the operator's policy.toml).
    Check {
        /// Policy files to check (default: the built-in patterns and policy.toml).
        files: Vec<PathBuf>,
    },
    /// Run `[[case]]` test files (command, expect, optional role, cwd, tier).
    Test {
        /// An operator policy.toml to load on top of the built-in patterns.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Test files of `[[case]]` entries.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Where the operator's policy.toml is, and Praxis' own directories.
struct Layout {
    policy_file: PathBuf,
    praxis_dirs: Vec<PathBuf>,
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

fn layout(home: &Path) -> Layout {
    let system = std::env::var_os("PRAXIS_SYSTEM").is_some_and(|v| v == "1")
        || Path::new("/etc/praxis/praxis.toml").exists();
    if system {
        return Layout {
            policy_file: PathBuf::from("/etc/praxis/policy.toml"),
            praxis_dirs: vec![
                PathBuf::from("/etc/praxis"),
                PathBuf::from("/var/lib/praxis"),
            ],
        };
    }
    let config = env_dir("XDG_CONFIG_HOME")
        .unwrap_or_else(|| home.join(".config"))
        .join("praxis");
    let state = env_dir("XDG_STATE_HOME")
        .unwrap_or_else(|| home.join(".local/state"))
        .join("praxis");
    Layout {
        policy_file: config.join("policy.toml"),
        praxis_dirs: vec![config, state],
    }
}

/// The built-in patterns plus an operator policy file's text.
fn with_operator_file(name: &str, text: &str) -> Result<Policy, String> {
    let builtin = Source {
        name: "patterns.toml",
        text: BUILTIN_PATTERNS,
    };
    Policy::load(builtin, Some(Source { name, text })).map_err(|e| e.to_string())
}

/// The built-in patterns plus the operator's policy file when present.
fn load_policy(policy_file: &Path) -> Result<Policy, String> {
    match fs::read_to_string(policy_file) {
        Ok(text) => with_operator_file(&policy_file.display().to_string(), &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Policy::builtin().map_err(|e| e.to_string())
        }
        Err(e) => Err(format!("{}: {e}", policy_file.display())),
    }
}

/// The policy praxisd would load here (built-in patterns and the operator's
/// policy.toml), and the file it reads, for `praxis doctor`.
pub fn operator_policy() -> (PathBuf, Result<Policy, String>) {
    let home = env_dir("HOME").unwrap_or_default();
    let file = layout(&home).policy_file;
    let loaded = load_policy(&file);
    (file, loaded)
}

/// The host as the request would see it, gathered with read-only lookups.
fn gather_context(
    cwd: &Path,
    home: &Path,
    praxis_dirs: Vec<PathBuf>,
    programs: &[String],
) -> Context {
    let root = host::git_root(cwd);
    let workspace = host::workspace_of(cwd);
    let writable: Vec<PathBuf> = [
        workspace.clone(),
        "/tmp".into(),
        "/var/tmp".into(),
        "/dev/shm".into(),
    ]
    .into();
    let path_var =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    let resolved = programs
        .iter()
        .map(|p| {
            let r = match host::resolve_program(p, &path_var, cwd) {
                Some(path) => {
                    let in_writable_root = host::is_inside_any(&path, &writable);
                    Resolution::found(path, in_writable_root, host::is_virtualenv_entry)
                }
                None => Resolution::NotFound,
            };
            (p.clone(), r)
        })
        .collect();
    Context {
        cwd: cwd.to_path_buf(),
        home: home.to_path_buf(),
        in_git_work_tree: root.is_some(),
        git_branch: root.as_deref().and_then(host::git_branch),
        git_default_branch: root.as_deref().and_then(host::git_default_branch),
        workspace,
        praxis_dirs,
        // The daemon's own ports are in its config, which explain does not
        // read; the daemon's decision holds them.
        praxis_ports: Vec::new(),
        git_remotes: root
            .as_deref()
            .map(|r| git_remotes(r, |p| fs::read_to_string(p).ok()))
            .unwrap_or_default(),
        git_config: root
            .as_deref()
            .and_then(|r| git_config_file(r, |p| fs::read_to_string(p).ok())),
        resolved,
        resolution_skipped: false,
        // A site's `[sandbox] reads` are in the daemon's config: its
        // decision lets reads there run without a grant.
        reads: Vec::new(),
        existing: Vec::new(),
        tools: Default::default(),
        links: Default::default(),
    }
}

/// This user's home directory in the user database, as praxisd looks it up.
fn passwd_home() -> Option<PathBuf> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|user| user.dir)
}

/// A HOLD that explain itself produced (no policy, bad directory).
fn failure(reason: String) -> Decision {
    Decision {
        decision: Verdict::Hold,
        tier: Tier::HighRisk,
        reason,
        rule_ids: vec!["explain.failure".to_owned()],
        profile: Profile::ReadOnly,
        grants: Default::default(),
        escalation: false,
        not_relaxable: false,
        commands: Vec::new(),
        undo: Default::default(),
        policy_revision: String::new(),
    }
}

fn judge(args: &ExplainArgs) -> Decision {
    let cwd = match args
        .cwd
        .clone()
        .map_or_else(std::env::current_dir, Ok)
        .and_then(fs::canonicalize)
    {
        Ok(cwd) => cwd,
        Err(e) => return failure(format!("working directory: {e}")),
    };
    let layout = layout(&env_dir("HOME").unwrap_or_default());
    // praxisd judges a request against its caller's home in the user
    // database, whatever `$HOME` says; so does explain.
    let Some(home) = passwd_home() else {
        return failure(String::from(
            "no home directory for this user in the user database: praxisd holds every request",
        ));
    };
    let policy = match load_policy(&layout.policy_file) {
        Ok(p) => p,
        Err(e) => return failure(format!("policy failed to load: {e}")),
    };
    let command = match &args.command {
        Some(text) => CommandText::Shell(text),
        None => CommandText::Argv(&args.argv),
    };
    let request = Request {
        command,
        role: &args.role,
    };
    let analysis = policy.analyze(&request);
    let mut context = gather_context(&cwd, &home, layout.praxis_dirs, &analysis.programs());
    let probes = policy.probes(&analysis, &context);
    if probes.existence {
        context.existing = probes
            .named
            .iter()
            .filter(|p| p.exists())
            .cloned()
            .collect();
    }
    context.tools = host::own_tools(probes.tools);
    context.links = host::link_targets(probes.named);
    policy.decide(&request, &analysis, &context)
}

fn print_readable(d: &Decision) {
    println!(
        "decision: {}  ({} {}, profile {}{})",
        d.decision.as_str(),
        d.tier.label(),
        d.tier.as_str(),
        d.profile.as_str(),
        if d.network() {
            ", network through the egress proxy"
        } else {
            ""
        }
    );
    println!("reason:   {}", d.reason);
    println!("grants:   {}", d.grants_summary());
    if !d.rule_ids.is_empty() {
        println!("rules:    {}", d.rule_ids.join(", "));
    }
    if d.escalation {
        println!("note:     reaches root through sudo/doas/su");
    }
    for (i, c) in d.commands.iter().enumerate() {
        println!("  [{}] {}", i + 1, c.command);
        println!(
            "      {} {} {} by {}: {}",
            c.verdict.as_str(),
            c.tier.label(),
            c.tier.as_str(),
            c.rule_ids.join(", "),
            c.reason
        );
        // Each part's own verdict, when there is more than the program.
        if c.parts.len() > 1 {
            for part in &c.parts {
                println!(
                    "      - {}: {} {} {} by {}",
                    part.part,
                    part.verdict.as_str(),
                    part.tier.label(),
                    part.tier.as_str(),
                    part.decided_by
                );
            }
        }
        if !c.grants.is_empty() {
            println!("      grants: {}", c.grants.summary());
        }
    }
    println!("policy revision: {}", d.policy_revision);
}

pub fn explain(args: ExplainArgs) -> i32 {
    if args.command.is_none() && args.argv.is_empty() {
        eprintln!("praxis explain: give a command with -c 'CMD' or after --");
        return 2;
    }
    let decision = judge(&args);
    if args.json {
        match serde_json::to_string(&decision) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                // Serializing plain data cannot fail; if it did, still answer HOLD.
                println!(
                    "{{\"decision\":\"HOLD\",\"tier\":\"high_risk\",\"reason\":{:?},\"rule_ids\":[],\"profile\":\"read-only\"}}",
                    e.to_string()
                );
            }
        }
    } else {
        print_readable(&decision);
    }
    0
}

pub fn policy(cmd: PolicyCmd) -> i32 {
    match cmd {
        PolicyCmd::Check { files } => check(&files),
        PolicyCmd::Test { policy, files } => test(policy.as_deref(), &files),
    }
}

/// Whether a file is patterns.toml-shaped (else policy.toml-shaped).
fn is_patterns(path: &Path, text: &str) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().contains("patterns"))
        || text.lines().any(|l| l.trim() == "[meta]")
}

fn check(files: &[PathBuf]) -> i32 {
    let home = env_dir("HOME").unwrap_or_default();
    let defaults;
    let files = if files.is_empty() {
        let operator = layout(&home).policy_file;
        defaults = if operator.exists() {
            vec![operator]
        } else {
            Vec::new()
        };
        match Policy::builtin() {
            Ok(p) => println!(
                "ok  built-in patterns.toml ({} rules, revision {})",
                p.rules().len(),
                p.revision()
            ),
            Err(e) => {
                println!("{e}");
                return 1;
            }
        }
        &defaults
    } else {
        files
    };
    let mut failed = false;
    for path in files {
        let name = path.display().to_string();
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                println!("{name}: {e}");
                failed = true;
                continue;
            }
        };
        let result = if is_patterns(path, &text) {
            parse::<PatternsFile>(&name, &text)
                .map_err(|e| e.to_string())
                .and_then(|_| {
                    Policy::load(
                        Source {
                            name: &name,
                            text: &text,
                        },
                        None,
                    )
                    .map_err(|e| e.to_string())
                })
        } else {
            parse::<OperatorFile>(&name, &text)
                .map_err(|e| e.to_string())
                .and_then(|_| with_operator_file(&name, &text))
        };
        match result {
            Ok(p) => println!(
                "ok  {name} ({} rules in force, revision {})",
                p.rules().len(),
                p.revision()
            ),
            Err(e) => {
                println!("{e}");
                failed = true;
            }
        }
    }
    i32::from(failed)
}

fn test(operator: Option<&Path>, files: &[PathBuf]) -> i32 {
    let policy = match operator {
        Some(path) => load_policy(path).and_then(|p| {
            if path.exists() {
                Ok(p)
            } else {
                Err(format!("{}: not found", path.display()))
            }
        }),
        None => Policy::builtin().map_err(|e| e.to_string()),
    };
    let policy = match policy {
        Ok(p) => p,
        Err(e) => {
            println!("{e}");
            return 1;
        }
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    for path in files {
        let name = path.display().to_string();
        let outcomes = fs::read_to_string(path)
            .map_err(|e| format!("{name}: {e}"))
            .and_then(|text| cases::run(&policy, &name, &text).map_err(|e| e.to_string()));
        match outcomes {
            Ok(outcomes) => {
                for o in &outcomes {
                    if o.passed() {
                        passed += 1;
                    } else {
                        failed += 1;
                        println!("FAIL {}", o.describe(&name));
                    }
                }
            }
            Err(e) => {
                println!("{e}");
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    i32::from(failed > 0)
}
