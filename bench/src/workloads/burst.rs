//! `burst`: `--burst-runs` one-task DAGs on one cron, `0 * * * * ?`, so
//! that all their runs are due in the same second — the 02:00 of a platform
//! whose daily DAGs share a schedule — run by one `datajump up` process. It
//! measures how long until every first task started, the lag of each, and
//! every fire missed or doubled; and how soon the task of a priority-10
//! DAG due one second into the burst starts, with ten thousand runs of
//! priority 5 ahead of it. Then, with `up` stopped, the same DAGs' runs by
//! the engine alone ([`super::engine_alone`]): what the database writer
//! needs for them, the floor under the burst's figure.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use chrono::{DateTime, Timelike as _, Utc};
use datajump_shared::entities::{dag_run, task_instance};
use sea_orm::sea_query::Query;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect};

use super::engine_alone::{self, EngineAlone};
use super::{Bench, TaskKind, apply, chain, dag_yaml, ms, secs};
use crate::report::{Row, Target, Unit};
use crate::stats::Better;
use crate::system::System;

/// The bound on starting every run of a 10,000-run burst.
const TARGET_ALL_STARTED_S: f64 = 5.0;
/// The bound on starting the urgent DAG's task inside that burst.
const TARGET_URGENT_MS: f64 = 1_000.0;
/// The urgent DAG's cron: one second after the burst's.
const URGENT_CRON: &str = "1 * * * * ?";
/// The least time between the system's start and the burst: the ticker
/// loads every schedule first.
const MIN_LEAD: Duration = Duration::from_secs(10);
/// How long the bench waits for the burst's last first task.
const PATIENCE: Duration = Duration::from_secs(120);

/// What one burst saw.
#[derive(Default)]
struct BurstRep {
    first_task_ms: Vec<f64>,
    /// Due second → start of the urgent DAG's task.
    urgent_ms: Option<f64>,
    all_started_s: Option<f64>,
    missed: f64,
    doubled: f64,
    /// The same DAGs' runs by the engine alone.
    engine_alone: Option<EngineAlone>,
}

/// Runs `burst`; returns its report rows.
pub(super) async fn run(bench: &Bench<'_>) -> Result<Vec<Row>> {
    let mut total = BurstRep::default();
    let mut all_started = Vec::new();
    let mut urgent = Vec::new();
    let (mut alone_create, mut alone_claim_end, mut alone_total, mut alone_per_run) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut over_alone = Vec::new();
    for rep in 1..=bench.repeat {
        let began = Instant::now();
        let mut system = System::start(bench.backend, bench.datajump).await?;
        let result = measure(bench, &mut system).await;
        system.stop().await;
        let one = result.with_context(|| format!("burst repetition {rep}"))?;
        eprintln!(
            "  burst [{}] rep {rep}/{}: {} first tasks, all started after {}, missed {}, doubled {} ({:.0} s)",
            bench.backend.kind.key(),
            bench.repeat,
            one.first_task_ms.len(),
            one.all_started_s
                .map_or_else(|| "never".to_owned(), |s| format!("{s:.2} s")),
            one.missed,
            one.doubled,
            began.elapsed().as_secs_f64()
        );
        if let Some(alone) = &one.engine_alone {
            let total = alone.total().as_secs_f64();
            eprintln!(
                "  burst [{}] rep {rep}: the engine alone created {} runs in {:.2} s and claimed and ended their tasks in {:.2} s",
                bench.backend.kind.key(),
                alone.runs,
                alone.create.as_secs_f64(),
                alone.claim_and_end.as_secs_f64()
            );
            alone_create.push(alone.create.as_secs_f64());
            alone_claim_end.push(alone.claim_and_end.as_secs_f64());
            alone_total.push(total);
            alone_per_run.push(total * 1_000.0 / alone.runs.max(1) as f64);
            if let Some(all) = one.all_started_s {
                over_alone.push(all / total);
            }
        }
        all_started.extend(one.all_started_s);
        urgent.extend(one.urgent_ms);
        total.first_task_ms.extend(one.first_task_ms);
        total.missed += one.missed;
        total.doubled += one.doubled;
    }
    let name = format!("burst (n={})", bench.burst_runs);
    let row = |metric: &str, unit: Unit, samples: &[f64]| {
        Row::new(&name, TaskKind::Noop, metric, unit, Better::Lower, samples)
    };
    let mut rows = vec![
        row(
            "due second → every first task started",
            Unit::S,
            &all_started,
        ),
        row(
            "due second → first task started",
            Unit::Ms,
            &total.first_task_ms,
        ),
        row(
            "priority-10 DAG due 1 s into it → its task started",
            Unit::Ms,
            &urgent,
        ),
        row(
            "missed fires: no run (all repetitions)",
            Unit::Count,
            &[total.missed],
        )
        .target(Target::worst(0.0)),
        row(
            "doubled fires (all repetitions)",
            Unit::Count,
            &[total.doubled],
        )
        .target(Target::worst(0.0)),
    ];
    let slots = bench.runners.slots;
    rows.extend([
        row(
            &format!(
                "engine alone (no NATS, no roles): create the runs, {} fires a transaction",
                datajump_resolver::FIRE_BATCH
            ),
            Unit::S,
            &alone_create,
        ),
        row(
            &format!("engine alone: claim and end their tasks, {slots} of each a transaction"),
            Unit::S,
            &alone_claim_end,
        ),
        row("engine alone: both", Unit::S, &alone_total),
        row(
            "engine alone: writer time per run",
            Unit::Ms,
            &alone_per_run,
        ),
        row(
            "every first task started ÷ engine alone",
            Unit::Ratio,
            &over_alone,
        ),
    ]);
    if bench.burst_runs == 10_000 {
        rows[0] = rows[0].clone().target(Target::worst(TARGET_ALL_STARTED_S));
        rows[2] = rows[2].clone().target(Target::worst(TARGET_URGENT_MS));
    }
    Ok(rows)
}

