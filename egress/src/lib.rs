mod ca;
mod event;
mod io;
mod permit;

pub use ca::{Ca, CaError};
pub use event::{ConnectionEvent, RequestKind, Verdict};
pub use permit::{BoundCredential, Destination, Permit, PermitError};
