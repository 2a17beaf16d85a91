//! `map10k`: a task writes 10,000 table names to its large output and a
//! mapped task runs over them (issue 42). It measures what reading the
//! list costs — from the end of the task that wrote it to the first item
//! started: the runner's commit, in whose transaction the list is read and
//! checked and 10,000 items inserted, the items' work published and the
//! first one claimed. A row's `queued_at` is its transaction's clock, taken
//! before the inserts, so the item's start (taken just before its claim)
//! is the first instant that comes after the commit. Then how fast the
//! map's items run through its places.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use chrono::{DateTime, Utc};
use datajump_shared::entities::{execution, task_instance};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};

use super::{
    Bench, ONE_RUN, TaskKind, Workload, apply, dag_yaml, ms, publish_and_wait, trigger_and_wait,
    wide,
};
use crate::report::{Row, Target, Unit};
use crate::stats::Better;
use crate::system::System;

/// Items in the list.
pub(super) const ITEMS: usize = 10_000;
/// Items queued or running at once.
const MAX_PARALLEL: usize = 1_000;
/// The issue's bound on list end → first item QUEUED (median), in ms.
const FIRST_ITEM_MS: f64 = 2_000.0;

/// The DAG: `list_tables` writes the list with `awk` (no Python needed),
/// `load` runs a NOOP per name.
pub(super) fn yaml() -> String {
    format!(
        r#"name: bench_map
{ONE_RUN}tasks:
  - name: list_tables
    type: SHELL
    retry: {{ max: 0 }}
    command: |
      awk 'BEGIN {{ printf "["; for (i = 0; i < {ITEMS}; i++) {{ if (i) printf ","; printf "\"warehouse.ods_table_%05d\"", i }}; printf "]" }}' > "$DJ_OUTPUT_JSON/tables.json"
  - name: load
    type: NOOP
    retry: {{ max: 0 }}
    depends_on: [list_tables]
    map: {{ over: "${{list_tables.output.tables}}", max_parallel: {MAX_PARALLEL}, max_items: {ITEMS} }}
"#
    )
}

/// What one repetition measured.
struct MapTimes {
    /// `list_tables`' end → the first item started, in ms.
    first_item_ms: f64,
    /// Items run a second, first item started → last item's end.
    items_per_s: f64,
}

/// `map10k`: list end → first item started, and the items' throughput.
pub(super) async fn run(bench: &Bench<'_>) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Map10k);
    let kind = TaskKind::Noop;
    let mut first = Vec::new();
    let mut throughput = Vec::new();
    for rep in 1..=bench.repeat {
        let started = Instant::now();
        let times = one_run(bench)
            .await
            .with_context(|| format!("{label} repetition {rep}"))?;
        eprintln!(
            "  {label} [{}] rep {rep}/{}: first item started {:.0} ms after the list ended, {:.0} items/s (repetition took {:.1} s)",
            bench.backend.kind.key(),
            bench.repeat,
            times.first_item_ms,
            times.items_per_s,
            started.elapsed().as_secs_f64()
        );
        first.push(times.first_item_ms);
        throughput.push(times.items_per_s);
    }
    Ok(vec![
        Row::new(
            &label,
            kind,
            "list of 10,000 written → first item started",
            Unit::Ms,
            Better::Lower,
            &first,
        )
        .target(Target::median(FIRST_ITEM_MS)),
        Row::new(
            &label,
            kind,
            "items run, first start → last end (max_parallel 1,000)",
            Unit::PerS,
            Better::Higher,
            &throughput,
        ),
    ])
}

/// One repetition: a fresh system, a warm-up run, the map's run.
async fn one_run(bench: &Bench<'_>) -> Result<MapTimes> {
    let mut system = System::start(bench.backend, bench.datajump).await?;
    let result = async {
        let warmup = apply(
            &system,
            &dag_yaml("bench_warmup", TaskKind::Shell, &wide::tasks(1), ONE_RUN),
        )
        .await?;
        let dag_id = apply(&system, &yaml()).await?;
        system.start_roles(bench.runners).await?;
        trigger_and_wait(&mut system, warmup, Duration::from_secs(60))
            .await
            .context("warm-up run")?;
        let run = publish_and_wait(&mut system, dag_id, Duration::from_secs(600)).await?;
        read_times(&system, run.run_id).await
    }
    .await;
    system.stop().await;
    result
}

/// The figures of the map's run, from the rows its roles wrote.
async fn read_times(system: &System<'_>, run_id: i64) -> Result<MapTimes> {
    let rows: Vec<(i64, i32)> = task_instance::Entity::find()
        .select_only()
        .columns([task_instance::Column::Id, task_instance::Column::MapIndex])
        .filter(task_instance::Column::DagRunId.eq(run_id))
        .into_tuple()
        .all(&system.db)
        .await?;
    let items: std::collections::HashSet<i64> =
        rows.iter().filter(|r| r.1 >= 0).map(|r| r.0).collect();
    anyhow::ensure!(items.len() == ITEMS, "{} items, not {ITEMS}", items.len());
    let ends: Vec<(i64, DateTime<Utc>, Option<DateTime<Utc>>)> = execution::Entity::find()
        .select_only()
        .columns([
            execution::Column::TaskInstanceId,
            execution::Column::StartTime,
            execution::Column::EndTime,
        ])
        .filter(execution::Column::DagRunId.eq(run_id))
        .into_tuple()
        .all(&system.db)
        .await?;
    // The one planned instance that ran is the list's (the map's aggregate
    // never runs); every other attempt is an item's.
    let (item_runs, list_runs): (Vec<_>, Vec<_>) =
        ends.iter().partition(|(id, _, _)| items.contains(id));
    let list_end = list_runs
        .first()
        .and_then(|(_, _, end)| *end)
        .context("the list task has no end")?;
    let first_start = item_runs
        .iter()
        .map(|(_, start, _)| *start)
        .min()
        .context("no item started")?;
    let last_end = item_runs
        .iter()
        .filter_map(|(_, _, end)| *end)
        .max()
        .context("no item ended")?;
    Ok(MapTimes {
        first_item_ms: ms(first_start - list_end),
        items_per_s: ITEMS as f64 / (ms(last_end - first_start) / 1000.0),
    })
}
