//! The sandbox's refusals, told to the agent: a program that hit a wall
//! prints "Permission denied" or "Operation not permitted" with what it
//! tried, which says nothing about why. This reads the command's stderr as
//! it passes, picks out the paths those lines name, and when one of them
//! lies outside what the sandbox let this command read or write, adds one
//! line after the output saying so and what to do instead. A path the
//! sandbox allowed (a plain file-mode refusal) gets no line. The same lines
//! tell whether a command found no network, which the execute stage
//! explains when the command had none.

use std::path::{Component, Path, PathBuf};

/// What tools print when they find no network.
const OFFLINE_SIGNS: [&str; 9] = [
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "EAI_AGAIN",
    "ENOTFOUND",
    "Failed to establish a new connection",
    "failed to lookup address",
    "No address associated with hostname",
];

/// Lines longer than this are looked at only up to it.
const MAX_LINE: usize = 4096;
/// Paths named in the note at most.
const MAX_NAMED: usize = 3;

/// What the sandbox let one command reach, to tell its refusals apart.
#[derive(Debug)]
pub struct Reach {
    home: PathBuf,
    cwd: PathBuf,
    /// Trees it may write (the workspace, the caches, its grants, the
    /// scratch dirs its TMPDIR is one of).
    writable: Vec<PathBuf>,
    /// Trees it may read besides those.
    readable: Vec<PathBuf>,
    /// Never readable, even inside a readable tree.
    secrets: Vec<PathBuf>,
    /// Whether `/tmp` and `/var/tmp` are the session's own (the host's
    /// are out of sight).
    private_tmp: bool,
    /// Kept read-only inside writable trees.
    protected: Vec<PathBuf>,
}

impl Reach {
    /// What `spec` lets the command reach, run in `cwd`.
    pub fn of(spec: &praxis_sandbox::Spec, cwd: &Path) -> Reach {
        let mut writable = vec![spec.workspace.clone(), spec.scratch_root.clone()];
        writable.extend(spec.writable_caches.iter().cloned());
        writable.extend(spec.write_grants.iter().cloned());
        if spec.private_tmp.is_some() {
            writable.extend(["/tmp", "/var/tmp"].map(PathBuf::from));
        }
        let relative_to_home = |list: &[PathBuf]| -> Vec<PathBuf> {
            list.iter()
                .map(|p| {
                    if p.is_absolute() {
                        p.clone()
                    } else {
                        spec.home.join(p)
                    }
                })
                .collect()
        };
        Reach {
            home: spec.home.clone(),
            cwd: cwd.to_path_buf(),
            writable,
            readable: spec.reads.clone(),
            secrets: relative_to_home(&spec.secrets),
            protected: spec.protected.clone(),
            private_tmp: spec.private_tmp.is_some(),
        }
    }

    /// Why the sandbox refused `path`, or None when it allowed it.
    fn wall(&self, path: &Path) -> Option<Wall> {
        let under = |trees: &[PathBuf]| trees.iter().any(|t| path.starts_with(t));
        if under(&self.secrets) {
            return Some(Wall::Secret);
        }
        if under(&self.writable) {
            return under(&self.protected).then_some(Wall::Protected);
        }
        if under(&self.readable) {
            return Some(Wall::ReadOnly);
        }
        Some(Wall::Unreadable)
    }

    /// A path as a program printed it: absolute, `~/…`, or relative to
    /// the command's directory; `.` and `..` folded.
    fn resolve(&self, word: &str) -> Option<PathBuf> {
        let raw = if let Some(inside) = word.strip_prefix("~/") {
            self.home.join(inside)
        } else if word.starts_with('/') {
            PathBuf::from(word)
        } else if word.contains('/') || word.starts_with('.') {
            self.cwd.join(word)
        } else {
            return None;
        };
        let mut out = PathBuf::new();
        for component in raw.components() {
            match component {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other),
            }
        }
        Some(out)
    }
}

/// Which wall a refused path met.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wall {
    /// Outside every tree the command may read.
    Unreadable,
    /// A secret.
    Secret,
    /// Readable, not writable.
    ReadOnly,
    /// A protected path inside a writable tree.
    Protected,
    /// In the host's shared `/tmp`, which the command does not see.
    HostTmp,
}

/// The refusals seen in one command's stderr so far.
#[derive(Debug)]
pub struct Refusals {
    reach: Reach,
    /// The line being read, until its newline arrives.
    partial: Vec<u8>,
    /// Paths refused by the sandbox, in the order seen, with their wall.
    walls: Vec<(PathBuf, Wall)>,
    /// Whether a refused operation (no path) was seen.
    operation: bool,
    /// Whether a line said the network could not be reached.
    offline: bool,
}

