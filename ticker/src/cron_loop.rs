//! Cron fires: a min-heap of next fire times over every active schedule.
//!
//! A ticker may serve a million schedules, so loading them is bulk work:
//! schedule rows stream from one query (joined to their DAG's online flag,
//! only the columns firing needs) while the last fire of every schedule
//! streams from `dj_ticker` in one pass ([`datajump_nats::kv_scan`]), both
//! at once. One query rather than keyset pages because a page's cost
//! depends on the planner: PostgreSQL without fresh statistics (right after
//! a bulk insert) planned each page as a scan of every schedule, which made
//! a million-schedule load quadratic (30 s where one pass takes a few).
//! Entries keep only what computing fires needs, and schedules with the
//! same cron text share one parsed expression.
//!
//! Reloads (on a change notice or the slow timer) run in their own task
//! while the current heap keeps firing, so a reload that takes seconds
//! delays no fire. What the old heap fires meanwhile is remembered and the
//! new heap skips it: its `dj_ticker` read may predate those fires.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::kv;
use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use datajump_cron::{CronExpr, parse_time_zone};
use datajump_nats::{Bus, NatsError};
use datajump_shared::TriggerType;
use datajump_shared::biz_date::biz_date_for;
use datajump_shared::entities::{dag, schedule};
use datajump_shared::kinds::{Catchup, ScheduleKind};
use datajump_shared::messages::{FireMsg, VERSION, scheduled_run_key};
use datajump_shared::params::Params;
use datajump_shared::subjects::Priority;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use sea_orm::{
    ColumnTrait, DbErr, EntityTrait, FromQueryResult, JoinType, QueryFilter, QuerySelect,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::suppressed::Dropped;
use crate::{Config, TickerError};

/// Schedules are reloaded at least this long apart even without a change
/// notice (a safety net: notices are core NATS and can be lost).
const RELOAD_EVERY: Duration = Duration::from_secs(30);
/// ...and at least this many times the last load's duration apart, so that
/// a ticker whose load takes seconds (a million schedules: ~12 s of CPU)
/// spends a tenth of its time on the safety net, not 40 %. Changes still
/// reload at once, on their notice.
const RELOAD_COST_FACTOR: u32 = 10;
/// A failed load is retried after this long.
const RETRY_LOAD: Duration = Duration::from_secs(1);
/// Catch-up never walks more fire times than this per schedule.
const CATCHUP_SCAN_LIMIT: usize = 100_000;

/// A schedule as the ticker needs it: small, because there may be a
/// million of them.
struct Entry {
    schedule_id: i64,
    dag_id: i64,
    /// Its DAG's project and fire priority: the order fires due together
    /// go out in ([`fair_order`]).
    project_id: i64,
    priority: Priority,
    /// Shared by every schedule with the same expression text.
    cron: Arc<CronExpr>,
    tz: Tz,
    start_date: Option<NaiveDate>,
    end_date: Option<NaiveDate>,
    biz_date_offset_days: i32,
    /// Missed fires the catch-up replays: 0 (`none`), 1 (`latest`) or the
    /// schedule's limit (`all`).
    catchup_keep: u32,
    /// A fire later than this counts as missed.
    misfire_grace_secs: i32,
}

impl Entry {
    /// The first fire strictly after `after` within the schedule's dates.
    fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut from = after.with_timezone(&self.tz);
        if let Some(start) = self.start_date
            && from.date_naive() < start
        {
            let midnight = start.and_hms_opt(0, 0, 0)?;
            from =
                self.tz.from_local_datetime(&midnight).earliest()? - chrono::Duration::seconds(1);
        }
        let next = self.cron.next_after(&from)?;
        if self.end_date.is_some_and(|end| next.date_naive() > end) {
            return None;
        }
        Some(next.with_timezone(&Utc))
    }
}

/// Next fires as (unix seconds, index into [`Schedules::entries`]).
type Heap = BinaryHeap<Reverse<(i64, usize)>>;

