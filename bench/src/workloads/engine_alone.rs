//! The engine alone: a workload's runs created, claimed and ended by
//! calling the engine on the system's database directly, one batch after
//! another on one task — no NATS, no roles, nothing between the batches.
//! What it takes is what the database writer needs for those runs with the
//! statements DataJump makes, batched as `datajump up` batches them (the
//! resolver's fire batch; a transaction of a runner's slots' claims and the
//! ends of the batch before). A dispatch figure reads against it: the rest
//! of a run's time is messaging and the roles sharing the cores. What the
//! commits release is not published: nothing here listens.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use chrono::Utc;
use datajump_engine::{AttemptEnd, Claim, Claimed, End, FireOutcome, create_runs, record};
use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::messages::FireMsg;
use datajump_shared::params::Params;
use datajump_shared::subjects::Priority;
use datajump_shared::{RunStatus, TaskInstanceId, TaskStatus};
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect,
};

/// The claimant the engine records.
const OWNER: &str = "bench-engine-alone";

/// How long the engine alone took.
pub struct EngineAlone {
    /// The runs it made.
    pub runs: usize,
    /// Creating them, a resolver's batch of fires a transaction.
    pub create: Duration,
    /// Claiming and ending their tasks.
    pub claim_and_end: Duration,
}

impl EngineAlone {
    /// Both phases.
    pub fn total(&self) -> Duration {
        self.create + self.claim_and_end
    }
}

/// Makes one manual run of each of `dags` (one-task DAGs of NOOP tasks)
/// and takes every task through its claim and a successful end, in
/// transactions of at most `slots` claims and `slots` ends; checks that
/// every run ended SUCCESS.
pub async fn run_one_task_dags(
    db: &DatabaseConnection,
    dags: &[i64],
    slots: usize,
) -> Result<EngineAlone> {
    let since = Utc::now();
    let fires: Vec<FireMsg> = dags
        .iter()
        .map(|&dag| {
            FireMsg::manual(
                dag,
                Priority::default(),
                since,
                since.date_naive(),
                Params::new(),
            )
        })
        .collect();
    let creating = Instant::now();
    let mut runs = 0;
    for batch in fires.chunks(datajump_resolver::FIRE_BATCH) {
        let batch: Vec<&FireMsg> = batch.iter().collect();
        let (outcomes, _) = create_runs(db, &batch, Utc::now()).await?;
        runs += outcomes
            .iter()
            .filter(|outcome| matches!(outcome, FireOutcome::Created))
            .count();
    }
    let create = creating.elapsed();

    let queued: Vec<(i64, i32)> = task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::Id)
        .column(task_instance::Column::Attempt)
        .filter(task_instance::Column::Status.eq(TaskStatus::Queued))
        .filter(task_instance::Column::CreatedAt.gte(since))
        .into_tuple()
        .all(db)
        .await?;
    let claiming = Instant::now();
    let mut ending: Vec<End> = Vec::new();
    for batch in queued.chunks(slots.max(1)) {
        let claims: Vec<Claim> = batch
            .iter()
            .map(|&(id, attempt)| Claim {
                task_instance_id: TaskInstanceId(id),
                attempt,
            })
            .collect();
        let (recorded, _) = record(
            db,
            OWNER,
            &claims.iter().collect::<Vec<_>>(),
            &ending.iter().collect::<Vec<_>>(),
            Utc::now(),
        )
        .await?;
        ending = recorded.claimed.values().map(succeeded).collect();
    }
    let (_, _released) = record(
        db,
        OWNER,
        &[],
        &ending.iter().collect::<Vec<_>>(),
        Utc::now(),
    )
    .await?;
    let claim_and_end = claiming.elapsed();

    let succeeded_runs = dag_run::Entity::find()
        .filter(dag_run::Column::CreatedAt.gte(since))
        .filter(dag_run::Column::Status.eq(RunStatus::Success))
        .count(db)
        .await?;
    if runs != dags.len() || succeeded_runs != runs as u64 {
        bail!(
            "the engine alone made {runs} runs of {} DAGs and {succeeded_runs} ended SUCCESS",
            dags.len()
        );
    }
    Ok(EngineAlone {
        runs,
        create,
        claim_and_end,
    })
}

/// A claimed NOOP attempt's successful end, as a runner records it.
fn succeeded(claimed: &Claimed) -> End {
    End {
        task_instance_id: TaskInstanceId(claimed.instance.id),
        attempt: claimed.execution.attempt,
        execution_id: claimed.execution.id,
        abandoned: false,
        instance_end: AttemptEnd::Terminal(TaskStatus::Success),
        status: TaskStatus::Success,
        reason: None,
        end: Utc::now(),
        duration_ms: 0,
        exit_code: None,
        log_tail: String::new(),
        log_path: None,
        outputs: None,
        large_output: None,
        written: Vec::new(),
    }
}
