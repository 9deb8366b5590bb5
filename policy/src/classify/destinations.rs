//! Where a command connects: the `connect = [...]` lists of `patterns.toml`
//! compiled against `[registries]`, and the operand parsers that turn URLs,
//! `host:path` operands and git remotes into exact `host:port` destinations.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use super::routines::Detector;
use crate::decision::Destination;
use crate::shell::Word;

/// One entry of a `connect` list, compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Connect {
    /// A fixed destination (`host:port`, or one host of `registry:NAME`).
    To(Destination),
    /// Each URL operand's host and port (default port by scheme).
    UrlOperands,
    /// The repository the git command names, or the remote's URL from config.
    GitRemote,
    /// `host:path`, `user@host:path` and `rsync://` operands (ssh, rsync, scp).
    RemoteOperands,
    /// Needs the network, but where it connects is not known from the command.
    Unknown,
}

/// Compiles a `connect` list. `kinds`: whether operand-derived kinds
/// (`url-operands`, `git-remote`, `remote-operands`, `unknown`) are allowed.
pub fn compile(
    entries: &[String],
    registries: &BTreeMap<String, Vec<Destination>>,
    kinds: bool,
) -> Result<Vec<Connect>, String> {
    let mut out = Vec::new();
    for entry in entries {
        let kind = match entry.as_str() {
            "url-operands" => Some(Connect::UrlOperands),
            "git-remote" => Some(Connect::GitRemote),
            "remote-operands" => Some(Connect::RemoteOperands),
            "unknown" => Some(Connect::Unknown),
            _ => None,
        };
        if let Some(kind) = kind {
            if !kinds {
                return Err(format!(
                    "`{entry}` is for the program table; a rule names `host:port` or `registry:NAME`"
                ));
            }
            out.push(kind);
        } else if let Some(name) = entry.strip_prefix("registry:") {
            let hosts = registries
                .get(name)
                .ok_or_else(|| format!("unknown registry `{name}` (see [registries])"))?;
            out.extend(hosts.iter().cloned().map(Connect::To));
        } else {
            let d = Destination::parse(entry).ok_or_else(|| {
                format!(
                    "`{entry}` is not `host:port`, `registry:NAME`, `url-operands`, `git-remote`, `remote-operands` or `unknown`"
                )
            })?;
            out.push(Connect::To(d));
        }
    }
    Ok(out)
}

/// Compiles `[registries]`: every host must be `host:port`.
pub fn compile_registries(
    spec: &BTreeMap<String, Vec<String>>,
) -> Result<BTreeMap<String, Vec<Destination>>, String> {
    spec.iter()
        .map(|(name, hosts)| {
            if hosts.is_empty() {
                return Err(format!("registry `{name}` lists no host"));
            }
            let parsed = hosts
                .iter()
                .map(|h| {
                    Destination::parse(h)
                        .ok_or_else(|| format!("registry `{name}`: `{h}` is not `host:port`"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((name.clone(), parsed))
        })
        .collect()
}

/// Where one operand connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    To(Destination),
    /// A local file or path: no network.
    Local,
    /// Names a connection whose destination cannot be known; the reason.
    Unknowable(String),
    /// Not a URL or remote at all.
    NotRemote,
}

/// `[url_schemes]`: the default port of each URL scheme a fetcher, git or
/// ssh speaks (a URL of another scheme has an unknowable destination), the
/// schemes that name a local file, and the options and programs the
/// operand kinds of `connect` read.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlSchemes {
    pub ports: BTreeMap<String, u16>,
    pub local: Vec<String>,
    /// Options whose value is one more URL (`url-operands`).
    pub url_options: Vec<String>,
    /// Programs whose scheme-less URLs are https; the others' are http.
    pub https_programs: Vec<String>,
    /// The port option of `remote-operands` programs.
    pub port_options: Vec<String>,
    /// Extensions that make a scheme-less operand a file name, not a host.
    pub file_extensions: Vec<String>,
}

impl UrlSchemes {
    /// Every port is one, and ssh's (which `host:path` operands use) is known.
    pub fn check(&self) -> Result<(), String> {
        if let Some((scheme, _)) = self.ports.iter().find(|(_, p)| **p == 0) {
            return Err(format!("url scheme `{scheme}` has port 0"));
        }
        if self.default_port("ssh").is_none() {
            return Err("[url_schemes] ports must give ssh's, for `host:path` operands".to_owned());
        }
        Ok(())
    }

    fn default_port(&self, scheme: &str) -> Option<u16> {
        self.ports.get(scheme).copied()
    }

    /// Whether `scheme` names a file on this machine.
    pub fn is_local(&self, scheme: &str) -> bool {
        self.local.iter().any(|l| l == scheme)
    }
}

/// A host as a URL or operand writes it: a name or an IP literal.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'))
}

/// `host[:port]` (or `[v6]:port`) of an authority, after any `user@`.
fn authority(auth: &str, default: u16, shown: &str) -> Target {
    let host_port = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, rest)) => (h, rest.strip_prefix(':')),
            None => return Target::Unknowable(format!("`{shown}` has a malformed host")),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    let port = match port {
        None | Some("") => default,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n != 0 => n,
            _ => return Target::Unknowable(format!("`{shown}` has a port that is not a number")),
        },
    };
    if !valid_host(host) {
        return Target::Unknowable(format!("the host of `{shown}` is not a plain name"));
    }
    Target::To(Destination {
        host: canonical_host(host),
        port,
    })
}

