//! The ticker: the only role that acts on time.
//!
//! Stateless. (1) Cron: it keeps a min-heap of the next fire of every active
//! schedule and publishes one fire per (schedule, fire time) with the
//! `Nats-Msg-Id` `fire:<schedule_id>:<unix>`, then records the fire in the KV
//! bucket `dj_ticker` — publish first, then KV, so a crash in between repeats
//! a fire JetStream drops as a duplicate rather than losing one. Two tickers
//! publish the same ids, which is the whole of its high availability: no
//! leader election. (2) Deadlines: every second it acts on `task_instance`
//! rows whose `deadline_at` has passed — republishing work for QUEUED
//! instances whose message may have been lost and requeueing retries that
//! are due — through the same conditional transitions as everyone else.
//! (3) Alerts: it notices failures, timeouts and SLA misses of DAGs with
//! webhooks and delivers them ([`alerts`]). (4) Retention ([`cleanup`]).

pub mod alerts;
pub mod cleanup;
mod cron_loop;
mod deadlines;

use chrono_tz::Tz;
use datajump_nats::NatsError;
use sea_orm::DatabaseConnection;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// How the ticker runs.
#[derive(Clone)]
pub struct Config {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection.
    pub nats: async_nats::Client,
    /// `Some((k, n))`: only schedules whose id ≡ k (mod n).
    pub shard: Option<(u64, u64)>,
    /// Zone for schedules whose stored zone cannot be read.
    pub default_timezone: Tz,
    /// Finished runs older than this are removed; `None` keeps everything.
    pub retention: Option<chrono::Duration>,
}

/// Why the ticker stopped.
#[derive(Debug, Error)]
pub enum TickerError {
    /// NATS failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
}

/// Runs the ticker until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), TickerError> {
    let js = async_nats::jetstream::new(config.nats.clone());
    datajump_nats::ensure_topology(&js).await?;
    info!(shard = ?config.shard, "ticker started");
    let (cron, deadlines, (), ()) = tokio::join!(
        cron_loop::run(&config, &js, &shutdown),
        deadlines::run(&config, &js, &shutdown),
        cleanup::run(&config, &js, &shutdown),
        alerts::run(&config.db, &shutdown)
    );
    cron.and(deadlines)?;
    info!("ticker stopped");
    Ok(())
}
