//! The approval / retry-budget stage.
//!
//! A policy HOLD is stored as pending (in the audit database, in the same
//! transaction as its HOLD record). `praxis approve ID` turns it into a
//! one-shot approval bound to the request digest ([`digest`]): SHA-256 of
//! the canonical request (command, cwd, role, profile, credential grants).
//! When the agent runs the same request again, this stage finds the
//! approval and lifts the HOLD; the approval is consumed by the SQL that
//! runs inside the transaction committing the run's audit intent, guarded
//! so that it succeeds once: a second run, concurrent or later, finds it
//! gone and stays HOLD.
//!
//! A runtime that asks its own user (Claude Code's `ask`) gets a one-time
//! approval token instead ([`token`]), minted when the daemon judges the
//! held command for it: a random 128-bit value, stored only as its SHA-256,
//! bound to the request digest and the session, valid for
//! [`token::TTL_SECS`], and used only when presented (`praxis-run
//! --approval-token`). The user's yes runs the rewrite carrying it; the run
//! consumes it in its intent's transaction like any approval. Neither
//! minting nor presenting works from inside a command praxis runs, so an
//! agent's commands cannot obtain or replay one.
//!
//! The retry budget ([`budget`]) counts executions per session and request
//! digest, in the same transaction. A tier with a limit (T2/T3: 2 by
//! default) is STOP once the limit is reached, and a STOP is never
//! approvable. A steer-only role turns a policy HOLD into an ALLOW with an
//! advisory line; it never touches a STOP, the budget included.
//!
//! [`apply`] is the stage: it reads the approvals store (all the SQL, expiry
//! included) and hands what it found to the pure [`decide`].

pub mod apply;
pub mod budget;
pub mod decide;
pub mod digest;
pub mod token;
