//! Claims and attempt ends: QUEUED → RUNNING when a runner takes a task,
//! RUNNING → an end when its attempt is over, and [`record`], the one
//! transaction a runner commits for a batch of both.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_shared::datasets::{EventSource, Written};
use datajump_shared::entities::large_output;
use datajump_shared::entities::{StoredJson, execution, task_instance};
use datajump_shared::metrics::{self, StoredField};
use datajump_shared::outputs::{LargeOutput, Outputs};
use datajump_shared::params::params_to_json;
use datajump_shared::problem::{Problem, Reason};
use datajump_shared::{TaskInstanceId, TaskStatus};
use datajump_store::db::{WriteTxn, begin_write, per_row};
use sea_orm::sea_query::{Expr, ExprTrait, Value};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait, QueryFilter, QuerySelect,
};

use crate::datasets::{Announcement, record_written};
use crate::effects::Effects;
use crate::propagation::propagate_marked;
use crate::queue::requeue_abandoned;
use crate::sql::{Ti, TiCol, stored_problem};
use crate::transitions::TaskTransition;

/// QUEUED → RUNNING for each `(id, attempt)` (attempt 0-based), owned by
/// `owner` and started at `now`. This is the claim: of any number of runners
/// holding a copy of a work message, exactly one gets the row back. Returns
/// the rows won, in no particular order; a batch costs one statement.
async fn start_many<C: ConnectionTrait>(
    conn: &C,
    claims: &[(i64, i32)],
    owner: &str,
    now: DateTime<Utc>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    // A sensor between checks (it has checks) continues its attempt: one
    // attempt however many checks it makes.
    let won = Ti::update_many()
        .col_expr(TiCol::Status, Expr::value(TaskStatus::Running.as_str()))
        .col_expr(
            TiCol::Attempt,
            Expr::case(TiCol::Pokes.gt(0), Expr::col(TiCol::Attempt))
                .finally(Expr::col(TiCol::Attempt).add(1))
                .into(),
        )
        .col_expr(TiCol::Owner, Expr::value(owner))
        // …and keeps its start, so the instance's duration is the attempt's
        // (every check and every wait between), as its execution's is.
        .col_expr(
            TiCol::StartedAt,
            Expr::case(TiCol::Pokes.gt(0), Expr::col(TiCol::StartedAt))
                .finally(Expr::value(now))
                .into(),
        )
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        // The outputs are the last attempt's: a new one starts without.
        .col_expr(
            TiCol::Outputs,
            Expr::value(Option::<serde_json::Value>::None),
        )
        .filter(TaskTransition::Claim.applies())
        .filter(at_attempts(claims.iter().copied()))
        .exec_with_returning(conn)
        .await?;
    TaskTransition::Claim.applied_to(&won);
    Ok(won)
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
    /// A sensor's condition did not hold yet: UP_FOR_RESCHEDULE until
    /// `check_at`, the same attempt.
    Reschedule {
        /// When the ticker requeues it for its next check.
        check_at: DateTime<Utc>,
    },
}

/// The end of one attempt, as [`finish_many`] records it.
#[derive(Debug, Clone, Copy)]
struct Finish<'a> {
    /// The instance.
    id: i64,
    /// The attempt (0-based) that ended.
    attempt: i32,
    /// What becomes of the instance.
    end: &'a AttemptEnd,
    /// Why, when it did not succeed.
    reason: Option<&'a Reason>,
    /// When it ended.
    at: DateTime<Utc>,
    /// What it declared, if anything.
    outputs: Option<&'a Outputs>,
}

