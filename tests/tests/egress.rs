//! The sandbox follows the decision, end to end against a real praxisd: a
//! command with network grants reaches exactly its granted destinations
//! through the egress proxy, every connection is audited, a program that
//! ignores the proxy reaches nothing, and an approved write outside the
//! workspace gets exactly the path it named. Loopback listeners stand in
//! for other hosts.

mod common;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;

use common::{Daemon, Host, signal_json};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_granted_destination_is_reached_through_the_proxy_and_audited() {
    let d = Daemon::start();
    let host = Host::start("granted\n", None);
    d.open_loopback(&[host.port]);
    let out = d.run(&["--", "curl", "-sS", &host.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "granted\n");
    assert_eq!(host.hits(), 1);
    let dest = format!("127.0.0.1:{}", host.port);
    assert_eq!(d.egress_events(), vec![(dest, "allowed".to_owned())]);
    let status = text(&d.praxis(&["status"]));
    assert!(
        status.contains("network: a network namespace per command"),
        "{status}"
    );
}

#[test]
fn a_destination_the_decision_did_not_grant_is_refused_audited_and_told() {
    let d = Daemon::start();
    let other = Host::start("other\n", None);
    let first = Host::start("first\n", Some(other.port));
    d.open_loopback(&[first.port, other.port]);
    // The granted host redirects to another: the proxy refuses the second hop.
    let out = d.run(&["--", "curl", "-sS", "-L", &first.url("/go")]);
    assert_eq!(other.hits(), 0, "{out:?}");
    let refused = format!("127.0.0.1:{}", other.port);
    assert!(
        d.egress_events()
            .contains(&(refused.clone(), "refused".to_owned())),
        "{:?}",
        d.egress_events()
    );
    let said = text(&out);
    assert!(
        said.contains(&format!("praxis: the egress proxy refused {refused}")),
        "{said}"
    );
}

#[test]
fn a_program_that_ignores_the_proxy_or_is_pointed_elsewhere_reaches_nothing() {
    let d = Daemon::start();
    let granted = Host::start("granted\n", None);
    let elsewhere = Host::start("elsewhere\n", None);
    d.open_loopback(&[granted.port, elsewhere.port]);
    // Both are held by the policy; approved, they run with the grant of the
    // URL they name, in a namespace where only the proxy leads out.
    let direct = d.approve_and_rerun(&["--", "curl", "-sS", "--noproxy", "*", &granted.url("/")]);
    assert_ne!(direct.status.code(), Some(0), "{direct:?}");
    let proxied_elsewhere = d.approve_and_rerun(&[
        "--",
        "curl",
        "-sS",
        "-x",
        &elsewhere.url(""),
        &granted.url("/"),
    ]);
    assert_ne!(
        proxied_elsewhere.status.code(),
        Some(0),
        "{proxied_elsewhere:?}"
    );
    assert_eq!(granted.hits(), 0);
    assert_eq!(elsewhere.hits(), 0);
}

#[test]
fn an_approved_write_outside_the_workspace_gets_exactly_its_path() {
    let d = Daemon::start();
    // A directory outside the workspace (and outside /tmp, the command's
    // private scratch): writing into it is held, and an approval grants the
    // one path named.
    let foreign = common::outside_tmp();
    std::fs::write(d.work().join("README.md"), "hello\n").unwrap();
    let out_path: PathBuf = foreign.path().join("out");
    let other_path: PathBuf = foreign.path().join("other");
    let script = d.work().join("other.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho leak > '{}'\n", other_path.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let command = format!("cp README.md '{}' && ./other.sh", out_path.display());
    let held = d.run(&["-c", &command]);
    assert_eq!(held.status.code(), Some(125), "{held:?}");
    let reason = signal_json(&held)["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains(&format!("will write {}", out_path.display())),
        "{reason}"
    );
    let ran = d.approve_and_rerun(&["-c", &command]);
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "hello\n");
    // The script's write to a path nobody granted fails in the sandbox.
    assert!(!other_path.exists(), "{ran:?}");
    assert_ne!(ran.status.code(), Some(0), "{ran:?}");
}

#[test]
fn cargo_fetches_a_real_crate_through_the_proxy() {
    let d = Daemon::start();
    // The toolchain's own cargo (the rustup proxy would look for its state
    // under the scratch HOME), and an empty cargo home, so the crate must
    // come from the registry through the proxy.
    let cargo = std::process::Command::new("rustup")
        .args(["which", "cargo"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| String::from("cargo"));
    std::fs::create_dir_all(d.home().join(".cargo")).unwrap();
    let krate = d.work().join("fetchme");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"fetchme\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/main.rs"),
        "fn main() { println!(\"{}\", itoa::Buffer::new().format(42)); }\n",
    )
    .unwrap();
    let out = d
        .cmd(&common::bin("praxis-run"))
        .args(["--", &cargo, "run", "-q"])
        .current_dir(&krate)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    let allowed: Vec<String> = d
        .egress_events()
        .into_iter()
        .filter(|(_, verdict)| verdict == "allowed")
        .map(|(dest, _)| dest)
        .collect();
    assert!(
        allowed.iter().any(|dest| dest.ends_with("crates.io:443")),
        "{allowed:?}"
    );
}

