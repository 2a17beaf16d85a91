//! When a task with parents runs: the strategies of docs/DAG_FORMAT.md,
//! "Strategies", as one table. The engine decides by [`decide`], and a test
//! holds the table's words to the docs' table, so the two cannot drift.
//!
//! A STRONG parent ended in one of three ways: S (SUCCESS, or SKIPPED
//! because it is disabled), B (SKIPPED by control flow: a branch not taken,
//! a failure handler whose condition never held) or F (FAILED, TIMEOUT,
//! KILLED, UPSTREAM_FAILED). WEAK parents only delay a decision: every
//! strategy but the "as soon as" ones waits for all parents. A task with
//! no STRONG parent runs once all its parents ended, whatever its strategy.

use crate::kinds::Strategy;

/// How a parent ended, as its children count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentResult {
    /// S: succeeded, or skipped because it is disabled.
    Succeeded,
    /// B: skipped by control flow; its children may be skipped in turn.
    Skipped,
    /// F: failed, timed out, was killed, or its own parents failed it.
    Failed,
}

/// How a task's parents stand: the counters kept on its instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParentCounts {
    /// Parents, STRONG or WEAK, that have not ended (been propagated).
    pub pending: i32,
    /// STRONG parents in all.
    pub strong: i32,
    /// STRONG parents that ended S.
    pub succeeded: i32,
    /// STRONG parents that ended B.
    pub skipped: i32,
    /// STRONG parents that ended F.
    pub failed: i32,
}

/// What a strategy makes of a waiting task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Not decided yet.
    Wait,
    /// It runs (a disabled task ends SKIPPED, counting as S).
    Run,
    /// It ends UPSTREAM_FAILED: F to its own children.
    UpstreamFailed,
    /// It ends SKIPPED by control flow: B to its own children.
    Skip,
}

/// One condition of the table, named in the docs' words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    Never,
    AllTerminal,
    AllTerminalAllSucceeded,
    AllTerminalAnyFailed,
    AllTerminalNoFailedAnySkipped,
    AnySucceeded,
    AllTerminalNoSucceededAnyFailed,
    AllTerminalAllSkipped,
    AllTerminalNoFailed,
    AllTerminalNoFailedSkippedOrNot,
    AnyFailed,
    AllTerminalAllFailed,
    AllTerminalNotAllFailed,
}

impl When {
    /// The cell of docs/DAG_FORMAT.md's table that says it.
    fn words(self) -> &'static str {
        match self {
            When::Never => "—",
            When::AllTerminal => "all terminal",
            When::AllTerminalAllSucceeded => "all terminal, all S",
            When::AllTerminalAnyFailed => "all terminal, any F",
            When::AllTerminalNoFailedAnySkipped => "all terminal, no F, any B",
            When::AnySucceeded => "as soon as any S",
            When::AllTerminalNoSucceededAnyFailed => "all terminal, no S, any F",
            When::AllTerminalAllSkipped => "all terminal, all B",
            When::AllTerminalNoFailed => "all terminal, no F",
            When::AllTerminalNoFailedSkippedOrNot => "all terminal, no F (B fine)",
            When::AnyFailed => "as soon as any F",
            When::AllTerminalAllFailed => "all terminal, all F",
            When::AllTerminalNotAllFailed => "all terminal, not all F",
        }
    }

    fn holds(self, counts: &ParentCounts) -> bool {
        let all_terminal = counts.pending <= 0;
        let ParentCounts {
            strong,
            succeeded,
            skipped,
            failed,
            ..
        } = *counts;
        match self {
            When::Never => false,
            When::AllTerminal => all_terminal,
            When::AllTerminalAllSucceeded => all_terminal && succeeded == strong,
            When::AllTerminalAnyFailed => all_terminal && failed > 0,
            When::AllTerminalNoFailedAnySkipped => all_terminal && failed == 0 && skipped > 0,
            When::AnySucceeded => succeeded > 0,
            When::AllTerminalNoSucceededAnyFailed => all_terminal && succeeded == 0 && failed > 0,
            When::AllTerminalAllSkipped => all_terminal && skipped == strong,
            When::AllTerminalNoFailed | When::AllTerminalNoFailedSkippedOrNot => {
                all_terminal && failed == 0
            }
            When::AnyFailed => failed > 0,
            When::AllTerminalAllFailed => all_terminal && failed == strong,
            When::AllTerminalNotAllFailed => all_terminal && failed < strong,
        }
    }
}

