//! What the daemon's own capabilities allow, read where a command's
//! set-up is planned or a launcher is made ahead.

use std::fs;
use std::io;
use std::sync::OnceLock;

use crate::SandboxError;

/// Whether `cap` is in our effective set.
pub(crate) fn effective(cap: caps::Capability) -> Result<bool, SandboxError> {
    caps::has_cap(None, caps::CapSet::Effective, cap)
        .map_err(|e| SandboxError::os("reading capabilities", io::Error::other(e.to_string())))
}

/// The highest capability number of the running kernel (read once: it is
/// fixed at boot).
pub(crate) fn last() -> Result<libc::c_ulong, SandboxError> {
    static LAST: OnceLock<Result<libc::c_ulong, String>> = OnceLock::new();
    LAST.get_or_init(|| {
        let text = fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .map_err(|e| format!("reading /proc/sys/kernel/cap_last_cap: {e}"))?;
        text.trim()
            .parse()
            .map_err(|_| format!("parsing cap_last_cap: {}", text.trim()))
    })
    .clone()
    .map_err(|e| SandboxError::os("capabilities", io::Error::other(e)))
}

/// The bounding set a launcher made ahead can drop before it knows its
/// command: up to the last capability, when we hold `CAP_SETPCAP` (a
/// command in a user namespace of its own drops it again in there).
pub(crate) fn droppable_bounding() -> Option<libc::c_ulong> {
    match effective(caps::Capability::CAP_SETPCAP) {
        Ok(true) => last().ok(),
        _ => None,
    }
}
