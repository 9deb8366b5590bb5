//! The child's environment: an allowlist over the candidate environment, plus
//! the variables the sandbox itself sets.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use crate::{Profile, SandboxError};

/// Names always passed through when present (`LC_*` is matched as a prefix).
pub const BASE_ENV_ALLOW: &[&str] = &["PATH", "USER", "LOGNAME", "LANG", "LC_*", "TERM", "TZ"];

/// The proxy variables: set by the sandbox alone (to the egress listener, or
/// not at all with the network off), never taken from the candidate.
pub const PROXY_ENV: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "all_proxy",
];

/// The proxy exclusion lists, set empty: nothing bypasses the proxy (and
/// inside the namespace there is nothing else to reach).
const NO_PROXY_ENV: &[&str] = &["no_proxy", "NO_PROXY"];

/// The `PATH` a child gets when the candidate environment has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Never passed, even when the daemon adds the name: the variables of the
/// policy's environment table (they make a program load or run code of the
/// caller's choosing, or are the sandbox's to set), and the sandbox's own.
fn denied(name: &[u8]) -> bool {
    name.starts_with(b"PRAXIS_")
        || PROXY_ENV
            .iter()
            .chain(NO_PROXY_ENV)
            .any(|d| d.as_bytes() == name)
        // A name that is not UTF-8 is in no table, and no allowlist passes it.
        || std::str::from_utf8(name).is_ok_and(praxis_policy::env::stripped)
}

fn allowed(name: &[u8], extra: &[String]) -> bool {
    let base = BASE_ENV_ALLOW
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix.as_bytes()),
            None => pattern.as_bytes() == name,
        });
    (base || extra.iter().any(|e| e.as_bytes() == name)) && !denied(name)
}

/// The environment the child gets, in order, as `NAME=value` strings, and its
/// `PATH` value (used to resolve the program in the parent).
#[derive(Debug)]
pub(crate) struct EnvBlock {
    pub(crate) entries: Vec<CString>,
    pub(crate) path: OsString,
}

