//! The state-transition functions: the only code that changes a status.
//!
//! Each transition is one conditional `UPDATE … WHERE id = ? AND status IN
//! (…) RETURNING *`; an empty result means another process won or the
//! transition no longer applies, and the caller treats it as "nothing to do".
//! Propagation (DESIGN.md "Propagation") moves a terminal instance's result
//! into its children's counters and its run's counter in the same way, so a
//! join is released by exactly one transaction however its parents race, and
//! a completion costs work proportional to its out-degree, not to the DAG.
//! Propagation is set-based: a batch of completions is counted into its
//! children and runs in a few statements, not a few per completion, because
//! on PostgreSQL every statement is a round trip. For the same reason a
//! runner's claims ([`start_many`]) and attempt ends ([`finish_many`]) take
//! one statement per batch, with the same conditions per row.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, QueryFilter,
};

use sea_orm::{PaginatorTrait, QueryOrder, QuerySelect};

use crate::db::per_row;
use crate::entities::{dag, dag_run, dependency_wait, execution, task_instance};
use crate::plan::{DepType, Strategy};
use crate::{RunStatus, TaskStatus};

/// How long a QUEUED instance may wait before the ticker republishes its
/// work message, in case the first publish was lost. A republish within the
/// stream's duplicate window is dropped by JetStream; a later one is harmless
/// because only one claim can win.
pub const REPUBLISH_AFTER: Duration = Duration::seconds(60);

type Ti = task_instance::Entity;
type TiCol = task_instance::Column;

async fn update_instance<C: ConnectionTrait>(
    conn: &C,
    update: sea_orm::UpdateMany<Ti>,
) -> Result<Option<task_instance::Model>, DbErr> {
    Ok(update.exec_with_returning(conn).await?.into_iter().next())
}

/// PENDING or UP_FOR_RETRY → QUEUED. The caller publishes the work message
/// of the returned row after committing.
pub async fn queue<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<task_instance::Model>, DbErr> {
    Ok(queue_many(conn, &[id], now).await?.pop())
}

/// Makes a new instance of a RUNNING run start QUEUED when it may run at
/// once — no parents pending and its task enabled, which is what
/// [`release_roots`] would decide for it — so creating a run needs no
/// lookup and update of its roots afterwards. Returns whether it did; an
/// instance left PENDING is released by [`release_roots`] or propagation.
pub fn queue_new(row: &mut task_instance::ActiveModel, enabled: bool, now: DateTime<Utc>) -> bool {
    let ready = row.pending_parents.try_as_ref() == Some(&0);
    if ready && enabled {
        row.status = Set(TaskStatus::Queued);
        row.queued_at = Set(Some(now));
        row.deadline_at = Set(Some(now + REPUBLISH_AFTER));
    }
    ready && enabled
}

/// [`queue`] for many instances, in one statement per [`IN_LIST_MAX`] ids.
async fn queue_many<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    now: DateTime<Utc>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    update_chunked(conn, ids, |chunk| {
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(TiCol::DeadlineAt, Expr::value(now + REPUBLISH_AFTER))
            .filter(TiCol::Id.is_in(chunk.iter().copied()))
            .filter(TiCol::Status.is_in([TaskStatus::Pending, TaskStatus::UpForRetry]))
    })
    .await
}

/// The most ids one statement lists: far under SQLite's and PostgreSQL's
/// bound-parameter limits, and small enough to keep a statement's plan cheap.
const IN_LIST_MAX: usize = 1000;

/// Runs the update `build` makes for each [`IN_LIST_MAX`] chunk of `ids`
/// and returns every updated row.
async fn update_chunked<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    build: impl Fn(&[i64]) -> sea_orm::UpdateMany<Ti>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    let mut rows = Vec::new();
    for chunk in ids.chunks(IN_LIST_MAX) {
        rows.extend(build(chunk).exec_with_returning(conn).await?);
    }
    Ok(rows)
}

/// Pushes a QUEUED instance's republish deadline forward; returns the row if
/// it is still QUEUED (the ticker then republishes its work).
pub async fn touch_queued<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<task_instance::Model>, DbErr> {
    update_instance(
        conn,
        Ti::update_many()
            .col_expr(TiCol::DeadlineAt, Expr::value(now + REPUBLISH_AFTER))
            .filter(TiCol::Id.eq(id))
            .filter(TiCol::Status.eq(TaskStatus::Queued)),
    )
    .await
}

/// QUEUED → RUNNING for each `(id, attempt)` (attempt 0-based), owned by
/// `owner` and started at `now`. This is the claim: of any number of runners
/// holding a copy of a work message, exactly one gets the row back. Returns
/// the rows won, in no particular order; a batch costs one statement.
pub async fn start_many<C: ConnectionTrait>(
    conn: &C,
    claims: &[(i64, i32)],
    owner: &str,
    now: DateTime<Utc>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    Ti::update_many()
        .col_expr(TiCol::Status, Expr::value(TaskStatus::Running.as_str()))
        .col_expr(TiCol::Attempt, Expr::col(TiCol::Attempt).add(1))
        .col_expr(TiCol::Owner, Expr::value(owner))
        .col_expr(TiCol::StartedAt, Expr::value(now))
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(TiCol::Status.eq(TaskStatus::Queued))
        .filter(at_attempts(claims.iter().copied()))
        .exec_with_returning(conn)
        .await
}

