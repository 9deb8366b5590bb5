//! `praxis doctor`: what this machine gives Praxis or degrades, whether the
//! daemon, the policy, the agent runtimes' hooks and the credentials are in
//! order, and a fix for everything that is not.

use std::path::{Path, PathBuf};

use praxis_proto::{Layout, Mode, OperatorReply, OperatorRequest, StatusReport};
use serde::Serialize;

use crate::client;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warn,
    Fail,
}

/// One finding: what was checked, what was found, and how to fix it.
#[derive(Debug, Serialize)]
struct Finding {
    check: &'static str,
    level: Level,
    found: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn ok(check: &'static str, found: impl Into<String>) -> Finding {
    Finding {
        check,
        level: Level::Ok,
        found: found.into(),
        fix: None,
    }
}

fn not_ok(
    check: &'static str,
    level: Level,
    found: impl Into<String>,
    fix: impl Into<String>,
) -> Finding {
    Finding {
        check,
        level,
        found: found.into(),
        fix: Some(fix.into()),
    }
}

fn kernel(out: &mut Vec<Finding>) {
    let support = praxis_sandbox::support();
    out.push(match support.landlock_abi {
        abi if abi >= 6 => ok("landlock", format!("ABI {abi}: filesystem, network and scope rules enforced")),
        0 => not_ok("landlock", Level::Fail, "Landlock is not enabled: every request is HOLD",
            "boot a kernel with Landlock in its LSM list (lsm=landlock,... on the kernel command line)"),
        abi => not_ok("landlock", Level::Fail, format!("ABI {abi}: praxisd needs 6 or later, so every request is HOLD"),
            "use Linux 6.7 or later"),
    });
    out.push(if support.seccomp {
        ok("seccomp", "available")
    } else {
        not_ok(
            "seccomp",
            Level::Fail,
            "not available: every request is HOLD",
            "use a kernel built with CONFIG_SECCOMP_FILTER",
        )
    });
    out.push(if support.mount_pins {
        ok("namespaces", "protected paths inside the workspace are pinned read-only with mounts")
    } else {
        not_ok("namespaces", Level::Warn,
            "no user namespaces and no CAP_SYS_ADMIN: protected paths are kept with Landlock alone, so the workspace root is read-only",
            "allow unprivileged user namespaces (sysctl user.max_user_namespaces=15000, and kernel.unprivileged_userns_clone=1 where it exists), or run praxisd as root in system mode")
    });
}

fn daemon(out: &mut Vec<Finding>) -> Option<StatusReport> {
    let status = match client::operator(OperatorRequest::Status, |_| {}) {
        Ok(OperatorReply::Status(s)) => *s,
        Ok(other) => {
            out.push(not_ok(
                "daemon",
                Level::Fail,
                format!("unexpected answer: {other:?}"),
                "restart praxisd",
            ));
            return None;
        }
        Err(e) => {
            let fix = match Layout::detect().mode {
                Mode::System => {
                    "systemctl start praxisd (and systemctl status praxisd for why it stopped)"
                }
                Mode::User => {
                    "check that praxisd is installed next to praxis (make install), then run praxis status"
                }
            };
            out.push(not_ok("daemon", Level::Fail, e.to_string(), fix));
            return None;
        }
    };
    out.push(ok(
        "daemon",
        format!(
            "reachable, {} mode, pid {}, socket {}",
            status.mode, status.pid, status.socket
        ),
    ));
    out.push(if status.self_test.starts_with("passed") {
        ok("sandbox", status.self_test.clone())
    } else {
        not_ok(
            "sandbox",
            Level::Fail,
            status.self_test.clone(),
            "see the reason; praxisd serves only HOLD until the self-test passes",
        )
    });
    out.push(if status.process_tracking.starts_with("cgroup") {
        ok("processes", format!("tracked by {}", status.process_tracking))
    } else {
        not_ok("processes", Level::Warn,
            format!("{}: a descendant that calls setsid can outlive its command", status.process_tracking),
            "give praxisd a delegated cgroup v2 subtree (systemd: Delegate=yes, as the shipped unit does), or run it as root")
    });
    if let Some(why) = &status.hold_all {
        out.push(not_ok(
            "policy in force",
            Level::Fail,
            why.clone(),
            "fix the policy file (praxis policy check), then praxis reload",
        ));
    }
    if let Some(why) = &status.audit_problem {
        out.push(not_ok("audit store", Level::Fail, why.clone(),
            "look into it (praxis audit verify); to accept it as it is, stop praxisd, move audit.anchor aside and start it again"));
    }
    if let Some(reason) = &status.kill_switch {
        out.push(not_ok(
            "kill switch",
            Level::Warn,
            format!("engaged: {reason}"),
            "praxis kill --release once it is safe",
        ));
    }
    Some(status)
}

fn policy(out: &mut Vec<Finding>) {
    let (file, loaded) = crate::explain::operator_policy();
    out.push(match loaded {
        Ok(policy) => ok("policy", format!("valid ({} rules, revision {})", policy.rules().len(), &policy.revision()[..12])),
        Err(why) => not_ok("policy", Level::Fail, format!("{}: {why}", file.display()),
            "praxis policy check names the rule and the example; a bad file keeps the last good policy"),
    });
}

/// A program's path on PATH, looked up without running anything.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// Whether the hooks file at `path` calls praxis-run, and the praxis-run it names.
fn hook_in(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let start = text.find("praxis-run")?;
    let quoted = text[..start]
        .rfind('\'')
        .map(|q| &text[q + 1..start + "praxis-run".len()]);
    Some(quoted.unwrap_or("praxis-run").to_owned())
}

fn runtime(
    out: &mut Vec<Finding>,
    name: &'static str,
    program: &str,
    hooks: &[PathBuf],
    install: &str,
) {
    let ours = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("praxis-run")))
        .map(|p| p.display().to_string());
    let installed = on_path(program);
    let found = hooks.iter().find_map(|h| hook_in(h).map(|cmd| (h, cmd)));
    out.push(match (installed, found) {
        (None, None) => ok(name, format!("`{program}` not installed, no hooks")),
        (_, Some((file, cmd)))
            if ours.as_ref().is_some_and(|o| *o != cmd) && cmd != "praxis-run" =>
        {
            not_ok(
                name,
                Level::Warn,
                format!(
                    "hooks in {} call {cmd}, not this praxis-run",
                    file.display()
                ),
                format!("{install} (rewrites them to this praxis-run)"),
            )
        }
        (_, Some((file, _))) => ok(name, format!("hooks present in {}", file.display())),
        (Some(bin), None) => not_ok(
            name,
            Level::Warn,
            format!(
                "{} is installed but its commands do not go through praxis",
                bin.display()
            ),
            install.to_owned(),
        ),
    });
}

