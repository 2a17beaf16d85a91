//! `schedules1m`: a ticker serving a million schedules — how long it takes
//! to start, how much memory it holds, and how late its fires are while
//! they fire.
//!
//! Creating a million DAGs through `dag apply` one at a time would take
//! hours, so this bypasses it on purpose: one template DAG (a NOOP task and
//! a daily schedule) goes through the catalog, then its `dag`, `task` and
//! `schedule` rows are copied with new ids, names and cron expressions in
//! multi-row INSERTs, one transaction per batch. What is measured is the
//! ticker, not the catalog. Schedule `i` of `n` fires daily at second
//! `i × 86400 / n` of the UTC day, so about `n / 86400` fire each second.
//!
//! `dj_ticker` is prefilled with each schedule's latest fire, as a ticker
//! that ran until just before would have left it, so the start reads a
//! million last fires and catches up only what fell due while the bench
//! wrote them. The ticker runs alone as a `datajump ticker` process — its
//! resident memory is its own — and no resolver or runner runs: the fire
//! is the measured event, seen by a core NATS subscriber on `dj.fire.>`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use chrono::{DateTime, Utc};
use datajump_shared::entities::{dag, schedule, task};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, IntoActiveModel,
    QueryFilter,
};

use super::{Bench, FireWatch, TaskKind, apply, dag_yaml, wide};
use crate::procfs;
use crate::report::{Row, Target, Unit};
use crate::stats::Better;
use crate::system::System;

/// The issue's size.
pub const ISSUE_SCHEDULES: usize = 1_000_000;
const DAY_SECS: i64 = 86_400;
/// Rows per INSERT: a `task` row has 23 columns, so 1,000 rows stay under
/// SQLite's 32,766 bound parameters (and PostgreSQL's 65,535).
const INSERT_BATCH: usize = 1_000;
/// `dj_ticker` writes in flight before the bench waits for their acks.
/// Below async-nats' 5,000 acks in flight per JetStream context: past
/// that, a publish waits for an ack that nobody is awaiting yet.
const PREFILL_IN_FLIGHT: usize = 1_000;
/// Seconds between the ticker's "schedules loaded" and the window, so the
/// window measures a settled ticker.
const SETTLE_SECS: i64 = 2;
/// How long after the window a fire of the window may still arrive.
const DRAIN: Duration = Duration::from_secs(10);
/// A ticker not ready by then has failed the workload.
const READY_TIMEOUT: Duration = Duration::from_secs(900);
/// The ticker's log line that marks its heap ready.
const READY_LINE: &str = "schedules loaded";

/// Issue 6's targets for a million schedules.
mod figures {
    pub const START_S: f64 = 30.0;
    pub const RSS_MIB: f64 = 1024.0;
    pub const LAG_P99_MS: f64 = 1000.0;
}

/// What one repetition observed.
#[derive(Default)]
struct Rep {
    startup_s: Vec<f64>,
    load_s: Vec<f64>,
    peak_mib: Vec<f64>,
    end_mib: Vec<f64>,
    lag_ms: Vec<f64>,
    expected: f64,
    missed: f64,
    doubled: f64,
    unexpected: f64,
    catch_up: f64,
}

impl Rep {
    fn add(&mut self, other: Rep) {
        self.startup_s.extend(other.startup_s);
        self.load_s.extend(other.load_s);
        self.peak_mib.extend(other.peak_mib);
        self.end_mib.extend(other.end_mib);
        self.lag_ms.extend(other.lag_ms);
        self.expected += other.expected;
        self.missed += other.missed;
        self.doubled += other.doubled;
        self.unexpected += other.unexpected;
        self.catch_up += other.catch_up;
    }
}

