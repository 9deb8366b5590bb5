//! The chain head: below both the writer, which extends it, and the
//! verifier, which checks it.

/// The last committed event: what the next event chains onto.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub seq: i64,
    pub hash: String,
}

impl Head {
    /// The head of an empty chain.
    pub(crate) fn genesis() -> Head {
        Head {
            seq: 0,
            hash: super::record::GENESIS.to_owned(),
        }
    }
}
