//! The output stage: what a command prints reaches the agent redacted (the
//! policy's secret rules and every brokered value with its encoded forms,
//! streaming, so a secret split across reads is still masked) and bounded (a
//! cap per stream, then a marker saying how much was dropped). The digest
//! covers every byte produced, so the audit record pins the output without
//! keeping it. This is the one place output is redacted.
//!
//! A command holding brokered values could print one half of a value on
//! stdout and the other on stderr, where neither stream's redactor sees it
//! whole. For such a command each stream's last raw bytes (as long as the
//! longest masked form) are held back here, before its redactor, until more
//! of that stream pushes them out or both streams have ended; where one
//! held tail holds the head of a value and the other the rest, both pieces
//! are masked. A piece pushed out by that much other output on its own
//! stream first, a value cut into more than two pieces, or pieces encoded
//! are out of reach; so is every transformation (see the threat model).

use praxis_policy::redact::{Redactor, StreamRedactor};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// One output stream on its way to the client.
#[derive(Debug)]
pub struct Bounded<'r> {
    cap: u64,
    produced: u64,
    delivered: u64,
    /// Bytes not delivered: redacted bytes cut at the cap, then raw bytes
    /// that arrived after it.
    dropped: u64,
    /// `None` once the stream was flushed.
    redact: Option<StreamRedactor<'r>>,
}

impl<'r> Bounded<'r> {
    pub fn new(cap: u64, redactor: &'r Redactor) -> Bounded<'r> {
        Bounded {
            cap,
            produced: 0,
            delivered: 0,
            dropped: 0,
            redact: Some(redactor.stream()),
        }
    }

    fn full(&self) -> bool {
        self.delivered >= self.cap
    }

    /// Takes raw bytes; returns the redacted bytes now safe to deliver that
    /// still fit under the cap.
    /// (What the command produced is counted by [`Output::chunk`].)
    pub fn accept(&mut self, chunk: &[u8]) -> Vec<u8> {
        // Past the cap nothing more is delivered, so nothing needs redacting.
        let full = self.full();
        match &mut self.redact {
            Some(redact) if !full => {
                let clean = redact.push(chunk);
                self.bound(clean)
            }
            _ => {
                self.dropped += chunk.len() as u64;
                Vec::new()
            }
        }
    }

    /// Flushes what the redactor still holds back (at end of stream).
    pub fn finish(&mut self) -> Vec<u8> {
        match self.redact.take() {
            Some(redact) => {
                let clean = redact.finish();
                self.bound(clean)
            }
            None => Vec::new(),
        }
    }

    fn bound(&mut self, mut clean: Vec<u8>) -> Vec<u8> {
        let room = self.cap.saturating_sub(self.delivered);
        if clean.len() as u64 > room {
            self.dropped += clean.len() as u64 - room;
            clean.truncate(room as usize);
        }
        self.delivered += clean.len() as u64;
        clean
    }

    /// Bytes the command wrote to this stream.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Whether bytes past the cap have arrived: nothing more of this
    /// stream will reach the client, so it need not be read.
    pub fn past_cap(&self) -> bool {
        self.dropped > 0
    }

    /// The marker closing a truncated stream, if it was.
    pub fn marker(&self, stream: &str) -> Option<String> {
        (self.dropped > 0).then(|| {
            format!(
                "\n[praxis: {stream} truncated at {} bytes; {} bytes dropped]\n",
                self.cap, self.dropped
            )
        })
    }
}

/// Both streams of one command, plus the digest of everything produced.
#[derive(Debug)]
pub struct Output<'r> {
    pub stdout: Bounded<'r>,
    pub stderr: Bounded<'r>,
    digest: Sha256,
    /// For a command with brokered values: the guard against a value split
    /// between the streams.
    across: Option<Across>,
}

/// Pieces of a value shorter than this are not looked for (they would
/// match ordinary text); the rest of the value is masked without them.
const MIN_PIECE: usize = 4;

