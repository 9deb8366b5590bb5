//! The daemon's side of the egress proxy: one proxy for the daemon's life,
//! its CA, and what a command with network grants is given (a permit for
//! its granted destinations, and the variables that make its TLS clients
//! trust the proxy's CA). Each command's proxy is served by the execute
//! stage on the listener the sandbox made inside the command's network
//! namespace.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use praxis_egress::{BoundCredential, Ca, Destination, Egress, Limits, Permit};
use praxis_policy::Decision;
use praxis_proto::CredentialBinding;
use zeroize::Zeroizing;

use crate::config;

/// Variables that name a CA bundle (the system roots plus the proxy's CA).
const BUNDLE_ENV: [&str; 4] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CARGO_HTTP_CAINFO",
    "GIT_SSL_CAINFO",
];
/// Node adds this one certificate to its own roots.
const EXTRA_CA_ENV: &str = "NODE_EXTRA_CA_CERTS";

#[derive(Debug, thiserror::Error)]
pub enum EgressSetupError {
    #[error("egress CA: {0}")]
    Ca(#[from] praxis_egress::CaError),
    #[error("egress proxy: {0}")]
    Proxy(#[from] praxis_egress::EgressError),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// The proxy and the files a sandboxed command reads to trust it.
pub struct EgressHub {
    pub proxy: Egress,
    /// The CA certificate alone (`NODE_EXTRA_CA_CERTS`).
    pub ca_cert: PathBuf,
    /// The system roots and the CA (`SSL_CERT_FILE` and the like).
    pub bundle: PathBuf,
}

impl EgressHub {
    /// Loads (or makes, at first start) the CA under `state_dir/egress`,
    /// where no command can read its key, and publishes its certificate and
    /// the trust bundle in `public_dir`, which every command can read.
    /// Upstream TLS trusts the system roots and those in `upstream_roots`.
    pub fn open(
        state_dir: &Path,
        public_dir: &Path,
        upstream_roots: &[PathBuf],
    ) -> Result<EgressHub, EgressSetupError> {
        let ca = Ca::load_or_create(&state_dir.join("egress"))?;
        let io = |what: &Path, e| EgressSetupError::Io(what.display().to_string(), e);
        fs::create_dir_all(public_dir).map_err(|e| io(public_dir, e))?;
        fs::set_permissions(public_dir, fs::Permissions::from_mode(0o755))
            .map_err(|e| io(public_dir, e))?;
        let ca_cert = public_dir.join("ca.pem");
        let bundle = public_dir.join("bundle.pem");
        fs::write(&ca_cert, ca.cert_pem()).map_err(|e| io(&ca_cert, e))?;
        ca.write_bundle(&bundle)?;
        for file in [&ca_cert, &bundle] {
            fs::set_permissions(file, fs::Permissions::from_mode(0o644))
                .map_err(|e| io(file, e))?;
        }
        let mut extra_roots = Vec::new();
        for path in upstream_roots {
            extra_roots.extend(praxis_egress::pem_roots(path)?);
        }
        let proxy = Egress::new(Limits::default(), Some(Arc::new(ca)), extra_roots)?;
        Ok(EgressHub {
            proxy,
            ca_cert,
            bundle,
        })
    }

    /// The CA variables for a command that goes out through the proxy.
    pub fn child_env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = BUNDLE_ENV
            .iter()
            .map(|name| (OsString::from(name), self.bundle.clone().into_os_string()))
            .collect();
        env.push((
            OsString::from(EXTRA_CA_ENV),
            self.ca_cert.clone().into_os_string(),
        ));
        env
    }

    /// Names the sandbox must let through for [`EgressHub::child_env`].
    pub fn child_env_names() -> Vec<String> {
        BUNDLE_ENV
            .iter()
            .chain(std::iter::once(&EXTRA_CA_ENV))
            .map(|name| (*name).to_owned())
            .collect()
    }
}

/// A resolved credential bound to destinations, as the proxy needs it.
pub struct BoundValue<'a> {
    pub name: &'a str,
    pub value: &'a [u8],
    pub binding: &'a CredentialBinding,
    /// What the command holds instead of the value.
    pub placeholder: &'a str,
}

/// The proxy permit for a decision: exactly its connect grants, the
/// credentials bound to destinations, which the proxy puts into requests to
/// those destinations only, and the ports of this machine it may reach
/// (`loopback_ports`, never one of `praxis_ports`).
pub fn permit(
    decision: &Decision,
    bound: &[BoundValue<'_>],
    loopback_ports: &BTreeSet<u16>,
    praxis_ports: &[u16],
) -> Result<Permit, String> {
    let destinations = decision
        .grants
        .connect
        .iter()
        .map(|d| Destination::new(d.host.clone(), d.port))
        .collect();
    let credentials = bound
        .iter()
        .map(bound_credential)
        .collect::<Result<Vec<_>, String>>()?;
    let open = loopback_ports
        .iter()
        .copied()
        .filter(|port| !praxis_ports.contains(port));
    Permit::new(destinations, credentials)
        .map(|p| p.with_loopback_ports(open))
        .map_err(|e| format!("egress permit: {e}"))
}

fn bound_credential(bound: &BoundValue<'_>) -> Result<BoundCredential, String> {
    let why = |e: String| format!("credential `{}`: {e}", bound.name);
    let (header_name, template) = config::binding_header(bound.binding).map_err(why)?;
    let secret = Zeroizing::new(
        String::from_utf8(bound.value.to_vec())
            .map_err(|_| why(String::from("a bound value must be text")))?,
    );
    let header_value = Zeroizing::new(template.replacen("{}", &secret, 1));
    let destinations = config::binding_destinations(bound.binding)
        .map_err(why)?
        .into_iter()
        .map(|d| Destination::new(d.host, d.port))
        .collect();
    Ok(BoundCredential {
        name: bound.name.to_owned(),
        destinations,
        header_name: header_name.to_owned(),
        header_value,
        secret,
        placeholder: bound.placeholder.to_owned(),
    })
}
