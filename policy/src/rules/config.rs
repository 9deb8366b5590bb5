//! The on-disk shape of policy files, validated strictly: every table denies
//! unknown keys, and errors carry the file name and line.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use crate::Verdict;
use crate::verdict::TierSpec;

/// `patterns.toml`: the built-in review surface.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternsFile {
    pub meta: Meta,
    pub defaults: Defaults,
    #[serde(default)]
    pub roles: BTreeMap<String, RolePosture>,
    pub paths: PathLists,
    pub interpreters: crate::classify::Interpreters,
    pub loopback: Loopback,
    pub builtins: Builtins,
    #[serde(default, rename = "program")]
    pub programs: Vec<crate::classify::table::ProgramSpec>,
    /// Programs that run another command, read by the shell front end.
    #[serde(rename = "wrapper")]
    pub wrappers: Vec<crate::shell::WrapperSpec>,
    pub git_config: GitConfig,
    /// URL schemes' default ports, and what the operand kinds of `connect` read.
    pub url_schemes: crate::classify::destinations::UrlSchemes,
    /// The programs the classifier's parsing routines read, and their words.
    #[serde(rename = "detector")]
    pub detectors: Vec<crate::classify::routines::DetectorSpec>,
    /// What a command's undo must save beyond the paths it names.
    #[serde(rename = "undo")]
    pub undo: Vec<crate::classify::routines::UndoSpec>,
    pub argument_paths: ArgumentPathsSpec,
    /// Flags that, as the whole argument list, only ask for a version or usage.
    pub information: InformationSpec,
    /// What each environment variable does (`[[env]]`).
    pub env: Vec<crate::env::EnvSpec>,
    /// The `command` variables' plain values, and the examples of the env table.
    pub exec_env: crate::shell::ExecEnvSpec,
    /// Options that run a command or code, or touch a file.
    #[serde(default, rename = "exec_option")]
    pub exec_options: Vec<crate::shell::ExecOptionSpec>,
    #[serde(default, rename = "rule")]
    pub rules: Vec<RuleSpec>,
    /// The redactor's rules; when absent, the redactor's built-in rules.
    #[serde(default)]
    pub redact: Option<crate::redact::RedactConfig>,
    #[serde(default)]
    pub runtime_tools: RuntimeTools,
    /// How a program reaches a relayed unix socket.
    #[serde(default, rename = "socket")]
    pub sockets: Vec<SocketSpec>,
    /// Package registries and services by name: `npm = ["registry.npmjs.org:443"]`.
    /// `connect` lists name them as `registry:npm`.
    #[serde(default)]
    pub registries: BTreeMap<String, Vec<String>>,
}

/// `[[socket]]`: the variables that point a socket's own clients at its
/// relay, `{addr}` standing for the relay's `127.0.0.1:<port>`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SocketSpec {
    pub path: String,
    pub env: BTreeMap<String, String>,
}

/// `[runtime_tools]`: agent-runtime tools that run no host command and touch
/// no file themselves. Every other tool without a rule is unknown, so HOLD.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeTools {
    #[serde(default)]
    pub allow: Vec<String>,
}

/// The operator's `policy.toml`: roles, uid map, extra rules, limits, credential grants.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorFile {
    #[serde(default)]
    pub limits: Option<LimitsSpec>,
    #[serde(default)]
    pub roles: BTreeMap<String, RolePosture>,
    #[serde(default)]
    pub uid: Vec<UidSpec>,
    #[serde(default, rename = "rule")]
    pub rules: Vec<RuleSpec>,
    #[serde(default)]
    pub credentials: Vec<CredentialSpec>,
    /// Extra redaction rules, added to the built-in ones.
    #[serde(default)]
    pub redact: Option<crate::redact::RedactConfig>,
    /// Ports of this machine opened to commands, added to the built-in ones.
    #[serde(default)]
    pub loopback: Option<Loopback>,
}

/// `[loopback]`: the ports of this machine a command may reach.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Loopback {
    pub ports: Vec<u16>,
}

/// `[git_config]`: git configuration that can run commands.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitConfig {
    /// `-c` keys that cannot run anything; `section.` covers a section.
    pub plain_keys: Vec<String>,
    /// Variables (`*` globs) that make git run a command or load its configuration.
    pub env: Vec<String>,
    /// Git subcommands (then at most one flag) that write the repository's
    /// config file; a decision on one grants that file.
    pub writers: Vec<String>,
}

/// `[argument_paths]`: paths found anywhere in a command's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentPathsSpec {
    /// System trees programs read as tools and libraries: a path there given
    /// to a program that can write is not taken as a write.
    pub read_trees: Vec<String>,
    /// Flags that make a program read the directories it names recursively.
    pub recursive_flags: Vec<String>,
    /// Programs that read the directories they name recursively.
    pub recursive_programs: Vec<String>,
    pub examples: Vec<crate::shell::DecisionExample>,
}

/// `[information]`: a program asked only for its version or its usage.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InformationSpec {
    pub flags: Vec<String>,
    pub examples: Vec<crate::shell::DecisionExample>,
}

