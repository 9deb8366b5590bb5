//! What a user meets past the quick start, run as they would: the OpenClaw
//! plugin's install checks and its headless HOLD, undo's list and refusals,
//! `explain` agreeing with praxisd, the operator CLI's text, and the
//! Makefile's targets.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{Daemon, repo};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A built praxis plugin folder under `dir`: manifest, package.json, entry.
fn built_plugin(dir: &Path) -> std::path::PathBuf {
    let plugin = dir.join("plugin");
    let source = repo().join("integrations/openclaw");
    std::fs::create_dir_all(plugin.join("dist")).unwrap();
    for file in ["openclaw.plugin.json", "package.json"] {
        std::fs::copy(source.join(file), plugin.join(file)).unwrap();
    }
    plugin
}

#[test]
fn install_openclaw_refuses_an_unbuilt_plugin_and_one_holding_node_modules() {
    let d = Daemon::start();
    let config = d.home().join("openclaw.json");
    let install = |plugin: &Path| {
        d.cmd(&common::bin("praxis"))
            .args(["install", "openclaw", "--plugin"])
            .arg(plugin)
            .env("OPENCLAW_CONFIG_PATH", &config)
            .output()
            .unwrap()
    };
    let plugin = built_plugin(&d.home());

    let out = install(&plugin);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        text(&out).contains("not built: ./dist/index.js is missing"),
        "{}",
        text(&out)
    );
    assert!(!config.exists(), "nothing written for an unbuilt plugin");

    std::fs::write(plugin.join("dist/index.js"), "export default {};\n").unwrap();
    std::fs::create_dir_all(plugin.join("node_modules/openclaw")).unwrap();
    let out = install(&plugin);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        text(&out).contains("holds a node_modules folder"),
        "{}",
        text(&out)
    );
    assert!(
        !config.exists(),
        "nothing written for a plugin with node_modules"
    );

    std::fs::remove_dir_all(plugin.join("node_modules")).unwrap();
    let out = install(&plugin);
    assert!(out.status.success(), "{}", text(&out));
    assert!(config.is_file());
}

/// `praxis-run hook openclaw` on a held exec, with the plugin's `approvals`.
fn held_exec(d: &Daemon, approvals: Option<&str>) -> serde_json::Value {
    let mut event = serde_json::json!({
        "hook_event_name": "before_tool_call",
        "session_id": "oc-headless",
        "tool_name": "exec",
        "tool_input": { "command": "curl -fsS https://example.com -o got.txt" },
        "tool_use_id": "oc-call-1",
        "cwd": d.work(),
    });
    if let Some(who) = approvals {
        event["approvals"] = who.into();
    }
    let out = d.praxis_run(&["hook", "openclaw"], &event.to_string());
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)))
}

