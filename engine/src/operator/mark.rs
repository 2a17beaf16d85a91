//! Marks: a task instance settled SUCCESS or FAILED by hand.

use chrono::{DateTime, Utc};
use datajump_shared::entities::dependency_wait;
use datajump_shared::{TaskInstanceId, TaskStatus};
use datajump_store::db::begin_write;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QuerySelect,
};

use super::reset::{ResetScope, reset_in};
use super::{OperatorError, refuse_in_waiting_run, retried};
use crate::effects::Effects;
use crate::propagation::propagate_all;
use crate::sql::{Ti, TiCol, with_reason};
use crate::transitions::TaskTransition;
use datajump_shared::problem::Reason;

/// Marks a task instance SUCCESS or FAILED by hand. A live (not RUNNING)
/// instance is settled and propagated; a finished one is changed and its
/// downstream put back to PENDING so it follows the new result. Returns
/// what was released.
pub async fn mark(
    db: &DatabaseConnection,
    id: TaskInstanceId,
    to: TaskStatus,
    now: DateTime<Utc>,
) -> Result<Effects, OperatorError> {
    retried(
        || async {
            let txn = begin_write(db).await?;
            let effects = mark_in(&txn, id.0, to, now).await?;
            txn.commit().await?;
            Ok(effects)
        },
        OperatorError::is_deadlock,
    )
    .await
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
    if row.is_map_item() && row.propagated {
        return Err(OperatorError::EndedMapItem {
            task: row.task_name,
            index: row.map_index,
        });
    }
    refuse_in_waiting_run(conn, id).await?;
    let reason = Reason::Marked {
        status: to.as_str().to_owned(),
    };
    with_reason(Ti::update_many(), &reason)
        .col_expr(TiCol::Status, Expr::value(to.as_str()))
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
