//! The judge API's bearer token for its loopback TCP listener: 32 random
//! bytes, hex, in `api-token` in the state dir, readable by praxisd's user
//! only (0600). Made on first use; a file others can read is refused, not
//! trusted. Requests are compared to it in constant time.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The token file's name in the state dir.
pub const TOKEN_FILE: &str = "api-token";

/// Why the token could not be had; the TCP API is then not served.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path} is readable by others (mode {mode:o}) or not owned by praxisd's user; refusing it"
    )]
    Exposed { path: String, mode: u32 },
    #[error("{path} does not hold a token")]
    Malformed { path: String },
}

/// The bearer token.
pub struct ApiToken {
    secret: Vec<u8>,
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(…)")
    }
}

impl ApiToken {
    /// Reads the token in `state_dir`, making it first if there is none.
    pub fn load_or_create(state_dir: &Path) -> Result<ApiToken, TokenError> {
        let path = state_dir.join(TOKEN_FILE);
        let shown = path.display().to_string();
        let io = |source| TokenError::Io {
            path: shown.clone(),
            source,
        };
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut file) => {
                let mut random = [0u8; 32];
                File::open("/dev/urandom")
                    .and_then(|mut f| f.read_exact(&mut random))
                    .map_err(io)?;
                let text = hex::encode(random);
                file.write_all(text.as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(io)?;
                return Ok(ApiToken {
                    secret: text.into_bytes(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        let mut file = File::open(&path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 || meta.uid() != nix::unistd::geteuid().as_raw() {
            return Err(TokenError::Exposed { path: shown, mode });
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io)?;
        let secret = text.trim();
        if secret.len() < 32 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(TokenError::Malformed { path: shown });
        }
        Ok(ApiToken {
            secret: secret.as_bytes().to_vec(),
        })
    }

    /// Whether `request` carries `Authorization: Bearer TOKEN`.
    pub fn admits<B>(&self, request: &hyper::Request<B>) -> bool {
        request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .is_some_and(|given| constant_time_eq(given, &self.secret))
    }
}

/// Equality whose time depends on the lengths only, not on where the bytes
/// differ (the token's length is no secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_auth(value: &str) -> hyper::Request<()> {
        hyper::Request::builder()
            .header(hyper::header::AUTHORIZATION, value)
            .body(())
            .unwrap()
    }

    #[test]
    fn a_token_is_made_once_private_and_admits_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let token = ApiToken::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(TOKEN_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.len(), 64);
        let again = ApiToken::load_or_create(dir.path()).unwrap();
        assert_eq!(again.secret, token.secret);

        assert!(token.admits(&with_auth(&format!("Bearer {text}"))));
        assert!(!token.admits(&with_auth(&format!("Bearer {}", &text[..63]))));
        let mut wrong = text.clone().into_bytes();
        wrong[10] = if wrong[10] == b'a' { b'b' } else { b'a' };
        let wrong = String::from_utf8(wrong).unwrap();
        assert!(!token.admits(&with_auth(&format!("Bearer {wrong}"))));
        assert!(!token.admits(&with_auth(&format!("Basic {text}"))));
        assert!(!token.admits(&hyper::Request::new(())));
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        ApiToken::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(TOKEN_FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            ApiToken::load_or_create(dir.path()),
            Err(TokenError::Exposed { .. })
        ));
    }

    #[test]
    fn comparison_needs_equal_length_and_bytes() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
