//! The resolver: turns fires into runs and completions into releases.
//!
//! Stateless; any number of replicas share the durable consumers
//! `resolver-fire`, `resolver-done` and `resolver-event`. Every handler
//! commits its database change first and publishes after, and is safe to run
//! twice: a repeated fire hits the run's unique `dedup_key`, a repeated
//! completion finds its instance already propagated. A message that cannot be
//! decoded or names ids that cannot exist is terminated (never redelivered);
//! a database error NAKs it so nothing is dropped.
//!
//! A runner propagates the ends of its own tasks in the transaction that
//! records them (see `datajump-runner`'s commit module), so `dj.done.*`
//! carries only the ends made elsewhere — kills, takeovers of a lost
//! runner's task — and completions republished after a crash; propagating
//! one twice is a no-op.
//!
//! Completions are settled in batches: whatever `dj.done.*` messages are
//! waiting (up to [`DONE_BATCH`]) are propagated in one transaction, so a
//! wide DAG's completions pay one commit (and one turn of the run row's lock)
//! per batch instead of one each; a lone completion is still handled the
//! moment it arrives. Fires are batched the same way. A batch's released
//! work is published, and its messages acknowledged, while the next batch's
//! transaction runs: the database, not the broker's round trips, sets the
//! pace.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, Context};
use chrono::Utc;
use datajump_nats::{NatsError, publish_released, pull_consumer};
use datajump_shared::dag_file::OverlapPolicy;
use datajump_shared::entities::{dag, dag_run, dag_run_plan, schedule, task_instance};
use datajump_shared::messages::{DoneMsg, FireMsg, Message, MessageError, VERSION};
use datajump_shared::plan::{DepType, InstanceSpec, Plan, params_to_json};
use datajump_shared::state::{self, Released};
use datajump_shared::{RunStatus, TaskStatus, TriggerType, catalog, metrics, subjects};
use futures::StreamExt;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
    QuerySelect, sea_query::OnConflict,
};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

/// How the resolver runs.
#[derive(Clone)]
pub struct Config {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection.
    pub nats: async_nats::Client,
    /// Messages handled at once per consumer.
    pub concurrency: usize,
}

/// Why the resolver stopped.
#[derive(Debug, Error)]
pub enum ResolverError {
    /// NATS failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
}

/// What to do with a message after handling it.
#[derive(Debug)]
enum Verdict {
    Ack,
    /// Transient failure: deliver again later.
    Retry(String),
    /// Poison: never deliver again.
    Poison(String),
}

impl From<DbErr> for Verdict {
    fn from(e: DbErr) -> Self {
        Verdict::Retry(format!("database: {e}"))
    }
}

impl From<NatsError> for Verdict {
    fn from(e: NatsError) -> Self {
        Verdict::Retry(e.to_string())
    }
}

impl From<MessageError> for Verdict {
    fn from(e: MessageError) -> Self {
        Verdict::Poison(e.to_string())
    }
}

/// Runs the resolver until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), ResolverError> {
    let js = jetstream::new(config.nats.clone());
    datajump_nats::ensure_topology(&js).await?;
    info!("resolver started");
    let fires = consume(
        &config,
        &js,
        subjects::FIRE_STREAM,
        subjects::RESOLVER_FIRE_CONSUMER,
        &shutdown,
        Kind::Fire,
    );
    let dones = consume(
        &config,
        &js,
        subjects::DONE_STREAM,
        subjects::RESOLVER_DONE_CONSUMER,
        &shutdown,
        Kind::Done,
    );
    let events = consume(
        &config,
        &js,
        subjects::EVENT_STREAM,
        subjects::RESOLVER_EVENT_CONSUMER,
        &shutdown,
        Kind::Event,
    );
    let (a, b, c) = tokio::join!(fires, dones, events);
    a.and(b).and(c)?;
    info!("resolver stopped");
    Ok(())
}

#[derive(Clone, Copy)]
enum Kind {
    Fire,
    Done,
    Event,
}