/// `(id = … AND attempt = …) OR …` for `(id, attempt)` pairs, written as one
/// `attempt = a AND id IN (…)` term per distinct attempt (nearly always
/// one), so the database looks the rows up by primary key.
fn at_attempts(pairs: impl Iterator<Item = (i64, i32)>) -> Condition {
    let mut by_attempt: std::collections::BTreeMap<i32, Vec<i64>> = Default::default();
    for (id, attempt) in pairs {
        by_attempt.entry(attempt).or_default().push(id);
    }
    by_attempt
        .into_iter()
        .fold(Condition::any(), |any, (attempt, ids)| {
            any.add(
                Condition::all()
                    .add(TiCol::Attempt.eq(attempt))
                    .add(TiCol::Id.is_in(ids)),
            )
        })
}

/// How an attempt ended, as the runner saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEnd {
    /// Terminal: SUCCESS, FAILED, TIMEOUT or KILLED.
    Terminal(TaskStatus),
    /// Failed with retries left: UP_FOR_RETRY until `retry_at`.
    Retry {
        /// When the ticker requeues it.
        retry_at: DateTime<Utc>,
    },
}

/// The end of one attempt, as [`finish_many`] records it.
#[derive(Debug, Clone, Copy)]
pub struct Finish<'a> {
    /// The instance.
    pub id: i64,
    /// The attempt (0-based) that ended.
    pub attempt: i32,
    /// What becomes of the instance.
    pub end: &'a AttemptEnd,
    /// Why, when it did not succeed.
    pub reason: Option<&'a str>,
    /// When it ended.
    pub at: DateTime<Utc>,
}

/// RUNNING → each attempt's end, only for attempts `owner` runs: a terminal
/// status with its finish time, or UP_FOR_RETRY until the retry time with
/// one more retry used. Returns the rows changed, in no particular order; a
/// batch costs one statement, whose per-row values are `CASE` expressions.
pub async fn finish_many<C: ConnectionTrait>(
    conn: &C,
    finishes: &[Finish<'_>],
    owner: &str,
) -> Result<Vec<task_instance::Model>, DbErr> {
    if finishes.is_empty() {
        return Ok(Vec::new());
    }
    let mut status = Vec::with_capacity(finishes.len());
    let mut finished_at = Vec::new();
    let mut retry_at = Vec::new();
    for finish in finishes {
        match finish.end {
            AttemptEnd::Terminal(end) => {
                status.push((finish.id, end.as_str()));
                finished_at.push((finish.id, finish.at));
            }
            AttemptEnd::Retry { retry_at: at } => {
                status.push((finish.id, TaskStatus::UpForRetry.as_str()));
                retry_at.push((finish.id, *at));
            }
        }
    }
    let reasons: Vec<(i64, Option<String>)> = finishes
        .iter()
        .map(|f| (f.id, f.reason.map(str::to_owned)))
        .collect();
    let mut update = Ti::update_many()
        .col_expr(TiCol::Status, per_row(TiCol::Id, status, None))
        .col_expr(TiCol::Reason, per_row(TiCol::Id, reasons, None));
    if !finished_at.is_empty() {
        update = update.col_expr(
            TiCol::FinishedAt,
            per_row(TiCol::Id, finished_at, Some(Expr::col(TiCol::FinishedAt))),
        );
    }
    if !retry_at.is_empty() {
        let retried: Vec<i64> = retry_at.iter().map(|(id, _)| *id).collect();
        update = update
            .col_expr(
                TiCol::DeadlineAt,
                per_row(TiCol::Id, retry_at, Some(Expr::col(TiCol::DeadlineAt))),
            )
            .col_expr(
                TiCol::RetriesUsed,
                Expr::case(
                    TiCol::Id.is_in(retried),
                    Expr::col(TiCol::RetriesUsed).add(1),
                )
                .finally(Expr::col(TiCol::RetriesUsed))
                .into(),
            );
    }
    update
        .filter(TiCol::Status.eq(TaskStatus::Running))
        .filter(TiCol::Owner.eq(owner))
        .filter(at_attempts(finishes.iter().map(|f| (f.id, f.attempt + 1))))
        .exec_with_returning(conn)
        .await
}

/// Statuses a kill applies to: everything not yet terminal.
const KILLABLE: [TaskStatus; 5] = [
    TaskStatus::Created,
    TaskStatus::Pending,
    TaskStatus::Queued,
    TaskStatus::Running,
    TaskStatus::UpForRetry,
];

/// Any live status → KILLED (DESIGN.md "Kill": the database first, then the
/// message). `owner` is kept, so the caller can tell an instance that was
/// running (it has an owner) and send the kill message to its runner.
pub async fn kill<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Option<task_instance::Model>, DbErr> {
    update_instance(
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
            .filter(TiCol::Status.is_in(KILLABLE)),
    )
    .await
}

/// What killing a run did, to act on after commit.
#[derive(Debug, Default)]
pub struct KilledRun {
    /// Instances now KILLED: publish their completions (and a kill message
    /// for those that were running).
    pub killed: Vec<task_instance::Model>,
    /// Work released in a waiting run of the same DAG that took the slot.
    pub released: Released,
}

/// RUNNING or QUEUED run → KILLED, with every live instance KILLED; a
/// waiting run of the DAG takes the freed slot. `None` if the run had
/// already ended.
pub async fn kill_run<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<KilledRun>, DbErr> {
    let Some(run) = dag_run::Entity::update_many()
        .col_expr(
            dag_run::Column::Status,
            Expr::value(RunStatus::Killed.as_str()),
        )
        .col_expr(dag_run::Column::FinishedAt, Expr::value(now))
        .filter(dag_run::Column::Id.eq(run_id))
        .filter(dag_run::Column::Status.is_in([RunStatus::Running, RunStatus::Queued]))
        .exec_with_returning(conn)
        .await?
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    let killed = Ti::update_many()
        .col_expr(TiCol::Status, Expr::value(TaskStatus::Killed.as_str()))
        .col_expr(TiCol::Reason, Expr::value("the run was killed"))
        .col_expr(TiCol::FinishedAt, Expr::value(now))
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(TiCol::DagRunId.eq(run_id))
        .filter(TiCol::Status.is_in(KILLABLE))
        .exec_with_returning(conn)
        .await?;
    let mut released = Released::default();
    if let Some(started) = start_waiting_run(conn, run.dag_id).await? {
        released.started_runs.push(started);
        release_roots(conn, &[started], now, &mut released).await?;
    }
    Ok(Some(KilledRun { killed, released }))
}

/// RUNNING → QUEUED for an attempt its runner gave up without a verdict
/// (drain timeout at shutdown): the attempt does not count against the
/// retry budget, and the ticker republishes the work at once.
pub async fn requeue_abandoned<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    attempt: i32,
    owner: &str,
    now: DateTime<Utc>,
) -> Result<Option<task_instance::Model>, DbErr> {
    update_instance(
        conn,
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(TiCol::DeadlineAt, Expr::value(now))
            .col_expr(TiCol::Owner, Expr::value(Option::<String>::None))
            .filter(TiCol::Id.eq(id))
            .filter(TiCol::Status.eq(TaskStatus::Running))
            .filter(TiCol::Attempt.eq(attempt + 1))
            .filter(TiCol::Owner.eq(owner)),
    )
    .await
}

