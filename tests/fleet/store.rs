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
    /// The loopback port it also listens on with TLS, if it does.
    tls_port: Option<u16>,
}

/// A CA's PEM, and a server certificate for `names` signed by it (PEM, key PEM).
pub fn certificates(names: &[&str]) -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::default();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "fleet test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let leaf = rcgen::CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (ca.pem(), leaf.pem(), key.serialize_pem())
}

fn as_server(c: &mut Command) -> &mut Command {
    if nix::unistd::geteuid().is_root() {
        c.uid(UNPRIVILEGED).gid(UNPRIVILEGED);
    }
    c
}

impl Postgres {
    /// A fresh cluster, started, with password logins only, on a unix socket.
    pub fn start() -> Postgres {
        Postgres::start_with(None)
    }

    /// Also on a loopback port with TLS, serving `cert` and `key` (PEM).
    pub fn start_tls(cert: &str, key: &str) -> Postgres {
        Postgres::start_with(Some((cert, key)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> Postgres {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let password = format!("owner-{}", std::process::id());
        std::fs::write(root.join("pw"), &password).unwrap();
        for sub in ["data", "sock"] {
            std::fs::create_dir(root.join(sub)).unwrap();
        }
        if let Some((cert, key)) = tls {
            std::fs::write(root.join("server.crt"), cert).unwrap();
            std::fs::write(root.join("server.key"), key).unwrap();
            let private = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(root.join("server.key"), private).unwrap();
        }
        if nix::unistd::geteuid().is_root() {
            for file in ["data", "sock", "pw", "server.crt", "server.key"] {
                if !root.join(file).exists() {
                    continue;
                }
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
        let tls_port = tls.map(|_| {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        });
        let mut pg = Postgres {
            dir,
            bin,
            password,
            server: None,
            tls_port,
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
        let mut command = Command::new(self.bin.join("postgres"));
        command
            .args(["-D", "data", "-k"])
            .arg(self.socket_dir())
            .args(["-c", "fsync=off", "-c", "max_connections=50"])
            .current_dir(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match self.tls_port {
            None => command.args(["-p", &PORT.to_string(), "-c", "listen_addresses="]),
            Some(port) => command
                .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "ssl=on"])
                .arg("-c")
                .arg(format!(
                    "ssl_cert_file={}",
                    root.join("server.crt").display()
                ))
                .arg("-c")
                .arg(format!(
                    "ssl_key_file={}",
                    root.join("server.key").display()
                )),
        };
        // Its own process group, so that `pause` stops every backend too.
        command.process_group(0);
        let server = as_server(&mut command).spawn().unwrap();
        self.server = Some(server);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .arg("-h")
                .arg(self.socket_dir())
                .args(["-p", &self.port().to_string(), "-q"])
                .status()
                .unwrap();
            if ready.success() {
                return;
            }
            assert!(Instant::now() < deadline, "postgres did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Freezes the server and every backend (SIGSTOP to its group): its
    /// connections stay open and answer nothing, as a half-open one does.
    pub fn pause(&self) {
        self.signal_group(nix::sys::signal::Signal::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal_group(nix::sys::signal::Signal::SIGCONT);
    }

    fn signal_group(&self, signal: nix::sys::signal::Signal) {
        let server = self.server.as_ref().expect("running");
        let group = nix::unistd::Pid::from_raw(server.id() as i32);
        nix::sys::signal::killpg(group, signal).unwrap();
    }

    /// Stops the server (fast shutdown: clients are disconnected).
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // A paused server cannot shut down.
            let group = nix::unistd::Pid::from_raw(server.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGCONT);
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

    fn port(&self) -> u16 {
        self.tls_port.unwrap_or(PORT)
    }

    /// A URL for `role` with `password`, on the unix socket.
    pub fn url(&self, role: &str, password: &str) -> String {
        format!(
            "postgresql://{role}:{password}@/postgres?host={}&port={}",
            self.socket_dir().display(),
            self.port()
        )
    }

    /// A URL for `role` with `password` over TCP to `host` (which must
    /// resolve to loopback), with `params`.
    pub fn tcp_url(&self, role: &str, password: &str, host: &str, params: &str) -> String {
        let port = self.tls_port.expect("started with TLS");
        format!("postgresql://{role}:{password}@{host}:{port}/postgres?{params}")
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
