//! The pipeline's stages, one module each. A stage never imports another
//! stage or the pipeline's spine (a test keeps it so): it takes values, the
//! gate types that sit below every stage among them, and returns a typed outcome the
//! pipeline passes on. The stores and the ground modules (`config`,
//! `spawn`, …) are theirs to use; the daemon's whole state is not: a stage
//! takes what it uses.

pub mod approval;
pub mod credentials;
pub mod execute;
pub mod intent;
pub mod kill_switch;
pub mod outcome;
pub mod parse;
pub mod permit;
pub mod policy;
pub mod preconditions;
pub mod recall;
pub mod redact;
pub mod reversibility;
pub mod roles;
pub mod self_approval;
pub mod session;
