//! The session control plane's pure part: a deterministic boundary detector
//! over the trajectory a runtime's hooks expose (tool name, one collapsed
//! target, status, time, session id) plus Praxis' own judgment of each action.
//!
//! Hook events go in; typed transitions come out: boundaries, windows opened,
//! closed or expired, steers, checkpoints required, satisfied or skipped,
//! skipped signals, signals disabled for missing telemetry, method blocks.
//! No I/O and no clock: time comes in on the events, so replaying a
//! trajectory gives the same transitions.
//!
//! ```
//! use praxis_session::{Detector, EventKind, HookEvent, SessionPolicy, SessionState, Status};
//!
//! let detector = Detector::new(SessionPolicy::shipped().unwrap()).unwrap();
//! let event = HookEvent {
//!     runtime: "claude-code".into(),
//!     session: "s1".into(),
//!     kind: EventKind::PreToolUse,
//!     tool: Some("Read".into()),
//!     target: Some("src/lib.rs".into()),
//!     cwd: Some("/src/app".into()),
//!     call_id: None,
//!     status: Status::Unknown,
//!     at_ms: 1_700_000_000_000,
//!     judgment: None,
//! };
//! let mut state = SessionState::new(event.scope(), None);
//! let outcome = detector.observe(&mut state, &event);
//! assert!(outcome.steer().is_none());
//! ```

#![forbid(unsafe_code)]

pub mod baseline;
pub mod detector;
pub mod event;
pub mod policy;
pub mod signal;
pub mod state;
pub mod steer;
pub mod transition;
pub mod window;

pub use baseline::{Baseline, Ledger, Lineage, Median, WindowSample, learn, teaches};
pub use detector::Detector;
pub use event::{EventKind, HookEvent, Judgment, ScopeKey, Status, WorkKind};
pub use policy::{Mechanism, MethodBlock, PolicyError, Posture, Risk, SessionPolicy};
pub use signal::{SIGNALS, Signal, Telemetry};
pub use state::SessionState;
pub use transition::{Evidence, Outcome, SkipReason, Transition};
pub use window::{WindowEnd, WindowRecord};