/// The schedules one load produced.
#[derive(Default)]
struct Schedules {
    entries: Vec<Entry>,
    heap: Heap,
    /// Last fire (unix) per schedule that the previous heap made while this
    /// one loaded: a heap item at or before it was already fired.
    fired_while_loading: HashMap<i64, i64>,
    /// How long the load took.
    took: Duration,
}

impl Schedules {
    /// When the next reload on the timer is due, counted from now.
    fn next_reload(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + RELOAD_EVERY.max(self.took * RELOAD_COST_FACTOR)
    }
}

/// The columns of a `schedule` row that loading reads.
#[derive(FromQueryResult)]
struct Row {
    id: i64,
    dag_id: i64,
    project_id: i64,
    fire_priority: i32,
    cron_expr: Option<String>,
    timezone: String,
    start_date: Option<NaiveDate>,
    end_date: Option<NaiveDate>,
    catchup: Catchup,
    catchup_limit: i32,
    misfire_grace_secs: i32,
    biz_date_offset_days: i32,
}

/// What publishing a fire takes: the bus, the `dj_ticker` bucket its fire
/// is recorded in, and where a fire dropped as a duplicate goes to be
/// checked.
#[derive(Clone)]
struct Firing {
    bus: Bus,
    kv: kv::Store,
    dropped: Dropped,
}

