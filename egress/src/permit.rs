//! What one command may reach: its granted destinations and the credentials
//! bound to some of them.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use hyper::header::{HeaderName, HeaderValue};
use zeroize::Zeroizing;

/// Why a permit could not be built from the grants it was given.
#[derive(Debug, thiserror::Error)]
pub enum PermitError {
    #[error("destination host {0:?} is not a host name, an IP literal or a `*.suffix` form")]
    BadHost(String),
    #[error("destination {0} has port 0")]
    PortZero(String),
    #[error("credential {name}: header name {header:?} is not a valid HTTP header name")]
    BadHeaderName { name: String, header: String },
    #[error("credential {0}: the header value is not a valid HTTP header value")]
    BadHeaderValue(String),
    #[error("credential {0}: the placeholder is empty or not valid in an HTTP header")]
    BadPlaceholder(String),
    #[error("credential {0} is bound to no destination")]
    Unbound(String),
}

/// One destination a command may connect to.
///
/// `host` is an exact host name (`pypi.org`), an IP literal (`127.0.0.1`,
/// `::1`, brackets allowed), or a suffix form `*.example.org` that covers
/// every name strictly below `example.org` (not `example.org` itself). A
/// name grant never covers an IP literal and an IP grant never covers a
/// name: the grant is by name, and the proxy resolves that name itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub host: String,
    pub port: u16,
}

impl Destination {
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Destination {
            host: host.into(),
            port,
        }
    }

    fn pattern(&self) -> Result<HostPattern, PermitError> {
        if self.port == 0 {
            return Err(PermitError::PortZero(self.to_string()));
        }
        HostPattern::parse(&self.host).ok_or_else(|| PermitError::BadHost(self.host.clone()))
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') && !self.host.starts_with('[') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A host as a grant names it, normalized for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Name(String),
    /// `*.example.org`, kept as `.example.org`.
    Suffix(String),
    Ip(IpAddr),
}

impl HostPattern {
    fn parse(raw: &str) -> Option<HostPattern> {
        if let Some(rest) = raw.strip_prefix("*.") {
            return match Host::parse(rest)? {
                Host::Name(name) => Some(HostPattern::Suffix(format!(".{name}"))),
                Host::Ip(_) => None,
            };
        }
        Some(match Host::parse(raw)? {
            Host::Name(name) => HostPattern::Name(name),
            Host::Ip(ip) => HostPattern::Ip(ip),
        })
    }

    fn covers(&self, host: &Host) -> bool {
        match (self, host) {
            (HostPattern::Name(granted), Host::Name(asked)) => granted == asked,
            (HostPattern::Suffix(suffix), Host::Name(asked)) => {
                asked.len() > suffix.len() && asked.ends_with(suffix.as_str())
            }
            (HostPattern::Ip(granted), Host::Ip(asked)) => granted == asked,
            _ => false,
        }
    }
}

/// A host as a request names it: a lowercase name without trailing dot, or
/// a canonical IP address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Host {
    pub(crate) fn parse(raw: &str) -> Option<Host> {
        let unbracketed = raw
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or(raw);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Some(Host::Ip(ip.to_canonical()));
        }
        let name = raw.strip_suffix('.').unwrap_or(raw).to_ascii_lowercase();
        let valid_label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        (!name.is_empty() && name.len() <= 253 && name.split('.').all(valid_label))
            .then_some(Host::Name(name))
    }

    /// `localhost` and names below it may resolve to loopback; no other
    /// granted name may (the proxy, which uses this, refuses loopback for them).
    pub(crate) fn is_localhost(&self) -> bool {
        matches!(self, Host::Name(n) if n == "localhost" || n.ends_with(".localhost"))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// A credential the proxy puts into requests to its destinations, and only
/// to them. The child sees `placeholder`, never `header_value`.
pub struct BoundCredential {
    pub name: String,
    pub destinations: Vec<Destination>,
    /// The header set on every request to a bound destination, e.g.
    /// `Authorization`: the only place the credential goes.
    pub header_name: String,
    /// The header's complete value, e.g. `Bearer <token>`.
    pub header_value: Zeroizing<String>,
    /// The credential itself (`<token>`): what the placeholder stands for.
    pub secret: Zeroizing<String>,
    /// The text the child holds instead of `secret`. A request to a bound
    /// destination that carries it anywhere but in `header_name` (another
    /// header, the URL, the body) is refused; `header_name` is set to
    /// `header_value` whatever the child sent. Requests to other
    /// destinations keep it untouched. In responses from a bound
    /// destination, `secret` is masked back to it.
    pub placeholder: String,
}

impl fmt::Debug for BoundCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundCredential")
            .field("name", &self.name)
            .field("destinations", &self.destinations)
            .field("header_name", &self.header_name)
            .field("header_value", &"<redacted>")
            .field("secret", &"<redacted>")
            .field("placeholder", &self.placeholder)
            .finish()
    }
}