/// Runs `schedules1m` `bench.repeat` times; returns its report rows.
pub async fn run(bench: &Bench<'_>) -> Result<Vec<Row>> {
    let count = bench.schedules1m_count;
    let mut total = Rep::default();
    for rep in 1..=bench.repeat {
        let one = repetition(bench)
            .await
            .with_context(|| format!("schedules1m repetition {rep}"))?;
        eprintln!(
            "  schedules1m [{}] rep {rep}/{}: start {:.1} s, peak RSS {:.0} MiB, {} fires, missed {}, doubled {}",
            bench.backend.kind.key(),
            bench.repeat,
            one.startup_s.first().copied().unwrap_or(f64::NAN),
            one.peak_mib.first().copied().unwrap_or(f64::NAN),
            one.lag_ms.len(),
            one.missed,
            one.doubled
        );
        total.add(one);
    }
    let label = if count == ISSUE_SCHEDULES {
        "schedules1m".to_owned()
    } else {
        format!("schedules1m (n={count})")
    };
    let row = |metric: &str, unit: Unit, samples: &[f64]| {
        Row::new(&label, TaskKind::Noop, metric, unit, Better::Lower, samples)
    };
    Ok(vec![
        row(
            "ticker start-up, process start → heap ready",
            Unit::S,
            &total.startup_s,
        )
        .target(Target::worst(figures::START_S)),
        row(
            "of which loading: rows, dj_ticker, heap (the ticker's log)",
            Unit::S,
            &total.load_s,
        ),
        row(
            "ticker peak resident memory (VmHWM)",
            Unit::MiB,
            &total.peak_mib,
        )
        .target(Target::worst(figures::RSS_MIB)),
        row(
            "ticker resident memory at the window's end (VmRSS)",
            Unit::MiB,
            &total.end_mib,
        ),
        row(
            "fire lag, scheduled → fire seen on dj.fire.>",
            Unit::Ms,
            &total.lag_ms,
        )
        .target(Target::tail(figures::LAG_P99_MS)),
        row(
            "fires expected in the windows (all repetitions)",
            Unit::Count,
            &[total.expected],
        ),
        row(
            "missed fires (all repetitions)",
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
        row(
            "fires in the windows no schedule expects",
            Unit::Count,
            &[total.unexpected],
        ),
        row(
            "catch-up fires at start (fell due while the bench prefilled)",
            Unit::Count,
            &[total.catch_up],
        ),
    ])
}

async fn repetition(bench: &Bench<'_>) -> Result<Rep> {
    let mut system = System::start(bench.backend, bench.datajump).await?;
    let result = measure(bench, &mut system).await;
    system.stop().await;
    result
}

/// Second of the UTC day at which schedule `index` of `count` fires.
fn second_of_day(index: usize, count: usize) -> i64 {
    let second = index as u128 * DAY_SECS as u128 / count.max(1) as u128;
    i64::try_from(second).unwrap_or_default()
}

/// A Quartz expression firing daily at `second` of the day.
fn daily_cron(second: i64) -> String {
    format!(
        "{} {} {} * * ?",
        second % 60,
        second / 60 % 60,
        second / 3600
    )
}

/// The latest fire at or before `now` of a schedule firing daily at `second`.
fn latest_fire(second: i64, now: i64) -> i64 {
    let today = now - now.rem_euclid(DAY_SECS) + second;
    if today <= now {
        today
    } else {
        today - DAY_SECS
    }
}

/// Ids are offsets from the template's: the bench database is fresh, so
/// nothing else holds them.
fn offset(id: i64, index: usize) -> i64 {
    id + i64::try_from(index).unwrap_or(i64::MAX / 2)
}

/// Creates `count` one-task NOOP DAGs with a daily schedule each; returns
/// the first schedule's id (schedule `i` has that id plus `i`).
async fn create_schedules(system: &System<'_>, count: usize) -> Result<i64> {
    let header = format!(
        "schedules:\n  - cron: \"{}\"\n    timezone: UTC\n",
        daily_cron(0)
    );
    let dag_id = apply(
        system,
        &dag_yaml(
            "bench_s1m_0000000",
            TaskKind::Noop,
            &wide::tasks(1),
            &header,
        ),
    )
    .await?;
    let template_dag = dag::Entity::find_by_id(dag_id)
        .one(&system.db)
        .await?
        .context("the template DAG is missing")?;
    let template_task = task::Entity::find()
        .filter(task::Column::DagId.eq(dag_id))
        .one(&system.db)
        .await?
        .context("the template task is missing")?;
    let template_schedule = schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag_id))
        .one(&system.db)
        .await?
        .context("the template schedule is missing")?;
    for from in (1..count).step_by(INSERT_BATCH) {
        let indexes = from..(from + INSERT_BATCH).min(count);
        // reset_all marks every column as set, so each INSERT names them all.
        let dags = indexes.clone().map(|i| {
            dag::Model {
                id: offset(template_dag.id, i),
                name: format!("bench_s1m_{i:07}"),
                ..template_dag.clone()
            }
            .into_active_model()
            .reset_all()
        });
        let tasks = indexes.clone().map(|i| {
            task::Model {
                id: offset(template_task.id, i),
                dag_id: offset(template_dag.id, i),
                ..template_task.clone()
            }
            .into_active_model()
            .reset_all()
        });
        let schedules = indexes.map(|i| {
            schedule::Model {
                id: offset(template_schedule.id, i),
                dag_id: offset(template_dag.id, i),
                cron_expr: Some(daily_cron(second_of_day(i, count))),
                ..template_schedule.clone()
            }
            .into_active_model()
            .reset_all()
        });
        let txn = datajump_store::db::begin_write(&system.db).await?;
        dag::Entity::insert_many(dags)
            .exec_without_returning(&txn)
            .await?;
        task::Entity::insert_many(tasks)
            .exec_without_returning(&txn)
            .await?;
        schedule::Entity::insert_many(schedules)
            .exec_without_returning(&txn)
            .await?;
        txn.commit().await?;
    }
    if system.db.get_database_backend() == DbBackend::Postgres {
        // Explicit ids leave the sequences behind; move them past the copies.
        for table in ["dag", "task", "schedule"] {
            system
                .db
                .execute_unprepared(&format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))"
                ))
                .await?;
        }
    }
    Ok(template_schedule.id)
}

