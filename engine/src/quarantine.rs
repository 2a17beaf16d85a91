//! Instances whose stored spec does not read (docs/ARCHITECTURE.md, "Stored
//! JSON"): one written by a release that stored another shape, or edited by
//! hand, can be neither decided nor run. It ends FAILED on its own, with a
//! reason naming the row and where in the value it goes wrong, and its end
//! is propagated like any failure; the rest of the batch it came in with
//! goes on as if it were not there.

use chrono::{DateTime, Utc};
use datajump_shared::TaskStatus;
use datajump_shared::entities::{UnreadableJson, task_instance};
use datajump_shared::metrics::{self, StoredField};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use tracing::error;

use crate::effects::Effects;
use crate::sql::{Ti, TiCol, update_instance, with_reason};
use crate::transitions::TaskTransition;
use datajump_shared::problem::Reason;

/// The reason a quarantined instance carries.
fn reason(row: &task_instance::Model, error: &UnreadableJson) -> Reason {
    Reason::Quarantined {
        task_instance_id: row.id,
        error: error.to_string(),
    }
}

/// PENDING or QUEUED → FAILED for `row`, whose spec does not read (`error`),
/// counted in `datajump_unreadable_stored_json_total`; its id is pushed to
/// `settled` for propagation and its row to `out.settled`. Nothing when it
/// has left that status meanwhile.
pub(crate) async fn quarantine<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    error: &UnreadableJson,
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    let transition = TaskTransition::Quarantine;
    if !transition.from().contains(&row.status) {
        return Ok(());
    }
    error!(
        task_instance_id = row.id,
        dag_run_id = row.dag_run_id,
        %error,
        "stored spec does not read: the instance is ended FAILED"
    );
    metrics::unreadable_stored_json(StoredField::InstanceSpec);
    let ended = update_instance(
        conn,
        with_reason(Ti::update_many(), &reason(row, error))
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Failed.as_str()))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(TiCol::Id.eq(row.id))
            .filter(TiCol::Status.eq(row.status)),
    )
    .await?;
    if let Some(ended) = ended {
        transition.applied(row.status, ended.status);
        settled.push(ended.id);
        out.settled.push(ended);
    }
    Ok(())
}
