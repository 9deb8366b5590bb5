//! Learned baselines (R8): how long windows of a repository and work kind
//! usually run, from past windows that ended on their own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::WorkKind;
use crate::policy::{Backstop, BaselinePolicy};
use crate::transition::WindowRecord;

/// A past window and the repository it was in (the daemon knows the repository).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSample {
    pub repo: String,
    pub record: WindowRecord,
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

/// Medians per work kind of `repo`'s past windows. Windows a backstop cut
/// short are left out: their length is the budget's, and learning from them
/// would make the budget feed itself. Kinds with fewer than
/// `policy.min_windows` samples are not learned.
pub fn learn(samples: &[WindowSample], repo: &str, policy: &BaselinePolicy) -> Baseline {
    let mut by_kind: BTreeMap<WorkKind, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for sample in samples {
        let record = &sample.record;
        let Some(kind) = record.kind else { continue };
        if sample.repo != repo || record.cut_short() || record.actions == 0 {
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
    use crate::transition::WindowEnd;

    fn sample(repo: &str, kind: WorkKind, actions: u64, end: WindowEnd) -> WindowSample {
        WindowSample {
            repo: repo.into(),
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
        let learned = learn(&samples, "a", &POLICY);
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
        let learned = learn(&samples, "a", &POLICY);
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
}
