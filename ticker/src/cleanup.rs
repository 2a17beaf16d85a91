//! Retention: what is older than its retention period is removed — finished
//! runs with their task instances, executions, dependency waits and full
//! logs (their DAG versions' plans stay, for audit); dataset events and
//! triggers, but for those data schedules still read; alerts and audit
//! entries on periods of their own — and `dj_ticker` keys of schedules
//! that no longer exist are dropped.
//!
//! It runs inside the ticker because the ticker already owns everything
//! time-driven; two tickers cleaning at once only race into deletes of rows
//! that are already gone. Every delete is a short transaction whose batch
//! adapts so that it holds the write lock at most [`LOCK_BUDGET`]
//! ([`Batch`]): on SQLite one writer serves the whole system, and a
//! cleanup that held it for seconds would stall dispatch for as long.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use datajump_nats::Bus;
use datajump_shared::entities::{
    alert, audit_log, dag_run, dataset_event, dataset_trigger, dependency_wait, execution,
    large_output, schedule, task_instance,
};
use futures::StreamExt;
use sea_orm::sea_query::Query;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::Config;

/// How long each kind of history is kept; `None` keeps it forever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Finished runs, with everything of theirs, and dataset events and
    /// triggers.
    pub runs: Option<chrono::Duration>,
    /// Alerts, delivered or not.
    pub alerts: Option<chrono::Duration>,
    /// Audit log entries.
    pub audit: Option<chrono::Duration>,
}

/// Longest pause between cleanups.
const AT_MOST_EVERY: Duration = Duration::from_secs(3600);
/// Shortest pause between cleanups, however short a period.
const AT_LEAST_EVERY: Duration = Duration::from_secs(1);

impl Retention {
    /// How often to clean: a tenth of the shortest period, so nothing
    /// outlives its period by more than a tenth, at most hourly; `None`
    /// when everything is kept forever.
    pub fn every(&self) -> Option<Duration> {
        [self.runs, self.alerts, self.audit]
            .into_iter()
            .flatten()
            .filter_map(|period| period.to_std().ok())
            .min()
            .map(|shortest| (shortest / 10).clamp(AT_LEAST_EVERY, AT_MOST_EVERY))
    }
}

/// What one cleanup removed, and how it held the write lock doing so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Removed {
    /// Finished runs.
    pub runs: usize,
    /// Dataset events.
    pub dataset_events: usize,
    /// Data schedules' triggers.
    pub dataset_triggers: usize,
    /// Alerts.
    pub alerts: usize,
    /// Audit log entries.
    pub audit: usize,
    /// Delete transactions it took.
    pub transactions: usize,
    /// The longest any of them held the write lock.
    pub longest_hold: Duration,
    /// How long they held it in all.
    pub held: Duration,
}

impl Removed {
    fn is_empty(&self) -> bool {
        self.transactions == 0
    }
}

/// A cleanup under way: what it removed so far, and what paces it.
struct Pace {
    removed: Removed,
    began: Instant,
    /// How often cleanups start ([`Retention::every`]).
    period: Duration,
}

impl Pace {
    fn new(period: Duration) -> Pace {
        Pace {
            removed: Removed::default(),
            began: Instant::now(),
            period,
        }
    }

    /// Notes a delete transaction that held the write lock for `held`, and
    /// gives the lock to others for a while ([`rest_after`]).
    async fn held(&mut self, held: Duration) {
        let removed = &mut self.removed;
        removed.transactions += 1;
        removed.longest_hold = removed.longest_hold.max(held);
        removed.held += held;
        tokio::time::sleep(rest_after(held, self.began.elapsed(), self.period)).await;
    }
}

/// How long a cleanup waits after a delete that held the write lock for
/// `held`, once it has been cleaning for `cleaning_for`: [`REST_PER_HOLD`]
/// times as long while it is within its `period`, so it takes at most a
/// quarter of the writer; past its period it has more to remove than one
/// period's history, the system writes faster than it removes, and it
/// rests less the longer it runs (at twice its period it takes two fifths
/// of the writer, at six times two thirds): dispatch slows while it
/// catches up, where a fixed share would let the database grow without
/// bound.
fn rest_after(held: Duration, cleaning_for: Duration, period: Duration) -> Duration {
    let rest = held * REST_PER_HOLD;
    if cleaning_for <= period {
        return rest;
    }
    rest.mul_f64(period.as_secs_f64() / cleaning_for.as_secs_f64())
}

