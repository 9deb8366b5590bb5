//! The approval / retry-budget stage. One-shot approvals may turn a HOLD into
//! an ALLOW and the per-session budget may turn an ALLOW into a STOP; both
//! arrive with the approvals work. Until then the gate passes unchanged: a
//! HOLD stays HOLD, which is the fail-closed default.

use crate::pipeline::Gate;

pub fn apply(gate: Gate) -> Gate {
    gate
}