/// A host as the egress proxy compares it: an IP address in its one
/// canonical spelling (`2130706433`, `0x7f.1` and `::ffff:127.0.0.1` are
/// all `127.0.0.1`, as the C resolver and curl read them), else the name in
/// lowercase.
pub fn canonical_host(host: &str) -> String {
    match ip_address(host) {
        Some(ip) => ip.to_string(),
        None => host.to_ascii_lowercase(),
    }
}

/// The address an IP-literal host names, in any spelling the C resolver
/// accepts: IPv6 (brackets allowed) or IPv4 as 1 to 4 parts, each decimal,
/// `0x` hex or `0` octal.
fn ip_address(host: &str) -> Option<IpAddr> {
    let unbracketed = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = unbracketed.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    let parts = host
        .split('.')
        .map(|part| {
            let lower = part.to_ascii_lowercase();
            if let Some(hex) = lower.strip_prefix("0x") {
                u32::from_str_radix(hex, 16).ok()
            } else if lower.len() > 1 && lower.starts_with('0') {
                u32::from_str_radix(&lower[1..], 8).ok()
            } else {
                lower.parse::<u32>().ok()
            }
        })
        .collect::<Option<Vec<u32>>>()?;
    let (last, leading) = parts.split_last()?;
    if leading.len() > 3 || leading.iter().any(|p| *p > 255) {
        return None;
    }
    let shift = 8 * (4 - leading.len() as u32);
    if shift < 32 && u64::from(*last) >= 1u64 << shift {
        return None;
    }
    let high = leading
        .iter()
        .enumerate()
        .fold(0u32, |acc, (i, p)| acc | (p << (24 - 8 * i)));
    Some(IpAddr::V4(Ipv4Addr::from(high | last)))
}

/// Whether `host` is this machine: a name of `names` (`localhost`) or below
/// `localhost`, or any loopback or unspecified address in any spelling
/// (`0.0.0.0` and `::` reach this machine's loopback on Linux).
pub fn is_loopback(host: &str, names: &[String]) -> bool {
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    names.iter().any(|n| n.eq_ignore_ascii_case(&name))
        || name.ends_with(".localhost")
        || ip_address(host).is_some_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

/// Where a URL operand connects. Without a scheme, `default_scheme` applies
/// (curl and wget take `example.com/x` as http).
pub fn url_target(word: &Word, default_scheme: &str, schemes: &UrlSchemes) -> Target {
    let text = word.text.as_str();
    let (scheme, rest, explicit) = match text.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r, true),
        None => (default_scheme.to_owned(), text, false),
    };
    // A dynamic operand may be any URL (an `a=$X` item of httpie is not one).
    if word.dynamic && !text.contains('=') {
        return Target::Unknowable(format!("`{text}` is only known at run time"));
    }
    if !explicit && !looks_like_host(text, schemes) {
        return Target::NotRemote;
    }
    if schemes.is_local(&scheme) {
        return Target::Local;
    }
    let auth = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    // curl expands `{a,b}` and `[1-9]` in URLs: several hosts.
    if auth.contains(['{', '}']) || (host_port.contains('[') && !host_port.starts_with('[')) {
        return Target::Unknowable(format!("`{text}` expands to several hosts"));
    }
    let Some(port) = schemes.default_port(&scheme) else {
        return Target::Unknowable(format!("`{text}` uses the scheme `{scheme}`"));
    };
    authority(auth, port, text)
}