impl Refusals {
    pub fn new(reach: Reach) -> Refusals {
        Refusals {
            reach,
            partial: Vec::new(),
            walls: Vec::new(),
            operation: false,
            offline: false,
        }
    }

    /// Reads one chunk of stderr.
    pub fn chunk(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            if self.partial.len() < MAX_LINE {
                let room = MAX_LINE - self.partial.len();
                self.partial
                    .extend_from_slice(&piece[..piece.len().min(room)]);
            }
            if piece.ends_with(b"\n") {
                let line = std::mem::take(&mut self.partial);
                self.line(&String::from_utf8_lossy(&line));
            }
        }
    }

    /// Whether the command said it found no network (its last line too,
    /// if it has no newline yet).
    pub fn offline(&self) -> bool {
        let last = String::from_utf8_lossy(&self.partial);
        self.offline || OFFLINE_SIGNS.iter().any(|sign| last.contains(sign))
    }

    fn line(&mut self, line: &str) {
        self.offline |= OFFLINE_SIGNS.iter().any(|sign| line.contains(sign));
        let denied = line.contains("Permission denied") || line.contains("EACCES");
        let not_permitted = line.contains("Operation not permitted") || line.contains("EPERM");
        let missing = self.reach.private_tmp
            && (line.contains("No such file or directory") || line.contains("ENOENT"));
        if !denied && !not_permitted && !missing {
            return;
        }
        let mut named = false;
        for word in line.split(|c: char| c.is_whitespace() || matches!(c, ',' | '(' | ')')) {
            let word = word.trim_matches(|c: char| {
                matches!(
                    c,
                    '\'' | '"' | '`' | ':' | ';' | '[' | ']' | '\u{2018}' | '\u{2019}'
                )
            });
            let Some(path) = self.reach.resolve(word) else {
                continue;
            };
            named = true;
            let wall = if missing {
                // Missing here, present in the host's shared /tmp: out of sight.
                let in_host_tmp = ["/tmp", "/var/tmp"].iter().any(|t| path.starts_with(t));
                (in_host_tmp && std::fs::symlink_metadata(&path).is_ok()).then_some(Wall::HostTmp)
            } else {
                self.reach.wall(&path)
            };
            if let Some(wall) = wall
                && !self.walls.iter().any(|(p, _)| *p == path)
            {
                self.walls.push((path, wall));
            }
        }
        self.operation |= not_permitted && !named;
    }

    /// The one line for the agent, if the sandbox refused anything.
    pub fn note(mut self) -> Option<String> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&String::from_utf8_lossy(&line));
        }
        let worst = self.walls.iter().map(|(_, w)| *w).min();
        let named: Vec<String> = self
            .walls
            .iter()
            .take(MAX_NAMED)
            .map(|(p, _)| self.shown(p))
            .collect();
        let more = self.walls.len().saturating_sub(MAX_NAMED);
        let paths = if more > 0 {
            format!("{} and {more} more", named.join(", "))
        } else {
            named.join(", ")
        };
        let why = match worst {
            Some(Wall::Unreadable) => format!(
                "{paths}: outside what commands may reach (they write the workspace, $TMPDIR \
                 and the tool caches, and read those and the trees listed in patterns.toml). \
                 Work in the workspace or $TMPDIR, or run a command that names the path: it is \
                 held for an approval that grants exactly that read or write"
            ),
            Some(Wall::Secret) => format!(
                "{paths}: a secret, never readable by commands unless an operator approves a \
                 command that names it"
            ),
            Some(Wall::ReadOnly) => format!(
                "{paths}: readable but not writable here. Commands write the workspace, \
                 $TMPDIR and the tool caches; write there, or run a command that names the \
                 path, which is held for an approval that grants exactly that write"
            ),
            Some(Wall::Protected) => format!(
                "{paths}: protected (it runs code or steers agents later), kept read-only; \
                 an operator can approve a command that names it"
            ),
            Some(Wall::HostTmp) => format!(
                "{paths}: in the host's shared /tmp, which commands do not see: each session \
                 has a /tmp of its own. Put what a command needs in the workspace"
            ),
            None if self.operation => String::from(
                "an operation commands may not make (a unix socket, a raw socket, ptrace, a \
                 mount or a set-id bit); a TCP connection through the proxy or a socketpair \
                 works",
            ),
            None => return None,
        };
        Some(format!("praxis: the sandbox refused {why}.\n"))
    }

    /// A path as the agent knows it: `~/…` under the home.
    fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.reach.home) {
            Ok(inside) if !inside.as_os_str().is_empty() => format!("~/{}", inside.display()),
            _ => path.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reach {
        Reach {
            home: PathBuf::from("/home/dev"),
            cwd: PathBuf::from("/home/dev/project"),
            writable: vec![
                PathBuf::from("/home/dev/project"),
                PathBuf::from("/home/dev/.cache"),
            ],
            readable: vec![PathBuf::from("/usr"), PathBuf::from("/etc")],
            secrets: vec![
                PathBuf::from("/home/dev/.ssh"),
                PathBuf::from("/etc/shadow"),
            ],
            protected: vec![PathBuf::from("/home/dev/project/.git/hooks")],
            private_tmp: true,
        }
    }

    fn note(stderr: &[&[u8]]) -> Option<String> {
        let mut refusals = Refusals::new(reach());
        for chunk in stderr {
            refusals.chunk(chunk);
        }
        refusals.note()
    }

    #[test]
    fn a_read_outside_the_lists_is_told_with_what_to_do() {
        let said = note(&[b"cat: /home/dev/.pgpass: Permission denied\n"]).unwrap();
        assert!(
            said.starts_with("praxis: the sandbox refused ~/.pgpass: outside"),
            "{said}"
        );
        assert!(said.contains("approval"), "{said}");
        assert_eq!(said.lines().count(), 1);
        // Split across reads, quoted as Python does.
        let said = note(&[
            b"PermissionError: [Errno 13] Permission den",
            b"ied: '/srv/data/x.csv'\n",
        ])
        .unwrap();
        assert!(said.contains("/srv/data/x.csv"), "{said}");
    }

    #[test]
    fn each_wall_is_named_and_plain_refusals_are_not() {
        let said = note(&[b"cat: /etc/shadow: Permission denied\n"]).unwrap();
        assert!(said.contains("a secret"), "{said}");
        let said = note(&[b"touch: cannot touch '/etc/motd': Permission denied\n"]).unwrap();
        assert!(said.contains("readable but not writable"), "{said}");
        let said =
            note(&[b"cp: cannot create regular file '.git/hooks/pre-commit': Permission denied\n"])
                .unwrap();
        assert!(said.contains("protected"), "{said}");
        // Inside the workspace and not protected: the file's own mode, not the sandbox.
        assert_eq!(note(&[b"sh: ./run.sh: Permission denied\n"]), None);
        assert_eq!(note(&[b"all good\n"]), None);
    }

    #[test]
    fn a_path_only_the_hosts_tmp_holds_is_told_as_out_of_sight() {
        let host = tempfile::Builder::new()
            .prefix("praxis-refusals-")
            .tempfile_in("/tmp")
            .unwrap();
        let line = format!(
            "cat: {}: No such file or directory\n",
            host.path().display()
        );
        let said = note(&[line.as_bytes()]).unwrap();
        assert!(said.contains("shared /tmp"), "{said}");
        // Missing everywhere: nothing to explain.
        assert_eq!(
            note(&[b"cat: /tmp/praxis-nowhere-x1: No such file or directory\n"]),
            None
        );
    }

    #[test]
    fn no_network_is_seen_across_reads() {
        let mut refusals = Refusals::new(reach());
        refusals.chunk(b"curl: (6) Could not res");
        refusals.chunk(b"olve host: example.com\n");
        assert!(refusals.offline());
        let mut unfinished = Refusals::new(reach());
        unfinished.chunk(b"npm error code EAI_AGAIN");
        assert!(unfinished.offline());
        let mut quiet = Refusals::new(reach());
        quiet.chunk(b"error: build failed\nnot resolved, no network");
        assert!(!quiet.offline());
    }

    #[test]
    fn a_refused_operation_without_a_path_is_told_too() {
        let said = note(&[b"socket: Operation not permitted\n"]).unwrap();
        assert!(said.contains("unix socket"), "{said}");
    }

    #[test]
    fn many_paths_are_counted_not_listed() {
        let lines = b"ls: cannot open directory '/srv/a': Permission denied\n\
ls: cannot open directory '/srv/b': Permission denied\n\
ls: cannot open directory '/srv/c': Permission denied\n\
ls: cannot open directory '/srv/d': Permission denied\n";
        let said = note(&[lines]).unwrap();
        assert!(said.contains("and 1 more"), "{said}");
        assert_eq!(said.lines().count(), 1);
    }
}
