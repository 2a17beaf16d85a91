//! Group commit of a runner's claims and attempt ends.
//!
//! Every claim and every attempt's end is a small write transaction, and
//! under load dozens are due at once: a fetch fills sixteen slots together,
//! and sixteen no-op tasks end together. Paying a BEGIN and a COMMIT for
//! each — a WAL flush on PostgreSQL, a turn of the write lock on SQLite —
//! was most of the runner's database time. So one task takes the runner's
//! writes in order and commits whatever is waiting in one transaction.
//! Nothing waits for company: a lone write commits at once, and the writes
//! that arrive meanwhile form the next batch. A batch the database refuses
//! is redone one write per transaction, so only the write at fault fails.

use chrono::{DateTime, Utc};
use datajump_shared::TaskStatus;
use datajump_shared::db::{WriteTxn, begin_write};
use datajump_shared::entities::{execution, task_instance};
use datajump_shared::state::{self, AttemptEnd};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseConnection, DbErr};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// Most writes committed in one transaction.
const MAX_BATCH: usize = 128;

/// A claim of attempt `attempt` (0-based) of a QUEUED instance.
pub(crate) struct Claim {
    pub task_instance_id: i64,
    pub attempt: i32,
    pub start: DateTime<Utc>,
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

/// Applies `writes` in one transaction, answering each in order.
async fn write_all(
    db: &DatabaseConnection,
    owner: &str,
    writes: &[&Write],
) -> Result<Vec<Written>, DbErr> {
    let txn = begin_write(db).await?;
    let mut written = Vec::with_capacity(writes.len());
    for write in writes {
        written.push(match write {
            Write::Claim(claim) => Written::Claim(apply_claim(&txn, owner, claim).await?),
            Write::End(end) => Written::End(apply_end(&txn, owner, end).await?),
        });
    }
    txn.commit().await?;
    Ok(written)
}

async fn apply_claim(txn: &WriteTxn, owner: &str, claim: &Claim) -> Result<Claimed, DbErr> {
    let Some(row) = state::start(
        txn,
        claim.task_instance_id,
        claim.attempt,
        owner,
        claim.start,
    )
    .await?
    else {
        return Ok(None);
    };
    let execution = execution::ActiveModel {
        task_instance_id: Set(row.id),
        dag_run_id: Set(row.dag_run_id),
        task_id: Set(row.task_id),
        schedule_id: Set(None),
        biz_date: Set(row.biz_date),
        status: Set(TaskStatus::Running),
        attempt: Set(claim.attempt),
        trigger_type: Set(row.trigger_type),
        worker: Set(owner.to_owned()),
        start_time: Set(claim.start),
        created_at: Set(claim.start),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    Ok(Some((row, execution)))
}

async fn apply_end(txn: &WriteTxn, owner: &str, end: &End) -> Result<Ended, DbErr> {
    let (finished, requeued) = if end.abandoned {
        let requeued =
            state::requeue_abandoned(txn, end.task_instance_id, end.attempt, owner, end.end)
                .await?;
        (None, requeued)
    } else {
        let finished = state::finish_attempt(
            txn,
            end.task_instance_id,
            end.attempt,
            owner,
            &end.instance_end,
            end.reason.as_deref(),
            end.end,
        )
        .await?;
        (finished, None)
    };
    execution::ActiveModel {
        id: Set(end.execution_id),
        status: Set(end.status),
        end_time: Set(Some(end.end)),
        duration_ms: Set(Some(end.duration_ms)),
        exit_code: Set(end.exit_code),
        log_tail: Set(Some(end.log_tail.clone())),
        log_path: Set(end.log_path.clone()),
        error_msg: Set(end.reason.clone()),
        ..Default::default()
    }
    .update(txn)
    .await?;
    Ok((finished, requeued))
}