/// A scheme-less operand that a fetcher would take as a host: `example.com`,
/// `localhost:8080/x`, `10.0.0.1/x`. Not options, items (`a=1`), methods or paths.
fn looks_like_host(text: &str, schemes: &UrlSchemes) -> bool {
    let host_part = text.split(['/', '?', '#']).next().unwrap_or("");
    let host = host_part.split(':').next().unwrap_or("");
    !text.starts_with(['-', '/', '.', '~', '@', ':'])
        && !text.contains(['=', ' '])
        && (host.contains('.') || host.eq_ignore_ascii_case("localhost"))
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        && !host.ends_with('.')
        && host.bytes().any(|b| b.is_ascii_alphabetic() || b == b'.')
        && !looks_like_file_name(host_part, schemes)
}

/// `notes.txt`, `data.json`: a file name rather than a host (hosts end in a
/// letters-only label of a known shape, but so do files; the common file
/// extensions of `[url_schemes] file_extensions` decide).
fn looks_like_file_name(text: &str, schemes: &UrlSchemes) -> bool {
    !text.contains(':')
        && text
            .rsplit_once('.')
            .is_some_and(|(_, ext)| schemes.file_extensions.iter().any(|e| e == ext))
}

/// Where a git repository argument connects: a URL, scp-like
/// `[user@]host:path`, or a local path.
pub fn repository_target(text: &str, dynamic: bool, schemes: &UrlSchemes) -> Target {
    if dynamic {
        return Target::Unknowable(format!("the repository `{text}` is only known at run time"));
    }
    if text.starts_with(['/', '.', '~']) {
        return Target::Local;
    }
    if let Some((scheme, _)) = text.split_once("::") {
        // Remote helpers (`ext::`, `fd::`, …) choose their own transport.
        return Target::Unknowable(format!("`{text}` uses the remote helper `{scheme}`"));
    }
    if text.contains("://") {
        let word = Word {
            text: text.to_owned(),
            dynamic: false,
            glob: false,
        };
        return url_target(&word, "https", schemes);
    }
    scp_like(text, schemes).unwrap_or(Target::Local)
}

/// `[user@]host:path` (no `/` before the colon), as scp, rsync and git write it.
fn scp_like(text: &str, schemes: &UrlSchemes) -> Option<Target> {
    let colon = text.find(':')?;
    let before = &text[..colon];
    if before.is_empty() || before.contains('/') {
        return None;
    }
    let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = schemes.default_port("ssh")?;
    Some(if valid_host(host) {
        Target::To(Destination {
            host: host.to_ascii_lowercase(),
            port,
        })
    } else {
        Target::Unknowable(format!("the host of `{text}` is not a plain name"))
    })
}

/// Where a `host:path` operand of scp, rsync or sftp connects.
pub fn remote_operand_target(word: &Word, port: Option<u16>, schemes: &UrlSchemes) -> Target {
    let text = word.text.as_str();
    if text.contains("://") {
        if word.dynamic {
            return Target::Unknowable(format!("`{text}` is only known at run time"));
        }
        return url_target(word, "ssh", schemes);
    }
    let Some(target) = scp_like(text, schemes) else {
        return Target::NotRemote;
    };
    if word.dynamic {
        return Target::Unknowable(format!("`{text}` is only known at run time"));
    }
    match (target, port) {
        (Target::To(d), Some(p)) => Target::To(Destination { port: p, ..d }),
        (t, _) => t,
    }
}

/// Which remote or repository a git network subcommand talks to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GitRepository {
    /// A remote name or a URL as written.
    Named(Word),
    /// The default remote (none named).
    Default,
    /// Every configured remote (`--all`, `remote update`).
    All,
    Unknowable(String),
}

/// The repository a git subcommand names. `sub` are the subcommand words
/// (`["fetch"]`, `["remote", "update"]`), `args` the words after `git`; the
/// `git_repository` detector gives the option words.
pub fn git_repository(detector: &Detector, sub: &[String], args: &[Word]) -> GitRepository {
    let first = sub.first().map(String::as_str).unwrap_or("");
    if detector.has("every_remote", first) {
        return GitRepository::All;
    }
    if detector.has("unknowable", first) {
        return GitRepository::Unknowable(format!(
            "`git {first}` takes its URLs from the repository's files, not from the command"
        ));
    }
    let is_push = detector.words("push").iter().any(|words| {
        let words: Vec<&str> = words.split_whitespace().collect();
        sub.len() >= words.len() && sub.iter().zip(&words).all(|(s, w)| s == w)
    });
    let mut rest = args.iter().skip(sub.len());
    while let Some(w) = rest.next() {
        let t = w.text.as_str();
        if detector.has("all_options", t) {
            return GitRepository::All;
        }
        if t == "--" {
            return rest
                .next()
                .map_or(GitRepository::Default, |w| GitRepository::Named(w.clone()));
        }
        if t.starts_with('-') && t.len() > 1 && !w.dynamic {
            let bare = t.split('=').next().unwrap_or(t);
            // `git push -u origin x`: `-u` takes no value under push (it does under branch).
            if t.contains('=') || (is_push && detector.has("push_flags", bare)) {
                continue;
            }
            if detector.has("repo_options", bare) {
                return rest
                    .next()
                    .map_or(GitRepository::Default, |w| GitRepository::Named(w.clone()));
            }
            if detector.has("value_options", bare) {
                rest.next();
            }
            continue;
        }
        return GitRepository::Named(w.clone());
    }
    GitRepository::Default
}

