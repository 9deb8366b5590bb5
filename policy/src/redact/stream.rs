//! Streaming redaction: chunks in, redacted bytes out, with a held-back tail
//! so a secret split between two chunks is still caught.

use super::{Hit, Redactor, merge};

/// How far before the window edge the cut may move to land on a line or word
/// boundary, where a rule's left context cannot be split.
const BOUNDARY_SEARCH: usize = 1024;

/// Redacts a byte stream. Holds at most a few windows of input: the window
/// (see [`Redactor::stream_window`]) plus the match that straddles its edge,
/// and never more than four windows.
#[derive(Debug)]
pub struct StreamRedactor<'r> {
    redactor: &'r Redactor,
    window: usize,
    pending: Vec<u8>,
}

impl<'r> StreamRedactor<'r> {
    pub(super) fn new(redactor: &'r Redactor) -> Self {
        Self {
            redactor,
            window: redactor.stream_window(),
            pending: Vec::new(),
        }
    }

    /// Takes the next chunk and returns the redacted bytes that are now safe
    /// to emit (possibly none).
    #[must_use]
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        if self.pending.len() <= self.window {
            return Vec::new();
        }
        let hits = merge(self.redactor.hits(&self.pending));
        let mut cut = self.cut_point(&hits);
        if cut == 0 && self.pending.len() > 4 * self.window {
            // A match longer than the window holds everything back; rather
            // than grow without bound, cut at the window edge: `emit` masks a
            // secret that straddles it whole, so none of it leaks.
            cut = self.pending.len() - self.window;
        }
        self.emit(cut, &hits)
    }

    /// Bytes received but not yet emitted.
    #[must_use]
    pub fn held(&self) -> usize {
        self.pending.len()
    }

    /// Redacts and returns everything still held.
    #[must_use]
    pub fn finish(mut self) -> Vec<u8> {
        let hits = merge(self.redactor.hits(&self.pending));
        let len = self.pending.len();
        self.emit(len, &hits)
    }

    /// The furthest point that keeps `window` bytes back, preferring a line or
    /// word boundary, a UTF-8 character boundary, and never inside a match.
    fn cut_point(&self, hits: &[Hit]) -> usize {
        let text = &self.pending;
        let edge = text.len() - self.window;
        let floor = edge.saturating_sub(BOUNDARY_SEARCH);
        let region = &text[floor..edge];
        let mut cut = match region.iter().rposition(|&b| b == b'\n') {
            Some(p) => floor + p + 1,
            None => region
                .iter()
                .rposition(u8::is_ascii_whitespace)
                .map_or(edge, |p| floor + p + 1),
        };
        let lowest = cut.saturating_sub(3);
        while cut > lowest && text[cut] & 0xC0 == 0x80 {
            cut -= 1;
        }
        // Merged hits are sorted by secret start; spans may overlap, so walk
        // back until no span contains the cut.
        loop {
            let inside = hits
                .iter()
                .filter(|h| h.span.start < cut && cut < h.span.end)
                .map(|h| h.span.start)
                .min();
            match inside {
                Some(start) => cut = start,
                None => return cut,
            }
        }
    }

    /// Redacts `pending[..cut]` (extended through any secret that starts
    /// before `cut`) with the hits inside it, and drops it.
    fn emit(&mut self, cut: usize, hits: &[Hit]) -> Vec<u8> {
        let inside: Vec<Hit> = hits
            .iter()
            .filter(|h| h.secret.start < cut)
            .cloned()
            .collect();
        let end = inside
            .iter()
            .map(|h| h.secret.end)
            .max()
            .unwrap_or(0)
            .max(cut);
        let mut out = Vec::with_capacity(end);
        self.redactor.apply(&self.pending[..end], &inside, &mut out);
        self.pending.drain(..end);
        out
    }
}
