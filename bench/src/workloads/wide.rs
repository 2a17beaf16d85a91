//! `wide200` and `wide10k`: independent tasks, all released at once by
//! the run's creation. They measure throughput — tasks per second from the
//! trigger to the run's end, and from the first start to the last end —
//! and where the rest of the run's time goes (ramp-up, wind-down). `scale`
//! reports the same rows.

use anyhow::Result;

use super::{Bench, RunTimes, TaskKind, Workload, figures, ms, repeat_runs, secs};
use crate::report::{Anchor, Row, Target, Unit};
use crate::stats::Better;

/// `n` tasks `w0` … `w{n-1}` without dependencies.
pub(super) fn tasks(n: usize) -> Vec<(String, Vec<String>)> {
    (0..n).map(|i| (format!("w{i}"), vec![])).collect()
}

/// `wide200`: 200 independent tasks; throughput and the total, against
/// Airflow's.
pub(super) async fn wide200(bench: &Bench<'_>, kind: TaskKind) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Wide200);
    let runs = repeat_runs(bench, &label, bench.runners, kind, &tasks(200)).await?;
    let mut rows = throughput_rows(&label, kind, &runs, "");
    rows[0] = rows[0].clone().anchor(Anchor::new(
        figures::AIRFLOW,
        figures::AIRFLOW_WIDE200_PER_S,
    ));
    let totals: Vec<f64> = runs.iter().map(RunTimes::total_s).collect();
    rows.push(
        Row::new(
            &label,
            kind,
            "total, trigger → run SUCCESS",
            Unit::S,
            Better::Lower,
            &totals,
        )
        .anchor(Anchor::new(figures::AIRFLOW, figures::AIRFLOW_WIDE200_S)),
    );
    Ok(rows)
}

/// `wide10k`: `--wide-tasks` (10,000) independent tasks; throughput.
pub(super) async fn wide10k(bench: &Bench<'_>, kind: TaskKind) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Wide10k);
    let runs = repeat_runs(bench, &label, bench.runners, kind, &tasks(bench.wide_tasks)).await?;
    Ok(throughput_rows(&label, kind, &runs, ""))
}

/// The throughput target for `task` tasks; tasks that sleep have
/// none (their throughput is slots over the sleep).
fn throughput_target(task: TaskKind) -> Option<Target> {
    match task {
        TaskKind::Noop => Some(Target::median(figures::NOOP_TASKS_PER_S)),
        TaskKind::Shell => Some(Target::median(figures::SHELL_TASKS_PER_S)),
        TaskKind::Sleep => None,
    }
}

/// The throughput rows of a run of independent tasks; `suffix` ends every
/// metric's name (`scale` names its runner count there).
pub(super) fn throughput_rows(
    workload: &str,
    kind: TaskKind,
    runs: &[RunTimes],
    suffix: &str,
) -> Vec<Row> {
    let n = |run: &RunTimes| run.tasks.len() as f64;
    let end_to_end: Vec<f64> = runs.iter().map(|r| n(r) / r.total_s()).collect();
    let busy: Vec<f64> = runs
        .iter()
        .map(|r| match (r.first_start(), r.last_end()) {
            (Some(first), Some(last)) => n(r) / secs(last - first),
            _ => f64::NAN,
        })
        .collect();
    let ramp_up: Vec<f64> = runs
        .iter()
        .map(|r| {
            r.first_start()
                .map_or(f64::NAN, |first| ms(first - r.published))
        })
        .collect();
    let wind_down: Vec<f64> = runs
        .iter()
        .map(|r| r.last_end().map_or(f64::NAN, |last| ms(r.finished - last)))
        .collect();
    let end_to_end = Row::new(
        workload,
        kind,
        &format!("tasks/s, trigger → run SUCCESS{suffix}"),
        Unit::PerS,
        Better::Higher,
        &end_to_end,
    );
    vec![
        match throughput_target(kind) {
            Some(target) => end_to_end.target(target),
            None => end_to_end,
        },
        Row::new(
            workload,
            kind,
            &format!("tasks/s, first start → last end{suffix}"),
            Unit::PerS,
            Better::Higher,
            &busy,
        ),
        Row::new(
            workload,
            kind,
            &format!("  ramp-up: trigger → first start (run created, roots queued){suffix}"),
            Unit::Ms,
            Better::Lower,
            &ramp_up,
        ),
        Row::new(
            workload,
            kind,
            &format!("  wind-down: last end → run SUCCESS{suffix}"),
            Unit::Ms,
            Better::Lower,
            &wind_down,
        ),
    ]
}