/// RUNNING → each attempt's end, only for attempts `owner` runs: a terminal
/// status with its finish time, or UP_FOR_RETRY until the retry time with
/// one more retry used. Returns the rows changed, in no particular order; a
/// batch costs one statement, whose per-row values are `CASE` expressions.
async fn finish_many<C: ConnectionTrait>(
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
    let mut check_at = Vec::new();
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
            AttemptEnd::Reschedule { check_at: at } => {
                status.push((finish.id, TaskStatus::UpForReschedule.as_str()));
                check_at.push((finish.id, *at));
            }
        }
    }
    let reasons: Vec<(i64, Option<String>)> = finishes
        .iter()
        .map(|f| (f.id, f.reason.map(Reason::text)))
        .collect();
    let problems: Vec<(i64, Option<StoredJson<Problem>>)> = finishes
        .iter()
        .map(|f| (f.id, f.reason.and_then(stored_problem)))
        .collect();
    let mut update = Ti::update_many()
        .col_expr(TiCol::Status, per_row(TiCol::Id, status, None))
        .col_expr(TiCol::Reason, per_row(TiCol::Id, reasons, None))
        .col_expr(TiCol::ReasonProblem, per_row(TiCol::Id, problems, None));
    if !finished_at.is_empty() {
        update = update.col_expr(
            TiCol::FinishedAt,
            per_row(TiCol::Id, finished_at, Some(Expr::col(TiCol::FinishedAt))),
        );
    }
    // Checks count up while a sensor waits, and start again from zero
    // with any other end (the next attempt is a new one).
    let checked: Vec<i64> = check_at.iter().map(|(id, _)| *id).collect();
    update = update.col_expr(
        TiCol::Pokes,
        if checked.is_empty() {
            Expr::value(0)
        } else {
            Expr::case(TiCol::Id.is_in(checked), Expr::col(TiCol::Pokes).add(1))
                .finally(Expr::value(0))
                .into()
        },
    );
    let mut deadlines = retry_at.clone();
    deadlines.extend(check_at);
    if !deadlines.is_empty() {
        update = update.col_expr(
            TiCol::DeadlineAt,
            per_row(TiCol::Id, deadlines, Some(Expr::col(TiCol::DeadlineAt))),
        );
    }
    if !retry_at.is_empty() {
        let retried: Vec<i64> = retry_at.iter().map(|(id, _)| *id).collect();
        update = update.col_expr(
            TiCol::RetriesUsed,
            Expr::case(
                TiCol::Id.is_in(retried),
                Expr::col(TiCol::RetriesUsed).add(1),
            )
            .finally(Expr::col(TiCol::RetriesUsed))
            .into(),
        );
    }
    // A terminal end is propagated in this same transaction
    // ([`record`]), so the statement that ends it marks it propagated too.
    let terminal: Vec<i64> = finishes
        .iter()
        .filter(|f| matches!(f.end, AttemptEnd::Terminal(_)))
        .map(|f| f.id)
        .collect();
    if !terminal.is_empty() {
        update = update.col_expr(
            TiCol::Propagated,
            Expr::case(TiCol::Id.is_in(terminal), Expr::value(true))
                .finally(Expr::col(TiCol::Propagated))
                .into(),
        );
    }
    // End and EndForRetry leave the same status, RUNNING.
    let mut ended = update
        .filter(TaskTransition::End.applies())
        .filter(TiCol::Owner.eq(owner))
        .filter(at_attempts(finishes.iter().map(|f| (f.id, f.attempt + 1))))
        .exec_with_returning(conn)
        .await?;
    // A statement per instance that declared outputs, not a `CASE` in the
    // one above: PostgreSQL cannot unify a bound JSON value with a `json`
    // column's in one expression, and most tasks declare none.
    for row in &mut ended {
        if let Some(outputs) = finishes
            .iter()
            .find(|f| f.id == row.id)
            .and_then(|f| f.outputs)
        {
            let outputs = StoredJson::new(outputs.clone());
            Ti::update_many()
                .col_expr(TiCol::Outputs, Expr::value(outputs.json().clone()))
                .filter(TiCol::Id.eq(row.id))
                .exec(conn)
                .await?;
            row.outputs = Some(outputs);
        }
    }
    for row in &ended {
        let transition = match row.status {
            TaskStatus::UpForRetry => TaskTransition::EndForRetry,
            TaskStatus::UpForReschedule => TaskTransition::EndForReschedule,
            _ => TaskTransition::End,
        };
        transition.applied(TaskStatus::Running, row.status);
    }
    Ok(ended)
}

