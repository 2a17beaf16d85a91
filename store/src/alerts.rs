//! Alerts after they are configured: noticing the events a DAG's `alerts:`
//! config wants, and the `alert` rows that carry each webhook call through
//! delivery. The config itself and the rule for noticing by scanning are
//! described on [`datajump_shared::alerts`].

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use serde_json::json;

use datajump_shared::alerts::{AlertConfig, LEASE, LOOKBACK, MAX_ATTEMPTS, Webhook};
use datajump_shared::entities::{alert, dag, dag_run, execution, task_instance};
use datajump_shared::kinds::{AlertKind, AlertState, RetryStrategy};
use datajump_shared::plan::RetryPolicy;
use datajump_shared::{RunStatus, TaskStatus};

/// An event found by a scan, before it is multiplied by webhooks.
struct Event {
    kind: AlertKind,
    subject_id: i64,
    dag_run_id: Option<i64>,
    task_instance_id: Option<i64>,
    payload: serde_json::Value,
}

/// Looks for alertable events of every DAG with webhooks and records one
/// PENDING alert per (event, webhook) not recorded yet. Returns how many
/// were recorded.
pub async fn notice(db: &DatabaseConnection, now: DateTime<Utc>) -> Result<usize, DbErr> {
    let dags: Vec<(dag::Model, AlertConfig)> = dag::Entity::find()
        .filter(dag::Column::AlertConfig.is_not_null())
        .all(db)
        .await?
        .into_iter()
        .filter_map(|row| AlertConfig::from_row(&row).map(|config| (row, config)))
        .collect();
    let mut recorded = 0;
    for (dag, config) in dags {
        let events = events_of(db, &dag, &config, now).await?;
        recorded += record(db, &dag, &config.webhooks, events, now).await?;
    }
    Ok(recorded)
}