pub(crate) async fn run(config: &Config, bus: &Bus, shutdown: &CancellationToken) {
    let Some(every) = config.retention.every() else {
        return;
    };
    while !shutdown.is_cancelled() {
        let started = Instant::now();
        match clean(config, bus, Utc::now()).await {
            Ok(removed) if removed.is_empty() => {}
            Ok(removed) => info!(
                ?removed,
                took_ms = started.elapsed().as_millis(),
                "history past its retention removed"
            ),
            Err(e) => warn!(error = %e, "retention cleanup failed; the next one retries"),
        }
        if let Err(e) = drop_stale_ticker_keys(config, bus).await {
            warn!(error = %e, "cannot clean dj_ticker keys");
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {},
            () = shutdown.cancelled() => {},
        }
    }
}

/// Removes everything older than its period at `now`.
pub async fn clean(config: &Config, bus: &Bus, now: DateTime<Utc>) -> Result<Removed, DbErr> {
    let retention = config.retention;
    let before = |period: Option<chrono::Duration>| period.map(|period| now - period);
    let mut pace = Pace::new(retention.every().unwrap_or(AT_MOST_EVERY));
    if let Some(cutoff) = before(retention.runs) {
        pace.removed.runs = remove_old_runs(config, bus, cutoff, &mut pace).await?;
        pace.removed.dataset_events = remove_old_dataset_events(config, cutoff, &mut pace).await?;
        pace.removed.dataset_triggers =
            remove_old_dataset_triggers(config, cutoff, &mut pace).await?;
    }
    if let Some(cutoff) = before(retention.alerts) {
        pace.removed.alerts = remove_old_alerts(config, cutoff, &mut pace).await?;
    }
    if let Some(cutoff) = before(retention.audit) {
        pace.removed.audit = remove_old_audit(config, cutoff, &mut pace).await?;
    }
    Ok(pace.removed)
}

/// The longest a cleanup transaction should hold the write lock.
pub const LOCK_BUDGET: Duration = Duration::from_millis(20);
/// How many times as long as a cleanup transaction held the write lock the
/// cleanup waits before its next one, while it is within its period
/// ([`rest_after`]): it takes at most a quarter of the writer's time. Back to back, its transactions took turns with
/// dispatch's at the lock and halved what dispatch could commit while it
/// ran, so a cleanup of a minute's runs under load left seconds of backlog.
const REST_PER_HOLD: u32 = 3;
/// Most rows one cleanup transaction deletes, however fast.
const MAX_BATCH: u64 = 5_000;

/// How many rows the next cleanup transaction deletes: halved (or cut in
/// proportion) when one held the lock past [`LOCK_BUDGET`], doubled when
/// one took under half of it. Rows cost very different amounts (a run
/// with a thousand instances against a run of one), so no fixed size
/// fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    size: u64,
}

impl Default for Batch {
    fn default() -> Self {
        Batch { size: 64 }
    }
}

impl Batch {
    /// Rows to take now.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Learns from a transaction of [`Batch::size`] rows that held the
    /// lock for `held`.
    pub fn held(&mut self, held: Duration) {
        if held > LOCK_BUDGET {
            // Aim at three quarters of the budget, at least halving.
            let fit =
                u128::from(self.size) * LOCK_BUDGET.as_micros() * 3 / (held.as_micros().max(1) * 4);
            self.size = u64::try_from(fit)
                .unwrap_or(u64::MAX)
                .min(self.size / 2)
                .max(1);
        } else if held < LOCK_BUDGET / 2 {
            self.size = (self.size * 2).min(MAX_BATCH);
        }
    }
}