fn runtimes(out: &mut Vec<Finding>) {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let project = std::env::current_dir().ok().and_then(|here| {
        here.ancestors()
            .find(|d| d.join(".git").exists())
            .map(|d| d.join(".claude/settings.json"))
    });
    let mut claude = vec![home.join(".claude/settings.json")];
    claude.extend(project);
    runtime(
        out,
        "claude code",
        "claude",
        &claude,
        "praxis install claude-code",
    );
    let codex_hooks = home.join(".codex/hooks.json");
    runtime(
        out,
        "codex",
        "codex",
        std::slice::from_ref(&codex_hooks),
        "praxis install codex",
    );
    // Trust is Codex's record: with no Codex to keep it, there is none to check.
    out.extend(codex_trust_at(&home).map(|finding| match on_path("codex") {
        Some(_) => finding,
        None => ok(
            "codex trust",
            "skipped: `codex` is not installed; trust the praxis hooks in Codex (/hooks) once it is",
        ),
    }));
}

/// The Codex hook check for the user's Codex home, when praxis hooks are installed there.
fn codex_trust_at(home: &Path) -> Option<Finding> {
    let hooks = home.join(".codex/hooks.json");
    let hooks_text = std::fs::read_to_string(&hooks).ok()?;
    hook_in(&hooks)?;
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap_or_default();
    Some(codex_trust(&config, &hooks_text, &hooks))
}

/// One line for `praxis status`: whether Codex runs the praxis hooks.
pub fn codex_hooks_summary() -> Option<String> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let finding = codex_trust_at(&home)?;
    Some(match finding.fix {
        None => finding.found,
        Some(fix) => format!("{} (fix: {fix})", finding.found),
    })
}

