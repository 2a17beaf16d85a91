//! Cron fires: a min-heap of next fire times over every active schedule.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::time::Duration;

use async_nats::jetstream::{Context, kv};
use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use datajump_nats::NatsError;
use datajump_shared::biz_date::biz_date_for;
use datajump_shared::cron::{CronExpr, parse_time_zone};
use datajump_shared::entities::{dag, schedule};
use datajump_shared::messages::{FireMsg, VERSION, scheduled_run_key};
use datajump_shared::plan::Params;
use datajump_shared::{TriggerType, subjects};
use futures::StreamExt;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::{Config, TickerError};

/// Schedules are reloaded this often even without a change notice.
const RELOAD_EVERY: Duration = Duration::from_secs(30);
/// Catch-up never walks more fire times than this per schedule.
const CATCHUP_SCAN_LIMIT: usize = 100_000;

/// A schedule as the ticker needs it.
struct Entry {
    schedule_id: i64,
    dag_id: i64,
    cron: CronExpr,
    tz: Tz,
    start_date: Option<NaiveDate>,
    end_date: Option<NaiveDate>,
    biz_date_offset_days: i32,
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

type Heap = BinaryHeap<Reverse<(i64, usize)>>;

pub(crate) async fn run(
    config: &Config,
    js: &Context,
    shutdown: &CancellationToken,
) -> Result<(), TickerError> {
    let kv = datajump_nats::key_value(js, subjects::TICKER_BUCKET).await?;
    let mut changes = match config.nats.subscribe(subjects::SCHEDULES_CHANGED).await {
        Ok(sub) => Some(sub),
        Err(e) => {
            warn!(error = %e, "cannot watch schedule changes; reloading on a timer only");
            None
        }
    };
    while !shutdown.is_cancelled() {
        let (entries, mut heap) = match load(config, js, &kv).await {
            Ok(loaded) => loaded,
            Err(e) => {
                warn!(error = %e, "cannot load schedules; retrying");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    () = shutdown.cancelled() => break,
                }
            }
        };
        let reload_at = tokio::time::Instant::now() + RELOAD_EVERY;
        loop {
            let now = Utc::now();
            while let Some(&Reverse((unix, index))) = heap.peek() {
                if unix > now.timestamp() {
                    break;
                }
                heap.pop();
                let entry = &entries[index];
                let Some(at) = DateTime::from_timestamp(unix, 0) else {
                    continue;
                };
                match fire(js, &kv, entry, at).await {
                    Ok(()) => {
                        if let Some(next) = entry.next_after(at) {
                            heap.push(Reverse((next.timestamp(), index)));
                        }
                    }
                    Err(e) => {
                        warn!(schedule_id = entry.schedule_id, error = %e, "fire failed; retrying");
                        heap.push(Reverse((unix, index)));
                        break;
                    }
                }
            }
            let wake = heap
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
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {
                    if tokio::time::Instant::now() >= reload_at { break; }
                },
                () = changed => { debug!("schedules changed: reloading"); break; },
                () = shutdown.cancelled() => break,
            }
        }
    }
    Ok(())
}

