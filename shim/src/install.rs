//! `praxis install claude-code [--project|--user]` and `praxis install codex`:
//! adds the praxis hooks to the runtime's hook configuration. Idempotent: a
//! previous praxis entry is replaced, every other hook and setting is kept.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{Map, Value, json};

#[derive(Debug, Subcommand)]
pub enum InstallCmd {
    /// Claude Code: PreToolUse, PostToolUse and Stop hooks in settings.json.
    ClaudeCode {
        /// In this project's `.claude/settings.json` (the default).
        #[arg(long, conflicts_with = "user")]
        project: bool,
        /// In `~/.claude/settings.json`, for every project.
        #[arg(long)]
        user: bool,
    },
    /// Codex: PreToolUse, PostToolUse and Stop hooks in `~/.codex/hooks.json`.
    Codex,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0} is not a JSON object with a `hooks` object: {1}")]
    Shape(String, String),
    #[error("no home directory (HOME is not set)")]
    NoHome,
}

/// Tools whose calls the Claude Code hook judges: every one, so a tool
/// Praxis has no rule for meets the unknown-tool posture instead of going unseen.
pub const CLAUDE_MATCHER: &str = "*";

/// Tools whose calls the Codex hook judges: shell commands (`Bash`), file
/// edits (`apply_patch`, judged on the files its patch names) and MCP tool
/// calls (`mcp__SERVER__TOOL`). Codex's own planning and viewing tools stay
/// unjudged: Codex has no `ask`, so the unknown-tool HOLD would refuse them.
pub const CODEX_MATCHER: &str = "^(Bash|apply_patch|mcp__.+)$";

/// What the user does once so that Codex runs the installed hooks: Codex
/// keeps, per hook, the hash of the hook the user reviewed and trusted, and
/// runs a user hook only while it matches.
pub const CODEX_TRUST_STEP: &str = "start codex, type /hooks, review the three praxis hooks (PreToolUse, PostToolUse, Stop) and trust them; Codex runs no user hook until it is trusted, and asks again whenever the hook changes";

/// What to install where.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub file: PathBuf,
    /// The hook command, which also identifies our entries on reinstall.
    pub command: String,
    /// `(event, matcher)` pairs; no matcher for events that take none.
    pub events: Vec<(&'static str, Option<&'static str>)>,
}

impl Plan {
    pub fn for_cmd(cmd: &InstallCmd, praxis_run: &Path) -> Result<Plan, InstallError> {
        let home = || {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .ok_or(InstallError::NoHome)
        };
        let hook = |runtime: &str| format!("'{}' hook {runtime}", praxis_run.display());
        Ok(match cmd {
            InstallCmd::ClaudeCode { user, .. } => Plan {
                file: if *user {
                    home()?.join(".claude/settings.json")
                } else {
                    project_root()?.join(".claude/settings.json")
                },
                command: hook("claude-code"),
                events: vec![
                    ("PreToolUse", Some(CLAUDE_MATCHER)),
                    ("PostToolUse", Some(CLAUDE_MATCHER)),
                    ("Stop", None),
                ],
            },
            InstallCmd::Codex => Plan {
                file: home()?.join(".codex/hooks.json"),
                command: hook("codex"),
                events: vec![
                    ("PreToolUse", Some(CODEX_MATCHER)),
                    ("PostToolUse", Some(CODEX_MATCHER)),
                    ("Stop", None),
                ],
            },
        })
    }

    /// `settings` with our hooks in place of any earlier praxis entries.
    pub fn apply(&self, mut settings: Value) -> Result<Value, String> {
        let root = settings
            .as_object_mut()
            .ok_or("the file is not a JSON object")?;
        let hooks = root
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or("`hooks` is not an object")?;
        for (event, matcher) in &self.events {
            let groups = hooks
                .entry(*event)
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .ok_or_else(|| format!("`hooks.{event}` is not an array"))?;
            groups.retain_mut(|group| !self.strip_ours(group));
            let mut group = json!({
                "hooks": [{ "type": "command", "command": self.command, "timeout": 30 }]
            });
            if let Some(m) = matcher {
                group["matcher"] = Value::String((*m).to_owned());
            }
            groups.push(group);
        }
        Ok(settings)
    }

    /// Removes our hook commands from a matcher group; true when none is left.
    fn strip_ours(&self, group: &mut Value) -> bool {
        let marker = self.command.rsplit('\'').next().unwrap_or(&self.command);
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return false;
        };
        list.retain(|h| {
            !h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| c.contains("praxis-run") && c.ends_with(marker))
        });
        list.is_empty()
    }
}

