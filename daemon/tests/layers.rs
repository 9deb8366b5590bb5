//! The daemon's folders are its layers, from the top: `front/` (what takes
//! requests), `pipeline/` (the spine), `stage/` (one module a stage),
//! `store/` (what keeps state on disk), and `gate/` (the values passed
//! between stages) below them all. The modules at the crate root outside
//! these (`config`, `conn`, `spawn`, `state`, …) are the ground every layer
//! may use. This test reads the daemon's module graph and fails when
//! - a module names a module of a layer above its own, or a ground module
//!   names `front/` or `pipeline/`;
//! - a module other than the pipeline names `gate::seal`, the one way to
//!   make a `Permit` or hold one;
//! - a stage names another stage;
//! - a stage names the daemon's whole state instead of taking what it uses.
//!
//! Circles, here and in every other crate, are the workspace test
//! `module_circles`'s; both read sources with `praxis_e2e::module_graph`.

use std::fs;
use std::path::Path;

use praxis_e2e::module_graph::{ModuleGraph, show};

/// The daemon's library: every source file but the binary's `main.rs`.
fn daemon() -> ModuleGraph {
    let graph = ModuleGraph::read(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        graph.edges.len() > 20,
        "found only {} modules",
        graph.edges.len()
    );
    graph
}

/// The layers, from the top.
const LAYERS: [&str; 5] = ["front", "pipeline", "stage", "store", "gate"];

/// The layer of a module: its index in [`LAYERS`], by its first name, or
/// `None` for a ground module at the crate root.
fn layer_of(module: &[String]) -> Option<usize> {
    let first = module.first()?;
    LAYERS.iter().position(|l| l == first)
}

/// Every import that goes up: a layered module naming a layer above its
/// own, or a ground module naming `front/` or `pipeline/`.
fn upward_imports(krate: &ModuleGraph) -> Vec<String> {
    let mut offenders = Vec::new();
    for (module, (file, named)) in &krate.edges {
        let own = layer_of(module);
        for target in named {
            let Some(theirs) = layer_of(target) else {
                continue;
            };
            let up = match own {
                Some(own) => theirs < own,
                None => theirs <= 1,
            };
            if up {
                offenders.push(format!("{file} names {}", show(target)));
            }
        }
    }
    offenders
}

/// Every module outside the pipeline that names `gate::seal`.
fn seal_users(krate: &ModuleGraph) -> Vec<String> {
    let seal = [String::from("gate"), String::from("seal")];
    krate
        .edges
        .iter()
        .filter(|(module, _)| module.first().is_none_or(|m| m != "pipeline"))
        .filter(|(_, (_, named))| named.contains(seal.as_slice()))
        .map(|(_, (file, _))| file.clone())
        .collect()
}

#[test]
fn no_module_names_a_layer_above_its_own() {
    let krate = daemon();
    for (n, layer) in LAYERS.iter().enumerate() {
        assert!(
            krate.edges.keys().any(|m| layer_of(m) == Some(n)),
            "no module in the layer `{layer}`"
        );
    }
    let offenders = upward_imports(&krate);
    assert!(
        offenders.is_empty(),
        "a module imports a layer above its own (front > pipeline > stage > store > gate):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_layer_rule_fails_on_a_stage_that_imports_the_front() {
    // A small crate laid out as the daemon is, with what a stage (`parse`)
    // and a ground module (`config`) name.
    let tree = |parse: &str, config: &str| -> ModuleGraph {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in [
            (
                "lib.rs",
                "pub mod front; pub mod pipeline; pub mod stage; pub mod store; pub mod gate; pub mod config;",
            ),
            ("front/mod.rs", "pub mod server;"),
            (
                "front/server.rs",
                "use crate::pipeline::run; use crate::config::Config;",
            ),
            (
                "pipeline/mod.rs",
                "use crate::stage::parse; use crate::gate::{Trail, seal};",
            ),
            ("gate/mod.rs", "pub mod seal; use crate::config::Config;"),
            ("gate/seal.rs", "use super::Trail;"),
            ("stage/mod.rs", "pub mod parse;"),
            ("stage/parse.rs", parse),
            ("store/mod.rs", "use crate::gate::Trail;"),
            ("config.rs", config),
        ] {
            let path = dir.path().join("src").join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        ModuleGraph::read(dir.path())
    };
    // Files are named from the crate's parent; keep the part from `src/`.
    let offenders = |krate: &ModuleGraph| -> Vec<String> {
        upward_imports(krate)
            .iter()
            .map(|o| o[o.find("src/").unwrap()..].to_string())
            .collect()
    };
    let stage_ok = "use crate::store::x; use crate::gate::Trail;";
    let clean = tree(stage_ok, "pub struct Config;");
    assert_eq!(offenders(&clean), Vec::<String>::new());
    assert_eq!(seal_users(&clean), Vec::<String>::new());
    // A stage that seals its own permit, by any path to the seal.
    for forger in [
        "use crate::gate::seal;",
        "use crate::gate as g; fn f() { g::seal::seal(); }",
        "fn f() { crate::gate::seal::hold(); }",
    ] {
        let users: Vec<String> = seal_users(&tree(forger, "pub struct Config;"))
            .iter()
            .map(|o| o[o.find("src/").unwrap()..].to_string())
            .collect();
        assert_eq!(users, vec![String::from("src/stage/parse.rs")], "{forger}");
    }
    let planted = tree(
        "use crate::{gate::Trail, front::server::Peer};",
        "pub struct Config;",
    );
    // The path goes through `front` and ends in `front::server`: both name the front.
    assert_eq!(
        offenders(&planted),
        vec![
            String::from("src/stage/parse.rs names front"),
            String::from("src/stage/parse.rs names front::server"),
        ]
    );
    let ground_up = tree(stage_ok, "use crate::pipeline::run;");
    assert_eq!(
        offenders(&ground_up),
        vec![String::from("src/config.rs names pipeline")]
    );
}

#[test]
fn only_the_pipeline_seals_a_permit() {
    let users = seal_users(&daemon());
    assert!(
        users.is_empty(),
        "only the pipeline may name gate::seal:\n{}",
        users.join("\n")
    );
}

#[test]
fn a_stage_names_no_other_stage() {
    let krate = daemon();
    let stages: Vec<_> = krate
        .edges
        .keys()
        .filter(|m| m.len() >= 2 && m[0] == "stage")
        .collect();
    assert!(
        stages.len() >= 10,
        "found only {} stage modules",
        stages.len()
    );
    let mut offenders = Vec::new();
    for module in stages {
        let (file, named) = &krate.edges[module];
        for target in named {
            if target.first().is_some_and(|t| t == "stage") && target.get(1) != module.get(1) {
                offenders.push(format!("{file} names {}", show(target)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "a stage imports another stage:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn a_stage_takes_what_it_uses() {
    let krate = daemon();
    let state = vec![String::from("state")];
    let offenders: Vec<String> = krate
        .edges
        .iter()
        .filter(|(m, _)| m.first().is_some_and(|f| f == "stage"))
        .filter(|(_, (_, named))| named.contains(&state))
        .map(|(_, (file, _))| file.clone())
        .collect();
    assert!(
        offenders.is_empty(),
        "a stage takes the daemon's whole state instead of what it uses:\n{}",
        offenders.join("\n")
    );
}