async fn events_of(
    db: &DatabaseConnection,
    dag: &dag::Model,
    config: &AlertConfig,
    now: DateTime<Utc>,
) -> Result<Vec<Event>, DbErr> {
    let since = now - LOOKBACK;
    let wants = |kind| config.wants(kind);
    let mut events = Vec::new();
    let run_payload = |kind: AlertKind, run: &dag_run::Model, message: String| {
        json!({
            "kind": kind.as_str(), "dag": dag.name, "dagId": dag.id, "runId": run.id,
            "runKey": run.dedup_key, "bizDate": run.biz_date, "logicalTime": run.logical_time,
            "status": run.status.as_str(), "message": message,
        })
    };
    if wants(AlertKind::RunFailed) {
        let runs = dag_run::Entity::find()
            .filter(dag_run::Column::DagId.eq(dag.id))
            .filter(dag_run::Column::Status.is_in([RunStatus::Failed, RunStatus::Timeout]))
            .filter(dag_run::Column::FinishedAt.gte(since))
            .all(db)
            .await?;
        events.extend(runs.iter().map(|run| Event {
            kind: AlertKind::RunFailed,
            subject_id: run.id,
            dag_run_id: Some(run.id),
            task_instance_id: None,
            payload: run_payload(
                AlertKind::RunFailed,
                run,
                if run.status == RunStatus::Timeout {
                    format!(
                        "DAG {} run {} ({}) timed out after {}s: its unfinished tasks were killed",
                        dag.name,
                        run.id,
                        run.biz_date,
                        run.timeout_secs.unwrap_or_default()
                    )
                } else {
                    format!(
                        "DAG {} run {} ({}) failed: {} task(s) did not succeed",
                        dag.name, run.id, run.biz_date, run.failed_instances
                    )
                },
            ),
        }));
    }
    if wants(AlertKind::SlaMiss)
        && let Some(sla) = config.sla
    {
        let due = now - Duration::seconds(i64::from(sla));
        let late = dag_run::Entity::find()
            .filter(dag_run::Column::DagId.eq(dag.id))
            .filter(dag_run::Column::Status.is_in([RunStatus::Queued, RunStatus::Running]))
            .filter(dag_run::Column::LogicalTime.lte(due))
            .filter(dag_run::Column::LogicalTime.gte(due - LOOKBACK))
            .all(db)
            .await?;
        events.extend(late.iter().map(|run| Event {
            kind: AlertKind::SlaMiss,
            subject_id: run.id,
            dag_run_id: Some(run.id),
            task_instance_id: None,
            payload: run_payload(
                AlertKind::SlaMiss,
                run,
                format!(
                    "DAG {} run {} ({}) is not finished {sla}s after its logical time",
                    dag.name, run.id, run.biz_date
                ),
            ),
        }));
    }
    if wants(AlertKind::TaskFailed) {
        let failed = task_instance::Entity::find()
            .filter(task_instance::Column::DagId.eq(dag.id))
            .filter(task_instance::Column::Status.is_in([TaskStatus::Failed, TaskStatus::Timeout]))
            .filter(task_instance::Column::FinishedAt.gte(since))
            .all(db)
            .await?;
        events.extend(failed.iter().map(|ti| Event {
            kind: AlertKind::TaskFailed,
            subject_id: ti.id,
            dag_run_id: Some(ti.dag_run_id),
            task_instance_id: Some(ti.id),
            payload: json!({
                "kind": AlertKind::TaskFailed.as_str(), "dag": dag.name, "dagId": dag.id,
                "runId": ti.dag_run_id, "taskName": ti.task_name, "taskInstanceId": ti.id,
                "bizDate": ti.biz_date, "status": ti.status.as_str(), "attempts": ti.attempt,
                "reason": ti.reason,
                "message": format!(
                    "task {} of DAG {} ({}) ended {}: {}",
                    ti.task_name, dag.name, ti.biz_date, ti.status,
                    ti.reason.as_deref().unwrap_or("no reason recorded")
                ),
            }),
        }));
    }
    if wants(AlertKind::Timeout) {
        let of_this_dag = Query::select()
            .column(task_instance::Column::Id)
            .from(task_instance::Entity)
            .and_where(task_instance::Column::DagId.eq(dag.id))
            .to_owned();
        let timed_out = execution::Entity::find()
            .filter(execution::Column::TaskInstanceId.in_subquery(of_this_dag))
            .filter(execution::Column::Status.eq(TaskStatus::Timeout))
            .filter(execution::Column::EndTime.gte(since))
            .all(db)
            .await?;
        let instances: BTreeMap<i64, task_instance::Model> = task_instance::Entity::find()
            .filter(task_instance::Column::Id.is_in(timed_out.iter().map(|e| e.task_instance_id)))
            .all(db)
            .await?
            .into_iter()
            .map(|ti| (ti.id, ti))
            .collect();
        events.extend(timed_out.iter().filter_map(|exec| {
            let ti = instances.get(&exec.task_instance_id)?;
            Some(Event {
                kind: AlertKind::Timeout,
                subject_id: exec.id,
                dag_run_id: Some(exec.dag_run_id),
                task_instance_id: Some(ti.id),
                payload: json!({
                    "kind": AlertKind::Timeout.as_str(), "dag": dag.name, "dagId": dag.id,
                    "runId": exec.dag_run_id, "taskName": ti.task_name,
                    "taskInstanceId": ti.id, "executionId": exec.id, "attempt": exec.attempt,
                    "bizDate": exec.biz_date, "durationMs": exec.duration_ms,
                    "message": format!(
                        "task {} of DAG {} ({}) timed out on attempt {}",
                        ti.task_name, dag.name, exec.biz_date, exec.attempt
                    ),
                }),
            })
        }));
    }
    Ok(events)
}

