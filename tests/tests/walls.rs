//! The sandbox's walls tried as an attacker would, through a real praxisd:
//! secrets on no list, sockets on the host (a real gpg-agent, a docker.sock
//! stand-in, praxisd's own), another mount of the home, and the user's
//! shell startup files. Each wall holds by how it is built, so nothing here
//! names the files to the policy first.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Daemon, bin, contains};

/// Credential files that agents' machines hold, most on no list at all.
const CREDENTIALS: &[&str] = &[
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".pgpass",
    ".my.cnf",
    ".bash_history",
    ".psql_history",
    ".python_history",
    ".config/praxis-walls-7f3a/token",
    ".config/some-cli/credentials",
    ".local/share/app/session.db",
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".docker/config.json",
    ".kube/config",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".config/gh/hosts.yml",
    ".gnupg/private-keys-v1.d/A1.key",
    ".vault-token",
    ".azure/msal_token_cache.json",
    ".terraform.d/credentials.tfrc.json",
    ".m2/settings.xml",
    ".cargo/credentials.toml",
    ".config/op/config",
];

/// A script in the workspace that prints a file: the agent's own code.
const READER_PY: &str = "import sys\nprint(open(sys.argv[1]).read())\n";

/// Twelve bytes that open credential `i`, unique to it, and their base64.
fn marker(i: usize) -> (String, String) {
    let raw = format!("{i:02}-SECRET-MK");
    let encoded = {
        // Twelve bytes encode to sixteen characters, without padding.
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        raw.as_bytes()
            .chunks(3)
            .flat_map(|c| {
                let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
                [18, 12, 6, 0].map(|shift| ALPHABET[((n >> shift) & 63) as usize] as char)
            })
            .collect()
    };
    (raw, encoded)
}

/// Whether a run leaked `raw` (or its base64) on any stream.
fn leaked(out: &std::process::Output, raw: &str, encoded: &str) -> bool {
    [&out.stdout, &out.stderr]
        .iter()
        .any(|s| contains(s, raw.as_bytes()) || contains(s, encoded.as_bytes()))
}

#[test]
fn credentials_on_no_list_are_unreadable_every_way() {
    let d = Daemon::start_in_git();
    let home = d.home();
    for (i, rel) in CREDENTIALS.iter().enumerate() {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{}\n", marker(i).0)).unwrap();
    }
    std::fs::write(d.work().join("reader.py"), READER_PY).unwrap();
    std::fs::write(d.work().join("reader.sh"), "cat \"$1\"\n").unwrap();
    // Another path to the same files: the home mounted again inside a tree
    // commands may read (root only).
    let mirror = d.dir.path().join("mirror");
    let mount = BindMount::new(&home, &mirror);
    let mut ways = 0;
    for (i, rel) in CREDENTIALS.iter().enumerate() {
        let (raw, encoded) = marker(i);
        let mut paths = vec![format!("~/{rel}"), home.join(rel).display().to_string()];
        if mount.is_some() {
            paths.push(mirror.join(rel).display().to_string());
        }
        for path in &paths {
            for command in [
                format!("cat {path}"),
                format!("base64 {path}"),
                format!("xxd {path}"),
                format!("python3 reader.py {path}"),
                format!("sh reader.sh {path}"),
            ] {
                let out = d.run(&["-c", &command]);
                assert!(
                    !leaked(&out, &raw, &encoded),
                    "`{command}` read {rel}: {out:?}"
                );
                ways += 1;
            }
        }
    }
    assert!(ways >= CREDENTIALS.len() * 10);
    // The workspace stays readable.
    let out = d.run(&["-c", "cat reader.sh"]);
    assert!(out.status.success(), "{out:?}");
    assert!(contains(&out.stdout, b"cat \"$1\""), "{out:?}");
}

/// A script in the workspace that connects to a unix socket and says how
/// it went: `connected`, or the error.
const CONNECT_PY: &str = "\
import socket, sys
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(sys.argv[2].encode() + b'\\n')
    print('connected', s.recv(4096))
except OSError as e:
    print('refused', e.errno)
";

