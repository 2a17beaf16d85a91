//! Group commit of a runner's claims and attempt ends.
//!
//! Every claim and every attempt's end is a small write transaction, and
//! under load dozens are due at once: a fetch fills sixteen slots together,
//! and sixteen no-op tasks end together. Paying a BEGIN and a COMMIT for
//! each — a WAL flush on PostgreSQL, a turn of the write lock on SQLite —
//! was most of the runner's database time. So one task takes the runner's
//! writes in order and commits whatever is waiting in one transaction.
//! Nothing waits for company: a lone write commits at once, and the writes
//! that arrive meanwhile form the next batch. Inside the transaction the
//! batch is set-based too — four statements however many writes — because
//! with one statement per write, timing one runner under load showed this
//! transaction busy 88% of the time on PostgreSQL round trips. A batch the
//! database refuses is redone one write per transaction, so only the write
//! at fault fails.

use chrono::{DateTime, Utc};
use datajump_shared::TaskStatus;
use std::collections::HashMap;

use datajump_shared::db::{WriteTxn, begin_write, per_row};
use datajump_shared::entities::{execution, task_instance};
use datajump_shared::state::{self, AttemptEnd};
use sea_orm::sea_query::Value;
use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 128;

/// A claim of attempt `attempt` (0-based) of a QUEUED instance.
pub(crate) struct Claim {
    pub task_instance_id: i64,
    pub attempt: i32,
}

/// The instance and its new execution row, if this runner won the claim.
pub(crate) type Claimed = Option<(task_instance::Model, execution::Model)>;

/// How a claimed attempt ended, as it is committed.
#[derive(Clone)]
pub(crate) struct End {
    pub task_instance_id: i64,
    pub attempt: i32,
    pub execution_id: i64,
    /// Stopped at the drain timeout: the instance goes back to the queue.
    pub abandoned: bool,
    /// What becomes of the instance (ignored when abandoned).
    pub instance_end: AttemptEnd,
    /// The execution row's status.
    pub status: TaskStatus,
    pub reason: Option<String>,
    pub end: DateTime<Utc>,
    pub duration_ms: i64,
    pub exit_code: Option<i32>,
    pub log_tail: String,
    pub log_path: Option<String>,
}

/// The instance if this attempt ended it (terminal or waiting for a retry),
/// and the instance put back in the queue if the attempt was abandoned.
pub(crate) type Ended = (Option<task_instance::Model>, Option<task_instance::Model>);

enum Write {
    Claim(Claim),
    End(End),
}

enum Written {
    Claim(Claimed),
    End(Ended),
}

struct Pending {
    write: Write,
    reply: oneshot::Sender<Result<Written, DbErr>>,
}

/// The handle a runner's tasks send their writes to. The committing task
/// stops when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct Committer {
    sender: mpsc::UnboundedSender<Pending>,
}

impl Committer {
    /// Starts committing writes for the runner `owner`.
    pub fn start(db: DatabaseConnection, owner: String) -> Committer {
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(serve(db, owner, receiver));
        Committer { sender }
    }

    /// Claims an attempt and inserts its execution row, in the same
    /// transaction: a claimed attempt always has its row.
    pub async fn claim(&self, claim: Claim) -> Result<Claimed, DbErr> {
        match self.send(Write::Claim(claim)).await? {
            Written::Claim(claimed) => Ok(claimed),
            Written::End(_) => Err(mismatch()),
        }
    }

    /// Commits the end of a claimed attempt: the instance's new state and
    /// its execution row.
    pub async fn end(&self, end: End) -> Result<Ended, DbErr> {
        match self.send(Write::End(end)).await? {
            Written::End(ended) => Ok(ended),
            Written::Claim(_) => Err(mismatch()),
        }
    }

