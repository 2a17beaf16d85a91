//! Operator actions: kill a task or a run, rerun a run or clear tasks in
//! place, mark a task SUCCESS or FAILED. Each is one transaction through the
//! same transitions as the engine's own, followed by propagation; the
//! caller publishes the returned [`Effects`] (kill notices, completions,
//! released work) after it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_shared::entities::{dag_run, dependency_wait, task_instance};
use datajump_shared::kinds::DepType;
use datajump_shared::{RunId, RunStatus, TaskInstanceId, TaskStatus, TriggerType};
use datajump_store::db::{begin_write, is_deadlock};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use crate::effects::Effects;
use crate::propagation::{children, propagate_all};
use crate::slots::{release_roots, run_slot_free_for, run_timeout_at, start_waiting_run};
use crate::sql::{Ti, TiCol, update_instance};
use crate::transitions::{RunTransition, TaskTransition};
use crate::waits::start_awaited_runs;

/// Any live status → KILLED (docs/ARCHITECTURE.md, "Kill": the database first, then the
/// message). Returns the killed instance, `None` if it had already ended
/// (or does not exist), with its completion owed and, if a runner held it,
/// a kill notice to that runner.
pub async fn kill_instance(
    db: &DatabaseConnection,
    id: TaskInstanceId,
) -> Result<Option<(task_instance::Model, Effects)>, OperatorError> {
    let killed = retried(
        || async {
            let txn = begin_write(db).await?;
            refuse_in_waiting_run(&txn, id.0).await?;
            let killed = kill(&txn, id.0, Utc::now()).await?;
            txn.commit().await?;
            Ok(killed)
        },
        OperatorError::is_deadlock,
    )
    .await?;
    Ok(killed.map(|(row, before)| {
        let mut effects = Effects::default();
        effects.announce_kills(std::slice::from_ref(&row), &before);
        (row, effects)
    }))
}

/// Refuses an action on one task of a run that waits for a slot
/// ([`OperatorError::RunWaiting`]).
async fn refuse_in_waiting_run<C: ConnectionTrait>(conn: &C, id: i64) -> Result<(), OperatorError> {
    let Some(run_id) = Ti::find_by_id(id)
        .select_only()
        .column(TiCol::DagRunId)
        .into_tuple::<i64>()
        .one(conn)
        .await?
    else {
        return Ok(());
    };
    match dag_run::Entity::find_by_id(run_id).one(conn).await? {
        Some(run) if run.status == RunStatus::Queued => {
            Err(OperatorError::RunWaiting(RunId(run.id)))
        }
        _ => Ok(()),
    }
}

/// Kills instance `id`; returns it with the statuses it had before.
async fn kill<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<(task_instance::Model, HashMap<i64, TaskStatus>)>, DbErr> {
    let before = live_statuses(conn, TiCol::Id.eq(id)).await?;
    let killed = update_instance(
        conn,
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Killed.as_str()))
            .col_expr(TiCol::Reason, Expr::value("killed by a user"))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(TiCol::Id.eq(id))
            .filter(TaskTransition::Kill.applies()),
    )
    .await?;
    killed_from(&before, killed.as_slice());
    Ok(killed.map(|row| (row, before)))
}

/// The statuses of the instances `selected` that a kill applies to, by id,
/// locked so they cannot change before the kill's update (an operator
/// action: the extra read costs nothing that matters).
async fn live_statuses<C: ConnectionTrait>(
    conn: &C,
    selected: sea_orm::sea_query::SimpleExpr,
) -> Result<HashMap<i64, TaskStatus>, DbErr> {
    Ok(Ti::find()
        .select_only()
        .columns([TiCol::Id, TiCol::Status])
        .filter(selected)
        .filter(TaskTransition::Kill.applies())
        .order_by_asc(TiCol::Id)
        .lock_exclusive()
        .into_tuple::<(i64, TaskStatus)>()
        .all(conn)
        .await?
        .into_iter()
        .collect())
}

fn killed_from(before: &HashMap<i64, TaskStatus>, killed: &[task_instance::Model]) {
    for row in killed {
        if let Some(&from) = before.get(&row.id) {
            TaskTransition::Kill.applied(from, row.status);
        }
    }
}