/// A runner's claim of attempt `attempt` (0-based) of a QUEUED instance.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    /// The instance.
    pub task_instance_id: TaskInstanceId,
    /// The attempt its work message names.
    pub attempt: i32,
}

/// How a claimed attempt ended, as it is recorded.
#[derive(Debug, Clone)]
pub struct End {
    /// The instance.
    pub task_instance_id: TaskInstanceId,
    /// The attempt (0-based) that ended.
    pub attempt: i32,
    /// The attempt's execution row.
    pub execution_id: i64,
    /// Stopped at the drain timeout: the instance goes back to the queue.
    pub abandoned: bool,
    /// What becomes of the instance (ignored when abandoned).
    pub instance_end: AttemptEnd,
    /// The execution row's status.
    pub status: TaskStatus,
    /// Why, when it did not succeed.
    pub reason: Option<Reason>,
    /// When it ended.
    pub end: DateTime<Utc>,
    /// How long it ran.
    pub duration_ms: i64,
    /// The process's exit code, if it had one.
    pub exit_code: Option<i32>,
    /// The last lines of its log.
    pub log_tail: String,
    /// Where the full log is, when the tail could not hold it.
    pub log_path: Option<String>,
    /// What the attempt declared (`datajump_shared::outputs`); `None` when
    /// it declared nothing.
    pub outputs: Option<Outputs>,
    /// The one large value it wrote (`$DJ_OUTPUT_JSON/<name>.json`), if any.
    pub large_output: Option<LargeOutput>,
    /// The datasets its task writes, partitions substituted: recorded as
    /// dataset events if the attempt ends the instance SUCCESS.
    pub written: Vec<Written>,
}

/// What recording one attempt's end did to its instance.
#[derive(Debug, Default)]
pub struct Ended {
    /// The instance, if this attempt ended it (terminal or waiting for a
    /// retry); `None` if it was changed elsewhere first (killed, taken over).
    pub finished: Option<task_instance::Model>,
    /// The instance, if the attempt was abandoned and it went back to the queue.
    pub requeued: Option<task_instance::Model>,
}

/// A claim won.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The instance, RUNNING under the claiming runner.
    pub instance: task_instance::Model,
    /// The attempt's execution row.
    pub execution: execution::Model,
    /// What the tasks of the instance's run have declared so far (most
    /// runs: nothing), which the attempt may read (docs/PARAMETERS.md,
    /// "Values between tasks"): read in the claim's transaction, so an
    /// attempt in a run without outputs costs no query of its own.
    pub run_outputs: Vec<DeclaredOutputs>,
}

/// The outputs one task instance declared (`$DJ_OUTPUT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredOutputs {
    /// Its task.
    pub task_id: i64,
    /// Its task's name.
    pub task_name: String,
    /// What it declared.
    pub outputs: Outputs,
}

/// What [`record`] committed, by instance id.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Each claim won.
    pub claimed: HashMap<TaskInstanceId, Claimed>,
    /// What each end did.
    pub ended: HashMap<TaskInstanceId, Ended>,
}

/// Records a runner's batch of claims and attempt ends in one transaction:
/// the claims won and their execution rows, the ends' instances and
/// execution rows, and the propagation of every instance the ends finished
/// (children counted and released, runs counted down and finished). However
/// many writes, the claims cost two statements and the ends two plus the
/// propagation's few: on PostgreSQL every statement is a round trip.
/// Propagating here rather than in a resolver saves every edge a second
/// transaction and two NATS hops.
pub async fn record(
    db: &DatabaseConnection,
    owner: &str,
    claims: &[&Claim],
    ends: &[&End],
    now: DateTime<Utc>,
) -> Result<(Recorded, Effects), DbErr> {
    let txn = begin_write(db).await?;
    let claimed = apply_claims(&txn, owner, claims, now).await?;
    let ended = apply_ends(&txn, owner, ends).await?;
    let mut effects = Effects::default();
    // Marked propagated by the statement that ended them.
    let finished: Vec<&task_instance::Model> = ended
        .values()
        .filter_map(|ended| ended.finished.as_ref())
        .filter(|row| row.status.is_terminal())
        .collect();
    let announcements = announcements_of(&ended, ends);
    record_written(&txn, announcements, now, &mut effects).await?;
    propagate_marked(&txn, &finished, now, &mut effects).await?;
    effects
        .queued
        .extend(ended.values().filter_map(|ended| ended.requeued.clone()));
    txn.commit().await?;
    Ok((Recorded { claimed, ended }, effects))
}

