//! The result of judging one request.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{Profile, Tier, Verdict};

/// A network destination a command may reach through the egress proxy.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Destination {
    /// Lowercase host name or IP address literal (IPv6 without brackets).
    pub host: String,
    pub port: u16,
}

impl Destination {
    /// Parses `host:port` (`[v6]:port` for IPv6).
    pub fn parse(text: &str) -> Option<Destination> {
        let (host, port) = match text.strip_prefix('[') {
            Some(v6) => {
                let (host, rest) = v6.split_once(']')?;
                (host, rest.strip_prefix(':')?)
            }
            None => text.rsplit_once(':')?,
        };
        let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
        let valid = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
        valid.then(|| Destination {
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// What must be saved for a command to be undone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Undo {
    /// Absolute paths the command deletes, moves, truncates or overwrites.
    /// Those outside the workspace are not the snapshot's to keep.
    pub paths: Vec<String>,
    /// The command discards work across the workspace (`git clean`,
    /// `git reset --hard`, a path-less `git checkout -f`): `Some(ignored)`
    /// asks for a checkpoint of the whole workspace, ignored files included
    /// when `ignored` (`git clean -x`).
    pub workspace: Option<bool>,
    /// `git stash drop` / `clear`: the stash ref and its log are what goes.
    pub git_stash: bool,
    /// A reversible-tier command whose writes the parse cannot list (a script,
    /// a build, `make clean`): only a checkpoint can make it undoable.
    pub opaque: bool,
}

impl Undo {
    /// Whether the command loses nothing an undo would need.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.workspace.is_none() && !self.git_stash && !self.opaque
    }
}

/// What a command may do beyond its sandbox profile: the paths outside the
/// workspace (or protected inside it) it writes, the paths outside its read
/// trees (or secret) it reads, the destinations it connects to and the
/// path-named unix sockets it reaches through a relay. An ALLOW, or an
/// approved HOLD, runs with exactly these.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    /// Exact paths (absolute, normalized) the command may create or change.
    pub write: Vec<PathBuf>,
    /// Exact paths (absolute, normalized) the command may read beyond its
    /// read trees; a secret among them is readable for this command alone.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// Exact destinations the command may connect to; empty means no network.
    pub connect: Vec<Destination>,
    /// Exact absolute paths of unix sockets the command reaches, each
    /// through a relay on a loopback port of its own network namespace: the
    /// command itself still cannot make a unix socket.
    #[serde(default)]
    pub sockets: Vec<PathBuf>,
}

impl Grants {
    pub fn is_empty(&self) -> bool {
        self.write.is_empty()
            && self.read.is_empty()
            && self.connect.is_empty()
            && self.sockets.is_empty()
    }

    /// Adds what `other` grants, keeping the first occurrence's order.
    pub fn extend(&mut self, other: &Grants) {
        extend_paths(&mut self.write, &other.write);
        extend_paths(&mut self.read, &other.read);
        extend_paths(&mut self.sockets, &other.sockets);
        for c in &other.connect {
            if !self.connect.contains(c) {
                self.connect.push(c.clone());
            }
        }
    }

    /// "will write /tmp/x/out; will read /srv/notes; will connect to
    /// pypi.org:443; will connect to the socket /var/run/docker.sock", or
    /// "no grants".
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (verb, paths) in [("write", &self.write), ("read", &self.read)] {
            if !paths.is_empty() {
                let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                parts.push(format!("will {verb} {}", paths.join(", ")));
            }
        }
        if !self.connect.is_empty() {
            let to: Vec<String> = self.connect.iter().map(ToString::to_string).collect();
            parts.push(format!("will connect to {}", to.join(", ")));
        }
        if !self.sockets.is_empty() {
            let sockets: Vec<String> = self
                .sockets
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            parts.push(format!(
                "will connect to the socket{} {}",
                if sockets.len() > 1 { "s" } else { "" },
                sockets.join(", ")
            ));
        }
        if parts.is_empty() {
            "no grants beyond its profile (no network)".to_owned()
        } else {
            parts.join("; ")
        }
    }
}

/// Adds the paths of `more` not yet in `paths`, keeping the first occurrence's order.
fn extend_paths(paths: &mut Vec<PathBuf>, more: &[PathBuf]) {
    // A set keeps this linear in the paths of a request with thousands.
    let mut seen: std::collections::HashSet<PathBuf> = paths.iter().cloned().collect();
    for p in more {
        if seen.insert(p.clone()) {
            paths.push(p.clone());
        }
    }
}

