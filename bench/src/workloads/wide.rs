//! `wide200` and `wide10k`: independent tasks, all released at once by
//! the run's creation. They measure throughput — tasks per second from the
//! trigger to the run's end, and from the first start to the last end —
//! and where the rest of the run's time goes (ramp-up, wind-down). `scale`
//! reports the same rows.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use datajump_runner::executor::{Cgroups, TaskProcess, run_bare_script};

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
    rows.extend(spawn_floor_rows(bench, &label, kind, &runs).await?);
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
    let mut rows = throughput_rows(&label, kind, &runs, "");
    rows.extend(spawn_floor_rows(bench, &label, kind, &runs).await?);
    Ok(rows)
}

/// For SHELL `true` tasks, the spawn floor and how close the runs came to
/// it: after each repetition, as many scripts as the run had tasks, run
/// the way a SHELL task's process runs (`run_bare_script`: the same
/// guard, `bash` and script file) by as many at once as the runners have
/// slots, outside DataJump. What the runs lose to it is DataJump's own
/// cost per task: claim, records, log, messages.
async fn spawn_floor_rows(
    bench: &Bench<'_>,
    workload: &str,
    kind: TaskKind,
    runs: &[RunTimes],
) -> Result<Vec<Row>> {
    if kind != TaskKind::Shell {
        return Ok(Vec::new());
    }
    let at_once = bench.runners.count * bench.runners.slots;
    let mut floors = Vec::with_capacity(runs.len());
    for run in runs {
        let floor = spawn_floor(run.tasks.len(), at_once).await?;
        eprintln!(
            "  {workload} spawn floor: {} scripts, {at_once} at once: {floor:.0}/s",
            run.tasks.len()
        );
        floors.push(floor);
    }
    let achieved: Vec<f64> = runs
        .iter()
        .zip(&floors)
        .map(|(run, floor)| run.tasks.len() as f64 / run.total_s() / floor)
        .collect();
    Ok(vec![
        Row::new(
            workload,
            kind,
            &format!(
                "spawn floor: guarded `bash` running `true`, {at_once} at once, outside DataJump"
            ),
            Unit::PerS,
            Better::Higher,
            &floors,
        ),
        Row::new(
            workload,
            kind,
            "tasks/s, trigger → run SUCCESS ÷ spawn floor",
            Unit::Ratio,
            Better::Higher,
            &achieved,
        )
        .target(Target::median(figures::SHELL_OF_SPAWN_FLOOR)),
    ])
}

/// Scripts of `true` per second, `n` of them, `at_once` at a time, each
/// started and reaped as a SHELL task's process is, in a control group of
/// its own where this process may create one (as a runner's attempts are).
async fn spawn_floor(n: usize, at_once: usize) -> Result<f64> {
    let process = Arc::new(TaskProcess::new(&[], None)?);
    let cgroups = Cgroups::open().ok().map(Arc::new);
    let permits = Arc::new(tokio::sync::Semaphore::new(at_once.max(1)));
    let started = Instant::now();
    let mut scripts = tokio::task::JoinSet::new();
    for _ in 0..n {
        let permit = Arc::clone(&permits).acquire_owned().await?;
        let (process, cgroups) = (Arc::clone(&process), cgroups.clone());
        scripts.spawn(async move {
            let _permit = permit;
            run_bare_script(&process, cgroups.as_deref(), "true").await
        });
    }
    while let Some(script) = scripts.join_next().await {
        let status = script?.context("run a guarded script")?;
        ensure!(status.success(), "a guarded `true` script ended {status}");
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
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
