//! The fleet store end to end: a real PostgreSQL server started here,
//! three praxisd hosts in scratch homes, the operator's `praxis fleet`.

#[path = "../tests/common/mod.rs"]
mod common;

mod figures;
mod store;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::console::{field, http, log_in, login_url};
use common::{Daemon, bin, signal_json};
use store::Postgres;

/// The store with the schema, hosts `hosts` and one operator, `ops`.
struct Fleet {
    pg: Postgres,
    /// Login role -> password, as `fleet init` printed them.
    passwords: BTreeMap<String, String>,
}

impl Fleet {
    fn start(hosts: &[&str]) -> Fleet {
        let pg = Postgres::start();
        let mut args = vec!["fleet", "init", "--json", "--operator", "ops"];
        for h in hosts {
            args.extend(["--host", h]);
        }
        let out = praxis(&pg.owner_url(), &args);
        assert!(out.status.success(), "{out:?}");
        let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let passwords = done["created"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["role"].as_str().unwrap().to_owned(),
                    l["password"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        Fleet { pg, passwords }
    }

    fn url_of(&self, role: &str) -> String {
        self.pg.url(role, &self.passwords[role])
    }

    fn host_url(&self, host: &str) -> String {
        self.url_of(&format!("praxis_host_{host}"))
    }

    fn operator_url(&self) -> String {
        self.url_of("praxis_operator_ops")
    }

    /// A praxisd that joins the fleet as `host`, with `extra` lines in `[fleet]`.
    fn host(&self, host: &str, extra: &str) -> Daemon {
        let config = format!(
            "[fleet]\nurl = \"{}\"\nhost = \"{host}\"\n{extra}\n",
            self.host_url(host)
        );
        Daemon::start_with(&[("praxis.toml", &config)], &[])
    }

    /// `praxis fleet ARGS` as the operator, from a machine of its own.
    fn operator(&self, args: &[&str]) -> Output {
        let mut full = vec!["fleet"];
        full.extend_from_slice(args);
        praxis(&self.operator_url(), &full)
    }

    fn status(&self) -> serde_json::Value {
        let out = self.operator(&["status", "--json"]);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Waits until every host of `names` has sent a heartbeat.
    fn wait_joined(&self, names: &[&str]) {
        wait(Duration::from_secs(20), "every host joined", || {
            let status = self.status();
            names.iter().all(|n| {
                status["hosts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|h| h["name"] == *n && !h["last_seen_secs"].is_null())
            })
        });
    }
}

/// `praxis ARGS` with `PRAXIS_FLEET_URL=url`, outside any praxisd's scratch home.
fn praxis(url: &str, args: &[&str]) -> Output {
    Command::new(bin("praxis"))
        .args(args)
        .env("PRAXIS_FLEET_URL", url)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Polls `done` until it holds, failing after `limit`; returns how long it took.
fn wait(limit: Duration, what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

fn killed(d: &Daemon) -> Option<String> {
    let out = d.praxis(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["kill_switch"].as_str().map(str::to_owned)
}

fn git_push(d: &Daemon) -> Output {
    git_push_in(d, "session-1")
}

/// `git push` in agent session `session` (each has its own retry budget).
fn git_push_in(d: &Daemon, session: &str) -> Output {
    d.cmd(&bin("praxis-run"))
        .args(["--", "git", "push", "origin", "main"])
        .env("PRAXIS_SESSION", session)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn held_id(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    signal_json(out)["request_id"].as_str().unwrap().to_owned()
}

/// The push held on `d` was approved by the fleet's operator: the retry
/// runs, and the one after it is held again.
fn runs_once_approved_by_the_fleet(d: &Daemon) {
    let approved = &kinds(d, "approved")[0];
    assert!(
        approved["reason"]
            .as_str()
            .unwrap()
            .contains("fleet operator praxis_operator_ops"),
        "{approved}"
    );
    let ran = git_push(d);
    assert!(!matches!(ran.status.code(), Some(125 | 126)), "{ran:?}");
    held_id(&git_push(d));
}

fn repo(d: &Daemon) {
    common::unreachable_origin_repo(&d.work());
}

fn kinds(d: &Daemon, kind: &str) -> Vec<serde_json::Value> {
    d.events_of_kind(kind)
}

#[test]
fn the_fleet_kill_reaches_three_hosts_within_two_seconds_and_release_works() {
    let fleet = Fleet::start(&["a", "b", "c"]);
    // A slow poll: the kill must arrive by notification.
    let hosts: Vec<Daemon> = ["a", "b", "c"]
        .iter()
        .map(|h| fleet.host(h, "poll_secs = 30"))
        .collect();
    fleet.wait_joined(&["a", "b", "c"]);

    // Work in flight on host a, which the kill must end.
    let mut running = hosts[0]
        .cmd(&bin("praxis-run"))
        .args(["--", "sleep", "30"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait(Duration::from_secs(10), "sleep started", || {
        !kinds(&hosts[0], "started").is_empty()
    });

    let out = fleet.operator(&["kill", "--reason", "incident 42"]);
    assert!(out.status.success(), "{out:?}");
    let start = Instant::now();
    for h in &hosts {
        wait(Duration::from_secs(2), "the kill reached a host", || {
            killed(h).is_some()
        });
    }
    assert!(start.elapsed() < Duration::from_secs(2));
    wait(Duration::from_secs(2), "in-flight work ended", || {
        running.try_wait().unwrap().is_some()
    });
    for h in &hosts {
        // Each host's own audit chain names the fleet operator, in a
        // field of its own.
        wait(Duration::from_secs(2), "the kill recorded", || {
            kinds(h, "kill").iter().any(|e| {
                let reason = e["reason"].as_str().unwrap_or("");
                e["detail"]["fleet_operator"] == "praxis_operator_ops"
                    && reason.contains("incident 42")
            })
        });
        let refused = h.run(&["--", "true"]);
        assert_eq!(refused.status.code(), Some(126), "{refused:?}");
    }
    let status = fleet.status();
    assert_eq!(status["kill"][0]["engaged"], true, "{status}");

    let out = fleet.operator(&["release"]);
    assert!(out.status.success(), "{out:?}");
    for h in &hosts {
        wait(Duration::from_secs(2), "the release reached a host", || {
            killed(h).is_none()
        });
        assert!(h.run(&["--", "true"]).status.success());
        wait(Duration::from_secs(2), "the release recorded", || {
            !kinds(h, "release").is_empty()
        });
    }

    // One host only.
    let out = fleet.operator(&["kill", "--reason", "just b", "--host", "b"]);
    assert!(out.status.success(), "{out:?}");
    wait(Duration::from_secs(2), "b killed", || {
        killed(&hosts[1]).is_some()
    });
    assert!(killed(&hosts[0]).is_none() && killed(&hosts[2]).is_none());
    let out = fleet.operator(&["release", "--host", "b"]);
    assert!(out.status.success(), "{out:?}");
    wait(Duration::from_secs(2), "b released", || {
        killed(&hosts[1]).is_none()
    });
}

#[test]
fn a_hold_on_host_a_approved_from_another_machine_runs_once_on_a() {
    let fleet = Fleet::start(&["a", "b"]);
    let a = fleet.host("a", "poll_secs = 30");
    let _b = fleet.host("b", "poll_secs = 30");
    fleet.wait_joined(&["a", "b"]);
    repo(&a);

    let request = held_id(&git_push(&a));
    let mut listed = serde_json::Value::Null;
    wait(Duration::from_secs(5), "the hold is listed", || {
        let out = fleet.operator(&["pending", "--json"]);
        listed = serde_json::from_slice(&out.stdout).unwrap();
        !listed.as_array().unwrap().is_empty()
    });
    let hold = &listed[0];
    assert_eq!(hold["host"], "a", "{listed}");
    assert_eq!(hold["request_id"], request.as_str());
    assert!(
        hold["command"].as_str().unwrap().contains("git push"),
        "{hold}"
    );
    assert!(!hold["reason"].as_str().unwrap().is_empty());
    assert!(hold["grants"].is_array());

    let out = fleet.operator(&["approve", hold["id"].as_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let took = wait(Duration::from_secs(1), "the approval reached a", || {
        !kinds(&a, "approved").is_empty()
    });
    eprintln!("approval round trip: {took:?}");
    runs_once_approved_by_the_fleet(&a);
    // A decision is taken once.
    let again = fleet.operator(&["approve", hold["id"].as_str().unwrap()]);
    assert!(!again.status.success(), "{again:?}");

    // A denial from the fleet closes the next hold.
    let next = {
        let pending = a.praxis(&["pending", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&pending.stdout).unwrap();
        v[0]["request_id"].as_str().unwrap().to_owned()
    };
    wait(Duration::from_secs(5), "the next hold is listed", || {
        let out = fleet.operator(&["pending", "--json"]);
        String::from_utf8_lossy(&out.stdout).contains(&next)
    });
    assert!(fleet.operator(&["deny", &next]).status.success());
    wait(Duration::from_secs(1), "the denial reached a", || {
        !kinds(&a, "denied").is_empty()
    });
}

#[test]
fn a_host_role_can_neither_approve_its_own_hold_nor_touch_another_hosts_rows() {
    let fleet = Fleet::start(&["a", "b"]);
    let a = fleet.host("a", "");
    let b = fleet.host("b", "");
    fleet.wait_joined(&["a", "b"]);
    repo(&a);
    repo(&b);
    let request = held_id(&git_push(&a));
    held_id(&git_push(&b));
    wait(Duration::from_secs(5), "both holds listed", || {
        let out = fleet.operator(&["pending", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array().unwrap().len() == 2
    });
    let as_a = fleet.host_url("a");

    // Through the CLI with the host's own login: refused by the store.
    let out = praxis(&as_a, &["fleet", "approve", &format!("a/{request}")]);
    assert!(!out.status.success(), "{out:?}");
    // And in plain SQL.
    let digest = fleet
        .pg
        .psql(
            &as_a,
            &format!("SELECT digest FROM fleet.holds WHERE request_id = '{request}'"),
        )
        .unwrap();
    assert_eq!(digest.len(), 64, "a reads its own hold: {digest}");
    let insert = format!(
        "INSERT INTO fleet.decisions (host, request_id, approve, digest) VALUES ('a', '{request}', true, '{digest}')"
    );
    let refused = fleet.pg.psql(&as_a, &insert).unwrap_err();
    assert!(refused.contains("permission denied"), "{refused}");

    // b's rows: unseen, unchangeable, and a cannot write rows in b's name.
    let seen = fleet
        .pg
        .psql(&as_a, "SELECT count(*) FROM fleet.holds WHERE host = 'b'")
        .unwrap();
    assert_eq!(seen, "0");
    let seen = fleet
        .pg
        .psql(&as_a, "SELECT count(*) FROM fleet.hosts WHERE name = 'b'")
        .unwrap();
    assert_eq!(seen, "0");
    let changed = fleet
        .pg
        .psql(
            &as_a,
            "UPDATE fleet.hosts SET killed = true, policy_revision = 'forged' WHERE name = 'b' RETURNING name",
        )
        .unwrap();
    assert_eq!(changed, "");
    let forged = fleet.pg.psql(
        &as_a,
        "INSERT INTO fleet.holds (host, request_id, command, reason, digest) VALUES ('b', 'forged', 'x', 'x', 'x')",
    );
    assert!(
        forged.unwrap_err().contains("row-level security"),
        "a wrote a hold in b's name"
    );
    let kill = fleet.pg.psql(
        &as_a,
        "INSERT INTO fleet.kill (scope, engaged, reason) VALUES ('b', true, 'x')",
    );
    assert!(kill.unwrap_err().contains("permission denied"));
    let status = fleet.status();
    let b_row = status["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "b")
        .unwrap()
        .clone();
    assert_ne!(b_row["policy_revision"], "forged", "{b_row}");
    assert_eq!(b_row["killed"], false, "{b_row}");
    assert!(kinds(&a, "approved").is_empty());
}

#[test]
fn with_the_store_down_local_work_goes_on() {
    let mut fleet = Fleet::start(&["a", "b"]);
    let a = fleet.host("a", "");
    let b = fleet.host("b", "kill_when_unreachable_after = \"2s\"");
    fleet.wait_joined(&["a", "b"]);
    fleet.pg.stop();
    // ALLOW and STOP need no fleet, and do not wait for it.
    let start = Instant::now();
    assert!(a.run(&["--", "true"]).status.success());
    let stopped = a.run(&["--", "rm", "-rf", "/"]);
    assert_eq!(stopped.status.code(), Some(126), "{stopped:?}");
    assert!(start.elapsed() < Duration::from_secs(2));
    // Holds wait for a local approval.
    repo(&a);
    let id = held_id(&git_push(&a));
    assert!(a.praxis(&["approve", &id]).status.success());
    // A host told to trip when the store is unreachable does, and says why;
    // the other goes on.
    wait(Duration::from_secs(6), "b tripped", || killed(&b).is_some());
    assert!(killed(&b).unwrap().contains("unreachable"));
    assert!(killed(&a).is_none());
    // With the store back, b's own kill is released.
    fleet.pg.spawn();
    wait(Duration::from_secs(10), "b released", || {
        killed(&b).is_none()
    });
}

#[test]
fn init_is_idempotent_and_tls_checks_the_stores_certificate_and_name() {
    let (ca, cert, key) = store::certificates(&["localhost"]);
    let pg = Postgres::start_tls(&cert, &key);
    let init = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["fleet", "init", "--json", "--operator", "ops"];
        args.extend_from_slice(extra);
        let out = praxis(&pg.owner_url(), &args);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = init(&[]);
    assert_eq!(first["applied"], serde_json::json!([1, 2, 3, 4]));
    let password = first["created"][0]["password"].as_str().unwrap().to_owned();
    // Again, with a host more: nothing is re-applied, the operator's
    // password stands, the new host is made.
    let again = init(&["--host", "late"]);
    assert_eq!(again["applied"], serde_json::json!([]), "{again}");
    assert_eq!(again["version"], first["version"]);
    assert_eq!(
        again["existing"],
        serde_json::json!(["praxis_operator_ops"])
    );
    assert_eq!(again["created"][0]["role"], "praxis_host_late");

    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca).unwrap();
    let (other_ca, _, _) = store::certificates(&["localhost"]);
    let other_file = dir.path().join("other.pem");
    std::fs::write(&other_file, other_ca).unwrap();
    let status = |host: &str, root: &Path| {
        let params = format!("sslrootcert={}", root.display());
        praxis(
            &pg.tcp_url("praxis_operator_ops", &password, host, &params),
            &["fleet", "status", "--json"],
        )
    };
    // The store's own name, its own CA: verify-full passes.
    let ok = status("localhost", &ca_file);
    assert!(ok.status.success(), "{ok:?}");
    // The right CA, a name the certificate does not carry: refused.
    let wrong_name = status("127.0.0.1", &ca_file);
    assert!(!wrong_name.status.success(), "{wrong_name:?}");
    assert!(
        String::from_utf8_lossy(&wrong_name.stderr).contains("not valid for name"),
        "{wrong_name:?}"
    );
    // The right name, another CA: refused.
    let wrong_ca = status("localhost", &other_file);
    assert!(!wrong_ca.status.success(), "{wrong_ca:?}");
    assert!(
        String::from_utf8_lossy(&wrong_ca.stderr).contains("invalid peer certificate"),
        "{wrong_ca:?}"
    );
}

/// Host `host`'s records in the store: how many, and the highest seq.
fn copied(fleet: &Fleet, host: &str) -> (usize, i64) {
    let out = fleet
        .pg
        .psql(
            &fleet.pg.owner_url(),
            &format!("SELECT count(*) || ' ' || coalesce(max(seq), 0) FROM fleet.audit WHERE host = '{host}'"),
        )
        .unwrap();
    let (n, max) = out.split_once(' ').unwrap();
    (n.parse().unwrap(), max.parse().unwrap())
}

/// Waits until the store holds every record of `d`, once each.
fn wait_copied(fleet: &Fleet, host: &str, d: &Daemon) {
    let local = d.events().len();
    wait(Duration::from_secs(10), "the audit copied", || {
        copied(fleet, host) == (local, i64::try_from(local).unwrap())
    });
}

#[test]
fn every_record_of_three_hosts_is_copied_once_across_an_outage_and_verify_catches_an_edit() {
    let mut fleet = Fleet::start(&["a", "b", "c"]);
    let hosts: Vec<(&str, Daemon)> = ["a", "b", "c"]
        .into_iter()
        .map(|h| (h, fleet.host(h, "poll_secs = 1")))
        .collect();
    fleet.wait_joined(&["a", "b", "c"]);
    for (_, d) in &hosts {
        for _ in 0..3 {
            assert!(d.run(&["--", "true"]).status.success());
        }
    }
    for (name, d) in &hosts {
        wait_copied(&fleet, name, d);
    }
    // The store goes away; work goes on and its records wait.
    fleet.pg.stop();
    let a = &hosts[0].1;
    for _ in 0..5 {
        assert!(a.run(&["--", "true"]).status.success());
    }
    fleet.pg.spawn();
    for (name, d) in &hosts {
        wait_copied(&fleet, name, d);
    }
    // Verify passes once every host has reported its head.
    wait(Duration::from_secs(10), "verify passes", || {
        fleet.operator(&["audit", "verify"]).status.success()
    });
    let out = fleet.operator(&["audit", "verify", "--json"]);
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(checks.as_array().unwrap().len(), 3, "{checks}");

    // A row edited in the store, or taken away, is found.
    let owner = fleet.pg.owner_url();
    let tamper_and_verify = |sql: &str, found: &str| {
        fleet.pg.psql(&owner, sql).unwrap();
        let out = fleet.operator(&["audit", "verify"]);
        assert!(!out.status.success(), "{sql}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(found),
            "{out:?}"
        );
    };
    tamper_and_verify(
        "UPDATE fleet.audit SET hash = repeat('0', 64) WHERE host = 'b' AND seq = 2",
        "BROKEN",
    );
    fleet
        .pg
        .psql(
            &owner,
            "UPDATE fleet.audit SET hash = record->>'hash' WHERE host = 'b' AND seq = 2",
        )
        .unwrap();
    assert!(fleet.operator(&["audit", "verify"]).status.success());
    tamper_and_verify(
        "DELETE FROM fleet.audit WHERE host = 'c' AND seq = 2",
        "missing",
    );
    // A host cannot rewrite its own copy.
    let rewrite = fleet.pg.psql(
        &fleet.host_url("a"),
        "UPDATE fleet.audit SET kind = 'x' WHERE seq = 1",
    );
    assert!(rewrite.unwrap_err().contains("permission denied"));
}

#[test]
fn a_frozen_store_stalls_nothing_and_loses_or_doubles_nothing() {
    let fleet = Fleet::start(&["a"]);
    let a = fleet.host("a", "poll_secs = 1");
    fleet.wait_joined(&["a"]);
    wait_copied(&fleet, "a", &a);
    // Frozen for 20 s, far past the link's 5 s limit: its connection is
    // half-open, and every dial again meets a store that does not answer.
    fleet.pg.pause();
    let frozen = Instant::now();
    while frozen.elapsed() < Duration::from_secs(20) {
        let start = Instant::now();
        assert!(a.run(&["--", "true"]).status.success());
        assert!(start.elapsed() < Duration::from_secs(2));
        std::thread::sleep(Duration::from_millis(500));
    }
    fleet.pg.resume();
    wait_copied(&fleet, "a", &a);
    // The link dialled again: orders reach the host once more.
    let out = fleet.operator(&["kill", "--reason", "after the freeze"]);
    assert!(out.status.success(), "{out:?}");
    wait(Duration::from_secs(7), "the kill arrived", || {
        killed(&a).is_some()
    });
    assert!(fleet.operator(&["audit", "verify"]).status.success());
}

/// A STOP rule for `echo fleet-canary`; `example` is its `match` example.
fn canary_policy(example: &str) -> String {
    format!(
        "[[rule]]\nid = \"fleet-canary\"\ndecision = \"stop\"\nreason = \"the fleet forbids the canary\"\n\
         regex = \"echo\\\\s+fleet-canary\"\ntier = \"high_risk\"\nmatch = [\"{example}\"]\nnot_match = [\"echo hello\"]\n"
    )
}

/// What `fleet policy status --json` says of host `name`.
fn policy_of(fleet: &Fleet, name: &str) -> serde_json::Value {
    let out = fleet.operator(&["policy", "status", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"] == name)
        .cloned()
        .unwrap()
}

#[test]
fn a_pushed_policy_is_loaded_by_three_hosts_and_a_broken_one_changes_nothing() {
    let mut fleet = Fleet::start(&["a", "b", "c"]);
    let mut hosts: Vec<(&str, Daemon)> = ["a", "b", "c"]
        .into_iter()
        .map(|h| (h, fleet.host(h, "poll_secs = 30")))
        .collect();
    fleet.wait_joined(&["a", "b", "c"]);
    for (_, d) in &hosts {
        assert!(d.run(&["--", "echo", "fleet-canary"]).status.success());
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        canary_policy("echo fleet-canary"),
    )
    .unwrap();
    let push = |dir: &Path| fleet.operator(&["policy", "push", dir.to_str().unwrap()]);
    let out = push(dir.path());
    assert!(out.status.success(), "{out:?}");

    // By notification: the poll is 30 s.
    for (name, d) in &hosts {
        wait(Duration::from_secs(5), "the revision loaded", || {
            policy_of(&fleet, name)["fleet_policy"] == 1
        });
        let stopped = d.run(&["--", "echo", "fleet-canary"]);
        assert_eq!(stopped.status.code(), Some(126), "{name}: {stopped:?}");
        assert!(d.run(&["--", "echo", "hello"]).status.success());
    }
    let running = policy_of(&fleet, "a")["policy_revision"].clone();

    // A revision whose example fails is refused at the push.
    std::fs::write(
        dir.path().join("policy.toml"),
        canary_policy("echo something-else"),
    )
    .unwrap();
    let refused = push(dir.path());
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("nothing pushed"),
        "{refused:?}"
    );
    // A host's login may read revisions, never push one.
    let forged = fleet.pg.psql(
        &fleet.host_url("a"),
        "INSERT INTO fleet.policies (revision, patterns) VALUES ('x', 'x')",
    );
    assert!(forged.unwrap_err().contains("permission denied"));

    // Forced into the table past the push's checks: every host refuses it,
    // keeps the last good policy, and says so.
    fleet
        .pg
        .psql(
            &fleet.pg.owner_url(),
            "INSERT INTO fleet.policies (revision, patterns, policy)
             SELECT 'forced', patterns, '[[rule]]\nid = \"broken\"' FROM fleet.policies WHERE number = 1",
        )
        .unwrap();
    for (name, d) in &hosts {
        wait(
            Duration::from_secs(5),
            "the forced revision refused",
            || policy_of(&fleet, name)["refused"] == 2,
        );
        let host = policy_of(&fleet, name);
        assert_eq!(host["fleet_policy"], 1, "{host}");
        assert_eq!(host["policy_revision"], running, "{host}");
        let stopped = d.run(&["--", "echo", "fleet-canary"]);
        assert_eq!(stopped.status.code(), Some(126), "{name}: {stopped:?}");
        assert!(kinds(d, "reload").iter().any(|e| {
            e["reason"]
                .as_str()
                .unwrap_or("")
                .contains("last good policy kept")
        }));
    }

    // Restarted with the store away, a host runs the revision it loaded.
    fleet.pg.stop();
    let c = &mut hosts[2].1;
    assert!(c.praxis(&["stop"]).status.success());
    assert!(c.wait_exit(Duration::from_secs(10)).success());
    c.spawn();
    let stopped = c.run(&["--", "echo", "fleet-canary"]);
    assert_eq!(stopped.status.code(), Some(126), "{stopped:?}");
}

/// `praxis-run -- git push origin BRANCH` on host `d`, in `work`.
fn push_in(d: &Daemon, work: &Path, branch: &str) -> Output {
    d.cmd(&bin("praxis-run"))
        .args(["--", "git", "push", "origin", branch])
        .current_dir(work)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The ids in the fleet's review queue.
fn queued(fleet: &Fleet) -> Vec<String> {
    let out = fleet.operator(&["review", "queue", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits until host `d` has taken in the review that made `lesson` `to`.
fn took_in(d: &Daemon, lesson: &str, to: &str) {
    wait(
        Duration::from_secs(10),
        "the host took the review in",
        || {
            kinds(d, "review")
                .iter()
                .any(|e| e["detail"]["memory_id"] == lesson && e["detail"]["to"] == to)
        },
    );
}

#[test]
fn a_lesson_proposed_on_a_and_confirmed_once_relaxes_the_same_push_on_c() {
    let fleet = Fleet::start(&["a", "c"]);
    let a = fleet.host("a", "poll_secs = 1");
    let c = fleet.host("c", "poll_secs = 1");
    fleet.wait_joined(&["a", "c"]);
    // One workspace both hosts work in (a CI checkout path, say).
    let work = tempfile::tempdir().unwrap();
    common::judge::pushable_repo(work.path());
    held_id(&push_in(&c, work.path(), "feature/b"));

    // Approved on a with --remember: a lesson waits in the fleet's queue.
    let id = held_id(&push_in(&a, work.path(), "feature/a"));
    let said = a.praxis(&["approve", &id, "--remember"]);
    assert!(said.status.success(), "{said:?}");
    let lesson = format!("lesson-{id}");
    wait(Duration::from_secs(10), "the lesson queued", || {
        queued(&fleet).contains(&lesson)
    });

    // A host's login can neither confirm it nor slip in a confirmed one.
    let as_a = fleet.host_url("a");
    let confirm = fleet.pg.psql(
        &as_a,
        &format!("UPDATE fleet.memories SET review = 'confirmed' WHERE id = '{lesson}'"),
    );
    assert!(confirm.unwrap_err().contains("permission denied"));
    let forged = fleet.pg.psql(
        &as_a,
        &format!(
            "INSERT INTO fleet.memories (id, visibility, workspace, review, body, host)
             SELECT 'forged', visibility, workspace, 'confirmed',
                 jsonb_set(jsonb_set(body, '{{review}}', '\"confirmed\"'), '{{item,memory_id}}', '\"forged\"'), 'a'
             FROM fleet.memories WHERE id = '{lesson}'"
        ),
    );
    assert!(
        forged.unwrap_err().contains("row-level security"),
        "a host wrote a confirmed lesson"
    );
    // Still held on c: nothing is confirmed yet.
    held_id(&push_in(&c, work.path(), "feature/b"));

    // Confirmed once, from an operator's machine: c takes it in and the
    // same push runs there, naming the lesson.
    let out = fleet.operator(&["review", "confirm", &lesson]);
    assert!(out.status.success(), "{out:?}");
    took_in(&c, &lesson, "confirmed");
    let ran = push_in(&c, work.path(), "feature/b");
    assert!(!matches!(ran.status.code(), Some(125 | 126)), "{ran:?}");
    let decided = c.events_of_kind("decided").pop().unwrap();
    assert_eq!(decided["decision"], "ALLOW", "{decided}");
    assert!(
        decided["reason"].as_str().unwrap().contains(&lesson),
        "{decided}"
    );
    // The default branch is not covered.
    held_id(&push_in(&c, work.path(), "main"));
    assert!(!queued(&fleet).contains(&lesson));

    // Rejected in the fleet, it relaxes nothing any more.
    let out = fleet.operator(&["review", "reject", &lesson]);
    assert!(out.status.success(), "{out:?}");
    took_in(&c, &lesson, "rejected");
    held_id(&push_in(&c, work.path(), "feature/b"));
    held_id(&push_in(&a, work.path(), "feature/b"));
}

/// Host `a`, whose console spans the fleet through the operator's login.
fn host_with_console(fleet: &Fleet, console_url: &str) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let url_file = dir.path().join("config/praxis/console-fleet-url");
    let config = format!(
        "[fleet]\nurl = \"{}\"\nhost = \"a\"\npoll_secs = 30\n[console]\nfleet_url_file = \"{}\"\n",
        fleet.host_url("a"),
        url_file.display()
    );
    Daemon::start_in(
        dir,
        &[("praxis.toml", &config), ("console-fleet-url", console_url)],
        &[],
    )
}

/// A logged-in session on `d`'s console: its address and cookie.
fn console_of(d: &Daemon) -> (String, String) {
    let (host, login, _) = login_url(d);
    let cookie = log_in(&host, &login);
    (host, cookie)
}

fn get(console: &(String, String), path: &str) -> String {
    let page = http(&console.0, "GET", path, &[("Cookie", &console.1)], "");
    assert_eq!(page.status, 200, "{}", page.body);
    page.body
}

fn post(console: &(String, String), path: &str, form: &str) -> u16 {
    let headers = [
        ("Cookie", console.1.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    http(&console.0, "POST", path, &headers, form).status
}

#[test]
fn a_hold_on_host_b_is_approved_from_host_as_console_and_runs_once_on_b() {
    let fleet = Fleet::start(&["a", "b"]);
    let a = host_with_console(&fleet, &fleet.operator_url());
    let b = fleet.host("b", "poll_secs = 30");
    fleet.wait_joined(&["a", "b"]);
    repo(&b);
    let request = held_id(&git_push(&b));

    let console = console_of(&a);
    let mut page = String::new();
    wait(Duration::from_secs(10), "b's hold on a's console", || {
        page = get(&console, "/pending");
        page.contains(&request)
    });
    assert!(page.contains("git push"), "{page}");
    assert!(page.contains("<dd>b</dd>"), "the host column: {page}");
    assert!(
        page.contains("<option value=\"b\""),
        "the host filter: {page}"
    );
    // The host filter shows that host's rows only.
    assert!(get(&console, "/pending?host=b").contains(&request));
    let only_a = get(&console, "/pending?host=a");
    assert!(
        !only_a.contains(&request) && only_a.contains("Nothing is held."),
        "{only_a}"
    );
    assert!(!get(&console, "/pending/rows?host=a").contains(&request));

    let csrf = field(&page, "csrf");
    let decide = format!("csrf={csrf}&host=b&request_id={request}&action=approve&note=from+a");
    assert_eq!(post(&console, "/pending/decide", &decide), 303);
    let told = get(&console, "/pending");
    assert!(told.contains(&format!("approved b/{request}")), "{told}");
    wait(Duration::from_secs(5), "the approval reached b", || {
        !kinds(&b, "approved").is_empty()
    });
    runs_once_approved_by_the_fleet(&b);
    // A decision is taken once, from the console as from the CLI.
    assert_eq!(post(&console, "/pending/decide", &decide), 303);
    let again = get(&console, "/pending");
    assert!(again.contains("is already decided"), "{again}");

    // The kill switch page trips and releases another host.
    let kill = get(&console, "/kill");
    assert!(
        kill.contains("<h2>a</h2>") && kill.contains("<h2>b</h2>"),
        "{kill}"
    );
    let trip = format!("csrf={csrf}&host=b&action=trip&reason=drill&confirm=yes");
    assert_eq!(post(&console, "/kill", &trip), 303);
    wait(Duration::from_secs(5), "b tripped", || killed(&b).is_some());
    assert_eq!(killed(&a), None, "only b");
    let release = format!("csrf={csrf}&host=*&action=release&reason=over&confirm=yes");
    assert_eq!(post(&console, "/kill", &release), 303);
    wait(Duration::from_secs(5), "b released", || {
        killed(&b).is_none()
    });
}

#[test]
fn a_console_given_a_hosts_own_login_cannot_approve_another_hosts_hold() {
    let fleet = Fleet::start(&["a", "b"]);
    // The attacker's shortcut: the host's own login where the operator's goes.
    let a = host_with_console(&fleet, &fleet.host_url("a"));
    let b = fleet.host("b", "poll_secs = 30");
    fleet.wait_joined(&["a", "b"]);
    repo(&b);
    let request = held_id(&git_push(&b));

    let console = console_of(&a);
    let page = get(&console, "/pending");
    let csrf = field(&page, "csrf");
    let decide = format!("csrf={csrf}&host=b&request_id={request}&action=approve");
    assert_eq!(post(&console, "/pending/decide", &decide), 303);
    let told = get(&console, "/pending");
    assert!(told.contains("b: refused"), "{told}");
    let trip = format!("csrf={csrf}&host=b&action=trip&reason=x&confirm=yes");
    assert_eq!(post(&console, "/kill", &trip), 303);
    assert!(get(&console, "/kill").contains("b: refused"));
    std::thread::sleep(Duration::from_secs(2));
    assert!(kinds(&b, "approved").is_empty());
    assert_eq!(killed(&b), None);
    held_id(&git_push(&b));
}

/// `faketime`'s wrapper, or `None` (and a note that the test is skipped)
/// when it is absent and cannot be installed here; as root `make test`
/// installs it, so there it must be found.
fn faketime() -> Option<&'static str> {
    let found = Command::new("faketime")
        .args(["-f", "+0", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("faketime");
    }
    let root = nix::unistd::geteuid().is_root();
    assert!(
        !root,
        "faketime is missing: make test installs it (Debian: apt-get install faketime)"
    );
    eprintln!("skipped: faketime is absent (Debian: apt-get install faketime)");
    None
}

/// A praxisd that joins the fleet as `host` with its wall clock `offset`
/// (libfaketime's "+2h", "-2h") away from the store's; its monotonic
/// clock is left alone, as a skewed host's is. The library is preloaded
/// into praxisd itself (not through the wrapper, which would stand between
/// the test and the daemon it stops).
fn skewed_host(fleet: &Fleet, host: &str, offset: &str) -> Daemon {
    let config = format!(
        "[fleet]\nurl = \"{}\"\nhost = \"{host}\"\npoll_secs = 1\n",
        fleet.host_url(host)
    );
    Daemon::start_with(
        &[("praxis.toml", &config)],
        &[
            ("LD_PRELOAD", "/usr/$LIB/faketime/libfaketime.so.1"),
            ("FAKETIME", offset),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    )
}

/// `praxis fleet ARGS` as the operator, from a machine whose wall clock is
/// `offset` away from the store's.
fn skewed_operator(fleet: &Fleet, faketime: &str, offset: &str, args: &[&str]) -> Output {
    Command::new(faketime)
        .args(["-f", offset])
        .arg(bin("praxis"))
        .arg("fleet")
        .args(args)
        .env("PRAXIS_FLEET_URL", fleet.operator_url())
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn hosts_two_hours_ahead_and_behind_lose_nothing_and_double_nothing() {
    let Some(faketime) = faketime() else { return };
    let fleet = Fleet::start(&["a", "b", "c"]);
    let a = fleet.host("a", "poll_secs = 1");
    let b = skewed_host(&fleet, "b", "+2h");
    let c = skewed_host(&fleet, "c", "-2h");
    fleet.wait_joined(&["a", "b", "c"]);
    // Seen just now, by the store's clock, whatever the hosts' say.
    let status = fleet.status();
    for h in status["hosts"].as_array().unwrap() {
        let seen = h["last_seen_secs"].as_f64().unwrap();
        assert!((0.0..60.0).contains(&seen), "{status}");
    }
    let skewed = [("b", &b), ("c", &c)];

    // A hold on each skewed host, approved by an operator whose clock is
    // off the other way: it runs once, neither refused as expired nor
    // left open for reuse.
    for (name, d) in skewed {
        repo(d);
        let request = held_id(&git_push(d));
        let mut id = String::new();
        wait(Duration::from_secs(10), "the hold is listed", || {
            let out = fleet.operator(&["pending", "--json"]);
            let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let hold = listed
                .as_array()
                .unwrap()
                .iter()
                .find(|h| h["request_id"] == request.as_str());
            if let Some(h) = hold {
                assert_eq!(h["host"], name);
                let age = h["age_secs"].as_f64().unwrap();
                assert!((0.0..60.0).contains(&age), "{h}");
                id = h["id"].as_str().unwrap().to_owned();
            }
            hold.is_some()
        });
        let offset = if name == "b" { "-3h" } else { "+3h" };
        let out = skewed_operator(&fleet, faketime, offset, &["approve", &id, "--ttl", "60"]);
        assert!(out.status.success(), "{out:?}");
        wait(
            Duration::from_secs(5),
            "the approval reached the host",
            || !kinds(d, "approved").is_empty(),
        );
        let ran = git_push(d);
        assert!(
            !matches!(ran.status.code(), Some(125 | 126)),
            "{name}: {ran:?}"
        );
        held_id(&git_push(d));
        assert_eq!(kinds(d, "approved").len(), 1, "{name}");
    }

    // A fleet kill reaches both, and the release too.
    let out = skewed_operator(&fleet, faketime, "+5h", &["kill", "--reason", "skewed"]);
    assert!(out.status.success(), "{out:?}");
    for d in [&a, &b, &c] {
        wait(Duration::from_secs(3), "the kill reached a host", || {
            killed(d).is_some()
        });
        assert_eq!(d.run(&["--", "true"]).status.code(), Some(126));
    }
    let out = skewed_operator(&fleet, faketime, "-5h", &["release"]);
    assert!(out.status.success(), "{out:?}");
    for d in [&a, &b, &c] {
        wait(Duration::from_secs(3), "the release reached a host", || {
            killed(d).is_none()
        });
        assert!(d.run(&["--", "true"]).status.success());
    }

    // Every record of each skewed host is in the store once, and the
    // chains verify.
    for ((name, d), offset) in skewed.into_iter().zip([7200, -7200]) {
        wait_copied(&fleet, name, d);
        // The host's clock was skewed: its records' times are off the
        // store's by as much.
        let off = fleet
            .pg
            .psql(
                &fleet.pg.owner_url(),
                &format!(
                    "SELECT round(extract(epoch FROM max(ts::timestamptz - copied_at)))
                     FROM fleet.audit WHERE host = '{name}'"
                ),
            )
            .unwrap();
        let off: i64 = off.trim().parse().unwrap();
        assert!((off - offset).abs() < 120, "{name}: {off}");
    }
    wait(Duration::from_secs(10), "verify passes", || {
        fleet.operator(&["audit", "verify"]).status.success()
    });
    let status = fleet.status();
    for h in status["hosts"].as_array().unwrap() {
        let seen = h["last_seen_secs"].as_f64().unwrap();
        assert!((0.0..60.0).contains(&seen), "{status}");
    }
}

#[test]
fn a_lesson_confirmed_from_a_machine_a_hundred_days_behind_is_fresh_on_every_host() {
    let Some(faketime) = faketime() else { return };
    let fleet = Fleet::start(&["a", "c"]);
    let a = fleet.host("a", "poll_secs = 1");
    let c = fleet.host("c", "poll_secs = 1");
    fleet.wait_joined(&["a", "c"]);
    let work = tempfile::tempdir().unwrap();
    common::judge::pushable_repo(work.path());
    let id = held_id(&push_in(&a, work.path(), "feature/a"));
    assert!(a.praxis(&["approve", &id, "--remember"]).status.success());
    let lesson = format!("lesson-{id}");
    wait(Duration::from_secs(10), "the lesson queued", || {
        queued(&fleet).contains(&lesson)
    });
    // The operator's clock is further behind than a lesson stays fresh:
    // stamped by it, the lesson would arrive stale everywhere.
    let out = skewed_operator(&fleet, faketime, "-100d", &["review", "confirm", &lesson]);
    assert!(out.status.success(), "{out:?}");
    took_in(&c, &lesson, "confirmed");
    let ran = push_in(&c, work.path(), "feature/b");
    assert!(!matches!(ran.status.code(), Some(125 | 126)), "{ran:?}");
}
