//! What reversibility costs on this repository's own workspace: a whole
//! workspace checkpoint (planned and taken, as before an opaque writer) and a
//! targeted snapshot of one file (as before `> README.md`), each beside the
//! plain copy of the same bytes that a `cp -r` of the tree would make.

use std::fs;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use praxis_snapshot::{Limits, Scope, Store};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Copies every file the checkpoint would keep, with std::fs::copy: the
/// command-alone baseline for the same tree.
fn plain_copy(files: &[PathBuf], root: &Path, into: &Path) {
    for (i, f) in files.iter().enumerate() {
        let _ = fs::copy(root.join(f), into.join(i.to_string()));
    }
}

fn bench(c: &mut Criterion) {
    let ws = repo();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(
        tmp.path().join("snapshots"),
        Limits {
            max_daily_bytes: u64::MAX,
            max_total_bytes: u64::MAX,
            ..Limits::default()
        },
    )
    .unwrap();
    let checkpoint = Scope::Workspace { ignored: false };
    let plan = store.plan(&ws, checkpoint.clone(), 0).unwrap();
    let kept: Vec<PathBuf> = store
        .capture("bench-list", &ws, &plan, 0)
        .unwrap()
        .before
        .iter()
        .filter(|e| e.blob.is_some())
        .map(|e| PathBuf::from(&e.path))
        .collect();
    store.discard("bench-list").unwrap();
    eprintln!(
        "workspace checkpoint of this repository: {} files, {} bytes",
        plan.files, plan.bytes
    );

    let mut g = c.benchmark_group("snapshot");
    g.sample_size(10);
    let mut n = 0u64;
    g.bench_function("workspace_checkpoint", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("ckpt-{n}");
            let plan = store.plan(&ws, checkpoint.clone(), 0).unwrap();
            store.capture(&id, &ws, &plan, 0).unwrap();
            store.discard(&id).unwrap();
        })
    });
    g.bench_function("plain_copy_of_the_same_files", |b| {
        b.iter(|| {
            let into = tempfile::tempdir_in(tmp.path()).unwrap();
            plain_copy(&kept, &ws, into.path());
        })
    });
    let readme = Scope::of_paths(&ws, &[ws.join("README.md")]);
    g.bench_function("one_file_snapshot", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("one-{n}");
            let plan = store.plan(&ws, readme.clone(), 0).unwrap();
            store.capture(&id, &ws, &plan, 0).unwrap();
            store.discard(&id).unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
