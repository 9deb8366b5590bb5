//! Learned baselines (R8): how long windows of a workspace, role and work
//! kind usually run, from past windows that ended on their own.
//!
//! Sessions teach a [`Ledger`] the windows they finish; a new session is
//! seeded once, at its first judged action, with the [`Baseline`] its
//! [`Lineage`] has learned so far, and keeps it: what other sessions teach
//! later never changes a running session, so replaying it gives the same
//! transitions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::WorkKind;
use crate::policy::{Backstop, BaselinePolicy};
use crate::window::WindowRecord;

/// Whose past windows a session learns from: the workspace it works in
/// (the daemon names it: the repository root of its first action's working
/// directory) and the role the daemon resolved for it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lineage {
    pub workspace: String,
    pub role: String,
}

/// A past window and the lineage of the session that worked it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSample {
    pub lineage: Lineage,
    pub record: WindowRecord,
}

/// The windows finished sessions taught, the last `keep_windows` per
/// lineage and work kind. Persisted by the daemon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub samples: Vec<WindowSample>,
}

impl Ledger {
    /// Keeps a finished window of `lineage`, dropping the oldest of its
    /// lineage and work kind beyond `policy.keep_windows`. False when the
    /// window teaches nothing (see [`teaches`]) and the ledger is unchanged.
    pub fn teach(
        &mut self,
        lineage: &Lineage,
        record: &WindowRecord,
        policy: &BaselinePolicy,
    ) -> bool {
        if !teaches(record) {
            return false;
        }
        self.samples.push(WindowSample {
            lineage: lineage.clone(),
            record: record.clone(),
        });
        let same = |s: &WindowSample| s.lineage == *lineage && s.record.kind == record.kind;
        let kept = self.samples.iter().filter(|s| same(s)).count();
        if kept > policy.keep_windows
            && let Some(oldest) = self.samples.iter().position(same)
        {
            self.samples.remove(oldest);
        }
        true
    }

    /// What `lineage`'s past windows teach a new session.
    pub fn baseline(&self, lineage: &Lineage, policy: &BaselinePolicy) -> Baseline {
        learn(&self.samples, lineage, policy)
    }
}

/// Whether a finished window is a sample of the work's own length: it has a
/// work kind and actions, and no backstop cut it short (its length would be
/// the budget's, and learning from it would make the budget feed itself).
pub fn teaches(record: &WindowRecord) -> bool {
    record.kind.is_some() && record.actions > 0 && !record.cut_short()
}

/// The median window of one work kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Median {
    pub actions: u64,
    pub elapsed_ms: u64,
    pub windows: usize,
}

/// What was learned for one repository, by work kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    pub by_kind: BTreeMap<WorkKind, Median>,
}

/// Medians per work kind of `lineage`'s past windows that [`teaches`].
/// Kinds with fewer than `policy.min_windows` samples are not learned.
pub fn learn(samples: &[WindowSample], lineage: &Lineage, policy: &BaselinePolicy) -> Baseline {
    let mut by_kind: BTreeMap<WorkKind, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for sample in samples {
        let record = &sample.record;
        let Some(kind) = record.kind else { continue };
        if sample.lineage != *lineage || !teaches(record) {
            continue;
        }
        let (actions, elapsed) = by_kind.entry(kind).or_default();
        actions.push(record.actions);
        elapsed.push(record.elapsed_ms);
    }
    Baseline {
        by_kind: by_kind
            .into_iter()
            .filter(|(_, (a, _))| a.len() >= policy.min_windows.max(1))
            .map(|(kind, (mut actions, mut elapsed))| {
                let windows = actions.len();
                let median = Median {
                    actions: median(&mut actions),
                    elapsed_ms: median(&mut elapsed),
                    windows,
                };
                (kind, median)
            })
            .collect(),
    }
}

/// The lower median (an observed value, so integers stay exact).
fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[(values.len() - 1) / 2]
}