/// Writes each schedule's latest fire into `dj_ticker`, as the ticker's own
/// `kv.put` would, with many writes in flight instead of one at a time.
async fn prefill_last_fires(system: &System<'_>, first_id: i64, count: usize) -> Result<()> {
    let now = Utc::now().timestamp();
    let mut acks = Vec::with_capacity(PREFILL_IN_FLIGHT);
    for index in 0..count {
        let key = system
            .bus
            .installation()
            .ticker_key(offset(first_id, index));
        let last = latest_fire(second_of_day(index, count), now);
        let ack = system
            .bus
            .js()
            .publish(
                format!("$KV.{}.{key}", system.bus.names().ticker_bucket()),
                last.to_string().into(),
            )
            .await
            .context("cannot write dj_ticker")?;
        acks.push(ack);
        if acks.len() == PREFILL_IN_FLIGHT || index + 1 == count {
            for ack in acks.drain(..) {
                ack.await.context("dj_ticker write not acknowledged")?;
            }
        }
    }
    Ok(())
}

/// The ticker's "schedules loaded" line, once it is in `log`, without
/// colours (the log is written with ANSI escapes even into a file).
fn ready_line(log: &Path) -> Option<String> {
    std::fs::read_to_string(log)
        .ok()?
        .lines()
        .find(|l| l.contains(READY_LINE))
        .map(without_ansi)
}

fn without_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // An escape runs to its final letter (`\x1b[2m`).
            chars.by_ref().find(char::is_ascii_alphabetic);
        } else {
            out.push(c);
        }
    }
    out
}

/// The `elapsed_ms` field of the ready line, in seconds.
fn load_secs(line: &str) -> Option<f64> {
    let value = line.split_once("elapsed_ms=")?.1;
    let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
    Some(digits.parse::<f64>().ok()? / 1000.0)
}

