//! Rerun and clear: instances of an ended run back to PENDING in place,
//! their parent counters and the run's recomputed, the run reopened.
//!
//! A mapped task (docs/ARCHITECTURE.md, "Map") reset because its own items
//! failed, by `rerun --failed-only`, keeps its list: only its F items go
//! back to PENDING, and when it may run again its expansion resumes with
//! them. Reset any other way — a rerun of everything, a clear, or as the
//! downstream of another task — its items are deleted with their attempts,
//! and its list is read again from its current value.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use datajump_shared::entities::{dag_run, execution, large_output, task_instance};
use datajump_shared::kinds::DepType;
use datajump_shared::strategy::ParentResult;
use datajump_shared::{RunId, RunStatus, TaskStatus, TriggerType};
use datajump_store::db::begin_write;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use super::{OperatorError, retried};
use crate::effects::Effects;
use crate::propagation::{StrongResults, children};
use crate::slots::{release_roots, run_slot_free_for, run_timeout_at};
use crate::sql::{IN_LIST_MAX, Ti, TiCol};
use crate::transitions::{RunTransition, TaskTransition};

/// Which instances of a run go back to PENDING.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetScope {
    /// Every instance (`rerun RUN`).
    All,
    /// FAILED, TIMEOUT, KILLED and UPSTREAM_FAILED instances and their
    /// downstream (`rerun RUN --failed-only`).
    FailedOnly,
    /// One task, and with `downstream` everything below it (`task clear`).
    Task {
        /// The task's id.
        task_id: i64,
        /// Include its downstream.
        downstream: bool,
    },
    /// Only the downstream of one task (after `task mark-success|mark-failed`).
    Below {
        /// The task's id.
        task_id: i64,
    },
}

/// Puts instances of a run back to PENDING for another go, in place
/// (docs/ARCHITECTURE.md, "Rerun"): `attempt` keeps counting so executions stay
/// unique, the retry budget restarts, their attempts run with trigger type
/// RERUN, parent counters are recomputed from the instances left as they
/// were, and the run is RUNNING again until they finish. Parents in other
/// runs count as met. Returns what was released.
pub async fn reset(
    db: &DatabaseConnection,
    run_id: RunId,
    scope: ResetScope,
    now: DateTime<Utc>,
) -> Result<Effects, OperatorError> {
    retried(
        || async {
            let txn = begin_write(db).await?;
            let effects = reset_in(&txn, run_id.0, scope, now).await?;
            txn.commit().await?;
            Ok(effects)
        },
        OperatorError::is_deadlock,
    )
    .await
}

/// The reset in the caller's transaction: a mark of a finished instance
/// resets its downstream with it.
pub(super) async fn reset_in<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    scope: ResetScope,
    now: DateTime<Utc>,
) -> Result<Effects, OperatorError> {
    let (rows, run) = lock_instances_and_run(conn, run_id).await?;
    // A mapped task's items are the map's to reset, not tasks of the run.
    let (items, instances): (Vec<task_instance::Model>, Vec<task_instance::Model>) = rows
        .into_iter()
        .partition(task_instance::Model::is_map_item);
    let by_task: ByTask<'_> = instances.iter().map(|i| (i.task_id, i)).collect();
    let selected = select_tasks(&instances, &by_task, scope);
    refuse_live(&selected, &by_task, &run)?;
    let maps = reset_maps(conn, &items, &by_task, &selected, scope).await?;
    reset_instances(conn, &instances, &by_task, &selected, &maps).await?;
    let status = recount_run(conn, &run, &instances, &selected, now).await?;
    Ok(release_reopened_roots(conn, run_id, status, now).await?)
}

/// A run's instances by task id.
type ByTask<'a> = HashMap<i64, &'a task_instance::Model>;

/// Locks the run's instances, then the run.
async fn lock_instances_and_run<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
) -> Result<(Vec<task_instance::Model>, dag_run::Model), OperatorError> {
    // Instances before their run, in id order: the order propagation
    // locks them in (instances, then the run it counts them off).
    let instances = Ti::find()
        .filter(TiCol::DagRunId.eq(run_id))
        .order_by_asc(TiCol::Id)
        .lock_exclusive()
        .all(conn)
        .await?;
    let run = dag_run::Entity::find_by_id(run_id)
        .lock_exclusive()
        .one(conn)
        .await?
        .ok_or(OperatorError::UnknownRun(RunId(run_id)))?;
    Ok((instances, run))
}

/// The tasks `scope` selects for the reset.
fn select_tasks(
    instances: &[task_instance::Model],
    by_task: &ByTask<'_>,
    scope: ResetScope,
) -> HashSet<i64> {
    match scope {
        ResetScope::All => by_task.keys().copied().collect(),
        ResetScope::FailedOnly => downstream(
            by_task,
            instances
                .iter()
                .filter(|i| failed(i.status))
                .map(|i| i.task_id)
                .collect(),
        ),
        ResetScope::Task {
            task_id,
            downstream: false,
        } => HashSet::from([task_id]),
        ResetScope::Task { task_id, .. } => downstream(by_task, vec![task_id]),
        ResetScope::Below { task_id } => {
            let mut below = downstream(by_task, vec![task_id]);
            below.remove(&task_id);
            below
        }
    }
}