async fn load(
    config: &Config,
    js: &Context,
    kv: &kv::Store,
) -> Result<(Vec<Entry>, Heap), LoadError> {
    let online: HashSet<i64> = dag::Entity::find()
        .filter(dag::Column::Online.eq(true))
        .all(&config.db)
        .await?
        .into_iter()
        .map(|d| d.id)
        .collect();
    let rows = schedule::Entity::find()
        .filter(schedule::Column::Kind.eq("CRON"))
        .filter(schedule::Column::Active.eq(true))
        .all(&config.db)
        .await?;
    let now = Utc::now();
    let mut entries = Vec::new();
    let mut heap = Heap::new();
    for row in rows {
        if !online.contains(&row.dag_id) {
            continue;
        }
        if let Some((k, n)) = config.shard
            && u64::try_from(row.id).unwrap_or_default() % n != k
        {
            continue;
        }
        let Some(expr) = row.cron_expr.as_deref() else {
            continue;
        };
        let cron = match CronExpr::parse(expr) {
            Ok(cron) => cron,
            Err(e) => {
                warn!(schedule_id = row.id, error = %e, "stored cron expression is invalid; schedule skipped");
                continue;
            }
        };
        let entry = Entry {
            schedule_id: row.id,
            dag_id: row.dag_id,
            cron,
            tz: parse_time_zone(&row.timezone).unwrap_or(config.default_timezone),
            start_date: row.start_date,
            end_date: row.end_date,
            biz_date_offset_days: row.biz_date_offset_days,
        };
        let last = last_fire(kv, row.id).await?;
        let grace = chrono::Duration::seconds(i64::from(row.misfire_grace_secs));
        let on_time_from = now - grace;
        let start = match last {
            Some(last) if last < on_time_from => {
                for missed in missed_fires(&entry, last, on_time_from, &row) {
                    info!(schedule_id = row.id, fire = %missed, policy = %row.catchup, "catching up a missed fire");
                    fire(js, kv, &entry, missed).await?;
                }
                on_time_from
            }
            Some(last) => last,
            None => now,
        };
        if let Some(next) = entry.next_after(start) {
            heap.push(Reverse((next.timestamp(), entries.len())));
        }
        entries.push(entry);
    }
    info!(schedules = entries.len(), "schedules loaded");
    Ok((entries, heap))
}

/// Fires in `(last, until]` that the catch-up policy replays, oldest first.
fn missed_fires(
    entry: &Entry,
    last: DateTime<Utc>,
    until: DateTime<Utc>,
    row: &schedule::Model,
) -> Vec<DateTime<Utc>> {
    let keep = match row.catchup.as_str() {
        "none" => 0,
        "all" => usize::try_from(row.catchup_limit).unwrap_or_default(),
        _ => 1,
    };
    if keep == 0 {
        return Vec::new();
    }
    let mut missed = std::collections::VecDeque::with_capacity(keep);
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

async fn last_fire(kv: &kv::Store, schedule_id: i64) -> Result<Option<DateTime<Utc>>, NatsError> {
    let value = kv
        .get(subjects::ticker_key(schedule_id))
        .await
        .map_err(|e| NatsError::JetStream {
            what: "read dj_ticker".to_owned(),
            source: e.into(),
        })?;
    Ok(value
        .and_then(|bytes| std::str::from_utf8(&bytes).ok()?.parse::<i64>().ok())
        .and_then(|unix| DateTime::from_timestamp(unix, 0)))
}

/// Publishes the fire of `entry` at `at`, then records it in `dj_ticker`.
async fn fire(
    js: &Context,
    kv: &kv::Store,
    entry: &Entry,
    at: DateTime<Utc>,
) -> Result<(), NatsError> {
    let unix = at.timestamp();
    let message = FireMsg {
        v: VERSION,
        dag_id: entry.dag_id,
        schedule_id: Some(entry.schedule_id),
        trigger_type: TriggerType::Schedule,
        logical_time: at,
        biz_date: biz_date_for(at, entry.tz, entry.biz_date_offset_days),
        time_zone: entry.tz.name().to_owned(),
        dedup_key: scheduled_run_key(entry.schedule_id, unix),
        params: Params::new(),
    };
    let duplicate = datajump_nats::publish_fire(js, &message).await?;
    // A duplicate was published by another ticker, which measured its lag.
    if !duplicate {
        datajump_shared::metrics::fire_published(at, Utc::now());
    }
    kv.put(
        subjects::ticker_key(entry.schedule_id),
        unix.to_string().into(),
    )
    .await
    .map_err(|e| NatsError::JetStream {
        what: "write dj_ticker".to_owned(),
        source: e.into(),
    })?;
    debug!(schedule_id = entry.schedule_id, fire = %at, duplicate, "fired");
    Ok(())
}
