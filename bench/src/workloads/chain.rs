//! `chain10` and `chain1000`: tasks in a line, each waiting for the one
//! before. A chain measures the edge — a parent's end to its child's
//! start — one edge at a time: `chain10` its total time and edge latency
//! against the targets and Airflow's, `chain1000` whether the edge grows
//! from the first hundred edges to the last hundred.

use anyhow::Result;

use super::{Bench, RunTimes, TaskKind, Workload, edge_targets, figures, repeat_runs};
use crate::report::{Anchor, Row, Target, Unit};
use crate::stats::{Better, Summary};

/// `n` tasks `t0` → `t1` → … → `t{n-1}`.
pub(super) fn tasks(n: usize) -> Vec<(String, Vec<String>)> {
    (0..n)
        .map(|i| {
            let deps = if i == 0 {
                vec![]
            } else {
                vec![format!("t{}", i - 1)]
            };
            (format!("t{i}"), deps)
        })
        .collect()
}

/// `chain10`: 10 tasks in a line; total time and edge latency.
pub(super) async fn chain10(bench: &Bench<'_>, kind: TaskKind) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Chain10);
    let row = |metric: &str, unit: Unit, better: Better, samples: Vec<f64>| {
        Row::new(&label, kind, metric, unit, better, &samples)
    };
    let runs = repeat_runs(bench, "chain10", bench.runners, kind, &tasks(10)).await?;
    let totals: Vec<f64> = runs.iter().map(RunTimes::total_s).collect();
    let mut edges = Vec::new();
    for run in &runs {
        for i in 1..10 {
            edges.push(run.edge_ms(&format!("t{}", i - 1), &format!("t{i}"))?);
        }
    }
    Ok(vec![
        row(
            "total, trigger → run SUCCESS",
            Unit::S,
            Better::Lower,
            totals.clone(),
        )
        .target(Target::median(figures::CHAIN10_TOTAL_S))
        .anchor(Anchor::new(figures::AIRFLOW, figures::AIRFLOW_CHAIN10_S)),
        row(
            "per sequential task (total / 10)",
            Unit::Ms,
            Better::Lower,
            totals.iter().map(|t| t * 100.0).collect(),
        )
        .anchor(Anchor::new(figures::HATCHET, figures::HATCHET_PER_TASK_MS)),
        row(
            "edge latency (parent end → child start)",
            Unit::Ms,
            Better::Lower,
            edges,
        )
        .targets(edge_targets())
        .anchor(Anchor::new(figures::AIRFLOW, figures::AIRFLOW_EDGE_MS)),
    ]
    .into_iter()
    .chain(edge_part_rows(&label, kind, &runs, 10)?)
    .collect())
}

/// `chain1000`: 1000 tasks in a line; edge latency at the start and at the
/// end, and how much it grows between them.
pub(super) async fn chain1000(bench: &Bench<'_>, kind: TaskKind) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Chain1000);
    let row = |metric: &str, unit: Unit, better: Better, samples: Vec<f64>| {
        Row::new(&label, kind, metric, unit, better, &samples)
    };
    let runs = repeat_runs(bench, "chain1000", bench.runners, kind, &tasks(1000)).await?;
    let (mut first, mut last, mut growth) = (Vec::new(), Vec::new(), Vec::new());
    for run in &runs {
        let edges = |range: std::ops::Range<usize>| -> Result<Vec<f64>> {
            range
                .map(|i| run.edge_ms(&format!("t{}", i - 1), &format!("t{i}")))
                .collect()
        };
        let head = edges(1..101)?;
        let end = edges(900..1000)?;
        let median = |v: &[f64]| Summary::of(v, Better::Lower).map_or(f64::NAN, |s| s.median);
        growth.push(median(&end) / median(&head));
        first.extend(head);
        last.extend(end);
    }
    Ok(vec![
        row(
            "total, trigger → run SUCCESS",
            Unit::S,
            Better::Lower,
            runs.iter().map(RunTimes::total_s).collect(),
        ),
        row(
            "edge latency, first 100 edges",
            Unit::Ms,
            Better::Lower,
            first,
        )
        .targets(edge_targets()),
        row(
            "edge latency, last 100 edges",
            Unit::Ms,
            Better::Lower,
            last,
        )
        .targets(edge_targets()),
        row(
            "growth: last-100 median / first-100 median",
            Unit::Ratio,
            Better::Lower,
            growth,
        )
        .target(Target::median(figures::CHAIN_GROWTH_MAX).bench_criterion()),
    ]
    .into_iter()
    .chain(edge_part_rows(&label, kind, &runs, 1000)?)
    .collect())
}

/// Where the edges of a chain of `n` spend their time: the two halves of
/// [`RunTimes::edge_parts_ms`] over every edge.
fn edge_part_rows(label: &str, kind: TaskKind, runs: &[RunTimes], n: usize) -> Result<Vec<Row>> {
    let (mut report, mut dispatch) = (Vec::new(), Vec::new());
    for run in runs {
        for i in 1..n {
            let (a, b) = run.edge_parts_ms(&format!("t{}", i - 1), &format!("t{i}"))?;
            report.push(a);
            dispatch.push(b);
        }
    }
    Ok(vec![
        Row::new(
            label,
            kind,
            "  edge part: parent end → child queued (log upload, end + propagation commit)",
            Unit::Ms,
            Better::Lower,
            &report,
        ),
        Row::new(
            label,
            kind,
            "  edge part: child queued → child start (work msg, fetch, claim commit)",
            Unit::Ms,
            Better::Lower,
            &dispatch,
        ),
    ])
}
