//! Redactor throughput on ordinary build output: the shipped rules alone,
//! with 16 brokered values, and streamed in 4 KiB chunks. Criterion reports
//! the rate (MiB/s) from the byte throughput.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use praxis_policy::redact::{Redactor, builtin_config};

const INPUT_BYTES: usize = 1 << 20;
const CHUNK: usize = 4 * 1024;

/// About 1 MiB of cargo, npm, test and git output, including lines that
/// contain rule keywords (so the prefilter lets regexes run) but no secret.
fn build_log() -> Vec<u8> {
    let templates = [
        "   Compiling serde_derive v1.0.{n}\n",
        "   Compiling tokenizers v0.15.{n}\n",
        "warning: unused variable: `token` --> src/lexer.rs:{n}:9\n",
        "test auth::tests::rejects_expired_session_{n} ... ok\n",
        "npm warn deprecated inflight@1.0.{n}: This module is not supported\n",
        "added {n} packages, and audited {n} packages in 3s\n",
        "commit 3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a{n:04}\n",
        "Author: Jane Doe <jane@example.org>\n",
        "    \"integrity\": \"sha512-Qm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy{n}==\",\n",
        "GET https://registry.npmjs.org/left-pad/-/left-pad-1.3.{n}.tgz 200\n",
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in {n}.42s\n",
        "request_id=123e4567-e89b-12d3-a456-4266141{n:05} status=200\n",
    ];
    let mut out = Vec::with_capacity(INPUT_BYTES + 128);
    let mut n = 0usize;
    while out.len() < INPUT_BYTES {
        let line = templates[n % templates.len()]
            .replace("{n:04}", &format!("{:04}", n % 10_000))
            .replace("{n:05}", &format!("{:05}", n % 100_000))
            .replace("{n}", &(n % 1000).to_string());
        out.extend_from_slice(line.as_bytes());
        n += 1;
    }
    out.truncate(INPUT_BYTES);
    out
}

fn brokered() -> Vec<(String, Vec<u8>)> {
    (0..16)
        .map(|i| {
            (
                format!("cred_{i}"),
                format!("brokered-{i:02}-Zq3vT9kLm2Np8Rwx{}", i * 7919).into_bytes(),
            )
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let config = builtin_config().expect("shipped rules parse");
    let rules = Redactor::new(&config).expect("shipped rules load");
    let values = brokered();
    let pairs: Vec<(&str, &[u8])> = values
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_slice()))
        .collect();
    let with_values = rules.with_known_values(&pairs).expect("known values build");
    let log = build_log();
    assert!(
        rules.matches(&log).is_empty(),
        "the benchmark log must hold no secret"
    );

    let mut group = c.benchmark_group("redact_1MiB_build_log");
    group.throughput(Throughput::Bytes(log.len() as u64));
    group.sample_size(20);
    group.bench_function("rules", |b| {
        b.iter(|| black_box(rules.redact_bytes(black_box(&log))).len())
    });
    group.bench_function("rules_and_16_known_values", |b| {
        b.iter(|| black_box(with_values.redact_bytes(black_box(&log))).len())
    });
    group.bench_function("stream_4KiB_chunks_16_known_values", |b| {
        b.iter(|| {
            let mut stream = with_values.stream();
            let mut emitted = 0;
            for chunk in log.chunks(CHUNK) {
                emitted += stream.push(black_box(chunk)).len();
            }
            emitted + stream.finish().len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