#[test]
fn a_bound_credential_reaches_only_its_destination_and_never_the_child() {
    let secret = "s3cr3t-bound-value-7f2c";
    let d = Daemon::start_with(&[], &[("PRAXIS_E2E_API_SECRET", secret)]);
    let bound = Host::start("bound\n", None);
    let other = Host::start("other\n", None);
    d.open_loopback(&[bound.port, other.port]);
    let to = format!("127.0.0.1:{}", bound.port);
    d.bind_api_credential(&to);

    let out = d.run(&["--", "curl", "-sS", &bound.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(bound.authorization(), vec![format!("Bearer {secret}")]);
    let out = d.run(&["--", "curl", "-sS", &other.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        other.authorization().is_empty(),
        "{:?}",
        other.authorization()
    );

    // Inside the sandbox the variable holds a placeholder, never the value.
    let env = d.run(&["--", "printenv", "API_TOKEN"]);
    let seen = String::from_utf8_lossy(&env.stdout).trim().to_owned();
    assert!(seen.starts_with("praxis-placeholder-api-"), "{env:?}");
    assert!(!seen.contains(secret));
}

#[test]
fn a_post_to_a_loopback_port_not_opened_is_held_naming_it_and_never_arrives() {
    let d = Daemon::start();
    // The Docker API's port: root on the host for whoever reaches it.
    let docker = Host::serve(
        TcpListener::bind("127.0.0.1:2375").expect("port 2375 free for the test"),
        "{}\n",
        None,
    );
    for host in [
        "127.0.0.1",
        "localhost",
        "0.0.0.0",
        "2130706433",
        "0x7f.1",
        "[::ffff:127.0.0.1]",
        "[::1]",
    ] {
        let post = format!("curl -sS -X POST http://{host}:2375/containers/create -d '{{}}'");
        let out = d.run(&["-c", &post]);
        assert_eq!(out.status.code(), Some(125), "{post}: {out:?}");
        let reason = signal_json(&out)["reason"].as_str().unwrap().to_owned();
        assert!(reason.contains("port 2375"), "{post}: {reason}");
    }
    // Approved anyway, the proxy still refuses it.
    let post = "curl -sS -X POST http://127.0.0.1:2375/containers/create -d '{}'";
    let out = d.approve_and_rerun(&["-c", post]);
    assert!(text(&out).contains("port 2375"), "{out:?}");
    assert_eq!(docker.hits(), 0);
    assert!(
        d.egress_events()
            .contains(&("127.0.0.1:2375".to_owned(), "refused".to_owned())),
        "{:?}",
        d.egress_events()
    );

    // A port the operator opened takes the same request.
    let dev = Host::start("created\n", None);
    d.open_loopback(&[dev.port]);
    let post = format!("curl -sS -X POST {} -d '{{}}'", dev.url("/api"));
    let out = d.run(&["-c", &post]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "created\n");
    assert_eq!(dev.hits(), 1);
}

#[test]
fn praxisd_own_tcp_api_is_never_reachable_from_a_command() {
    let free = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr());
    let port = free.unwrap().port();
    let config = format!("[api]\ntcp = \"127.0.0.1:{port}\"\n");
    let d = Daemon::start_with(&[("praxis.toml", &config)], &[]);
    // Even opened by the operator.
    d.open_loopback(&[port]);
    let out = d.run(&[
        "--",
        "curl",
        "-sS",
        &format!("http://127.0.0.1:{port}/v1/recall"),
    ]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let reason = signal_json(&out)["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains(&format!("port {port}")) && reason.contains("Praxis' own API"),
        "{reason}"
    );
}

#[test]
fn a_bound_credential_goes_only_into_its_header_and_never_comes_back() {
    let secret = "s3cr3t-echoed-value-5d1a";
    let d = Daemon::start_with(&[], &[("PRAXIS_E2E_API_SECRET", secret)]);
    let bound = Host::start("bound\n", None);
    let other = Host::start("other\n", None);
    d.open_loopback(&[bound.port, other.port]);
    d.bind_api_credential(&format!("127.0.0.1:{}", bound.port));

    // The host got the value and echoed it: the child sees the placeholder.
    let run = |script: &str| {
        let out = d.run(&["-c", script]);
        assert_eq!(out.status.code(), Some(0), "{script}: {out:?}");
        std::fs::read_to_string(d.work().join("seen.txt")).unwrap()
    };
    let seen = run(&format!(
        "curl -sS -D seen.txt -o /dev/null {}",
        bound.url("/")
    ));
    assert_eq!(bound.authorization(), vec![format!("Bearer {secret}")]);
    assert!(!seen.contains(secret), "{seen}");
    assert!(
        seen.to_lowercase()
            .contains("x-seen-authorization: bearer praxis-placeholder-api-"),
        "{seen}"
    );
    let masked = d
        .events_of_kind("egress")
        .iter()
        .any(|e| e["detail"]["masked"] == 1);
    assert!(masked, "{:?}", d.events_of_kind("egress"));

    // The placeholder anywhere else is refused, and nothing arrives.
    for (place, script) in [
        (
            "`x-echo` header",
            format!(
                "curl -sS -H \"X-Echo: $API_TOKEN\" -o seen.txt {}",
                bound.url("/")
            ),
        ),
        (
            "the URL",
            format!("curl -sS -o seen.txt \"{}?t=$API_TOKEN\"", bound.url("/")),
        ),
        (
            "the body",
            format!(
                "curl -sS -o seen.txt --data \"t=$API_TOKEN\" {}",
                bound.url("/")
            ),
        ),
    ] {
        let seen = run(&script);
        assert!(
            seen.contains("praxis egress: the placeholder of credential `api` is in")
                && seen.contains(place),
            "{script}: {seen}"
        );
        assert!(!seen.contains(secret), "{seen}");
    }
    assert_eq!(bound.hits(), 1);

    // To another host, the placeholder stays a placeholder.
    run(&format!(
        "curl -sS -H \"Authorization: Bearer $API_TOKEN\" -o seen.txt {}",
        other.url("/")
    ));
    let sent = other.authorization();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(
        sent[0].starts_with("Bearer praxis-placeholder-api-") && !sent[0].contains(secret),
        "{sent:?}"
    );
}

#[test]
fn a_directory_copied_to_a_new_granted_path_arrives_as_a_directory() {
    let d = Daemon::start();
    let src = d.work().join("src");
    std::fs::create_dir_all(src.join("inner")).unwrap();
    std::fs::write(src.join("inner/file"), "copied\n").unwrap();
    // Outside the workspace, and not under /tmp (the command's private
    // scratch): each copy is held and approved with a write grant for its
    // new path.
    let outside = common::outside_tmp();
    let at = |name: &str| outside.path().join(name);

    // cp -a: the new path is made a directory first, so cp copies into it
    // and the agent is told where the copy went and how to copy the
    // contents instead.
    let dest = at("by-cp");
    let out = d.approve_and_rerun(&["--", "cp", "-a", "src", dest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dest.join("src/inner/file")).unwrap(),
        "copied\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cp copied src into {}/src", dest.display())),
        "{stderr}"
    );

    // cp -rT copies the contents to the new name itself, silently.
    let dest = at("by-cp-t");
    let out = d.approve_and_rerun(&["--", "cp", "-rT", "src", dest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dest.join("inner/file")).unwrap(),
        "copied\n"
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("praxis:"),
        "{out:?}"
    );

    // Several sources need a directory to land in.
    std::fs::write(d.work().join("README.md"), "hello\n").unwrap();
    let dest = at("by-cp-many");
    let out = d.approve_and_rerun(&["--", "cp", "-r", "src", "README.md", dest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(dest.join("src/inner/file").is_file() && dest.join("README.md").is_file());

    // A single file copied recursively stays a file.
    let dest = at("one-file");
    let out = d.approve_and_rerun(&["--", "cp", "-r", "README.md", dest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "hello\n");

    // rsync to a new directory, with and without the trailing slash.
    if std::process::Command::new("rsync")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipping rsync: not installed");
        return;
    }
    let dest = at("by-rsync");
    let out = d.approve_and_rerun(&["--", "rsync", "-a", "src/", dest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dest.join("inner/file")).unwrap(),
        "copied\n"
    );
    let dest = at("by-rsync-named");
    let out = d.approve_and_rerun(&["--", "rsync", "-a", "src", dest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dest.join("src/inner/file")).unwrap(),
        "copied\n"
    );
}

/// A command that ran without network and failed saying it found none is
/// told why, in one line, even when the words reach praxisd in two reads.
#[test]
fn a_command_that_found_no_network_is_told_why() {
    let d = Daemon::start();
    std::fs::write(
        d.work().join("fetch.sh"),
        "printf 'curl: (6) Could not res' >&2; sleep 0.2; echo 'olve host: example.com' >&2; exit 6\n",
    )
    .unwrap();
    let out = d.run(&["-c", "sh fetch.sh"]);
    assert_eq!(out.status.code(), Some(6), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let told: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("praxis: this command ran without network"))
        .collect();
    assert_eq!(told.len(), 1, "{stderr}");
}