/// Raw bytes held back at the end of each stream (index 0 stdout, 1
/// stderr) before its redactor sees them, to mask a brokered value split
/// between the two. The two pipes are read in no fixed order relative to
/// each other, so the pieces are looked for anywhere in the held tails.
#[derive(Debug)]
struct Across {
    /// The brokered values, by name.
    values: Vec<(String, Zeroizing<Vec<u8>>)>,
    /// How many bytes each stream keeps back.
    window: usize,
    held: [Vec<u8>; 2],
    finished: [bool; 2],
}

impl Across {
    /// Adds `raw` to stream `at`, masks what is split between the streams,
    /// and returns what `at` may pass on to its redactor now.
    fn push(&mut self, at: usize, raw: &[u8]) -> Vec<u8> {
        self.held[at].extend_from_slice(raw);
        self.mask_split();
        let over = self.held[at].len().saturating_sub(self.window);
        self.held[at].drain(..over).collect()
    }

    /// Stream `at` ended: both held tails go once both streams have.
    fn finish(&mut self, at: usize) -> Option<[Vec<u8>; 2]> {
        self.finished[at] = true;
        (self.finished == [true, true]).then(|| self.held.each_mut().map(std::mem::take))
    }

    /// For every value and every place it could be cut in two: where one
    /// held tail holds the head and the other the rest (a piece shorter
    /// than [`MIN_PIECE`] counts as present), both are masked. A whole
    /// value within one stream is its redactor's, and not looked into.
    fn mask_split(&mut self) {
        for (name, value) in &self.values {
            let label = format!("[REDACTED:{name}]");
            // The held tails with whole values blanked, positions kept.
            let mut views = self.held.clone();
            for view in &mut views {
                while let Some(i) = find(view, value) {
                    view[i..i + value.len()].fill(0);
                }
            }
            for cut in 1..value.len() {
                let (head, rest) = value.split_at(cut);
                for (head_in, rest_in) in [(0, 1), (1, 0)] {
                    let found = |piece: &[u8], at: usize| {
                        if piece.len() < MIN_PIECE {
                            Some(None)
                        } else {
                            find(&views[at], piece).map(|i| Some(i..i + piece.len()))
                        }
                    };
                    let (Some(head_at), Some(rest_at)) =
                        (found(head, head_in), found(rest, rest_in))
                    else {
                        continue;
                    };
                    // The same splice in the view keeps the two aligned, and
                    // the next cuts do not find these pieces again.
                    for (at, range) in [(head_in, head_at), (rest_in, rest_at)] {
                        if let Some(range) = range {
                            views[at].splice(range.clone(), label.bytes());
                            self.held[at].splice(range, label.bytes());
                        }
                    }
                }
            }
        }
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl<'r> Output<'r> {
    /// Streams capped at `cap_per_stream`, masked by `redactor` (the policy's
    /// rules plus this command's brokered values); the brokered `values`
    /// (name, value) are also guarded against a split between the streams.
    pub fn new(
        cap_per_stream: u64,
        redactor: &'r Redactor,
        values: Vec<(String, Zeroizing<Vec<u8>>)>,
    ) -> Output<'r> {
        Output {
            stdout: Bounded::new(cap_per_stream, redactor),
            stderr: Bounded::new(cap_per_stream, redactor),
            digest: Sha256::new(),
            across: (!values.is_empty()).then(|| Across {
                values,
                window: redactor.stream_window(),
                held: [Vec::new(), Vec::new()],
                finished: [false, false],
            }),
        }
    }

    /// Records a chunk of stdout (or stderr) and returns what to deliver on
    /// that stream.
    pub fn chunk(&mut self, is_stderr: bool, chunk: &[u8]) -> Vec<u8> {
        // Both streams in arrival order, each chunk tagged with its stream.
        self.digest.update([u8::from(is_stderr)]);
        self.digest.update(chunk);
        self.stream(is_stderr).produced += chunk.len() as u64;
        match &mut self.across {
            Some(across) => {
                let passed = across.push(usize::from(is_stderr), chunk);
                self.stream(is_stderr).accept(&passed)
            }
            None => self.stream(is_stderr).accept(chunk),
        }
    }

    /// The end of stdout (or stderr): what is left to deliver, `[stdout,
    /// stderr]` (with the split guard, both streams' tails go once both
    /// have ended).
    pub fn finish(&mut self, is_stderr: bool) -> [Vec<u8>; 2] {
        let Some(across) = &mut self.across else {
            let clean = self.stream(is_stderr).finish();
            return if is_stderr {
                [Vec::new(), clean]
            } else {
                [clean, Vec::new()]
            };
        };
        let Some([stdout, stderr]) = across.finish(usize::from(is_stderr)) else {
            return [Vec::new(), Vec::new()];
        };
        [(&mut self.stdout, stdout), (&mut self.stderr, stderr)].map(|(stream, tail)| {
            let mut clean = stream.accept(&tail);
            clean.extend(stream.finish());
            clean
        })
    }

    fn stream(&mut self, is_stderr: bool) -> &mut Bounded<'r> {
        if is_stderr {
            &mut self.stderr
        } else {
            &mut self.stdout
        }
    }

