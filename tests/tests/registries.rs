//! Real package tools through praxisd's egress proxy, against the real
//! registries: `npm install`, `pip install` in a venv, `uv sync`, `go mod
//! download` and git over HTTP(S). Each reaches its registry through the
//! proxy (audited), and an install script that connects anywhere else is
//! refused and audited, or reaches nothing when it ignores the proxy. A
//! loopback listener stands in for "anywhere else"; a tool missing here, or
//! a public git host this machine cannot resolve, is skipped with a notice.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::Daemon;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// Asserts the egress audit has an allowed connection to each of `hosts`.
fn reached(d: &Daemon, hosts: &[&str]) {
    let events = d.egress_events();
    for host in hosts {
        assert!(
            events
                .iter()
                .any(|(dest, verdict)| dest == &format!("{host}:443") && verdict == "allowed"),
            "{host}: {events:?}"
        );
    }
}

/// A loopback listener standing in for another host: counts connections.
struct Elsewhere {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Elsewhere {
    fn start() -> Elsewhere {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&hits);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                counted.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Elsewhere { port, hits }
    }
}

#[test]
fn npm_installs_a_small_package_from_the_registry() {
    if !have("npm") {
        println!("skipping: npm is not installed");
        return;
    }
    let d = Daemon::start();
    std::fs::write(
        d.work().join("package.json"),
        r#"{"name":"e2e","version":"1.0.0","private":true}"#,
    )
    .unwrap();
    let out = d.run(&[
        "--",
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "is-number@7.0.0",
    ]);
    ok(&out);
    let installed =
        std::fs::read_to_string(d.work().join("node_modules/is-number/package.json")).unwrap();
    assert!(installed.contains("\"version\": \"7.0.0\""), "{installed}");
    reached(&d, &["registry.npmjs.org"]);
}

#[test]
fn an_install_script_that_connects_elsewhere_is_refused_and_audited() {
    if !have("npm") || !have("node") {
        println!("skipping: npm and node are needed");
        return;
    }
    let d = Daemon::start();
    let elsewhere = Elsewhere::start();
    let url = format!("http://127.0.0.1:{}/", elsewhere.port);
    std::fs::write(
        d.work().join("package.json"),
        r#"{"name":"e2e","version":"1.0.0","private":true}"#,
    )
    .unwrap();
    // A local package whose postinstall phones out twice: through the proxy
    // (curl honours the proxy variables) and straight (node's http does not).
    let pkg = d.work().join("phone-home");
    std::fs::create_dir_all(&pkg).unwrap();
    let script = format!(
        "touch \"$INIT_CWD/postinstall-ran\"; curl -sS -m 5 {url}; \
         node -e \"require('http').get('{url}').on('error', () => {{}})\""
    );
    let manifest = serde_json::json!({
        "name": "phone-home",
        "version": "1.0.0",
        "scripts": { "postinstall": script },
    });
    std::fs::write(pkg.join("package.json"), manifest.to_string()).unwrap();

    let out = d.run(&[
        "--",
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "./phone-home",
    ]);
    ok(&out);
    assert!(d.work().join("postinstall-ran").exists(), "{out:?}");
    assert_eq!(elsewhere.hits.load(Ordering::SeqCst), 0);
    let refused = format!("127.0.0.1:{}", elsewhere.port);
    assert!(
        d.egress_events()
            .contains(&(refused.clone(), "refused".to_owned())),
        "{:?}",
        d.egress_events()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("the egress proxy refused {refused}")),
        "{stderr}"
    );
}

#[test]
fn pip_installs_into_a_venv() {
    let d = Daemon::start();
    ok(&d.run(&["--", "python3", "-m", "venv", "venv"]));
    std::fs::write(d.work().join("requirements.txt"), "six==1.17.0\n").unwrap();
    // The virtualenv's own pip, found on the activated PATH, installs with
    // PyPI and its files host granted, nothing else.
    let install = ". venv/bin/activate && pip install --no-cache-dir -r requirements.txt";
    ok(&d.run(&["-c", install]));
    six_is_installed(&d, "venv/bin/python");
    reached(&d, &["pypi.org", "files.pythonhosted.org"]);
}