/// Destinations of a git repository given the configured remotes.
pub fn git_targets(
    repo: &GitRepository,
    remotes: &BTreeMap<String, String>,
    schemes: &UrlSchemes,
) -> Vec<Target> {
    let by_name = |name: &str| match remotes.get(name) {
        Some(url) => repository_target(url, false, schemes),
        None => Target::Unknowable(format!(
            "the remote `{name}` is not in this repository's config"
        )),
    };
    match repo {
        GitRepository::Named(w) => {
            let is_name =
                !w.dynamic && !w.text.contains([':', '/']) && !w.text.starts_with(['.', '~']);
            vec![if is_name {
                by_name(&w.text)
            } else {
                repository_target(&w.text, w.dynamic, schemes)
            }]
        }
        GitRepository::Default => {
            if remotes.contains_key("origin") {
                vec![by_name("origin")]
            } else if remotes.len() == 1 {
                remotes
                    .values()
                    .map(|u| repository_target(u, false, schemes))
                    .collect()
            } else {
                vec![Target::Unknowable(
                    "no remote is named and the repository has no single default remote".to_owned(),
                )]
            }
        }
        GitRepository::All if remotes.is_empty() => vec![Target::Unknowable(
            "the repository's config names no remote".to_owned(),
        )],
        GitRepository::All => remotes
            .values()
            .map(|u| repository_target(u, false, schemes))
            .collect(),
        GitRepository::Unknowable(why) => vec![Target::Unknowable(why.clone())],
    }
}

#[cfg(test)]
mod tests {
    use super::super::routines::{DetectorSpec, Detectors, Routine};
    use super::*;

    /// The built-in `[url_schemes]`.
    fn schemes() -> UrlSchemes {
        #[derive(serde::Deserialize)]
        struct Section {
            url_schemes: UrlSchemes,
        }
        let section: Section = toml::from_str(crate::BUILTIN_PATTERNS).unwrap();
        section.url_schemes
    }

    /// The built-in `git_repository` entry.
    fn git_detector() -> Detector {
        #[derive(serde::Deserialize)]
        struct Section {
            detector: Vec<DetectorSpec>,
        }
        let section: Section = toml::from_str(crate::BUILTIN_PATTERNS).unwrap();
        let table = Detectors::build(&section.detector).unwrap();
        table.find("git", Routine::GitRepository).unwrap().clone()
    }

    fn word(text: &str) -> Word {
        Word {
            text: text.to_owned(),
            dynamic: text.contains('$'),
            glob: false,
        }
    }

    fn dest(host: &str, port: u16) -> Target {
        Target::To(Destination {
            host: host.to_owned(),
            port,
        })
    }

    #[test]
    fn urls_give_host_and_default_port() {
        assert_eq!(
            url_target(&word("https://pypi.org/simple/"), "http", &schemes()),
            dest("pypi.org", 443)
        );
        assert_eq!(
            url_target(&word("http://localhost:8080/x"), "http", &schemes()),
            dest("localhost", 8080)
        );
        assert_eq!(
            url_target(&word("example.com/x"), "http", &schemes()),
            dest("example.com", 80)
        );
        assert_eq!(
            url_target(&word("http://u:p@[::1]:3000/"), "http", &schemes()),
            dest("::1", 3000)
        );
        assert_eq!(
            url_target(&word("HTTPS://Example.COM"), "http", &schemes()),
            dest("example.com", 443)
        );
        assert_eq!(
            url_target(&word("file:///etc/hosts"), "http", &schemes()),
            Target::Local
        );
        for not in ["-s", "a=1", "POST", "out.json", "./x", "Authorization:x"] {
            assert_eq!(
                url_target(&word(not), "http", &schemes()),
                Target::NotRemote,
                "{not}"
            );
        }
        for unknowable in [
            "https://$HOST/x",
            "http://{a,b}.example.com/",
            "weird://x",
            "http://x:port/",
        ] {
            assert!(
                matches!(
                    url_target(&word(unknowable), "http", &schemes()),
                    Target::Unknowable(_)
                ),
                "{unknowable}"
            );
        }
    }

