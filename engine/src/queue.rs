//! Transitions into QUEUED: a new run's ready roots, a retry whose time has
//! come, a republish of work that may have been lost, an attempt given back
//! at a runner's drain timeout; and out of it when no runner took the
//! instance within its `queue_timeout`, or when its spec does not read.
//!
//! A QUEUED instance's `deadline_at` is when the ticker next looks at it:
//! its next republish, or the end of its queue timeout when that comes
//! first. Every path into QUEUED sets it through [`queued_deadline`].

use chrono::{DateTime, Duration, Utc};
use datajump_shared::entities::{UnreadableJson, task_instance};
use datajump_shared::plan::TaskSpec;
use datajump_shared::{TaskInstanceId, TaskStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter,
};

use crate::effects::Effects;
use crate::propagation::propagate_all;
use crate::quarantine::quarantine;
use crate::sql::{Ti, TiCol, update_chunked, update_instance, with_reason};
use crate::transitions::TaskTransition;
use datajump_shared::problem::Reason;

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

/// How long an instance may wait QUEUED, as its spec says (its task's
/// `queue_timeout`, else its DAG's); `None`: no limit.
pub(crate) fn queue_timeout(task: &TaskSpec) -> Option<Duration> {
    task.queue_timeout_secs
        .filter(|secs| *secs > 0)
        .map(|secs| Duration::seconds(secs.into()))
}

/// [`queue_timeout`] of an instance's spec; none when it does not read
/// (the deadline scan quarantines it: [`queued_due`]).
pub(crate) fn queue_timeout_of(row: &task_instance::Model) -> Option<Duration> {
    row.spec
        .read()
        .ok()
        .and_then(|spec| queue_timeout(&spec.task))
}

/// When the ticker next looks at an instance QUEUED at `queued_at`: at
/// `republish_at`, or when its queue timeout ends if that is sooner.
pub(crate) fn queued_deadline(
    republish_at: DateTime<Utc>,
    queued_at: DateTime<Utc>,
    timeout: Option<Duration>,
) -> DateTime<Utc> {
    timeout.map_or(republish_at, |timeout| {
        republish_at.min(queued_at + timeout)
    })
}

/// Moves the deadlines of instances just QUEUED (with the
/// [`REPUBLISH_AFTER`] deadline) up to the end of their queue timeouts
/// where those come first: one statement per such instance, which only
/// tasks with a queue timeout under a minute pay.
async fn shorten_to_queue_timeouts<C: ConnectionTrait>(
    conn: &C,
    rows: &mut [task_instance::Model],
) -> Result<(), DbErr> {
    for row in rows {
        let (Some(timeout), Some(queued_at), Some(deadline)) =
            (queue_timeout_of(row), row.queued_at, row.deadline_at)
        else {
            continue;
        };
        let sooner = queued_deadline(deadline, queued_at, Some(timeout));
        if sooner < deadline {
            Ti::update_many()
                .col_expr(TiCol::DeadlineAt, Expr::value(sooner))
                .filter(TiCol::Id.eq(row.id))
                .filter(TiCol::Status.eq(TaskStatus::Queued))
                .exec(conn)
                .await?;
            row.deadline_at = Some(sooner);
        }
    }
    Ok(())
}

/// UP_FOR_RETRY or UP_FOR_RESCHEDULE (`from`) → QUEUED for an instance
/// whose retry, or next sensor check, has come (the ticker's deadline
/// scan); `None` if it no longer waits in `from`.
pub async fn retry_due(
    db: &DatabaseConnection,
    id: TaskInstanceId,
    from: TaskStatus,
    now: DateTime<Utc>,
) -> Result<Option<Effects>, DbErr> {
    let transition = TaskTransition::RetryDue;
    if !transition.from().contains(&from) {
        return Ok(None);
    }
    let mut queued = update_instance(
        db,
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(TiCol::DeadlineAt, Expr::value(now + REPUBLISH_AFTER))
            .filter(TiCol::Id.eq(id.0))
            .filter(TiCol::Status.eq(from)),
    )
    .await?
    .into_iter()
    .collect::<Vec<_>>();
    for _ in &queued {
        transition.applied(from, TaskStatus::Queued);
    }
    shorten_to_queue_timeouts(db, &mut queued).await?;
    Ok((!queued.is_empty()).then(|| Effects {
        queued,
        ..Effects::default()
    }))
}

