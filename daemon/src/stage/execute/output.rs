//! The output stage: what a command prints reaches the agent redacted (the
//! policy's secret rules and every brokered value with its encoded forms,
//! streaming, so a secret split across reads is still masked) and bounded (a
//! cap per stream, then a marker saying how much was dropped). The digest
//! covers every byte produced, so the audit record pins the output without
//! keeping it. This is the one place output is redacted.

use praxis_policy::redact::{Redactor, StreamRedactor};
use sha2::{Digest, Sha256};

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
    pub fn accept(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.produced += chunk.len() as u64;
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
}

impl<'r> Output<'r> {
    /// Streams capped at `cap_per_stream`, masked by `redactor` (the policy's
    /// rules plus this command's brokered values).
    pub fn new(cap_per_stream: u64, redactor: &'r Redactor) -> Output<'r> {
        Output {
            stdout: Bounded::new(cap_per_stream, redactor),
            stderr: Bounded::new(cap_per_stream, redactor),
            digest: Sha256::new(),
        }
    }

    /// Records a chunk of stdout (or stderr) and returns what to deliver.
    pub fn chunk(&mut self, is_stderr: bool, chunk: &[u8]) -> Vec<u8> {
        // Both streams in arrival order, each chunk tagged with its stream.
        self.digest.update([u8::from(is_stderr)]);
        self.digest.update(chunk);
        self.stream(is_stderr).accept(chunk)
    }

    /// The end of stdout (or stderr): what the redactor still held.
    pub fn finish(&mut self, is_stderr: bool) -> Vec<u8> {
        self.stream(is_stderr).finish()
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

    /// Everything delivered for `chunks` on stdout, flushed.
    fn deliver(out: &mut Output<'_>, chunks: &[&[u8]]) -> Vec<u8> {
        let mut got = Vec::new();
        for c in chunks {
            got.extend(out.chunk(false, c));
        }
        got.extend(out.finish(false));
        got
    }

    #[test]
    fn caps_each_stream_and_counts_the_rest() {
        let r = base();
        let mut out = Output::new(5, &r);
        assert_eq!(deliver(&mut out, &[b"abc", b"defg", b"hij"]), b"abcde");
        let mut err = out.chunk(true, b"12345");
        err.extend(out.finish(true));
        assert_eq!(err, b"12345");
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
        let mut a = Output::new(100, &r);
        let _ = a.chunk(false, b"x");
        let mut b = Output::new(100, &r);
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
            let mut out = Output::new(1 << 20, &r);
            let got = deliver(&mut out, &chunks);
            let text = String::from_utf8_lossy(&got);
            assert!(text.contains("[REDACTED:gh]"), "{text}");
            for form in [secret, b64.as_bytes(), hex.as_bytes(), left, right] {
                assert!(!got.windows(form.len()).any(|w| w == form), "{text}");
            }
        }
    }

    #[test]
    fn policy_secret_rules_apply_too() {
        let r = base();
        let mut out = Output::new(1 << 20, &r);
        let token = b"ghp_Zq8vR2kL9mN4pX7wT1yB6cF3hJ5sD0aE2gK8";
        let got = deliver(&mut out, &[b"echo ", token, b"\n"]);
        assert!(!got.windows(token.len()).any(|w| w == token));
        assert!(String::from_utf8_lossy(&got).contains("[REDACTED:"));
    }
}