/// Applies the allowlist to `candidate` and adds `HOME`, `TMPDIR`,
/// `PRAXIS_SANDBOX` and either, with the network off,
/// `PRAXIS_SANDBOX_NETWORK_DISABLED=1`, or, given the egress listener's
/// port, the proxy variables set to `http://127.0.0.1:<port>` and the
/// exclusion lists empty; and `PRAXIS_SOCKET_<n>=127.0.0.1:<port>` for the
/// n-th socket relay (from 1). The first occurrence of a name wins.
pub(crate) fn build(
    candidate: &[(OsString, OsString)],
    extra_allow: &[String],
    home: &Path,
    tmpdir: &Path,
    profile: Profile,
    egress_port: Option<u16>,
    relay_ports: &[u16],
) -> Result<EnvBlock, SandboxError> {
    let mut seen: Vec<&[u8]> = Vec::new();
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (name, value) in candidate {
        let name = name.as_bytes();
        if name.is_empty()
            || name.contains(&b'=')
            || !allowed(name, extra_allow)
            || seen.contains(&name)
        {
            continue;
        }
        seen.push(name);
        pairs.push((name.to_vec(), value.as_bytes().to_vec()));
    }
    if !seen.contains(&b"PATH".as_slice()) {
        pairs.push((b"PATH".to_vec(), DEFAULT_PATH.as_bytes().to_vec()));
    }
    pairs.push((b"HOME".to_vec(), home.as_os_str().as_bytes().to_vec()));
    pairs.push((b"TMPDIR".to_vec(), tmpdir.as_os_str().as_bytes().to_vec()));
    pairs.push((
        b"PRAXIS_SANDBOX".to_vec(),
        profile.as_str().as_bytes().to_vec(),
    ));
    match egress_port {
        None => pairs.push((b"PRAXIS_SANDBOX_NETWORK_DISABLED".to_vec(), b"1".to_vec())),
        Some(port) => {
            let url = format!("http://127.0.0.1:{port}").into_bytes();
            for name in PROXY_ENV {
                pairs.push((name.as_bytes().to_vec(), url.clone()));
            }
            for name in NO_PROXY_ENV {
                pairs.push((name.as_bytes().to_vec(), Vec::new()));
            }
        }
    }
    for (n, port) in (1..).zip(relay_ports) {
        pairs.push((
            format!("{}{n}", crate::SOCKET_ENV_PREFIX).into_bytes(),
            format!("127.0.0.1:{port}").into_bytes(),
        ));
    }
    let path = pairs
        .iter()
        .find(|(n, _)| n == b"PATH")
        .map(|(_, v)| OsString::from_vec(v.clone()))
        .unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    let entries = pairs
        .into_iter()
        .map(|(mut n, v)| {
            n.push(b'=');
            n.extend_from_slice(&v);
            CString::new(n).map_err(|e| {
                SandboxError::Invalid(format!(
                    "environment entry with a NUL byte: {}",
                    OsStr::from_bytes(&e.into_vec()).to_string_lossy()
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(EnvBlock { entries, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(n: &str, v: &str) -> (OsString, OsString) {
        (n.into(), v.into())
    }

    fn render(block: &EnvBlock) -> Vec<String> {
        block
            .entries
            .iter()
            .map(|c| c.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn allowlist_keeps_basics_and_drops_loader_and_shell_hooks() {
        let candidate = vec![
            pair("PATH", "/bin"),
            pair("LC_ALL", "C"),
            pair("LD_PRELOAD", "/evil.so"),
            pair("BASH_ENV", "/evil"),
            // Loaders the policy's table names: stripped even when allowed.
            pair("JAVA_TOOL_OPTIONS", "-javaagent:/evil.jar"),
            pair("LUA_PATH", "/evil/?.lua"),
            pair("PS4", "$(id)"),
            pair("AWS_SECRET_ACCESS_KEY", "x"),
            pair("GH_TOKEN", "t"),
            pair("HOME", "/elsewhere"),
            pair("PATH", "/second"),
            pair("https_proxy", "http://elsewhere:3128"),
        ];
        let extra = vec![
            "GH_TOKEN".to_owned(),
            "LD_PRELOAD".to_owned(),
            "BASH_ENV".to_owned(),
            "JAVA_TOOL_OPTIONS".to_owned(),
            "LUA_PATH".to_owned(),
            "PS4".to_owned(),
            "https_proxy".to_owned(),
        ];
        let block = build(
            &candidate,
            &extra,
            Path::new("/h"),
            Path::new("/t/x"),
            Profile::ReadOnly,
            None,
            &[],
        )
        .unwrap();
        assert_eq!(
            render(&block),
            [
                "PATH=/bin",
                "LC_ALL=C",
                "GH_TOKEN=t",
                "HOME=/h",
                "TMPDIR=/t/x",
                "PRAXIS_SANDBOX=read-only",
                "PRAXIS_SANDBOX_NETWORK_DISABLED=1"
            ]
        );
        assert_eq!(block.path, OsString::from("/bin"));
    }

    #[test]
    fn proxied_network_points_every_proxy_variable_at_the_listener() {
        let candidate = vec![
            pair("NO_PROXY", "*"),
            pair("ALL_PROXY", "socks5://x:1"),
            pair("PRAXIS_SOCKET_1", "elsewhere:1"),
        ];
        let extra = vec![
            "NO_PROXY".to_owned(),
            "ALL_PROXY".to_owned(),
            "PRAXIS_SOCKET_1".to_owned(),
        ];
        let block = build(
            &candidate,
            &extra,
            Path::new("/h"),
            Path::new("/t"),
            Profile::Full,
            Some(50123),
            &[50124, 50125],
        )
        .unwrap();
        let rendered = render(&block);
        let relays: Vec<&String> = rendered
            .iter()
            .filter(|e| e.starts_with("PRAXIS_SOCKET_"))
            .collect();
        assert_eq!(
            relays,
            [
                "PRAXIS_SOCKET_1=127.0.0.1:50124",
                "PRAXIS_SOCKET_2=127.0.0.1:50125"
            ]
        );
        assert!(rendered.contains(&format!("PATH={DEFAULT_PATH}")));
        assert!(rendered.contains(&"PRAXIS_SANDBOX=full".to_owned()));
        assert!(
            !rendered
                .iter()
                .any(|e| e.starts_with("PRAXIS_SANDBOX_NETWORK_DISABLED"))
        );
        for name in PROXY_ENV {
            let entry = format!("{name}=http://127.0.0.1:50123");
            assert_eq!(
                rendered.iter().filter(|e| **e == entry).count(),
                1,
                "{name}"
            );
        }
        for name in NO_PROXY_ENV {
            let set: Vec<_> = rendered
                .iter()
                .filter(|e| e.starts_with(&format!("{name}=")))
                .collect();
            assert_eq!(set, [&format!("{name}=")]);
        }
    }

    #[test]
    fn nul_in_value_is_an_error() {
        let err = build(
            &[pair("TERM", "a\0b")],
            &[],
            Path::new("/h"),
            Path::new("/t"),
            Profile::Full,
            None,
            &[],
        );
        assert!(matches!(err, Err(SandboxError::Invalid(_))));
    }
}
