//! The fleet's figures, side by side (`make bench-fleet`): kill and
//! release propagation to three hosts, the approval round trip, and audit
//! rows copied per second from one host and from three at once. Each is
//! checked against the bound the docs promise.

use std::time::{Duration, Instant};

use praxis_fleet::host::{AuditRow, HostLink};

use super::{Fleet, git_push_in, held_id, repo, wait};

const ROUNDS: usize = 20;

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

fn line(what: &str, samples: &mut [Duration]) -> String {
    format!(
        "| {what} | {} | {:.0} | {:.0} |",
        samples.len(),
        percentile(samples, 0.5).as_secs_f64() * 1000.0,
        percentile(samples, 0.99).as_secs_f64() * 1000.0
    )
}

/// Rows of `count` synthetic records from seq `first` on.
fn rows(first: i64, count: i64) -> Vec<AuditRow> {
    (first..first + count)
        .map(|seq| AuditRow {
            seq,
            ts: String::from("2026-11-26T12:00:00.000Z"),
            kind: String::from("finished"),
            record: serde_json::json!({
                "seq": seq, "kind": "finished", "reason": "a record of ordinary size",
                "argv_redacted": ["git", "status"], "exit_code": 0, "duration_ms": 12,
            }),
            prev_hash: format!("{:064x}", seq - 1),
            hash: format!("{seq:064x}"),
        })
        .collect()
}

/// Rows a second that `hosts` logins copy together, 500 a statement.
fn copy_rate(fleet: &Fleet, hosts: &[&str], per_host: i64) -> f64 {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut links = Vec::new();
        for h in hosts {
            let (link, _notices) = HostLink::connect(&fleet.host_url(h), h).await.unwrap();
            let from = link.audit_copied().await.unwrap() + 1;
            links.push((link, from));
        }
        let start = Instant::now();
        let mut copies = Vec::new();
        for (link, from) in links {
            copies.push(tokio::spawn(async move {
                let mut seq = from;
                while seq < from + per_host {
                    link.copy_audit(&rows(seq, 500)).await.unwrap();
                    seq += 500;
                }
            }));
        }
        for c in copies {
            c.await.unwrap();
        }
        (per_host * hosts.len() as i64) as f64 / start.elapsed().as_secs_f64()
    })
}

#[test]
#[ignore = "figures: make bench-fleet"]
fn figures() {
    let fleet = Fleet::start(&["a", "b", "c", "d", "e", "f"]);
    let hosts: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|h| fleet.host(h, "poll_secs = 30"))
        .collect();
    fleet.wait_joined(&["a", "b", "c"]);
    let kill_files: Vec<_> = hosts
        .iter()
        .map(|d| d.dir.path().join("state/praxis/KILL"))
        .collect();
    let (mut kills, mut releases) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        assert!(
            fleet
                .operator(&["kill", "--reason", "drill"])
                .status
                .success()
        );
        for f in &kill_files {
            wait(Duration::from_secs(2), "kill", || f.exists());
            kills.push(start.elapsed());
        }
        let start = Instant::now();
        assert!(fleet.operator(&["release"]).status.success());
        for f in &kill_files {
            wait(Duration::from_secs(2), "release", || !f.exists());
            releases.push(start.elapsed());
        }
    }
    let a = &hosts[0];
    repo(a);
    let mut approvals = Vec::new();
    for round in 0..ROUNDS / 2 {
        let session = format!("bench-{round}");
        let id = held_id(&git_push_in(a, &session));
        wait(Duration::from_secs(5), "listed", || {
            let out = fleet.operator(&["pending", "--json"]);
            String::from_utf8_lossy(&out.stdout).contains(&id)
        });
        let before = a.events_of_kind("approved").len();
        let start = Instant::now();
        assert!(
            fleet
                .operator(&["approve", &format!("a/{id}")])
                .status
                .success()
        );
        wait(Duration::from_secs(1), "approved", || {
            a.committed_events()
                .iter()
                .filter(|e| e["kind"] == "approved")
                .count()
                > before
        });
        approvals.push(start.elapsed());
        let _ = git_push_in(a, &session);
    }
    let one = copy_rate(&fleet, &["d"], 20_000);
    let three = copy_rate(&fleet, &["d", "e", "f"], 20_000);
    println!("| what | n | p50 ms | p99 ms |\n|---|---|---|---|");
    println!("{}", line("fleet kill, to each of 3 hosts", &mut kills));
    println!(
        "{}",
        line("fleet release, to each of 3 hosts", &mut releases)
    );
    println!(
        "{}",
        line(
            "fleet approve, until the host's approval is recorded",
            &mut approvals
        )
    );
    println!("\n| audit rows copied | rows/s |\n|---|---|");
    println!("| from one host | {one:.0} |\n| from three hosts together | {three:.0} |");
    assert!(percentile(&mut kills, 0.99) < Duration::from_secs(2));
    assert!(percentile(&mut approvals, 0.99) < Duration::from_secs(1));
}
