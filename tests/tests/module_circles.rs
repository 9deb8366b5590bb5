//! "No module imports its caller", in every crate of the workspace: each
//! crate's module graph, read from its sources, has no circle.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use praxis_e2e::module_graph::{ModuleGraph, rust_files, show};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The member crates, as the root manifest lists them.
fn members(root: &Path) -> Vec<String> {
    let manifest: toml::Table = fs::read_to_string(root.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let members: Vec<String> = manifest["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    assert!(members.len() >= 12, "found only {members:?}");
    members
}

#[test]
fn no_crate_has_a_module_circle() {
    let root = workspace_root();
    let mut found = Vec::new();
    for member in members(&root) {
        for circle in ModuleGraph::read(&root.join(&member)).circles() {
            found.push(format!("{member}: {}", circle.join(" ↔ ")));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other:\n{}",
        found.join("\n")
    );
}

/// Copies a crate's sources to `dest/<name>/src`.
fn copy_sources(krate: &Path, dest: &Path) -> PathBuf {
    let copy = dest.join(krate.file_name().unwrap());
    let mut files = Vec::new();
    rust_files(&krate.join("src"), &mut files);
    for file in files {
        let to = copy.join(file.strip_prefix(krate).unwrap());
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(&file, &to).unwrap();
    }
    copy
}

/// Puts `line` at the top of `file`.
fn prepend(file: &Path, line: &str) {
    let text = fs::read_to_string(file).unwrap();
    fs::write(file, format!("{line}\n{text}")).unwrap();
}

/// The checker sees a circle planted in each crate: an import back from a
/// module to one that imports it, or, in a crate whose modules name none
/// of each other, two new modules naming each other.
#[test]
fn a_circle_planted_in_any_crate_is_found() {
    let root = workspace_root();
    let scratch = tempfile::tempdir().unwrap();
    let mut missed = BTreeMap::new();
    for member in members(&root) {
        let copy = copy_sources(&root.join(&member), scratch.path());
        let graph = ModuleGraph::read(&copy);
        let before = graph.circles();
        // An import between two modules not already in one circle.
        let apart = |a: &[String], b: &[String]| {
            !before
                .iter()
                .any(|c| c.contains(&show(a)) && c.contains(&show(b)))
        };
        let edge = graph.edges.iter().find_map(|(from, (_, named))| {
            let to = named
                .iter()
                .find(|t| graph.edges.contains_key(*t) && apart(from, t))?;
            Some((from.clone(), to.clone()))
        });
        let planted = match edge {
            Some((from, to)) => {
                let file = scratch.path().join(&graph.edges[&to].0);
                prepend(&file, &format!("use crate::{};", show(&from)));
                vec![show(&from), show(&to)]
            }
            None => {
                let src = copy.join("src");
                fs::write(src.join("planted_a.rs"), "use crate::planted_b::B;\n").unwrap();
                fs::write(src.join("planted_b.rs"), "use super::planted_a::A;\n").unwrap();
                vec![String::from("planted_a"), String::from("planted_b")]
            }
        };
        let after = ModuleGraph::read(&copy).circles();
        let caught = after
            .iter()
            .any(|circle| !before.contains(circle) && planted.iter().all(|m| circle.contains(m)));
        if !caught {
            missed.insert(member, planted);
        }
    }
    assert!(missed.is_empty(), "planted circles not found: {missed:?}");
}