/// How one simple command of the request was judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommandJudgment {
    /// The simple command, redacted, for display and audit.
    pub command: String,
    pub program: String,
    pub verdict: Verdict,
    pub tier: Tier,
    pub rule_ids: Vec<String>,
    pub reason: String,
    /// What this command alone would be granted.
    pub grants: Grants,
    /// The command's parts as the classifier read them, for structured
    /// matchers over judged actions (learned lessons).
    pub shape: CommandShape,
    /// Each part of the command (its program, each write, each read of a
    /// guarded path, each destination) with what decided it alone.
    pub parts: Vec<PartJudgment>,
}

/// One part of a simple command and its own verdict: a rule speaks only for
/// the parts it matched, so every other part is judged on its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartJudgment {
    /// What the part is (`runs curl`, `overwrites ~/.local/bin/git`,
    /// `connects to localhost:8000`), redacted.
    pub part: String,
    pub verdict: Verdict,
    pub tier: Tier,
    /// The rule that decided it, or the tier's posture (`posture.high_risk`).
    pub decided_by: String,
}

/// A simple command's parts, redacted: what a learned lesson matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CommandShape {
    /// Subcommand words (`["push"]`, `["stash", "drop"]`).
    pub subcommand: Vec<String>,
    /// Flags, short clusters also split.
    pub flags: Vec<String>,
    /// Arguments that are neither flags nor subcommand words.
    pub operands: Vec<String>,
    /// Path arguments with the names of their path classes.
    pub paths: Vec<(String, Vec<String>)>,
}

/// A decision on a whole request: the most severe verdict and the highest tier
/// over its simple commands, and the rules that produced them.
#[must_use = "a decision must be acted on: only an ALLOW may execute"]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub decision: Verdict,
    pub tier: Tier,
    pub reason: String,
    pub rule_ids: Vec<String>,
    pub profile: Profile,
    /// The exact writes outside the profile, reads outside its read trees
    /// and network destinations an ALLOW (or an approved HOLD) runs with.
    /// Empty on STOP.
    pub grants: Grants,
    /// The command reaches root through sudo/doas/… .
    pub escalation: bool,
    /// A HOLD decided by a rule marked `not_relaxable`: learned memory may
    /// never turn it into an ALLOW.
    pub not_relaxable: bool,
    pub commands: Vec<CommandJudgment>,
    /// What must be saved before the command runs for it to be undone.
    pub undo: Undo,
    /// Hash of the loaded policy files.
    pub policy_revision: String,
}

impl Decision {
    /// Whether the sandboxed command may use the network (through the egress
    /// proxy, to [`Grants::connect`] only).
    pub fn network(&self) -> bool {
        !self.grants.connect.is_empty()
    }

    /// "will write /tmp/x/out; will connect to pypi.org:443", for prompts.
    pub fn grants_summary(&self) -> String {
        self.grants.summary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_parse_and_print() {
        let d = Destination::parse("PyPI.org:443").unwrap();
        assert_eq!(d.to_string(), "pypi.org:443");
        assert_eq!(
            Destination::parse("[::1]:8080").unwrap().to_string(),
            "[::1]:8080"
        );
        for bad in [
            "pypi.org",
            "pypi.org:0",
            "pypi.org:99999",
            ":443",
            "a b:1",
            "x:-1",
        ] {
            assert!(Destination::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn summary_names_every_grant() {
        let mut g = Grants::default();
        assert!(g.summary().contains("no network"));
        g.write.push(PathBuf::from("/tmp/x/out"));
        g.read.push(PathBuf::from("/srv/notes"));
        g.connect.push(Destination::parse("pypi.org:443").unwrap());
        g.sockets.push(PathBuf::from("/var/run/docker.sock"));
        g.extend(&g.clone());
        assert_eq!((g.write.len(), g.read.len(), g.sockets.len()), (1, 1, 1));
        assert_eq!(
            g.summary(),
            "will write /tmp/x/out; will read /srv/notes; will connect to pypi.org:443; \
             will connect to the socket /var/run/docker.sock"
        );
    }
}