/// Codex's feature flag for hooks: `hooks` now, `codex_hooks` before (still
/// read as an alias). Hooks run unless one of them is set to false.
const CODEX_HOOKS_FLAG: &str = "hooks";
const CODEX_HOOKS_FLAG_OLD: &str = "codex_hooks";

/// The `[hooks.state]` keys of the praxis hooks in `hooks_text` (the hooks
/// file at `hooks`), as Codex forms them: file, event, matcher group index
/// and handler index.
fn praxis_hook_keys(hooks_text: &str, hooks: &Path) -> Vec<String> {
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(hooks_text) else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    for (event, label) in [
        ("PreToolUse", "pre_tool_use"),
        ("PostToolUse", "post_tool_use"),
        ("Stop", "stop"),
    ] {
        let groups = parsed["hooks"][event]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (g, group) in groups.iter().enumerate() {
            let handlers = group["hooks"].as_array().cloned().unwrap_or_default();
            for (h, handler) in handlers.iter().enumerate() {
                let command = handler["command"].as_str().unwrap_or_default();
                if command.contains("praxis-run") && command.ends_with("hook codex") {
                    keys.push(format!("{}:{label}:{g}:{h}", hooks.display()));
                }
            }
        }
    }
    keys
}

/// Codex runs a user hook only if hooks are on and the hook is enabled and
/// trusted: its user `config.toml` keeps, under `[hooks.state]`, one entry
/// per hook keyed by the hooks file, event and position, with `enabled` and
/// `trusted_hash` (the hash of the hook the user reviewed; Codex compares it
/// with the hook as it is now).
fn codex_trust(config: &str, hooks_text: &str, hooks: &Path) -> Finding {
    let config = config.parse::<toml::Table>().unwrap_or_default();
    let flag_off = [CODEX_HOOKS_FLAG, CODEX_HOOKS_FLAG_OLD]
        .iter()
        .find(|flag| {
            config
                .get("features")
                .and_then(|f| f.get(**flag))
                .and_then(toml::Value::as_bool)
                == Some(false)
        });
    if let Some(flag) = flag_off {
        return not_ok(
            "codex trust",
            Level::Fail,
            format!("Codex hooks are off: `[features] {flag} = false` in ~/.codex/config.toml"),
            format!(
                "remove that line or set `[features] {CODEX_HOOKS_FLAG} = true` (the flag's current name)"
            ),
        );
    }
    let states = config
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let keys = praxis_hook_keys(hooks_text, hooks);
    let state = |key: &String| states.and_then(|s| s.get(key));
    let disabled: Vec<&String> = keys
        .iter()
        .filter(|k| {
            state(k)
                .and_then(|s| s.get("enabled"))
                .and_then(toml::Value::as_bool)
                == Some(false)
        })
        .collect();
    let untrusted: Vec<&String> = keys
        .iter()
        .filter(|k| state(k).and_then(|s| s.get("trusted_hash")).is_none())
        .collect();
    let fix = crate::install::CODEX_TRUST_STEP;
    if !disabled.is_empty() {
        return not_ok(
            "codex trust",
            Level::Fail,
            format!(
                "{} praxis hook(s) disabled in ~/.codex/config.toml",
                disabled.len()
            ),
            fix,
        );
    }
    if !untrusted.is_empty() {
        return not_ok(
            "codex trust",
            Level::Fail,
            format!(
                "{} of {} praxis hooks not trusted: Codex does not run untrusted user hooks",
                untrusted.len(),
                keys.len()
            ),
            fix,
        );
    }
    ok(
        "codex trust",
        format!(
            "{} praxis hooks trusted and enabled, feature `{CODEX_HOOKS_FLAG}` on (Codex re-checks each trust against the hook as it is now)",
            keys.len()
        ),
    )
}

fn credentials(out: &mut Vec<Finding>) {
    let Ok(OperatorReply::Credentials { items }) =
        client::operator(OperatorRequest::CredList, |_| {})
    else {
        return;
    };
    for c in items {
        out.push(match c.problem {
            None => ok(
                "credential",
                format!("{} ({} source): resolvable", c.name, c.source_kind),
            ),
            Some(why) => not_ok(
                "credential",
                Level::Fail,
                format!(
                    "{}: {why}; commands that would get it run without it",
                    c.name
                ),
                format!("fix its source, or praxis cred revoke {}", c.name),
            ),
        });
    }
}