/// The dataset events of the ends that finished their instances SUCCESS,
/// with the attempt's declared outputs as their metadata.
fn announcements_of(ended: &HashMap<TaskInstanceId, Ended>, ends: &[&End]) -> Vec<Announcement> {
    ends.iter()
        .filter(|end| !end.written.is_empty())
        .filter_map(|end| {
            let row = ended.get(&end.task_instance_id)?.finished.as_ref()?;
            (row.status == TaskStatus::Success).then_some((end, row))
        })
        .flat_map(|(end, row)| {
            let project_id = row
                .spec
                .read()
                .map_or(datajump_shared::dag_file::DEFAULT_PROJECT, |spec| {
                    spec.project_id
                });
            end.written.iter().map(move |written| Announcement {
                project_id,
                written: written.clone(),
                source: EventSource::Task,
                dag_run_id: Some(row.dag_run_id),
                task_instance_id: Some(row.id),
                metadata: end.outputs.as_ref().map(params_to_json),
                origin: None,
            })
        })
        .collect()
}

/// Claims the instances and inserts an execution row for each one won, all
/// started `now`; returns them by instance, each with its run's outputs.
async fn apply_claims(
    txn: &WriteTxn,
    owner: &str,
    claims: &[&Claim],
    now: DateTime<Utc>,
) -> Result<HashMap<TaskInstanceId, Claimed>, DbErr> {
    let claimed = claim_with_executions(txn, owner, claims, now).await?;
    if claimed.is_empty() {
        return Ok(HashMap::new());
    }
    let by_run = declared_outputs(txn, claimed.values().map(|(row, _)| row.dag_run_id)).await?;
    Ok(claimed
        .into_iter()
        .map(|(id, (instance, execution))| {
            let run_outputs = by_run
                .get(&instance.dag_run_id)
                .cloned()
                .unwrap_or_default();
            let claimed = Claimed {
                instance,
                execution,
                run_outputs,
            };
            (id, claimed)
        })
        .collect())
}

/// The outputs declared in `runs`, by run: one statement, which the partial
/// index on `outputs IS NOT NULL` answers from the few instances that
/// declared any, however large the runs.
async fn declared_outputs(
    txn: &WriteTxn,
    runs: impl Iterator<Item = i64>,
) -> Result<HashMap<i64, Vec<DeclaredOutputs>>, DbErr> {
    let runs: std::collections::BTreeSet<i64> = runs.collect();
    let rows: Vec<(i64, i64, String, Option<StoredJson<Outputs>>)> = Ti::find()
        .select_only()
        .columns([
            TiCol::DagRunId,
            TiCol::TaskId,
            TiCol::TaskName,
            TiCol::Outputs,
        ])
        .filter(TiCol::DagRunId.is_in(runs))
        .filter(TiCol::Outputs.is_not_null())
        .into_tuple()
        .all(&**txn)
        .await?;
    let mut by_run: HashMap<i64, Vec<DeclaredOutputs>> = HashMap::new();
    for (run, task_id, task_name, outputs) in rows {
        let Some(outputs) = outputs else { continue };
        match outputs.read() {
            Ok(outputs) => by_run.entry(run).or_default().push(DeclaredOutputs {
                task_id,
                task_name,
                outputs: outputs.clone(),
            }),
            // Read as nothing declared (docs/ARCHITECTURE.md "Stored JSON").
            Err(e) => {
                tracing::error!(dag_run_id = run, task_id, error = %e, "stored outputs do not read: read as none");
                metrics::unreadable_stored_json(StoredField::InstanceOutputs);
            }
        }
    }
    Ok(by_run)
}