/// Runs the connect script against `socket` inside one command that also
/// has the network profile (a loopback fetch before it), as an attacker
/// with a network grant would.
fn connect_from_inside(d: &Daemon, socket: &Path, line: &str) -> String {
    std::fs::write(d.work().join("connect.py"), CONNECT_PY).unwrap();
    let command = format!(
        "curl -s -m 2 http://127.0.0.1:8080/ ; python3 connect.py '{}' '{line}'",
        socket.display()
    );
    let out = d.run(&["-c", &command]);
    assert_ne!(out.status.code(), Some(125), "it must run: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn no_path_named_socket_is_reachable_from_a_command() {
    let d = Daemon::start_in_git();
    // A docker.sock stand-in that answers whoever connects.
    let docker = d.dir.path().join("docker.sock");
    let listener = UnixListener::bind(&docker).unwrap();
    listener.set_nonblocking(true).unwrap();
    let api = d.socket().with_file_name("praxisd-api.sock");
    for socket in [docker.clone(), d.socket(), api] {
        let said = connect_from_inside(&d, &socket, "GET /version HTTP/1.0");
        assert!(said.contains("refused"), "{}: {said}", socket.display());
        assert!(!said.contains("connected"), "{}: {said}", socket.display());
    }
    assert!(
        listener.accept().is_err(),
        "the stand-in was reached from inside"
    );
    // The same socket from outside every command: reachable.
    assert!(UnixStream::connect(&docker).is_ok());
}

/// A script that tries every way a command has to a unix datagram socket
/// at a path: one end of a datagram `socketpair` sent to the path and
/// connected to it, and a datagram socket of its own. Prints one line per way.
const DATAGRAM_PY: &str = "\
import socket, sys
def tell(way, act):
    try:
        act()
        print(way, 'reached')
    except OSError as e:
        print(way, 'refused', e.errno)
def pair_end():
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]
tell('pair-sendto', lambda: pair_end().sendto(b'sendto from inside', sys.argv[1]))
def pair_connect():
    end = pair_end()
    end.connect(sys.argv[1])
    end.send(b'connect from inside')
tell('pair-connect', pair_connect)
tell('socket', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'own', sys.argv[1]))
";

#[test]
fn no_path_named_datagram_socket_is_reachable_from_a_command() {
    let d = Daemon::start_in_git();
    // A stand-in for systemd's notify or journal socket, or `/dev/log`,
    // where a command can resolve it: in its own workspace.
    let socket = d.work().join("notify.sock");
    let stand_in = std::os::unix::net::UnixDatagram::bind(&socket).unwrap();
    stand_in.set_nonblocking(true).unwrap();
    std::fs::write(d.work().join("datagram.py"), DATAGRAM_PY).unwrap();
    // With the network off, and with a network grant (a loopback fetch
    // first), which gives the command other socket families.
    // praxisd's door too, which takes connections handed in by datagram.
    let door = d.socket().with_file_name("praxisd-door.sock");
    for prefix in ["", "curl -s -m 2 http://127.0.0.1:8080/ ; "] {
        for target in [Path::new("notify.sock"), &door] {
            let command = format!("{prefix}python3 datagram.py '{}'", target.display());
            let out = d.run(&["-c", &command]);
            assert_ne!(out.status.code(), Some(125), "it must run: {out:?}");
            let said = String::from_utf8_lossy(&out.stdout);
            for way in ["pair-sendto", "pair-connect", "socket"] {
                assert!(
                    said.contains(&format!("{way} refused")),
                    "`{command}`: {way}: {said}"
                );
            }
        }
        let mut got = [0u8; 64];
        assert!(
            stand_in.recv(&mut got).is_err(),
            "`{prefix}…` reached the stand-in: {:?}",
            String::from_utf8_lossy(&got)
        );
    }
    // From outside every command the socket answers.
    let outside = std::os::unix::net::UnixDatagram::unbound().unwrap();
    outside.send_to(b"outside", &socket).unwrap();
    let mut got = [0u8; 16];
    assert_eq!(stand_in.recv(&mut got).unwrap(), 7);
}