/// Most completions settled in one transaction.
pub const DONE_BATCH: usize = 128;

/// Most fires turned into runs in one transaction.
pub const FIRE_BATCH: usize = 128;

async fn consume(
    config: &Config,
    js: &Context,
    stream: &str,
    consumer: &str,
    shutdown: &CancellationToken,
    kind: Kind,
) -> Result<(), ResolverError> {
    let consumer = pull_consumer(js, stream, consumer).await?;
    while !shutdown.is_cancelled() {
        let messages = match consumer.messages().await {
            Ok(messages) => messages,
            Err(e) => {
                warn!(error = %e, stream, "cannot pull; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let messages = messages
            .take_until(shutdown.cancelled())
            .filter_map(|message| {
                futures::future::ready(
                    message
                        .map_err(|e| debug!(error = %e, "pull stream hiccup"))
                        .ok(),
                )
            });
        match kind {
            // One transaction at a time: batches of one resolver never wait
            // on each other's row locks, and the next batch is whatever
            // arrived meanwhile. Publishing a batch's work and acknowledging
            // its messages overlaps the next batch's transaction.
            Kind::Done => {
                pipeline(
                    messages,
                    DONE_BATCH,
                    js,
                    subjects::DONE_STREAM,
                    |batch| async move {
                        let committed = commit_dones(config, &batch).await;
                        (batch, committed)
                    },
                )
                .await;
            }
            Kind::Fire => {
                pipeline(
                    messages,
                    FIRE_BATCH,
                    js,
                    subjects::FIRE_STREAM,
                    |batch| async move {
                        let committed = commit_fires(config, &batch).await;
                        (batch, committed)
                    },
                )
                .await;
            }
            Kind::Event => {
                messages
                    .for_each_concurrent(config.concurrency, |message| async move {
                        let verdict = handle_event(config, js, &message).await;
                        settle_message(&message, stream, verdict).await;
                    })
                    .await;
            }
        }
    }
    Ok(())
}

/// What a batch's transaction decided: a verdict per message (`None`:
/// handled, ack it) and the work it released.
struct Committed {
    verdicts: Vec<Option<Verdict>>,
    released: Vec<Released>,
}

/// Batches whose work is being published and messages acknowledged while
/// the next batch's transaction runs.
const BATCHES_SETTLING: usize = 4;

/// Commits batches of up to `batch` messages one after another, and
/// publishes what each released and settles its messages concurrently with
/// the following batches: a message is acknowledged only after its
/// transaction committed and its released work was published.
async fn pipeline<S, F, Fut>(messages: S, batch: usize, js: &Context, stream: &str, commit: F)
where
    S: futures::Stream<Item = jetstream::Message>,
    F: FnMut(Vec<jetstream::Message>) -> Fut,
    Fut: std::future::Future<Output = (Vec<jetstream::Message>, Committed)>,
{
    messages
        .ready_chunks(batch)
        .then(commit)
        .for_each_concurrent(BATCHES_SETTLING, |(messages, committed)| async move {
            publish_released(js, committed.released).await;
            settle_batch(&messages, stream, committed.verdicts).await;
        })
        .await;
}

async fn settle_message(message: &jetstream::Message, stream: &str, verdict: Verdict) {
    let (sequence, subject) = (
        message
            .info()
            .map(|i| i.stream_sequence)
            .unwrap_or_default(),
        message.subject.as_str(),
    );
    let result = match verdict {
        Verdict::Ack => message.ack().await,
        Verdict::Retry(why) => {
            warn!(subject, sequence, why, "will retry message");
            message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await
        }
        Verdict::Poison(why) => {
            error!(subject, sequence, why, "poison message terminated");
            metrics::poison_message(stream);
            message.ack_with(AckKind::Term).await
        }
    };
    if let Err(e) = result {
        warn!(error = %e, subject, sequence, "could not acknowledge message");
    }
}

/// Decodes a batch of messages: each decodable one with its index, and a
/// verdict slot per message, already Poison for those that do not decode.
fn decode_batch<M: Message>(
    messages: &[jetstream::Message],
) -> (Vec<Option<Verdict>>, Vec<(usize, M)>) {
    let mut verdicts: Vec<Option<Verdict>> = messages.iter().map(|_| None).collect();
    let mut decoded = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        match M::decode(&message.payload) {
            Ok(body) => decoded.push((index, body)),
            Err(e) => verdicts[index] = Some(e.into()),
        }
    }
    (verdicts, decoded)
}

/// Settles each message of a batch by its verdict; one left without a
/// verdict was handled and is acked.
async fn settle_batch(
    messages: &[jetstream::Message],
    stream: &str,
    verdicts: Vec<Option<Verdict>>,
) {
    for (message, verdict) in messages.iter().zip(verdicts) {
        settle_message(message, stream, verdict.unwrap_or(Verdict::Ack)).await;
    }
}

/// Turns a batch of fires into runs: one transaction creates every run
/// (see [`create_runs`]). If the batch fails, its fires are tried one at a
/// time, so one fire the database keeps refusing holds back no other.
async fn commit_fires(config: &Config, messages: &[jetstream::Message]) -> Committed {
    let (mut verdicts, fires) = decode_batch::<FireMsg>(messages);
    let mut released = Vec::new();
    let outcomes = match create_runs(&config.db, &fires).await {
        Ok((outcomes, work)) => {
            released.push(work);
            outcomes
        }
        Err(e) if fires.len() == 1 => {
            verdicts[fires[0].0] = Some(e.into());
            Vec::new()
        }
        Err(e) => {
            warn!(error = %e, fires = fires.len(), "a batch of fires failed; creating their runs one at a time");
            let mut outcomes = Vec::with_capacity(fires.len());
            for fire in &fires {
                match create_runs(&config.db, std::slice::from_ref(fire)).await {
                    Ok((one, work)) => {
                        outcomes.extend(one);
                        released.push(work);
                    }
                    Err(e) => verdicts[fire.0] = Some(e.into()),
                }
            }
            outcomes
        }
    };
    for (index, outcome) in outcomes {
        verdicts[index] = Some(match outcome {
            FireOutcome::UnknownDag(dag_id) => {
                Verdict::Poison(format!("DAG {dag_id} does not exist"))
            }
            FireOutcome::Created
            | FireOutcome::Ignored
            | FireOutcome::Exists
            | FireOutcome::Skipped => Verdict::Ack,
        });
    }
    Committed { verdicts, released }
}

/// Why a scheduled fire must not start a run now, if it must not, given
/// whether each schedule of the batch is active (absent: deleted).
fn skip_reason(
    fire: &FireMsg,
    dag: &dag::Model,
    schedules_active: &HashMap<i64, bool>,
) -> Option<&'static str> {
    if !matches!(
        fire.trigger_type,
        TriggerType::Schedule | TriggerType::Event
    ) {
        return None;
    }
    if !dag.online {
        return Some("DAG is offline");
    }
    match fire.schedule_id.map(|id| schedules_active.get(&id)) {
        None => None,
        Some(None) => Some("schedule was deleted"),
        Some(Some(false)) => Some("schedule is paused"),
        Some(Some(true)) => None,
    }
}

/// What a fire did.
enum FireOutcome {
    /// Its DAG does not exist: the fire is poison.
    UnknownDag(i64),
    /// It must not start a run (offline DAG, paused or deleted schedule).
    Ignored,
    /// Its run already existed (a repeated fire).
    Exists,
    /// The DAG was at `max_active_runs` under overlap policy `skip`.
    Skipped,
    /// A new run, RUNNING (roots released), QUEUED (waiting for a slot) or,
    /// with no tasks, SUCCESS.
    Created,
}

/// Rows one multi-row INSERT carries: a few thousand bound parameters at
/// most, far under either database's limit.
const INSERT_CHUNK: usize = 200;

/// Creates the runs of `fires` (message index, fire) in one transaction, in
/// a fixed number of statements however many fires: the DAGs, schedules
/// and plans of the whole batch are read at once, the DAGs' run slots
/// counted and locked at once, and the runs, plan snapshots and instances
/// inserted in multi-row statements, the roots of running runs already
/// QUEUED (`state::queue_new`). A cron
/// minute's thousand fires are a few batches, so per-fire statements were
/// what held run creation back on PostgreSQL. Returns each fire's outcome
/// and the work released.
async fn create_runs(
    db: &DatabaseConnection,
    fires: &[(usize, FireMsg)],
) -> Result<(Vec<(usize, FireOutcome)>, Released), DbErr> {
    let mut released = Released::default();
    if fires.is_empty() {
        return Ok((Vec::new(), released));
    }
    let txn = datajump_shared::db::begin_write(db).await?;
    let dags: HashMap<i64, dag::Model> = dag::Entity::find()
        .filter(dag::Column::Id.is_in(fires.iter().map(|(_, f)| f.dag_id)))
        .all(&txn)
        .await?
        .into_iter()
        .map(|d| (d.id, d))
        .collect();
    let schedule_ids: Vec<i64> = fires.iter().filter_map(|(_, f)| f.schedule_id).collect();
    let schedules_active: HashMap<i64, bool> = if schedule_ids.is_empty() {
        HashMap::new()
    } else {
        schedule::Entity::find()
            .select_only()
            .columns([schedule::Column::Id, schedule::Column::Active])
            .filter(schedule::Column::Id.is_in(schedule_ids))
            .into_tuple::<(i64, bool)>()
            .all(&txn)
            .await?
            .into_iter()
            .collect()
    };
    let mut outcomes = Vec::new();
    let mut runnable = Vec::new();
    for (index, fire) in fires {
        match dags.get(&fire.dag_id) {
            None => {
                outcomes.push((*index, FireOutcome::UnknownDag(fire.dag_id)));
            }
            Some(dag) => match skip_reason(fire, dag, &schedules_active) {
                Some(why) => {
                    info!(dag = %dag.name, dedup_key = %fire.dedup_key, skip = why, "fire ignored");
                    outcomes.push((*index, FireOutcome::Ignored));
                }
                None => runnable.push((*index, fire, dag)),
            },
        }
    }
    // Fires are taken in DAG order, so a batch's runs (and the external
    // parents they lock) come in the same order in every resolver.
    runnable.sort_by_key(|(_, fire, _)| fire.dag_id);
    let plans = catalog::current_plans(&txn, runnable.iter().map(|(_, _, dag)| *dag)).await?;
    let limited: Vec<&dag::Model> = runnable
        .iter()
        .map(|(_, _, dag)| *dag)
        .filter(|dag| dag.overlap_policy != OverlapPolicy::Parallel.as_str())
        .collect();
    // Slots are counted (and the DAG rows locked) before looking for
    // existing runs, so a concurrent resolver's run of the same fire is
    // committed and seen by then.
    let mut free_slots = state::free_run_slots(&txn, &limited).await?;
    let existing = existing_dedup_keys(&txn, runnable.iter().map(|(_, fire, _)| *fire)).await?;
    let now = Utc::now();
    let mut new_runs = Vec::with_capacity(runnable.len());
    let mut keys = std::collections::HashSet::new();
    for (index, fire, dag) in runnable {
        let Some(plan) = plans.get(&dag.id) else {
            continue;
        };
        if existing.contains(&fire.dedup_key) || !keys.insert(fire.dedup_key.as_str()) {
            debug!(dag = %dag.name, dedup_key = %fire.dedup_key, "run already exists");
            outcomes.push((index, FireOutcome::Exists));
            continue;
        }
        let slot_free = dag.overlap_policy == OverlapPolicy::Parallel.as_str()
            || free_slots.get_mut(&dag.id).is_some_and(|free| {
                let some = *free > 0;
                *free = free.saturating_sub(1);
                some
            });
        let status = match (plan.tasks.is_empty(), slot_free) {
            (true, _) => RunStatus::Success,
            (false, true) => RunStatus::Running,
            (false, false) if dag.overlap_policy == OverlapPolicy::Skip.as_str() => {
                info!(dag = %dag.name, dedup_key = %fire.dedup_key, max_active_runs = dag.max_active_runs, "fire skipped: the DAG is at max_active_runs (overlap: skip)");
                outcomes.push((index, FireOutcome::Skipped));
                continue;
            }
            (false, false) => RunStatus::Queued,
        };
        new_runs.push(NewRun {
            index,
            fire,
            dag,
            plan,
            status,
        });
    }
    let run_ids = insert_runs(&txn, &new_runs, now).await?;
    let mut running = Vec::new();
    let (mut queued, mut pending) = (Vec::new(), Vec::new());
    let mut created = Vec::with_capacity(new_runs.len());
    for run in &new_runs {
        let Some(&run_id) = run_ids.get(run.fire.dedup_key.as_str()) else {
            // Another resolver created it after our look for existing runs.
            outcomes.push((run.index, FireOutcome::Exists));
            continue;
        };
        let rows = instance_rows(run.plan, run.fire, run_id, now);
        if run.status == RunStatus::Running {
            running.push(run_id);
            for (mut row, task) in rows.into_iter().zip(&run.plan.tasks) {
                if state::queue_new(&mut row, task.enabled, now) {
                    queued.push(row);
                } else {
                    pending.push(row);
                }
            }
        } else {
            pending.extend(rows);
        }
        created.push((run, run_id));
    }
    for chunk in created.chunks(INSERT_CHUNK) {
        dag_run_plan::Entity::insert_many(chunk.iter().map(|(run, run_id)| {
            dag_run_plan::ActiveModel {
                dag_run_id: Set(*run_id),
                plan: Set(serde_json::to_value(run.plan).unwrap_or_default()),
            }
        }))
        .exec_without_returning(&txn)
        .await?;
    }
    // Moved into the statements chunk by chunk, not cloned: an instance row
    // carries its spec.
    let mut queued = queued.into_iter();
    while queued.len() > 0 {
        released.queued.extend(
            task_instance::Entity::insert_many(queued.by_ref().take(INSERT_CHUNK))
                .exec_with_returning(&txn)
                .await?,
        );
    }
    let mut pending = pending.into_iter();
    while pending.len() > 0 {
        task_instance::Entity::insert_many(pending.by_ref().take(INSERT_CHUNK))
            .exec_without_returning(&txn)
            .await?;
    }
    for (run, run_id) in &created {
        link_external_parents(&txn, run.plan, run.dag, *run_id, run.fire.biz_date, now).await?;
    }
    // What did not start QUEUED but may run now: disabled roots (settled
    // SKIPPED) and instances whose parents in other runs had already ended.
    state::release_roots(&txn, &running, now, &mut released).await?;
    txn.commit().await?;
    for (run, run_id) in created {
        info!(dag = %run.dag.name, dag_run_id = run_id, status = %run.status, trigger = run.fire.trigger_type.as_str(), biz_date = %run.fire.biz_date, "run created");
        outcomes.push((run.index, FireOutcome::Created));
    }
    Ok((outcomes, released))
}

/// A run a fire is about to create.
struct NewRun<'a> {
    /// The fire's message index in its batch.
    index: usize,
    fire: &'a FireMsg,
    dag: &'a dag::Model,
    plan: &'a Plan,
    status: RunStatus,
}

