//! `[fleet]` in `praxis.toml`: the PostgreSQL store this host joins.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// `[fleet]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FleetFile {
    /// `postgresql://…` with this host's login.
    url: Option<String>,
    /// A file whose first line is the URL (it holds a password).
    url_file: Option<PathBuf>,
    /// This host's name in the fleet (default: the hostname).
    host: Option<String>,
    /// Trip the local kill switch after the store was unreachable this
    /// long ("60s", "5m"); off by default.
    kill_when_unreachable_after: Option<String>,
    /// Seconds between heartbeats and polls of the store (default 5).
    poll_secs: Option<u64>,
}

/// Where the URL is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FleetUrl {
    Inline(String),
    File(PathBuf),
}

/// This host's membership of a fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fleet {
    pub url: FleetUrl,
    pub host: String,
    pub kill_when_unreachable_after: Option<Duration>,
    pub poll: Duration,
}

impl FleetUrl {
    /// The URL, read from its file each time (so a rotated password is
    /// picked up at the next connection).
    pub fn resolve(&self) -> Result<String, String> {
        match self {
            FleetUrl::Inline(url) => Ok(url.clone()),
            FleetUrl::File(path) => std::fs::read_to_string(path)
                .map(|text| text.lines().next().unwrap_or("").trim().to_owned())
                .map_err(|e| format!("[fleet] url_file {}: {e}", path.display())),
        }
    }
}

/// "90s", "5m", "1h".
fn duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let n: u64 = text[..split].parse().ok()?;
    let scale = match &text[split..] {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    n.checked_mul(scale)
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
}

fn hostname() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let short = name.trim().split('.').next()?.to_ascii_lowercase();
    Some(short)
}

impl FleetFile {
    /// `None` when the section names no store.
    pub(super) fn into_fleet(self) -> Result<Option<Fleet>, String> {
        let url = match (self.url, self.url_file) {
            (None, None) => {
                return if self.host.is_some() || self.kill_when_unreachable_after.is_some() {
                    Err(String::from("[fleet] needs url or url_file"))
                } else {
                    Ok(None)
                };
            }
            (Some(_), Some(_)) => {
                return Err(String::from("[fleet] takes url or url_file, not both"));
            }
            (Some(url), None) => FleetUrl::Inline(url),
            (None, Some(path)) => FleetUrl::File(path),
        };
        let host = self
            .host
            .or_else(hostname)
            .ok_or_else(|| String::from("[fleet] host is unset and the hostname unreadable"))?;
        let named = !host.is_empty()
            && host.len() <= 63
            && host.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && host
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !named {
            return Err(format!(
                "[fleet] host {host:?}: a-z, 0-9, - and _ only, at most 63 (set host = \"…\")"
            ));
        }
        let kill_when_unreachable_after = match self.kill_when_unreachable_after {
            None => None,
            Some(text) => Some(duration(&text).ok_or_else(|| {
                format!("[fleet] kill_when_unreachable_after {text:?}: a duration like 60s, 5m, 1h")
            })?),
        };
        Ok(Some(Fleet {
            url,
            host,
            kill_when_unreachable_after,
            poll: Duration::from_secs(self.poll_secs.unwrap_or(5).clamp(1, 300)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<Fleet>, String> {
        toml::from_str::<FleetFile>(text).unwrap().into_fleet()
    }

    #[test]
    fn the_fleet_section_is_checked() {
        assert_eq!(parse("").unwrap(), None);
        let fleet = parse(
            "url = \"postgresql://h@db/fleet\"\nhost = \"ci-7\"\nkill_when_unreachable_after = \"2m\"",
        )
        .unwrap()
        .unwrap();
        assert_eq!(fleet.host, "ci-7");
        assert_eq!(
            fleet.kill_when_unreachable_after,
            Some(Duration::from_secs(120))
        );
        assert_eq!(fleet.poll, Duration::from_secs(5));
        assert!(parse("host = \"a\"").is_err());
        assert!(parse("url = \"x\"\nurl_file = \"/f\"").is_err());
        assert!(parse("url = \"x\"\nhost = \"A; drop\"").is_err());
        assert!(
            parse("url = \"x\"\nhost = \"a\"\nkill_when_unreachable_after = \"soon\"").is_err()
        );
    }
}
