//! `[[socket]]`: how a program reaches a unix socket its decision granted.
//! The command cannot make a unix socket; praxisd relays each granted one
//! from a TCP listener on `127.0.0.1` inside the command's network namespace,
//! and these variables point the socket's own clients at that address.

use std::path::{Path, PathBuf};

use crate::rules::config::SocketSpec;
use crate::rules::socket_path;

/// What stands for the relay's `127.0.0.1:<port>` in a variable's value.
const ADDR: &str = "{addr}";

/// The `[[socket]]` entries, validated.
#[derive(Clone, Debug, Default)]
pub struct SocketClients {
    entries: Vec<(PathBuf, Vec<(String, String)>)>,
}

impl SocketClients {
    /// Each path exact and listed once; each name a plain upper-case
    /// variable outside `PRAXIS_` (the sandbox's own); each value with `{addr}`.
    pub fn build(specs: &[SocketSpec]) -> Result<SocketClients, String> {
        let mut entries: Vec<(PathBuf, Vec<(String, String)>)> = Vec::new();
        for spec in specs {
            let path = socket_path(&spec.path)?;
            if entries.iter().any(|(p, _)| *p == path) {
                return Err(format!("socket `{}` is listed twice", spec.path));
            }
            for (name, value) in &spec.env {
                let plain = name.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if !plain || name.starts_with("PRAXIS_") {
                    return Err(format!(
                        "socket `{}`: `{name}` must be an upper-case variable name outside PRAXIS_",
                        spec.path
                    ));
                }
                if !value.contains(ADDR) {
                    return Err(format!(
                        "socket `{}`: the value of `{name}` must contain {ADDR}",
                        spec.path
                    ));
                }
            }
            let env = spec
                .env
                .iter()
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect();
            entries.push((path, env));
        }
        Ok(SocketClients { entries })
    }

    /// The variables for `socket` relayed at `addr`, `{addr}` filled in;
    /// none for a socket the table does not list.
    pub fn env(&self, socket: &Path, addr: &str) -> Vec<(String, String)> {
        self.entries
            .iter()
            .filter(|(p, _)| p == socket)
            .flat_map(|(_, env)| env)
            .map(|(name, value)| (name.clone(), value.replace(ADDR, addr)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn spec(path: &str, name: &str, value: &str) -> SocketSpec {
        SocketSpec {
            path: path.to_owned(),
            env: BTreeMap::from([(name.to_owned(), value.to_owned())]),
        }
    }

    #[test]
    fn fills_the_relay_address_for_a_listed_socket_only() {
        let clients =
            SocketClients::build(&[spec("/var/run/docker.sock", "DOCKER_HOST", "tcp://{addr}")])
                .unwrap();
        assert_eq!(
            clients.env(Path::new("/var/run/docker.sock"), "127.0.0.1:50000"),
            [("DOCKER_HOST".to_owned(), "tcp://127.0.0.1:50000".to_owned())]
        );
        assert!(clients.env(Path::new("/run/other.sock"), "x").is_empty());
    }

    #[test]
    fn refuses_patterns_sandbox_names_and_values_without_the_address() {
        for bad in [
            spec("/var/run/*.sock", "DOCKER_HOST", "tcp://{addr}"),
            spec("run/docker.sock", "DOCKER_HOST", "tcp://{addr}"),
            spec("/var/run/../docker.sock", "DOCKER_HOST", "tcp://{addr}"),
            spec("/var/run/docker.sock", "PRAXIS_SOCKET_1", "{addr}"),
            spec("/var/run/docker.sock", "docker_host", "{addr}"),
            spec(
                "/var/run/docker.sock",
                "DOCKER_HOST",
                "tcp://127.0.0.1:2375",
            ),
        ] {
            assert!(
                SocketClients::build(std::slice::from_ref(&bad)).is_err(),
                "{bad:?}"
            );
        }
        let twice = spec("/run/docker.sock", "DOCKER_HOST", "tcp://{addr}");
        assert!(SocketClients::build(&[twice.clone(), twice]).is_err());
    }
}
