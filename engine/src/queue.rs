//! Transitions into QUEUED: a new run's ready roots, a retry whose time has
//! come, a republish of work that may have been lost, an attempt given back
//! at a runner's drain timeout.

use chrono::{DateTime, Duration, Utc};
use datajump_shared::entities::task_instance;
use datajump_shared::{TaskInstanceId, TaskStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter,
};

use crate::effects::Effects;
use crate::sql::{Ti, TiCol, update_chunked, update_instance};
use crate::transitions::TaskTransition;

/// How long a QUEUED instance may wait before the ticker republishes its
/// work message, in case the first publish was lost. A republish within the
/// stream's duplicate window is dropped by JetStream; a later one is harmless
/// because only one claim can win.
pub const REPUBLISH_AFTER: Duration = Duration::seconds(60);

/// UP_FOR_RETRY → QUEUED for an instance whose retry time has come (the
/// ticker's deadline scan); `None` if it no longer waits for one.
pub async fn retry_due(
    db: &DatabaseConnection,
    id: TaskInstanceId,
    now: DateTime<Utc>,
) -> Result<Option<Effects>, DbErr> {
    let queued = queue_many(db, &[id.0], TaskTransition::RetryDue, now).await?;
    Ok((!queued.is_empty()).then(|| Effects {
        queued,
        ..Effects::default()
    }))
}

/// Pushes a QUEUED instance's republish deadline forward and owes its work
/// message again, in case the first publish was lost (the ticker's deadline
/// scan); `None` if it is no longer QUEUED.
pub async fn republish_due(
    db: &DatabaseConnection,
    id: TaskInstanceId,
    now: DateTime<Utc>,
) -> Result<Option<Effects>, DbErr> {
    let touched = update_instance(
        db,
        Ti::update_many()
            .col_expr(TiCol::DeadlineAt, Expr::value(now + REPUBLISH_AFTER))
            .filter(TiCol::Id.eq(id.0))
            .filter(TiCol::Status.eq(TaskStatus::Queued)),
    )
    .await?;
    Ok(touched.map(|row| Effects {
        queued: vec![row],
        ..Effects::default()
    }))
}

/// Makes a new instance of a RUNNING run start QUEUED when it may run at
/// once — no parents pending and its task enabled, which is what
/// [`crate::slots::release_roots`] would decide for it — so creating a run needs no
/// lookup and update of its roots afterwards. Returns whether it did; an
/// instance left PENDING is released by `release_roots` or propagation.
pub(crate) fn queue_new(
    row: &mut task_instance::ActiveModel,
    enabled: bool,
    now: DateTime<Utc>,
) -> bool {
    let ready = row.pending_parents.try_as_ref() == Some(&0);
    if ready && enabled {
        row.status = Set(TaskStatus::Queued);
        row.queued_at = Set(Some(now));
        row.deadline_at = Set(Some(now + REPUBLISH_AFTER));
    }
    ready && enabled
}

/// Moves many instances to QUEUED by `transition` (a release from PENDING,
/// a retry come due from UP_FOR_RETRY), in one statement per
/// [`IN_LIST_MAX`](crate::sql::IN_LIST_MAX) ids.
pub(crate) async fn queue_many<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    transition: TaskTransition,
    now: DateTime<Utc>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    let queued = update_chunked(conn, ids, |chunk| {
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(TiCol::DeadlineAt, Expr::value(now + REPUBLISH_AFTER))
            .filter(TiCol::Id.is_in(chunk.iter().copied()))
            .filter(transition.applies())
    })
    .await?;
    transition.applied_to(&queued);
    Ok(queued)
}

/// RUNNING → QUEUED for an attempt its runner gave up without a verdict
/// (drain timeout at shutdown): the attempt does not count against the
/// retry budget, and the ticker republishes the work at once.
pub(crate) async fn requeue_abandoned<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    attempt: i32,
    owner: &str,
    now: DateTime<Utc>,
) -> Result<Option<task_instance::Model>, DbErr> {
    let transition = TaskTransition::RequeueOnDrain;
    let requeued = update_instance(
        conn,
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(TiCol::DeadlineAt, Expr::value(now))
            .col_expr(TiCol::Owner, Expr::value(Option::<String>::None))
            .filter(TiCol::Id.eq(id))
            .filter(transition.applies())
            .filter(TiCol::Attempt.eq(attempt + 1))
            .filter(TiCol::Owner.eq(owner)),
    )
    .await?;
    transition.applied_to(requeued.as_slice());
    Ok(requeued)
}
