//! Replays every recorded trajectory in `tests/trajectories/` through the
//! detector with the shipped policy. Each line is a hook event; its
//! `expect` list names the notable transitions that event must produce
//! (boundaries, skips, blocks, expiries, checkpoints satisfied or skipped,
//! signals disabled or enabled) and an absent list means none.

use std::fs;
use std::path::{Path, PathBuf};

use praxis_session::{Detector, HookEvent, Outcome, SessionPolicy, SessionState, Transition};

struct Line {
    number: usize,
    event: HookEvent,
    expect: Vec<String>,
}

fn trajectories() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trajectories");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("the trajectory corpus exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "the corpus has its trajectories");
    files
}

fn load(path: &Path) -> Vec<Line> {
    let text = fs::read_to_string(path).expect("readable trajectory");
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let mut value: serde_json::Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            let expect = value
                .as_object_mut()
                .and_then(|o| o.remove("expect"))
                .map(|v| serde_json::from_value(v).expect("expect is a list of strings"))
                .unwrap_or_default();
            let event = serde_json::from_value(value)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            Line {
                number: i + 1,
                event,
                expect,
            }
        })
        .collect()
}

/// The transitions a reviewer marks on a trajectory, as short labels.
fn notable(outcome: &Outcome) -> Vec<String> {
    outcome
        .transitions
        .iter()
        .filter_map(|t| match t {
            Transition::Boundary { signal, .. } => Some(format!("boundary:{}", signal.as_str())),
            Transition::Skip { signal, .. } => Some(format!("skip:{}", signal.as_str())),
            Transition::Block { method, .. } => Some(format!("block:{method}")),
            Transition::Steer { signal: None, .. } => Some(String::from("steer:method")),
            Transition::WindowExpired { .. } => Some(String::from("expired")),
            Transition::CheckpointSatisfied { evidence, .. } => Some(format!(
                "checkpoint:{}",
                serde_json::to_value(evidence.mechanism)
                    .unwrap()
                    .as_str()
                    .unwrap()
            )),
            Transition::CheckpointSkipped { .. } => Some(String::from("checkpoint_skipped")),
            Transition::SignalDisabled { signal, .. } => {
                Some(format!("disabled:{}", signal.as_str()))
            }
            Transition::SignalEnabled { signal } => Some(format!("enabled:{}", signal.as_str())),
            _ => None,
        })
        .collect()
}

fn replay(detector: &Detector, lines: &[Line]) -> Vec<Outcome> {
    let mut state = SessionState::new(lines[0].event.scope(), None);
    lines
        .iter()
        .map(|l| detector.observe(&mut state, &l.event))
        .collect()
}

#[test]
fn every_trajectory_gives_the_boundaries_a_reviewer_marks() {
    let detector = Detector::new(SessionPolicy::shipped().unwrap()).unwrap();
    let mut failures = Vec::new();
    for path in trajectories() {
        let lines = load(&path);
        let outcomes = replay(&detector, &lines);
        let mut actions = 0;
        let mut steers = 0;
        for (line, outcome) in lines.iter().zip(&outcomes) {
            let got = notable(outcome);
            if got != line.expect {
                failures.push(format!(
                    "{}:{}: expected {:?}, got {:?}",
                    path.file_name().unwrap().to_string_lossy(),
                    line.number,
                    line.expect,
                    got
                ));
            }
            let is_action = matches!(
                line.event.kind,
                praxis_session::EventKind::PreToolUse | praxis_session::EventKind::RunRequest
            );
            actions += usize::from(is_action);
            steers += usize::from(outcome.steer().is_some());
            // Every boundary comes with its steer and its checkpoint.
            let boundaries = outcome
                .transitions
                .iter()
                .filter(|t| matches!(t, Transition::Boundary { .. }))
                .count();
            let required = outcome
                .transitions
                .iter()
                .filter(|t| matches!(t, Transition::CheckpointRequired { .. }))
                .count();
            assert_eq!(boundaries, required, "{}:{}", path.display(), line.number);
            assert!(boundaries <= usize::from(outcome.steer().is_some()));
        }
        // Steering is at boundaries, not on every action.
        assert!(
            steers * 3 <= actions,
            "{}: {steers} steers over {actions} actions",
            path.display()
        );
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn replaying_a_trajectory_twice_or_resuming_persisted_state_gives_the_same_transitions() {
    let detector = Detector::new(SessionPolicy::shipped().unwrap()).unwrap();
    for path in trajectories() {
        let lines = load(&path);
        let first = replay(&detector, &lines);
        assert_eq!(first, replay(&detector, &lines), "{}", path.display());
        // Persist the state half way, as the daemon does, and go on from the copy.
        let half = lines.len() / 2;
        let mut state = SessionState::new(lines[0].event.scope(), None);
        let mut resumed: Vec<Outcome> = lines[..half]
            .iter()
            .map(|l| detector.observe(&mut state, &l.event))
            .collect();
        let stored = serde_json::to_string(&state).unwrap();
        let mut state: SessionState = serde_json::from_str(&stored).unwrap();
        resumed.extend(
            lines[half..]
                .iter()
                .map(|l| detector.observe(&mut state, &l.event)),
        );
        assert_eq!(first, resumed, "{}", path.display());
    }
}