/// Why a run ends before its tasks do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunCut {
    /// An operator killed it.
    Killed,
    /// Its run timeout passed.
    TimedOut,
}

impl RunCut {
    fn transition(self) -> RunTransition {
        match self {
            Self::Killed => RunTransition::Kill,
            Self::TimedOut => RunTransition::TimeOut,
        }
    }

    fn status(self) -> RunStatus {
        match self {
            Self::Killed => RunStatus::Killed,
            Self::TimedOut => RunStatus::Timeout,
        }
    }

    /// The reason its killed instances get.
    fn reason(self, run: &dag_run::Model) -> String {
        match self {
            Self::Killed => "the run was killed".to_owned(),
            Self::TimedOut => format!(
                "the run timed out: it was RUNNING longer than its timeout of {} (the schedule's timeout, else the DAG's run_timeout)",
                datajump_shared::duration::describe(run.timeout_secs.unwrap_or_default().into())
            ),
        }
    }
}

/// RUNNING or QUEUED run → KILLED, with every live instance KILLED; a
/// waiting run of the DAG takes the freed slot. `None` if the run had
/// already ended. Returns the instances killed, whose completions and kill
/// notices are owed with the work of the run that took the slot.
pub async fn kill_run(
    db: &DatabaseConnection,
    run_id: RunId,
) -> Result<Option<(Vec<task_instance::Model>, Effects)>, DbErr> {
    cut_run(db, run_id, RunCut::Killed).await
}

/// RUNNING run past its `timeout_at` → TIMEOUT, its live instances killed
/// as [`kill_run`] kills them, with a reason naming the timeout (the
/// ticker's deadline scan). `None` if the run had already ended, or was
/// reopened with a later deadline meanwhile.
pub async fn run_timed_out(
    db: &DatabaseConnection,
    run_id: RunId,
) -> Result<Option<(Vec<task_instance::Model>, Effects)>, DbErr> {
    cut_run(db, run_id, RunCut::TimedOut).await
}

async fn cut_run(
    db: &DatabaseConnection,
    run_id: RunId,
    cut: RunCut,
) -> Result<Option<(Vec<task_instance::Model>, Effects)>, DbErr> {
    retried(
        || async {
            let txn = begin_write(db).await?;
            let killed = kill_run_in(&txn, run_id.0, cut, Utc::now()).await?;
            txn.commit().await?;
            Ok(killed)
        },
        is_deadlock,
    )
    .await
}

async fn kill_run_in<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    cut: RunCut,
    now: DateTime<Utc>,
) -> Result<Option<(Vec<task_instance::Model>, Effects)>, DbErr> {
    // Instances before their run, the order propagation locks them in.
    let live = live_statuses(conn, TiCol::DagRunId.eq(run_id)).await?;
    let Some(before) = dag_run::Entity::find_by_id(run_id)
        .lock_exclusive()
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    let mut update = dag_run::Entity::update_many()
        .col_expr(dag_run::Column::Status, Expr::value(cut.status().as_str()))
        .col_expr(dag_run::Column::FinishedAt, Expr::value(now))
        .filter(dag_run::Column::Id.eq(run_id))
        .filter(cut.transition().applies());
    if cut == RunCut::TimedOut {
        update = update.filter(dag_run::Column::TimeoutAt.lte(now));
    }
    let Some(run) = update.exec_with_returning(conn).await?.into_iter().next() else {
        return Ok(None);
    };
    cut.transition().applied(before.status, run.status);
    let killed = Ti::update_many()
        .col_expr(TiCol::Status, Expr::value(TaskStatus::Killed.as_str()))
        .col_expr(TiCol::Reason, Expr::value(cut.reason(&run)))
        .col_expr(TiCol::FinishedAt, Expr::value(now))
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(TiCol::DagRunId.eq(run_id))
        .filter(TaskTransition::Kill.applies())
        .exec_with_returning(conn)
        .await?;
    killed_from(&live, &killed);
    let mut effects = Effects::default();
    effects.announce_kills(&killed, &live);
    effects.finished_runs.push((run_id, run.status));
    if let Some(started) = start_waiting_run(conn, run.dag_id, now).await? {
        let mut runs = vec![started];
        runs.extend(start_awaited_runs(conn, &runs, now).await?);
        effects.started_runs.extend(&runs);
        release_roots(conn, &runs, now, &mut effects).await?;
    }
    Ok(Some((killed, effects)))
}

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

