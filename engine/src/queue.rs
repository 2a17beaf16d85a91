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

/// How long a QUEUED instance may wait before the ticker first republishes
/// its work message, in case the first publish was lost or suppressed. Each
/// republish goes out under a fresh id, so no earlier message can make
/// JetStream drop it, and only one claim can win however many copies there
/// are.
pub const REPUBLISH_AFTER: Duration = Duration::seconds(60);

/// The longest wait between two republishes. Waits double from
/// [`REPUBLISH_AFTER`] up to this, so a backlog that waits for hours for
/// busy runners adds a copy of each message every ten minutes, not every
/// minute.
pub const REPUBLISH_AT_MOST_EVERY: Duration = Duration::minutes(10);

/// When an instance QUEUED at `queued_at` is next republished, at `now`:
/// after as long again as it has waited, within
/// [`REPUBLISH_AFTER`]..=[`REPUBLISH_AT_MOST_EVERY`].
fn next_republish(queued_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> DateTime<Utc> {
    let waited = queued_at.map_or(REPUBLISH_AFTER, |at| now - at);
    now + waited.clamp(REPUBLISH_AFTER, REPUBLISH_AT_MOST_EVERY)
}

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

/// Pushes a QUEUED instance's republish deadline forward
/// ([`next_republish`]) and owes its work message again under a fresh id,
/// in case the first publish was lost or suppressed (the ticker's deadline
/// scan); `None` if it is no longer QUEUED.
pub async fn republish_due(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    now: DateTime<Utc>,
) -> Result<Option<Effects>, DbErr> {
    let touched = update_instance(
        db,
        Ti::update_many()
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(next_republish(row.queued_at, now)),
            )
            .filter(TiCol::Id.eq(row.id))
            .filter(TiCol::Status.eq(TaskStatus::Queued)),
    )
    .await?;
    Ok(touched.map(|row| Effects {
        republished: vec![row],
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn republishes_back_off_from_a_minute_to_ten() {
        let queued = DateTime::<Utc>::UNIX_EPOCH;
        let at = |secs| queued + Duration::seconds(secs);
        assert_eq!(next_republish(Some(queued), at(60)), at(120));
        assert_eq!(next_republish(Some(queued), at(120)), at(240));
        assert_eq!(next_republish(Some(queued), at(480)), at(960));
        assert_eq!(next_republish(Some(queued), at(7200)), at(7800));
        // Requeued at a drain timeout: due at once, then a minute later.
        assert_eq!(next_republish(Some(queued), at(0)), at(60));
        assert_eq!(next_republish(None, at(0)), at(60));
    }
}
