//! The deadline scan: act on instances whose `deadline_at` has passed and
//! runs whose `timeout_at` has, and say when work waits on a queue that no
//! live runner serves.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::Utc;
use datajump_nats::Bus;
use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::metrics::{self, RetryCause};
use datajump_shared::{RunId, RunStatus, TaskStatus};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::{Config, TickerError};

/// The longest the scan sleeps: deadlines set by other processes (a
/// runner's failed attempt) are seen at most this late, and since every
/// deadline is set at least its interval ahead, a retry of a second or more
/// is seen before it is due and then woken for on time.
const SCAN_EVERY: Duration = Duration::from_secs(1);
/// Slept past a deadline, so the row is due when the scan wakes.
const WAKE_MARGIN: Duration = Duration::from_millis(2);
/// Rows handled per scan; the rest wait a second.
const BATCH: u64 = 500;

pub(crate) async fn run(
    config: &Config,
    bus: &Bus,
    shutdown: &CancellationToken,
) -> Result<(), TickerError> {
    let (mut seen_last, mut unserved) = (BTreeMap::new(), BTreeMap::new());
    let mut next_queue_check = Instant::now();
    while !shutdown.is_cancelled() {
        let nap = match scan(config, bus).await {
            Ok(next) => until(next),
            Err(e) => {
                warn!(error = %e, "deadline scan failed; retrying");
                SCAN_EVERY
            }
        };
        if Instant::now() >= next_queue_check {
            next_queue_check = Instant::now() + config.periods.queue_check_every;
            if let Err(e) = send_owed_trigger_fires(config, bus).await {
                warn!(error = %e, "cannot look for owed triggers; retrying");
            }
            match unserved_queues(config, bus).await {
                Ok(seen) => {
                    // Unserved only when two checks in a row say so: one
                    // listing of the heartbeats can miss a live runner (seen
                    // once under a machine-wide overload), and a false
                    // alarm misleads an operator.
                    let confirmed: BTreeMap<String, u64> = seen
                        .iter()
                        .filter(|(queue, _)| seen_last.contains_key(*queue))
                        .map(|(queue, waiting)| (queue.clone(), *waiting))
                        .collect();
                    report_unserved(&unserved, &confirmed);
                    metrics::set_unserved_queues(confirmed.clone());
                    unserved = confirmed;
                    seen_last = seen;
                }
                Err(e) => warn!(error = %e, "cannot check queues for live runners; retrying"),
            }
        }
        tokio::select! {
            () = tokio::time::sleep(nap) => {},
            () = shutdown.cancelled() => {},
        }
    }
    Ok(())
}

/// Runs that ended longer ago are not looked at: inside the fire stream's
/// ten-minute duplicate window, a fire that was sent is dropped again by
/// its id.
const OWED_FIRES_WITHIN: chrono::Duration = chrono::Duration::minutes(9);

/// Sends the fires that runs ended SUCCESS and data schedules met owe and
/// that made no run: lost between a commit and its publish, or owed by a
/// run a mark made SUCCESS.
async fn send_owed_trigger_fires(config: &Config, bus: &Bus) -> Result<(), QueueCheckError> {
    let now = Utc::now();
    let owed = datajump_engine::owed_trigger_fires(
        &config.db,
        now - OWED_FIRES_WITHIN,
        now - chrono_duration(config.periods.owed_fires_after),
    )
    .await?;
    for fire in owed {
        if !bus.publish_fire(&fire).await? {
            info!(dag_id = fire.dag_id, dedup_key = %fire.dedup_key, "trigger sent: its upstream run ended SUCCESS or its datasets were written, and no run of it exists");
        }
    }
    Ok(())
}

/// How long to sleep before the next scan: until the next deadline, but
/// not longer than [`SCAN_EVERY`].
fn until(next: Option<chrono::DateTime<Utc>>) -> Duration {
    next.map_or(SCAN_EVERY, |at| {
        (at - Utc::now())
            .to_std()
            .map_or(Duration::ZERO, |left| left + WAKE_MARGIN)
            .min(SCAN_EVERY)
    })
}