/// Why instances cannot be reset.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// No such run.
    #[error("no run {0}")]
    UnknownRun(RunId),
    /// No such task instance.
    #[error("no task instance {0}")]
    UnknownInstance(TaskInstanceId),
    /// Something to reset is still live.
    #[error("task '{0}' is {1}: wait for it to finish or kill it first")]
    Live(String, TaskStatus),
    /// The run is still QUEUED or RUNNING.
    #[error("run {0} is {1}: wait for it to finish or kill it first")]
    RunLive(RunId, RunStatus),
    /// A mark names a status a task cannot be marked.
    #[error("a task instance can be marked SUCCESS or FAILED, not {0}")]
    NotAMark(TaskStatus),
    /// The task's run waits for a run slot: none of its tasks has started,
    /// and settling one would start its children outside the slot.
    #[error(
        "run {0} is QUEUED, waiting for a slot under its DAG's max_active_runs: kill the whole run, or act on its tasks once it runs"
    )]
    RunWaiting(RunId),
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
) -> Result<Effects, OperatorError> {
    retried(
        || async {
            let txn = begin_write(db).await?;
            let effects = reset_in(&txn, run_id.0, scope, Utc::now()).await?;
            txn.commit().await?;
            Ok(effects)
        },
        OperatorError::is_deadlock,
    )
    .await
}

async fn reset_in<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    scope: ResetScope,
    now: DateTime<Utc>,
) -> Result<Effects, OperatorError> {
    use std::collections::HashSet;
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
    let by_task: HashMap<i64, &task_instance::Model> =
        instances.iter().map(|i| (i.task_id, i)).collect();
    let downstream = |seeds: Vec<i64>| {
        let mut set: HashSet<i64> = HashSet::new();
        let mut stack = seeds;
        while let Some(task) = stack.pop() {
            if set.insert(task)
                && let Some(row) = by_task.get(&task)
            {
                stack.extend(children(row).into_iter().map(|(child, _)| child));
            }
        }
        set
    };
    let selected: HashSet<i64> = match scope {
        ResetScope::All => by_task.keys().copied().collect(),
        ResetScope::FailedOnly => downstream(
            instances
                .iter()
                .filter(|i| {
                    matches!(
                        i.status,
                        TaskStatus::Failed
                            | TaskStatus::Timeout
                            | TaskStatus::Killed
                            | TaskStatus::UpstreamFailed
                    )
                })
                .map(|i| i.task_id)
                .collect(),
        ),
        ResetScope::Task {
            task_id,
            downstream: false,
        } => HashSet::from([task_id]),
        ResetScope::Task { task_id, .. } => downstream(vec![task_id]),
        ResetScope::Below { task_id } => {
            let mut below = downstream(vec![task_id]);
            below.remove(&task_id);
            below
        }
    };
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
        return Err(OperatorError::RunLive(RunId(run_id), run.status));
    }
    // Same-run parents of each selected instance, from the children lists.
    let mut parents: HashMap<i64, Vec<(i64, DepType)>> = HashMap::new();
    for row in &instances {
        for (child, dep_type) in children(row) {
            parents
                .entry(child)
                .or_default()
                .push((row.task_id, dep_type));
        }
    }
    for task_id in &selected {
        let Some(row) = by_task.get(task_id) else {
            continue;
        };
        let (mut pending, mut ok, mut failed) = (0, 0, 0);
        for (parent, dep_type) in parents.get(task_id).map(Vec::as_slice).unwrap_or_default() {
            let strong = *dep_type == DepType::Strong;
            match by_task.get(parent) {
                _ if selected.contains(parent) => pending += 1,
                Some(p) if strong && p.status.counts_as_success() => ok += 1,
                Some(_) if strong => failed += 1,
                _ => {}
            }
        }
        // Parents in other runs are not in the children lists: count them met.
        let external_strong = row.strong_parents
            - parents.get(task_id).map_or(0, |p| {
                p.iter().filter(|(_, d)| *d == DepType::Strong).count() as i32
            });
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Pending.as_str()))
            .col_expr(TiCol::TriggerType, Expr::value(TriggerType::Rerun.as_str()))
            .col_expr(TiCol::PendingParents, Expr::value(pending))
            .col_expr(
                TiCol::StrongOk,
                Expr::value(ok + Ord::max(external_strong, 0)),
            )
            .col_expr(TiCol::StrongFailed, Expr::value(failed))
            .col_expr(TiCol::Propagated, Expr::value(false))
            .col_expr(TiCol::RetriesUsed, Expr::value(0))
            .col_expr(TiCol::Pokes, Expr::value(0))
            .col_expr(TiCol::Reason, Expr::value(Option::<String>::None))
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
            .exec(conn)
            .await?;
        TaskTransition::Reset.applied(row.status, TaskStatus::Pending);
    }
    let failed_kept = instances
        .iter()
        .filter(|i| !selected.contains(&i.task_id) && !i.status.counts_as_success())
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
        .filter(dag_run::Column::Id.eq(run_id))
        .filter(transition.applies())
        .exec(conn)
        .await?;
    if updated.rows_affected == 1 {
        transition.applied(run.status, status);
    }
    let mut out = Effects::default();
    if status == RunStatus::Running {
        release_roots(conn, &[run_id], now, &mut out).await?;
    }
    Ok(out)
}