/// Claims the instances and inserts an execution row for each one won, all
/// started `now`; returns them by instance.
async fn claim_with_executions(
    txn: &WriteTxn,
    owner: &str,
    claims: &[&Claim],
    now: DateTime<Utc>,
) -> Result<HashMap<TaskInstanceId, (task_instance::Model, execution::Model)>, DbErr> {
    let keys: Vec<(i64, i32)> = claims
        .iter()
        .map(|claim| (claim.task_instance_id.0, claim.attempt))
        .collect();
    let won = start_many(txn, &keys, owner, now).await?;
    if won.is_empty() {
        return Ok(HashMap::new());
    }
    let (continued, started): (Vec<_>, Vec<_>) = won.into_iter().partition(|row| row.pokes > 0);
    // A new attempt starts without its instance's large output, as without
    // its outputs; only a retry or a rerun can have one to remove.
    let retried: Vec<i64> = started
        .iter()
        .filter(|row| row.last_attempt() > 0)
        .map(|row| row.id)
        .collect();
    if !retried.is_empty() {
        large_output::Entity::delete_many()
            .filter(large_output::Column::TaskInstanceId.is_in(retried))
            .exec(&**txn)
            .await?;
    }
    let mut executions = continue_checks(txn, &continued, owner).await?;
    if started.is_empty() {
        return Ok(pair_with_executions(continued, executions));
    }
    let inserted =
        execution::Entity::insert_many(started.iter().map(|row| execution::ActiveModel {
            task_instance_id: Set(row.id),
            dag_run_id: Set(row.dag_run_id),
            task_id: Set(row.task_id),
            // From the spec the run was created with (the fire's schedule).
            schedule_id: Set(row.spec.read().ok().and_then(|spec| spec.schedule_id)),
            biz_date: Set(row.biz_date),
            status: Set(TaskStatus::Running),
            attempt: Set(row.last_attempt()),
            trigger_type: Set(row.trigger_type),
            worker: Set(owner.to_owned()),
            start_time: Set(now),
            created_at: Set(now),
            ..Default::default()
        }))
        .exec_with_returning(&**txn)
        .await?;
    executions.extend(
        inserted
            .into_iter()
            .map(|execution| (execution.task_instance_id, execution)),
    );
    let mut rows = continued;
    rows.extend(started);
    Ok(pair_with_executions(rows, executions))
}

/// Each claimed instance with its execution row, by instance.
fn pair_with_executions(
    rows: Vec<task_instance::Model>,
    mut executions: HashMap<i64, execution::Model>,
) -> HashMap<TaskInstanceId, (task_instance::Model, execution::Model)> {
    rows.into_iter()
        .filter_map(|row| {
            let execution = executions.remove(&row.id)?;
            Some((row.instance_id(), (row, execution)))
        })
        .collect()
}

