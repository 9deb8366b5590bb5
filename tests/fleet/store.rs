//! A real PostgreSQL server for the fleet tests, in a scratch directory on
//! a unix socket, from the machine's PostgreSQL install (found by glob
//! under /usr/lib/postgresql, or by `pg_config --bindir`). PostgreSQL
//! refuses to run as root, so as root it runs as `nobody`.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const OWNER: &str = "praxis_owner";
const PORT: u16 = 5432;
/// `nobody` on Debian.
const UNPRIVILEGED: u32 = 65534;

/// The newest PostgreSQL server binaries on this machine.
fn bindir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    // Highest major version last.
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(bin) = found.pop() {
        return bin;
    }
    let out = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .expect("PostgreSQL is not installed (`make test` installs Debian's postgresql)");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    password: String,
    server: Option<Child>,
}

fn as_server(c: &mut Command) -> &mut Command {
    if nix::unistd::geteuid().is_root() {
        c.uid(UNPRIVILEGED).gid(UNPRIVILEGED);
    }
    c
}

impl Postgres {
    /// A fresh cluster, started, with password logins only.
    pub fn start() -> Postgres {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let password = format!("owner-{}", std::process::id());
        std::fs::write(root.join("pw"), &password).unwrap();
        for sub in ["data", "sock"] {
            std::fs::create_dir(root.join(sub)).unwrap();
        }
        if nix::unistd::geteuid().is_root() {
            for file in ["data", "sock", "pw"] {
                let uid = Some(nix::unistd::Uid::from_raw(UNPRIVILEGED));
                let gid = Some(nix::unistd::Gid::from_raw(UNPRIVILEGED));
                nix::unistd::chown(&root.join(file), uid, gid).unwrap();
            }
        }
        let bin = bindir();
        let initdb = as_server(
            Command::new(bin.join("initdb"))
                .args(["-D", "data", "-U", OWNER, "--pwfile", "pw"])
                .args(["--auth", "scram-sha-256", "-E", "UTF8", "--no-sync"])
                .current_dir(root),
        )
        .output()
        .unwrap();
        assert!(initdb.status.success(), "initdb: {initdb:?}");
        let mut pg = Postgres {
            dir,
            bin,
            password,
            server: None,
        };
        pg.spawn();
        pg
    }

    fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// Starts the server and waits until it takes connections.
    pub fn spawn(&mut self) {
        let root = self.dir.path();
        let server = as_server(
            Command::new(self.bin.join("postgres"))
                .args(["-D", "data", "-k"])
                .arg(self.socket_dir())
                .args(["-p", &PORT.to_string(), "-c", "listen_addresses="])
                .args(["-c", "fsync=off", "-c", "max_connections=50"])
                .current_dir(root)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .spawn()
        .unwrap();
        self.server = Some(server);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .arg("-h")
                .arg(self.socket_dir())
                .args(["-p", &PORT.to_string(), "-q"])
                .status()
                .unwrap();
            if ready.success() {
                return;
            }
            assert!(Instant::now() < deadline, "postgres did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server (fast shutdown: clients are disconnected).
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let pid = nix::unistd::Pid::from_raw(server.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let deadline = Instant::now() + Duration::from_secs(10);
            while server.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = server.kill();
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = server.wait();
        }
    }

    /// A URL for `role` with `password`.
    pub fn url(&self, role: &str, password: &str) -> String {
        format!(
            "postgresql://{role}:{password}@/postgres?host={}&port={PORT}",
            self.socket_dir().display()
        )
    }

    pub fn owner_url(&self) -> String {
        self.url(OWNER, &self.password)
    }

    /// Runs `sql` over `url` with psql; its output, or psql's error.
    pub fn psql(&self, url: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(self.bin.join("psql"))
            .args([
                url,
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
