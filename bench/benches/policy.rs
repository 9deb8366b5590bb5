//! Policy decision latency: analyze + decide over the whole regression corpus,
//! and on adversarial inputs of 60 KB and 1 MB.
//!
//! Targets: median ≤ 10 µs per decision over the corpus; 1 MB ≤ 50 ms.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use praxis_policy::cases;
use praxis_policy::engine::example_context;
use praxis_policy::{CommandText, Policy, Request};

fn corpus_commands() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).expect("corpus file");
            cases::parse(&f.display().to_string(), &text).expect("corpus parses")
        })
        .map(|c| c.command)
        .collect()
}

fn decide(policy: &Policy, ctx: &praxis_policy::Context, command: &str) -> praxis_policy::Verdict {
    let request = Request {
        command: CommandText::Shell(command),
        role: "agent",
    };
    let analysis = policy.analyze(&request);
    policy.decide(&request, &analysis, ctx).decision
}

fn bench_corpus(c: &mut Criterion) {
    let policy = Policy::builtin().expect("builtin policy");
    let ctx = example_context::context();
    let commands = corpus_commands();
    let mut group = c.benchmark_group("policy");
    group.throughput(Throughput::Elements(commands.len() as u64));
    group.bench_function("corpus (per iteration: every case once)", |b| {
        b.iter(|| {
            for cmd in &commands {
                black_box(decide(&policy, &ctx, cmd));
            }
        })
    });
    group.finish();

    // Per-decision median: each command timed on its own, the median printed.
    let mut samples: Vec<Duration> = commands
        .iter()
        .map(|cmd| {
            let rounds = 50u32;
            let start = std::time::Instant::now();
            for _ in 0..rounds {
                black_box(decide(&policy, &ctx, cmd));
            }
            start.elapsed() / rounds
        })
        .collect();
    samples.sort();
    let pct = |p: usize| samples[(samples.len() - 1) * p / 100];
    println!(
        "policy/per-decision over {} corpus commands: median {:?}, p90 {:?}, p99 {:?}, max {:?}",
        samples.len(),
        pct(50),
        pct(90),
        pct(99),
        samples[samples.len() - 1]
    );
}

fn adversarial_inputs(size: usize) -> Vec<(&'static str, String)> {
    let repeat = |unit: &str| unit.repeat(size / unit.len());
    vec![
        ("nested $(", repeat("$(")),
        ("long pipeline", repeat("cat a | ")),
        ("long word", repeat("a")),
        ("many lists", repeat("rm -rf x; ")),
        ("quotes", repeat("'\"")),
        ("here-doc markers", repeat("cat <<E\n")),
        // Every argument a distinct system path given to a program that can
        // write, and inline code writing a distinct system file per call.
        (
            "distinct path arguments",
            format!("python3 x.py {}", numbered("/etc/x", " ", size)),
        ),
        (
            "inline code writing paths",
            format!(
                "python3 -c '{}'",
                numbered("open(\"/etc/x", "\", \"w\");", size)
            ),
        ),
    ]
}

/// `{head}0{tail}{head}1{tail}…`, about `size` bytes.
fn numbered(head: &str, tail: &str, size: usize) -> String {
    let mut out = String::with_capacity(size + 32);
    let mut i = 0;
    while out.len() < size {
        out.push_str(&format!("{head}{i}{tail}"));
        i += 1;
    }
    out
}

fn bench_adversarial(c: &mut Criterion) {
    let policy = Policy::builtin().expect("builtin policy");
    let ctx = example_context::context();
    let mut group = c.benchmark_group("policy-adversarial");
    group.sample_size(10);
    for (size, label) in [(60 * 1024, "60KB"), (1 << 20, "1MB")] {
        for (name, input) in adversarial_inputs(size) {
            group.bench_function(format!("{label} {name}"), |b| {
                b.iter(|| black_box(decide(&policy, &ctx, &input)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_corpus, bench_adversarial);
criterion_main!(benches);
