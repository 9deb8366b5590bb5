//! The retry budget: at most so many executions of one request digest per
//! session for a tier with a limit; then STOP, which no approval lifts.

use praxis_policy::Tier;

use crate::gate::{Rejection, Trail};
use crate::store::RequestEvent;
use crate::store::audit::{AuditStore, Durability, Event, EventKind};

/// What the retry budget says about a request with an execution limit.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Under the limit: the run counts against it.
    Counts(u32),
    /// Spent: STOP, with why.
    Spent(String),
    /// The count could not be read: HOLD, with why.
    Unreadable(String),
}

/// Checks `done` executions against `limit`.
pub fn check(limit: u32, done: Result<u32, String>, tier: Tier, session: &str) -> Budget {
    match done {
        Ok(done) if done >= limit => Budget::Spent(spent_reason(done, limit, tier, session)),
        Ok(_) => Budget::Counts(limit),
        Err(e) => Budget::Unreadable(format!("retry budget unreadable: {e}")),
    }
}

/// Why a request whose budget is spent is STOP.
pub fn spent_reason(done: u32, limit: u32, tier: Tier, session: &str) -> String {
    format!(
        "{}: this request already ran {done} time(s) in session {session}, at most {limit} for {} ({}); it cannot be approved again in this session",
        Rejection::BudgetSpent,
        tier.label(),
        tier.as_str()
    )
}

/// Records that a request hit its budget (besides its STOP decision record).
pub async fn exhausted(audit: &AuditStore, trail: &Trail, reason: &str) {
    let event = Event {
        reason: Some(reason.to_owned()),
        ..trail.event(EventKind::BudgetExhausted)
    };
    if let Err(e) = crate::store::record(audit, event, Durability::Full).await {
        tracing::error!("audit of an exhausted budget failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_stops_at_its_limit() {
        assert_eq!(
            check(2, Ok(1), Tier::ExternalSideEffect, "s"),
            Budget::Counts(2)
        );
        assert!(matches!(
            check(2, Ok(2), Tier::HighRisk, "s"),
            Budget::Spent(why) if why.starts_with("retry budget exhausted: this request already ran 2 time(s) in session s")
        ));
        assert!(matches!(
            check(2, Err("x".into()), Tier::HighRisk, "s"),
            Budget::Unreadable(why) if why == "retry budget unreadable: x"
        ));
    }
}
