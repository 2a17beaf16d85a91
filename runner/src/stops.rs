//! How this runner's attempts are stopped: a kill switch per attempt,
//! pulled by `dj.kill.<id>` once the database confirms it or by a status
//! recheck, and the drain token pulled at the drain timeout.

use std::sync::Arc;

use datajump_shared::TaskStatus;
use datajump_shared::entities::task_instance;
use datajump_shared::subjects::Namespace;
use futures::StreamExt;
use sea_orm::{DatabaseConnection, DbErr, EntityTrait};
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// instance and attempt (0-based).
pub(crate) type Running =
    Arc<std::sync::Mutex<std::collections::BTreeMap<(i64, i32), CancellationToken>>>;

/// How this runner's attempts can be stopped.
#[derive(Clone)]
pub(crate) struct Stops {
    /// Cancelled at the drain timeout: every attempt stops and is requeued.
    pub(crate) drain: CancellationToken,
    /// Per-attempt kill switches, pulled by `dj.kill.<id>` or a status
    /// recheck. A handler holds its attempt's from before its claim until
    /// the attempt is recorded, so that while the database says an attempt
    /// is this runner's, this map says whether a process of it exists here.
    pub(crate) running: Running,
}

impl Stops {
    /// The kill switch of `claim`'s attempt, held by the caller until
    /// [`Stops::release`]; `None` if another handler already holds it (a
    /// second copy of the same work message).
    pub(crate) fn hold(&self, claim: datajump_engine::Claim) -> Option<CancellationToken> {
        let mut running = self.running.lock().ok()?;
        let key = (claim.task_instance_id.0, claim.attempt);
        if running.contains_key(&key) {
            return None;
        }
        let token = self.drain.child_token();
        running.insert(key, token.clone());
        Some(token)
    }

    pub(crate) fn release(&self, claim: datajump_engine::Claim) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(&(claim.task_instance_id.0, claim.attempt));
        }
    }

    /// Whether a handler holds attempt `attempt` of the instance.
    pub(crate) fn holds(&self, task_instance_id: i64, attempt: i32) -> bool {
        self.running
            .lock()
            .is_ok_and(|running| running.contains_key(&(task_instance_id, attempt)))
    }

    fn is_running(&self, task_instance_id: i64) -> bool {
        self.running.lock().is_ok_and(|running| {
            running
                .range((task_instance_id, i32::MIN)..=(task_instance_id, i32::MAX))
                .next()
                .is_some()
        })
    }

    fn kill(&self, task_instance_id: i64) {
        if let Ok(running) = self.running.lock() {
            for (_, token) in
                running.range((task_instance_id, i32::MIN)..=(task_instance_id, i32::MAX))
            {
                token.cancel();
            }
        }
    }
}

/// Listens on `dj.kill.*` and pulls the kill switch of attempts running
/// here, once the database confirms the kill: a kill message is a wake-up,
/// and one published by anyone but the engine must not stop work the
/// database says is still this runner's.
pub(crate) async fn kill_listener(config: KillCheck, stops: Stops, shutdown: CancellationToken) {
    let KillCheck {
        nats,
        names,
        db,
        runner_id,
    } = config;
    let mut kills = match nats.subscribe(names.kill_all()).await {
        Ok(kills) => kills,
        Err(e) => {
            warn!(error = %e, "cannot listen for kills; status rechecks still stop killed tasks");
            return;
        }
    };
    loop {
        tokio::select! {
            message = kills.next() => {
                let Some(message) = message else { return };
                let id = message.subject.as_str().rsplit('.').next().and_then(|id| id.parse::<i64>().ok());
                if let Some(id) = id.filter(|id| stops.is_running(*id)) {
                    match still_ours(&db, id, &runner_id).await {
                        Ok(false) => stops.kill(id),
                        Ok(true) => warn!(task_instance_id = id, "kill message for an attempt the database says is still running here; ignored"),
                        // The status recheck every few seconds retries.
                        Err(e) => warn!(task_instance_id = id, error = %e, "cannot confirm a kill; the next status recheck will"),
                    }
                }
            }
            () = shutdown.cancelled() => return,
        }
    }
}

/// What the kill listener needs to confirm a kill.
pub(crate) struct KillCheck {
    pub(crate) nats: async_nats::Client,
    pub(crate) names: Namespace,
    pub(crate) db: DatabaseConnection,
    pub(crate) runner_id: String,
}

/// Whether the instance is RUNNING under `runner_id`: its attempt should
/// go on.
pub(crate) async fn still_ours(
    db: &DatabaseConnection,
    id: i64,
    runner_id: &str,
) -> Result<bool, DbErr> {
    Ok(task_instance::Entity::find_by_id(id)
        .one(db)
        .await?
        .is_some_and(|row| {
            row.status == TaskStatus::Running && row.owner.as_deref() == Some(runner_id)
        }))
}
