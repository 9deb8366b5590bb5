//! The public entry point: a loaded, validated [`Policy`] and its two-phase
//! decision ([`Policy::analyze`] then [`Policy::decide`]).
//!
//! SCAFFOLD: signatures are fixed; bodies are filled in by the rule engine work.

use std::path::PathBuf;

use crate::decision::Decision;
use crate::shell::Script;
use crate::{Context, Profile, Tier, Verdict};

/// The built-in review surface, embedded in every binary.
pub const BUILTIN_PATTERNS: &str = include_str!("../patterns.toml");

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

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

#[derive(Clone, Debug)]
pub struct Policy {
    revision: String,
    sandbox: SandboxLists,
    limits: Limits,
}

impl Policy {
    pub fn load(patterns: Source<'_>, operator: Option<Source<'_>>) -> Result<Policy, LoadError> {
        let _ = (patterns, operator);
        Ok(Policy {
            revision: String::from("scaffold"),
            sandbox: SandboxLists::default(),
            limits: Limits {
                timeout_secs: 600,
                output_cap_bytes: 1 << 20,
                rlimit_fsize_bytes: 1 << 32,
                rlimit_nofile: 1024,
                rlimit_cpu_secs: 3600,
            },
        })
    }

    /// The built-in `patterns.toml` alone.
    pub fn builtin() -> Result<Policy, LoadError> {
        Policy::load(Source { name: "patterns.toml", text: BUILTIN_PATTERNS }, None)
    }

    pub fn analyze(&self, request: &Request<'_>) -> Analysis {
        let _ = request;
        Analysis { script: Script::default() }
    }

    pub fn decide(&self, request: &Request<'_>, analysis: &Analysis, context: &Context) -> Decision {
        let _ = (request, analysis, context);
        Decision {
            decision: Verdict::Hold,
            tier: Tier::HighRisk,
            reason: String::from("policy engine not built yet"),
            rule_ids: Vec::new(),
            profile: Profile::ReadOnly,
            network: false,
            escalation: false,
            commands: Vec::new(),
            policy_revision: self.revision.clone(),
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

    /// Paths the request names, to be checked for existence into [`Context::existing`].
    pub fn paths_to_probe(&self, analysis: &Analysis, context: &Context) -> Vec<PathBuf> {
        let _ = (analysis, context);
        Vec::new()
    }
}
