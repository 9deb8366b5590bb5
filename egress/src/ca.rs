//! The daemon's own certificate authority, used only to terminate TLS to
//! destinations that have a credential bound to them.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::permit::Host;

const CERT_FILE: &str = "ca.pem";
const KEY_FILE: &str = "ca-key.pem";
const COMMON_NAME: &str = "Praxis egress CA";
/// A leaf is remade after this long; it is valid for twice as long.
const LEAF_REFRESH: Duration = Duration::from_secs(30 * 24 * 3600);

/// Why the CA could not be loaded, created, or used.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a PEM {what}")]
    Pem { path: PathBuf, what: &'static str },
    #[error("certificate generation: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> CaError + '_ {
    move |source| CaError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The per-daemon CA: `ca.pem` (public, 0644) and `ca-key.pem` (0600) in
/// its directory, plus a cache of leaf certificates made on demand.
pub struct Ca {
    cert_path: PathBuf,
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
    provider: Arc<CryptoProvider>,
    leaves: Mutex<HashMap<Host, (Instant, Arc<ServerConfig>)>>,
}

/// The CA's subject and constraints. A reloaded CA rebuilds its issuer from
/// these and the stored key: leaves name the same subject and carry the
/// same key identifier (derived from the public key), so they chain to the
/// stored `ca.pem`.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, COMMON_NAME);
    dn.push(DnType::OrganizationName, "Praxis");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

impl Ca {
    /// Loads `ca.pem` and `ca-key.pem` from `dir`, or creates both (and
    /// `dir`, 0700) when neither exists. One present without the other is
    /// an error rather than a silent new CA the children would not trust.
    pub fn load_or_create(dir: &Path) -> Result<Ca, CaError> {
        let cert_path = dir.join(CERT_FILE);
        let key_path = dir.join(KEY_FILE);
        let (cert_pem, key) = match (cert_path.exists(), key_path.exists()) {
            (true, true) => {
                let key_pem = fs::read_to_string(&key_path).map_err(io_error(&key_path))?;
                let key = KeyPair::from_pem(&key_pem).map_err(|_| CaError::Pem {
                    path: key_path.clone(),
                    what: "private key",
                })?;
                let cert_pem = fs::read_to_string(&cert_path).map_err(io_error(&cert_path))?;
                (cert_pem, key)
            }
            (false, false) => Self::create(dir, &cert_path, &key_path)?,
            (true, false) => {
                return Err(io_error(&key_path)(std::io::ErrorKind::NotFound.into()));
            }
            (false, true) => {
                return Err(io_error(&cert_path)(std::io::ErrorKind::NotFound.into()));
            }
        };
        let cert_der =
            CertificateDer::from_pem_slice(cert_pem.as_bytes()).map_err(|_| CaError::Pem {
                path: cert_path.clone(),
                what: "certificate",
            })?;
        Ok(Ca {
            cert_path,
            cert_pem,
            cert_der,
            issuer: Issuer::new(ca_params(), key),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    fn create(dir: &Path, cert_path: &Path, key_path: &Path) -> Result<(String, KeyPair), CaError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_error(dir))?;
        let key = KeyPair::generate()?;
        let mut params = ca_params();
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(1);
        params.not_after = now + time::Duration::days(3650);
        let cert = params.self_signed(&key)?;
        write_new(key_path, key.serialize_pem().as_bytes(), 0o600)?;
        write_new(cert_path, cert.pem().as_bytes(), 0o644)?;
        Ok((cert.pem(), key))
    }

    /// Where `ca.pem` is: the file to trust for intercepted destinations.
    #[must_use]
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    #[must_use]
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Writes a PEM bundle of the system's trusted roots followed by this
    /// CA, for variables that replace the system bundle rather than add to
    /// it (`SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CARGO_HTTP_CAINFO`,
    /// `GIT_SSL_CAINFO`). `NODE_EXTRA_CA_CERTS` adds, so it takes
    /// [`Ca::cert_path`]. The system roots are those `rustls-native-certs`
    /// finds (it honours the daemon's own `SSL_CERT_FILE`/`SSL_CERT_DIR`).
    pub fn write_bundle(&self, path: &Path) -> Result<(), CaError> {
        let mut bundle = String::new();
        for cert in rustls_native_certs::load_native_certs().certs {
            bundle.push_str(&pem_encode(&cert));
        }
        bundle.push_str(&self.cert_pem);
        let tmp = path.with_extension("tmp");
        let _ = fs::remove_file(&tmp);
        write_new(&tmp, bundle.as_bytes(), 0o644)?;
        fs::rename(&tmp, path).map_err(io_error(path))
    }

    /// A TLS server configuration presenting a leaf for `host`, signed by
    /// this CA, made on first use and cached.
    pub(crate) fn server_config(&self, host: &Host) -> Result<Arc<ServerConfig>, CaError> {
        let mut leaves = self.leaves.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((made, config)) = leaves.get(host)
            && made.elapsed() < LEAF_REFRESH
        {
            return Ok(config.clone());
        }
        let config = Arc::new(self.make_leaf(host)?);
        leaves.insert(host.clone(), (Instant::now(), config.clone()));
        Ok(config)
    }

    fn make_leaf(&self, host: &Host) -> Result<ServerConfig, CaError> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        params.subject_alt_names = vec![match host {
            Host::Name(name) => {
                dn.push(DnType::CommonName, name.as_str());
                SanType::DnsName(name.clone().try_into()?)
            }
            Host::Ip(ip) => {
                dn.push(DnType::CommonName, ip.to_string());
                SanType::IpAddress(*ip)
            }
        }];
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(1);
        params.not_after = now + time::Duration::days(60);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), self.cert_der.clone()], key_der)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CaError> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(io_error(path))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io_error(path))
}

fn pem_encode(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_once_with_private_key_0600_and_reloads_the_same_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("egress");
        let first = Ca::load_or_create(&dir).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
        assert_eq!(mode(&dir.join(CERT_FILE)), 0o644);
        assert_eq!(mode(&dir), 0o700);
        let again = Ca::load_or_create(&dir).unwrap();
        assert_eq!(first.cert_pem(), again.cert_pem());
        assert_eq!(again.cert_path(), dir.join(CERT_FILE));
    }

    #[test]
    fn half_a_ca_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        Ca::load_or_create(tmp.path()).unwrap();
        fs::remove_file(tmp.path().join(KEY_FILE)).unwrap();
        assert!(Ca::load_or_create(tmp.path()).is_err());
    }

    #[test]
    fn bundle_holds_system_roots_then_this_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let ca = Ca::load_or_create(tmp.path()).unwrap();
        let path = tmp.path().join("bundle.pem");
        ca.write_bundle(&path).unwrap();
        let bundle = fs::read_to_string(&path).unwrap();
        assert!(bundle.ends_with(ca.cert_pem()));
        let certs = CertificateDer::pem_slice_iter(bundle.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let system = rustls_native_certs::load_native_certs().certs.len();
        assert_eq!(certs.len(), system + 1);
    }
}
