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
//!
//! The transaction that records a task's end also propagates it (DESIGN.md
//! "Propagation"): children are counted and released, the run counted down
//! and finished, before the commit. Sending a completion to a resolver
//! instead cost every edge a second transaction and two more NATS hops, and
//! on two cores the resolver's work competed with the runner's for the same
//! CPU. The released work is published after the commit, and a task's end
//! is answered only after that, so its work message is acknowledged only
//! once its children's work is out: a runner dying in between leaves the
//! parent's work message to be redelivered, and the runner that finds the
//! parent finished republishes the children's work.

use chrono::{DateTime, Utc};
use datajump_shared::TaskStatus;
use std::collections::HashMap;

use async_nats::jetstream::Context;
use datajump_shared::db::{WriteTxn, begin_write, per_row};
use datajump_shared::entities::{execution, task_instance};
use datajump_shared::state::{self, AttemptEnd, Released};
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

type Reply = oneshot::Sender<Result<Written, DbErr>>;

struct Pending {
    write: Write,
    reply: Reply,
}

/// The handle a runner's tasks send their writes to. The committing task
/// stops when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct Committer {
    sender: mpsc::UnboundedSender<Pending>,
}

impl Committer {
    /// Starts committing writes for the runner `owner`; the work the ends
    /// release is published through `js`.
    pub fn start(db: DatabaseConnection, js: Context, owner: String) -> Committer {
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(serve(db, js, owner, receiver));
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

    /// Commits the end of a claimed attempt — the instance's new state and
    /// its execution row — and propagates it if it is terminal; answers
    /// once the work that released is published.
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
    js: Context,
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
            Ok((written, released)) => {
                let replies = batch.into_iter().map(|pending| pending.reply);
                answer(&js, replies.zip(written).collect(), released);
            }
            Err(e) if batch.len() == 1 => {
                if let Some(pending) = batch.pop() {
                    let _ = pending.reply.send(Err(e));
                }
            }
            Err(e) => {
                warn!(error = %e, writes = batch.len(), "a batch of claims and ends failed; committing them one at a time");
                for pending in batch {
                    match write_all(&db, &owner, &[&pending.write]).await {
                        Ok((written, released)) => {
                            answer(
                                &js,
                                vec![pending.reply].into_iter().zip(written).collect(),
                                released,
                            );
                        }
                        Err(e) => {
                            let _ = pending.reply.send(Err(e));
                        }
                    }
                }
            }
        }
    }
}

/// Answers a committed batch: claims at once, ends after the work their
/// propagation released is published (in the background, so the next batch
/// commits meanwhile).
fn answer(js: &Context, written: Vec<(Reply, Written)>, released: Released) {
    abort_after_commit_if_asked(&written);
    let (claims, ends): (Vec<_>, Vec<_>) = written
        .into_iter()
        .partition(|(_, written)| matches!(written, Written::Claim(_)));
    for (reply, claimed) in claims {
        let _ = reply.send(Ok(claimed));
    }
    if ends.is_empty() {
        return;
    }
    let js = js.clone();
    tokio::spawn(async move {
        datajump_nats::publish_released(&js, vec![released]).await;
        for (reply, ended) in ends {
            let _ = reply.send(Ok(ended));
        }
    });
}

/// Test-only fault injection, for the fault tests of `datajump-tests`: with
/// `DATAJUMP_FAULT_EXIT_AFTER_COMMIT=1` in its environment the runner process
/// aborts right after committing an attempt's terminal state, before it
/// publishes the work that released and acks the work message — the crash
/// window that redelivery must close (DESIGN.md "Ownership, redelivery and
/// crashes"). Never set it in production. This is the only place that reads
/// it.
fn abort_after_commit_if_asked(written: &[(Reply, Written)]) {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let asked = *ASKED.get_or_init(|| {
        std::env::var("DATAJUMP_FAULT_EXIT_AFTER_COMMIT").is_ok_and(|value| value == "1")
    });
    let ended_a_task = || {
        written.iter().any(|(_, written)| {
            matches!(written, Written::End((Some(row), _)) if row.status.is_terminal())
        })
    };
    if asked && ended_a_task() {
        warn!("DATAJUMP_FAULT_EXIT_AFTER_COMMIT=1: aborting after the commit (test-only fault)");
        std::process::abort();
    }
}

/// Applies `writes` in one transaction, answering each in order, and
/// propagates the tasks the ends finished; returns what that released.
/// However many writes there are, the claims cost two statements (claim,
/// insert the executions) and the ends two (the instances, the executions)
/// plus the propagation's few: on PostgreSQL every statement is a round
/// trip, and one per write was most of the runner's time under load.
async fn write_all(
    db: &DatabaseConnection,
    owner: &str,
    writes: &[&Write],
) -> Result<(Vec<Written>, Released), DbErr> {
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
    let finished: Vec<i64> = ended
        .values()
        .filter_map(|(finished, _)| finished.as_ref())
        .filter(|row| row.status.is_terminal())
        .map(|row| row.id)
        .collect();
    let released = state::propagate_many(&txn, finished, Utc::now()).await?;
    txn.commit().await?;
    let written = writes
        .iter()
        .map(|write| match write {
            // Two copies of one work message in a batch: the first gets the row.
            Write::Claim(claim) => Written::Claim(claimed.remove(&claim.task_instance_id)),
            Write::End(end) => {
                Written::End(ended.remove(&end.task_instance_id).unwrap_or((None, None)))
            }
        })
        .collect();
    Ok((written, released))
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
