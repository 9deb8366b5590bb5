//! `praxis install claude-code [--project|--user]`, `praxis install codex`
//! and `praxis install openclaw`: adds the praxis hooks (for OpenClaw, the
//! praxis plugin) to the runtime's configuration. Idempotent: a previous
//! praxis entry is replaced, every other hook, plugin and setting is kept.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{Map, Value, json};

#[derive(Debug, Subcommand)]
pub enum InstallCmd {
    /// Claude Code: PreToolUse, PostToolUse, PostToolUseFailure, Stop,
    /// SessionStart and UserPromptSubmit hooks in settings.json.
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
    /// OpenClaw: the praxis plugin in `~/.openclaw/openclaw.json` (or
    /// `$OPENCLAW_CONFIG_PATH`): its load path and its enabled entry.
    Openclaw {
        /// The built plugin directory (holding `openclaw.plugin.json`, its
        /// `package.json` and the built entry, and no `node_modules`; `make
        /// openclaw-plugin` makes one); default `../share/praxis/openclaw`
        /// beside this binary.
        #[arg(long, value_name = "DIR")]
        plugin: Option<PathBuf>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("cannot update {0}: {1}")]
    Shape(String, String),
    #[error("no home directory (HOME is not set)")]
    NoHome,
    #[error(
        "{0} is not the built praxis plugin for OpenClaw (no openclaw.plugin.json with id `praxis`); build integrations/openclaw with `npm ci && npm run build` and pass --plugin DIR"
    )]
    NoPlugin(String),
    #[error(
        "{0} is the praxis plugin for OpenClaw, not built: {1} is missing; run `npm ci --ignore-scripts && npm run build` in integrations/openclaw (or `make openclaw-plugin`)"
    )]
    Unbuilt(String, String),
    #[error(
        "{0} holds a node_modules folder, which makes OpenClaw abort every turn (the plugin's entry is then outside its captured source package); pass a folder with only openclaw.plugin.json, package.json and dist/ (`make openclaw-plugin` makes one)"
    )]
    OwnModules(String),
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
    pub edit: Edit,
}

/// The change made to the configuration file.
#[derive(Debug, PartialEq, Eq)]
pub enum Edit {
    /// Command hooks (Claude Code, Codex).
    Hooks {
        /// The hook command, which also identifies our entries on reinstall.
        command: String,
        /// `(event, matcher)` pairs; no matcher for events that take none.
        events: Vec<(&'static str, Option<&'static str>)>,
    },
    /// OpenClaw's plugin settings: the plugin's load path and its entry.
    Plugin { dir: PathBuf, praxis_run: PathBuf },
}

/// The plugin's id in OpenClaw (`openclaw.plugin.json`).
pub const OPENCLAW_PLUGIN_ID: &str = "praxis";

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
                edit: Edit::Hooks {
                    command: hook("claude-code"),
                    events: vec![
                        ("PreToolUse", Some(CLAUDE_MATCHER)),
                        ("PostToolUse", Some(CLAUDE_MATCHER)),
                        // A failed call comes only as PostToolUseFailure.
                        ("PostToolUseFailure", Some(CLAUDE_MATCHER)),
                        ("Stop", None),
                        // Lifecycle events feed the session control plane.
                        ("SessionStart", None),
                        ("UserPromptSubmit", None),
                    ],
                },
            },
            InstallCmd::Codex => Plan {
                file: home()?.join(".codex/hooks.json"),
                edit: Edit::Hooks {
                    command: hook("codex"),
                    events: vec![
                        ("PreToolUse", Some(CODEX_MATCHER)),
                        ("PostToolUse", Some(CODEX_MATCHER)),
                        ("Stop", None),
                    ],
                },
            },
            InstallCmd::Openclaw { plugin } => {
                let dir = match plugin {
                    Some(dir) => dir.clone(),
                    // Named in OpenClaw's config as `/usr/share/…`, not `/usr/bin/../share/…`.
                    None => {
                        let packaged = praxis_run
                            .parent()
                            .unwrap_or(Path::new("."))
                            .join("../share/praxis/openclaw");
                        std::fs::canonicalize(&packaged).unwrap_or(packaged)
                    }
                };
                let dir = std::path::absolute(&dir).unwrap_or(dir);
                check_plugin(&dir)?;
                Plan {
                    file: match std::env::var_os("OPENCLAW_CONFIG_PATH") {
                        Some(file) => PathBuf::from(file),
                        None => home()?.join(".openclaw/openclaw.json"),
                    },
                    edit: Edit::Plugin {
                        dir,
                        praxis_run: praxis_run.to_path_buf(),
                    },
                }
            }
        })
    }

    /// `settings` with our entries in place of any earlier praxis entries.
    pub fn apply(&self, settings: Value) -> Result<Value, String> {
        match &self.edit {
            Edit::Hooks { command, events } => apply_hooks(settings, command, events),
            Edit::Plugin { dir, praxis_run } => apply_plugin(settings, dir, praxis_run),
        }
    }

    /// What `praxis install` reports it wrote.
    fn summary(&self) -> String {
        match &self.edit {
            Edit::Hooks { command, .. } => {
                format!(
                    "praxis hooks installed in {} ({command})",
                    self.file.display()
                )
            }
            Edit::Plugin { dir, .. } => format!(
                "praxis plugin for OpenClaw enabled in {} (plugins.load.paths: {}; plugins.entries.{OPENCLAW_PLUGIN_ID})",
                self.file.display(),
                dir.display()
            ),
        }
    }
}