/// The project's `python` imports the `six` that was installed.
fn six_is_installed(d: &Daemon, python: &str) {
    let imported = d.run(&["--", python, "-c", "import six; print(six.__version__)"]);
    assert_eq!(
        String::from_utf8_lossy(&imported.stdout),
        "1.17.0\n",
        "{imported:?}"
    );
}

/// uv: the one on PATH, else the one `make test` installs into the project
/// venv beside `PRAXIS_PYTHON`.
fn uv() -> Option<PathBuf> {
    if have("uv") {
        return Some(PathBuf::from("uv"));
    }
    let python = std::env::var_os("PRAXIS_PYTHON")?;
    let beside = Path::new(&python).parent()?.join("uv");
    beside.is_file().then_some(beside)
}

#[test]
fn uv_syncs_a_project_from_pypi() {
    let Some(uv) = uv() else {
        println!("skipping: no uv on PATH and none in the project venv (PRAXIS_PYTHON)");
        return;
    };
    // A checkout under the host's /tmp (which commands do not see): the
    // project venv's uv is copied out of it first.
    let moved = common::outside_tmp();
    let uv = if uv.starts_with("/tmp") || uv.starts_with("/var/tmp") {
        let copy = moved.path().join("uv");
        std::fs::copy(&uv, &copy).unwrap();
        copy
    } else {
        uv
    };
    // The project venv's uv lies in no tree a command may read: the site
    // adds it, as an operator adds a shared toolchain.
    let site = match uv.is_absolute() {
        true => format!("[sandbox]\nreads = [{:?}]\n", uv.display().to_string()),
        false => String::new(),
    };
    let d = Daemon::start_with(&[("praxis.toml", &site)], &[]);
    std::fs::write(
        d.work().join("pyproject.toml"),
        "[project]\nname = \"e2e\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\n\
         dependencies = [\"six==1.17.0\"]\n",
    )
    .unwrap();
    let out = d.run(&["--", uv.to_str().unwrap(), "sync", "--no-python-downloads"]);
    ok(&out);
    six_is_installed(&d, ".venv/bin/python");
    reached(&d, &["pypi.org", "files.pythonhosted.org"]);
}

#[test]
fn go_downloads_modules_through_the_module_proxy() {
    let go = Command::new("go").arg("version").output();
    if !go.is_ok_and(|o| o.status.success()) {
        println!("skipping: go is not installed here (no `go` on PATH)");
        return;
    }
    let d = Daemon::start();
    std::fs::write(
        d.work().join("go.mod"),
        "module example.com/e2e\n\ngo 1.21\n\nrequire golang.org/x/text v0.14.0\n",
    )
    .unwrap();
    let out = d.run(&["--", "go", "mod", "download"]);
    ok(&out);
    reached(&d, &["proxy.golang.org"]);
}

/// A loopback git remote over plain HTTP (git's "dumb" protocol): serves the
/// files of `root` and nothing else.
fn serve_files(root: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let _ = reader.read_line(&mut request);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .split('?')
                .next()
                .unwrap_or("/")
                .trim_start_matches('/')
                .to_owned();
            let body = (!path.split('/').any(|p| p == ".."))
                .then(|| std::fs::read(root.join(&path)).ok())
                .flatten();
            let head = match &body {
                Some(b) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    b.len()
                ),
                None => String::from(
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_deref().unwrap_or_default());
        }
    });
    port
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=e2e@example.com", "-c", "user.name=e2e"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    ok(&out);
}