/// A strategy's row: when the task runs, ends UPSTREAM_FAILED, ends
/// SKIPPED (B), asked in that order.
struct Row {
    strategy: Strategy,
    runs: When,
    upstream_failed: When,
    skipped: When,
}

/// The table of docs/DAG_FORMAT.md, "Strategies", for STRONG parents.
const TABLE: [Row; 6] = [
    Row {
        strategy: Strategy::AllSuccess,
        runs: When::AllTerminalAllSucceeded,
        upstream_failed: When::AllTerminalAnyFailed,
        skipped: When::AllTerminalNoFailedAnySkipped,
    },
    Row {
        strategy: Strategy::OneSuccess,
        runs: When::AnySucceeded,
        upstream_failed: When::AllTerminalNoSucceededAnyFailed,
        skipped: When::AllTerminalAllSkipped,
    },
    Row {
        strategy: Strategy::NoneFailed,
        runs: When::AllTerminalNoFailedSkippedOrNot,
        upstream_failed: When::AllTerminalAnyFailed,
        skipped: When::Never,
    },
    Row {
        strategy: Strategy::OneFailed,
        runs: When::AnyFailed,
        upstream_failed: When::Never,
        skipped: When::AllTerminalNoFailed,
    },
    Row {
        strategy: Strategy::AllFailed,
        runs: When::AllTerminalAllFailed,
        upstream_failed: When::Never,
        skipped: When::AllTerminalNotAllFailed,
    },
    Row {
        strategy: Strategy::AllDone,
        runs: When::AllTerminal,
        upstream_failed: When::Never,
        skipped: When::Never,
    },
];

/// When `strategy` skips a task, in the words of the docs' table.
pub fn skipped_when(strategy: Strategy) -> &'static str {
    row(strategy).skipped.words()
}

fn row(strategy: Strategy) -> &'static Row {
    TABLE
        .iter()
        .find(|row| row.strategy == strategy)
        .unwrap_or(&TABLE[0])
}