/// Inserts the alerts of `events` not recorded yet; returns how many.
async fn record(
    db: &DatabaseConnection,
    dag: &dag::Model,
    webhooks: &[Webhook],
    events: Vec<Event>,
    now: DateTime<Utc>,
) -> Result<usize, DbErr> {
    let mut rows = Vec::new();
    for event in events {
        for (index, hook) in webhooks.iter().enumerate() {
            rows.push(new_row(
                dag.id,
                &format!("{}:{}:{index}", event.kind.as_str(), event.subject_id),
                &event,
                hook,
                now,
            ));
        }
    }
    if rows.is_empty() {
        return Ok(0);
    }
    let keys: Vec<String> = rows
        .iter()
        .filter_map(|row| match &row.dedup_key {
            Set(key) => Some(key.clone()),
            _ => None,
        })
        .collect();
    let known: BTreeSet<String> = alert::Entity::find()
        .select_only()
        .column(alert::Column::DedupKey)
        .filter(alert::Column::DedupKey.is_in(keys))
        .into_tuple::<String>()
        .all(db)
        .await?
        .into_iter()
        .collect();
    let fresh: Vec<alert::ActiveModel> = rows
        .into_iter()
        .filter(|row| matches!(&row.dedup_key, Set(key) if !known.contains(key)))
        .collect();
    let count = fresh.len();
    if count > 0 {
        // Another ticker may insert the same key between our read and write.
        alert::Entity::insert_many(fresh)
            .on_conflict_do_nothing_on([alert::Column::DedupKey])
            .exec_without_returning(db)
            .await?;
    }
    Ok(count)
}

fn new_row(
    dag_id: i64,
    dedup_key: &str,
    event: &Event,
    hook: &Webhook,
    now: DateTime<Utc>,
) -> alert::ActiveModel {
    alert::ActiveModel {
        dag_id: Set(dag_id),
        dag_run_id: Set(event.dag_run_id),
        task_instance_id: Set(event.task_instance_id),
        kind: Set(event.kind),
        dedup_key: Set(dedup_key.to_owned()),
        target: Set(serde_json::to_value(hook).unwrap_or_default()),
        payload: Set(event.payload.clone()),
        status: Set(AlertState::Pending),
        attempts: Set(0),
        next_attempt_at: Set(now),
        created_at: Set(now),
        ..Default::default()
    }
}

/// Records a `test` alert for each of the DAG's webhooks, due at once;
/// returns them. `None` when the DAG has no alert config.
pub async fn record_test(
    db: &DatabaseConnection,
    dag: &dag::Model,
    now: DateTime<Utc>,
) -> Result<Option<Vec<alert::Model>>, DbErr> {
    let Some(config) = AlertConfig::from_row(dag) else {
        return Ok(None);
    };
    let event = Event {
        kind: AlertKind::Test,
        subject_id: now.timestamp_micros(),
        dag_run_id: None,
        task_instance_id: None,
        payload: json!({
            "kind": AlertKind::Test.as_str(), "dag": dag.name, "dagId": dag.id,
            "message": format!("test alert of DAG {}: this webhook works", dag.name),
        }),
    };
    let mut rows = Vec::new();
    for (index, hook) in config.webhooks.iter().enumerate() {
        let key = format!("test:{}:{index}", event.subject_id);
        let row = alert::Entity::insert(new_row(dag.id, &key, &event, hook, now))
            .exec_with_returning(db)
            .await?;
        rows.push(row);
    }
    Ok(Some(rows))
}

/// Takes up to `limit` alerts that are due (PENDING whose time has come, or
/// SENDING whose sender's lease ran out) for this caller to send: each is
/// moved to SENDING with a fresh lease by a conditional update, so two
/// tickers never send the same one at once.
pub async fn take_due(
    db: &DatabaseConnection,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<alert::Model>, DbErr> {
    let due = alert::Entity::find()
        .filter(alert::Column::Status.is_in([AlertState::Pending, AlertState::Sending]))
        .filter(alert::Column::NextAttemptAt.lte(now))
        .order_by_asc(alert::Column::NextAttemptAt)
        .limit(limit)
        .all(db)
        .await?;
    let mut taken = Vec::new();
    for row in due {
        if take(db, &row, now).await? {
            taken.push(row);
        }
    }
    Ok(taken)
}

/// Moves `row` (as read, PENDING or SENDING with an expired lease) to
/// SENDING with a fresh lease; false when someone else changed it first.
pub async fn take(
    db: &DatabaseConnection,
    row: &alert::Model,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let won = alert::Entity::update_many()
        .col_expr(
            alert::Column::Status,
            Expr::value(AlertState::Sending.as_str()),
        )
        .col_expr(alert::Column::NextAttemptAt, (now + LEASE).into())
        .filter(alert::Column::Id.eq(row.id))
        .filter(alert::Column::Status.eq(row.status.as_str()))
        .filter(alert::Column::NextAttemptAt.eq(row.next_attempt_at))
        .exec(db)
        .await?;
    Ok(won.rows_affected == 1)
}

/// How one delivery attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The target answered 2xx.
    Sent {
        /// Its status.
        status: u16,
    },
    /// It did not; the error says why (an HTTP status or a connection error).
    Failed {
        /// The status, if there was an answer.
        status: Option<u16>,
        /// Why, for people (no secret values).
        error: String,
    },
    /// It was not sent and never will be, so it is not retried: its DAG
    /// was deleted, or its webhook is a destination alert webhooks may not
    /// reach (docs/SECURITY.md "HTTP destinations").
    Refused {
        /// Why, for people.
        error: String,
    },
}