/// Reopens the execution rows of sensors claimed for their next check:
/// their attempt goes on, under the runner that took it now. Returns them
/// by instance.
async fn continue_checks(
    txn: &WriteTxn,
    rows: &[task_instance::Model],
    owner: &str,
) -> Result<HashMap<i64, execution::Model>, DbErr> {
    let mut reopened = HashMap::with_capacity(rows.len());
    for row in rows {
        let execution = execution::Entity::update_many()
            .col_expr(
                execution::Column::Status,
                Expr::value(TaskStatus::Running.as_str()),
            )
            .col_expr(execution::Column::Worker, Expr::value(owner))
            .col_expr(
                execution::Column::EndTime,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(execution::Column::TaskInstanceId.eq(row.id))
            .filter(execution::Column::Attempt.eq(row.last_attempt()))
            .exec_with_returning(&**txn)
            .await?
            .into_iter()
            .next();
        if let Some(execution) = execution {
            reopened.insert(row.id, execution);
        }
    }
    Ok(reopened)
}

/// Records the ends: the instances' new states, then every execution row;
/// returns what became of each instance, by instance.
async fn apply_ends(
    txn: &WriteTxn,
    owner: &str,
    ends: &[&End],
) -> Result<HashMap<TaskInstanceId, Ended>, DbErr> {
    let mut ended = HashMap::with_capacity(ends.len());
    if ends.is_empty() {
        return Ok(ended);
    }
    let finishes: Vec<Finish<'_>> = ends
        .iter()
        .filter(|end| !end.abandoned)
        .map(|end| Finish {
            id: end.task_instance_id.0,
            attempt: end.attempt,
            end: &end.instance_end,
            reason: end.reason.as_ref(),
            at: end.end,
            outputs: end.outputs.as_ref(),
        })
        .collect();
    for row in finish_many(txn, &finishes, owner).await? {
        ended.insert(
            row.instance_id(),
            Ended {
                finished: Some(row),
                requeued: None,
            },
        );
    }
    // Few attempts write one: a statement each.
    for end in ends.iter().filter(|end| !end.abandoned) {
        let (
            Some(large),
            Some(Ended {
                finished: Some(row),
                ..
            }),
        ) = (&end.large_output, ended.get(&end.task_instance_id))
        else {
            continue;
        };
        large_output::Entity::delete_many()
            .filter(large_output::Column::TaskInstanceId.eq(row.id))
            .exec(&**txn)
            .await?;
        large_output::Entity::insert(large_output::ActiveModel {
            task_instance_id: Set(row.id),
            dag_run_id: Set(row.dag_run_id),
            name: Set(large.name().to_owned()),
            value: Set(large.value().to_owned()),
            created_at: Set(end.end),
        })
        .exec_without_returning(&**txn)
        .await?;
    }
    // Only at a drain timeout: not worth a set-based statement.
    for end in ends.iter().filter(|end| end.abandoned) {
        let requeued =
            requeue_abandoned(txn, end.task_instance_id.0, end.attempt, owner, end.end).await?;
        ended.insert(
            end.task_instance_id,
            Ended {
                finished: None,
                requeued,
            },
        );
    }
    let by_execution = |value: fn(&End) -> Value| -> Vec<(i64, Value)> {
        ends.iter()
            .map(|end| (end.execution_id, value(end)))
            .collect()
    };
    type Ex = execution::Column;
    execution::Entity::update_many()
        .col_expr(
            Ex::Status,
            per_row(Ex::Id, by_execution(|e| e.status.as_str().into()), None),
        )
        .col_expr(
            Ex::EndTime,
            per_row(Ex::Id, by_execution(|e| Some(e.end).into()), None),
        )
        .col_expr(
            Ex::DurationMs,
            per_row(Ex::Id, by_execution(|e| Some(e.duration_ms).into()), None),
        )
        .col_expr(
            Ex::ExitCode,
            per_row(Ex::Id, by_execution(|e| e.exit_code.into()), None),
        )
        .col_expr(
            Ex::LogTail,
            per_row(
                Ex::Id,
                by_execution(|e| Some(e.log_tail.clone()).into()),
                None,
            ),
        )
        .col_expr(
            Ex::LogPath,
            per_row(Ex::Id, by_execution(|e| e.log_path.clone().into()), None),
        )
        .col_expr(
            Ex::ErrorMsg,
            per_row(
                Ex::Id,
                by_execution(|e| e.reason.as_ref().map(Reason::text).into()),
                None,
            ),
        )
        .col_expr(
            Ex::ErrorProblem,
            per_row(
                Ex::Id,
                by_execution(|e| e.reason.as_ref().and_then(stored_problem).into()),
                None,
            ),
        )
        .filter(Ex::Id.is_in(ends.iter().map(|end| end.execution_id)))
        .exec(&**txn)
        .await?;
    Ok(ended)
}
