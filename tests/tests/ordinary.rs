//! Ordinary work, side by side: each project of `tests/ordinary/` is made
//! twice, and its steps run through `bash` in one copy and through
//! `praxis-run` (a real praxisd, the default role) in the other. Every step
//! must exit alike and print alike on stdout, and the two copies must end
//! with the same files. A step that crosses a wall by design says so in the
//! project's data (`crosses`, with the reason) and is only reported.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{Daemon, repo};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Project {
    description: String,
    /// Programs the project needs; without one it is skipped.
    #[serde(default)]
    needs: Vec<String>,
    /// Top-level names left out of the comparison of the two copies
    /// (environments that hold absolute paths, caches).
    #[serde(default)]
    compare_ignore: Vec<String>,
    #[serde(default, rename = "file")]
    files: Vec<ProjectFile>,
    #[serde(rename = "step")]
    steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectFile {
    path: String,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    run: String,
    /// Why this step crosses a wall by design (its result may differ).
    crosses: Option<String>,
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn lay_out(dir: &Path, files: &[ProjectFile]) {
    for file in files {
        let path = dir.join(&file.path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, &file.text).unwrap();
    }
}

/// Every file under `dir` (but the ignored top-level names) and its
/// contents; symlinks by their target.
fn tree(dir: &Path, ignore: &[String]) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, ignore: &[String], out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let top = rel.split('/').next().unwrap_or_default();
            if ignore
                .iter()
                .any(|i| i == top || rel.ends_with(&format!("/{i}")))
            {
                continue;
            }
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(rel, target.to_string_lossy().as_bytes().to_vec());
            } else if kind.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(root, &path, ignore, out);
            } else {
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, ignore, &mut out);
    out
}

fn shown(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs one project both ways; returns what differed, step by step.
fn side_by_side(name: &str, project: &Project) -> Vec<String> {
    let d = Daemon::start();
    let agent = d.work();
    let plain = tempfile::tempdir().unwrap();
    lay_out(&agent, &project.files);
    lay_out(plain.path(), &project.files);
    let mut differences = Vec::new();
    for (i, step) in project.steps.iter().enumerate() {
        let by_bash = Command::new("bash")
            .args(["-c", &step.run])
            .current_dir(plain.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let by_praxis = d.run(&["-c", &step.run]);
        let same =
            by_bash.status.code() == by_praxis.status.code() && by_bash.stdout == by_praxis.stdout;
        match (&step.crosses, same) {
            (Some(why), _) => println!("{name} step {i} crosses a wall by design: {why}"),
            (None, true) => {}
            (None, false) => differences.push(format!(
                "{name} step {i} `{}`:\n-- bash --\n{}\n-- praxis-run --\n{}",
                step.run,
                shown(&by_bash),
                shown(&by_praxis)
            )),
        }
    }
    let (ours, theirs) = (
        tree(&agent, &project.compare_ignore),
        tree(plain.path(), &project.compare_ignore),
    );
    if ours != theirs {
        let only = |a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>| {
            a.iter()
                .filter(|(k, v)| b.get(*k) != Some(v))
                .map(|(k, _)| k.clone())
                .collect::<Vec<_>>()
        };
        differences.push(format!(
            "{name}: the files differ: through praxis-run {:?}, through bash {:?}",
            only(&ours, &theirs),
            only(&theirs, &ours)
        ));
    }
    differences
}

#[test]
fn ordinary_projects_work_alike_through_praxis_run_and_bash() {
    let dir = repo().join("tests/ordinary");
    let mut names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "projects: {names:?}");
    let mut differences = Vec::new();
    for path in names {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let project: Project = toml::from_str(&fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Some(missing) = project.needs.iter().find(|n| !installed(n)) {
            println!(
                "skipping {name} ({}): `{missing}` is not installed",
                project.description
            );
            continue;
        }
        differences.extend(side_by_side(&name, &project));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}