/// A credential ready to apply: parsed header name and value.
pub(crate) struct Injection {
    pub(crate) name: String,
    patterns: Vec<(HostPattern, u16)>,
    pub(crate) header_name: HeaderName,
    pub(crate) header_value: HeaderValue,
    pub(crate) placeholder: String,
    pub(crate) secret: Zeroizing<String>,
}

/// The granted destinations of one command and the credentials bound to
/// some of them.
pub struct Permit {
    destinations: Vec<(HostPattern, u16)>,
    granted: Vec<Destination>,
    injections: Vec<Injection>,
    loopback_ports: BTreeSet<u16>,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("destinations", &self.granted)
            .field(
                "credentials",
                &self.injections.iter().map(|i| &i.name).collect::<Vec<_>>(),
            )
            .field("loopback_ports", &self.loopback_ports)
            .finish()
    }
}

impl Permit {
    /// Checks every grant and credential; a bad one fails the whole permit,
    /// so a command never runs with less than its decision said by accident.
    pub fn new(
        destinations: Vec<Destination>,
        credentials: Vec<BoundCredential>,
    ) -> Result<Permit, PermitError> {
        let patterns = destinations
            .iter()
            .map(|d| Ok((d.pattern()?, d.port)))
            .collect::<Result<Vec<_>, PermitError>>()?;
        let injections = credentials
            .into_iter()
            .map(Injection::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Permit {
            destinations: patterns,
            granted: destinations,
            injections,
            loopback_ports: BTreeSet::new(),
        })
    }

    /// The ports of this machine (loopback, and the unspecified address
    /// that reaches it) the command may connect to; without this, none,
    /// whatever is granted.
    #[must_use]
    pub fn with_loopback_ports(mut self, ports: impl IntoIterator<Item = u16>) -> Permit {
        self.loopback_ports = ports.into_iter().collect();
        self
    }

    pub(crate) fn loopback_port_open(&self, port: u16) -> bool {
        self.loopback_ports.contains(&port)
    }

    /// The destinations as granted.
    #[must_use]
    pub fn destinations(&self) -> &[Destination] {
        &self.granted
    }

    pub(crate) fn allows(&self, host: &Host, port: u16) -> bool {
        self.destinations
            .iter()
            .any(|(p, granted)| *granted == port && p.covers(host))
    }

    /// The credentials bound to `host:port`.
    pub(crate) fn injections_for<'a>(
        &'a self,
        host: &'a Host,
        port: u16,
    ) -> impl Iterator<Item = &'a Injection> + 'a {
        self.injections.iter().filter(move |i| {
            i.patterns
                .iter()
                .any(|(p, granted)| *granted == port && p.covers(host))
        })
    }
}

