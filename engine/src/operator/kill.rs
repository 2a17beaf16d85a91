//! Kills: one task instance, or a whole run with its live instances, by an
//! operator or when the run's timeout passes. The database changes first,
//! then the message (docs/ARCHITECTURE.md, "Kill"); a cut run's slot goes to
//! a run of its DAG waiting for one in the same transaction.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::{RunId, RunStatus, TaskInstanceId, TaskStatus};
use datajump_store::db::{begin_write, is_deadlock};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use super::{OperatorError, refuse_in_waiting_run, retried};
use crate::effects::Effects;
use crate::slots::{release_roots, start_waiting_run};
use crate::sql::{Ti, TiCol, update_instance, with_reason};
use crate::transitions::{RunTransition, TaskTransition};
use crate::waits::start_awaited_runs;
use datajump_shared::problem::Reason;

/// Any live status → KILLED (docs/ARCHITECTURE.md, "Kill": the database first, then the
/// message). Returns the killed instance, `None` if it had already ended
/// (or does not exist), with its completion owed and, if a runner held it,
/// a kill notice to that runner.
pub async fn kill_instance(
    db: &DatabaseConnection,
    id: TaskInstanceId,
    now: DateTime<Utc>,
) -> Result<Option<(task_instance::Model, Effects)>, OperatorError> {
    let killed = retried(
        || async {
            let txn = begin_write(db).await?;
            refuse_in_waiting_run(&txn, id.0).await?;
            let killed = kill(&txn, id.0, now).await?;
            txn.commit().await?;
            Ok(killed)
        },
        OperatorError::is_deadlock,
    )
    .await?;
    Ok(killed.map(|(row, items, before)| {
        let mut effects = Effects::default();
        effects.announce_kills(std::slice::from_ref(&row), &before);
        effects.announce_kills(&items, &before);
        (row, effects)
    }))
}

/// Kills instance `id` and, when it is a mapped task whose items were made,
/// its live items (docs/ARCHITECTURE.md, "Map"); returns it, the items,
/// and the statuses they all had before.
async fn kill<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<Killed>, DbErr> {
    let killing = |selected| {
        with_reason(Ti::update_many(), &Reason::KilledByUser)
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Killed.as_str()))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(selected)
            .filter(TaskTransition::Kill.applies())
    };
    let mut before = live_statuses(conn, TiCol::Id.eq(id)).await?;
    let Some(row) = update_instance(conn, killing(TiCol::Id.eq(id))).await? else {
        return Ok(None);
    };
    let mut items = Vec::new();
    if row.is_expanded_map() {
        let mine = TiCol::DagRunId
            .eq(row.dag_run_id)
            .and(TiCol::TaskId.eq(row.task_id))
            .and(TiCol::MapIndex.gte(0));
        before.extend(live_statuses(conn, mine.clone()).await?);
        items = killing(mine).exec_with_returning(conn).await?;
    }
    killed_from(&before, std::slice::from_ref(&row));
    killed_from(&before, &items);
    Ok(Some((row, items, before)))
}

/// What [`kill`] killed: the instance, a map's items, and the statuses
/// they had before.
type Killed = (
    task_instance::Model,
    Vec<task_instance::Model>,
    HashMap<i64, TaskStatus>,
);

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
    fn reason(self, run: &dag_run::Model) -> Reason {
        match self {
            Self::Killed => Reason::RunKilled,
            Self::TimedOut => Reason::RunTimedOut {
                timeout_secs: run.timeout_secs.unwrap_or_default().into(),
            },
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
    now: DateTime<Utc>,
) -> Result<Option<(Vec<task_instance::Model>, Effects)>, DbErr> {
    cut_run(db, run_id, RunCut::Killed, now).await
}

/// RUNNING run past its `timeout_at` → TIMEOUT, its live instances killed
/// as [`kill_run`] kills them, with a reason naming the timeout (the
/// ticker's deadline scan). `None` if the run had already ended, or was
/// reopened with a later deadline meanwhile.
pub async fn run_timed_out(
    db: &DatabaseConnection,
    run_id: RunId,
    now: DateTime<Utc>,
) -> Result<Option<(Vec<task_instance::Model>, Effects)>, DbErr> {
    cut_run(db, run_id, RunCut::TimedOut, now).await
}

async fn cut_run(
    db: &DatabaseConnection,
    run_id: RunId,
    cut: RunCut,
    now: DateTime<Utc>,
) -> Result<Option<(Vec<task_instance::Model>, Effects)>, DbErr> {
    retried(
        || async {
            let txn = begin_write(db).await?;
            let killed = kill_run_in(&txn, run_id.0, cut, now).await?;
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
    let killed = with_reason(Ti::update_many(), &cut.reason(&run))
        .col_expr(TiCol::Status, Expr::value(TaskStatus::Killed.as_str()))
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