/// Error text of an attempt whose runner died.
pub const RUNNER_LOST: &str = "runner lost";

/// Times an instance may lose its runner before it fails for good; these
/// retries do not use the task's own retry budget.
pub const MAX_RUNNER_LOST: u64 = 3;

/// Takes over an instance whose owner's heartbeat has expired: closes the
/// lost attempt's execution as FAILED "runner lost" and moves the instance
/// RUNNING → QUEUED (a fresh attempt), or → FAILED once it has lost its
/// runner [`MAX_RUNNER_LOST`] times. The conditional update on (owner,
/// attempt) lets only one runner take over. Returns the instance after.
pub async fn take_over<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    now: DateTime<Utc>,
) -> Result<Option<task_instance::Model>, DbErr> {
    let lost_before = execution::Entity::find()
        .filter(execution::Column::TaskInstanceId.eq(row.id))
        .filter(execution::Column::ErrorMsg.eq(RUNNER_LOST))
        .count(conn)
        .await?;
    let mut update = Ti::update_many()
        .col_expr(TiCol::Owner, Expr::value(Option::<String>::None))
        .filter(TiCol::Id.eq(row.id))
        .filter(TiCol::Status.eq(TaskStatus::Running))
        .filter(TiCol::Attempt.eq(row.attempt));
    update = match &row.owner {
        Some(owner) => update.filter(TiCol::Owner.eq(owner.as_str())),
        None => update.filter(TiCol::Owner.is_null()),
    };
    update = if lost_before + 1 >= MAX_RUNNER_LOST {
        update
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Failed.as_str()))
            .col_expr(
                TiCol::Reason,
                Expr::value(format!("{RUNNER_LOST} {MAX_RUNNER_LOST} times")),
            )
            .col_expr(TiCol::FinishedAt, Expr::value(now))
    } else {
        update
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Queued.as_str()))
            .col_expr(TiCol::QueuedAt, Expr::value(now))
            .col_expr(TiCol::DeadlineAt, Expr::value(now + REPUBLISH_AFTER))
    };
    let Some(after) = update_instance(conn, update).await? else {
        return Ok(None);
    };
    execution::Entity::update_many()
        .col_expr(
            execution::Column::Status,
            Expr::value(TaskStatus::Failed.as_str()),
        )
        .col_expr(execution::Column::EndTime, Expr::value(now))
        .col_expr(execution::Column::ErrorMsg, Expr::value(RUNNER_LOST))
        .filter(execution::Column::TaskInstanceId.eq(row.id))
        .filter(execution::Column::Attempt.eq(row.attempt - 1))
        .filter(execution::Column::Status.eq(TaskStatus::Running))
        .exec(conn)
        .await?;
    Ok(Some(after))
}

/// PENDING → SKIPPED or UPSTREAM_FAILED: terminal without running.
async fn settle_many<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    to: TaskStatus,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    update_chunked(conn, ids, |chunk| {
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(to.as_str()))
            .col_expr(TiCol::Reason, Expr::value(reason))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .filter(TiCol::Id.is_in(chunk.iter().copied()))
            .filter(TiCol::Status.eq(TaskStatus::Pending))
    })
    .await
}

/// RUNNING → SUCCESS (no instance failed) or FAILED for each run of `runs`
/// with no pending instances, one statement per final status; returns the
/// runs finished, each once however many batches race to finish it.
async fn finish_runs<C: ConnectionTrait>(
    conn: &C,
    runs: &[dag_run::Model],
    now: DateTime<Utc>,
) -> Result<Vec<dag_run::Model>, DbErr> {
    let mut finished = Vec::new();
    for status in [RunStatus::Success, RunStatus::Failed] {
        let ids: Vec<i64> = runs
            .iter()
            .filter(|run| run.pending_instances == 0)
            .filter(|run| (run.failed_instances == 0) == (status == RunStatus::Success))
            .map(|run| run.id)
            .collect();
        for chunk in ids.chunks(IN_LIST_MAX) {
            finished.extend(
                dag_run::Entity::update_many()
                    .col_expr(dag_run::Column::Status, Expr::value(status.as_str()))
                    .col_expr(dag_run::Column::FinishedAt, Expr::value(now))
                    .filter(dag_run::Column::Id.is_in(chunk.iter().copied()))
                    .filter(dag_run::Column::Status.eq(RunStatus::Running))
                    .exec_with_returning(conn)
                    .await?,
            );
        }
    }
    Ok(finished)
}

