//! The operator's credential rows as last read. Every request looks up its
//! grants; the rows change only when an operator adds or revokes a
//! credential, and whoever commits such a change calls
//! [`RowCache::changed`] once the commit returned.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use praxis_proto::CredentialSpec;

/// A row of the table: a spec, or a revocation when `revoked`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub spec: CredentialSpec,
    pub revoked: bool,
}

/// The rows, tagged with the number of changes they were read after.
#[derive(Debug, Default)]
pub struct RowCache {
    changes: AtomicU64,
    rows: Mutex<Option<(u64, Arc<Vec<Row>>)>>,
}

impl RowCache {
    /// The rows, read with `read` unless the last rows read are still
    /// current. The count is taken before reading: rows read while a change
    /// commits are kept under the count before it, so once [`changed`]
    /// has run they are never handed out again.
    ///
    /// [`changed`]: RowCache::changed
    pub fn get<E>(&self, read: impl FnOnce() -> Result<Vec<Row>, E>) -> Result<Arc<Vec<Row>>, E> {
        let changes = self.changes.load(Ordering::SeqCst);
        if let Some((at, rows)) = &*self.lock()
            && *at == changes
        {
            return Ok(Arc::clone(rows));
        }
        let rows = Arc::new(read()?);
        *self.lock() = Some((changes, Arc::clone(&rows)));
        Ok(rows)
    }

    /// A change to the rows committed (or may have): the next lookup reads them.
    pub fn changed(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, Arc<Vec<Row>>)>> {
        self.rows.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use praxis_proto::CredentialSource;

    fn row(name: &str, revoked: bool) -> Row {
        Row {
            spec: CredentialSpec {
                name: name.into(),
                env: "TOKEN".into(),
                source: CredentialSource::Env("TOKEN".into()),
                roles: vec!["agent".into()],
                programs: Vec::new(),
                bound: None,
            },
            revoked,
        }
    }

    fn get(cache: &RowCache, reads: &mut u32, rows: Vec<Row>) -> Vec<Row> {
        let got = cache.get(|| {
            *reads += 1;
            Ok::<_, ()>(rows)
        });
        got.unwrap().to_vec()
    }

    #[test]
    fn rows_are_read_once_until_a_change() {
        let cache = RowCache::default();
        let mut reads = 0;
        assert_eq!(
            get(&cache, &mut reads, vec![row("gh", false)]),
            [row("gh", false)]
        );
        assert_eq!(
            get(&cache, &mut reads, vec![row("other", false)]),
            [row("gh", false)]
        );
        assert_eq!(reads, 1);
        cache.changed();
        assert_eq!(
            get(&cache, &mut reads, vec![row("gh", true)]),
            [row("gh", true)]
        );
        assert_eq!(reads, 2);
    }

    #[test]
    fn rows_read_across_a_change_are_not_kept_for_after_it() {
        let cache = RowCache::default();
        let mut reads = 0;
        // The change commits while these rows are being read.
        let stale = cache.get(|| {
            reads += 1;
            cache.changed();
            Ok::<_, ()>(vec![row("gh", false)])
        });
        assert_eq!(stale.unwrap().to_vec(), [row("gh", false)]);
        assert_eq!(
            get(&cache, &mut reads, vec![row("gh", true)]),
            [row("gh", true)]
        );
        assert_eq!(reads, 2);
    }

    #[test]
    fn a_failed_read_is_not_kept() {
        let cache = RowCache::default();
        assert_eq!(cache.get(|| Err::<Vec<Row>, _>("locked")), Err("locked"));
        let mut reads = 0;
        assert_eq!(
            get(&cache, &mut reads, vec![row("gh", false)]),
            [row("gh", false)]
        );
        assert_eq!(reads, 1);
    }
}
