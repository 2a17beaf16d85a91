//! Operator actions: kill a task or a run, rerun a run or clear tasks in
//! place, mark a task SUCCESS or FAILED. Each is one transaction through the
//! same transitions as the engine's own, followed by propagation; the
//! caller publishes the returned [`Effects`](crate::Effects) (kill notices,
//! completions, released work) after it.
//!
//! One job per module: `kill` (a task, a run, a run's timeout), `reset`
//! (rerun and clear) and `mark`; here is what they share: the error, the
//! refusal to act inside a run waiting for a slot, and the retry of a
//! transaction a deadlock chose as its victim.

mod kill;
mod mark;
mod reset;

use datajump_shared::entities::dag_run;
use datajump_shared::{RunId, RunStatus, TaskInstanceId, TaskStatus};
use datajump_store::db::is_deadlock;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, QuerySelect};

use crate::sql::{Ti, TiCol};

pub use kill::{kill_instance, kill_run, run_timed_out};
pub use mark::mark;
pub use reset::{ResetScope, reset};

/// Why instances cannot be reset.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// No such run.
    #[error("no run {0}")]
    UnknownRun(RunId),
    /// No such task instance.
    #[error("no task instance {0}")]
    UnknownInstance(TaskInstanceId),
    /// Something to reset is still live.
    #[error("task '{0}' is {1}: wait for it to finish or kill it first")]
    Live(String, TaskStatus),
    /// The run is still QUEUED or RUNNING.
    #[error("run {0} is {1}: wait for it to finish or kill it first")]
    RunLive(RunId, RunStatus),
    /// A mark names a status a task cannot be marked.
    #[error("a task instance can be marked SUCCESS or FAILED, not {0}")]
    NotAMark(TaskStatus),
    /// An item of a mapped task that has ended and been counted into its
    /// map: its map's result and downstream follow from it already.
    #[error(
        "item {index} of '{task}' has ended and counts in its map's result: rerun the run's failed items with `datajump rerun RUN --failed-only`, or clear the task to run its whole list again"
    )]
    EndedMapItem {
        /// The mapped task.
        task: String,
        /// The item's index.
        index: i32,
    },
    /// The task's run waits for a run slot: none of its tasks has started,
    /// and settling one would start its children outside the slot.
    #[error(
        "run {0} is QUEUED, waiting for a slot under its DAG's max_active_runs: kill the whole run, or act on its tasks once it runs"
    )]
    RunWaiting(RunId),
}

/// Refuses an action on one task of a run that waits for a slot
/// ([`OperatorError::RunWaiting`]).
async fn refuse_in_waiting_run<C: ConnectionTrait>(conn: &C, id: i64) -> Result<(), OperatorError> {
    let Some(run_id) = Ti::find_by_id(id)
        .select_only()
        .column(TiCol::DagRunId)
        .into_tuple::<i64>()
        .one(conn)
        .await?
    else {
        return Ok(());
    };
    match dag_run::Entity::find_by_id(run_id).one(conn).await? {
        Some(run) if run.status == RunStatus::Queued => {
            Err(OperatorError::RunWaiting(RunId(run.id)))
        }
        _ => Ok(()),
    }
}

/// How often an operator action's transaction is run when PostgreSQL keeps
/// choosing it as a deadlock's victim.
const DEADLOCK_ATTEMPTS: usize = 3;

/// Runs an operator action's transaction again when it was a deadlock's
/// victim: it locks rows a concurrent propagation may be updating, in an
/// order a multi-row update cannot promise, and a victim changed nothing.
async fn retried<T, E, F, Fut>(mut transaction: F, deadlocked: fn(&E) -> bool) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut attempt = 1;
    loop {
        match transaction().await {
            Err(e) if deadlocked(&e) && attempt < DEADLOCK_ATTEMPTS => attempt += 1,
            result => return result,
        }
    }
}

impl OperatorError {
    fn is_deadlock(&self) -> bool {
        matches!(self, OperatorError::Db(e) if is_deadlock(e))
    }
}