    pub fn truncated(&self) -> bool {
        self.stdout.dropped() > 0 || self.stderr.dropped() > 0
    }

    /// Hex SHA-256 over the output as produced.
    pub fn digest(&self) -> String {
        hex::encode(self.digest.clone().finalize())
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    fn base() -> Redactor {
        crate::state::base_redactor().unwrap()
    }

    fn values(secret: &[u8]) -> Vec<(String, Zeroizing<Vec<u8>>)> {
        vec![(String::from("gh"), Zeroizing::new(secret.to_vec()))]
    }

    /// Everything delivered for `chunks` on stdout, both streams ended.
    fn deliver(out: &mut Output<'_>, chunks: &[&[u8]]) -> Vec<u8> {
        let chunks: Vec<(bool, &[u8])> = chunks.iter().map(|c| (false, *c)).collect();
        let [stdout, _] = deliver_both(out, &chunks);
        stdout
    }

    /// What each stream delivered for `chunks` (on stderr where tagged
    /// true), then the end of stdout and of stderr.
    fn deliver_both(out: &mut Output<'_>, chunks: &[(bool, &[u8])]) -> [Vec<u8>; 2] {
        let mut got = [Vec::new(), Vec::new()];
        for (is_stderr, c) in chunks {
            got[usize::from(*is_stderr)].extend(out.chunk(*is_stderr, c));
        }
        for is_stderr in [false, true] {
            let [o, e] = out.finish(is_stderr);
            got[0].extend(o);
            got[1].extend(e);
        }
        got
    }

    #[test]
    fn caps_each_stream_and_counts_the_rest() {
        let r = base();
        let mut out = Output::new(5, &r, Vec::new());
        let [stdout, stderr] = deliver_both(
            &mut out,
            &[
                (false, b"abc"),
                (false, b"defg"),
                (false, b"hij"),
                (true, b"12345"),
            ],
        );
        assert_eq!(stdout, b"abcde");
        assert_eq!(stderr, b"12345");
        assert_eq!(out.stdout.produced(), 10);
        assert_eq!(out.stdout.dropped(), 5);
        assert!(out.truncated());
        assert!(
            out.stdout
                .marker("stdout")
                .unwrap()
                .contains("5 bytes dropped")
        );
        assert!(out.stderr.marker("stderr").is_none());
    }

    #[test]
    fn digest_depends_on_stream_and_content() {
        let r = base();
        let mut a = Output::new(100, &r, Vec::new());
        let _ = a.chunk(false, b"x");
        let mut b = Output::new(100, &r, Vec::new());
        let _ = b.chunk(true, b"x");
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 64);
    }

    #[test]
    fn brokered_values_are_masked_plain_encoded_and_split() {
        let secret: &[u8] = b"s3cr3t-value-0123456789abcdef";
        let r = base().with_known_values(&[("gh", secret)]).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
        let hex = hex::encode(secret);
        let (left, right) = secret.split_at(11);
        for chunks in [
            vec![b"got ".as_slice(), secret, b"\n"],
            vec![b"x ", b64.as_bytes(), b"\n"],
            vec![hex.as_bytes()],
            vec![b"a", left, right, b"z"],
        ] {
            let mut out = Output::new(1 << 20, &r, values(secret));
            let got = deliver(&mut out, &chunks);
            let text = String::from_utf8_lossy(&got);
            assert!(text.contains("[REDACTED:gh]"), "{text}");
            for form in [secret, b64.as_bytes(), hex.as_bytes(), left, right] {
                assert!(!got.windows(form.len()).any(|w| w == form), "{text}");
            }
        }
    }

