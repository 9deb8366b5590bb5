//! The session control plane end to end: recorded trajectories of the
//! detector's corpus (`session/tests/trajectories`) replayed as Claude Code
//! and Codex hook events through the real `praxis-run hook claude-code|codex`
//! against a real praxisd, which judges every action itself. Steers must come back as
//! `additionalContext` at the boundaries the corpus marks and nowhere else;
//! the audit must show every window and steer; `praxis session` must draw
//! the timeline; `praxis-run --session` must get its advisory line.

mod common;

use std::path::Path;

use common::{Daemon, repo};
use serde_json::{Value, json};

/// The replay runs in well under a second of wall time, so the re-arm
/// floor's seconds (30 by default) are set to 0: the action floor (K) is
/// what holds boundaries apart here, as the corpus' own timestamps do.
const SESSION_TOML: &str = "[hysteresis]\nrearm_seconds = 0\n";

fn trajectory(name: &str) -> Vec<Value> {
    let path = repo().join("session/tests/trajectories").join(name);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn absolute(target: &str, work: &Path) -> String {
    if target.starts_with('/') {
        target.to_owned()
    } else {
        work.join(target).display().to_string()
    }
}

/// The tool input Claude Code sends for `tool` on `target`.
fn tool_input(tool: &str, target: &str, work: &Path) -> Value {
    match tool {
        "Bash" => json!({ "command": target, "description": "run" }),
        "Read" | "Write" | "Edit" | "MultiEdit" => json!({ "file_path": absolute(target, work) }),
        "Grep" | "Glob" => json!({ "pattern": target }),
        "WebFetch" => json!({ "url": target, "prompt": "read" }),
        _ => json!({}),
    }
}

/// A corpus line as the Claude Code hook event that carries it.
fn hook_event(line: &Value, work: &Path) -> Value {
    let session = line["session"].as_str().unwrap();
    let cwd = work.display().to_string();
    let mut event = match line["kind"].as_str().unwrap() {
        "session_start" => json!({ "hook_event_name": "SessionStart", "source": "startup" }),
        "user_prompt_submit" => json!({ "hook_event_name": "UserPromptSubmit", "prompt": "go on" }),
        "stop" => json!({ "hook_event_name": "Stop", "stop_hook_active": false }),
        kind @ ("pre_tool_use" | "post_tool_use") => {
            let tool = line["tool"].as_str().unwrap();
            let target = line["target"].as_str().unwrap_or("");
            let claude = line["runtime"] == "claude-code";
            // Claude Code reports a failed call as PostToolUseFailure, Codex as PostToolUse.
            let name = match (kind, claude, line["status"].as_str()) {
                ("pre_tool_use", ..) => "PreToolUse",
                (_, true, Some("failed")) => "PostToolUseFailure",
                _ => "PostToolUse",
            };
            let mut e = json!({
                "hook_event_name": name,
                "tool_name": tool,
                "tool_input": tool_input(tool, target, work),
                "tool_use_id": line["call_id"],
                "permission_mode": "default",
            });
            match (name, claude, line["status"].as_str()) {
                ("PostToolUseFailure", ..) => {
                    e["error"] = json!("Exit code 1\nFAILED");
                    e["is_interrupt"] = json!(false);
                }
                ("PostToolUse", false, Some("failed")) => {
                    e["tool_response"] = json!({ "exit_code": 1 })
                }
                ("PostToolUse", false, _) => e["tool_response"] = json!({ "exit_code": 0 }),
                ("PostToolUse", true, _) => {
                    e["tool_response"] =
                        json!({ "stdout": "", "stderr": "", "interrupted": false });
                }
                _ => {}
            }
            e
        }
        other => panic!("no Claude Code event for {other}"),
    };
    event["session_id"] = json!(session);
    event["cwd"] = json!(cwd);
    event["transcript_path"] = json!("/dev/null");
    event
}

/// The files a trajectory reads and writes, made to exist in the workspace.
fn make_files(lines: &[Value], work: &Path) {
    for line in lines {
        let tool = line["tool"].as_str().unwrap_or("");
        if let ("Read" | "Write" | "Edit" | "MultiEdit", Some(target)) =
            (tool, line["target"].as_str())
        {
            let path = Path::new(&absolute(target, work)).to_path_buf();
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            if !path.exists() {
                std::fs::write(&path, "x\n").unwrap();
            }
        }
    }
}

/// What one replayed line got back: the steer, if any.
struct Replayed {
    line: Value,
    steer: Option<String>,
}

fn replay(d: &Daemon, name: &str) -> Vec<Replayed> {
    replay_in(d, trajectory(name), &d.work())
}

/// Replays `lines` as hook events of a runtime working in `work`.
fn replay_in(d: &Daemon, lines: Vec<Value>, work: &Path) -> Vec<Replayed> {
    make_files(&lines, work);
    lines
        .into_iter()
        .map(|line| {
            let input = hook_event(&line, work).to_string();
            let runtime = line["runtime"].as_str().unwrap();
            let out = d.praxis_run(&["hook", runtime], &input);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{input}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let steer = serde_json::from_slice::<Value>(&out.stdout)
                .ok()
                .and_then(|v| {
                    v["hookSpecificOutput"]["additionalContext"]
                        .as_str()
                        .map(str::to_owned)
                });
            Replayed { line, steer }
        })
        .collect()
}

fn expects_boundary(line: &Value) -> Option<String> {
    line["expect"]
        .as_array()?
        .iter()
        .find_map(|e| e.as_str()?.strip_prefix("boundary:").map(str::to_owned))
}

/// Steers come back exactly at the lines the corpus marks as boundaries.
fn assert_steers_at_boundaries(name: &str, replayed: &[Replayed]) {
    let actions = replayed
        .iter()
        .filter(|r| r.line["kind"] == "pre_tool_use")
        .count();
    let mut steers = 0;
    for (i, r) in replayed.iter().enumerate() {
        let expected = expects_boundary(&r.line);
        assert_eq!(
            expected.is_some(),
            r.steer.is_some(),
            "{name} line {}: expected boundary {expected:?}, got steer {:?}",
            i + 1,
            r.steer
        );
        steers += usize::from(r.steer.is_some());
    }
    // Each line was checked against its mark above (a quiet phase has none).
    assert!(
        steers * 3 < actions,
        "{name}: {steers} steers over {actions} actions is not 'at the boundaries'"
    );
}

fn session_events(d: &Daemon, session: &str, kind: &str) -> Vec<Value> {
    d.events_of_kind(kind)
        .into_iter()
        .filter(|e| e["session"] == session)
        .collect()
}

#[test]
fn a_failing_loop_is_steered_within_n_failures_and_audited() {
    let d = Daemon::start_with(&[("session.toml", SESSION_TOML)], &[]);
    let replayed = replay(&d, "claude_failing_loop.jsonl");
    assert_steers_at_boundaries("claude_failing_loop", &replayed);

    // The loop is steered at the third failure of the same test (N = 3).
    let mut failures = 0;
    let at = replayed
        .iter()
        .position(|r| {
            failures += usize::from(r.line["status"] == "failed");
            r.steer.as_deref().is_some_and(|s| s.contains("failed"))
        })
        .expect("a failure-loop steer");
    assert_eq!(replayed[at].line["kind"], "post_tool_use");
    assert_eq!(failures, 3, "steered at the third failure");
    assert!(
        replayed[at]
            .steer
            .as_deref()
            .unwrap()
            .contains("Stop repeating it")
    );

    // Every steer and every window is in the audit chain, under the session.
    let session = "a71e44d0-failing-loop";
    let audited: Vec<String> = session_events(&d, session, "session_steer")
        .iter()
        .map(|e| e["reason"].as_str().unwrap().to_owned())
        .collect();
    let delivered: Vec<String> = replayed.iter().filter_map(|r| r.steer.clone()).collect();
    assert_eq!(audited, delivered);
    let opened = session_events(&d, session, "session_window_opened").len();
    let closed = session_events(&d, session, "session_window_closed").len()
        + session_events(&d, session, "session_window_expired").len();
    assert!(opened >= 2, "windows opened: {opened}");
    assert_eq!(opened, closed, "Stop closed the last window");
    assert!(!session_events(&d, session, "session_boundary").is_empty());
    let verify = d.praxis(&["audit", "verify"]);
    assert!(verify.status.success(), "{verify:?}");

    // The operator's view: the list and the timeline.
    let list = d.praxis(&["session", "list"]);
    assert!(
        String::from_utf8_lossy(&list.stdout).contains(session),
        "{list:?}"
    );
    let show = d.praxis(&["session", "show", session]);
    let timeline = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success(), "{show:?}");
    for needle in [
        "BOUNDARY failure_loop",
        "steer: Praxis:",
        "window #1 opened",
        "checkpoint #",
    ] {
        assert!(timeline.contains(needle), "{needle} missing:\n{timeline}");
    }
    let json = d.praxis(&["session", "show", session, "--json"]);
    let kinds: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].clone())
        .collect();
    assert!(kinds.contains(&json!("session_steer")));
    assert!(kinds.contains(&json!("decided")));
}

