//! Run slots: a DAG's `max_active_runs`, counted under a lock on the DAG's
//! row, and the waiting runs that take a slot when one frees.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_shared::dag_file::OverlapPolicy;
use datajump_shared::entities::{dag, dag_run, task_instance};
use datajump_shared::{RunStatus, TaskStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

use crate::effects::Effects;
use crate::propagation::{evaluate_all, propagate_all};
use crate::sql::{IN_LIST_MAX, Ti, TiCol};
use crate::transitions::RunTransition;

/// Whether a DAG may start one more run now, under its `max_active_runs`.
/// Locks the DAG's row (see [`free_run_slots`]).
async fn run_slot_free<C: ConnectionTrait>(conn: &C, dag: &dag::Model) -> Result<bool, DbErr> {
    Ok(free_run_slots(conn, &[dag])
        .await?
        .get(&dag.id)
        .is_some_and(|free| *free > 0))
}

/// Whether DAG `dag_id` may have one more RUNNING run now: always under
/// overlap `parallel`, otherwise while under its `max_active_runs`. Locks
/// the DAG's row (see [`free_run_slots`]). For a run an operator reopens.
pub(crate) async fn run_slot_free_for<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
) -> Result<bool, DbErr> {
    match dag::Entity::find_by_id(dag_id).one(conn).await? {
        Some(dag) if dag.overlap_policy != OverlapPolicy::Parallel => {
            run_slot_free(conn, &dag).await
        }
        _ => Ok(true),
    }
}

/// How many more runs each of `dags` may start now under its
/// `max_active_runs`, keyed by DAG id. Locks the DAGs' rows in id order
/// (PostgreSQL; SQLite write transactions are already serial), so run starts
/// of one DAG cannot race past the limit and two transactions locking
/// several DAGs cannot deadlock. Two statements however many DAGs: the
/// resolver asks once for a whole batch of fires.
pub(crate) async fn free_run_slots<C: ConnectionTrait>(
    conn: &C,
    dags: &[&dag::Model],
) -> Result<HashMap<i64, u64>, DbErr> {
    let mut ids: Vec<i64> = dags.iter().map(|d| d.id).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    lock_dags(conn, &ids).await?;
    let running: HashMap<i64, i64> = dag_run::Entity::find()
        .select_only()
        .column(dag_run::Column::DagId)
        .column_as(dag_run::Column::Id.count(), "running")
        .filter(dag_run::Column::DagId.is_in(ids))
        .filter(dag_run::Column::Status.eq(RunStatus::Running))
        .group_by(dag_run::Column::DagId)
        .into_tuple::<(i64, i64)>()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    Ok(dags
        .iter()
        .map(|dag| {
            let limit = i64::from(Ord::max(dag.max_active_runs, 1));
            let taken = running.get(&dag.id).copied().unwrap_or(0);
            (dag.id, u64::try_from(limit - taken).unwrap_or(0))
        })
        .collect())
}

/// Locks the rows of DAGs `ids` (sorted, distinct) in id order, so
/// transactions that count or free a DAG's run slots take turns: one
/// creating a run sees another's finished run, or the other sees its new
/// QUEUED run (PostgreSQL; SQLite write transactions are already serial).
pub(crate) async fn lock_dags<C: ConnectionTrait>(conn: &C, ids: &[i64]) -> Result<(), DbErr> {
    for chunk in ids.chunks(IN_LIST_MAX) {
        dag::Entity::find()
            .select_only()
            .column(dag::Column::Id)
            .filter(dag::Column::Id.is_in(chunk.iter().copied()))
            .order_by_asc(dag::Column::Id)
            .lock_exclusive()
            .into_tuple::<i64>()
            .all(conn)
            .await?;
    }
    Ok(())
}

/// The PENDING instances without pending parents of `run_ids`.
pub(crate) async fn pending_roots<C: ConnectionTrait>(
    conn: &C,
    run_ids: &[i64],
) -> Result<Vec<task_instance::Model>, DbErr> {
    let mut roots = Vec::new();
    for chunk in run_ids.chunks(IN_LIST_MAX) {
        roots.extend(
            Ti::find()
                .filter(TiCol::DagRunId.is_in(chunk.iter().copied()))
                .filter(TiCol::PendingParents.eq(0))
                .filter(TiCol::Status.eq(TaskStatus::Pending))
                .all(conn)
                .await?,
        );
    }
    Ok(roots)
}

/// Releases the roots (instances with no pending parents) of RUNNING runs,
/// in a fixed number of statements however many runs: the resolver
/// releases a whole batch of new runs at once.
pub(crate) async fn release_roots<C: ConnectionTrait>(
    conn: &C,
    run_ids: &[i64],
    now: DateTime<Utc>,
    out: &mut Effects,
) -> Result<(), DbErr> {
    if run_ids.is_empty() {
        return Ok(());
    }
    let mut settled = Vec::new();
    evaluate_all(
        conn,
        &pending_roots(conn, run_ids).await?,
        now,
        out,
        &mut settled,
    )
    .await?;
    propagate_all(conn, settled, now, out).await
}

/// QUEUED → RUNNING for the waiting run of a DAG with the earliest
/// business date, when a slot is free; the caller releases its roots.
pub(crate) async fn start_waiting_run<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
) -> Result<Option<i64>, DbErr> {
    let Some(dag) = dag::Entity::find_by_id(dag_id).one(conn).await? else {
        return Ok(None);
    };
    if !run_slot_free(conn, &dag).await? {
        return Ok(None);
    }
    // The earliest batch first: later ones may depend on it.
    let Some(waiting) = dag_run::Entity::find()
        .filter(dag_run::Column::DagId.eq(dag_id))
        .filter(dag_run::Column::Status.eq(RunStatus::Queued))
        .order_by_asc(dag_run::Column::BizDate)
        .order_by_asc(dag_run::Column::Id)
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    let started = dag_run::Entity::update_many()
        .col_expr(
            dag_run::Column::Status,
            Expr::value(RunStatus::Running.as_str()),
        )
        .filter(dag_run::Column::Id.eq(waiting.id))
        .filter(RunTransition::StartWaiting.applies())
        .exec(conn)
        .await?;
    if started.rows_affected != 1 {
        return Ok(None);
    }
    RunTransition::StartWaiting.applied(RunStatus::Queued, RunStatus::Running);
    Ok(Some(waiting.id))
}

/// QUEUED → RUNNING for run `run_id` whatever its DAG's `max_active_runs`:
/// a run an active run of the same DAG waits on, which would otherwise
/// wait for the slot its waiter holds while the waiter waits for it
/// (docs/ARCHITECTURE.md "Dependency rules"). True when it started; the
/// caller releases its roots.
pub(crate) async fn start_awaited_run<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
) -> Result<bool, DbErr> {
    let started = dag_run::Entity::update_many()
        .col_expr(
            dag_run::Column::Status,
            Expr::value(RunStatus::Running.as_str()),
        )
        .filter(dag_run::Column::Id.eq(run_id))
        .filter(RunTransition::StartWaiting.applies())
        .exec(conn)
        .await?;
    if started.rows_affected != 1 {
        return Ok(false);
    }
    RunTransition::StartWaiting.applied(RunStatus::Queued, RunStatus::Running);
    Ok(true)
}
