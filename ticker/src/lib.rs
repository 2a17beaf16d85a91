//! The ticker: the only role that acts on time.
//!
//! Stateless. (1) Cron: it keeps a min-heap of the next fire of every active
//! schedule and publishes one fire per (schedule, fire time) with the
//! `Nats-Msg-Id` `<installation>:fire:<schedule_id>:<unix>`, then records the fire in the KV
//! bucket `dj_ticker` — publish first, then KV, so a crash in between repeats
//! a fire JetStream drops as a duplicate rather than losing one. Two tickers
//! publish the same ids, which is the whole of its high availability: no
//! leader election. A fire JetStream drops as a duplicate is checked a
//! little later: if no run came of it (something else published its id
//! first), it is published again under a fresh id ([`suppressed`]). (2) Deadlines: every second it acts on `task_instance`
//! rows whose `deadline_at` has passed — republishing work for QUEUED
//! instances whose message may have been lost and requeueing retries that
//! are due — through the same conditional transitions as everyone else.
//! (3) Alerts: it notices failures, timeouts and SLA misses of DAGs with
//! webhooks and delivers them ([`alerts`]), to the destinations HTTP tasks
//! may reach (`datajump_shared::network`). (4) Retention ([`cleanup`]).

pub mod alerts;
pub mod cleanup;
mod cron_loop;
mod deadlines;
mod suppressed;

use chrono_tz::Tz;
use datajump_nats::{Bus, NatsError};
use datajump_shared::subjects::Namespace;
use datajump_store::installation::{self, InstallationError};
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
    /// The names of the installation's subjects, streams and buckets.
    pub names: Namespace,
    /// Copies of each stream and bucket it creates when missing
    /// (`--nats-replicas`).
    pub replicas: datajump_nats::Replicas,
    /// `Some((k, n))`: only schedules whose id ≡ k (mod n).
    pub shard: Option<(u64, u64)>,
    /// Zone for schedules whose stored zone cannot be read.
    pub default_timezone: Tz,
    /// How long finished runs, dataset events, alerts and audit entries
    /// are kept ([`cleanup`]).
    pub retention: cleanup::Retention,
    /// Where alert webhooks may connect: the rule HTTP tasks follow, with
    /// the ticker's `--http-allow` and the API's address
    /// (`datajump_shared::network`).
    pub network: std::sync::Arc<datajump_shared::network::NetworkPolicy>,
    /// How long the ticker's checks wait; [`Periods::default`] outside tests.
    pub periods: Periods,
}

/// The fixed waits of the ticker's checks. Each is a trade between how soon
/// a rare loss is repaired and how much the check costs; tests shorten them
/// so that a repair they wait for comes in seconds.
#[derive(Debug, Clone, Copy)]
pub struct Periods {
    /// How long after a fire was dropped as a duplicate it is checked for
    /// a run ([`suppressed`]): a resolver makes the run of a fire it
    /// received within milliseconds, so by then a run is there unless the
    /// fire never reached one.
    pub duplicate_check_after: std::time::Duration,
    /// How often owed trigger fires are looked for and queues are checked
    /// for a live runner.
    pub queue_check_every: std::time::Duration,
    /// Work queued more recently is not counted as unserved: a runner that
    /// has just started may not have written its first heartbeat yet.
    pub unserved_after: std::time::Duration,
    /// Runs that ended SUCCESS this recently may still have their
    /// dependency fires in flight: not looked at for owed fires yet.
    pub owed_fires_after: std::time::Duration,
}

impl Default for Periods {
    fn default() -> Self {
        Self {
            duplicate_check_after: std::time::Duration::from_secs(30),
            queue_check_every: std::time::Duration::from_secs(10),
            unserved_after: std::time::Duration::from_secs(10),
            owed_fires_after: std::time::Duration::from_secs(20),
        }
    }
}

/// Why the ticker stopped.
#[derive(Debug, Error)]
pub enum TickerError {
    /// NATS failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
    /// The database has no installation identity.
    #[error(transparent)]
    Installation(#[from] InstallationError),
}

/// Runs the ticker until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), TickerError> {
    let js = async_nats::jetstream::new(config.nats.clone());
    datajump_nats::ensure_topology(&js, &config.names, config.replicas).await?;
    let bus = Bus::new(
        js,
        config.names.clone(),
        installation::identity(&config.db).await?,
    );
    info!(shard = ?config.shard, installation = %bus.installation(), "ticker started");
    let (fires_unseen, fires_to_check) = suppressed::channel();
    let (cron, deadlines, (), (), ()) = tokio::join!(
        cron_loop::run(&config, &bus, &fires_unseen, &shutdown),
        deadlines::run(&config, &bus, &shutdown),
        cleanup::run(&config, &bus, &shutdown),
        alerts::run(&config.db, &config.network, &shutdown),
        suppressed::run(&config, &bus, fires_to_check, &shutdown),
    );
    cron.and(deadlines)?;
    info!("ticker stopped");
    Ok(())
}