/// The tasks `seeds` and every task below them.
fn downstream(by_task: &ByTask<'_>, seeds: Vec<i64>) -> HashSet<i64> {
    let mut set: HashSet<i64> = HashSet::new();
    let mut stack = seeds;
    while let Some(task) = stack.pop() {
        if set.insert(task)
            && let Some(row) = by_task.get(&task)
        {
            stack.extend(children(row).iter().map(|(child, _)| *child));
        }
    }
    set
}

/// Refuses the reset while a selected instance or the run is still live.
fn refuse_live(
    selected: &HashSet<i64>,
    by_task: &ByTask<'_>,
    run: &dag_run::Model,
) -> Result<(), OperatorError> {
    if let Some(live) = selected
        .iter()
        .filter_map(|t| by_task.get(t))
        .find(|i| !TaskTransition::Reset.from().contains(&i.status))
    {
        return Err(OperatorError::Live(live.task_name.clone(), live.status));
    }
    // A live run's counters count its live instances; a reset recounts
    // them from scratch, so it waits for the run to end.
    if !RunTransition::Reopen.from().contains(&run.status) {
        return Err(OperatorError::RunLive(RunId(run.id), run.status));
    }
    Ok(())
}

/// Whether `status` is an end `rerun --failed-only` runs again.
fn failed(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Failed | TaskStatus::Timeout | TaskStatus::Killed | TaskStatus::UpstreamFailed
    )
}

/// The items a selected mapped task keeps, by task id: `Some(n)` items of
/// which `ended` are kept as they ended, or `None` when its list is read
/// again (its items deleted).
type MapResets = HashMap<i64, Option<(i32, i32)>>;

/// Resets the items of each selected mapped task whose list was read: its
/// F items back to PENDING when it failed and `scope` reruns the failed
/// only, or every item deleted (with its attempts) otherwise.
async fn reset_maps<C: ConnectionTrait>(
    conn: &C,
    items: &[task_instance::Model],
    by_task: &ByTask<'_>,
    selected: &HashSet<i64>,
    scope: ResetScope,
) -> Result<MapResets, DbErr> {
    let mut resets = MapResets::new();
    for (task_id, aggregate) in by_task.iter().filter(|(task, _)| selected.contains(task)) {
        let Some(made) = aggregate.map_items else {
            continue;
        };
        let mine: Vec<&task_instance::Model> = items
            .iter()
            .filter(|item| item.task_id == *task_id)
            .collect();
        if scope == ResetScope::FailedOnly && failed(aggregate.status) {
            let rerun: Vec<&task_instance::Model> = mine
                .iter()
                .copied()
                .filter(|item| failed(item.status))
                .collect();
            for item in &rerun {
                reset_update(item, 0, StrongResults::default())
                    .exec(conn)
                    .await?;
                TaskTransition::Reset.applied(item.status, TaskStatus::Pending);
            }
            let kept = i32::try_from(mine.len() - rerun.len()).unwrap_or(i32::MAX);
            resets.insert(*task_id, Some((made, kept)));
        } else {
            let ids: Vec<i64> = mine.iter().map(|item| item.id).collect();
            for chunk in ids.chunks(IN_LIST_MAX) {
                execution::Entity::delete_many()
                    .filter(execution::Column::TaskInstanceId.is_in(chunk.iter().copied()))
                    .exec(conn)
                    .await?;
                large_output::Entity::delete_many()
                    .filter(large_output::Column::TaskInstanceId.is_in(chunk.iter().copied()))
                    .exec(conn)
                    .await?;
                Ti::delete_many()
                    .filter(TiCol::Id.is_in(chunk.iter().copied()))
                    .exec(conn)
                    .await?;
            }
            resets.insert(*task_id, None);
        }
    }
    Ok(resets)
}

/// Puts each selected instance back to PENDING, its parent counters
/// recounted; a mapped task's counts of its items as `maps` says.
async fn reset_instances<C: ConnectionTrait>(
    conn: &C,
    instances: &[task_instance::Model],
    by_task: &ByTask<'_>,
    selected: &HashSet<i64>,
    maps: &MapResets,
) -> Result<(), DbErr> {
    // Same-run parents of each selected instance, from the children lists.
    let mut parents: HashMap<i64, Vec<(i64, DepType)>> = HashMap::new();
    for row in instances {
        for &(child, dep_type) in children(row) {
            parents
                .entry(child)
                .or_default()
                .push((row.task_id, dep_type));
        }
    }
    for task_id in selected {
        let Some(row) = by_task.get(task_id) else {
            continue;
        };
        let (mut pending, mut strong) = (0, StrongResults::default());
        for (parent, dep_type) in parents.get(task_id).map(Vec::as_slice).unwrap_or_default() {
            match by_task.get(parent) {
                _ if selected.contains(parent) => pending += 1,
                Some(p) if *dep_type == DepType::Strong => {
                    strong.add(p.as_parent().unwrap_or(ParentResult::Failed));
                }
                _ => {}
            }
        }
        // Parents in other runs are not in the children lists: count them met.
        let external_strong = row.strong_parents
            - parents.get(task_id).map_or(0, |p| {
                p.iter().filter(|(_, d)| *d == DepType::Strong).count() as i32
            });
        strong.succeeded += Ord::max(external_strong, 0);
        let mut update = reset_update(row, pending, strong);
        if let Some(map) = maps.get(task_id) {
            let (made, kept) = map.map_or((None, 0), |(made, kept)| (Some(made), kept));
            update = update
                .col_expr(TiCol::MapItems, Expr::value(made))
                .col_expr(TiCol::MapEnded, Expr::value(kept))
                .col_expr(TiCol::MapFailed, Expr::value(0));
        }
        update.exec(conn).await?;
        TaskTransition::Reset.applied(row.status, TaskStatus::Pending);
    }
    Ok(())
}