/// Shell builtins: commands that need no `PATH` lookup.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Builtins {
    pub names: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub version: u32,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub limits: LimitsSpec,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    pub timeout_secs: u64,
    pub output_cap_bytes: u64,
    pub rlimit_fsize_bytes: u64,
    pub rlimit_nofile: u64,
    pub rlimit_cpu_secs: u64,
}

/// What a role gets for each tier when no rule decides.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolePosture {
    pub read_only: Posture,
    pub reversible_write: Posture,
    pub external_side_effect: Posture,
    pub high_risk: Posture,
    /// What a program the policy does not know gets, when it resolves
    /// outside every writable tree. Unsaid: held.
    #[serde(default)]
    pub unknown: UnknownPosture,
}

/// A role's answer to a program the policy does not know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownPosture {
    /// Runs as T1 in the workspace-write profile without network, after a
    /// whole-workspace checkpoint.
    Contained,
    /// Held for approval.
    #[default]
    Hold,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Posture {
    Allow,
    Hold,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathLists {
    /// Top-level system trees: writes are T3, recursive deletes STOP.
    pub system: Vec<String>,
    /// Files whose truncation or overwrite breaks the host (STOP).
    pub critical: Vec<String>,
    /// Scratch trees the sandbox keeps writable as a whole: the command's
    /// private `/tmp` and `/var/tmp`.
    pub scratch: Vec<String>,
    pub secrets: Vec<String>,
    /// System trees a sandboxed command may read (absolute).
    pub system_reads: Vec<String>,
    /// Tool configs, toolchains and caches of the home a sandboxed command
    /// may read (`~/…`).
    pub home_reads: Vec<String>,
    pub protected: Vec<String>,
    pub writable_caches: Vec<String>,
    /// Places whose files run later for the user (on `PATH`, at login, by a
    /// timer): a change there is HOLD whatever rule matched the command.
    pub autorun: Vec<String>,
    pub block_devices: Vec<String>,
    /// Device files that are not storage (`/dev/null`, `/dev/stdout`, …).
    pub harmless_devices: Vec<String>,
}

/// A rule's decision, which rule files spell in lower case (`decision = "hold"`).
fn lowercase_verdict<'de, D: Deserializer<'de>>(d: D) -> Result<Verdict, D::Error> {
    let word = String::deserialize(d)?;
    match word.as_str() {
        "stop" => Ok(Verdict::Stop),
        "hold" => Ok(Verdict::Hold),
        "allow" => Ok(Verdict::Allow),
        _ => Err(D::Error::unknown_variant(&word, &["stop", "hold", "allow"])),
    }
}

fn lowercase_verdict_if_given<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Verdict>, D::Error> {
    lowercase_verdict(d).map(Some)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessSpec {
    Read,
    Create,
    Write,
    Append,
    Delete,
    Meta,
    /// Any access that changes the file system (all but read).
    Change,
}

/// Which branches `branch_not_in` checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BranchOf {
    /// The branch checked out.
    #[default]
    Current,
    /// The branches a push writes: each refspec's destination after the
    /// remote (`HEAD`, or no refspec at all, is the branch checked out).
    Pushed,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preconditions {
    #[serde(default)]
    pub in_git_work_tree: bool,
    /// The branch `branch_of` names must not be one of these; `$default`
    /// is the repository's default branch.
    #[serde(default)]
    pub branch_not_in: Vec<String>,
    #[serde(default)]
    pub branch_of: BranchOf,
    #[serde(default)]
    pub paths_inside_workspace: bool,
    #[serde(default)]
    pub paths_exist: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub id: String,
    #[serde(deserialize_with = "lowercase_verdict")]
    pub decision: Verdict,
    pub reason: String,
    #[serde(default)]
    pub program: Vec<String>,
    #[serde(default)]
    pub subcommand: Vec<String>,
    #[serde(default)]
    pub any_flags: Vec<String>,
    #[serde(default)]
    pub all_flags: Vec<String>,
    #[serde(default)]
    pub not_flags: Vec<String>,
    /// Any operand matches one of these (`*` and `?` globs).
    #[serde(default)]
    pub args: Vec<String>,
    /// No operand matches one of these.
    #[serde(default)]
    pub not_args: Vec<String>,
    /// Any path of these classes, under `access`.
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub access: Vec<AccessSpec>,
    /// Facts found by the classifier's detectors.
    #[serde(default)]
    pub facts: Vec<String>,
    /// Any environment assignment (`NAME=value cmd`, `env NAME=value`,
    /// `export NAME=value`) whose name matches one of these globs.
    #[serde(default)]
    pub env: Vec<String>,
    /// Last resort: a regex over the canonical command text.
    #[serde(default)]
    pub regex: Option<String>,
    /// The rule does not match a command whose canonical text matches this
    /// regex (a narrow exception).
    #[serde(default)]
    pub not_regex: Option<String>,
    #[serde(default)]
    pub tier: Option<TierSpec>,
    #[serde(default)]
    pub profile: Option<crate::Profile>,
    /// An allowed run connects to exactly these (`host:port`, `registry:NAME`),
    /// instead of what the program table says.
    #[serde(default)]
    pub connect: Option<Vec<String>>,
    /// Unix sockets (exact absolute paths) a HOLD rule grants: once approved,
    /// the command reaches each through a relay. Such a rule is high_risk.
    #[serde(default)]
    pub sockets: Vec<String>,
    /// What an ALLOW rule speaks for beyond the program it matched, the paths
    /// its `paths`/`access` match and the destinations of its `connect`.
    #[serde(default)]
    pub covers: Vec<Cover>,
    /// Roles the rule applies to; empty means every role.
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub preconditions: Option<Preconditions>,
    /// Decision when a precondition fails (HOLD unless stated).
    #[serde(default, deserialize_with = "lowercase_verdict_if_given")]
    pub on_precondition_failure: Option<Verdict>,
    #[serde(default, rename = "match")]
    pub matches: Vec<String>,
    #[serde(default)]
    pub not_match: Vec<String>,
    /// A HOLD rule whose HOLD learned memory may never lift: only an
    /// operator's approval of the one request runs it.
    #[serde(default)]
    pub not_relaxable: bool,
}

/// A part of a command an ALLOW rule may say it speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cover {
    /// The hosts of the repository's configured remotes (not a URL the
    /// command names itself).
    GitRemotes,
    /// The destinations on this machine (`[interpreters] local_hosts`).
    LocalDestinations,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UidSpec {
    pub uid: u32,
    pub roles: Vec<String>,
    pub default_role: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSpec {
    pub name: String,
    pub env: String,
    #[serde(default)]
    pub from_file: Option<String>,
    #[serde(default)]
    pub from_env: Option<String>,
    #[serde(default)]
    pub from_command: Option<Vec<String>>,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub programs: Vec<String>,
}

/// A parse failure located in its file.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Parses `text` as `T`, locating any error by line.
pub fn parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, ParseError> {
    toml::from_str(text).map_err(|e| ParseError {
        file: file.to_owned(),
        line: e.span().map_or(1, |s| line_of(text, s.start)),
        message: e.message().trim().to_owned(),
    })
}

/// 1-based line number of byte `offset`.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Line where `needle` (a quoted string value) first appears, for errors found
/// after deserializing (a bad example, a bad regex).
pub fn line_of_value(text: &str, needle: &str) -> usize {
    let quoted = format!("{needle:?}");
    text.find(&quoted)
        .or_else(|| text.find(needle))
        .map_or(1, |at| line_of(text, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_is_reported_with_its_line() {
        let text = "[limits]\ntimeout_secs = 1\noutput_cap_bytes = 1\nrlimit_fsize_bytes = 1\nrlimit_nofile = 1\nrlimit_cpu_secs = 1\nbogus = 2\n";
        let err = parse::<OperatorFile>("policy.toml", text).unwrap_err();
        assert_eq!(err.line, 7, "{err}");
        assert!(err.to_string().starts_with("policy.toml:7:"), "{err}");
        assert!(err.message.contains("bogus"), "{err}");
    }

    #[test]
    fn credential_and_uid_shapes_are_strict() {
        let ok = "[[uid]]\nuid = 1000\nroles = [\"agent\"]\ndefault_role = \"agent\"\n\n[[credentials]]\nname = \"gh\"\nenv = \"GH_TOKEN\"\nfrom_file = \"/etc/praxis/gh\"\nroles = [\"agent\"]\nprograms = [\"gh\"]\n";
        let parsed: OperatorFile = parse("policy.toml", ok).unwrap();
        assert_eq!(parsed.uid[0].default_role, "agent");
        let bad = "[[credentials]]\nname = \"gh\"\nenv = \"GH_TOKEN\"\nsecret = \"x\"\n";
        assert_eq!(
            parse::<OperatorFile>("policy.toml", bad).unwrap_err().line,
            4
        );
    }

    #[test]
    fn a_rule_decision_is_spelled_in_lower_case() {
        let rule = |decision: &str, failure: &str| {
            format!("[[rule]]\nid = \"r\"\ndecision = \"{decision}\"\nreason = \"why\"\n{failure}")
        };
        let parsed: OperatorFile = parse("policy.toml", &rule("stop", "")).unwrap();
        assert_eq!(parsed.rules[0].decision, Verdict::Stop);
        assert_eq!(parsed.rules[0].on_precondition_failure, None);
        let failure = "on_precondition_failure = \"allow\"\n";
        let parsed: OperatorFile = parse("policy.toml", &rule("hold", failure)).unwrap();
        assert_eq!(parsed.rules[0].decision, Verdict::Hold);
        assert_eq!(
            parsed.rules[0].on_precondition_failure,
            Some(Verdict::Allow)
        );
        let err = parse::<OperatorFile>("policy.toml", &rule("HOLD", "")).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert_eq!(
            err.message,
            "unknown variant `HOLD`, expected one of `stop`, `hold`, `allow`"
        );
    }
}