/// Why queues could not be checked for live runners.
#[derive(Debug, thiserror::Error)]
enum QueueCheckError {
    #[error("database: {0}")]
    Db(#[from] DbErr),
    #[error(transparent)]
    Nats(#[from] datajump_nats::NatsError),
}

/// Tasks QUEUED for a while, per queue that no live runner serves. Cheap:
/// the heartbeats are one small bucket, and the count reads only QUEUED
/// rows through the `(status, queue)` index.
async fn unserved_queues(
    config: &Config,
    bus: &Bus,
) -> Result<BTreeMap<String, u64>, QueueCheckError> {
    let waiting: Vec<(String, i64)> = task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::Queue)
        .column_as(Expr::col(task_instance::Column::Id).count(), "waiting")
        .filter(task_instance::Column::Status.eq(TaskStatus::Queued))
        .filter(
            task_instance::Column::QueuedAt
                .lte(Utc::now() - chrono_duration(config.periods.unserved_after)),
        )
        .group_by(task_instance::Column::Queue)
        .into_tuple()
        .all(&config.db)
        .await?;
    if waiting.is_empty() {
        return Ok(BTreeMap::new());
    }
    let served = datajump_nats::served_queues(bus.js(), bus.names()).await?;
    Ok(waiting
        .into_iter()
        .filter(|(queue, _)| !served.contains(queue))
        .map(|(queue, count)| (queue, u64::try_from(count).unwrap_or_default()))
        .collect())
}

/// Logs what changed since the last check, so a queue left without runners
/// is named once (and again when its backlog changes), not every check.
fn report_unserved(before: &BTreeMap<String, u64>, now: &BTreeMap<String, u64>) {
    for (queue, waiting) in now {
        if before.get(queue) != Some(waiting) {
            warn!(queue = %queue, waiting, "no live runner serves this queue: its tasks wait until one does (datajump runner --queues {queue})");
        }
    }
    for queue in before.keys().filter(|q| !now.contains_key(*q)) {
        info!(queue = %queue, "queue served again, or no longer has waiting tasks");
    }
}

/// Handles what is due and returns when the next deadline falls (now,
/// when a full batch leaves more due). A deadline that was already due
/// when the scan began and is still there could not be acted on (its
/// publish failed, its row changed meanwhile): it is left to the next
/// regular scan rather than retried in a tight loop.
async fn scan(config: &Config, bus: &Bus) -> Result<Option<chrono::DateTime<Utc>>, DbErr> {
    const WITH_DEADLINES: [TaskStatus; 4] = [
        TaskStatus::Queued,
        TaskStatus::UpForRetry,
        TaskStatus::UpForReschedule,
        TaskStatus::Pending,
    ];
    let now = Utc::now();
    let due = task_instance::Entity::find()
        .filter(task_instance::Column::DeadlineAt.lte(now))
        .filter(task_instance::Column::Status.is_in(WITH_DEADLINES))
        .order_by_asc(task_instance::Column::DeadlineAt)
        .limit(BATCH)
        .all(&config.db)
        .await?;
    let more_due = due.len() as u64 == BATCH;
    for row in due {
        let owed = match row.status {
            TaskStatus::UpForRetry => {
                let queued =
                    datajump_engine::retry_due(&config.db, row.instance_id(), row.status, now)
                        .await?;
                if queued.is_some() {
                    metrics::task_retried(RetryCause::Failure);
                    info!(dag_run_id = row.dag_run_id, task_instance_id = row.id, task = %row.task_name, "retry due: task queued");
                }
                queued
            }
            TaskStatus::UpForReschedule => {
                let queued =
                    datajump_engine::retry_due(&config.db, row.instance_id(), row.status, now)
                        .await?;
                if queued.is_some() {
                    debug!(dag_run_id = row.dag_run_id, task_instance_id = row.id, task = %row.task_name, pokes = row.pokes, "sensor check due: task queued");
                }
                queued
            }
            TaskStatus::Pending => {
                Some(datajump_engine::wait_timed_out(&config.db, row.instance_id(), now).await?)
            }
            _ => datajump_engine::queued_due(&config.db, &row, now).await?,
        };
        if let Some(owed) = owed
            && let Err(e) = owed.publish(bus).await
        {
            warn!(task_instance_id = row.id, error = %e, "publishing after the deadline scan failed; the next scan retries");
        }
    }
    let more_runs_due = time_out_runs(config, bus, now).await?;
    if more_due || more_runs_due {
        return Ok(Some(now));
    }
    let next = task_instance::Entity::find()
        .select_only()
        .column_as(task_instance::Column::DeadlineAt.min(), "next")
        .filter(task_instance::Column::Status.is_in(WITH_DEADLINES))
        .filter(task_instance::Column::DeadlineAt.gt(now))
        .into_tuple::<Option<chrono::DateTime<Utc>>>()
        .one(&config.db)
        .await?
        .flatten();
    let next_run = dag_run::Entity::find()
        .select_only()
        .column_as(dag_run::Column::TimeoutAt.min(), "next")
        .filter(dag_run::Column::Status.eq(RunStatus::Running))
        .filter(dag_run::Column::TimeoutAt.gt(now))
        .into_tuple::<Option<chrono::DateTime<Utc>>>()
        .one(&config.db)
        .await?
        .flatten();
    Ok(next.into_iter().chain(next_run).min())
}

/// Ends TIMEOUT the RUNNING runs whose run timeout has passed, killing
/// their live instances, and publishes what that owes; true when a full
/// batch leaves more due.
async fn time_out_runs(
    config: &Config,
    bus: &Bus,
    now: chrono::DateTime<Utc>,
) -> Result<bool, DbErr> {
    let due: Vec<i64> = dag_run::Entity::find()
        .select_only()
        .column(dag_run::Column::Id)
        .filter(dag_run::Column::Status.eq(RunStatus::Running))
        .filter(dag_run::Column::TimeoutAt.lte(now))
        .order_by_asc(dag_run::Column::TimeoutAt)
        .limit(BATCH)
        .into_tuple()
        .all(&config.db)
        .await?;
    let more_due = due.len() as u64 == BATCH;
    for run_id in due {
        let Some((killed, effects)) =
            datajump_engine::run_timed_out(&config.db, RunId(run_id), now).await?
        else {
            continue;
        };
        warn!(
            dag_run_id = run_id,
            killed = killed.len(),
            "run timed out: its unfinished tasks were killed"
        );
        if let Err(e) = effects.publish(bus).await {
            warn!(dag_run_id = run_id, error = %e, "publishing after a run timeout failed; the tasks' runners still see their kill when they next check");
        }
    }
    Ok(more_due)
}

/// `period` as a span of wall-clock time; the periods are seconds, far
/// inside chrono's range.
fn chrono_duration(period: Duration) -> chrono::Duration {
    chrono::Duration::from_std(period).unwrap_or(chrono::Duration::MAX)
}
