//! Run slots: a DAG's `max_active_runs`, counted under a lock on the DAG's
//! row, and the waiting runs that take a slot when one frees. A run may
//! carry its own limit (a backfill's `--max-active-runs`), which it is held
//! to in place of the DAG's: it starts while fewer than that many of the
//! DAG's runs are active, and counts as one of them for every other run.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_shared::entities::{dag, dag_run, task_instance};
use datajump_shared::kinds::OverlapPolicy;
use datajump_shared::{RunStatus, TaskStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect,
};

use crate::effects::Effects;
use crate::propagation::{evaluate_all, propagate_all};
use crate::sql::{IN_LIST_MAX, Ti, TiCol};
use crate::transitions::RunTransition;

/// A DAG's RUNNING runs and its `max_active_runs`, as counted under the lock
/// on its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunSlots {
    running: u64,
    limit: u64,
}

/// The limit a `max_active_runs` value sets: at least one run.
fn limit_of(max_active_runs: i32) -> u64 {
    u64::try_from(max_active_runs.max(1)).unwrap_or(1)
}

impl RunSlots {
    /// Whether a run held to `own` limit (`None`: the DAG's) may start now;
    /// if so, counts it as running.
    pub(crate) fn take(&mut self, own: Option<i32>) -> bool {
        let limit = own.map_or(self.limit, limit_of);
        let free = self.running < limit;
        if free {
            self.running += 1;
        }
        free
    }
}

/// The slots of `dag`. Locks the DAG's row (see [`free_run_slots`]).
async fn slots_of<C: ConnectionTrait>(conn: &C, dag: &dag::Model) -> Result<RunSlots, DbErr> {
    Ok(free_run_slots(conn, &[dag])
        .await?
        .remove(&dag.id)
        .unwrap_or(RunSlots {
            running: 0,
            limit: limit_of(dag.max_active_runs),
        }))
}

/// Whether a run of DAG `dag_id` held to `own` limit (`None`: the DAG's)
/// may be RUNNING now: always under overlap `parallel`, otherwise while the
/// DAG's active runs are under the limit. Locks the DAG's row (see
/// [`free_run_slots`]). For a run an operator reopens.
pub(crate) async fn run_slot_free_for<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
    own: Option<i32>,
) -> Result<bool, DbErr> {
    match dag::Entity::find_by_id(dag_id).one(conn).await? {
        Some(dag) if dag.overlap_policy != OverlapPolicy::Parallel => {
            Ok(slots_of(conn, &dag).await?.take(own))
        }
        _ => Ok(true),
    }
}

/// The RUNNING runs and limit of each of `dags`, keyed by DAG id. Locks the DAGs' rows in id order
/// (PostgreSQL; SQLite write transactions are already serial), so run starts
/// of one DAG cannot race past the limit and two transactions locking
/// several DAGs cannot deadlock. Two statements however many DAGs: the
/// resolver asks once for a whole batch of fires.
pub(crate) async fn free_run_slots<C: ConnectionTrait>(
    conn: &C,
    dags: &[&dag::Model],
) -> Result<HashMap<i64, RunSlots>, DbErr> {
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
            let taken = running.get(&dag.id).copied().unwrap_or(0);
            let slots = RunSlots {
                running: u64::try_from(taken).unwrap_or(0),
                limit: limit_of(dag.max_active_runs),
            };
            (dag.id, slots)
        })
        .collect())
}

/// The run timeout of a run of `dag` fired by a schedule whose own
/// `timeout` is `schedule_timeout`: the schedule's, else the DAG's
/// `run_timeout`; `None` (no limit) when that is absent or 0.
pub(crate) fn run_timeout_secs(dag: &dag::Model, schedule_timeout: Option<i32>) -> Option<i32> {
    schedule_timeout
        .or(dag.run_timeout_secs)
        .filter(|secs| *secs > 0)
}