#[test]
fn git_clones_and_fetches_through_the_proxy() {
    let d = Daemon::start();
    // The remote's host comes from the command (clone) and from the
    // repository's config (fetch).
    let remote = tempfile::tempdir().unwrap();
    let src = remote.path().join("src");
    std::fs::create_dir(&src).unwrap();
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["commit", "-q", "--allow-empty", "-m", "first"]);
    git(remote.path(), &["clone", "-q", "--bare", "src", "repo.git"]);
    let bare = remote.path().join("repo.git");
    git(&bare, &["update-server-info"]);
    let port = serve_files(remote.path().to_path_buf());
    d.open_loopback(&[port]);

    let url = format!("http://127.0.0.1:{port}/repo.git");
    ok(&d.run(&["--", "git", "clone", "-q", &url, "clone"]));
    git(&src, &["commit", "-q", "--allow-empty", "-m", "second"]);
    git(&src, &["push", "-q", bare.to_str().unwrap(), "main"]);
    git(&bare, &["update-server-info"]);
    let fetched = d
        .cmd(&common::bin("praxis-run"))
        .args(["--", "git", "fetch", "-q"])
        .current_dir(d.work().join("clone"))
        .output()
        .unwrap();
    ok(&fetched);
    let log = Command::new("git")
        .args(["log", "--format=%s", "origin/main"])
        .current_dir(d.work().join("clone"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout), "second\nfirst\n");
    let dest = format!("127.0.0.1:{port}");
    let allowed = d
        .egress_events()
        .into_iter()
        .filter(|(to, verdict)| to == &dest && verdict == "allowed")
        .count();
    assert!(allowed >= 2, "{:?}", d.egress_events());

    // A public https remote, where this machine can resolve one.
    let public = "https://github.com/octocat/Hello-World.git";
    if ("github.com", 443).to_socket_addrs().is_err() {
        println!("skipping the public remote: github.com does not resolve here");
        return;
    }
    ok(&d.run(&["--", "git", "clone", "-q", "--depth", "1", public, "public"]));
    reached(&d, &["github.com"]);
}

/// Ordinary work judged as what it is: the virtualenv's pip named by its
/// path gets PyPI and installs; a dry run and liveness checks run (`kill -0
/// 1` was stopped as a signal to init); a version query of a program planted
/// on `PATH` inside the workspace stays held.
#[test]
fn a_venv_pip_named_by_path_installs_and_dry_runs_and_liveness_checks_run() {
    use std::os::unix::fs::PermissionsExt;

    let d = Daemon::start_in_git();
    ok(&d.run(&["--", "python3", "-m", "venv", ".venv"]));
    ok(&d.run(&[
        "--",
        ".venv/bin/pip",
        "install",
        "--no-cache-dir",
        "six==1.17.0",
    ]));
    six_is_installed(&d, ".venv/bin/python");
    reached(&d, &["pypi.org", "files.pythonhosted.org"]);

    std::fs::write(d.work().join("stray.txt"), "x\n").unwrap();
    let dry = d.run(&["--", "git", "clean", "-n"]);
    ok(&dry);
    assert!(
        String::from_utf8_lossy(&dry.stdout).contains("Would remove stray.txt"),
        "{dry:?}"
    );
    assert!(d.work().join("stray.txt").exists(), "a dry run removed it");

    let alive = d.run(&[
        "-c",
        "kill -0 $$ && echo alive; kill -0 1 2>/dev/null; echo checked",
    ]);
    ok(&alive);
    assert_eq!(
        String::from_utf8_lossy(&alive.stdout),
        "alive\nchecked\n",
        "{alive:?}"
    );

    let bin = d.work().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let planted = bin.join("praxis-planted-tool");
    std::fs::write(&planted, "#!/bin/sh\necho planted > pwned\n").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let held = d
        .cmd(&common::bin("praxis-run"))
        .args(["--", "praxis-planted-tool", "--version"])
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(held.status.code(), Some(125), "{held:?}");
    assert!(!d.work().join("pwned").exists(), "the planted tool ran");
}