/// Refuses a folder OpenClaw would not load the praxis plugin from: one
/// without our manifest, one whose entries (`openclaw.extensions` of its
/// `package.json`) are not built, or one holding its own `node_modules`.
fn check_plugin(dir: &Path) -> Result<(), InstallError> {
    let shown = || dir.display().to_string();
    if !is_praxis_plugin(dir) {
        return Err(InstallError::NoPlugin(shown()));
    }
    let package = std::fs::read_to_string(dir.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    let entries: Vec<&str> = package
        .as_ref()
        .and_then(|p| p.pointer("/openclaw/extensions")?.as_array())
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if entries.is_empty() {
        return Err(InstallError::Unbuilt(
            shown(),
            String::from("package.json naming the entry (openclaw.extensions)"),
        ));
    }
    if let Some(missing) = entries.iter().find(|e| !dir.join(e).is_file()) {
        return Err(InstallError::Unbuilt(shown(), (*missing).to_owned()));
    }
    if dir.join("node_modules").exists() {
        return Err(InstallError::OwnModules(shown()));
    }
    Ok(())
}

/// True when `dir` holds an OpenClaw plugin manifest with our id.
fn is_praxis_plugin(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("openclaw.plugin.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|m| m.get("id").and_then(Value::as_str) == Some(OPENCLAW_PLUGIN_ID))
}

/// OpenClaw settings with the praxis plugin loaded from `dir` and enabled,
/// its `praxisRun` set; an earlier praxis load path (the same directory, or
/// another that holds the praxis plugin) is replaced. An existing
/// `plugins.allow` list gets our id; none is created, since a list means
/// "only these".
fn apply_plugin(mut settings: Value, dir: &Path, praxis_run: &Path) -> Result<Value, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the file is not a JSON object")?;
    let plugins = object_at(root, "plugins")?;
    if plugins.get("enabled") == Some(&Value::Bool(false)) {
        return Err(String::from(
            "plugins.enabled is false: OpenClaw loads no plugin, so praxis would not run",
        ));
    }
    let denied = plugins
        .get("deny")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|id| id == OPENCLAW_PLUGIN_ID));
    if denied {
        return Err(format!("plugins.deny lists `{OPENCLAW_PLUGIN_ID}`"));
    }
    if let Some(allow) = plugins.get_mut("allow") {
        let allow = allow
            .as_array_mut()
            .ok_or("`plugins.allow` is not an array")?;
        if !allow.iter().any(|id| id == OPENCLAW_PLUGIN_ID) {
            allow.push(OPENCLAW_PLUGIN_ID.into());
        }
    }
    let dir_text = dir.display().to_string();
    let paths = object_at(plugins, "load")?
        .entry("paths")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("`plugins.load.paths` is not an array")?;
    paths.retain(|p| {
        !p.as_str()
            .is_some_and(|p| p == dir_text || is_praxis_plugin(Path::new(p)))
    });
    paths.push(Value::String(dir_text));
    let entry = object_at(object_at(plugins, "entries")?, OPENCLAW_PLUGIN_ID)?;
    entry.insert("enabled".into(), Value::Bool(true));
    object_at(entry, "config")?.insert(
        "praxisRun".into(),
        Value::String(praxis_run.display().to_string()),
    );
    Ok(settings)
}

/// The object under `key`, made when missing.
fn object_at<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    map.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("`{key}` is not an object"))
}

/// Hook settings with our hooks in place of any earlier praxis entries.
fn apply_hooks(
    mut settings: Value,
    command: &str,
    events: &[(&'static str, Option<&'static str>)],
) -> Result<Value, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the file is not a JSON object")?;
    let hooks = object_at(root, "hooks")?;
    for (event, matcher) in events {
        let groups = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not an array"))?;
        groups.retain_mut(|group| !strip_ours(group, command));
        let mut group = json!({
            "hooks": [{ "type": "command", "command": command, "timeout": crate::deadline::HOOK_TIMEOUT.as_secs() }]
        });
        if let Some(m) = matcher {
            group["matcher"] = Value::String((*m).to_owned());
        }
        groups.push(group);
    }
    Ok(settings)
}