/// The project a project-scope install belongs to: the nearest directory up
/// from here that holds `.git` (or `.claude`), else the current directory.
fn project_root() -> Result<PathBuf, InstallError> {
    let here = std::env::current_dir().map_err(|e| InstallError::Io(String::from("."), e))?;
    Ok(here
        .ancestors()
        .find(|dir| dir.join(".git").exists() || dir.join(".claude").is_dir())
        .unwrap_or(&here)
        .to_path_buf())
}

/// Reads, updates and atomically rewrites the configuration file.
fn install(plan: &Plan) -> Result<(), InstallError> {
    let name = plan.file.display().to_string();
    let io = |e| InstallError::Io(name.clone(), e);
    let current = match std::fs::read_to_string(&plan.file) {
        Ok(text) if text.trim().is_empty() => json!({}),
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| InstallError::Shape(name.clone(), e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(io(e)),
    };
    let updated = plan
        .apply(current)
        .map_err(|why| InstallError::Shape(name.clone(), why))?;
    if let Some(dir) = plan.file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = plan.file.with_extension("json.praxis-tmp");
    let text = serde_json::to_string_pretty(&updated).unwrap_or_default() + "\n";
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &plan.file).map_err(io)
}

/// `praxis-run` next to this binary, else by name on PATH.
fn praxis_run() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("praxis-run")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("praxis-run"))
}

pub fn run(cmd: InstallCmd) -> i32 {
    let codex = matches!(cmd, InstallCmd::Codex);
    let done = Plan::for_cmd(&cmd, &praxis_run()).and_then(|plan| install(&plan).map(|()| plan));
    match done {
        Ok(plan) => {
            println!(
                "praxis hooks installed in {} ({})",
                plan.file.display(),
                plan.command
            );
            // The trust record is the user's review of the hook, kept by
            // Codex; an installer that wrote it would vouch for itself.
            if codex {
                println!("one step left: {CODEX_TRUST_STEP}");
                println!("then `praxis doctor` (or `praxis status`) shows them as trusted");
            }
            0
        }
        Err(e) => {
            eprintln!("praxis install: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan::for_cmd(
            &InstallCmd::ClaudeCode {
                project: true,
                user: false,
            },
            Path::new("/opt/praxis/praxis-run"),
        )
        .unwrap()
    }

    #[test]
    fn keeps_other_hooks_and_settings_and_is_idempotent() {
        let theirs = json!({
            "model": "x",
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]
            }
        });
        let once = plan().apply(theirs).unwrap();
        let twice = plan().apply(once.clone()).unwrap();
        assert_eq!(once, twice);
        assert_eq!(once["model"], "x");
        assert_eq!(
            once["hooks"]["Notification"][0]["hooks"][0]["command"],
            "notify.sh"
        );
        let pre = once["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "lint.sh");
        assert_eq!(pre[1]["matcher"], CLAUDE_MATCHER);
        assert_eq!(
            pre[1]["hooks"][0]["command"],
            "'/opt/praxis/praxis-run' hook claude-code"
        );
        assert!(once["hooks"]["Stop"][0].get("matcher").is_none());
    }

    #[test]
    fn a_moved_binary_replaces_the_old_entry() {
        let old = Plan::for_cmd(
            &InstallCmd::ClaudeCode {
                project: true,
                user: false,
            },
            Path::new("/old/praxis-run"),
        )
        .unwrap()
        .apply(json!({}))
        .unwrap();
        let new = plan().apply(old).unwrap();
        assert_eq!(new["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn codex_hooks_see_shell_patch_and_mcp_calls() {
        let plan = Plan::for_cmd(&InstallCmd::Codex, Path::new("/opt/praxis/praxis-run")).unwrap();
        let hooks = plan.apply(json!({})).unwrap();
        for event in ["PreToolUse", "PostToolUse"] {
            assert_eq!(hooks["hooks"][event][0]["matcher"], CODEX_MATCHER);
        }
        // Codex reads a matcher with `^` as a regular expression (the
        // `regex` crate), matched against the tool name.
        let matcher = regex::Regex::new(CODEX_MATCHER).unwrap();
        for tool in ["Bash", "apply_patch", "mcp__github__create_issue"] {
            assert!(matcher.is_match(tool), "{tool}");
        }
        for tool in ["update_plan", "BashOutput", "view_image", "mcp__"] {
            assert!(!matcher.is_match(tool), "{tool}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_update_safely() {
        assert!(plan().apply(json!([])).is_err());
        assert!(plan().apply(json!({"hooks": []})).is_err());
        assert!(plan().apply(json!({"hooks": {"Stop": {}}})).is_err());
    }
}
