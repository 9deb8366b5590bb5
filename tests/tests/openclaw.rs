//! The OpenClaw plugin (`integrations/openclaw/`) inside the real `openclaw`
//! package from npm, against a real praxisd: its node:test suite loads the
//! plugin through OpenClaw's own plugin loader, from the config that
//! `praxis install openclaw` wrote, and runs OpenClaw's exec tool.
//! `make test` installs the node packages (`npm ci`) and builds the plugin.

mod common;

use common::{Daemon, bin, node, repo};

#[test]
fn the_openclaw_plugin_judges_exec_in_the_real_openclaw() {
    let Some(node) = node() else {
        eprintln!("SKIPPED: node is not installed, so the OpenClaw plugin is not tested");
        return;
    };
    let dir = repo().join("integrations/openclaw");
    assert!(
        dir.join("node_modules/openclaw/package.json").is_file()
            && dir.join("dist/index.js").is_file(),
        "the OpenClaw test needs `npm ci && npm run build` in {} (make test does it)",
        dir.display()
    );
    let d = Daemon::start_in_git();
    // The plugin as the docs install it: `make openclaw-plugin` copies the
    // built plugin, without the build's node_modules, into the target dir
    // (here a scratch one; the build itself is `make test`'s).
    let staged = d.home().join("target");
    let made = std::process::Command::new("make")
        .args([
            "-s",
            "-o",
            "integrations/openclaw/dist/index.js",
            "openclaw-plugin",
        ])
        .env("CARGO_TARGET_DIR", &staged)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(made.status.success(), "make openclaw-plugin: {made:?}");
    let plugin_dir = staged.join("openclaw-plugin");
    assert!(!plugin_dir.join("node_modules").exists());
    // OpenClaw's config as the operator gets it: `praxis install openclaw`,
    // twice (idempotent), next to a setting of the user's own.
    let config = d.home().join(".openclaw/openclaw.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, r#"{"gateway": {"port": 18789}}"#).unwrap();
    let plugin = plugin_dir.display().to_string();
    let installs: Vec<_> = (0..2)
        .map(|_| d.praxis(&["install", "openclaw", "--plugin", &plugin]))
        .collect();
    for out in &installs {
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains(&config.display().to_string()),
            "says where: {said}"
        );
    }
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(written["gateway"]["port"], 18789);
    assert_eq!(
        written["plugins"]["load"]["paths"],
        serde_json::json!([plugin])
    );
    assert_eq!(written["plugins"]["entries"]["praxis"]["enabled"], true);
    assert_eq!(
        written["plugins"]["entries"]["praxis"]["config"]["praxisRun"],
        bin("praxis-run").display().to_string()
    );

    let out = d
        .cmd(&node)
        .args(["--test", "--test-reporter=spec"])
        .args(["test/openclaw.test.mjs", "test/praxis.test.mjs"])
        .current_dir(&dir)
        .env("OPENCLAW_CONFIG_PATH", &config)
        .env("OPENCLAW_TEST_WORKSPACE", d.work())
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "OpenClaw plugin suite failed:\n{report}"
    );
    assert!(
        report.contains("ℹ fail 0") && !report.contains("ℹ pass 0"),
        "{report}"
    );
    assert!(
        !report.contains("ℹ skipped 1"),
        "the OpenClaw suite was skipped:\n{report}"
    );

    let events = d.events();
    // The allowed exec was judged for OpenClaw's session, then ran through
    // praxis-run (the rewrite carries the same ids), audited as openclaw.
    let ran: Vec<_> = events
        .iter()
        .filter(|e| e["runtime"] == "openclaw" && e["session"] == "oc-session-1")
        .collect();
    assert!(
        ran.iter().any(|e| e["kind"] == "finished"),
        "no finished command of runtime openclaw: {ran:#?}"
    );
    let decisions: Vec<_> = ran.iter().filter_map(|e| e["decision"].as_str()).collect();
    for verdict in ["ALLOW", "HOLD", "STOP"] {
        assert!(decisions.contains(&verdict), "{verdict} in {decisions:?}");
    }
    assert!(
        ["session_started", "tool_finished", "session_ended"]
            .iter()
            .all(|kind| ran.iter().any(|e| e["kind"] == *kind)),
        "session_start, after_tool_call and session_end notes: {ran:#?}"
    );
    // The inert tools were allowed by the `[runtime_tools]` rule.
    assert!(
        events.iter().any(|e| e["decision"] == "ALLOW"
            && e["runtime"] == "openclaw"
            && e["detail"]["tool_call_id"] == "oc-inert-memory_search"),
        "memory_search allowed"
    );

    // The session control plane saw the trajectory, lifecycle included.
    let list = d.praxis(&["session", "list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    let line = listed
        .lines()
        .find(|l| l.starts_with("oc-session-1 "))
        .unwrap_or_else(|| panic!("no OpenClaw session in the list:\n{listed}"));
    assert!(line.contains("openclaw"), "{line}");
    assert!(
        !line.contains("lifecycle"),
        "lifecycle signals arrive: {line}"
    );
    assert!(
        line.contains("open=none"),
        "session_end closed the window: {line}"
    );
    let show = d.praxis(&["session", "show", "oc-session-1", "--json"]);
    let kinds: Vec<serde_json::Value> = String::from_utf8_lossy(&show.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].clone())
        .collect();
    for kind in ["session_started", "tool_finished", "session_ended"] {
        assert!(
            kinds.contains(&serde_json::json!(kind)),
            "{kind} in {kinds:?}"
        );
    }
}