/// Which of the fires' `dedup_key`s already have a run.
async fn existing_dedup_keys<'a>(
    txn: &sea_orm::DatabaseTransaction,
    fires: impl Iterator<Item = &'a FireMsg>,
) -> Result<std::collections::HashSet<String>, DbErr> {
    let keys: Vec<&str> = fires.map(|fire| fire.dedup_key.as_str()).collect();
    let mut existing = std::collections::HashSet::new();
    for chunk in keys.chunks(INSERT_CHUNK) {
        existing.extend(
            dag_run::Entity::find()
                .select_only()
                .column(dag_run::Column::DedupKey)
                .filter(dag_run::Column::DedupKey.is_in(chunk.iter().copied()))
                .into_tuple::<String>()
                .all(txn)
                .await?,
        );
    }
    Ok(existing)
}

/// Inserts the `dag_run` rows of `runs`, a multi-row statement per
/// [`INSERT_CHUNK`], and returns the new run ids by `dedup_key`. A run whose
/// key another resolver inserted meanwhile is left out (`ON CONFLICT DO
/// NOTHING`), not an error.
async fn insert_runs(
    txn: &sea_orm::DatabaseTransaction,
    runs: &[NewRun<'_>],
    now: chrono::DateTime<Utc>,
) -> Result<HashMap<String, i64>, DbErr> {
    let mut ids = HashMap::with_capacity(runs.len());
    for chunk in runs.chunks(INSERT_CHUNK) {
        let rows = chunk.iter().map(|run| {
            let empty = run.plan.tasks.is_empty();
            dag_run::ActiveModel {
                dag_id: Set(run.dag.id),
                dag_version: Set(run.plan.version),
                schedule_id: Set(run.fire.schedule_id),
                dedup_key: Set(run.fire.dedup_key.clone()),
                trigger_type: Set(run.fire.trigger_type),
                biz_date: Set(run.fire.biz_date),
                logical_time: Set(run.fire.logical_time),
                params: Set(params_to_json(&run.fire.params)),
                status: Set(run.status),
                pending_instances: Set(i32::try_from(run.plan.tasks.len()).unwrap_or(i32::MAX)),
                failed_instances: Set(0),
                created_at: Set(now),
                finished_at: Set(empty.then_some(now)),
                ..Default::default()
            }
        });
        let inserted = dag_run::Entity::insert_many(rows)
            .on_conflict(
                OnConflict::column(dag_run::Column::DedupKey)
                    .do_nothing()
                    .to_owned(),
            )
            .exec_with_returning(txn)
            .await?;
        ids.extend(inserted.into_iter().map(|run| (run.dedup_key, run.id)));
    }
    Ok(ids)
}

/// Resolves each `offset_day` / `other_dag/task` edge of a new run to the
/// awaited task and business date and links it (see
/// `state::link_external_parent`).
async fn link_external_parents(
    txn: &sea_orm::DatabaseTransaction,
    plan: &Plan,
    dag: &dag::Model,
    run_id: i64,
    biz_date: chrono::NaiveDate,
    now: chrono::DateTime<Utc>,
) -> Result<(), DbErr> {
    let external: Vec<_> = plan.edges.iter().filter(|e| !e.is_same_run()).collect();
    if external.is_empty() {
        return Ok(());
    }
    let instances: std::collections::HashMap<String, task_instance::Model> =
        task_instance::Entity::find()
            .filter(task_instance::Column::DagRunId.eq(run_id))
            .all(txn)
            .await?
            .into_iter()
            .map(|i| (i.task_name.clone(), i))
            .collect();
    for edge in external {
        let Some(waiter) = instances.get(&edge.child) else {
            continue;
        };
        let target_dag = match &edge.parent_dag {
            None => Some(dag.clone()),
            Some(name) => {
                dag::Entity::find()
                    .filter(dag::Column::Name.eq(name.as_str()))
                    .one(txn)
                    .await?
            }
        };
        let target = match target_dag {
            None => None,
            Some(target_dag) => datajump_shared::entities::task::Entity::find()
                .filter(datajump_shared::entities::task::Column::DagId.eq(target_dag.id))
                .filter(datajump_shared::entities::task::Column::Name.eq(edge.parent.as_str()))
                .one(txn)
                .await?
                .map(|task| (target_dag.id, task.id)),
        };
        let awaited_date = datajump_shared::biz_date::shift(biz_date, edge.offset_day);
        let parent = state::ExternalParent {
            target,
            biz_date: awaited_date,
            dep_type: edge.dep_type,
            description: format!(
                "{}/{} for {awaited_date}",
                edge.parent_dag.as_deref().unwrap_or(&dag.name),
                edge.parent
            ),
        };
        if target.is_none() {
            warn!(dag_run_id = run_id, awaited = %parent.description, "awaited task does not exist: counted as not succeeded");
        }
        state::link_external_parent(txn, waiter, &parent, now).await?;
    }
    Ok(())
}

/// The new instances of a run: one per task of `plan`, in the plan's order,
/// PENDING, with their parent counters and children.
fn instance_rows(
    plan: &Plan,
    fire: &FireMsg,
    run_id: i64,
    now: chrono::DateTime<Utc>,
) -> Vec<task_instance::ActiveModel> {
    use std::collections::HashMap;
    let id_of: HashMap<&str, i64> = plan
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.task_id))
        .collect();
    let mut children: HashMap<&str, Vec<(i64, DepType)>> = HashMap::new();
    let mut parents: HashMap<&str, (i32, i32)> = HashMap::new();
    for edge in &plan.edges {
        let Some(&child_id) = id_of.get(edge.child.as_str()) else {
            continue;
        };
        // A parent in another run is counted here and linked by
        // `link_external_parents`; a same-run parent lists the child.
        if edge.is_same_run() {
            if !id_of.contains_key(edge.parent.as_str()) {
                continue;
            }
            children
                .entry(edge.parent.as_str())
                .or_default()
                .push((child_id, edge.dep_type));
        }
        let counts = parents.entry(edge.child.as_str()).or_default();
        counts.0 += 1;
        counts.1 += i32::from(edge.dep_type == DepType::Strong);
    }
    plan.tasks
        .iter()
        .map(|task| {
            let mut params = plan.params.clone();
            params.extend(task.params.clone());
            params.extend(fire.params.clone());
            let spec = InstanceSpec {
                dag_name: plan.dag_name.clone(),
                logical_time: fire.logical_time,
                time_zone: fire.time_zone.clone(),
                params,
                task: task.clone(),
            };
            let (pending, strong) = parents.get(task.name.as_str()).copied().unwrap_or_default();
            task_instance::ActiveModel {
                dag_run_id: Set(run_id),
                dag_id: Set(plan.dag_id),
                task_id: Set(task.task_id),
                task_name: Set(task.name.clone()),
                biz_date: Set(fire.biz_date),
                trigger_type: Set(fire.trigger_type),
                status: Set(TaskStatus::Pending),
                attempt: Set(0),
                retries_used: Set(0),
                owner: Set(None),
                queue: Set(task.queue.clone()),
                priority: Set(task.priority),
                deadline_at: Set(None),
                pending_parents: Set(pending),
                strong_parents: Set(strong),
                strong_ok: Set(0),
                strong_failed: Set(0),
                propagated: Set(false),
                children: Set(serde_json::to_value(
                    children
                        .get(task.name.as_str())
                        .cloned()
                        .unwrap_or_default(),
                )
                .unwrap_or_default()),
                spec: Set(serde_json::to_value(&spec).unwrap_or_default()),
                reason: Set(None),
                created_at: Set(now),
                queued_at: Set(None),
                started_at: Set(None),
                finished_at: Set(None),
                ..Default::default()
            }
        })
        .collect()
}