#[test]
fn a_headless_openclaw_hold_names_the_approve_command_and_mints_no_token() {
    let d = Daemon::start();
    // OpenClaw's own prompt can answer: the rewrite carries a one-time token.
    let prompted = held_exec(&d, None);
    assert_eq!(prompted["decision"], "HOLD", "{prompted}");
    assert!(
        prompted["params"]["command"]
            .as_str()
            .unwrap_or_default()
            .contains("--approval-token"),
        "{prompted}"
    );
    // Only an operator can answer: no token, and the reason says how.
    let headless = held_exec(&d, Some("operator"));
    assert_eq!(headless["decision"], "HOLD", "{headless}");
    let reason = headless["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("an operator can allow it with `praxis approve r-"),
        "{headless}"
    );
    assert!(
        !headless.to_string().contains("--approval-token"),
        "{headless}"
    );
}

/// `make -n TARGET` with `CARGO_TARGET_DIR` set: the commands it would run.
fn make_dry_run(target: &str, target_dir: &str) -> String {
    let out = Command::new("make")
        .args(["-n", target])
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn make_demo_and_bench_process_use_the_binaries_of_cargo_target_dir() {
    for (target, script) in [
        ("demo", "scripts/demo.sh"),
        ("bench-process", "bench/whole_process.sh"),
    ] {
        let planned = make_dry_run(target, "/elsewhere/build");
        let line = planned
            .lines()
            .find(|l| l.contains(script))
            .unwrap_or_else(|| panic!("{target}: {planned}"));
        assert!(line.ends_with("/elsewhere/build/release"), "{line}");
    }
}

#[test]
fn install_claude_code_help_names_every_hook_it_installs() {
    let help = Command::new(common::bin("praxis"))
        .args(["install", "claude-code", "--help"])
        .output()
        .unwrap();
    let said = text(&help);
    for event in [
        "PreToolUse",
        "PostToolUse,",
        "PostToolUseFailure",
        "Stop",
        "SessionStart",
        "UserPromptSubmit",
    ] {
        assert!(said.contains(event), "{event}: {said}");
    }
}

#[test]
fn memory_stats_prints_text_unless_json() {
    let d = Daemon::start();
    let out = d.praxis(&["memory", "stats"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        !said.trim_start().starts_with('{') && said.contains("decisions: 0"),
        "{said}"
    );
    let out = d.praxis(&["memory", "stats", "--json"]);
    assert_eq!(common::stdout_json(&out)["decisions"], 0);
}

#[test]
fn the_documented_review_restrict_example_narrows_a_remembered_lesson() {
    let d = Daemon::start();
    common::judge::pushable_repo(&d.work());
    let lesson = common::judge::remembered(&d, "feature/a");
    // The example as docs/operator.md gives it, with the lesson for ITEM.
    let doc = std::fs::read_to_string(repo().join("docs/operator.md")).unwrap();
    let example = doc
        .lines()
        .find_map(|l| l.strip_prefix("praxis review restrict ITEM "))
        .expect("docs/operator.md shows praxis review restrict");
    let mut args = vec!["review", "restrict", lesson.as_str()];
    args.extend(example.split('#').next().unwrap().split_whitespace());
    let out = d.praxis(&args);
    assert!(out.status.success(), "{args:?}: {}", text(&out));

    // A remembered lesson already names the held request's role: another
    // role would widen it, and is refused.
    let out = d.praxis(&["review", "restrict", &lesson, "--role", "ci"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("already covers another role"),
        "{}",
        text(&out)
    );
}

/// The decision and rules of `praxis explain --json` and of the daemon's
/// `praxis-run judge --json` for one command.
fn explained_and_judged(d: &Daemon, extra: &[&str], command: &str) -> [(String, String); 2] {
    let pick = |out: &Output| {
        let last = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned();
        let v: serde_json::Value =
            serde_json::from_str(&last).unwrap_or_else(|_| panic!("{}", text(out)));
        (v["decision"].to_string(), v["rule_ids"].to_string())
    };
    let mut explain = vec!["explain", "--json"];
    explain.extend(extra);
    explain.extend(["-c", command]);
    let mut judge = vec!["judge", "--json"];
    judge.extend(extra);
    judge.extend(["-c", command]);
    [pick(&d.praxis(&explain)), pick(&d.run(&judge))]
}

#[test]
fn explain_judges_against_the_passwd_home_as_praxisd_does() {
    let d = Daemon::start();
    // The clients' $HOME is the scratch home; praxisd looks the caller's
    // home up in the user database.
    let command = format!("rm -rf {}", d.home().display());
    let [explained, judged] = explained_and_judged(&d, &[], &command);
    assert_eq!(explained, judged, "{command}");
}

#[test]
fn explain_judges_a_ci_push_on_the_branch_it_writes() {
    let d = Daemon::start_in_git();
    let git = |args: &[&str]| {
        let out = d.cmd(Path::new("git")).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
    };
    git(&["checkout", "-q", "-b", "master"]);
    git(&["remote", "add", "origin", "https://github.com/acme/app.git"]);
    let out = d.praxis(&[
        "explain",
        "--role",
        "ci",
        "--",
        "git",
        "push",
        "origin",
        "feature/x",
    ]);
    let said = text(&out);
    assert!(!said.contains("is protected"), "{said}");
    assert!(said.contains("ci-push-feature-branch"), "{said}");
}