/// Marks a task instance SUCCESS or FAILED by hand. A live (not RUNNING)
/// instance is settled and propagated; a finished one is changed and its
/// downstream put back to PENDING so it follows the new result. Returns
/// what was released.
pub async fn mark(
    db: &DatabaseConnection,
    id: TaskInstanceId,
    to: TaskStatus,
) -> Result<Effects, OperatorError> {
    retried(
        || async {
            let txn = begin_write(db).await?;
            let effects = mark_in(&txn, id.0, to, Utc::now()).await?;
            txn.commit().await?;
            Ok(effects)
        },
        OperatorError::is_deadlock,
    )
    .await
}

/// How often an operator action's transaction is run when PostgreSQL keeps
/// choosing it as a deadlock's victim.
const DEADLOCK_ATTEMPTS: usize = 3;

/// Runs an operator action's transaction again when it was a deadlock's
/// victim: it locks rows a concurrent propagation may be updating, in an
/// order a multi-row update cannot promise, and a victim changed nothing.
async fn retried<T, E, F, Fut>(mut transaction: F, deadlocked: fn(&E) -> bool) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut attempt = 1;
    loop {
        match transaction().await {
            Err(e) if deadlocked(&e) && attempt < DEADLOCK_ATTEMPTS => attempt += 1,
            result => return result,
        }
    }
}

impl OperatorError {
    fn is_deadlock(&self) -> bool {
        matches!(self, OperatorError::Db(e) if is_deadlock(e))
    }
}

async fn mark_in<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    to: TaskStatus,
    now: DateTime<Utc>,
) -> Result<Effects, OperatorError> {
    let row = Ti::find_by_id(id)
        .lock_exclusive()
        .one(conn)
        .await?
        .ok_or(OperatorError::UnknownInstance(TaskInstanceId(id)))?;
    if !TaskTransition::Mark.to().contains(&to) {
        return Err(OperatorError::NotAMark(to));
    }
    if !TaskTransition::Mark.from().contains(&row.status) {
        return Err(OperatorError::Live(row.task_name, row.status));
    }
    refuse_in_waiting_run(conn, id).await?;
    let reason = format!("marked {to} by a user");
    Ti::update_many()
        .col_expr(TiCol::Status, Expr::value(to.as_str()))
        .col_expr(TiCol::Reason, Expr::value(reason))
        .col_expr(TiCol::FinishedAt, Expr::value(now))
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(TiCol::Id.eq(id))
        .filter(TaskTransition::Mark.applies())
        .exec(conn)
        .await?;
    TaskTransition::Mark.applied(row.status, to);
    if row.propagated {
        // The reset also recounts the run's failures with the new result.
        reset_in(
            conn,
            row.dag_run_id,
            ResetScope::Below {
                task_id: row.task_id,
            },
            now,
        )
        .await
    } else {
        dependency_wait::Entity::delete_many()
            .filter(dependency_wait::Column::WaiterInstanceId.eq(id))
            .exec(conn)
            .await?;
        let mut effects = Effects::default();
        propagate_all(conn, vec![id], now, &mut effects).await?;
        Ok(effects)
    }
}