impl Baseline {
    /// One line for the audit: each learned kind's median, or that the static budgets hold.
    pub fn describe(&self) -> String {
        if self.by_kind.is_empty() {
            return String::from("nothing learned yet: static backstops");
        }
        self.by_kind
            .iter()
            .map(|(kind, m)| {
                format!(
                    "{}: median {} actions, {} s over {} windows",
                    kind.as_str(),
                    m.actions,
                    m.elapsed_ms / 1000,
                    m.windows
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The backstop for a window of `kind` under the static one: the learned
    /// median times the factor, never above the static backstop (learning
    /// tightens, it never loosens past what the risk allows) and never below
    /// `floor`.
    pub fn backstop(
        &self,
        kind: Option<WorkKind>,
        fixed: Backstop,
        floor: Backstop,
        policy: &BaselinePolicy,
    ) -> Backstop {
        let Some(m) = kind.and_then(|k| self.by_kind.get(&k)) else {
            return fixed;
        };
        let scale = |v: u64| v.saturating_mul(policy.factor_percent).div_ceil(100);
        Backstop {
            actions: scale(m.actions).clamp(floor.actions.min(fixed.actions), fixed.actions),
            seconds: scale(m.elapsed_ms.div_ceil(1000))
                .clamp(floor.seconds.min(fixed.seconds), fixed.seconds),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Risk;
    use crate::signal::Signal;
    use crate::window::WindowEnd;

    fn lineage(workspace: &str) -> Lineage {
        Lineage {
            workspace: workspace.into(),
            role: "agent".into(),
        }
    }

    fn sample(workspace: &str, kind: WorkKind, actions: u64, end: WindowEnd) -> WindowSample {
        WindowSample {
            lineage: lineage(workspace),
            record: WindowRecord {
                window: 1,
                kind: Some(kind),
                risk: Risk::Medium,
                actions,
                elapsed_ms: actions * 20_000,
                end,
            },
        }
    }

    const POLICY: BaselinePolicy = BaselinePolicy {
        min_windows: 3,
        factor_percent: 200,
        keep_windows: 4,
    };

    #[test]
    fn medians_per_kind_leave_out_windows_a_budget_cut_short() {
        let shift = WindowEnd::Boundary(Signal::WorkKindShift);
        let budget = WindowEnd::Boundary(Signal::ToolBudget);
        let samples = vec![
            sample("a", WorkKind::Write, 8, shift),
            sample("a", WorkKind::Write, 12, WindowEnd::TurnEnded),
            sample("a", WorkKind::Write, 10, shift),
            sample("a", WorkKind::Write, 40, budget),
            sample("a", WorkKind::Write, 40, budget),
            sample("b", WorkKind::Write, 99, shift),
            sample("a", WorkKind::Read, 5, shift),
        ];
        let learned = learn(&samples, &lineage("a"), &POLICY);
        let write = learned.by_kind[&WorkKind::Write];
        assert_eq!((write.actions, write.windows), (10, 3));
        assert_eq!(write.elapsed_ms, 200_000);
        // Only one read window: too few to learn from.
        assert!(!learned.by_kind.contains_key(&WorkKind::Read));
    }

    #[test]
    fn learned_backstop_tightens_within_floor_and_static_bounds() {
        let samples: Vec<_> = [4, 5, 6]
            .into_iter()
            .map(|n| sample("a", WorkKind::Write, n, WindowEnd::TurnEnded))
            .collect();
        let learned = learn(&samples, &lineage("a"), &POLICY);
        let fixed = Backstop {
            actions: 40,
            seconds: 1800,
        };
        let floor = Backstop {
            actions: 4,
            seconds: 30,
        };
        let b = learned.backstop(Some(WorkKind::Write), fixed, floor, &POLICY);
        assert_eq!(
            b,
            Backstop {
                actions: 10,
                seconds: 200
            }
        );
        assert_eq!(
            learned.backstop(Some(WorkKind::Read), fixed, floor, &POLICY),
            fixed
        );
        let tight = Backstop {
            actions: 6,
            seconds: 100,
        };
        assert_eq!(
            learned.backstop(Some(WorkKind::Write), tight, floor, &POLICY),
            tight
        );
    }

    #[test]
    fn the_ledger_keeps_what_teaches_and_only_the_last_windows_of_a_kind() {
        let mut ledger = Ledger::default();
        let a = lineage("a");
        let budget = WindowEnd::Boundary(Signal::ToolBudget);
        assert!(!ledger.teach(
            &a,
            &sample("a", WorkKind::Write, 40, budget).record,
            &POLICY
        ));
        for n in [100, 2, 4, 6, 8] {
            let record = sample("a", WorkKind::Write, n, WindowEnd::TurnEnded).record;
            assert!(ledger.teach(&a, &record, &POLICY));
        }
        let read = sample("a", WorkKind::Read, 7, WindowEnd::TurnEnded).record;
        assert!(ledger.teach(&a, &read, &POLICY));
        // The window of 100 actions was the oldest of five: it is gone.
        let actions: Vec<u64> = ledger.samples.iter().map(|s| s.record.actions).collect();
        assert_eq!(actions, [2, 4, 6, 8, 7]);
        let learned = ledger.baseline(&a, &POLICY);
        assert_eq!(learned.by_kind[&WorkKind::Write].actions, 4);
        // Another role in the same workspace has learned nothing.
        let director = Lineage {
            role: "director".into(),
            ..a.clone()
        };
        assert_eq!(ledger.baseline(&director, &POLICY), Baseline::default());
        assert_eq!(
            ledger.baseline(&director, &POLICY).describe(),
            "nothing learned yet: static backstops"
        );
        assert_eq!(
            learned.describe(),
            "write: median 4 actions, 80 s over 4 windows"
        );
    }
}
