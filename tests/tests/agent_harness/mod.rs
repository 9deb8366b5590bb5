//! Shared by the agent-integration tests: a real praxisd in a scratch home
//! (a git workspace at `home/work`), the real binaries, and audit reads.

#![allow(dead_code)] // each test file uses its own part of the harness

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A built binary of the workspace (`make test` builds them first).
pub fn bin(name: &str) -> PathBuf {
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

/// A daemon in a scratch home; SIGTERM then SIGKILL on drop.
pub struct Daemon {
    pub dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Daemon {
    pub fn start() -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home/work", "home/.ssh", "run", "state", "config"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let mut d = Daemon { dir, child: None };
        let git = d
            .cmd(Path::new("git"))
            .args(["init", "-q", "."])
            .status()
            .unwrap();
        assert!(git.success());
        let child = d
            .cmd(&bin("praxisd"))
            .arg("--user")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        d.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while UnixStream::connect(d.dir.path().join("run/praxis/praxisd.sock")).is_err() {
            assert!(Instant::now() < deadline, "praxisd did not come up");
            std::thread::sleep(Duration::from_millis(10));
        }
        d
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("home/work")
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
            .current_dir(p.join("home/work"));
        c
    }

    /// Runs praxis-run with `args`, feeding `input` on stdin.
    pub fn praxis_run(&self, args: &[&str], input: &str) -> Output {
        self.pipe(&bin("praxis-run"), args, input)
    }

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

    /// Audit events as JSON objects (column → value), oldest first.
    pub fn events(&self) -> Vec<serde_json::Value> {
        let conn =
            rusqlite::Connection::open(self.dir.path().join("state/praxis/audit.db")).unwrap();
        let mut stmt = conn
            .prepare("SELECT kind, request_id, session, runtime, decision, reason, detail FROM events ORDER BY seq")
            .unwrap();
        stmt.query_map([], |row| {
            let text = |i: usize| row.get::<_, Option<String>>(i);
            Ok(serde_json::json!({
                "kind": text(0)?, "request_id": text(1)?, "session": text(2)?,
                "runtime": text(3)?, "decision": text(4)?, "reason": text(5)?,
                "detail": text(6)?.and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok()),
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
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGTERM);
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