/// What a strategy says about a PENDING instance given its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Wait,
    Run,
    UpstreamFailed,
}

fn decide(row: &task_instance::Model, strategy: Strategy) -> Decision {
    let all_terminal = row.pending_parents <= 0;
    match strategy {
        Strategy::AllSuccess if all_terminal && row.strong_failed > 0 => Decision::UpstreamFailed,
        Strategy::AllSuccess | Strategy::None if all_terminal => Decision::Run,
        Strategy::OneSuccess if row.strong_ok > 0 => Decision::Run,
        Strategy::OneSuccess if all_terminal && row.strong_parents > 0 => Decision::UpstreamFailed,
        Strategy::OneSuccess if all_terminal => Decision::Run,
        _ => Decision::Wait,
    }
}

fn spec_strategy(row: &task_instance::Model) -> Strategy {
    row.spec["task"]["strategy"]
        .as_str()
        .map_or(Strategy::AllSuccess, Strategy::from_stored)
}

fn spec_enabled(row: &task_instance::Model) -> bool {
    row.spec["task"]["enabled"].as_bool().unwrap_or(true)
}

/// Children of an instance in its run: `(task_id, edge type)`.
pub fn children(row: &task_instance::Model) -> Vec<(i64, DepType)> {
    serde_json::from_value(row.children.clone()).unwrap_or_default()
}

/// The children of `row` in its run that are QUEUED: after a crash between
/// the commit that released them and the publish of their work, the work
/// to publish again.
pub async fn queued_children<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
) -> Result<Vec<task_instance::Model>, DbErr> {
    let child_tasks: Vec<i64> = children(row).into_iter().map(|(task, _)| task).collect();
    if child_tasks.is_empty() {
        return Ok(Vec::new());
    }
    Ti::find()
        .filter(TiCol::DagRunId.eq(row.dag_run_id))
        .filter(TiCol::TaskId.is_in(child_tasks))
        .filter(TiCol::Status.eq(TaskStatus::Queued))
        .all(conn)
        .await
}

/// What a release or propagation decided, to act on after commit.
#[derive(Debug, Default)]
pub struct Released {
    /// Instances now QUEUED: publish their work messages.
    pub queued: Vec<task_instance::Model>,
    /// Instances that became terminal without running (SKIPPED, UPSTREAM_FAILED).
    pub settled: Vec<task_instance::Model>,
    /// Runs this finished, with their final status.
    pub finished_runs: Vec<(i64, RunStatus)>,
    /// Waiting runs that this started in the slots it freed.
    pub started_runs: Vec<i64>,
    /// `(latest parent end, queued at)` of each instance a propagation
    /// queued: the first half of an edge's latency.
    pub edges: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// `(id, run id)` of each instance a propagation counted into its
    /// children and run (each is counted once, by one propagation).
    pub propagated: Vec<(i64, i64)>,
}