pub(crate) async fn run(
    config: &Config,
    bus: &Bus,
    dropped: &Dropped,
    shutdown: &CancellationToken,
) -> Result<(), TickerError> {
    let firing = Firing {
        bus: bus.clone(),
        kv: datajump_nats::key_value(bus.js(), &bus.names().ticker_bucket()).await?,
        dropped: dropped.clone(),
    };
    let mut changes = match config.nats.subscribe(bus.names().schedules_changed()).await {
        Ok(sub) => Some(sub),
        Err(e) => {
            warn!(error = %e, "cannot watch schedule changes; reloading on a timer only");
            None
        }
    };
    let mut schedules = Schedules::default();
    let mut loading = Some(spawn_load(config, &firing));
    let mut fired_while_loading = HashMap::new();
    let mut reload_at = tokio::time::Instant::now() + RELOAD_EVERY;
    // A change notice that came while a load ran: that load may have read
    // the schedules before the change.
    let mut changed_while_loading = false;
    while !shutdown.is_cancelled() {
        let recent = loading.is_some().then_some(&mut fired_while_loading);
        fire_due(&firing, &mut schedules, recent).await;
        let wake = schedules
            .heap
            .peek()
            .and_then(|Reverse((unix, _))| DateTime::from_timestamp(*unix, 0))
            .map(|at| {
                let wait = (at - Utc::now()).to_std().unwrap_or_default();
                (tokio::time::Instant::now() + wait).min(reload_at)
            })
            .unwrap_or(reload_at);
        let changed = async {
            match changes.as_mut() {
                Some(sub) => {
                    sub.next().await;
                }
                None => std::future::pending().await,
            }
        };
        let loaded = async {
            match loading.as_mut() {
                Some(handle) => handle.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            joined = loaded => {
                loading = None;
                match joined {
                    Ok(Ok(mut new)) => {
                        new.fired_while_loading = std::mem::take(&mut fired_while_loading);
                        schedules = new;
                        reload_at = schedules.next_reload();
                    }
                    Ok(Err(e)) => {
                        warn!(error = %e, "cannot load schedules; retrying");
                        reload_at = tokio::time::Instant::now() + RETRY_LOAD;
                    }
                    Err(e) => {
                        warn!(error = %e, "schedule load stopped; retrying");
                        reload_at = tokio::time::Instant::now() + RETRY_LOAD;
                    }
                }
                if std::mem::take(&mut changed_while_loading) {
                    reload_at = tokio::time::Instant::now();
                }
            },
            () = tokio::time::sleep_until(wake) => {
                if loading.is_none() && tokio::time::Instant::now() >= reload_at {
                    fired_while_loading.clear();
                    loading = Some(spawn_load(config, &firing));
                }
            },
            () = changed => {
                debug!("schedules changed: reloading");
                if loading.is_some() {
                    changed_while_loading = true;
                } else {
                    fired_while_loading.clear();
                    loading = Some(spawn_load(config, &firing));
                }
            },
            () = shutdown.cancelled() => break,
        }
    }
    if let Some(handle) = loading {
        handle.abort();
    }
    Ok(())
}

/// Fires at once that many due fires at most: enough that a thousand
/// schedules due in the same second are all in flight together, bounded so
/// a catch-up of a million never holds a million publishes open.
const FIRES_IN_FLIGHT: usize = 1024;

/// Fires everything due in `schedules`, recording each fire in `recent`
/// when a reload is running. Due fires are published together rather than
/// one round trip after another: a thousand schedules sharing a second
/// would otherwise fire up to a second late. A failed fire goes back into
/// the heap; the next pass retries it.
async fn fire_due(
    firing: &Firing,
    schedules: &mut Schedules,
    mut recent: Option<&mut HashMap<i64, i64>>,
) {
    let now = Utc::now().timestamp();
    let mut due = Vec::new();
    while let Some(&Reverse((unix, index))) = schedules.heap.peek() {
        if unix > now {
            break;
        }
        schedules.heap.pop();
        let entry = &schedules.entries[index];
        if let Some(&fired) = schedules.fired_while_loading.get(&entry.schedule_id)
            && fired >= unix
        {
            // The previous heap fired this while the current one loaded.
            let next = DateTime::from_timestamp(fired, 0).and_then(|at| entry.next_after(at));
            if let Some(next) = next {
                schedules.heap.push(Reverse((next.timestamp(), index)));
            }
            continue;
        }
        if let Some(at) = DateTime::from_timestamp(unix, 0) {
            due.push((index, at));
        }
    }
    let entries = &schedules.entries;
    fair_order(&mut due, entries);
    // Sent one after another, so they reach each level in the fair order;
    // only the acks are awaited together.
    let mut published = Vec::with_capacity(due.len());
    let mut acks = FuturesUnordered::new();
    for (index, at) in due {
        if acks.len() >= FIRES_IN_FLIGHT
            && let Some(acked) = acks.next().await
        {
            published.push(acked);
        }
        let acked = send(firing, &entries[index], at).await;
        acks.push(async move { (index, at, acked.await) });
    }
    while let Some(acked) = acks.next().await {
        published.push(acked);
    }
    // The last-fired records are written once every fire of the pass is
    // out: interleaved, they would compete with the fires still waiting
    // for the broker. A crash in between republishes those fires, which
    // the stream's duplicate window drops.
    let settled: Vec<_> = futures::stream::iter(published)
        .map(|(index, at, published)| async move {
            let recorded = match published {
                Ok(()) => record(firing, &entries[index], at).await,
                Err(e) => Err(e),
            };
            (index, at, recorded)
        })
        .buffer_unordered(FIRES_IN_FLIGHT)
        .collect()
        .await;
    for (index, at, result) in settled {
        let entry = &schedules.entries[index];
        match result {
            Ok(()) => {
                if let Some(recent) = recent.as_deref_mut() {
                    recent.insert(entry.schedule_id, at.timestamp());
                }
                if let Some(next) = entry.next_after(at) {
                    schedules.heap.push(Reverse((next.timestamp(), index)));
                }
            }
            Err(e) => {
                warn!(schedule_id = entry.schedule_id, error = %e, "fire failed; retrying");
                schedules.heap.push(Reverse((at.timestamp(), index)));
            }
        }
    }
}

/// Puts due fires in the order they go out: by time, then by their DAG's
/// priority (10 first), then round-robin across projects (each project's
/// first fire, then each one's second, …, projects by id), then by
/// schedule id. Each fire goes out on its level, which keeps the order
/// fires were published in, and resolvers take a level's fires in that
/// order, so a project with a thousand schedules due this second does not
/// start all of its runs before another project's first.
fn fair_order(due: &mut [(usize, DateTime<Utc>)], entries: &[Entry]) {
    due.sort_unstable_by_key(|(index, _)| entries[*index].schedule_id);
    // A fire's round is its place among its project's fires of the same
    // time and priority.
    let mut rounds: HashMap<(DateTime<Utc>, Priority, i64), usize> = HashMap::new();
    let mut keyed: Vec<_> = due
        .iter()
        .map(|&(index, at)| {
            let entry = &entries[index];
            let round = rounds
                .entry((at, entry.priority, entry.project_id))
                .or_default();
            let key = (
                at,
                Reverse(entry.priority),
                *round,
                entry.project_id,
                entry.schedule_id,
            );
            *round += 1;
            (key, (index, at))
        })
        .collect();
    keyed.sort_unstable_by_key(|(key, _)| *key);
    for (slot, (_, fire)) in due.iter_mut().zip(keyed) {
        *slot = fire;
    }
}

/// Starts a load in its own task, so firing goes on meanwhile.
fn spawn_load(config: &Config, firing: &Firing) -> JoinHandle<Result<Schedules, LoadError>> {
    let (config, firing) = (config.clone(), firing.clone());
    tokio::spawn(async move { load(&config, &firing).await })
}

/// Reads schedules and last fires, replays missed fires by each schedule's
/// catch-up policy and builds the heap.
async fn load(config: &Config, firing: &Firing) -> Result<Schedules, LoadError> {
    let started = Instant::now();
    let ((entries, rows_ms), (last_fires, last_fires_ms)) = tokio::try_join!(
        timed(read_schedules(config)),
        timed(read_last_fires(&firing.bus))
    )?;
    let now = Utc::now();
    let mut next_fires = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        tokio::task::coop::consume_budget().await;
        let last = last_fires
            .get(&entry.schedule_id)
            .and_then(|unix| DateTime::from_timestamp(*unix, 0));
        let on_time_from = now - chrono::Duration::seconds(i64::from(entry.misfire_grace_secs));
        let start = match last {
            Some(last) if last < on_time_from => {
                for missed in missed_fires(entry, last, on_time_from) {
                    info!(schedule_id = entry.schedule_id, fire = %missed, keep = entry.catchup_keep, "catching up a missed fire");
                    fire(firing, entry, missed).await?;
                }
                on_time_from
            }
            Some(last) => last,
            None => now,
        };
        if let Some(next) = entry.next_after(start) {
            next_fires.push(Reverse((next.timestamp(), index)));
        }
    }
    let took = started.elapsed();
    info!(
        schedules = entries.len(),
        last_fires = last_fires.len(),
        rows_ms,
        last_fires_ms,
        elapsed_ms = took.as_millis(),
        "schedules loaded"
    );
    Ok(Schedules {
        entries,
        // Heapifying the whole vector is linear; pushing one by one is not.
        heap: Heap::from(next_fires),
        fired_while_loading: HashMap::new(),
        took,
    })
}

