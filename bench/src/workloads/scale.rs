//! `scale`: runners scaled out by replica count on I/O-bound work, the
//! shape of real data tasks (they wait on databases and clusters, not on
//! this machine's cores): `--scale-tasks` independent `sleep 0.2` SHELL
//! tasks, run by 1, 2, 4 and 8 `datajump runner` processes of
//! [`SLOTS`] slots each. Reported per count: the throughput rows of
//! `wide10k`, and its ratio to linear — the throughput over `count` times
//! that of one runner, 1.0 when each runner added adds as much as the
//! first.

use anyhow::Result;

use super::wide::{self, throughput_rows};
use super::{Bench, TaskKind, Workload, repeat_runs};
use crate::report::{Row, Target, Unit};
use crate::stats::Better;
use crate::system::RunnerSetup;

/// Slots of every runner, whatever `--slots` says: the count of runners is
/// what varies.
pub const SLOTS: usize = 8;
/// The ratio to linear the issue asks for up to 8 runners.
const LINEAR_TARGET: f64 = 0.9;
/// The runner processes of each measurement.
pub const COUNTS: [usize; 4] = [1, 2, 4, 8];

/// Runs `scale` (its tasks are always [`TaskKind::Sleep`]); returns its
/// report rows.
pub(super) async fn run(bench: &Bench<'_>) -> Result<Vec<Row>> {
    let kind = TaskKind::Sleep;
    let label = bench.label(Workload::Scale);
    let mut rows = Vec::new();
    let mut one_runner = None;
    for count in COUNTS {
        let runners = RunnerSetup {
            count,
            slots: SLOTS,
            processes: true,
        };
        let progress = format!("{label} ×{count}");
        let runs = repeat_runs(
            bench,
            &progress,
            runners,
            kind,
            &wide::tasks(bench.scale_tasks),
        )
        .await?;
        let suffix = format!(
            ", {count} runner process{}",
            if count == 1 { "" } else { "es" }
        );
        let these = throughput_rows(&label, kind, &runs, &suffix);
        let median = these[0].median();
        if count == 1 {
            one_runner = median;
        }
        rows.extend(these);
        if let (Some(one), Some(median)) = (one_runner, median) {
            rows.push(
                Row::new(
                    &label,
                    kind,
                    &format!(
                        "ratio to linear (tasks/s over {count} × 1 runner's, medians){suffix}"
                    ),
                    Unit::Ratio,
                    Better::Higher,
                    &[median / (one * count as f64)],
                )
                .target(Target::median(LINEAR_TARGET)),
            );
        }
    }
    Ok(rows)
}
