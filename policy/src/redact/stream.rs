//! Streaming redaction: chunks in, redacted bytes out, with a held-back tail
//! so a secret split between two chunks is still caught.

use super::redactor::{Redactor, merge};
use super::rule::Hit;

/// How far before the window edge the cut may move to land on a line or word
/// boundary, where a rule's left context cannot be split.
const BOUNDARY_SEARCH: usize = 1024;

/// Redacts a byte stream.
///
/// Input is scanned once at least two windows ([`Redactor::stream_window`])
/// are held; everything but the last window is then emitted, except a match
/// that reaches into that window, which stays with it. So each byte is scanned
/// about twice and the held input stays under two windows plus a chunk (four
/// windows at most, whatever the input).
#[derive(Debug)]
pub struct StreamRedactor<'r> {
    redactor: &'r Redactor,
    window: usize,
    pending: Vec<u8>,
}

impl Redactor {
    /// A streaming redactor over this one's rules and values.
    #[must_use]
    pub fn stream(&self) -> StreamRedactor<'_> {
        StreamRedactor {
            redactor: self,
            window: self.stream_window(),
            pending: Vec::new(),
        }
    }
}

impl StreamRedactor<'_> {
    /// Takes the next chunk and returns the redacted bytes that are now safe
    /// to emit (often none: output leaves in batches of about a window).
    #[must_use]
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        if self.pending.len() < 2 * self.window {
            return Vec::new();
        }
        let hits = merge(self.redactor.hits(&self.pending));
        let edge = snap_to_boundary(&self.pending, self.pending.len() - self.window);
        let mut cut = outside_matches(&hits, edge);
        if cut == 0 && self.pending.len() > 4 * self.window {
            // A match longer than the window holds everything back; rather
            // than grow without bound, cut at the window edge: `emit` masks a
            // secret that straddles it whole, so none of it leaks.
            cut = self.pending.len() - self.window;
        }
        self.emit(cut, &hits)
    }

    /// Emits the complete lines held, for a caller whose producer has gone
    /// quiet (so output is not held back until the next batch). The last
    /// complete line stays held when a match reaches it, since more input
    /// could extend that match (a private key block being printed, say); so
    /// does anything after a newline. A secret written in two pieces with a
    /// flush between them is not recognised: flush on idle, not per chunk.
    #[must_use]
    pub fn flush(&mut self) -> Vec<u8> {
        let text = &self.pending;
        let Some(newline) = text.iter().rposition(|&b| b == b'\n') else {
            return Vec::new();
        };
        let hits = merge(self.redactor.hits(text));
        let last_line = line_start(text, newline);
        let open = hits
            .iter()
            .filter(|h| h.span.end > last_line)
            .map(|h| line_start(text, h.span.start + 1))
            .min();
        let cut = outside_matches(&hits, open.unwrap_or(newline + 1));
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

/// Moves `edge` back to just after a newline (else a space) within
/// [`BOUNDARY_SEARCH`] bytes, and never into a UTF-8 character.
fn snap_to_boundary(text: &[u8], edge: usize) -> usize {
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
    while cut > lowest && text.get(cut).is_some_and(|&b| b & 0xC0 == 0x80) {
        cut -= 1;
    }
    cut
}

/// Start of the line holding the byte before `end` (0 on the first line).
fn line_start(text: &[u8], end: usize) -> usize {
    text[..end.min(text.len())]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1)
}

/// Moves `cut` back until no match span contains it (spans of different
/// hits may overlap, so one step can land inside another).
fn outside_matches(hits: &[Hit], mut cut: usize) -> usize {
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