    #[test]
    fn every_spelling_of_this_machine_is_loopback() {
        let names = vec!["localhost".to_owned()];
        for local in [
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "127.0.0.1",
            "127.1",
            "127.255.0.9",
            "2130706433",
            "0x7f000001",
            "0x7f.0.0.1",
            "0177.0.0.1",
            "0",
            "0.0.0.0",
            "::1",
            "[::1]",
            "::",
            "::ffff:127.0.0.1",
            "[::ffff:7f00:1]",
        ] {
            assert!(is_loopback(local, &names), "{local}");
        }
        for remote in [
            "example.com",
            "localhost.evil.com",
            "128.0.0.1",
            "10.0.0.1",
            "0x80000001",
            "2001:db8::1",
            "1.2.3.4.5",
            "127.0.0.256",
            "09.0.0.1",
        ] {
            assert!(!is_loopback(remote, &names), "{remote}");
        }
        // Granted in the one spelling the proxy compares.
        for url in [
            "http://2130706433:80/x",
            "http://[::ffff:127.0.0.1]/",
            "http://0x7f.1",
        ] {
            assert_eq!(
                url_target(&word(url), "http", &schemes()),
                dest("127.0.0.1", 80),
                "{url}"
            );
        }
    }

    #[test]
    fn git_repositories_resolve_through_remotes() {
        let remotes: BTreeMap<String, String> = [
            (
                "origin".to_owned(),
                "git@github.com:acme/app.git".to_owned(),
            ),
            ("up".to_owned(), "https://gitlab.com/acme/app".to_owned()),
        ]
        .into();
        let args = |s: &str| s.split(' ').map(word).collect::<Vec<_>>();
        let of = |cmd: &str| {
            let a = args(cmd);
            let sub = vec![a[0].text.clone()];
            git_targets(
                &git_repository(&git_detector(), &sub, &a),
                &remotes,
                &schemes(),
            )
        };
        assert_eq!(of("fetch"), vec![dest("github.com", 22)]);
        assert_eq!(of("push -u up HEAD"), vec![dest("gitlab.com", 443)]);
        assert_eq!(of("fetch --depth 1 up main"), vec![dest("gitlab.com", 443)]);
        assert_eq!(
            of("clone https://github.com/x/y dir"),
            vec![dest("github.com", 443)]
        );
        assert_eq!(of("clone ../local copy"), vec![Target::Local]);
        assert_eq!(of("fetch --all").len(), 2);
        assert!(matches!(of("fetch nowhere")[0], Target::Unknowable(_)));
        assert!(matches!(of("fetch $R")[0], Target::Unknowable(_)));
        assert!(matches!(of("clone ext::sh")[0], Target::Unknowable(_)));
        assert!(matches!(
            git_targets(&GitRepository::Default, &BTreeMap::new(), &schemes())[0],
            Target::Unknowable(_)
        ));
    }

    #[test]
    fn connect_lists_compile_against_registries() {
        let regs = compile_registries(
            &[("npm".to_owned(), vec!["registry.npmjs.org:443".to_owned()])].into(),
        )
        .unwrap();
        let c = compile(&["registry:npm".into(), "url-operands".into()], &regs, true).unwrap();
        assert_eq!(c.len(), 2);
        assert!(
            compile(&["registry:nope".into()], &regs, true)
                .unwrap_err()
                .contains("unknown registry")
        );
        assert!(compile(&["url-operands".into()], &regs, false).is_err());
        assert!(compile(&["example.com".into()], &regs, true).is_err());
        assert!(compile_registries(&[("x".to_owned(), vec!["bad".to_owned()])].into()).is_err());
    }

    #[test]
    fn remote_operands_use_ssh_ports() {
        assert_eq!(
            remote_operand_target(&word("user@host.io:/srv"), None, &schemes()),
            dest("host.io", 22)
        );
        assert_eq!(
            remote_operand_target(&word("host.io:x"), Some(2222), &schemes()),
            dest("host.io", 2222)
        );
        assert_eq!(
            remote_operand_target(&word("rsync://mirror.org/x"), None, &schemes()),
            dest("mirror.org", 873)
        );
        assert_eq!(
            remote_operand_target(&word("./a:b"), None, &schemes()),
            Target::NotRemote
        );
        assert_eq!(
            remote_operand_target(&word("src/"), None, &schemes()),
            Target::NotRemote
        );
    }
}