fn space(out: &mut Vec<Finding>, status: Option<&StatusReport>) {
    let dir = status.map_or_else(
        || Layout::detect().state_dir,
        |s| PathBuf::from(&s.state_dir),
    );
    let Ok(fs) = nix::sys::statvfs::statvfs(&dir) else {
        return;
    };
    let free = fs.blocks_available().saturating_mul(fs.fragment_size());
    let mib = free >> 20;
    out.push(match mib {
        m if m >= 256 => ok(
            "disk",
            format!("{m} MiB free for the audit store in {}", dir.display()),
        ),
        m if m >= 16 => not_ok(
            "disk",
            Level::Warn,
            format!("{m} MiB free in {}", dir.display()),
            "free space there: when it fills, praxisd records what it must and refuses new work",
        ),
        m => not_ok(
            "disk",
            Level::Fail,
            format!("{m} MiB free in {}", dir.display()),
            "free space there: praxisd refuses new work until the audit reserve fits again",
        ),
    });
}

/// Runs every check; exits 1 when one fails.
pub fn run(json: bool) -> i32 {
    let mut out = Vec::new();
    kernel(&mut out);
    let status = daemon(&mut out);
    policy(&mut out);
    runtimes(&mut out);
    if status.is_some() {
        credentials(&mut out);
    }
    space(&mut out, status.as_ref());
    if json {
        println!("{}", serde_json::to_string(&out).unwrap_or_default());
    } else {
        for f in &out {
            let tag = match f.level {
                Level::Ok => "ok  ",
                Level::Warn => "WARN",
                Level::Fail => "FAIL",
            };
            println!("{tag} {:<12} {}", f.check, f.found);
            if let Some(fix) = &f.fix {
                println!("     {:<12} fix: {fix}", "");
            }
        }
    }
    i32::from(out.iter().any(|f| f.level == Level::Fail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_trust_is_read_from_the_hook_state_table() {
        let hooks = Path::new("/home/dev/.codex/hooks.json");
        let plan = crate::install::Plan::for_cmd(
            &crate::install::InstallCmd::Codex,
            Path::new("/opt/praxis-run"),
        );
        // Someone else's hook first, so ours sit at group index 1.
        let theirs = serde_json::json!({"hooks": {
            "PreToolUse": [{"hooks": [{"type": "command", "command": "lint.sh"}]}]}});
        let text = plan.unwrap().apply(theirs).unwrap().to_string();
        let none = codex_trust("model = \"x\"\n", &text, hooks);
        assert_eq!(none.level, Level::Fail);
        assert!(none.found.starts_with("3 of 3"), "{}", none.found);
        let entry = |key: &str, extra: &str| {
            format!(
                "[hooks.state.\"/home/dev/.codex/hooks.json:{key}\"]\ntrusted_hash = \"sha256:ab\"\n{extra}"
            )
        };
        let all = [
            entry("pre_tool_use:1:0", ""),
            entry("post_tool_use:0:0", ""),
            entry("stop:0:0", ""),
        ]
        .concat();
        let trusted = codex_trust(&all, &text, hooks);
        assert_eq!(trusted.level, Level::Ok, "{}", trusted.found);
        assert!(
            trusted.found.contains("feature `hooks` on"),
            "{}",
            trusted.found
        );
        // Trust of another hook's position is not ours.
        let wrong = all.replace("pre_tool_use:1:0", "pre_tool_use:0:0");
        assert_eq!(codex_trust(&wrong, &text, hooks).level, Level::Fail);
        let disabled = all.replace("stop:0:0\"]\n", "stop:0:0\"]\nenabled = false\n");
        assert_eq!(codex_trust(&disabled, &text, hooks).level, Level::Fail);
        for flag in ["hooks", "codex_hooks"] {
            let off = format!("[features]\n{flag} = false\n{all}");
            let finding = codex_trust(&off, &text, hooks);
            assert_eq!(finding.level, Level::Fail);
            assert!(finding.found.contains(flag), "{}", finding.found);
        }
    }
}
