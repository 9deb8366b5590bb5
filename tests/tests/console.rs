//! The operator's web console end to end: a real praxisd, the agent's
//! `praxis-run`, `praxis console --url`, and a real headless Chromium
//! driven over WebDriver (Debian's `chromium` and `chromium-driver`, which
//! `make test` installs). Screenshots of each page go to
//! `target/tmp/console-screenshots`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::console::{http, login_url};
use common::{Daemon, bin, signal_json};
use serde_json::{Value, json};

/// Makes the workspace a git repository whose `origin` cannot be reached.
fn push(d: &Daemon) -> Output {
    d.run(&["--", "git", "push", "origin", "main"])
}

fn held_id(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    signal_json(out)["request_id"].as_str().unwrap().to_owned()
}

fn ran(out: &Output) {
    assert!(
        !matches!(out.status.code(), Some(125 | 126)),
        "expected it to run: {out:?}"
    );
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A headless Chromium under chromedriver, ended on drop.
struct Browser {
    driver: Child,
    address: String,
    session: String,
    _profile: tempfile::TempDir,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    /// `None` (the test says it is skipped) where Chromium is not installed.
    fn start() -> Option<Browser> {
        let driver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .find(|p| Path::new(p).is_file())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut browser = Browser {
            driver: child,
            address: format!("127.0.0.1:{port}"),
            session: String::new(),
            _profile: profile,
        };
        wait_for("chromedriver", || {
            TcpStream::connect(&browser.address).is_ok()
        });
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,1000",
                         format!("--user-data-dir={}", browser._profile.path().display())],
            }
        }}});
        let made = browser.call("POST", "/session", &capabilities);
        browser.session = made["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {made}"))
            .to_owned();
        Some(browser)
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let path = if path == "/session" {
            path.to_owned()
        } else {
            format!("/session/{}{path}", self.session)
        };
        let answer = http(
            &self.address,
            method,
            &path,
            &[("Content-Type", "application/json")],
            &body.to_string(),
        );
        let v: Value = serde_json::from_str(&answer.body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}: {}", answer.body));
        v["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", &json!({ "url": url }));
    }

    fn url(&self) -> String {
        self.call("GET", "/url", &json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn source(&self) -> String {
        self.call("GET", "/source", &json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn find(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            "/element",
            &json!({"using": "css selector", "value": css}),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    fn click(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/click"), &json!({}));
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            &json!({ "text": text }),
        );
    }

    fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.call("GET", "/screenshot", &json!({}));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = http(
                &self.address,
                "DELETE",
                &format!("/session/{}", self.session),
                &[],
                "",
            );
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

#[test]
fn an_operator_approves_a_held_command_in_the_browser_and_the_audit_shows_its_chain() {
    let Some(browser) = Browser::start() else {
        eprintln!("skipped: no chromedriver (apt-get install chromium chromium-driver)");
        return;
    };
    let d = Daemon::start();
    common::unreachable_origin_repo(&d.work());
    let (_, _, url) = login_url(&d);

    browser.go(&url);
    assert!(browser.url().ends_with("/pending"), "{}", browser.url());
    assert!(browser.source().contains("Nothing is held."));
    browser.screenshot("login-pending-empty");

    // The agent's command is held; the open page shows it without a reload.
    let id = held_id(&push(&d));
    let article = format!("article[data-request=\"{id}\"]");
    wait_for("the held request on the open page", || {
        browser.source().contains(&id)
    });
    let shown = browser.source();
    assert!(shown.contains("git push origin main"), "{shown}");
    assert!(
        shown.contains("<li>will connect to example.invalid:443</li>"),
        "the grants: {shown}"
    );
    browser.screenshot("pending");

    browser.type_into(&format!("{article} input[name=note]"), "release 1.2");
    browser.click(&format!("{article} button[value=approve]"));
    wait_for("the approval's outcome", || {
        browser.source().contains(&format!("approved {id}"))
    });
    browser.screenshot("pending-approved");

    // The retry runs once; the one after is held again.
    ran(&push(&d));
    let again = held_id(&push(&d));
    assert_ne!(again, id);

    // The approval names the logged-in operator, as `praxis approve` does.
    let approved = d.events_of_kind("approved");
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["request_id"], id.as_str());
    assert_eq!(approved[0]["uid"], nix::unistd::geteuid().as_raw());
    assert_eq!(approved[0]["detail"]["note"], "release 1.2");

    browser.go(&format!(
        "{}/audit?decision=HOLD",
        url.split("/login").next().unwrap()
    ));
    assert!(browser.source().contains("chain verified"));
    browser.screenshot("audit");
    browser.click(&format!("a[href$=\"id={id}\"]"));
    let chain = browser.source();
    let kinds: Vec<&str> = chain
        .match_indices("<li data-kind=\"")
        .map(|(at, m)| {
            let rest = &chain[at + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    for kind in [
        "decided",
        "approved",
        "approval_consumed",
        "started",
        "finished",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert!(chain.contains("HOLD"));
    browser.screenshot("audit-request");

    // Approve and remember proposes a lesson; confirmed on the Review page
    // as an instruction, it allows the next such push with its memory.
    let base = url.split("/login").next().unwrap().to_owned();
    browser.go(&format!("{base}/pending"));
    browser.click(&format!(
        "article[data-request=\"{again}\"] button[value=remember]"
    ));
    wait_for("the remembered approval", || {
        browser.source().contains(&format!("approved {again}"))
    });
    ran(&push(&d));
    browser.go(&format!("{base}/review"));
    let queue = browser.source();
    assert!(queue.contains("git push"), "{queue}");
    assert!(queue.contains("would"), "the replay: {queue}");
    browser.screenshot("review");
    browser.click("article.review input[name=as_instruction]");
    browser.click("article.review button[type=submit]");
    wait_for("the confirmation", || {
        browser.source().contains("the queue is empty")
    });
    // In a new session: the first two spent this one's retry budget.
    let allowed = d
        .cmd(&bin("praxis-run"))
        .args(["--", "git", "push", "origin", "main"])
        .env("PRAXIS_SESSION", "after-review")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ran(&allowed);
    let decided = d.events_of_kind("decided");
    let last = decided.last().unwrap();
    assert_eq!(last["decision"], "ALLOW", "{last}");
    assert!(last["detail"]["memory_used"].is_array(), "{last}");

    // The kill switch: tripped with a reason and a confirmation, then released.
    browser.go(&format!("{base}/kill"));
    browser.type_into("input[name=reason]", "incident 7");
    browser.click("input[name=confirm]");
    browser.click("main button[type=submit]");
    wait_for("the tripped state", || browser.source().contains("TRIPPED"));
    browser.screenshot("kill-tripped");
    let refused = d.run(&["--", "true"]);
    assert_eq!(refused.status.code(), Some(126), "{refused:?}");
    assert!(
        signal_json(&refused)["reason"]
            .as_str()
            .unwrap()
            .contains("incident 7")
    );
    let killed = d.events_of_kind("kill");
    assert_eq!(killed[0]["uid"], nix::unistd::geteuid().as_raw());
    browser.type_into("input[name=reason]", "incident 7 resolved");
    browser.click("input[name=confirm]");
    browser.click("main button[type=submit]");
    wait_for("the released state", || {
        browser.source().contains("Released")
    });
    wait_for("the release's record", || {
        !d.events_of_kind("release").is_empty()
    });
    let released = d.events_of_kind("release");
    assert_eq!(released[0]["reason"], "incident 7 resolved");
    assert_eq!(released[0]["uid"], nix::unistd::geteuid().as_raw());
    assert_eq!(d.run(&["--", "true"]).status.code(), Some(0));

    browser.go(&format!("{base}/sessions"));
    browser.screenshot("sessions");
}

#[test]
fn the_console_refuses_requests_without_a_session_or_a_csrf_token() {
    let d = Daemon::start();
    common::unreachable_origin_repo(&d.work());
    let id = held_id(&push(&d));
    let (host, login, _) = login_url(&d);

    for path in ["/pending", "/audit", "/kill", "/console.js", "/"] {
        assert_eq!(http(&host, "GET", path, &[], "").status, 401, "{path}");
    }
    let decide = format!("request_id={id}&host=x&action=approve");
    assert_eq!(
        http(&host, "POST", "/pending/decide", &[], &decide).status,
        401
    );
    let wrong = login.replace("token=", "token=0");
    assert_eq!(http(&host, "GET", &wrong, &[], "").status, 401);

    // Another name for loopback (a page that rebinds its domain) is refused.
    let mut stream = TcpStream::connect(&host).unwrap();
    write!(
        stream,
        "GET {login} HTTP/1.1\r\nHost: attacker.example:80\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 421"), "{raw}");

    // The token logs in once.
    let entered = http(&host, "GET", &login, &[], "");
    assert_eq!(entered.status, 303);
    assert_eq!(entered.header("location"), Some("/pending"));
    let cookie = entered.header("set-cookie").unwrap().to_owned();
    assert!(
        cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict"),
        "{cookie}"
    );
    assert_eq!(http(&host, "GET", &login, &[], "").status, 401, "spent");
    let session = cookie.split(';').next().unwrap().to_owned();

    let page = http(&host, "GET", "/pending", &[("Cookie", &session)], "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains(&id));
    // The Audit page searches by decision and program.
    let cookie_header = [("Cookie", session.as_str())];
    let found = http(
        &host,
        "GET",
        "/audit?decision=HOLD&program=git",
        &cookie_header,
        "",
    );
    assert!(
        found.body.contains(&id) && found.body.contains("chain verified"),
        "{}",
        found.body
    );
    let none = http(
        &host,
        "GET",
        "/audit?decision=HOLD&program=curl",
        &cookie_header,
        "",
    );
    assert!(
        none.body.contains("<p>0 events, newest first.</p>"),
        "{}",
        none.body
    );
    let csrf = page
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let host_name = page
        .body
        .split("name=\"host\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();

    // A cross-site form post carries the cookie only where SameSite is not
    // honoured; without the token it is refused all the same.
    let form = format!("request_id={id}&host={host_name}&action=approve");
    let forged = http(
        &host,
        "POST",
        "/pending/decide",
        &[
            ("Cookie", &session),
            ("Origin", "http://attacker.example"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form,
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    let with_token = format!("{form}&csrf={csrf}");
    let foreign = http(
        &host,
        "POST",
        "/pending/decide",
        &[("Cookie", &session), ("Origin", "http://attacker.example")],
        &with_token,
    );
    assert_eq!(foreign.status, 403, "a foreign origin even with the token");
    let wrong_token = format!("{form}&csrf={}", "0".repeat(64));
    let guessed = http(
        &host,
        "POST",
        "/pending/decide",
        &[("Cookie", &session)],
        &wrong_token,
    );
    assert_eq!(guessed.status, 403);
    assert!(d.events_of_kind("approved").is_empty());

    // The console's own form, token and all, is taken.
    let origin = format!("http://{host}");
    let own = http(
        &host,
        "POST",
        "/pending/decide",
        &[("Cookie", &session), ("Origin", &origin)],
        &with_token,
    );
    assert_eq!(own.status, 303, "{}", own.body);
    assert_eq!(d.events_of_kind("approved").len(), 1);

    // Logged out, the cookie opens nothing.
    let out = http(
        &host,
        "POST",
        "/logout",
        &[("Cookie", &session)],
        &format!("csrf={csrf}"),
    );
    assert_eq!(out.status, 200);
    assert_eq!(
        http(&host, "GET", "/pending", &[("Cookie", &session)], "").status,
        401
    );
}

#[test]
fn the_console_is_unreachable_from_inside_a_command() {
    let d = Daemon::start();
    let (host, login, _) = login_url(&d);
    let port: u16 = host.rsplit(':').next().unwrap().parse().unwrap();
    let probe = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), 3)\n    print('reached')\nexcept OSError as e:\n    print('unreachable', e)\n"
    );
    // On the host, the probe reaches it.
    let outside = Command::new("python3")
        .args(["-c", &probe])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&outside.stdout).trim(), "reached");

    // An agent cannot ask for a login.
    let asked = d.run(&["--", bin("praxis").to_str().unwrap(), "console", "--url"]);
    assert_eq!(asked.status.code(), Some(126), "{asked:?}");

    // Even approved, a command runs in its own network namespace: its
    // loopback is not the host's.
    let inside = ["--", "python3", "-c", &probe];
    let held = held_id(&d.run(&inside));
    assert!(d.praxis(&["approve", &held]).status.success());
    let ran_inside = d.run(&inside);
    ran(&ran_inside);
    let said = String::from_utf8_lossy(&ran_inside.stdout);
    assert!(said.starts_with("unreachable"), "{ran_inside:?}");

    // Through the egress proxy, even with the port opened by the operator,
    // the console is one of Praxis' own ports.
    d.open_loopback(&[port]);
    let url = format!("http://{host}{login}");
    let proxied = d.run(&["--", "curl", "-sS", &url]);
    assert_eq!(proxied.status.code(), Some(125), "{proxied:?}");
    let reason = signal_json(&proxied)["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains(&format!("port {port}")) && reason.contains("Praxis' own"),
        "{reason}"
    );
    // The token was never spent from inside: it still logs in.
    assert_eq!(http(&host, "GET", &login, &[], "").status, 303);
}