/// What `strategy` makes of a task whose parents stand as `counts`.
pub fn decide(strategy: Strategy, counts: &ParentCounts) -> Decision {
    if counts.strong <= 0 {
        return if counts.pending <= 0 {
            Decision::Run
        } else {
            Decision::Wait
        };
    }
    let row = row(strategy);
    if row.runs.holds(counts) {
        Decision::Run
    } else if row.upstream_failed.holds(counts) {
        Decision::UpstreamFailed
    } else if row.skipped.holds(counts) {
        Decision::Skip
    } else {
        Decision::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::Iterable;

    /// The rows of the table under "Strategies" in docs/DAG_FORMAT.md:
    /// `(strategy, runs when, UPSTREAM_FAILED when, SKIPPED when)`.
    fn documented() -> Vec<[String; 4]> {
        let docs = include_str!("../../docs/DAG_FORMAT.md");
        let table = docs
            .split("| strategy | runs when |")
            .nth(1)
            .expect("docs/DAG_FORMAT.md has the strategy table");
        table
            .lines()
            .map(str::trim)
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .map(|line| {
                let cells: Vec<String> = line
                    .trim_matches('|')
                    .split('|')
                    .map(|cell| cell.trim().trim_matches('`').to_owned())
                    .collect();
                [
                    cells[0].clone(),
                    cells[1].clone(),
                    cells[2].clone(),
                    cells[3].clone(),
                ]
            })
            .collect()
    }

    #[test]
    fn the_table_is_the_documented_one() {
        let coded: Vec<[String; 4]> = TABLE
            .iter()
            .map(|row| {
                [
                    row.strategy.as_str().to_owned(),
                    row.runs.words().to_owned(),
                    row.upstream_failed.words().to_owned(),
                    row.skipped.words().to_owned(),
                ]
            })
            .collect();
        assert_eq!(coded, documented());
        assert_eq!(TABLE.len(), Strategy::iter().count(), "a row per strategy");
    }

    /// Every way up to three STRONG parents and one WEAK one can stand.
    fn every_count() -> Vec<ParentCounts> {
        let mut all = Vec::new();
        for strong in 1..=3 {
            for succeeded in 0..=strong {
                for skipped in 0..=strong - succeeded {
                    for failed in 0..=strong - succeeded - skipped {
                        let unended = strong - succeeded - skipped - failed;
                        for weak_unended in 0..=1 {
                            all.push(ParentCounts {
                                pending: unended + weak_unended,
                                strong,
                                succeeded,
                                skipped,
                                failed,
                            });
                        }
                    }
                }
            }
        }
        all
    }

    #[test]
    fn once_every_parent_ended_every_strategy_decides() {
        for strategy in Strategy::iter() {
            for counts in every_count().into_iter().filter(|c| c.pending == 0) {
                assert_ne!(
                    decide(strategy, &counts),
                    Decision::Wait,
                    "{strategy:?} {counts:?}"
                );
            }
        }
    }

    #[test]
    fn the_outcomes_of_a_row_never_overlap() {
        for row in &TABLE {
            for counts in every_count() {
                let holding = [row.runs, row.upstream_failed, row.skipped]
                    .iter()
                    .filter(|when| when.holds(&counts))
                    .count();
                assert!(holding <= 1, "{:?} {counts:?}", row.strategy);
            }
        }
    }

    #[test]
    fn a_decision_made_early_is_the_one_made_at_the_end() {
        // "As soon as" decides before every parent ended; whatever the rest
        // then do, the decision would still hold.
        for strategy in Strategy::iter() {
            for early in every_count().into_iter().filter(|c| c.pending > 0) {
                let decided = decide(strategy, &early);
                if decided == Decision::Wait {
                    continue;
                }
                let unended = early.strong - early.succeeded - early.skipped - early.failed;
                for (s, b) in [(unended, 0), (0, unended), (0, 0)] {
                    let end = ParentCounts {
                        pending: 0,
                        succeeded: early.succeeded + s,
                        skipped: early.skipped + b,
                        failed: early.failed + (unended - s - b),
                        ..early
                    };
                    assert_eq!(
                        decide(strategy, &end),
                        decided,
                        "{strategy:?} {early:?} → {end:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn without_a_strong_parent_every_strategy_runs_once_the_others_ended() {
        for strategy in Strategy::iter() {
            let waiting = ParentCounts {
                pending: 1,
                ..ParentCounts::default()
            };
            assert_eq!(decide(strategy, &waiting), Decision::Wait);
            assert_eq!(decide(strategy, &ParentCounts::default()), Decision::Run);
        }
    }

    #[test]
    fn the_examples_of_the_issue() {
        let ended = |succeeded, skipped, failed| ParentCounts {
            pending: 0,
            strong: succeeded + skipped + failed,
            succeeded,
            skipped,
            failed,
        };
        // A branch not taken skips the load and the report after it.
        assert_eq!(
            decide(Strategy::AllSuccess, &ended(0, 1, 0)),
            Decision::Skip
        );
        // The summary after a NONE_FAILED join still runs.
        assert_eq!(decide(Strategy::NoneFailed, &ended(1, 1, 0)), Decision::Run);
        // A cleanup runs when the load fails, and is skipped when it does not.
        assert_eq!(decide(Strategy::OneFailed, &ended(0, 0, 1)), Decision::Run);
        assert_eq!(decide(Strategy::OneFailed, &ended(1, 0, 0)), Decision::Skip);
    }
}