/// Settles a batch of completions: one transaction propagates every
/// decodable one (a completion naming an instance that does not exist, or
/// not in its run, is poison and skipped). A database error retries the
/// batch.
async fn commit_dones(config: &Config, messages: &[jetstream::Message]) -> Committed {
    let (mut verdicts, dones) = decode_batch::<DoneMsg>(messages);
    let mut released = Vec::new();
    match propagate_dones(config, &dones).await {
        Ok((checked, work)) => {
            for (index, verdict) in checked {
                verdicts[index] = Some(verdict);
            }
            released.push(work);
        }
        Err(e) => {
            let why = format!("database: {e}");
            for (index, _) in &dones {
                verdicts[*index] = Some(Verdict::Retry(why.clone()));
            }
        }
    }
    Committed { verdicts, released }
}

/// Propagates `dones` (message index, completion) together in one
/// transaction and checks them against the database; returns each
/// message's verdict and what the propagation released. A completion is
/// only a hint to look at its instance, whose terminal row is the truth: one
/// naming the wrong run is poison, but its instance is propagated all the
/// same.
async fn propagate_dones(
    config: &Config,
    dones: &[(usize, DoneMsg)],
) -> Result<(Vec<(usize, Verdict)>, Released), DbErr> {
    if dones.is_empty() {
        return Ok((Vec::new(), Released::default()));
    }
    let txn = datajump_shared::db::begin_write(&config.db).await?;
    let ids: Vec<i64> = dones.iter().map(|(_, d)| d.task_instance_id).collect();
    let released = state::propagate_many(&txn, ids, Utc::now()).await?;
    // A completion its propagation counted names a real instance; only the
    // rest (repeats, and ids that may not exist) are looked up, so a batch
    // of fresh completions pays no extra round trip for the check.
    let mut runs: HashMap<i64, i64> = released.propagated.iter().copied().collect();
    let unseen: Vec<i64> = dones
        .iter()
        .map(|(_, d)| d.task_instance_id)
        .filter(|id| !runs.contains_key(id))
        .collect();
    if !unseen.is_empty() {
        // Only what the check needs: the rows' specs and children can be large.
        runs.extend(
            task_instance::Entity::find()
                .select_only()
                .columns([task_instance::Column::Id, task_instance::Column::DagRunId])
                .filter(task_instance::Column::Id.is_in(unseen))
                .into_tuple::<(i64, i64)>()
                .all(&txn)
                .await?,
        );
    }
    txn.commit().await?;
    let checked = dones
        .iter()
        .map(|(index, done)| {
            let verdict = match runs.get(&done.task_instance_id) {
                None => Verdict::Poison(format!(
                    "task instance {} does not exist",
                    done.task_instance_id
                )),
                Some(run) if *run != done.dag_run_id => Verdict::Poison(format!(
                    "task instance {} is not in run {}",
                    done.task_instance_id, done.dag_run_id
                )),
                Some(_) => Verdict::Ack,
            };
            (*index, verdict)
        })
        .collect();
    Ok((checked, released))
}

