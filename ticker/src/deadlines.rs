//! The deadline scan: act on instances whose `deadline_at` has passed.

use std::time::Duration;

use async_nats::jetstream::Context;
use chrono::Utc;
use datajump_nats::publish_work;
use datajump_shared::TaskStatus;
use datajump_shared::entities::task_instance;
use datajump_shared::state;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::{Config, TickerError};

/// How often the scan runs.
const SCAN_EVERY: Duration = Duration::from_secs(1);
/// Rows handled per scan; the rest wait a second.
const BATCH: u64 = 500;

pub(crate) async fn run(
    config: &Config,
    js: &Context,
    shutdown: &CancellationToken,
) -> Result<(), TickerError> {
    while !shutdown.is_cancelled() {
        if let Err(e) = scan(config, js).await {
            warn!(error = %e, "deadline scan failed; retrying");
        }
        tokio::select! {
            () = tokio::time::sleep(SCAN_EVERY) => {},
            () = shutdown.cancelled() => {},
        }
    }
    Ok(())
}

/// Fails an instance whose cross-run dependency wait timed out, and
/// publishes what its propagation released.
async fn wait_timed_out(
    config: &Config,
    js: &Context,
    id: i64,
    now: chrono::DateTime<Utc>,
) -> Result<(), DbErr> {
    let txn = datajump_shared::db::begin_write(&config.db).await?;
    let released = state::fail_wait_timeout(&txn, id, now).await?;
    txn.commit().await?;
    for row in &released.settled {
        warn!(dag_run_id = row.dag_run_id, task_instance_id = row.id, task = %row.task_name, status = %row.status, reason = row.reason.as_deref().unwrap_or(""), "task settled by the deadline scan");
    }
    for row in &released.queued {
        if let Err(e) = publish_work(js, row).await {
            warn!(task_instance_id = row.id, error = %e, "publishing work failed; next scan retries");
        }
    }
    Ok(())
}

async fn scan(config: &Config, js: &Context) -> Result<(), DbErr> {
    let now = Utc::now();
    let due = task_instance::Entity::find()
        .filter(task_instance::Column::DeadlineAt.lte(now))
        .filter(task_instance::Column::Status.is_in([
            TaskStatus::Queued,
            TaskStatus::UpForRetry,
            TaskStatus::Pending,
        ]))
        .order_by_asc(task_instance::Column::DeadlineAt)
        .limit(BATCH)
        .all(&config.db)
        .await?;
    for row in due {
        let requeued = match row.status {
            TaskStatus::UpForRetry => {
                let queued = state::queue(&config.db, row.id, now).await?;
                if queued.is_some() {
                    info!(dag_run_id = row.dag_run_id, task_instance_id = row.id, task = %row.task_name, "retry due: task queued");
                }
                queued
            }
            TaskStatus::Pending => {
                wait_timed_out(config, js, row.id, now).await?;
                None
            }
            _ => state::touch_queued(&config.db, row.id, now).await?,
        };
        if let Some(row) = requeued
            && let Err(e) = publish_work(js, &row).await
        {
            warn!(task_instance_id = row.id, error = %e, "republishing work failed; next scan retries");
        }
    }
    Ok(())
}
