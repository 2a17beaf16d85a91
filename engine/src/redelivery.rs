//! What a work message means when its claim is lost: the instance already
//! finished (republish what its end owed), or its runner died (take over).

use chrono::{DateTime, Utc};
use datajump_shared::TaskStatus;
use datajump_shared::entities::{execution, task_instance};
use datajump_store::db::begin_write;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter,
};

use crate::effects::Effects;
use crate::propagation::children;
use crate::queue::{REPUBLISH_AFTER, queue_timeout_of, queued_deadline};
use crate::sql::{Ti, TiCol, stored_problem, update_instance, with_reason};
use crate::transitions::TaskTransition;
use datajump_shared::problem::Reason;

pub use datajump_shared::problem::RUNNER_LOST;

/// Times an instance may lose its runner before it fails for good; these
/// retries do not use the task's own retry budget.
pub const MAX_RUNNER_LOST: u64 = 3;

/// Takes over an instance whose owner's heartbeat has expired: closes the
/// lost attempt's execution as FAILED "runner lost" and moves the instance
/// RUNNING → QUEUED (a fresh attempt), or → FAILED once it has lost its
/// runner [`MAX_RUNNER_LOST`] times. The conditional update on (owner,
/// attempt) lets only one runner take over. Returns the instance after,
/// with its completion owed if it failed, its work if it was requeued;
/// `None` if another runner took it over first.
pub async fn take_over(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    now: DateTime<Utc>,
) -> Result<Option<(task_instance::Model, Effects)>, DbErr> {
    let txn = begin_write(db).await?;
    let taken = take_over_in(&txn, row, now).await?;
    txn.commit().await?;
    Ok(taken.map(|after| {
        let mut effects = Effects::default();
        if after.status.is_terminal() {
            effects.completions.push(after.clone());
        } else {
            effects.queued.push(after.clone());
        }
        (after, effects)
    }))
}

async fn take_over_in<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    now: DateTime<Utc>,
) -> Result<Option<task_instance::Model>, DbErr> {
    let lost_before = execution::Entity::find()
        .filter(execution::Column::TaskInstanceId.eq(row.id))
        .filter(execution::Column::ErrorMsg.eq(RUNNER_LOST))
        .count(conn)
        .await?;
    let transition = if lost_before + 1 >= MAX_RUNNER_LOST {
        TaskTransition::TakeOverLostTooOften
    } else {
        TaskTransition::TakeOver
    };
    let mut update = Ti::update_many()
        .col_expr(TiCol::Owner, Expr::value(Option::<String>::None))
        .filter(TiCol::Id.eq(row.id))
        .filter(transition.applies())
        .filter(TiCol::Attempt.eq(row.attempt));
    update = match &row.owner {
        Some(owner) => update.filter(TiCol::Owner.eq(owner.as_str())),
        None => update.filter(TiCol::Owner.is_null()),
    };
    update = if transition == TaskTransition::TakeOverLostTooOften {
        let reason = Reason::RunnerLostTooOften {
            times: MAX_RUNNER_LOST,
        };
        with_reason(update, &reason)
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Failed.as_str()))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
    } else {
        update
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(queued_deadline(
                    now + REPUBLISH_AFTER,
                    now,
                    queue_timeout_of(row),
                )),
            )
    };
    let Some(after) = update_instance(conn, update).await? else {
        return Ok(None);
    };
    transition.applied_to(std::slice::from_ref(&after));
    execution::Entity::update_many()
        .col_expr(
            execution::Column::Status,
            Expr::value(TaskStatus::Failed.as_str()),
        )
        .col_expr(execution::Column::EndTime, Expr::value(now))
        .col_expr(execution::Column::ErrorMsg, Expr::value(RUNNER_LOST))
        .col_expr(
            execution::Column::ErrorProblem,
            Expr::value(stored_problem(&Reason::RunnerLost)),
        )
        .filter(execution::Column::TaskInstanceId.eq(row.id))
        .filter(execution::Column::Attempt.eq(row.last_attempt()))
        .filter(execution::Column::Status.eq(TaskStatus::Running))
        .exec(conn)
        .await?;
    Ok(Some(after))
}

/// What a finished instance's end owed, owed again: the work of its
/// children in its run that are QUEUED (after a crash between the commit
/// that released them and the publish of their work) and its completion
/// (for ends made elsewhere, a kill or a takeover, that a resolver
/// propagates). Publishing it twice is harmless: the ids deduplicate and
/// only one claim wins.
pub async fn owed_by_finished(
    db: &DatabaseConnection,
    row: &task_instance::Model,
) -> Result<Effects, DbErr> {
    let child_tasks: Vec<i64> = children(row).iter().map(|(task, _)| *task).collect();
    let queued = if child_tasks.is_empty() {
        Vec::new()
    } else {
        Ti::find()
            .filter(TiCol::DagRunId.eq(row.dag_run_id))
            .filter(TiCol::TaskId.is_in(child_tasks))
            .filter(TiCol::Status.eq(TaskStatus::Queued))
            .all(db)
            .await?
    };
    Ok(Effects {
        queued,
        completions: vec![row.clone()],
        ..Effects::default()
    })
}