/// A real gpg-agent in a scratch `GNUPGHOME` with a secret key, asked for
/// its keys from inside a command with a network grant.
#[test]
fn gpg_agent_is_out_of_reach() {
    if Command::new("gpg-agent").arg("--version").output().is_err() {
        eprintln!("skipped: gpg-agent is not installed (Debian: gnupg)");
        return;
    }
    let d = Daemon::start_in_git();
    let gnupg = d.dir.path().join("gnupg");
    std::fs::create_dir_all(&gnupg).unwrap();
    std::fs::set_permissions(&gnupg, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let gpg = |args: &[&str]| {
        Command::new("gpg")
            .env("GNUPGHOME", &gnupg)
            .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let made = gpg(&[
        "--quick-gen-key",
        "walls@example.invalid",
        "ed25519",
        "sign",
        "never",
    ]);
    assert!(made.status.success(), "{made:?}");
    let _agent = Agent(gnupg.clone());
    let socket = PathBuf::from(
        String::from_utf8(
            Command::new("gpgconf")
                .env("GNUPGHOME", &gnupg)
                .args(["--list-dirs", "agent-socket"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim(),
    );
    // From outside, the agent lists the key it holds.
    let mut outside = UnixStream::connect(&socket).unwrap();
    outside
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut greeting = [0u8; 64];
    let n = outside.read(&mut greeting).unwrap();
    assert!(contains(&greeting[..n], b"OK"), "no agent there");
    outside.write_all(b"KEYINFO --list\n").unwrap();
    // From inside: no connection at all.
    let said = connect_from_inside(&d, &socket, "KEYINFO --list");
    assert!(said.contains("refused"), "{said}");
    assert!(!said.contains("KEYINFO"), "{said}");
}

/// Stops the scratch gpg-agent.
struct Agent(PathBuf);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .env("GNUPGHOME", &self.0)
            .args(["--kill", "gpg-agent"])
            .status();
    }
}

/// A bind mount the test makes (as root) and always removes.
struct BindMount(PathBuf);

impl BindMount {
    fn new(source: &Path, target: &Path) -> Option<BindMount> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        std::fs::create_dir_all(target).unwrap();
        Command::new("mount")
            .arg("--bind")
            .arg(source)
            .arg(target)
            .status()
            .is_ok_and(|s| s.success())
            .then(|| BindMount(target.to_path_buf()))
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("--lazy").arg(&self.0).status();
    }
}

/// The shell that runs a command string reads none of the user's startup
/// files, even with stdin a socket (as Node.js gives it), where bash would
/// otherwise read `~/.bashrc`: it is started with `--norc --noprofile`.
#[test]
fn a_command_reads_no_shell_startup_file() {
    let d = Daemon::start();
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(ours);
    let out = d
        .cmd(&bin("praxis-run"))
        .args(["-c", "tr '\\0' ' ' < /proc/$$/cmdline"])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cmdline = String::from_utf8_lossy(&out.stdout);
    if cmdline.contains("bash") {
        assert!(cmdline.contains("--norc --noprofile -c"), "{cmdline}");
    }
}

/// The one line the agent got about the sandbox, from `out`'s stderr.
fn told(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("praxis: the sandbox refused"))
        .map(str::to_owned)
        .collect()
}

/// A read the sandbox refuses reaches the agent as one line after the
/// output, naming the path and what to do instead; so does a path only the
/// host's shared `/tmp` holds; a refusal that is the file's own mode gets
/// no such line.
#[test]
fn a_refused_read_is_explained_in_one_line() {
    let d = Daemon::start_in_git();
    std::fs::write(d.work().join("reader.sh"), "cat \"$1\"\n").unwrap();
    // The path reaches the script through a file, out of the judge's sight,
    // as an agent's own code would find it: only the sandbox refuses it.
    std::fs::write(d.work().join("find.sh"), "cat \"$(cat target.txt)\"\n").unwrap();
    let unlisted = common::outside_tmp();
    let secret = unlisted.path().join("notes.txt");
    std::fs::write(&secret, "private\n").unwrap();
    std::fs::write(d.work().join("target.txt"), secret.display().to_string()).unwrap();
    let out = d.run(&["-c", "sh find.sh"]);
    let told_unlisted = told(&out);
    assert_eq!(told_unlisted.len(), 1, "{out:?}");
    // Named as the agent knows it (`~/…` when it lies in the home).
    let tail = format!(
        "{}/notes.txt",
        unlisted.path().file_name().unwrap().to_string_lossy()
    );
    assert!(told_unlisted[0].contains(&tail), "{told_unlisted:?}");
    assert!(told_unlisted[0].contains("approval"), "{told_unlisted:?}");
    // In the host's shared /tmp (the daemon's scratch dir lies there).
    let host = d.dir.path().join("outside/notes.txt");
    std::fs::create_dir_all(host.parent().unwrap()).unwrap();
    std::fs::write(&host, "private\n").unwrap();
    let out = d.run(&["-c", &format!("sh reader.sh {}", host.display())]);
    let told_host = told(&out);
    if host.starts_with("/tmp") {
        assert_eq!(told_host.len(), 1, "{out:?}");
        assert!(told_host[0].contains("shared /tmp"), "{told_host:?}");
    }
    // The workspace file's own mode: not the sandbox, nothing added.
    let locked = d.work().join("locked.txt");
    std::fs::write(&locked, "x\n").unwrap();
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let out = d.run(&["-c", "sh reader.sh locked.txt; true"]);
    assert!(told(&out).is_empty(), "{out:?}");
}
