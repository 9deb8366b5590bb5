//! The regression corpus (`tests/corpus/*.toml` at the workspace root): every
//! case judged in the synthetic example workspace; all failures reported at once.

use std::fs;
use std::path::PathBuf;

use praxis_policy::cases;
use praxis_policy::{Policy, Verdict};

#[test]
fn every_corpus_case_gets_its_expected_decision() {
    let policy = Policy::builtin().unwrap_or_else(|e| panic!("{e}"));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let (mut total, mut failures) = (0, Vec::new());
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(file).unwrap();
        let outcomes = cases::run(&policy, &name, &text).unwrap_or_else(|e| panic!("{e}"));
        total += outcomes.len();
        failures.extend(
            outcomes
                .iter()
                .filter(|o| !o.passed())
                .map(|o| o.describe(&name)),
        );
    }
    assert!(total >= 400, "the corpus has only {total} cases");
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_covers_every_decision() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut seen = std::collections::BTreeSet::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        for case in cases::parse(&path.display().to_string(), &text).unwrap() {
            seen.insert(case.expect.as_str());
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["ALLOW", "HOLD", "STOP"]
    );
}

/// Ordinary agent work (`tests/corpus/agent_traffic.toml`) is not held: at most
/// 1% of it is held or stopped, and every such case is listed with the reason
/// it stays (`false_block`), or says why it is not ordinary work (`by_design`).
#[test]
fn agent_traffic_is_held_at_most_one_percent_of_the_time() {
    judge_agent_traffic("agent_traffic.toml", 400, 0.01);
}

/// Commands real agents ran in public trajectories
/// (`tests/corpus/agent_trajectories.toml`, sources named in its header): at
/// most 2% of the ordinary ones are held, each held one says why, and none held
/// by design is allowed.
#[test]
fn public_agent_trajectories_are_held_at_most_two_percent_of_the_time() {
    judge_agent_traffic("agent_trajectories.toml", 1000, 0.02);
}

/// Judges the agent traffic of `file` (at least `min_cases` commands) with the
/// built-in policy; fails when more than `max_rate` of its ordinary commands
/// are held, when a hold is not listed with its reason, or when a command
/// listed as held is allowed.
fn judge_agent_traffic(file: &str, min_cases: usize, max_rate: f64) {
    let policy = Policy::builtin().unwrap_or_else(|e| panic!("{e}"));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/corpus")
        .join(file);
    let text = fs::read_to_string(&path).unwrap();
    let outcomes = cases::run(&policy, file, &text).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        outcomes.len() >= min_cases,
        "only {} commands",
        outcomes.len()
    );
    let mut unlisted = Vec::new();
    let (mut ordinary, mut false_blocks, mut by_design) = (0usize, Vec::new(), 0usize);
    for o in &outcomes {
        let blocked = o.decision != Verdict::Allow;
        let listed = o.case.false_block.is_some() || o.case.by_design.is_some();
        if blocked != listed {
            unlisted.push(o.describe(file));
        }
        if o.case.by_design.is_some() {
            by_design += 1;
            continue;
        }
        ordinary += 1;
        if blocked {
            false_blocks.push(format!("`{}`: {}", o.case.command, o.reason));
        }
    }
    assert!(
        unlisted.is_empty(),
        "a hold must be listed (false_block or by_design) and a listed case must be held:\n{}",
        unlisted.join("\n")
    );
    // Relabelling ordinary work as by-design must not buy the rate.
    assert!(
        by_design * 10 <= outcomes.len(),
        "{by_design} of {} cases are held by design",
        outcomes.len()
    );
    let rate = false_blocks.len() as f64 / ordinary as f64;
    eprintln!(
        "{file}: {} of {ordinary} ordinary commands held ({:.2}%)",
        false_blocks.len(),
        rate * 100.0
    );
    assert!(
        rate <= max_rate,
        "{} of {ordinary} ordinary commands are held:\n{}",
        false_blocks.len(),
        false_blocks.join("\n")
    );
}
