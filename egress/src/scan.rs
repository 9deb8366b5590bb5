//! Bodies watched for a bound credential as they stream: a response from a
//! bound destination has the credential's value masked before the child
//! sees it, and a request to one is cut when it carries a placeholder.
//!
//! Nothing is buffered beyond one read: each read is scanned with the
//! unsent tail of the one before (the longest text watched for, less one
//! byte), so a value split between two reads is still found, and the
//! peer never gets a whole value before the scan has seen it.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame};
use zeroize::Zeroizing;

/// Any body error, for bodies of different origins in one type.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a watched body was cut.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScanError {
    #[error("{0}")]
    Refused(String),
}

/// What to do where a watched text shows up.
pub(crate) enum OnMatch {
    /// Put this text in its place (the placeholder, for a credential).
    Mask(Bytes),
    /// End the body with this reason.
    Refuse(String),
}

/// One text a body is watched for.
pub(crate) struct Watch {
    pub(crate) text: Zeroizing<Vec<u8>>,
    pub(crate) on_match: OnMatch,
}

/// Where a scan reports: masks counted over a connection, and the first
/// refusal of a request.
#[derive(Clone)]
pub(crate) struct Tally {
    pub(crate) masked: Arc<AtomicU64>,
    pub(crate) refused: Arc<OnceLock<String>>,
}

impl Tally {
    /// Records a refusal (the first one stands) and hands its reason back.
    pub(crate) fn refuse(&self, reason: String) -> String {
        let _ = self.refused.set(reason);
        self.refused.get().cloned().unwrap_or_default()
    }
}

/// `haystack` with every `needle` replaced by `with`, and how many there
/// were; `None` when there is none.
pub(crate) fn replace_all(haystack: &[u8], needle: &[u8], with: &[u8]) -> Option<(Vec<u8>, u64)> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut count = 0;
    let mut rest = haystack;
    while let Some(at) = find(rest, needle) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(with);
        rest = &rest[at + needle.len()..];
        count += 1;
    }
    out.extend_from_slice(rest);
    (count > 0).then_some((out, count))
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A body passed through a scan for the texts of `watches`.
pub(crate) struct Scanned<B> {
    inner: B,
    watches: Arc<Vec<Watch>>,
    /// Read but not yet passed on: at most the longest text less one byte
    /// between reads.
    pending: Zeroizing<Vec<u8>>,
    keep: usize,
    tally: Tally,
    ended: bool,
}

impl<B> Scanned<B> {
    pub(crate) fn new(inner: B, watches: Arc<Vec<Watch>>, tally: Tally) -> Scanned<B> {
        let keep = watches
            .iter()
            .map(|w| w.text.len())
            .max()
            .unwrap_or(1)
            .saturating_sub(1);
        Scanned {
            inner,
            watches,
            pending: Zeroizing::new(Vec::new()),
            keep,
            tally,
            ended: false,
        }
    }

    /// Scans what is pending and takes what may be passed on: all of it at
    /// the end, else all but the tail that may begin a watched text.
    fn take(&mut self, at_end: bool) -> Result<Bytes, ScanError> {
        for watch in self.watches.iter() {
            match &watch.on_match {
                OnMatch::Mask(with) => {
                    if let Some((masked, count)) = replace_all(&self.pending, &watch.text, with) {
                        *self.pending = masked;
                        self.tally.masked.fetch_add(count, Ordering::Relaxed);
                    }
                }
                OnMatch::Refuse(reason) => {
                    if find(&self.pending, &watch.text).is_some() {
                        self.ended = true;
                        self.pending.clear();
                        return Err(ScanError::Refused(self.tally.refuse(reason.clone())));
                    }
                }
            }
        }
        let keep = if at_end {
            0
        } else {
            self.keep.min(self.pending.len())
        };
        let ready_len = self.pending.len() - keep;
        let tail = self.pending.split_off(ready_len);
        let ready = std::mem::replace(&mut *self.pending, tail);
        Ok(Bytes::from(ready))
    }
}

impl<B> Body for Scanned<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    /// Trailers of a watched body are dropped: they are not scanned.
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            let at_end = match std::task::ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        self.pending.extend_from_slice(&data);
                        false
                    }
                    Err(_trailers) => true,
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
                None => true,
            };
            let ready = self.take(at_end).map_err(BoxError::from);
            if at_end {
                self.ended = true;
            }
            match ready {
                Err(e) => return Poll::Ready(Some(Err(e))),
                Ok(data) if data.is_empty() => {}
                Ok(data) => return Poll::Ready(Some(Ok(Frame::data(data)))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use http_body_util::BodyExt;

    use super::*;

    /// A body that arrives in the given reads.
    struct Reads(VecDeque<Bytes>);

    impl Body for Reads {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    fn tally() -> Tally {
        Tally {
            masked: Arc::new(AtomicU64::new(0)),
            refused: Arc::new(OnceLock::new()),
        }
    }

    fn watch(text: &str, on_match: OnMatch) -> Watch {
        Watch {
            text: Zeroizing::new(text.as_bytes().to_vec()),
            on_match,
        }
    }

    /// The reads as they come out, each non-empty piece apart.
    async fn scan(reads: &[&str], watch: Watch, tally: &Tally) -> Result<Vec<String>, String> {
        let inner = Reads(reads.iter().map(|r| Bytes::from(r.to_string())).collect());
        let mut body = Scanned::new(inner, Arc::new(vec![watch]), tally.clone());
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.map_err(|e| e.to_string())?.into_data().unwrap();
            out.push(String::from_utf8(data.to_vec()).unwrap());
        }
        Ok(out)
    }

    #[tokio::test]
    async fn a_value_split_between_reads_is_masked_and_never_passes_whole() {
        let t = tally();
        let mask = || watch("s3cr3t-value", OnMatch::Mask(Bytes::from_static(b"PH")));
        let out = scan(
            &["echo: s3c", "r3t-va", "lue and s3cr3t-value", "!"],
            mask(),
            &t,
        )
        .await
        .unwrap();
        assert_eq!(out.concat(), "echo: PH and PH!");
        assert!(out.iter().all(|piece| !piece.contains("s3cr3t")), "{out:?}");
        assert_eq!(t.masked.load(Ordering::Relaxed), 2);
        let untouched = scan(&["no value ", "here"], mask(), &tally())
            .await
            .unwrap();
        assert_eq!(untouched.concat(), "no value here");
    }

    #[tokio::test]
    async fn a_refused_text_ends_the_body_before_it_passes() {
        let t = tally();
        let refuse = watch("PLACEHOLDER", OnMatch::Refuse("placeholder in body".into()));
        let err = scan(&["a=1&b=PLACE", "HOLDER&c=3"], refuse, &t)
            .await
            .unwrap_err();
        assert!(err.contains("placeholder in body"), "{err}");
        assert_eq!(
            t.refused.get().map(String::as_str),
            Some("placeholder in body")
        );
    }

    #[test]
    fn replace_all_counts() {
        assert_eq!(
            replace_all(b"xaxbxax", b"xa", b"-"),
            Some((b"-xb-x".to_vec(), 2))
        );
        assert_eq!(replace_all(b"abc", b"zz", b"-"), None);
    }
}