/// Removes finished runs that ended before `cutoff`; returns how many.
async fn remove_old_runs(
    config: &Config,
    bus: &Bus,
    cutoff: DateTime<Utc>,
    pace: &mut Pace,
) -> Result<usize, DbErr> {
    let logs = bus
        .js()
        .get_object_store(bus.names().logs_bucket())
        .await
        .ok();
    let mut batch = Batch::default();
    let mut removed = 0;
    loop {
        let runs: Vec<i64> = dag_run::Entity::find()
            .select_only()
            .column(dag_run::Column::Id)
            .filter(dag_run::Column::FinishedAt.lt(cutoff))
            .order_by_asc(dag_run::Column::Id)
            .limit(batch.size())
            .into_tuple()
            .all(&config.db)
            .await?;
        if runs.is_empty() {
            return Ok(removed);
        }
        // Executions are reached through their instances: `execution` has
        // no index on its run (every attempt's insert would pay for one), so
        // a filter on `dag_run_id` read the whole table, and did so inside
        // the write lock.
        let instances = Query::select()
            .column(task_instance::Column::Id)
            .from(task_instance::Entity)
            .and_where(task_instance::Column::DagRunId.is_in(runs.clone()))
            .to_owned();
        let log_names: Vec<Option<String>> = execution::Entity::find()
            .select_only()
            .column(execution::Column::LogPath)
            .filter(execution::Column::TaskInstanceId.in_subquery(instances.clone()))
            .into_tuple()
            .all(&config.db)
            .await?;
        let started = Instant::now();
        let txn = datajump_store::db::begin_write(&config.db).await?;
        execution::Entity::delete_many()
            .filter(execution::Column::TaskInstanceId.in_subquery(instances))
            .exec(&txn)
            .await?;
        dependency_wait::Entity::delete_many()
            .filter(dependency_wait::Column::WaiterRunId.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        large_output::Entity::delete_many()
            .filter(large_output::Column::DagRunId.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        task_instance::Entity::delete_many()
            .filter(task_instance::Column::DagRunId.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        dag_run::Entity::delete_many()
            .filter(dag_run::Column::Id.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        txn.commit().await?;
        let held = started.elapsed();
        batch.held(held);
        pace.held(held).await;
        if let Some(logs) = &logs {
            for name in log_names.into_iter().flatten() {
                let _ = logs.delete(name.as_str()).await;
            }
        }
        removed += runs.len();
    }
}

/// Removes dataset events recorded before `cutoff` but the newest of each
/// dataset and partition: a data schedule waiting for several datasets
/// reads the last event of each (docs/ARCHITECTURE.md "Datasets"), and a
/// partition's may be the one that completes it months later.
async fn remove_old_dataset_events(
    config: &Config,
    cutoff: DateTime<Utc>,
    pace: &mut Pace,
) -> Result<usize, DbErr> {
    let newest = Query::select()
        .expr(dataset_event::Column::Id.max())
        .from(dataset_event::Entity)
        .group_by_columns([
            dataset_event::Column::ProjectId,
            dataset_event::Column::Dataset,
            dataset_event::Column::Partition,
        ])
        .to_owned();
    remove_in_batches(
        config,
        pace,
        |size| {
            dataset_event::Entity::find()
                .select_only()
                .column(dataset_event::Column::Id)
                .filter(dataset_event::Column::CreatedAt.lt(cutoff))
                .filter(dataset_event::Column::Id.not_in_subquery(newest.clone()))
                .order_by_asc(dataset_event::Column::Id)
                .limit(size)
                .into_tuple()
        },
        |ids| dataset_event::Entity::delete_many().filter(dataset_event::Column::Id.is_in(ids)),
    )
    .await
}

/// Removes data schedules' triggers written before `cutoff` but each
/// schedule's latest: how far a schedule has consumed unpartitioned
/// events is read from it. (A trigger whose event is another schedule's
/// latest is kept too, which costs a row and saves a tuple comparison.)
async fn remove_old_dataset_triggers(
    config: &Config,
    cutoff: DateTime<Utc>,
    pace: &mut Pace,
) -> Result<usize, DbErr> {
    let latest = Query::select()
        .expr(dataset_trigger::Column::EventId.max())
        .from(dataset_trigger::Entity)
        .group_by_col(dataset_trigger::Column::ScheduleId)
        .to_owned();
    remove_in_batches(
        config,
        pace,
        |size| {
            dataset_trigger::Entity::find()
                .select_only()
                .column(dataset_trigger::Column::Id)
                .filter(dataset_trigger::Column::CreatedAt.lt(cutoff))
                .filter(dataset_trigger::Column::EventId.not_in_subquery(latest.clone()))
                .order_by_asc(dataset_trigger::Column::Id)
                .limit(size)
                .into_tuple()
        },
        |ids| dataset_trigger::Entity::delete_many().filter(dataset_trigger::Column::Id.is_in(ids)),
    )
    .await
}

/// Removes alerts made before `cutoff`, delivered or not.
async fn remove_old_alerts(
    config: &Config,
    cutoff: DateTime<Utc>,
    pace: &mut Pace,
) -> Result<usize, DbErr> {
    remove_in_batches(
        config,
        pace,
        |size| {
            alert::Entity::find()
                .select_only()
                .column(alert::Column::Id)
                .filter(alert::Column::CreatedAt.lt(cutoff))
                .order_by_asc(alert::Column::Id)
                .limit(size)
                .into_tuple()
        },
        |ids| alert::Entity::delete_many().filter(alert::Column::Id.is_in(ids)),
    )
    .await
}

/// Removes audit entries written before `cutoff`.
async fn remove_old_audit(
    config: &Config,
    cutoff: DateTime<Utc>,
    pace: &mut Pace,
) -> Result<usize, DbErr> {
    remove_in_batches(
        config,
        pace,
        |size| {
            audit_log::Entity::find()
                .select_only()
                .column(audit_log::Column::Id)
                .filter(audit_log::Column::At.lt(cutoff))
                .order_by_asc(audit_log::Column::Id)
                .limit(size)
                .into_tuple()
        },
        |ids| audit_log::Entity::delete_many().filter(audit_log::Column::Id.is_in(ids)),
    )
    .await
}

/// Deletes, a [`Batch`] per transaction, the rows whose ids `select` finds
/// (at most `size` of them, oldest first), until it finds none; returns
/// how many went.
async fn remove_in_batches<E, S, D>(
    config: &Config,
    pace: &mut Pace,
    select: S,
    delete: D,
) -> Result<usize, DbErr>
where
    E: EntityTrait,
    S: Fn(u64) -> sea_orm::Selector<sea_orm::SelectGetableTuple<i64>>,
    D: Fn(Vec<i64>) -> sea_orm::DeleteMany<E>,
{
    let mut batch = Batch::default();
    let mut removed = 0;
    loop {
        let ids = select(batch.size()).all(&config.db).await?;
        if ids.is_empty() {
            return Ok(removed);
        }
        removed += ids.len();
        let started = Instant::now();
        let txn = datajump_store::db::begin_write(&config.db).await?;
        delete(ids).exec(&txn).await?;
        txn.commit().await?;
        let held = started.elapsed();
        batch.held(held);
        pace.held(held).await;
    }
}

async fn drop_stale_ticker_keys(
    config: &Config,
    bus: &Bus,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let kv = datajump_nats::key_value(bus.js(), &bus.names().ticker_bucket()).await?;
    // Ids only: a ticker may hold a million schedules.
    let live: HashSet<i64> = schedule::Entity::find()
        .select_only()
        .column(schedule::Column::Id)
        .into_tuple()
        .all(&config.db)
        .await?
        .into_iter()
        .collect();
    let mut keys = kv.keys().await?;
    while let Some(key) = keys.next().await {
        let key = key?;
        // Other installations' keys are theirs to drop.
        let stale = bus
            .installation()
            .ticker_key_schedule(&key)
            .is_some_and(|id| !live.contains(&id));
        if stale {
            kv.purge(&key).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleanup_past_its_period_rests_less_the_longer_it_runs() {
        let held = Duration::from_millis(20);
        let period = Duration::from_secs(60);
        let share = |cleaning_for: Duration| {
            let rest = rest_after(held, cleaning_for, period);
            held.as_secs_f64() / (held + rest).as_secs_f64()
        };
        let within = share(Duration::from_secs(30));
        assert!(
            (within - 0.25).abs() < 1e-9,
            "within its period: a quarter, got {within}"
        );
        assert!(
            (share(period) - 0.25).abs() < 1e-9,
            "at its period: still a quarter"
        );
        let twice = share(period * 2);
        assert!(
            (twice - 0.4).abs() < 1e-9,
            "at twice its period: two fifths, got {twice}"
        );
        let six = share(period * 6);
        assert!(
            (six - 2.0 / 3.0).abs() < 1e-9,
            "at six times: two thirds, got {six}"
        );
        assert!(
            share(period * 60) > 0.9,
            "far behind, it takes most of the writer"
        );
    }

    #[test]
    fn a_batch_shrinks_past_the_budget_and_grows_well_under_it() {
        let mut batch = Batch::default();
        let start = batch.size();
        batch.held(Duration::from_millis(5));
        assert_eq!(batch.size(), start * 2, "a quarter of the budget: doubled");
        batch.held(Duration::from_millis(15));
        assert_eq!(batch.size(), start * 2, "within the budget: kept");
        batch.held(Duration::from_millis(30));
        assert_eq!(batch.size(), start, "half again the budget: halved");
        batch.held(Duration::from_millis(300));
        assert_eq!(
            batch.size(),
            start * 15 / 300,
            "fifteen times the budget: cut to fit three quarters of it"
        );
        for _ in 0..20 {
            batch.held(Duration::from_secs(1));
        }
        assert_eq!(batch.size(), 1, "never below one row");
        for _ in 0..20 {
            batch.held(Duration::ZERO);
        }
        assert_eq!(batch.size(), MAX_BATCH, "never past the cap");
    }

    #[test]
    fn cleanups_come_a_tenth_of_the_shortest_period_apart_at_most_hourly() {
        let days = |n| Some(chrono::Duration::days(n));
        let kept = Retention {
            runs: days(30),
            alerts: days(30),
            audit: days(365),
        };
        assert_eq!(kept.every(), Some(AT_MOST_EVERY));
        let soak = Retention {
            runs: Some(chrono::Duration::minutes(10)),
            ..kept
        };
        assert_eq!(soak.every(), Some(Duration::from_secs(60)));
        assert_eq!(Retention::default().every(), None, "everything kept");
    }
}