impl Injection {
    fn new(cred: BoundCredential) -> Result<Injection, PermitError> {
        if cred.destinations.is_empty() {
            return Err(PermitError::Unbound(cred.name));
        }
        let patterns = cred
            .destinations
            .iter()
            .map(|d| Ok((d.pattern()?, d.port)))
            .collect::<Result<Vec<_>, PermitError>>()?;
        let header_name = HeaderName::from_bytes(cred.header_name.as_bytes()).map_err(|_| {
            PermitError::BadHeaderName {
                name: cred.name.clone(),
                header: cred.header_name.clone(),
            }
        })?;
        let mut header_value = HeaderValue::from_str(&cred.header_value)
            .map_err(|_| PermitError::BadHeaderValue(cred.name.clone()))?;
        header_value.set_sensitive(true);
        if cred.placeholder.is_empty() || HeaderValue::from_str(&cred.placeholder).is_err() {
            return Err(PermitError::BadPlaceholder(cred.name));
        }
        Ok(Injection {
            name: cred.name,
            patterns,
            header_name,
            header_value,
            placeholder: cred.placeholder,
            secret: cred.secret,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permit(grants: &[(&str, u16)]) -> Permit {
        Permit::new(
            grants
                .iter()
                .map(|(h, p)| Destination::new(*h, *p))
                .collect(),
            vec![],
        )
        .unwrap()
    }

    fn host(raw: &str) -> Host {
        Host::parse(raw).unwrap()
    }

    #[test]
    fn names_match_exactly_case_and_trailing_dot_aside() {
        let p = permit(&[("PyPI.org", 443)]);
        assert!(p.allows(&host("pypi.org"), 443));
        assert!(p.allows(&host("pypi.org."), 443));
        assert!(!p.allows(&host("pypi.org"), 80));
        assert!(!p.allows(&host("files.pypi.org"), 443));
        assert!(!p.allows(&host("pypi.org.evil.example"), 443));
    }

    #[test]
    fn suffix_covers_names_strictly_below_it_only() {
        let p = permit(&[("*.example.org", 443)]);
        assert!(p.allows(&host("a.example.org"), 443));
        assert!(p.allows(&host("a.b.example.org"), 443));
        assert!(!p.allows(&host("example.org"), 443));
        assert!(!p.allows(&host("badexample.org"), 443));
        assert!(!p.allows(&host("93.184.215.14"), 443));
    }

    #[test]
    fn ip_grants_match_only_that_ip_and_names_never_match_ips() {
        let p = permit(&[("127.0.0.1", 8080), ("[::1]", 8080), ("localhost", 9)]);
        assert!(p.allows(&host("127.0.0.1"), 8080));
        assert!(p.allows(&host("::ffff:127.0.0.1"), 8080));
        assert!(p.allows(&host("[::1]"), 8080));
        assert!(!p.allows(&host("127.0.0.2"), 8080));
        assert!(!p.allows(&host("localhost"), 8080));
        assert!(!p.allows(&host("127.0.0.1"), 9));
    }

    #[test]
    fn bad_grants_and_credentials_fail_the_permit() {
        for bad in ["", "*.", "*.1.2.3.4", "a..b", "-a.org", "a b", "*.*.org"] {
            assert!(
                Permit::new(vec![Destination::new(bad, 443)], vec![]).is_err(),
                "{bad:?}"
            );
        }
        assert!(Permit::new(vec![Destination::new("a.org", 0)], vec![]).is_err());
        let cred = |header: &str, placeholder: &str, to: Vec<Destination>| BoundCredential {
            name: "gh".into(),
            destinations: to,
            header_name: header.into(),
            header_value: Zeroizing::new("Bearer s3cret".into()),
            secret: Zeroizing::new("s3cret".into()),
            placeholder: placeholder.into(),
        };
        let to = || vec![Destination::new("api.github.com", 443)];
        assert!(Permit::new(vec![], vec![cred("Authorization", "PH", to())]).is_ok());
        assert!(Permit::new(vec![], vec![cred("Bad Header", "PH", to())]).is_err());
        assert!(Permit::new(vec![], vec![cred("Authorization", "", to())]).is_err());
        assert!(Permit::new(vec![], vec![cred("Authorization", "PH", vec![])]).is_err());
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let cred = BoundCredential {
            name: "gh".into(),
            destinations: vec![Destination::new("api.github.com", 443)],
            header_name: "Authorization".into(),
            header_value: Zeroizing::new("Bearer s3cret".into()),
            secret: Zeroizing::new("s3cret".into()),
            placeholder: "PH".into(),
        };
        assert!(!format!("{cred:?}").contains("s3cret"));
        let p = Permit::new(vec![], vec![cred]).unwrap();
        assert!(!format!("{p:?}").contains("s3cret"));
    }
}
