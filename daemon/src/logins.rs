//! The web console's logins. `praxis console` asks praxisd, as an admitted
//! operator, for a login URL: it carries a one-time token bound to that
//! operator. Opening it spends the token and opens a session, named by a
//! cookie, with its own CSRF token; every change made in the console is
//! made as the operator the session belongs to. Nothing here is written to
//! disk: a restart of praxisd ends every session.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::conn::Peer;
use crate::ids;

/// How long a login URL may wait to be opened.
const TOKEN_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// How long a session lasts without a request.
const IDLE_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// Why no login could be made.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("the console is not listening")]
    NotListening,
    #[error("no random bytes for a token: {0}")]
    Random(#[from] std::io::Error),
}

/// A logged-in operator's session.
#[derive(Clone, Debug)]
pub struct Session {
    /// The operator who asked for the login, as admitted then.
    pub operator: Peer,
    /// The token every state change from this session must carry.
    pub csrf: String,
}

struct Open {
    session: Session,
    /// What the last change came to, shown once on the next page.
    flash: Option<String>,
    seen: Instant,
}

#[derive(Default)]
struct Book {
    tokens: HashMap<String, (Peer, Instant)>,
    sessions: HashMap<String, Open>,
}

/// The console's address and its logins.
pub struct Logins {
    /// Where the console listens; `None` until praxisd has bound it.
    address: Mutex<Option<SocketAddr>>,
    book: Mutex<Book>,
}

impl Logins {
    pub fn new() -> Logins {
        Logins {
            address: Mutex::new(None),
            book: Mutex::new(Book::default()),
        }
    }

    /// Sets the address the console listens on, once bound.
    pub fn listening_on(&self, address: SocketAddr) {
        *lock(&self.address) = Some(address);
    }

    /// The console's origin, `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> Option<String> {
        lock(&self.address).map(|a| format!("http://{a}"))
    }

    /// A login URL for `operator`, its token good for one use.
    pub fn mint(&self, operator: Peer) -> Result<String, LoginError> {
        let origin = self.origin().ok_or(LoginError::NotListening)?;
        let token = ids::secret()?;
        let mut book = lock(&self.book);
        book.tokens
            .retain(|_, (_, made)| made.elapsed() < TOKEN_LIFETIME);
        book.tokens
            .insert(token.clone(), (operator, Instant::now()));
        Ok(format!("{origin}/login?token={token}"))
    }

    /// Spends `token`: the new session's id, or `None` for a token that
    /// was never made, is spent, or has expired.
    pub fn redeem(&self, token: &str) -> Result<Option<String>, LoginError> {
        let mut book = lock(&self.book);
        let Some((operator, made)) = book.tokens.remove(token) else {
            return Ok(None);
        };
        if made.elapsed() >= TOKEN_LIFETIME {
            return Ok(None);
        }
        let id = ids::secret()?;
        let csrf = ids::secret()?;
        book.sessions
            .retain(|_, open| open.seen.elapsed() < IDLE_LIFETIME);
        book.sessions.insert(
            id.clone(),
            Open {
                session: Session { operator, csrf },
                flash: None,
                seen: Instant::now(),
            },
        );
        Ok(Some(id))
    }

    /// The live session named `id`, its idle time reset.
    pub fn session(&self, id: &str) -> Option<Session> {
        let mut book = lock(&self.book);
        let open = book.sessions.get_mut(id)?;
        if open.seen.elapsed() >= IDLE_LIFETIME {
            book.sessions.remove(id);
            return None;
        }
        open.seen = Instant::now();
        Some(open.session.clone())
    }

    /// Keeps `message` to show once on the session's next page.
    pub fn flash(&self, id: &str, message: String) {
        if let Some(open) = lock(&self.book).sessions.get_mut(id) {
            open.flash = Some(message);
        }
    }

    /// The message kept for the session's next page, once.
    pub fn take_flash(&self, id: &str) -> Option<String> {
        lock(&self.book).sessions.get_mut(id)?.flash.take()
    }

    /// Ends the session `id`.
    pub fn end(&self, id: &str) {
        lock(&self.book).sessions.remove(id);
    }
}

impl Default for Logins {
    fn default() -> Logins {
        Logins::new()
    }
}

/// The guarded value even if a thread panicked holding it: the book holds
/// no invariant a half-done change could break.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operator() -> Peer {
        Peer {
            uid: 1000,
            gid: 1000,
            pid: Some(42),
            inside: None,
        }
    }

    #[test]
    fn a_login_token_opens_one_session_once() {
        let logins = Logins::new();
        assert!(matches!(
            logins.mint(operator()),
            Err(LoginError::NotListening)
        ));
        logins.listening_on("127.0.0.1:4000".parse().unwrap());
        let url = logins.mint(operator()).unwrap();
        let token = url
            .strip_prefix("http://127.0.0.1:4000/login?token=")
            .unwrap();
        assert_eq!(token.len(), 64);
        let id = logins.redeem(token).unwrap().expect("a session");
        assert_eq!(logins.redeem(token).unwrap(), None, "spent");
        assert_eq!(logins.redeem("feed").unwrap(), None);
        let session = logins.session(&id).unwrap();
        assert_eq!(session.operator.uid, 1000);
        assert_eq!(session.csrf.len(), 64);
        assert_ne!(session.csrf, id);
        logins.flash(&id, String::from("approved"));
        assert_eq!(logins.take_flash(&id).as_deref(), Some("approved"));
        assert_eq!(logins.take_flash(&id), None);
        logins.end(&id);
        assert!(logins.session(&id).is_none());
    }
}
