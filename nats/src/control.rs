//! Control operations: a state change committed in the database first, then
//! announced on NATS (DESIGN.md "Kill"). The CLI and, later, the API call
//! these, so both follow the same order.

use async_nats::jetstream::Context;
use chrono::Utc;
use datajump_shared::entities::task_instance;
use datajump_shared::state::{self, KilledRun};
use datajump_shared::subjects;
use sea_orm::{DatabaseConnection, DbErr};
use thiserror::Error;

use crate::{NatsError, publish_done, publish_work};

/// Why a control operation failed.
#[derive(Debug, Error)]
pub enum ControlError {
    /// The database failed (nothing changed).
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// NATS failed after the change was committed; the deadline scan and
    /// the runners' status rechecks still carry it out.
    #[error(transparent)]
    Nats(#[from] NatsError),
}

/// Kills a task instance; `None` if it had already ended (or does not exist).
pub async fn kill_instance(
    db: &DatabaseConnection,
    js: &Context,
    id: i64,
) -> Result<Option<task_instance::Model>, ControlError> {
    let txn = datajump_shared::db::begin_write(db).await?;
    let killed = state::kill(&txn, id, Utc::now()).await?;
    txn.commit().await?;
    if let Some(row) = &killed {
        announce_kills(js, std::slice::from_ref(row)).await?;
    }
    Ok(killed)
}

/// Kills a run and every live task in it; `None` if it had already ended.
pub async fn kill_run(
    db: &DatabaseConnection,
    js: &Context,
    run_id: i64,
) -> Result<Option<KilledRun>, ControlError> {
    let txn = datajump_shared::db::begin_write(db).await?;
    let killed = state::kill_run(&txn, run_id, Utc::now()).await?;
    txn.commit().await?;
    if let Some(killed) = &killed {
        announce_kills(js, &killed.killed).await?;
        for row in &killed.released.queued {
            publish_work(js, row).await?;
        }
    }
    Ok(killed)
}

/// Tells owning runners to stop killed instances, and publishes their
/// completions so children and runs move on.
async fn announce_kills(js: &Context, rows: &[task_instance::Model]) -> Result<(), NatsError> {
    for row in rows {
        if row.owner.is_some() {
            js.publish(subjects::kill(row.id), "".into())
                .await
                .map_err(|e| NatsError::JetStream {
                    what: format!("publish {}", subjects::kill(row.id)),
                    source: e.into(),
                })?;
        }
        publish_done(js, row, row.attempt - 1).await?;
    }
    Ok(())
}

/// Why a rerun, clear or mark failed.
#[derive(Debug, Error)]
pub enum ResetFailed {
    /// The reset was refused or the database failed (nothing changed).
    #[error(transparent)]
    Reset(#[from] state::ResetError),
    /// NATS failed after the change was committed; the ticker's deadline
    /// scan republishes the work of what was queued.
    #[error(transparent)]
    Nats(#[from] NatsError),
}

impl From<DbErr> for ResetFailed {
    fn from(e: DbErr) -> Self {
        ResetFailed::Reset(state::ResetError::Db(e))
    }
}

/// Reruns instances of a run in place (`rerun`, `task clear`); returns the
/// instances released at once.
pub async fn reset(
    db: &DatabaseConnection,
    js: &Context,
    run_id: i64,
    scope: state::ResetScope,
) -> Result<Vec<task_instance::Model>, ResetFailed> {
    let txn = datajump_shared::db::begin_write(db).await?;
    let released = state::reset(&txn, run_id, scope, Utc::now()).await?;
    txn.commit().await?;
    for row in &released.queued {
        publish_work(js, row).await?;
    }
    Ok(released.queued)
}

/// Marks a task instance SUCCESS or FAILED by hand (`task mark-success`,
/// `task mark-failed`); its downstream follows the new result.
pub async fn mark(
    db: &DatabaseConnection,
    js: &Context,
    id: i64,
    to: datajump_shared::TaskStatus,
) -> Result<Vec<task_instance::Model>, ResetFailed> {
    let txn = datajump_shared::db::begin_write(db).await?;
    let released = state::mark(&txn, id, to, Utc::now()).await?;
    txn.commit().await?;
    for row in &released.queued {
        publish_work(js, row).await?;
    }
    Ok(released.queued)
}