/// What the ticker's deadline scan does with a QUEUED instance whose
/// deadline came: ends it TIMEOUT when it has waited its whole queue
/// timeout ([`queue_timed_out`]); otherwise pushes its deadline forward
/// ([`next_republish`], or the end of its queue timeout) and owes its work
/// message again under a fresh id, in case the first publish was lost or
/// suppressed. `None` if it is no longer QUEUED.
pub async fn queued_due(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    now: DateTime<Utc>,
) -> Result<Option<Effects>, DbErr> {
    let spec = match row.spec.read() {
        Ok(spec) => spec,
        Err(e) => return quarantine_queued(db, row, e, now).await,
    };
    let timeout = queue_timeout(&spec.task);
    let queued_at = row.queued_at.unwrap_or(now);
    if let Some(timeout) = timeout
        && queued_at + timeout <= now
    {
        return queue_timed_out(db, row, timeout, now).await;
    }
    let touched = update_instance(
        db,
        Ti::update_many()
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(queued_deadline(
                    next_republish(row.queued_at, now),
                    queued_at,
                    timeout,
                )),
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

/// QUEUED → FAILED for an instance whose spec does not read, which no work
/// message can be built for ([`crate::quarantine`]), with its end
/// propagated in the same transaction. `None` if it is no longer QUEUED.
async fn quarantine_queued(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    error: &UnreadableJson,
    now: DateTime<Utc>,
) -> Result<Option<Effects>, DbErr> {
    let txn = datajump_store::db::begin_write(db).await?;
    let mut effects = Effects::default();
    let mut settled = Vec::new();
    quarantine(&txn, row, error, now, &mut effects, &mut settled).await?;
    if settled.is_empty() {
        txn.rollback().await?;
        return Ok(None);
    }
    propagate_all(&txn, settled, now, &mut effects).await?;
    txn.commit().await?;
    Ok(Some(effects))
}

/// QUEUED → TIMEOUT for an instance no runner took within its queue
/// timeout, with a reason naming the queue, and its end propagated in the
/// same transaction. Final: no retry, since nothing ran. `None` if a
/// runner claimed it meanwhile.
async fn queue_timed_out(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    timeout: Duration,
    now: DateTime<Utc>,
) -> Result<Option<Effects>, DbErr> {
    let transition = TaskTransition::QueueTimeout;
    let reason = Reason::QueueTimeout {
        waited_secs: (now - row.queued_at.unwrap_or(now)).num_seconds(),
        queue: row.queue.clone(),
        timeout_secs: timeout.num_seconds(),
    };
    let txn = datajump_store::db::begin_write(db).await?;
    let ended = update_instance(
        &txn,
        with_reason(Ti::update_many(), &reason)
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Timeout.as_str()))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(TiCol::Id.eq(row.id))
            .filter(transition.applies()),
    )
    .await?;
    let Some(ended) = ended else {
        txn.rollback().await?;
        return Ok(None);
    };
    transition.applied_to(std::slice::from_ref(&ended));
    let mut effects = Effects::default();
    effects.settled.push(ended);
    propagate_all(&txn, vec![row.id], now, &mut effects).await?;
    txn.commit().await?;
    Ok(Some(effects))
}

/// Makes a new instance of a RUNNING run start QUEUED when it may run at
/// once — no parents pending and its task enabled, which is what
/// [`crate::slots::release_roots`] would decide for it — so creating a run needs no
/// lookup and update of its roots afterwards. Returns whether it did; an
/// instance left PENDING is released by `release_roots` or propagation.
pub(crate) fn queue_new(
    row: &mut task_instance::ActiveModel,
    task: &TaskSpec,
    now: DateTime<Utc>,
) -> bool {
    // A SWITCH or mapped root stays PENDING: the roots' release decides
    // or expands it.
    let ready = row.pending_parents.try_as_ref() == Some(&0)
        && task.task_type != datajump_shared::content::TaskType::Switch
        && task.map.is_none();
    if ready && task.enabled {
        set_queued(row, task, now);
    }
    ready && task.enabled
}

/// Makes a row about to be inserted QUEUED at `now`, with its deadline.
pub(crate) fn set_queued(
    row: &mut task_instance::ActiveModel,
    task: &TaskSpec,
    now: DateTime<Utc>,
) {
    row.status = Set(TaskStatus::Queued);
    row.queued_at = Set(Some(now));
    row.deadline_at = Set(Some(queued_deadline(
        now + REPUBLISH_AFTER,
        now,
        queue_timeout(task),
    )));
}

/// Moves many instances to QUEUED by `transition` (a release from
/// PENDING), in one statement per
/// [`IN_LIST_MAX`](crate::sql::IN_LIST_MAX) ids.
pub(crate) async fn queue_many<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    transition: TaskTransition,
    now: DateTime<Utc>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    let mut queued = update_chunked(conn, ids, |chunk| {
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(TiCol::DeadlineAt, Expr::value(now + REPUBLISH_AFTER))
            .filter(TiCol::Id.is_in(chunk.iter().copied()))
            .filter(transition.applies())
    })
    .await?;
    transition.applied_to(&queued);
    shorten_to_queue_timeouts(conn, &mut queued).await?;
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
