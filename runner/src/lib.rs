//! The runner: claims work, executes it, records the attempt, reports it.
//!
//! Stateless and scaled by replica count. It fills its free slots from its
//! queues' priority consumers, priority 10 down to 1 ([`fetch`]); a level a
//! fetch found empty is skipped until its doorbell rings (or a quiet second
//! passes, for redeliveries). Each message becomes one attempt ([`attempt`]):
//! a conditional claim through the engine (`datajump_engine::record`), then
//! prepare → execute → conclude → record. The attempt's end is committed,
//! and propagated, before what it released is published and its message
//! acked, so a runner dying at any point loses nothing. Around the attempts:
//! their kill switches ([`stops`]), the heartbeat other runners read
//! ([`heartbeat`]), which renews the lease that fences a stuck runner's
//! processes ([`lease`]), and the group commit of claims and ends
//! ([`commit`]).
//!
//! The decision that shapes it: one [`Runner`] value owns what every
//! attempt needs (configuration, bus, log store, committer, kill switches),
//! and each stage is a method on it, so a stage takes only what is its own.

mod attempt;
mod commit;
pub mod executor;
mod fetch;
mod heartbeat;
pub mod lease;
mod leftovers;
mod log;
mod lost_claim;
mod outputs;
mod stops;
mod verdict;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, object_store::ObjectStore};
use datajump_nats::{Bus, NatsError};
use datajump_shared::subjects::Namespace;
use datajump_store::installation::{self, InstallationError};
use sea_orm::DatabaseConnection;
use thiserror::Error;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use commit::Committer;
use executor::{TaskProcess, protect_runner};
use fetch::WorkSources;
use heartbeat::Occupancy;
use stops::{KillCheck, Running, Stops};

/// How a runner runs.
#[derive(Clone)]
pub struct Config {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection.
    pub nats: async_nats::Client,
    /// Unique id, e.g. `host-pid-random`.
    pub id: String,
    /// The names of the installation's subjects, streams and buckets.
    pub names: Namespace,
    /// Copies of each stream and bucket it creates when missing
    /// (`--nats-replicas`).
    pub replicas: datajump_nats::Replicas,
    /// The zone of a run whose stored zone cannot be read (`--timezone`).
    pub default_timezone: chrono_tz::Tz,
    /// Queues (worker groups) it serves.
    pub queues: Vec<String>,
    /// Tasks it runs at once.
    pub slots: usize,
    /// How long running tasks may finish after SIGTERM.
    pub drain_timeout: Duration,
    /// What task processes inherit and as whom they run (`--task-env`,
    /// `--task-user`).
    pub task_process: Arc<TaskProcess>,
    /// Where HTTP tasks may connect (`--http-allow`; the API's own address
    /// and metadata addresses are refused).
    pub network: Arc<datajump_shared::network::NetworkPolicy>,
    /// DataJump's data folder (`--data-dir`), whose files no SQLite
    /// datasource may open; `None` where the runner has none.
    pub data_folder: Option<Arc<std::path::Path>>,
    /// The most bytes of a task's log kept in full (`--max-log-bytes`);
    /// the tail the database keeps always holds the last lines.
    pub max_log_bytes: u64,
}

/// Why the runner stopped.
#[derive(Debug, Error)]
pub enum RunnerError {
    /// NATS failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
    /// The database has no installation identity.
    #[error(transparent)]
    Installation(#[from] InstallationError),
    /// The doorbell subscription failed.
    #[error("cannot subscribe to {subject}: {source}")]
    Subscribe {
        /// The subject.
        subject: String,
        /// Why.
        source: async_nats::SubscribeError,
    },
}

/// How often a running task sends AckProgress and heartbeats are written.
const PROGRESS_EVERY: Duration = datajump_nats::HEARTBEAT_EVERY;

/// What every attempt of one runner needs; each stage of an attempt is a
/// method on it.
struct Runner {
    config: Config,
    /// Renewed by the heartbeat; its watchdog kills the attempts' process
    /// groups when it lapses.
    lease: Arc<lease::Lease>,
    /// Each attempt's control group, where the runner may create them.
    cgroups: Option<Arc<executor::Cgroups>>,
    bus: Bus,
    /// The `dj_logs` object store, for full logs the tail cannot hold.
    logs: ObjectStore,
    committer: Committer,
    stops: Stops,
}

/// Runs the runner until `shutdown` is cancelled, then drains.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), RunnerError> {
    protect_runner(&config.task_process);
    leftovers::sweep(&std::env::temp_dir());
    if leftovers::scratch_folder() != std::env::temp_dir() {
        leftovers::sweep(leftovers::scratch_folder());
    }
    let cgroups = match executor::Cgroups::open() {
        Ok(cgroups) => {
            info!(folder = %cgroups.folder().display(), "each attempt runs in a control group of its own, killed whole when it ends");
            Some(Arc::new(cgroups))
        }
        Err(e) => {
            warn!(reason = %e, "attempts run without control groups: a process that leaves its task's process group (setsid, a daemon) outlives the task");
            None
        }
    };
    let js = jetstream::new(config.nats.clone());
    let names = &config.names;
    datajump_nats::ensure_topology(&js, names, config.replicas).await?;
    let logs = datajump_nats::logs_store(&js, names).await?;
    let bus = Bus::new(
        js.clone(),
        names.clone(),
        installation::identity(&config.db).await?,
    );
    let mut sources = WorkSources::open(&config, &js).await?;
    let slots = Arc::new(Semaphore::new(config.slots));
    // Slots the fetch loop holds while it waits for work: taken from the
    // semaphore, but running nothing.
    let fetching = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let occupancy = Occupancy {
        slots: slots.clone(),
        fetching: fetching.clone(),
    };
    let lease = Arc::new(lease::Lease::default());
    let watchdog_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    lease.watch(lease::FENCE_AFTER, watchdog_stop.clone());
    let heartbeat = tokio::spawn(heartbeat::heartbeat_loop(
        config.clone(),
        js.clone(),
        lease.clone(),
        Occupancy { slots, fetching },
        shutdown.clone(),
    ));
    let stops = Stops {
        drain: CancellationToken::new(),
        running: Running::default(),
    };
    let killer = tokio::spawn(stops::kill_listener(
        KillCheck {
            nats: config.nats.clone(),
            names: config.names.clone(),
            db: config.db.clone(),
            runner_id: config.id.clone(),
        },
        stops.clone(),
        stops.drain.clone(),
    ));
    let committer = Committer::start(config.db.clone(), bus.clone(), config.id.clone());
    let mut running = tokio::task::JoinSet::new();
    info!(runner = %config.id, queues = ?config.queues, slots = config.slots, "runner started");
    let runner = Arc::new(Runner {
        config,
        lease,
        cgroups,
        bus,
        logs,
        committer,
        stops,
    });
    fetch::fetch_loop(&runner, &mut sources, &occupancy, &mut running, &shutdown).await;

    let Runner { config, stops, .. } = &*runner;
    info!(runner = %config.id, running = running.len(), "runner draining");
    let drained = tokio::time::timeout(config.drain_timeout, async {
        while running.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!(runner = %config.id, "drain timeout: stopping running tasks and returning them to the queue");
        stops.drain.cancel();
        while running.join_next().await.is_some() {}
    }
    stops.drain.cancel();
    let _ = killer.await;
    heartbeat.abort();
    watchdog_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Ok(kv) = datajump_nats::key_value(&js, &config.names.runners_bucket()).await {
        let _ = kv.purge(&config.id).await;
    }
    info!(runner = %config.id, "runner stopped");
    Ok(())
}
