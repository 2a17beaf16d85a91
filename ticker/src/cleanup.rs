//! Retention: runs finished longer ago than the retention period are removed
//! with their task instances, executions, dependency waits and full logs,
//! alerts older than the period too, and `dj_ticker` keys of schedules that
//! no longer exist are dropped.
//!
//! It runs inside the ticker because the ticker already owns everything
//! time-driven; two tickers cleaning at once only race into deletes of rows
//! that are already gone.

use std::collections::HashSet;
use std::time::Duration;

use chrono::Utc;
use datajump_nats::Bus;
use datajump_shared::entities::{
    alert, dag_run, dag_run_plan, dependency_wait, execution, schedule, task_instance,
};
use futures::StreamExt;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::Config;

/// How often the cleanup runs.
const EVERY: Duration = Duration::from_secs(3600);
/// Runs removed per transaction.
const BATCH: u64 = 200;

pub(crate) async fn run(config: &Config, bus: &Bus, shutdown: &CancellationToken) {
    let Some(retention) = config.retention else {
        return;
    };
    while !shutdown.is_cancelled() {
        match remove_old_runs(config, bus, retention).await {
            Ok(0) => {}
            Ok(removed) => info!(
                removed,
                retention_days = retention.num_days(),
                "old runs removed"
            ),
            Err(e) => warn!(error = %e, "retention cleanup failed; next hour retries"),
        }
        if let Err(e) = drop_stale_ticker_keys(config, bus).await {
            warn!(error = %e, "cannot clean dj_ticker keys");
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {},
            () = shutdown.cancelled() => {},
        }
    }
}

/// Removes finished runs older than `retention`; returns how many.
pub async fn remove_old_runs(
    config: &Config,
    bus: &Bus,
    retention: chrono::Duration,
) -> Result<usize, DbErr> {
    let cutoff = Utc::now() - retention;
    let logs = bus
        .js()
        .get_object_store(bus.names().logs_bucket())
        .await
        .ok();
    let mut removed = 0;
    loop {
        let runs: Vec<i64> = dag_run::Entity::find()
            .select_only()
            .column(dag_run::Column::Id)
            .filter(dag_run::Column::FinishedAt.lt(cutoff))
            .order_by_asc(dag_run::Column::Id)
            .limit(BATCH)
            .into_tuple()
            .all(&config.db)
            .await?;
        if runs.is_empty() {
            // Alerts of removed runs, and test alerts, age out the same way.
            alert::Entity::delete_many()
                .filter(alert::Column::CreatedAt.lt(cutoff))
                .exec(&config.db)
                .await?;
            return Ok(removed);
        }
        let log_names: Vec<String> = execution::Entity::find()
            .filter(execution::Column::DagRunId.is_in(runs.clone()))
            .all(&config.db)
            .await?
            .into_iter()
            .filter_map(|e| e.log_path)
            .collect();
        let txn = datajump_store::db::begin_write(&config.db).await?;
        execution::Entity::delete_many()
            .filter(execution::Column::DagRunId.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        dependency_wait::Entity::delete_many()
            .filter(dependency_wait::Column::WaiterRunId.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        task_instance::Entity::delete_many()
            .filter(task_instance::Column::DagRunId.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        dag_run_plan::Entity::delete_many()
            .filter(dag_run_plan::Column::DagRunId.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        dag_run::Entity::delete_many()
            .filter(dag_run::Column::Id.is_in(runs.clone()))
            .exec(&txn)
            .await?;
        txn.commit().await?;
        if let Some(logs) = &logs {
            for name in log_names {
                let _ = logs.delete(name.as_str()).await;
            }
        }
        removed += runs.len();
    }
}

async fn drop_stale_ticker_keys(
    config: &Config,
    bus: &Bus,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let kv = datajump_nats::key_value(bus.js(), &bus.names().ticker_bucket()).await?;
    // Ids only: a ticker may hold a million schedules.
    let live: HashSet<i64> = schedule::Entity::find()
        .select_only()
        .column(schedule::Column::Id)
        .into_tuple()
        .all(&config.db)
        .await?
        .into_iter()
        .collect();
    let mut keys = kv.keys().await?;
    while let Some(key) = keys.next().await {
        let key = key?;
        // Other installations' keys are theirs to drop.
        let stale = bus
            .installation()
            .ticker_key_schedule(&key)
            .is_some_and(|id| !live.contains(&id));
        if stale {
            kv.purge(&key).await?;
        }
    }
    Ok(())
}
