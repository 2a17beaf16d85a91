//! A claim lost: what a work message means when the conditional claim
//! found the instance in another state (docs/ARCHITECTURE.md, "Ownership and
//! redelivery").

use std::time::Duration;

use async_nats::jetstream::AckKind;
use chrono::Utc;
use datajump_nats::Bus;
use datajump_shared::TaskStatus;
use datajump_shared::entities::task_instance;
use datajump_shared::messages::WorkMsg;
use datajump_shared::metrics::{self, RetryCause};
use sea_orm::{DbErr, EntityTrait};
use tracing::{debug, warn};

use crate::Runner;

/// How long a runner waits before retrying a task another live runner owns.
const OWNED_ELSEWHERE_DELAY: Duration = Duration::from_secs(5);

impl Runner {
    /// A claim lost: decide from the instance's current state what the
    /// message means. The caller holds the kill switch of the message's
    /// attempt.
    pub(crate) async fn not_claimed(&self, work: &WorkMsg) -> Result<AckKind, DbErr> {
        let Runner {
            config, bus, stops, ..
        } = self;
        let Some(row) = task_instance::Entity::find_by_id(work.task_instance_id.0)
            .one(&config.db)
            .await?
        else {
            warn!("work for a task instance that does not exist; terminated");
            return Ok(AckKind::Term);
        };
        if row.status.is_terminal() {
            // A runner may have died between commit and publish: its end
            // released children whose work may never have gone out. The
            // completion is republished too, for ends made elsewhere (a kill,
            // a takeover) that a resolver propagates.
            debug!(status = %row.status, "work for a finished task: republishing its completion and its queued children");
            let owed = datajump_engine::owed_by_finished(&config.db, &row).await?;
            return Ok(match owed.publish(bus).await {
                Ok(()) => AckKind::Ack,
                Err(_) => AckKind::Nak(Some(Duration::from_secs(1))),
            });
        }
        if row.status == TaskStatus::Running {
            let ours = row.owner.as_deref() == Some(config.id.as_str());
            if ours {
                // The caller holds the message's attempt, so another handler
                // here can only hold a different one.
                let running_here =
                    row.last_attempt() != work.attempt && stops.holds(row.id, row.last_attempt());
                if running_here {
                    debug!(
                        attempt = row.last_attempt(),
                        "stale work message: the task runs here"
                    );
                    return Ok(AckKind::Ack);
                }
                // The database gives this runner an attempt no process of it
                // runs: a claim committed whose answer was lost with the
                // connection (the message came back after a database error),
                // or an earlier process under the same runner id died. Either
                // way nothing will end it here, so it is taken over like a
                // lost runner's.
            } else if owner_alive(bus, row.owner.as_deref()).await {
                debug!(owner = ?row.owner, "task is running elsewhere");
                return Ok(AckKind::Nak(Some(OWNED_ELSEWHERE_DELAY)));
            }
            if let Some((taken, effects)) =
                datajump_engine::take_over(&config.db, &row, Utc::now()).await?
            {
                warn!(lost_owner = ?row.owner, status = %taken.status, "runner lost: task taken over");
                if !taken.status.is_terminal() {
                    metrics::task_retried(RetryCause::RunnerLost);
                }
                // A failed publish is logged; the deadline scan republishes.
                let _ = effects.publish(bus).await;
            }
            return Ok(AckKind::Ack);
        }
        debug!(status = %row.status, attempt = row.attempt, "stale work message");
        Ok(AckKind::Ack)
    }
}

/// True while `owner`'s heartbeat is in `dj_runners` (or when that cannot
/// be read: taking over a live runner's task would run it twice).
async fn owner_alive(bus: &Bus, owner: Option<&str>) -> bool {
    let Some(owner) = owner else { return false };
    match datajump_nats::key_value(bus.js(), &bus.names().runners_bucket()).await {
        Ok(kv) => !matches!(kv.get(owner).await, Ok(None)),
        Err(_) => true,
    }
}