/// Applies the strategy's decision to each PENDING instance of `rows`, a
/// statement per outcome rather than per row: QUEUED if it may run and is
/// enabled, SKIPPED if disabled, UPSTREAM_FAILED if its parents failed it.
/// The ids of instances that became terminal are pushed to `settled` for
/// propagation.
async fn evaluate_all<C: ConnectionTrait>(
    conn: &C,
    rows: &[task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Released,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    let (mut run, mut disabled, mut upstream_failed) = (Vec::new(), Vec::new(), Vec::new());
    for row in rows.iter().filter(|r| r.status == TaskStatus::Pending) {
        match decide(row, spec_strategy(row)) {
            Decision::Wait => {}
            Decision::Run if spec_enabled(row) => run.push(row.id),
            Decision::Run => disabled.push(row.id),
            Decision::UpstreamFailed => upstream_failed.push(row.id),
        }
    }
    out.queued.extend(queue_many(conn, &run, now).await?);
    for (ids, to, reason) in [
        (disabled, TaskStatus::Skipped, "task is disabled"),
        (
            upstream_failed,
            TaskStatus::UpstreamFailed,
            "an upstream task did not succeed",
        ),
    ] {
        let terminal = settle_many(conn, &ids, to, reason, now).await?;
        settled.extend(terminal.iter().map(|t| t.id));
        out.settled.extend(terminal);
    }
    Ok(())
}

/// Propagates a terminal instance (DESIGN.md "Propagation"): marks it
/// propagated (a second call is a no-op), updates its children's counters
/// and releases those whose strategy is decided, counts it off its run and
/// finishes the run at zero. Call inside a write transaction.
pub async fn propagate<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Released, DbErr> {
    propagate_many(conn, vec![id], now).await
}

/// [`propagate`] for many terminal instances at once — a resolver's batch
/// of completions — in a fixed number of statements per wave however many
/// instances, children and runs it touches: one marks them propagated, one
/// per distinct counter increment counts them into their children and
/// their runs, one per outcome releases the children. Instances a wave
/// settles (SKIPPED, UPSTREAM_FAILED) are the next wave.
pub async fn propagate_many<C: ConnectionTrait>(
    conn: &C,
    ids: Vec<i64>,
    now: DateTime<Utc>,
) -> Result<Released, DbErr> {
    let mut out = Released::default();
    propagate_all(conn, ids, now, &mut out).await?;
    Ok(out)
}

async fn propagate_all<C: ConnectionTrait>(
    conn: &C,
    mut work: Vec<i64>,
    now: DateTime<Utc>,
    out: &mut Released,
) -> Result<(), DbErr> {
    while !work.is_empty() {
        work.sort_unstable();
        work.dedup();
        let parents = update_chunked(conn, &work, |chunk| {
            Ti::update_many()
                .col_expr(TiCol::Propagated, Expr::value(true))
                .filter(TiCol::Id.is_in(chunk.iter().copied()))
                .filter(TiCol::Propagated.eq(false))
                .filter(TiCol::Status.is_in(TaskStatus::TERMINAL))
        })
        .await?;
        out.propagated
            .extend(parents.iter().map(|p| (p.id, p.dag_run_id)));
        let mut next = Vec::new();
        count_into_children(conn, &parents, now, out, &mut next).await?;
        release_waiters(conn, &parents, now, out, &mut next).await?;
        count_off_runs(conn, &parents, now, out, &mut next).await?;
        work = next;
    }
    Ok(())
}

/// What one wave's parents add to one child's counters.
#[derive(Debug, Default)]
struct ParentResults {
    ended: i32,
    strong_ok: i32,
    strong_failed: i32,
    latest_end: Option<DateTime<Utc>>,
}

/// Counts `parents` into their children, one UPDATE per distinct increment
/// (almost always one: each child has one parent ending, a strong success),
/// and releases the children whose strategy is now decided.
async fn count_into_children<C: ConnectionTrait>(
    conn: &C,
    parents: &[task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Released,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    use std::collections::BTreeMap;
    let mut counted: BTreeMap<(i64, i64), ParentResults> = BTreeMap::new();
    for parent in parents {
        let ok = parent.status.counts_as_success();
        for (child_task_id, dep_type) in children(parent) {
            let child = counted
                .entry((parent.dag_run_id, child_task_id))
                .or_default();
            child.ended += 1;
            if dep_type == DepType::Strong {
                if ok {
                    child.strong_ok += 1;
                } else {
                    child.strong_failed += 1;
                }
            }
            child.latest_end = Ord::max(child.latest_end, parent.finished_at);
        }
    }
    let mut by_increment: BTreeMap<(i32, i32, i32), Vec<(i64, i64)>> = BTreeMap::new();
    for (key, results) in &counted {
        by_increment
            .entry((results.ended, results.strong_ok, results.strong_failed))
            .or_default()
            .push(*key);
    }
    let mut rows = Vec::new();
    for ((ended, ok, failed), keys) in by_increment {
        for chunk in keys.chunks(IN_LIST_MAX) {
            let mut by_run: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for (run, task) in chunk {
                by_run.entry(*run).or_default().push(*task);
            }
            let selected =
                by_run
                    .into_iter()
                    .fold(sea_orm::Condition::any(), |any, (run, tasks)| {
                        any.add(TiCol::DagRunId.eq(run).and(TiCol::TaskId.is_in(tasks)))
                    });
            rows.extend(
                count_parents(conn, Ti::update_many().filter(selected), ended, ok, failed).await?,
            );
        }
    }
    let first_queued = out.queued.len();
    evaluate_all(conn, &rows, now, out, settled).await?;
    for child in &out.queued[first_queued..] {
        let parent_end = counted
            .get(&(child.dag_run_id, child.task_id))
            .and_then(|c| c.latest_end);
        if let (Some(ended), Some(queued)) = (parent_end, child.queued_at) {
            out.edges.push((ended, queued));
        }
    }
    Ok(())
}

/// Counts ended parents into the instances `update` selects: `ended` fewer
/// pending, `ok` and `failed` more strong results.
async fn count_parents<C: ConnectionTrait>(
    conn: &C,
    update: sea_orm::UpdateMany<Ti>,
    ended: i32,
    ok: i32,
    failed: i32,
) -> Result<Vec<task_instance::Model>, DbErr> {
    update
        .col_expr(
            TiCol::PendingParents,
            Expr::col(TiCol::PendingParents).sub(ended),
        )
        .col_expr(TiCol::StrongOk, Expr::col(TiCol::StrongOk).add(ok))
        .col_expr(
            TiCol::StrongFailed,
            Expr::col(TiCol::StrongFailed).add(failed),
        )
        .exec_with_returning(conn)
        .await
}

/// Counts one parent's result into the instance `update` selects.
async fn count_parent<C: ConnectionTrait>(
    conn: &C,
    update: sea_orm::UpdateMany<Ti>,
    dep_type: DepType,
    ok: bool,
) -> Result<Option<task_instance::Model>, DbErr> {
    let strong = dep_type == DepType::Strong;
    let rows = count_parents(
        conn,
        update,
        1,
        i32::from(strong && ok),
        i32::from(strong && !ok),
    )
    .await?;
    Ok(rows.into_iter().next())
}

/// Counts `parents` off their runs, one UPDATE per distinct decrement, and
/// finishes each run whose count reaches zero; a finished run's slot goes
/// to the DAG's oldest waiting run, whose roots are released.
async fn count_off_runs<C: ConnectionTrait>(
    conn: &C,
    parents: &[task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Released,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    use std::collections::BTreeMap;
    let mut per_run: BTreeMap<i64, (i32, i32)> = BTreeMap::new();
    for parent in parents {
        let counts = per_run.entry(parent.dag_run_id).or_default();
        counts.0 += 1;
        counts.1 += i32::from(!parent.status.counts_as_success());
    }
    let mut by_decrement: BTreeMap<(i32, i32), Vec<i64>> = BTreeMap::new();
    for (run, counts) in per_run {
        by_decrement.entry(counts).or_default().push(run);
    }
    let mut runs = Vec::new();
    for ((ended, failed), run_ids) in by_decrement {
        for chunk in run_ids.chunks(IN_LIST_MAX) {
            runs.extend(
                dag_run::Entity::update_many()
                    .col_expr(
                        dag_run::Column::PendingInstances,
                        Expr::col(dag_run::Column::PendingInstances).sub(ended),
                    )
                    .col_expr(
                        dag_run::Column::FailedInstances,
                        Expr::col(dag_run::Column::FailedInstances).add(failed),
                    )
                    .filter(dag_run::Column::Id.is_in(chunk.iter().copied()))
                    .exec_with_returning(conn)
                    .await?,
            );
        }
    }
    let finished = finish_runs(conn, &runs, now).await?;
    out.finished_runs
        .extend(finished.iter().map(|run| (run.id, run.status)));
    // A finished run frees a slot of its DAG; most DAGs have no run waiting
    // for one, so they are found in one query rather than asked one by one.
    // Locked first: a run created QUEUED concurrently is then either seen
    // here or created after this commit, seeing these runs finished.
    let mut dags: Vec<i64> = finished.iter().map(|run| run.dag_id).collect();
    dags.sort_unstable();
    dags.dedup();
    lock_dags(conn, &dags).await?;
    let mut waiting = std::collections::HashSet::new();
    for chunk in dags.chunks(IN_LIST_MAX) {
        waiting.extend(
            dag_run::Entity::find()
                .select_only()
                .column(dag_run::Column::DagId)
                .distinct()
                .filter(dag_run::Column::DagId.is_in(chunk.iter().copied()))
                .filter(dag_run::Column::Status.eq(RunStatus::Queued))
                .into_tuple::<i64>()
                .all(conn)
                .await?,
        );
    }
    for run in finished.iter().filter(|run| waiting.contains(&run.dag_id)) {
        if let Some(started) = start_waiting_run(conn, run.dag_id).await? {
            out.started_runs.push(started);
            let roots = pending_roots(conn, &[started]).await?;
            evaluate_all(conn, &roots, now, out, settled).await?;
        }
    }
    Ok(())
}

/// Satisfies the cross-run dependencies waiting for `parents`' tasks and
/// business dates (one query finds them all): each wait row is deleted by
/// exactly one propagation (row count 1), which counts the result into the
/// waiter and evaluates it if its run is running.
async fn release_waiters<C: ConnectionTrait>(
    conn: &C,
    parents: &[task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Released,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    let ended: HashMap<(i64, chrono::NaiveDate), bool> = parents
        .iter()
        .map(|p| ((p.task_id, p.biz_date), p.status.counts_as_success()))
        .collect();
    let mut tasks: Vec<i64> = parents.iter().map(|p| p.task_id).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let mut waits = Vec::new();
    for chunk in tasks.chunks(IN_LIST_MAX) {
        waits.extend(
            dependency_wait::Entity::find()
                .filter(dependency_wait::Column::TargetTaskId.is_in(chunk.iter().copied()))
                .all(conn)
                .await?,
        );
    }
    for wait in waits {
        let Some(&ok) = ended.get(&(wait.target_task_id, wait.target_biz_date)) else {
            continue;
        };
        let deleted = dependency_wait::Entity::delete_many()
            .filter(dependency_wait::Column::Id.eq(wait.id))
            .exec(conn)
            .await?;
        if deleted.rows_affected != 1 {
            continue;
        }
        let Some(waiter) = count_parent(
            conn,
            Ti::update_many().filter(TiCol::Id.eq(wait.waiter_instance_id)),
            DepType::from_stored(&wait.dep_type),
            ok,
        )
        .await?
        else {
            continue;
        };
        let still_waiting = dependency_wait::Entity::find()
            .filter(dependency_wait::Column::WaiterInstanceId.eq(waiter.id))
            .count(conn)
            .await?
            > 0;
        if !still_waiting && waiter.status == TaskStatus::Pending {
            Ti::update_many()
                .col_expr(
                    TiCol::DeadlineAt,
                    Expr::value(Option::<DateTime<Utc>>::None),
                )
                .filter(TiCol::Id.eq(waiter.id))
                .filter(TiCol::Status.eq(TaskStatus::Pending))
                .exec(conn)
                .await?;
        }
        let run_running = dag_run::Entity::find_by_id(waiter.dag_run_id)
            .one(conn)
            .await?
            .is_some_and(|run| run.status == RunStatus::Running);
        if run_running {
            evaluate_all(conn, std::slice::from_ref(&waiter), now, out, settled).await?;
        }
    }
    Ok(())
}

/// What a cross-run dependency points at, resolved by the caller.
#[derive(Debug, Clone)]
pub struct ExternalParent {
    /// `(dag_id, task_id)` of the awaited task; `None` when it does not
    /// exist, which counts as a parent that did not succeed.
    pub target: Option<(i64, i64)>,
    /// The awaited run's business date.
    pub biz_date: chrono::NaiveDate,
    /// STRONG or WEAK.
    pub dep_type: DepType,
    /// `other_dag/task for 2024-01-14`, for reasons and logs.
    pub description: String,
}

/// Links a new instance to a parent in another run (DESIGN.md "Dependency
/// rules"): counted at once if the awaited instance has already propagated
/// or its run can never exist (its business date is before the awaited
/// DAG's first run), otherwise registered as a wait that the awaited
/// instance's propagation releases; a registered wait arms the waiter's
/// wait timeout. The awaited row is locked so its propagation cannot slip
/// between the check and the registration.
pub async fn link_external_parent<C: ConnectionTrait>(
    conn: &C,
    waiter: &task_instance::Model,
    parent: &ExternalParent,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let by_id = || Ti::update_many().filter(TiCol::Id.eq(waiter.id));
    let Some((target_dag, target_task)) = parent.target else {
        count_parent(conn, by_id(), parent.dep_type, false).await?;
        return Ok(());
    };
    let awaited = Ti::find()
        .filter(TiCol::TaskId.eq(target_task))
        .filter(TiCol::BizDate.eq(parent.biz_date))
        .order_by_desc(TiCol::Id)
        .lock_exclusive()
        .one(conn)
        .await?;
    let settled = match &awaited {
        Some(awaited) if awaited.propagated => Some(awaited.status.counts_as_success()),
        Some(_) => None,
        None => {
            let first_run = dag_run::Entity::find()
                .filter(dag_run::Column::DagId.eq(target_dag))
                .order_by_asc(dag_run::Column::BizDate)
                .one(conn)
                .await?;
            first_run
                .is_some_and(|first| parent.biz_date < first.biz_date)
                .then_some(true)
        }
    };
    if let Some(ok) = settled {
        count_parent(conn, by_id(), parent.dep_type, ok).await?;
        return Ok(());
    }
    dependency_wait::Entity::insert(dependency_wait::ActiveModel {
        waiter_instance_id: Set(waiter.id),
        waiter_run_id: Set(waiter.dag_run_id),
        target_task_id: Set(target_task),
        target_biz_date: Set(parent.biz_date),
        dep_type: Set(parent.dep_type.as_str().to_owned()),
        description: Set(parent.description.clone()),
        created_at: Set(now),
        ..Default::default()
    })
    .exec_without_returning(conn)
    .await?;
    let wait_secs = waiter.spec["task"]["wait_timeout_secs"]
        .as_i64()
        .unwrap_or(i64::from(crate::dag_file::DEFAULT_WAIT_TIMEOUT_SECS));
    Ti::update_many()
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(now + Duration::seconds(wait_secs)),
        )
        .filter(TiCol::Id.eq(waiter.id))
        .filter(TiCol::DeadlineAt.is_null())
        .exec(conn)
        .await?;
    Ok(())
}

/// A PENDING instance whose cross-run wait timed out → FAILED, with a
/// reason naming what it waited for, then propagated. Does nothing for an
/// instance with no open waits.
pub async fn fail_wait_timeout<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Released, DbErr> {
    let mut out = Released::default();
    let waits = dependency_wait::Entity::find()
        .filter(dependency_wait::Column::WaiterInstanceId.eq(id))
        .all(conn)
        .await?;
    if waits.is_empty() {
        return Ok(out);
    }
    let awaited: Vec<&str> = waits.iter().map(|w| w.description.as_str()).collect();
    let reason = format!(
        "dependency wait timed out: still waiting for {}",
        awaited.join(", ")
    );
    let failed = update_instance(
        conn,
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Failed.as_str()))
            .col_expr(TiCol::Reason, Expr::value(reason))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(TiCol::Id.eq(id))
            .filter(TiCol::Status.eq(TaskStatus::Pending)),
    )
    .await?;
    if let Some(failed) = failed {
        dependency_wait::Entity::delete_many()
            .filter(dependency_wait::Column::WaiterInstanceId.eq(id))
            .exec(conn)
            .await?;
        out.settled.push(failed);
        propagate_all(conn, vec![id], now, &mut out).await?;
    }
    Ok(out)
}

/// Whether a DAG may start one more run now, under its `max_active_runs`.
/// Locks the DAG's row (see [`free_run_slots`]).
pub async fn run_slot_free<C: ConnectionTrait>(conn: &C, dag: &dag::Model) -> Result<bool, DbErr> {
    Ok(free_run_slots(conn, &[dag])
        .await?
        .get(&dag.id)
        .is_some_and(|free| *free > 0))
}

/// How many more runs each of `dags` may start now under its
/// `max_active_runs`, keyed by DAG id. Locks the DAGs' rows in id order
/// (PostgreSQL; SQLite write transactions are already serial), so run starts
/// of one DAG cannot race past the limit and two transactions locking
/// several DAGs cannot deadlock. Two statements however many DAGs: the
/// resolver asks once for a whole batch of fires.
pub async fn free_run_slots<C: ConnectionTrait>(
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
async fn lock_dags<C: ConnectionTrait>(conn: &C, ids: &[i64]) -> Result<(), DbErr> {
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
async fn pending_roots<C: ConnectionTrait>(
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
pub async fn release_roots<C: ConnectionTrait>(
    conn: &C,
    run_ids: &[i64],
    now: DateTime<Utc>,
    out: &mut Released,
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

/// QUEUED → RUNNING for the oldest waiting run of a DAG, when a slot is
/// free; the caller releases its roots.
async fn start_waiting_run<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
) -> Result<Option<i64>, DbErr> {
    let Some(dag) = dag::Entity::find_by_id(dag_id).one(conn).await? else {
        return Ok(None);
    };
    if !run_slot_free(conn, &dag).await? {
        return Ok(None);
    }
    let Some(waiting) = dag_run::Entity::find()
        .filter(dag_run::Column::DagId.eq(dag_id))
        .filter(dag_run::Column::Status.eq(RunStatus::Queued))
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
        .filter(dag_run::Column::Status.eq(RunStatus::Queued))
        .exec(conn)
        .await?;
    Ok((started.rows_affected == 1).then_some(waiting.id))
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
pub enum ResetError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// No such run.
    #[error("no run {0}")]
    UnknownRun(i64),
    /// No such task instance.
    #[error("no task instance {0}")]
    UnknownInstance(i64),
    /// Something to reset is still live.
    #[error("task '{0}' is {1}: wait for it to finish or kill it first")]
    Live(String, TaskStatus),
}

/// Puts instances of a run back to PENDING for another go, in place
/// (DESIGN.md "Rerun"): `attempt` keeps counting so executions stay
/// unique, the retry budget restarts, their attempts run with trigger type
/// RERUN, parent counters are recomputed from the instances left as they
/// were, and the run is RUNNING again until they finish. Parents in other
/// runs count as met. Returns what was released (publish its work).
pub async fn reset<C: ConnectionTrait>(
    conn: &C,
    run_id: i64,
    scope: ResetScope,
    now: DateTime<Utc>,
) -> Result<Released, ResetError> {
    use std::collections::HashSet;
    let run = dag_run::Entity::find_by_id(run_id)
        .one(conn)
        .await?
        .ok_or(ResetError::UnknownRun(run_id))?;
    let instances = Ti::find()
        .filter(TiCol::DagRunId.eq(run_id))
        .all(conn)
        .await?;
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
        .find(|i| !i.status.is_terminal() && i.status != TaskStatus::Pending)
    {
        return Err(ResetError::Live(live.task_name.clone(), live.status));
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
            .col_expr(
                TiCol::TriggerType,
                Expr::value(crate::TriggerType::Rerun.as_str()),
            )
            .col_expr(TiCol::PendingParents, Expr::value(pending))
            .col_expr(
                TiCol::StrongOk,
                Expr::value(ok + Ord::max(external_strong, 0)),
            )
            .col_expr(TiCol::StrongFailed, Expr::value(failed))
            .col_expr(TiCol::Propagated, Expr::value(false))
            .col_expr(TiCol::RetriesUsed, Expr::value(0))
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
            .exec(conn)
            .await?;
    }
    let failed_kept = instances
        .iter()
        .filter(|i| !selected.contains(&i.task_id) && !i.status.counts_as_success())
        .count();
    let pending_instances = i32::try_from(selected.len()).unwrap_or(i32::MAX);
    let reopened = pending_instances > 0;
    dag_run::Entity::update_many()
        .col_expr(
            dag_run::Column::Status,
            Expr::value(match (reopened, failed_kept) {
                (true, _) => RunStatus::Running.as_str(),
                (false, 0) => RunStatus::Success.as_str(),
                (false, _) => RunStatus::Failed.as_str(),
            }),
        )
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
        .filter(dag_run::Column::Id.eq(run_id))
        .exec(conn)
        .await?;
    let mut out = Released::default();
    if reopened {
        release_roots(conn, &[run_id], now, &mut out).await?;
    }
    Ok(out)
}

/// Marks a task instance SUCCESS or FAILED by hand. A live (not RUNNING)
/// instance is settled and propagated; a finished one is changed and its
/// downstream put back to PENDING so it follows the new result.
pub async fn mark<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    to: TaskStatus,
    now: DateTime<Utc>,
) -> Result<Released, ResetError> {
    let row = Ti::find_by_id(id)
        .one(conn)
        .await?
        .ok_or(ResetError::UnknownInstance(id))?;
    if matches!(row.status, TaskStatus::Running | TaskStatus::Queued) {
        return Err(ResetError::Live(row.task_name, row.status));
    }
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
        .exec(conn)
        .await?;
    if row.propagated {
        // The reset also recounts the run's failures with the new result.
        reset(
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
        Ok(propagate(conn, id, now).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pending: i32, strong: i32, ok: i32, failed: i32) -> task_instance::Model {
        task_instance::Model {
            id: 1,
            dag_run_id: 1,
            dag_id: 1,
            task_id: 1,
            task_name: "t".into(),
            biz_date: chrono::NaiveDate::default(),
            trigger_type: crate::TriggerType::Manual,
            status: TaskStatus::Pending,
            attempt: 0,
            retries_used: 0,
            owner: None,
            queue: "default".into(),
            priority: 5,
            deadline_at: None,
            pending_parents: pending,
            strong_parents: strong,
            strong_ok: ok,
            strong_failed: failed,
            propagated: false,
            children: serde_json::json!([]),
            spec: serde_json::json!({}),
            reason: None,
            created_at: Utc::now(),
            queued_at: None,
            started_at: None,
            finished_at: None,
        }
    }

    #[test]
    fn strategies() {
        use Decision::*;
        use Strategy as S;
        assert_eq!(decide(&row(1, 2, 1, 0), S::AllSuccess), Wait);
        assert_eq!(decide(&row(0, 2, 2, 0), S::AllSuccess), Run);
        assert_eq!(decide(&row(0, 2, 1, 1), S::AllSuccess), UpstreamFailed);
        assert_eq!(decide(&row(0, 0, 0, 0), S::AllSuccess), Run);
        assert_eq!(decide(&row(1, 2, 1, 0), S::OneSuccess), Run);
        assert_eq!(decide(&row(1, 2, 0, 1), S::OneSuccess), Wait);
        assert_eq!(decide(&row(0, 2, 0, 2), S::OneSuccess), UpstreamFailed);
        assert_eq!(decide(&row(0, 0, 0, 0), S::OneSuccess), Run);
        assert_eq!(decide(&row(1, 2, 0, 1), S::None), Wait);
        assert_eq!(decide(&row(0, 2, 0, 2), S::None), Run);
    }
}
