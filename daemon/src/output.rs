//! The output stage: what a command prints reaches the agent bounded (a cap
//! per stream, then a marker saying how much was dropped). The digest covers
//! every byte produced, so the audit record pins the output without keeping it.

use sha2::{Digest, Sha256};

/// One output stream on its way to the client.
#[derive(Debug)]
pub struct Bounded {
    cap: u64,
    produced: u64,
    delivered: u64,
}

impl Bounded {
    pub fn new(cap: u64) -> Bounded {
        Bounded {
            cap,
            produced: 0,
            delivered: 0,
        }
    }

    /// The part of `chunk` that still fits under the cap.
    pub fn accept<'a>(&mut self, chunk: &'a [u8]) -> &'a [u8] {
        self.produced += chunk.len() as u64;
        let room = self.cap.saturating_sub(self.delivered);
        let take = (chunk.len() as u64).min(room) as usize;
        self.delivered += take as u64;
        &chunk[..take]
    }

    /// Bytes the command wrote to this stream.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    pub fn dropped(&self) -> u64 {
        self.produced - self.delivered
    }

    /// The marker closing a truncated stream, if it was.
    pub fn marker(&self, stream: &str) -> Option<String> {
        (self.dropped() > 0).then(|| {
            format!(
                "\n[praxis: {stream} truncated at {} bytes; {} bytes dropped]\n",
                self.cap,
                self.dropped()
            )
        })
    }
}

/// Both streams of one command, plus the digest of everything produced.
#[derive(Debug)]
pub struct Output {
    pub stdout: Bounded,
    pub stderr: Bounded,
    digest: Sha256,
}

impl Output {
    pub fn new(cap_per_stream: u64) -> Output {
        Output {
            stdout: Bounded::new(cap_per_stream),
            stderr: Bounded::new(cap_per_stream),
            digest: Sha256::new(),
        }
    }

    /// Records a chunk of stdout (or stderr) and returns what to deliver.
    pub fn chunk<'a>(&mut self, is_stderr: bool, chunk: &'a [u8]) -> &'a [u8] {
        // Both streams in arrival order, each chunk tagged with its stream.
        self.digest.update([u8::from(is_stderr)]);
        self.digest.update(chunk);
        if is_stderr {
            self.stderr.accept(chunk)
        } else {
            self.stdout.accept(chunk)
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
    use super::*;

    #[test]
    fn caps_each_stream_and_counts_the_rest() {
        let mut out = Output::new(5);
        assert_eq!(out.chunk(false, b"abc"), b"abc");
        assert_eq!(out.chunk(false, b"defg"), b"de");
        assert_eq!(out.chunk(false, b"hij"), b"");
        assert_eq!(out.chunk(true, b"12345"), b"12345");
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
        let mut a = Output::new(100);
        let _ = a.chunk(false, b"x");
        let mut b = Output::new(100);
        let _ = b.chunk(true, b"x");
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 64);
    }
}
