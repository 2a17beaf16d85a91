//! The heartbeat a runner keeps in `dj_runners`: how other runners tell a
//! lost owner from a live one, and what `datajump runners` shows.

use std::sync::Arc;

use async_nats::jetstream::Context;
use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::lease::Lease;
use crate::{Config, PROGRESS_EVERY};

/// How soon a failed heartbeat is tried again: the lease lapses after two
/// missed periods, so one failure is retried well before.
const RETRY_AFTER_FAILURE: std::time::Duration = std::time::Duration::from_secs(1);

/// The heartbeat a runner keeps in `dj_runners`.
#[derive(Debug, Serialize)]
struct Heartbeat<'a> {
    id: &'a str,
    queues: &'a [String],
    slots: usize,
    running: usize,
    at: DateTime<Utc>,
}

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
        let beat = Heartbeat {
            id: &config.id,
            queues: &config.queues,
            slots: config.slots,
            running: occupancy.running(config.slots),
            at: Utc::now(),
        };
        let began = std::time::Instant::now();
        let written = match serde_json::to_vec(&beat) {
            Ok(body) => kv
                .put(&config.id, body.into())
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let next = match written {
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