/// The update that puts one instance (or item) back to PENDING with
/// `pending` parents to wait for and `strong` results already counted.
fn reset_update(
    row: &task_instance::Model,
    pending: i32,
    strong: StrongResults,
) -> sea_orm::UpdateMany<Ti> {
    Ti::update_many()
        .col_expr(TiCol::Status, Expr::value(TaskStatus::Pending.as_str()))
        .col_expr(TiCol::TriggerType, Expr::value(TriggerType::Rerun.as_str()))
        .col_expr(TiCol::PendingParents, Expr::value(pending))
        .col_expr(TiCol::StrongOk, Expr::value(strong.succeeded))
        .col_expr(TiCol::StrongSkipped, Expr::value(strong.skipped))
        .col_expr(TiCol::StrongFailed, Expr::value(strong.failed))
        .col_expr(TiCol::FlowSkipped, Expr::value(false))
        .col_expr(TiCol::Propagated, Expr::value(false))
        .col_expr(TiCol::RetriesUsed, Expr::value(0))
        .col_expr(TiCol::Pokes, Expr::value(0))
        .col_expr(TiCol::Reason, Expr::value(Option::<String>::None))
        .col_expr(
            TiCol::ReasonProblem,
            Expr::value(Option::<serde_json::Value>::None),
        )
        .col_expr(TiCol::Owner, Expr::value(Option::<String>::None))
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(TiCol::StartedAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(
            TiCol::FinishedAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(TiCol::Id.eq(row.id))
        .filter(TaskTransition::Reset.applies())
}

/// Recounts the run, reopened (RUNNING or QUEUED) or ended again; returns its status.
async fn recount_run<C: ConnectionTrait>(
    conn: &C,
    run: &dag_run::Model,
    instances: &[task_instance::Model],
    selected: &HashSet<i64>,
    now: DateTime<Utc>,
) -> Result<RunStatus, DbErr> {
    let failed_kept = instances
        .iter()
        .filter(|i| !selected.contains(&i.task_id) && i.fails_its_run())
        .count();
    let pending_instances = i32::try_from(selected.len()).unwrap_or(i32::MAX);
    let reopened = pending_instances > 0;
    // A reopened run takes a run slot like a new one, or waits for one:
    // `max_active_runs` holds whatever an operator reruns.
    let slot_free = !reopened || run_slot_free_for(conn, run.dag_id, run.max_active_runs).await?;
    let (transition, status) = match (reopened, failed_kept) {
        (true, _) if slot_free => (RunTransition::Reopen, RunStatus::Running),
        (true, _) => (RunTransition::ReopenWaiting, RunStatus::Queued),
        (false, 0) => (RunTransition::Recount, RunStatus::Success),
        (false, _) => (RunTransition::Recount, RunStatus::Failed),
    };
    let updated = dag_run::Entity::update_many()
        .col_expr(dag_run::Column::Status, Expr::value(status.as_str()))
        .col_expr(
            dag_run::Column::PendingInstances,
            Expr::value(pending_instances),
        )
        .col_expr(
            dag_run::Column::FailedInstances,
            Expr::value(i32::try_from(failed_kept).unwrap_or(i32::MAX)),
        )
        .col_expr(
            dag_run::Column::FinishedAt,
            Expr::value((!reopened).then_some(now).or(run.finished_at)),
        )
        .col_expr(
            dag_run::Column::TimeoutAt,
            Expr::value(run_timeout_at(status, run.timeout_secs, now)),
        )
        .filter(dag_run::Column::Id.eq(run.id))
        .filter(transition.applies())
        .exec(conn)
        .await?;
    if updated.rows_affected == 1 {
        transition.applied(run.status, status);
    }
    Ok(status)
}

/// Releases the roots of a run reopened RUNNING.
async fn release_reopened_roots<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    status: RunStatus,
    now: DateTime<Utc>,
) -> Result<Effects, DbErr> {
    let mut out = Effects::default();
    if status == RunStatus::Running {
        release_roots(conn, &[run_id], now, &mut out).await?;
    }
    Ok(out)
}