/// Runs `read` and says how long it took, in milliseconds.
async fn timed<T>(
    read: impl Future<Output = Result<T, LoadError>>,
) -> Result<(T, u128), LoadError> {
    let started = Instant::now();
    let value = read.await?;
    Ok((value, started.elapsed().as_millis()))
}

/// Every active cron schedule of an online DAG in this ticker's shard,
/// streamed from one query.
async fn read_schedules(config: &Config) -> Result<Vec<Entry>, LoadError> {
    let mut parsed: HashMap<String, Arc<CronExpr>> = HashMap::new();
    let mut entries = Vec::new();
    let mut rows = schedule::Entity::find()
        .select_only()
        .columns([
            schedule::Column::Id,
            schedule::Column::DagId,
            schedule::Column::CronExpr,
            schedule::Column::Timezone,
            schedule::Column::StartDate,
            schedule::Column::EndDate,
            schedule::Column::Catchup,
            schedule::Column::CatchupLimit,
            schedule::Column::MisfireGraceSecs,
            schedule::Column::BizDateOffsetDays,
        ])
        .column(dag::Column::ProjectId)
        .column(dag::Column::FirePriority)
        .join(
            JoinType::InnerJoin,
            schedule::Entity::belongs_to(dag::Entity)
                .from(schedule::Column::DagId)
                .to(dag::Column::Id)
                .into(),
        )
        .filter(dag::Column::Online.eq(true))
        .filter(schedule::Column::Kind.eq(ScheduleKind::Cron))
        .filter(schedule::Column::Active.eq(true))
        .into_model::<Row>()
        .stream(&config.db)
        .await?;
    while let Some(row) = rows.next().await {
        let row = row?;
        // Rows arrive buffered, so without this the loop would hold a
        // runtime worker for seconds while the firing loop waits.
        tokio::task::coop::consume_budget().await;
        if let Some((k, n)) = config.shard
            && u64::try_from(row.id).unwrap_or_default() % n != k
        {
            continue;
        }
        let Some(expr) = row.cron_expr else {
            continue;
        };
        let cron = match parsed.get(&expr) {
            Some(cron) => Arc::clone(cron),
            None => match CronExpr::parse(&expr) {
                Ok(cron) => {
                    let cron = Arc::new(cron);
                    parsed.insert(expr, Arc::clone(&cron));
                    cron
                }
                Err(e) => {
                    warn!(schedule_id = row.id, error = %e, "stored cron expression is invalid; schedule skipped");
                    continue;
                }
            },
        };
        entries.push(Entry {
            schedule_id: row.id,
            dag_id: row.dag_id,
            project_id: row.project_id,
            priority: Priority::of(row.fire_priority),
            cron,
            tz: parse_time_zone(&row.timezone).unwrap_or(config.default_timezone),
            start_date: row.start_date,
            end_date: row.end_date,
            biz_date_offset_days: row.biz_date_offset_days,
            catchup_keep: match row.catchup {
                Catchup::None => 0,
                Catchup::All => u32::try_from(row.catchup_limit).unwrap_or_default(),
                Catchup::Latest => 1,
            },
            misfire_grace_secs: row.misfire_grace_secs,
        });
    }
    Ok(entries)
}