#[test]
fn a_push_after_a_long_edit_phase_is_a_boundary() {
    let d = Daemon::start_with(&[("session.toml", SESSION_TOML)], &[]);
    let replayed = replay(&d, "claude_push_after_edit.jsonl");
    assert_steers_at_boundaries("claude_push_after_edit", &replayed);
    let push = replayed
        .iter()
        .find(|r| {
            r.line["kind"] == "pre_tool_use"
                && r.line["target"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("git push"))
        })
        .unwrap();
    let steer = push.steer.as_deref().expect("the push is steered");
    assert!(steer.contains("did not run"), "the push was held: {steer}");
}

#[test]
fn missing_post_tool_use_turns_off_only_the_signals_that_need_it() {
    let d = Daemon::start_with(&[("session.toml", SESSION_TOML)], &[]);
    let replayed = replay(&d, "claude_without_post_tool_use.jsonl");
    assert_steers_at_boundaries("claude_without_post_tool_use", &replayed);
    let off: Vec<Value> = session_events(&d, "e4a61b3c-no-post", "session_signal_disabled")
        .iter()
        .map(|e| e["detail"]["signal"].clone())
        .collect();
    assert_eq!(off, [json!("failure_loop")]);
}

#[test]
fn praxis_run_with_a_session_gets_an_advisory_line_on_a_failing_loop() {
    fn run(d: &Daemon, n: usize) -> String {
        let out = d.praxis_run(&["--session", "loop-1", "-c", "exit 3"], "");
        assert_eq!(out.status.code(), Some(3), "run {n}: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
    let mut d = Daemon::start();
    assert!(!run(&d, 1).contains("Praxis:"));
    assert!(!run(&d, 2).contains("Praxis:"));
    // The state is in the state dir: a restarted praxisd goes on where it was.
    // States are saved behind the reply; listing waits for the queued saves,
    // so the last outcome is on disk before the SIGKILL.
    let listed = d.praxis(&["session", "list"]);
    assert!(listed.status.success(), "{listed:?}");
    d.kill9();
    d.spawn();
    let third = run(&d, 3);
    assert!(
        third.contains("Praxis: The same praxis-run call failed 3 times in a row."),
        "{third}"
    );
    // A run without a session feeds no detector.
    let out = d.praxis_run(&["-c", "exit 3"], "");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Praxis:"));
    assert_eq!(
        session_events(&d, "loop-1", "session_boundary")[0]["detail"]["signal"],
        "failure_loop"
    );
}

#[test]
fn a_session_policy_that_does_not_load_stops_no_work_and_is_audited() {
    let d = Daemon::start_with(
        &[(
            "session.toml",
            "[hysteresis]\npersist_actions = \"three\"\n",
        )],
        &[],
    );
    let out = d.praxis_run(&["--session", "s-broken", "-c", "echo hi"], "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    let failed = session_events(&d, "s-broken", "session_failed");
    assert_eq!(failed.len(), 2, "the request and its exit: {failed:?}");
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("session.toml"),
        "{failed:?}"
    );
}

#[test]
fn codex_gets_the_same_contract_failing_loop_then_deploy() {
    let d = Daemon::start_with(&[("session.toml", SESSION_TOML)], &[]);
    let replayed = replay(&d, "codex_failing_then_deploy.jsonl");
    assert_steers_at_boundaries("codex_failing_then_deploy", &replayed);
    let deploy = replayed.iter().rev().find(|r| r.steer.is_some()).unwrap();
    assert!(
        deploy.line["target"]
            .as_str()
            .unwrap()
            .starts_with("kubectl apply")
    );
    // Codex shows no file tools: scope change is off, and only it.
    let off: Vec<Value> = session_events(&d, "019a2c4e-codex-deploy", "session_signal_disabled")
        .iter()
        .map(|e| e["detail"]["signal"].clone())
        .collect();
    assert!(off.contains(&json!("scope_change")), "{off:?}");
    assert!(!off.contains(&json!("failure_loop")), "{off:?}");
}

/// A Claude Code session that reads six files per prompt for `turns` prompts, then stops.
fn reading_turns(session: &str, turns: usize) -> Vec<Value> {
    let mut lines = Vec::new();
    for turn in 0..turns {
        lines.push(
            json!({ "runtime": "claude-code", "session": session, "kind": "user_prompt_submit" }),
        );
        for i in 0..6 {
            lines.push(json!({
                "runtime": "claude-code", "session": session, "kind": "pre_tool_use",
                "tool": "Read", "target": format!("src/t{turn}/f{i}.rs"),
                "call_id": format!("{session}-{turn}-{i}"),
            }));
        }
    }
    lines.push(json!({ "runtime": "claude-code", "session": session, "kind": "stop" }));
    lines
}

fn window_backstops(d: &Daemon, session: &str) -> Vec<u64> {
    session_events(d, session, "session_window_opened")
        .iter()
        .map(|e| e["detail"]["backstop"]["actions"].as_u64().unwrap())
        .collect()
}

#[test]
fn what_a_finished_session_taught_seeds_the_next_one_of_its_workspace_and_role() {
    let policy = format!("{SESSION_TOML}[baseline]\nmin_windows = 3\n");
    let mut d = Daemon::start_with(&[("session.toml", policy.as_str())], &[]);
    // Four prompts: the first window opens before any work kind is known;
    // the next three read windows (six actions each) close on a prompt or the stop.
    let _ = replay_in(&d, reading_turns("teacher", 4), &d.work());
    let seeded = session_events(&d, "teacher", "session_baseline_seeded");
    assert_eq!(seeded.len(), 1, "seeded once, at the first judged action");
    assert!(
        seeded[0]["reason"]
            .as_str()
            .unwrap()
            .contains("nothing learned yet"),
        "{seeded:?}"
    );
    assert!(window_backstops(&d, "teacher").iter().all(|&b| b == 60));

    // The ledger is in the state dir: a restarted praxisd still has it.
    d.kill9();
    d.spawn();
    let _ = replay_in(&d, reading_turns("learner", 3), &d.work());
    let seeded = session_events(&d, "learner", "session_baseline_seeded");
    let reason = seeded[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("read: median 6 actions") && reason.contains("over 3 windows"),
        "{reason}"
    );
    assert_eq!(
        seeded[0]["detail"]["learned"]["by_kind"]["read"]["actions"],
        6
    );
    // Twice the learned median, for the read windows opened after the seed.
    let backstops = window_backstops(&d, "learner");
    assert_eq!(backstops[1..], [12, 12], "{backstops:?}");

    // Another workspace learned nothing from it.
    let elsewhere = d.home().join("other");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = replay_in(&d, reading_turns("stranger", 2), &elsewhere);
    let seeded = session_events(&d, "stranger", "session_baseline_seeded");
    assert!(
        seeded[0]["reason"]
            .as_str()
            .unwrap()
            .contains("nothing learned yet"),
        "{seeded:?}"
    );
    assert!(window_backstops(&d, "stranger").iter().all(|&b| b == 60));
    let show = d.praxis(&["session", "show", "learner"]);
    assert!(
        String::from_utf8_lossy(&show.stdout).contains("baseline seeded for"),
        "{show:?}"
    );
}

/// Every window opened in the session's audit closed or expired (or is the
/// one still open), every steer delivered is audited in order, and the
/// operator's timeline draws each window and steer.
fn assert_audited(d: &Daemon, session: &str, replayed: &[Replayed]) {
    let delivered: Vec<String> = replayed.iter().filter_map(|r| r.steer.clone()).collect();
    let audited: Vec<String> = session_events(d, session, "session_steer")
        .iter()
        .map(|e| e["reason"].as_str().unwrap().to_owned())
        .collect();
    // A hook delivers every steer of its event joined by a newline.
    assert_eq!(audited.join("\n"), delivered.join("\n"), "{session}");
    let opened = session_events(d, session, "session_window_opened").len();
    let ended = session_events(d, session, "session_window_closed").len()
        + session_events(d, session, "session_window_expired").len();
    let stopped = replayed.last().is_some_and(|r| r.line["kind"] == "stop");
    assert!(opened >= 1, "{session}: no window");
    assert_eq!(
        opened - ended,
        usize::from(!stopped),
        "{session}: {opened} windows opened, {ended} ended"
    );
    let show = d.praxis(&["session", "show", session]);
    let timeline = String::from_utf8_lossy(&show.stdout);
    for window in 1..=opened {
        assert!(
            timeline.contains(&format!("window #{window} opened")),
            "{session}: window #{window} missing:\n{timeline}"
        );
    }
    assert_eq!(
        timeline.matches("┃ steer: ").count(),
        audited.len(),
        "{session}:\n{timeline}"
    );
}

/// Every Claude Code and Codex trajectory of the corpus, replayed through the
/// real hooks: steers at the marked boundaries only, and all of it audited.
#[test]
fn every_recorded_trajectory_steers_at_its_boundaries_and_is_audited() {
    let dir = repo().join("session/tests/trajectories");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl") && (n.starts_with("claude_") || n.starts_with("codex_")))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    let d = Daemon::start_with(&[("session.toml", SESSION_TOML)], &[]);
    for name in &names {
        let replayed = replay(&d, name);
        assert_steers_at_boundaries(name, &replayed);
        let session = replayed[0].line["session"].as_str().unwrap().to_owned();
        assert_audited(&d, &session, &replayed);
    }
    let verify = d.praxis(&["audit", "verify"]);
    assert!(verify.status.success(), "{verify:?}");
}

fn pre(session: &str, tool: &str, target: &str, call: &str) -> Value {
    json!({ "runtime": "claude-code", "session": session, "kind": "pre_tool_use",
            "tool": tool, "target": target, "call_id": call })
}

fn post(session: &str, tool: &str, target: &str, call: &str, status: &str) -> Value {
    json!({ "runtime": "claude-code", "session": session, "kind": "post_tool_use",
            "tool": tool, "target": target, "call_id": call, "status": status })
}

fn sparse(name: &str, replayed: &[Replayed]) {
    let actions = replayed
        .iter()
        .filter(|r| r.line["kind"] == "pre_tool_use")
        .count();
    let steers = replayed.iter().filter(|r| r.steer.is_some()).count();
    assert!(
        steers > 0 && steers * 3 < actions,
        "{name}: {steers} steers over {actions} actions"
    );
}

/// Edit, run the same test, see it fail, again and again: the loop is
/// steered at the N-th failure the policy configures, not before.
#[test]
fn a_loop_of_the_same_failing_test_is_steered_at_the_configured_n() {
    for n in [2, 4] {
        let policy = format!("[hysteresis]\npersist_actions = {n}\nrearm_seconds = 0\n");
        let d = Daemon::start_with(&[("session.toml", policy.as_str())], &[]);
        let session = format!("loop-n{n}");
        let s = session.as_str();
        let mut lines = vec![
            json!({ "runtime": "claude-code", "session": s, "kind": "session_start" }),
            json!({ "runtime": "claude-code", "session": s, "kind": "user_prompt_submit" }),
            pre(s, "Read", "src/parser.rs", "r1"),
            post(s, "Read", "src/parser.rs", "r1", "ok"),
            pre(s, "Read", "tests/parser.rs", "r2"),
            post(s, "Read", "tests/parser.rs", "r2", "ok"),
        ];
        for i in 0..6 {
            let (edit, test) = (format!("e{i}"), format!("t{i}"));
            lines.push(pre(s, "Edit", "src/parser.rs", &edit));
            lines.push(post(s, "Edit", "src/parser.rs", &edit, "ok"));
            lines.push(pre(s, "Bash", "cargo test parser", &test));
            lines.push(post(s, "Bash", "cargo test parser", &test, "failed"));
        }
        lines.push(json!({ "runtime": "claude-code", "session": s, "kind": "stop" }));
        let replayed = replay_in(&d, lines, &d.work());
        let mut failures = 0;
        let at = replayed.iter().position(|r| {
            failures += usize::from(r.line["status"] == "failed");
            r.steer.as_deref().is_some_and(|s| s.contains("failed"))
        });
        let at = at.unwrap_or_else(|| panic!("N = {n}: no failure-loop steer"));
        assert_eq!(replayed[at].line["kind"], "post_tool_use");
        assert_eq!(failures, n, "N = {n}: steered at failure {failures}");
        assert!(
            replayed[at]
                .steer
                .as_deref()
                .unwrap()
                .contains(&format!("failed {n} times in a row")),
            "{:?}",
            replayed[at].steer
        );
        // Once per streak: the failures after it are not steered again.
        assert!(
            replayed[at + 1..]
                .iter()
                .all(|r| !r.steer.as_deref().is_some_and(|s| s.contains("failed"))),
            "N = {n}: the loop was steered twice"
        );
        sparse(&session, &replayed);
        assert_audited(&d, s, &replayed);
    }
}

/// A long edit phase across a module, tests, a commit, then a push: the push
/// is a boundary, steered before it runs, naming what the phase changed.
#[test]
fn a_push_after_a_long_generated_edit_phase_is_a_boundary() {
    let d = Daemon::start_with(&[("session.toml", SESSION_TOML)], &[]);
    let s = "long-edit-push";
    let mut lines = vec![
        json!({ "runtime": "claude-code", "session": s, "kind": "session_start" }),
        json!({ "runtime": "claude-code", "session": s, "kind": "user_prompt_submit" }),
        pre(s, "Read", "src/api/routes.rs", "r0"),
        post(s, "Read", "src/api/routes.rs", "r0", "ok"),
    ];
    for i in 0..24 {
        let file = format!("src/api/handler{}.rs", i % 6);
        let call = format!("e{i}");
        lines.push(pre(s, "Edit", &file, &call));
        lines.push(post(s, "Edit", &file, &call, "ok"));
    }
    for (call, command) in [
        ("t", "cargo test"),
        ("a", "git add -A"),
        ("c", "git commit -m 'api handlers'"),
        ("p", "git push origin main"),
    ] {
        lines.push(pre(s, "Bash", command, call));
        lines.push(post(s, "Bash", command, call, "ok"));
    }
    let replayed = replay_in(&d, lines, &d.work());
    let push = replayed
        .iter()
        .find(|r| r.line["kind"] == "pre_tool_use" && r.line["target"] == "git push origin main")
        .unwrap();
    let steer = push.steer.as_deref().expect("the push is steered");
    assert!(steer.contains("did not run"), "the push was held: {steer}");
    assert!(
        steer.contains("handler"),
        "names the changed files: {steer}"
    );
    let boundary = session_events(&d, s, "session_boundary");
    assert_eq!(
        boundary.last().unwrap()["detail"]["signal"],
        "first_risk",
        "{boundary:?}"
    );
    sparse(s, &replayed);
    assert_audited(&d, s, &replayed);
}

/// The first line of `praxis session show --json`: where the session's
/// private /tmp and /var/tmp lie on the host.
fn private_tmp_of(d: &Daemon, session: &str) -> Value {
    let show = d.praxis(&["session", "show", session, "--json"]);
    let first = String::from_utf8_lossy(&show.stdout)
        .lines()
        .next()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .unwrap_or(Value::Null);
    first["private_tmp"].clone()
}

#[test]
fn session_show_names_the_private_tmp_and_its_size() {
    let d = Daemon::start();
    let out = d.praxis_run(&["--session", "tmp-1", "-c", "true"], "");
    assert!(out.status.success(), "{out:?}");

    let tmp = private_tmp_of(&d, "tmp-1");
    let (at, var_at) = (
        Path::new(tmp["tmp"].as_str().unwrap()).to_path_buf(),
        Path::new(tmp["var_tmp"].as_str().unwrap()).to_path_buf(),
    );
    // One dir of the session's own beside the state dir, holding both.
    let dir = at.parent().unwrap();
    assert_eq!(var_at.parent(), Some(dir));
    assert_eq!(
        dir.parent(),
        Some(
            d.home()
                .with_file_name("state")
                .join("praxis-tmp")
                .as_path()
        )
    );
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("session-")
    );
    assert_ne!(private_tmp_of(&d, "tmp-2")["tmp"], tmp["tmp"]);

    // What a command left there is counted (made here if the sandbox did not).
    std::fs::create_dir_all(&at).unwrap();
    std::fs::create_dir_all(&var_at).unwrap();
    std::fs::write(at.join("out.txt"), "hello").unwrap();
    let show = d.praxis(&["session", "show", "tmp-1"]);
    assert!(show.status.success(), "{show:?}");
    let text = String::from_utf8_lossy(&show.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("private /tmp"))
        .unwrap_or_else(|| panic!("no private /tmp line:\n{text}"));
    assert!(
        line.contains(&format!(
            "private /tmp  {}  /var/tmp  {}",
            at.display(),
            var_at.display()
        )),
        "{line}"
    );
    let bytes: u64 = line
        .rsplit_once('(')
        .and_then(|(_, size)| size.strip_suffix(" bytes)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size: {line}"));
    assert!(bytes >= 5, "{line}");

    // A session that never ran has no dir yet.
    let never = d.praxis(&["session", "show", "never-ran"]);
    assert!(
        String::from_utf8_lossy(&never.stdout).contains("(not made yet)"),
        "{never:?}"
    );
}

#[test]
fn praxisd_removes_private_tmp_dirs_unused_past_their_retention() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("state/praxis-tmp");
    let hours_ago = |name: &str, hours: u64| {
        let made = root.join(name);
        std::fs::create_dir_all(made.join("tmp")).unwrap();
        std::fs::write(made.join("tmp/left"), "x").unwrap();
        let at = std::time::SystemTime::now() - std::time::Duration::from_secs(hours * 3600);
        std::fs::File::open(&made)
            .unwrap()
            .set_modified(at)
            .unwrap();
        made
    };
    let old = hours_ago("session-old", 3);
    let fresh = hours_ago("session-fresh", 1);
    let d = Daemon::start_in(dir, &[("praxis.toml", "[tmp]\nretention_hours = 2\n")], &[]);
    // Swept at start, off the request path.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while old.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} is still there",
            old.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(fresh.join("tmp/left").exists());
    drop(d);
}

#[test]
fn a_program_planted_in_the_private_tmp_and_found_through_path_is_held() {
    let d = Daemon::start();
    let at = private_tmp_of(&d, "s-plant")["tmp"]
        .as_str()
        .map(std::path::PathBuf::from)
        .unwrap();
    // An earlier command of the session left `ls` in its /tmp/bin; the host's
    // shared /tmp/bin has none, so a lookup there would find /usr/bin/ls.
    let bin_dir = at.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::fs::write(bin_dir.join("ls"), "#!/bin/sh\necho planted\n").unwrap();
    std::fs::set_permissions(
        bin_dir.join("ls"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("/tmp/bin:{}", std::env::var("PATH").unwrap_or_default());
    let out = d
        .cmd(&common::bin("praxis-run"))
        .env("PATH", &path)
        .args(["--session", "s-plant", "--", "ls"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("writable tree") && !text.contains("planted\n"),
        "{text}"
    );
}