async fn measure(bench: &Bench<'_>, system: &mut System<'_>) -> Result<Rep> {
    let count = bench.schedules1m_count;
    let key = bench.backend.kind.key();
    let creating = Instant::now();
    let first_id = create_schedules(system, count).await?;
    eprintln!(
        "  schedules1m [{key}]: {count} schedules inserted in {:.1} s",
        creating.elapsed().as_secs_f64()
    );
    let prefilling = Instant::now();
    prefill_last_fires(system, first_id, count).await?;
    eprintln!(
        "  schedules1m [{key}]: dj_ticker prefilled in {:.1} s",
        prefilling.elapsed().as_secs_f64()
    );

    // Every fire the ticker publishes, as a core subscriber sees it.
    let watcher = FireWatch::start(system).await?;

    let spawned = Instant::now();
    let (pid, log) = system.spawn_ticker_process()?;
    let line = loop {
        if let Some(line) = ready_line(&log) {
            break line;
        }
        system.check_alive()?;
        if spawned.elapsed() > READY_TIMEOUT {
            bail!("the ticker did not load its schedules within {READY_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let startup = spawned.elapsed().as_secs_f64();
    let ready_at = Utc::now();
    let window_start = ready_at.timestamp() + SETTLE_SECS;
    let seconds = i64::try_from(bench.schedules1m_seconds).unwrap_or(60);
    let window_end = window_start + seconds;
    let until = DateTime::from_timestamp(window_end, 0).context("bad window")? + DRAIN;
    // A schedule change halfway through, as a user's `dag apply` would send:
    // the window then holds one full reload, the costliest thing a ticker
    // does while it fires (its timer reload may not fall in the window).
    let change_at =
        DateTime::from_timestamp(window_start + seconds / 2, 0).context("bad window")?;
    let mut changed = false;
    while Utc::now() < until {
        system.check_alive()?;
        if !changed && Utc::now() >= change_at {
            system
                .bus
                .js()
                .client()
                .publish(system.bus.names().schedules_changed(), "".into())
                .await
                .context("cannot announce a schedule change")?;
            changed = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let peak = procfs::memory_mib(pid, "VmHWM").context("cannot read the ticker's memory")?;
    let end = procfs::memory_mib(pid, "VmRSS").context("cannot read the ticker's memory")?;
    let published = watcher.finish().await?;

    // Window seconds by second of the day (a window is shorter than a day).
    let window: HashMap<i64, i64> = (window_start..window_end)
        .map(|unix| (unix.rem_euclid(DAY_SECS), unix))
        .collect();
    let expected: HashSet<(i64, i64)> = (0..count)
        .filter_map(|index| {
            let unix = window.get(&second_of_day(index, count))?;
            Some((offset(first_id, index), *unix))
        })
        .collect();
    let mut out = Rep {
        startup_s: vec![startup],
        load_s: load_secs(&line).into_iter().collect(),
        peak_mib: vec![peak],
        end_mib: vec![end],
        expected: expected.len() as f64,
        ..Rep::default()
    };
    let mut first_seen: HashMap<(i64, i64), DateTime<Utc>> = HashMap::new();
    for (schedule_id, unix, at) in published {
        if at < ready_at {
            out.catch_up += 1.0;
        }
        if !(window_start..window_end).contains(&unix) {
            continue;
        }
        if first_seen.insert((schedule_id, unix), at).is_some() {
            out.doubled += 1.0;
        }
    }
    for (key, at) in &first_seen {
        match DateTime::from_timestamp(key.1, 0) {
            Some(scheduled) if expected.contains(key) => {
                out.lag_ms
                    .push((*at - scheduled).num_microseconds().unwrap_or(i64::MAX) as f64 / 1000.0);
            }
            _ => out.unexpected += 1.0,
        }
    }
    out.missed = expected
        .iter()
        .filter(|key| !first_seen.contains_key(key))
        .count() as f64;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_spread_over_the_day() {
        let count = 1_000_000;
        assert_eq!(second_of_day(0, count), 0);
        assert_eq!(second_of_day(count - 1, count), DAY_SECS - 1);
        let in_second = (0..count)
            .filter(|i| second_of_day(*i, count) == 43_200)
            .count();
        assert!((11..=12).contains(&in_second), "{in_second}");
        assert_eq!(daily_cron(3_723), "3 2 1 * * ?");
        let cron = datajump_cron::CronExpr::parse(&daily_cron(86_399));
        assert!(cron.is_ok(), "{cron:?}");
    }

    #[test]
    fn latest_fire_is_today_or_yesterday() {
        let noon = 1_800_000_000 - 1_800_000_000 % DAY_SECS + 43_200;
        assert_eq!(latest_fire(3_600, noon), noon - 43_200 + 3_600);
        assert_eq!(latest_fire(43_200, noon), noon);
        assert_eq!(latest_fire(50_000, noon), noon - 43_200 + 50_000 - DAY_SECS);
    }

    #[test]
    fn ready_line_gives_the_load_time() {
        let line = "2026-01-01T00:00:00Z  INFO datajump_ticker::cron_loop: schedules loaded schedules=1000000 last_fires=1000000 rows_ms=2500 last_fires_ms=9000 elapsed_ms=12345";
        assert_eq!(load_secs(line), Some(12.345));
        assert_eq!(load_secs("schedules loaded"), None);
        let coloured = "schedules loaded \x1b[3melapsed_ms\x1b[0m\x1b[2m=\x1b[0m250";
        assert_eq!(load_secs(&without_ansi(coloured)), Some(0.25));
    }
}