/// Removes our hook commands from a matcher group; true when none is left.
fn strip_ours(group: &mut Value, command: &str) -> bool {
    let marker = command.rsplit('\'').next().unwrap_or(command);
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
            println!("{}", plan.summary());
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

    /// A built plugin folder: manifest, package.json and its entry.
    fn plugin_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("openclaw.plugin.json"),
            r#"{"id": "praxis", "configSchema": {}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"openclaw": {"extensions": ["./dist/index.js"]}}"#,
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("dist")).unwrap();
        std::fs::write(dir.path().join("dist/index.js"), "export default {};\n").unwrap();
        dir
    }

    fn openclaw_for(dir: &Path) -> Result<Plan, InstallError> {
        Plan::for_cmd(
            &InstallCmd::Openclaw {
                plugin: Some(dir.to_path_buf()),
            },
            Path::new("/opt/praxis/praxis-run"),
        )
    }

    fn openclaw_plan(dir: &Path) -> Plan {
        openclaw_for(dir).unwrap()
    }

    #[test]
    fn openclaw_keeps_other_plugins_and_is_idempotent() {
        let dir = plugin_dir();
        let theirs = json!({
            "agents": {"defaults": {"workspace": "~/w"}},
            "plugins": {
                "allow": ["voice-call"],
                "load": {"paths": ["/opt/voice-call"]},
                "entries": {
                    "voice-call": {"enabled": true},
                    "praxis": {"config": {"decisionTimeoutMs": 5000}}
                }
            }
        });
        let once = openclaw_plan(dir.path()).apply(theirs).unwrap();
        let twice = openclaw_plan(dir.path()).apply(once.clone()).unwrap();
        assert_eq!(once, twice);
        let plugins = &once["plugins"];
        assert_eq!(plugins["allow"], json!(["voice-call", "praxis"]));
        assert_eq!(
            plugins["load"]["paths"],
            json!(["/opt/voice-call", dir.path().display().to_string()])
        );
        assert_eq!(plugins["entries"]["voice-call"]["enabled"], true);
        let ours = &plugins["entries"]["praxis"];
        assert_eq!(ours["enabled"], true);
        assert_eq!(ours["config"]["praxisRun"], "/opt/praxis/praxis-run");
        assert_eq!(ours["config"]["decisionTimeoutMs"], 5000);
        assert_eq!(once["agents"]["defaults"]["workspace"], "~/w");
        // No allow list is made where there was none: it would mean "only praxis".
        let fresh = openclaw_plan(dir.path()).apply(json!({})).unwrap();
        assert!(fresh["plugins"].get("allow").is_none());
    }

    #[test]
    fn openclaw_a_moved_plugin_replaces_the_old_path() {
        let (old, new) = (plugin_dir(), plugin_dir());
        let before = openclaw_plan(old.path()).apply(json!({})).unwrap();
        let after = openclaw_plan(new.path()).apply(before).unwrap();
        assert_eq!(
            after["plugins"]["load"]["paths"],
            json!([new.path().display().to_string()])
        );
    }

    #[test]
    fn openclaw_refuses_what_would_leave_praxis_off() {
        let dir = plugin_dir();
        let plan = openclaw_plan(dir.path());
        assert!(plan.apply(json!({"plugins": {"enabled": false}})).is_err());
        assert!(
            plan.apply(json!({"plugins": {"deny": ["praxis"]}}))
                .is_err()
        );
        assert!(
            plan.apply(json!({"plugins": {"load": {"paths": "x"}}}))
                .is_err()
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            openclaw_for(empty.path()),
            Err(InstallError::NoPlugin(_))
        ));
    }

    fn openclaw_refusal(dir: &Path) -> Option<InstallError> {
        openclaw_for(dir).err()
    }

    #[test]
    fn openclaw_refuses_an_unbuilt_plugin_and_one_with_its_own_node_modules() {
        let dir = plugin_dir();
        assert!(openclaw_refusal(dir.path()).is_none());
        std::fs::remove_file(dir.path().join("dist/index.js")).unwrap();
        let unbuilt = openclaw_refusal(dir.path());
        assert!(
            matches!(&unbuilt, Some(InstallError::Unbuilt(_, entry)) if entry == "./dist/index.js"),
            "{unbuilt:?}"
        );
        std::fs::write(dir.path().join("dist/index.js"), "").unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        assert!(matches!(
            openclaw_refusal(dir.path()),
            Some(InstallError::OwnModules(_))
        ));
    }
}