/// The last fire (unix) of every schedule in `dj_ticker`, in one pass.
async fn read_last_fires(bus: &Bus) -> Result<HashMap<i64, i64>, LoadError> {
    let mut last = HashMap::new();
    let installation = bus.installation();
    datajump_nats::kv_scan(bus.js(), &bus.names().ticker_bucket(), |key, value| {
        let unix = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
        if let (Some(schedule_id), Some(unix)) = (installation.ticker_key_schedule(key), unix) {
            last.insert(schedule_id, unix);
        }
    })
    .await?;
    Ok(last)
}

/// Fires in `(last, until]` that the catch-up policy replays, oldest first.
fn missed_fires(entry: &Entry, last: DateTime<Utc>, until: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let keep = usize::try_from(entry.catchup_keep).unwrap_or(usize::MAX);
    if keep == 0 {
        return Vec::new();
    }
    let mut missed = std::collections::VecDeque::with_capacity(keep.min(CATCHUP_SCAN_LIMIT));
    let mut at = last;
    for _ in 0..CATCHUP_SCAN_LIMIT {
        match entry.next_after(at) {
            Some(next) if next <= until => {
                if missed.len() == keep {
                    missed.pop_front();
                }
                missed.push_back(next);
                at = next;
            }
            _ => break,
        }
    }
    missed.into()
}