    #[test]
    fn a_value_split_between_stdout_and_stderr_is_masked_in_both() {
        let secret: &[u8] = b"s3cr3t-value-0123456789abcdef";
        let r = base().with_known_values(&[("gh", secret)]).unwrap();
        let filler = vec![b'.'; 40];
        for at in [
            1,
            5,
            11,
            secret.len() / 2,
            secret.len() - 3,
            secret.len() - 1,
        ] {
            let (left, right) = secret.split_at(at);
            for (first, second) in [(false, true), (true, false)] {
                // `echo ${T:0:at}; echo ${T:at} >&2`, with other output
                // around it, and a slow second half.
                let mut chunks: Vec<(bool, &[u8])> =
                    vec![(first, b"a\n"), (second, &filler), (first, left)];
                chunks.extend(right.chunks(3).map(|c| (second, c)));
                chunks.extend([(first, b"\nb\n".as_slice()), (second, b"\n".as_slice())]);
                let mut out = Output::new(1 << 20, &r, values(secret));
                let [stdout, stderr] = deliver_both(&mut out, &chunks);
                let both = [&stdout[..], &stderr[..]].concat();
                let text = String::from_utf8_lossy(&both);
                for piece in [left, right].into_iter().filter(|p| p.len() >= 4) {
                    assert!(
                        !both.windows(piece.len()).any(|w| w == piece),
                        "{at}: {text}"
                    );
                }
                assert!(text.contains("[REDACTED:gh]"), "{at}: {text}");
                // Everything else still arrives on its own stream.
                let (first_out, second_out) = if first {
                    (&stderr, &stdout)
                } else {
                    (&stdout, &stderr)
                };
                assert!(
                    first_out.starts_with(b"a\n") && first_out.ends_with(b"\nb\n"),
                    "{text}"
                );
                assert!(second_out.starts_with(&filler), "{text}");

                // The pipes are read in no fixed order: the head arrives
                // with what followed it on its stream, the rest later.
                let head_then_more = [b"a\n", left, b"end\n"].concat();
                let mut out = Output::new(1 << 20, &r, values(secret));
                let [stdout, stderr] =
                    deliver_both(&mut out, &[(first, &head_then_more), (second, right)]);
                let both = [&stdout[..], &stderr[..]].concat();
                let text = String::from_utf8_lossy(&both);
                for piece in [left, right].into_iter().filter(|p| p.len() >= MIN_PIECE) {
                    assert!(
                        !both.windows(piece.len()).any(|w| w == piece),
                        "{at}: {text}"
                    );
                }
                assert!(text.contains("end\n"), "{text}");
            }
        }
        // A whole value on one stream is masked once, by its redactor.
        let mut out = Output::new(1 << 20, &r, values(secret));
        let [stdout, stderr] = deliver_both(&mut out, &[(false, &[b"x ", secret, b"\n"].concat())]);
        assert_eq!(String::from_utf8_lossy(&stdout), "x [REDACTED:gh]\n");
        assert!(stderr.is_empty());
        // Ordinary text that shares a few bytes with the value stays.
        let mut out = Output::new(1 << 20, &r, values(secret));
        let [stdout, stderr] =
            deliver_both(&mut out, &[(false, b"s3cr3t plans\n"), (true, b"abcdef\n")]);
        assert_eq!(stdout, b"s3cr3t plans\n");
        assert_eq!(stderr, b"abcdef\n");
    }

    #[test]
    fn policy_secret_rules_apply_too() {
        let r = base();
        let mut out = Output::new(1 << 20, &r, Vec::new());
        let token = b"ghp_Zq8vR2kL9mN4pX7wT1yB6cF3hJ5sD0aE2gK8";
        let got = deliver(&mut out, &[b"echo ", token, b"\n"]);
        assert!(!got.windows(token.len()).any(|w| w == token));
        assert!(String::from_utf8_lossy(&got).contains("[REDACTED:"));
    }
}
