//! "No module imports its caller": the daemon's modules form layers. This
//! test reads the daemon's module graph and fails when a stage
//! (`src/stage/<name>`) names the pipeline's spine (`pipeline/mod.rs`) or
//! another stage: stages take values and return typed outcomes, and name
//! only the types of `pipeline::gate`, which sit below them. Circles, here
//! and in every other crate, are the workspace test `module_circles`'s.

use std::path::Path;

use praxis_e2e::module_graph::{ModuleGraph, show};

fn daemon() -> ModuleGraph {
    let graph = ModuleGraph::read(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        graph.edges.len() > 20,
        "found only {} modules",
        graph.edges.len()
    );
    graph
}

#[test]
fn a_stage_names_neither_the_pipeline_nor_another_stage() {
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
    let spine = vec![String::from("pipeline")];
    let mut offenders = Vec::new();
    for module in stages {
        let (file, named) = &krate.edges[module];
        for target in named {
            let other_stage =
                target.first().is_some_and(|t| t == "stage") && target.get(1) != module.get(1);
            if *target == spine || other_stage {
                offenders.push(format!("{file} names {}", show(target)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "a stage imports its caller or another stage:\n{}",
        offenders.join("\n")
    );
}