/// How a webhook that failed is tried again: 2 s doubling, at most 5 min,
/// the same arithmetic as a task's retries.
const DELIVERY_RETRY: RetryPolicy = RetryPolicy {
    max: MAX_ATTEMPTS - 1,
    interval_secs: 2,
    strategy: RetryStrategy::Exponential,
    on_exit_codes: Vec::new(),
    on_timeout: false,
    max_interval_secs: 300,
    jitter_pct: 0,
};

/// The wait before retry `attempts` (1-based).
pub fn retry_delay(attempts: i32) -> Duration {
    Duration::seconds(DELIVERY_RETRY.delay_secs(attempts.max(1), 0.0))
}

/// Records the outcome of the attempt on `taken` (SENDING): SENT, or PENDING
/// again after [`retry_delay`], or FAILED after [`MAX_ATTEMPTS`] or at once
/// when [`Delivery::Refused`]. Returns the new status.
pub async fn record_delivery(
    db: &DatabaseConnection,
    taken: &alert::Model,
    delivery: &Delivery,
    now: DateTime<Utc>,
) -> Result<AlertState, DbErr> {
    let attempts = taken.attempts + 1;
    let mut update = alert::Entity::update_many()
        .col_expr(alert::Column::Attempts, attempts.into())
        .filter(alert::Column::Id.eq(taken.id))
        .filter(alert::Column::Status.eq(AlertState::Sending));
    let new_status = match delivery {
        Delivery::Sent { status: code } => {
            update = update
                .col_expr(alert::Column::SentAt, Some(now).into())
                .col_expr(alert::Column::ResponseStatus, Some(i32::from(*code)).into())
                .col_expr(alert::Column::LastError, Option::<String>::None.into());
            AlertState::Sent
        }
        Delivery::Failed {
            status: code,
            error,
        } => {
            update = update
                .col_expr(alert::Column::LastError, Some(error.clone()).into())
                .col_expr(alert::Column::ResponseStatus, code.map(i32::from).into())
                .col_expr(
                    alert::Column::NextAttemptAt,
                    (now + retry_delay(attempts)).into(),
                );
            if attempts >= MAX_ATTEMPTS {
                AlertState::Failed
            } else {
                AlertState::Pending
            }
        }
        Delivery::Refused { error } => {
            update = update
                .col_expr(alert::Column::LastError, Some(error.clone()).into())
                .col_expr(alert::Column::ResponseStatus, Option::<i32>::None.into());
            AlertState::Failed
        }
    };
    update
        .col_expr(alert::Column::Status, Expr::value(new_status.as_str()))
        .exec(db)
        .await?;
    Ok(new_status)
}

/// A DAG's alerts, newest first, `limit` from `offset`.
pub async fn list(
    db: &DatabaseConnection,
    dag_id: i64,
    offset: u64,
    limit: u64,
) -> Result<Vec<alert::Model>, DbErr> {
    alert::Entity::find()
        .filter(Condition::all().add(alert::Column::DagId.eq(dag_id)))
        .order_by_desc(alert::Column::Id)
        .offset(offset)
        .limit(limit)
        .all(db)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_double_up_to_five_minutes() {
        let delays: Vec<i64> = (1..=10).map(|a| retry_delay(a).num_seconds()).collect();
        assert_eq!(delays, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    }
}
