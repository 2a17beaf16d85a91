//! The heartbeat a runner keeps in `dj_runners`: how other runners tell a
//! lost owner from a live one, what `GET /api/v1/runners` shows, and what
//! `dag apply` reads the runner's feature level from.

use std::sync::Arc;

use async_nats::jetstream::Context;
use chrono::Utc;
use datajump_nats::{BUILD_VERSION, RunnerHeartbeat, write_heartbeat};
use datajump_shared::features::FeatureLevel;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::lease::Lease;
use crate::{Config, PROGRESS_EVERY};

/// How soon a failed heartbeat is tried again: the lease lapses after two
/// missed periods, so one failure is retried well before.
const RETRY_AFTER_FAILURE: std::time::Duration = std::time::Duration::from_secs(1);

/// What the heartbeat counts a runner's running tasks from.
pub(crate) struct Occupancy {
    /// The task slots.
    pub(crate) slots: Arc<Semaphore>,
    /// Slots the fetch loop holds while waiting for work.
    pub(crate) fetching: Arc<std::sync::atomic::AtomicUsize>,
}

impl Occupancy {
    /// Tasks running now: slots taken, less those held for fetching.
    fn running(&self, slots: usize) -> usize {
        slots
            .saturating_sub(self.slots.available_permits())
            .saturating_sub(self.fetching.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Writes this runner's heartbeat every [`PROGRESS_EVERY`] until `shutdown`,
/// renewing `lease` with each write that succeeds.
pub(crate) async fn heartbeat_loop(
    config: Config,
    js: Context,
    lease: Arc<Lease>,
    occupancy: Occupancy,
    shutdown: CancellationToken,
) {
    let Ok(kv) = datajump_nats::key_value(&js, &config.names.runners_bucket()).await else {
        warn!("no dj_runners bucket: this runner is invisible to others");
        return;
    };
    while !shutdown.is_cancelled() {
        let beat = RunnerHeartbeat {
            id: config.id.clone(),
            queues: config.queues.clone(),
            slots: config.slots as u64,
            running: occupancy.running(config.slots) as u64,
            at: Utc::now(),
            version: Some(BUILD_VERSION.to_owned()),
            features: FeatureLevel::CURRENT,
        };
        let began = std::time::Instant::now();
        let next = match write_heartbeat(&kv, &config.id, &beat).await {
            Ok(_) => {
                lease.renewed(began);
                PROGRESS_EVERY
            }
            Err(e) => {
                warn!(error = %e, "heartbeat failed");
                RETRY_AFTER_FAILURE
            }
        };
        tokio::select! {
            () = tokio::time::sleep(next) => {},
            () = shutdown.cancelled() => {},
        }
    }
}
