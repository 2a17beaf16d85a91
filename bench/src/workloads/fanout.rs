//! `fanout50`: one task, fifty children of it, and a join waiting for all
//! fifty. It measures the fan-out (one end releasing fifty tasks at once)
//! and the join (the last of fifty parents releasing one), besides the
//! total against the targets and Airflow's.

use anyhow::Result;

use super::{Bench, RunTimes, TaskKind, Workload, edge_targets, figures, repeat_runs};
use crate::report::{Anchor, Row, Target, Unit};
use crate::stats::Better;

/// `start` → `m0` … `m{width-1}` → `join`.
pub(super) fn tasks(width: usize) -> Vec<(String, Vec<String>)> {
    let middle: Vec<String> = (0..width).map(|i| format!("m{i}")).collect();
    let mut tasks = vec![("start".to_owned(), vec![])];
    tasks.extend(middle.iter().map(|m| (m.clone(), vec!["start".to_owned()])));
    tasks.push(("join".to_owned(), middle));
    tasks
}

/// `fanout50`: 1 → 50 → 1; total time, fan-out latency and the join's.
pub(super) async fn fanout50(bench: &Bench<'_>, kind: TaskKind) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Fanout50);
    let row = |metric: &str, unit: Unit, better: Better, samples: Vec<f64>| {
        Row::new(&label, kind, metric, unit, better, &samples)
    };
    let runs = repeat_runs(bench, "fanout50", bench.runners, kind, &tasks(50)).await?;
    let mut fan_out = Vec::new();
    let (mut joins, mut join_queued, mut join_dispatch) = (Vec::new(), Vec::new(), Vec::new());
    for run in &runs {
        let mut last_parent = None;
        for i in 0..50 {
            let middle = format!("m{i}");
            fan_out.push(run.edge_ms("start", &middle)?);
            let end = run.task(&middle)?.end;
            if last_parent.as_ref().is_none_or(|(_, last)| end > *last) {
                last_parent = Some((middle, end));
            }
        }
        if let Some((parent, _)) = last_parent {
            joins.push(run.edge_ms(&parent, "join")?);
            let (queued, dispatch) = run.edge_parts_ms(&parent, "join")?;
            join_queued.push(queued);
            join_dispatch.push(dispatch);
        }
    }
    Ok(vec![
        row(
            "total, trigger → run SUCCESS",
            Unit::S,
            Better::Lower,
            runs.iter().map(RunTimes::total_s).collect(),
        )
        .target(Target::median(figures::FANOUT50_TOTAL_S))
        .anchor(Anchor::new(figures::AIRFLOW, figures::AIRFLOW_FANOUT50_S)),
        row(
            "fan-out latency (start end → each middle start)",
            Unit::Ms,
            Better::Lower,
            fan_out,
        ),
        row(
            "join latency (last parent end → join start)",
            Unit::Ms,
            Better::Lower,
            joins,
        )
        .targets(edge_targets()),
        row(
            "  join part: last parent end → join queued",
            Unit::Ms,
            Better::Lower,
            join_queued,
        ),
        row(
            "  join part: join queued → join start",
            Unit::Ms,
            Better::Lower,
            join_dispatch,
        ),
    ])
}