    async fn send(&self, write: Write) -> Result<Written, DbErr> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Pending { write, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> DbErr {
    DbErr::Custom("the runner's committer has stopped".to_owned())
}

fn mismatch() -> DbErr {
    DbErr::Custom("the runner's committer answered another kind of write".to_owned())
}

async fn serve(
    db: DatabaseConnection,
    owner: String,
    mut receiver: mpsc::UnboundedReceiver<Pending>,
) {
    while let Some(first) = receiver.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH
            && let Ok(next) = receiver.try_recv()
        {
            batch.push(next);
        }
        let writes: Vec<&Write> = batch.iter().map(|p| &p.write).collect();
        match write_all(&db, &owner, &writes).await {
            Ok(written) => {
                for (pending, written) in batch.into_iter().zip(written) {
                    let _ = pending.reply.send(Ok(written));
                }
            }
            Err(e) if batch.len() == 1 => {
                if let Some(pending) = batch.pop() {
                    let _ = pending.reply.send(Err(e));
                }
            }
            Err(e) => {
                warn!(error = %e, writes = batch.len(), "a batch of claims and ends failed; committing them one at a time");
                for pending in batch {
                    let result = write_all(&db, &owner, &[&pending.write])
                        .await
                        .and_then(|written| written.into_iter().next().ok_or_else(mismatch));
                    let _ = pending.reply.send(result);
                }
            }
        }
    }
}

/// Applies `writes` in one transaction, answering each in order. However
/// many there are, the claims cost two statements (claim, insert the
/// executions) and the ends two (the instances, the executions): on
/// PostgreSQL every statement is a round trip, and one per write was most of
/// the runner's time under load.
async fn write_all(
    db: &DatabaseConnection,
    owner: &str,
    writes: &[&Write],
) -> Result<Vec<Written>, DbErr> {
    let txn = begin_write(db).await?;
    let (mut claims, mut ends): (Vec<&Claim>, Vec<&End>) = (Vec::new(), Vec::new());
    for write in writes {
        match write {
            Write::Claim(claim) => claims.push(claim),
            Write::End(end) => ends.push(end),
        }
    }
    let mut claimed = apply_claims(&txn, owner, &claims).await?;
    let mut ended = apply_ends(&txn, owner, &ends).await?;
    txn.commit().await?;
    Ok(writes
        .iter()
        .map(|write| match write {
            // Two copies of one work message in a batch: the first gets the row.
            Write::Claim(claim) => Written::Claim(claimed.remove(&claim.task_instance_id)),
            Write::End(end) => {
                Written::End(ended.remove(&end.task_instance_id).unwrap_or((None, None)))
            }
        })
        .collect())
}

/// Claims the instances and inserts an execution row for each one won, all
/// started now; returns them by instance.
async fn apply_claims(
    txn: &WriteTxn,
    owner: &str,
    claims: &[&Claim],
) -> Result<HashMap<i64, (task_instance::Model, execution::Model)>, DbErr> {
    let now = Utc::now();
    let keys: Vec<(i64, i32)> = claims
        .iter()
        .map(|claim| (claim.task_instance_id, claim.attempt))
        .collect();
    let won = state::start_many(txn, &keys, owner, now).await?;
    if won.is_empty() {
        return Ok(HashMap::new());
    }
    let executions = execution::Entity::insert_many(won.iter().map(|row| {
        execution::ActiveModel {
            task_instance_id: Set(row.id),
            dag_run_id: Set(row.dag_run_id),
            task_id: Set(row.task_id),
            schedule_id: Set(None),
            biz_date: Set(row.biz_date),
            status: Set(TaskStatus::Running),
            // The claim added one: the execution is the 0-based attempt.
            attempt: Set(row.attempt - 1),
            trigger_type: Set(row.trigger_type),
            worker: Set(owner.to_owned()),
            start_time: Set(now),
            created_at: Set(now),
            ..Default::default()
        }
    }))
    .exec_with_returning(&**txn)
    .await?;
    let mut executions: HashMap<i64, execution::Model> = executions
        .into_iter()
        .map(|execution| (execution.task_instance_id, execution))
        .collect();
    Ok(won
        .into_iter()
        .filter_map(|row| {
            let execution = executions.remove(&row.id)?;
            Some((row.id, (row, execution)))
        })
        .collect())
}

/// Records the ends: the instances' new states, then every execution row;
/// returns what became of each instance, by instance.
async fn apply_ends(
    txn: &WriteTxn,
    owner: &str,
    ends: &[&End],
) -> Result<HashMap<i64, Ended>, DbErr> {
    let mut ended = HashMap::with_capacity(ends.len());
    if ends.is_empty() {
        return Ok(ended);
    }
    let finishes: Vec<state::Finish<'_>> = ends
        .iter()
        .filter(|end| !end.abandoned)
        .map(|end| state::Finish {
            id: end.task_instance_id,
            attempt: end.attempt,
            end: &end.instance_end,
            reason: end.reason.as_deref(),
            at: end.end,
        })
        .collect();
    for row in state::finish_many(txn, &finishes, owner).await? {
        ended.insert(row.id, (Some(row), None));
    }
    // Only at a drain timeout: not worth a set-based statement.
    for end in ends.iter().filter(|end| end.abandoned) {
        let requeued =
            state::requeue_abandoned(txn, end.task_instance_id, end.attempt, owner, end.end)
                .await?;
        ended.insert(end.task_instance_id, (None, requeued));
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
            per_row(Ex::Id, by_execution(|e| e.reason.clone().into()), None),
        )
        .filter(Ex::Id.is_in(ends.iter().map(|end| end.execution_id)))
        .exec(&**txn)
        .await?;
    Ok(ended)
}