fn dag(index: usize) -> String {
    let header = "schedules:\n  - cron: \"0 * * * * ?\"\n    timezone: UTC\n    catchup: none\n";
    dag_yaml(
        &format!("burst_{index:05}"),
        TaskKind::Noop,
        &chain::tasks(1),
        header,
    )
}

/// A DAG whose one task has priority 10 (so the DAG fires at 10 too), due
/// a second after the burst.
fn urgent_dag() -> String {
    format!(
        "name: burst_urgent\nschedules:\n  - cron: \"{URGENT_CRON}\"\n    timezone: UTC\n    catchup: none\ntasks:\n  - name: t0\n{}    priority: 10\n    retry: {{ max: 0 }}\n",
        TaskKind::Noop.yaml()
    )
}

async fn measure(bench: &Bench<'_>, system: &mut System<'_>) -> Result<BurstRep> {
    let applying = Instant::now();
    let urgent_dag_id = apply(system, &urgent_dag()).await?;
    let mut dag_ids = Vec::with_capacity(bench.burst_runs);
    for index in 0..bench.burst_runs {
        dag_ids.push(apply(system, &dag(index)).await?);
        if index > 0 && index % 2000 == 0 {
            eprintln!(
                "  burst: {index} DAGs applied ({:.0} s)",
                applying.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "  burst: {} DAGs applied in {:.1} s",
        bench.burst_runs,
        applying.elapsed().as_secs_f64()
    );
    system.start_up_process(bench.runners.slots).await?;
    let due = next_minute_after(Utc::now() + MIN_LEAD)?;
    eprintln!("  burst: every run is due at {due}");
    let expected = bench.burst_runs as u64;
    let of_the_burst = || dag_run::Entity::find().filter(dag_run::Column::LogicalTime.eq(due));
    loop {
        system.check_alive()?;
        let runs_due = Query::select()
            .column(dag_run::Column::Id)
            .from(dag_run::Entity)
            .and_where(dag_run::Column::LogicalTime.eq(due))
            .to_owned();
        let started = task_instance::Entity::find()
            .filter(task_instance::Column::StartedAt.is_not_null())
            .filter(task_instance::Column::DagRunId.in_subquery(runs_due))
            .count(&system.db)
            .await?;
        if started >= expected {
            break;
        }
        if Utc::now() > due + PATIENCE {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let runs: Vec<(i64, Option<i64>)> = of_the_burst()
        .select_only()
        .column(dag_run::Column::Id)
        .column(dag_run::Column::ScheduleId)
        .into_tuple()
        .all(&system.db)
        .await?;
    let starts: HashMap<i64, Option<DateTime<Utc>>> = task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::DagRunId)
        .column(task_instance::Column::StartedAt)
        .into_tuple::<(i64, Option<DateTime<Utc>>)>()
        .all(&system.db)
        .await?
        .into_iter()
        .collect();
    let mut out = BurstRep::default();
    let mut schedules = std::collections::HashSet::new();
    let mut last = None;
    let mut all_started = true;
    for (run, schedule) in &runs {
        if !schedules.insert(*schedule) {
            out.doubled += 1.0;
        }
        match starts.get(run).copied().flatten() {
            Some(start) => {
                out.first_task_ms.push(ms(start - due));
                last = last.max(Some(start));
            }
            None => all_started = false,
        }
    }
    out.missed = expected.saturating_sub(schedules.len() as u64) as f64;
    let urgent_due = due + chrono::TimeDelta::seconds(1);
    let urgent_run: Option<i64> = dag_run::Entity::find()
        .select_only()
        .column(dag_run::Column::Id)
        .filter(dag_run::Column::DagId.eq(urgent_dag_id))
        .filter(dag_run::Column::LogicalTime.eq(urgent_due))
        .into_tuple()
        .one(&system.db)
        .await?;
    out.urgent_ms = urgent_run
        .and_then(|run| starts.get(&run).copied().flatten())
        .map(|start| ms(start - urgent_due));
    if all_started && out.missed == 0.0 {
        out.all_started_s = last.map(|last| secs(last - due));
    }
    settle(system, due).await?;
    system.stop_up_process().await;
    out.engine_alone =
        Some(engine_alone::run_one_task_dags(&system.db, &dag_ids, bench.runners.slots).await?);
    Ok(out)
}

/// Waits until every run of the burst (and the urgent DAG's) has finished,
/// so that the engine-alone runs of the same DAGs start in free run slots.
async fn settle(system: &mut System<'_>, due: DateTime<Utc>) -> Result<()> {
    loop {
        system.check_alive()?;
        let unfinished = dag_run::Entity::find()
            .filter(dag_run::Column::FinishedAt.is_null())
            .count(&system.db)
            .await?;
        if unfinished == 0 {
            return Ok(());
        }
        if Utc::now() > due + PATIENCE {
            bail!("{unfinished} runs of the burst had not finished {PATIENCE:?} after it was due");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The first whole minute at or after `at`.
fn next_minute_after(at: DateTime<Utc>) -> Result<DateTime<Utc>> {
    let minute = at
        .with_second(0)
        .and_then(|t| t.with_nanosecond(0))
        .context("bad time")?;
    let next = if minute < at {
        minute + chrono::TimeDelta::minutes(1)
    } else {
        minute
    };
    if next <= Utc::now() {
        bail!("the burst's minute passed before it was due");
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_burst_is_due_at_the_next_whole_minute() {
        let at = Utc::now() + chrono::TimeDelta::hours(1);
        let due = next_minute_after(at).expect("a later minute");
        assert_eq!(due.second(), 0);
        assert!(due >= at && due - at < chrono::TimeDelta::minutes(1));
        let whole = due;
        assert_eq!(next_minute_after(whole).expect("itself"), whole);
        assert!(next_minute_after(Utc::now() - chrono::TimeDelta::hours(1)).is_err());
    }

    #[test]
    fn burst_dags_are_valid_and_share_one_cron() {
        let file = datajump_shared::dag_file::DagFile::parse(&dag(42)).expect("valid");
        assert_eq!(file.name, "burst_00042");
        assert!(dag(1).contains("cron: \"0 * * * * ?\""));
        let urgent = datajump_shared::dag_file::DagFile::parse(&urgent_dag()).expect("valid");
        assert_eq!(urgent.fire_priority(), 10, "it fires at its task's level");
    }
}
