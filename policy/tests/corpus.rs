//! The regression corpus (`tests/corpus/*.toml` at the workspace root): every
//! case judged in the synthetic example workspace; all failures reported at once.

use std::fs;
use std::path::PathBuf;

use praxis_policy::Policy;
use praxis_policy::rules::cases;

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
