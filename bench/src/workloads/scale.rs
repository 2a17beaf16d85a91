//! `scale`: the wide DAG of `--scale-tasks` tasks with 1, 2 and 4 runner
//! processes — the same throughput rows as `wide10k` at each count, and the
//! speed-up of 2 and 4 runners over 1 (a ratio of medians).

use anyhow::Result;

use super::wide::{self, throughput_rows};
use super::{Bench, TaskKind, Workload, repeat_runs};
use crate::report::{Row, Unit};
use crate::stats::Better;
use crate::system::RunnerSetup;

/// Runs `scale` with `kind` tasks; returns its report rows.
pub(super) async fn run(bench: &Bench<'_>, kind: TaskKind) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Scale);
    let row = |metric: &str, unit: Unit, better: Better, samples: Vec<f64>| {
        Row::new(&label, kind, metric, unit, better, &samples)
    };
    let mut rows = Vec::new();
    let mut base = None;
    for count in [1, 2, 4] {
        let runners = RunnerSetup {
            count,
            slots: bench.runners.slots,
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
        let mut these = throughput_rows(&label, kind, &runs, &suffix);
        let median = these[0].median();
        if count == 1 {
            base = median;
        } else if let (Some(base), Some(median)) = (base, median) {
            these.push(row(
                &format!("speed-up over 1 runner (ratio of medians){suffix}"),
                Unit::Ratio,
                Better::Higher,
                vec![median / base],
            ));
        }
        rows.extend(these);
    }
    Ok(rows)
}