async fn handle_event(config: &Config, js: &Context, message: &jetstream::Message) -> Verdict {
    let Some(name) = message.subject.as_str().strip_prefix("dj.event.") else {
        return Verdict::Poison("not an event subject".to_owned());
    };
    let sequence = message
        .info()
        .map(|i| i.stream_sequence)
        .unwrap_or_default();
    let params = serde_json::from_slice::<serde_json::Value>(&message.payload)
        .map(|v| datajump_shared::plan::params_from_json(&v))
        .unwrap_or_default();
    let schedules = match schedule::Entity::find()
        .filter(schedule::Column::Kind.eq("EVENT"))
        .filter(schedule::Column::EventName.eq(name))
        .filter(schedule::Column::Active.eq(true))
        .all(&config.db)
        .await
    {
        Ok(schedules) => schedules,
        Err(e) => return e.into(),
    };
    let now = Utc::now();
    for schedule in schedules {
        let tz = datajump_shared::cron::parse_time_zone(&schedule.timezone)
            .unwrap_or(chrono_tz::Asia::Shanghai);
        let fire = FireMsg {
            v: VERSION,
            dag_id: schedule.dag_id,
            schedule_id: Some(schedule.id),
            trigger_type: TriggerType::Event,
            logical_time: now,
            time_zone: schedule.timezone.clone(),
            biz_date: datajump_shared::biz_date::biz_date_for(
                now,
                tz,
                schedule.biz_date_offset_days,
            ),
            dedup_key: datajump_shared::messages::event_run_key(schedule.id, sequence),
            params: params.clone(),
        };
        if let Err(e) = datajump_nats::publish_fire(js, &fire).await {
            return e.into();
        }
        info!(event = name, dag_id = schedule.dag_id, "event fired a DAG");
    }
    Verdict::Ack
}