/// When the timeout of a run with status `status` falls, counted from
/// `now`: set whenever a run starts RUNNING, so its wait for a slot does
/// not count.
pub(crate) fn run_timeout_at(
    status: RunStatus,
    timeout_secs: Option<i32>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    timeout_secs
        .filter(|_| status == RunStatus::Running)
        .map(|secs| now + chrono::Duration::seconds(secs.into()))
}

/// QUEUED → RUNNING for run `run_id` (the `StartWaiting` transition), its
/// run timeout counted from `now`. False when it was no longer QUEUED.
async fn start_run<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    timeout_secs: Option<i32>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let started = dag_run::Entity::update_many()
        .col_expr(
            dag_run::Column::Status,
            Expr::value(RunStatus::Running.as_str()),
        )
        .col_expr(
            dag_run::Column::TimeoutAt,
            Expr::value(run_timeout_at(RunStatus::Running, timeout_secs, now)),
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

/// Locks the rows of DAGs `ids` (sorted, distinct) in id order, so
/// transactions that count or free a DAG's run slots take turns: one
/// creating a run sees another's finished run, or the other sees its new
/// QUEUED run. PostgreSQL only: SQLite write transactions are already
/// serial, and there the statement would be a query that locks nothing.
pub(crate) async fn lock_dags<C: ConnectionTrait>(conn: &C, ids: &[i64]) -> Result<(), DbErr> {
    if conn.get_database_backend() == DbBackend::Sqlite {
        return Ok(());
    }
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
/// business date among those whose limit has a free slot; the caller
/// releases its roots.
pub(crate) async fn start_waiting_run<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<i64>, DbErr> {
    let Some(dag) = dag::Entity::find_by_id(dag_id).one(conn).await? else {
        return Ok(None);
    };
    let slots = slots_of(conn, &dag).await?;
    let running = i64::try_from(slots.running).unwrap_or(i64::MAX);
    let mut under_limit = Condition::any().add(dag_run::Column::MaxActiveRuns.gt(running));
    if slots.running < slots.limit {
        under_limit = under_limit.add(dag_run::Column::MaxActiveRuns.is_null());
    }
    // The earliest batch first: later ones may depend on it.
    let Some(waiting) = dag_run::Entity::find()
        .filter(dag_run::Column::DagId.eq(dag_id))
        .filter(dag_run::Column::Status.eq(RunStatus::Queued))
        .filter(under_limit)
        .order_by_asc(dag_run::Column::BizDate)
        .order_by_asc(dag_run::Column::Id)
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    Ok(start_run(conn, waiting.id, waiting.timeout_secs, now)
        .await?
        .then_some(waiting.id))
}

/// QUEUED → RUNNING for run `run_id` whatever its DAG's `max_active_runs`:
/// a run an active run of the same DAG waits on, which would otherwise
/// wait for the slot its waiter holds while the waiter waits for it
/// (docs/ARCHITECTURE.md "Dependency rules"). True when it started; the
/// caller releases its roots.
pub(crate) async fn start_awaited_run<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let timeout_secs = dag_run::Entity::find_by_id(run_id)
        .select_only()
        .column(dag_run::Column::TimeoutSecs)
        .into_tuple::<Option<i32>>()
        .one(conn)
        .await?
        .flatten();
    start_run(conn, run_id, timeout_secs, now).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_held_to_its_own_limit_or_the_dags() {
        let mut slots = RunSlots {
            running: 1,
            limit: 1,
        };
        assert!(!slots.take(None), "the DAG's one slot is taken");
        assert!(slots.take(Some(3)));
        assert!(slots.take(Some(3)));
        assert!(!slots.take(Some(3)), "three runs are active");
        assert!(!slots.take(None));
        assert_eq!(slots.running, 3);
        assert!(
            RunSlots {
                running: 0,
                limit: 1
            }
            .take(Some(0)),
            "a limit below one is one"
        );
    }
}