#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("database: {0}")]
    Db(#[from] DbErr),
    #[error(transparent)]
    Nats(#[from] NatsError),
}

/// Publishes the fire of `entry` scheduled at `at` and then records it as
/// the schedule's last fire.
async fn fire(firing: &Firing, entry: &Entry, at: DateTime<Utc>) -> Result<(), NatsError> {
    send(firing, entry, at).await.await?;
    record(firing, entry, at).await
}

/// Hands the fire of `entry` scheduled at `at` to the connection and
/// returns the wait for its ack.
async fn send<'a>(
    firing: &'a Firing,
    entry: &Entry,
    at: DateTime<Utc>,
) -> impl Future<Output = Result<(), NatsError>> + use<'a> {
    let unix = at.timestamp();
    let message = FireMsg {
        v: VERSION,
        dag_id: entry.dag_id,
        priority: entry.priority,
        schedule_id: Some(entry.schedule_id),
        trigger_type: TriggerType::Schedule,
        logical_time: at,
        biz_date: biz_date_for(at, entry.tz, entry.biz_date_offset_days),
        time_zone: entry.tz.name().to_owned(),
        dedup_key: scheduled_run_key(entry.schedule_id, unix),
        params: Params::new(),
        max_active_runs: None,
    };
    let acked = firing.bus.send_fire(&message).await;
    let schedule_id = entry.schedule_id;
    async move {
        let duplicate = acked.await?;
        if duplicate {
            // Most likely another ticker's copy, which measured the lag.
            firing.dropped.check_later(message);
        } else {
            datajump_shared::metrics::fire_published(at, Utc::now());
        }
        debug!(schedule_id, fire = %at, duplicate, "fired");
        Ok(())
    }
}

/// Records `at` as the last fire of `entry` in `dj_ticker`.
async fn record(firing: &Firing, entry: &Entry, at: DateTime<Utc>) -> Result<(), NatsError> {
    firing
        .kv
        .put(
            firing.bus.installation().ticker_key(entry.schedule_id),
            at.timestamp().to_string().into(),
        )
        .await
        .map_err(|e| NatsError::JetStream {
            what: "write dj_ticker".to_owned(),
            source: e.into(),
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use datajump_cron::CronError;

    use super::*;

    fn every_minute(catchup_keep: u32) -> Result<Entry, CronError> {
        Ok(Entry {
            schedule_id: 1,
            dag_id: 1,
            project_id: 1,
            priority: Priority::DEFAULT,
            cron: Arc::new(CronExpr::parse("0 * * * * ?")?),
            tz: chrono_tz::UTC,
            start_date: None,
            end_date: None,
            biz_date_offset_days: 0,
            catchup_keep,
            misfire_grace_secs: 60,
        })
    }

    fn minute(n: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + n * 60, 0).unwrap_or_default()
    }

    #[test]
    fn fires_due_together_go_by_priority_then_round_robin_across_projects() -> Result<(), CronError>
    {
        // Schedule ids 1.., (project, priority) each.
        let dags = [
            (1, 5),
            (1, 5),
            (1, 5),
            (2, 5),
            (2, 5),
            (3, 5),
            (3, 9),
            (1, 5),
        ];
        let entries = dags
            .iter()
            .enumerate()
            .map(|(i, (project_id, priority))| {
                Ok(Entry {
                    schedule_id: i64::try_from(i).unwrap_or_default() + 1,
                    project_id: *project_id,
                    priority: Priority::of(*priority),
                    ..every_minute(0)?
                })
            })
            .collect::<Result<Vec<_>, CronError>>()?;
        let (now, later) = (minute(1), minute(2));
        let mut due: Vec<_> = (0..entries.len()).rev().map(|i| (i, now)).collect();
        due.insert(0, (0, later));
        fair_order(&mut due, &entries);
        let order: Vec<(i64, DateTime<Utc>)> = due
            .iter()
            .map(|(i, at)| (entries[*i].schedule_id, *at))
            .collect();
        assert_eq!(
            order,
            [
                (7, now), // priority 9 first
                (1, now),
                (4, now),
                (6, now), // round 1: each project's first
                (2, now),
                (5, now), // round 2
                (3, now),
                (8, now), // project 1's rest
                (1, later),
            ]
        );
        Ok(())
    }

    #[test]
    fn catchup_keeps_the_latest_missed_fires() -> Result<(), CronError> {
        let (last, until) = (minute(0), minute(5));
        assert!(missed_fires(&every_minute(0)?, last, until).is_empty());
        assert_eq!(missed_fires(&every_minute(1)?, last, until), [minute(5)]);
        assert_eq!(
            missed_fires(&every_minute(3)?, last, until),
            [minute(3), minute(4), minute(5)]
        );
        assert_eq!(missed_fires(&every_minute(100)?, last, until).len(), 5);
        Ok(())
    }
}
