//! The runner: claims work, executes it, records the attempt, reports it.
//!
//! Stateless and scaled by replica count. It fills its free slots from its
//! queues' priority consumers, priority 10 down to 1 (one fetch per level
//! for all the slots, no prefetch), so a free slot on any runner takes the
//! oldest message of the highest priority waiting, and a buffered message
//! can never jump ahead of a later one of higher priority. A level a fetch
//! found empty is skipped until its doorbell rings (or a quiet second
//! passes, for redeliveries). A core subscription to its queues' work
//! subjects is only that doorbell: it wakes the fetch loop and says which
//! levels to ask. A task starts only
//! through the engine's conditional claim (`datajump_engine::record`); the
//! attempt's end is committed, and propagated, before what it released is
//! published and its message acked, so a runner dying at any point loses
//! nothing.

mod commit;
pub mod executor;
mod log;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{
    self, AckKind, Context, consumer::PullConsumer, object_store::ObjectStore,
};
use chrono::{DateTime, Utc};
use datajump_cron::parse_time_zone;
use datajump_engine::AttemptEnd;
use datajump_nats::{Bus, NatsError, pull_consumer};
use datajump_shared::TaskStatus;
use datajump_shared::content::{SensorContent, TaskContent};
use datajump_shared::datasets;
use datajump_shared::entities::{execution, task_instance};
use datajump_shared::messages::{Message, WorkMsg};
use datajump_shared::metrics::{self, RetryCause};
use datajump_shared::outputs;
use datajump_shared::params::{ParamContext, Params, env_name, params_from_json};
use datajump_shared::plan::RetryPolicy;
use datajump_shared::subjects::{self, Namespace, Priority, Stream};
use datajump_store::installation::{self, InstallationError};
use futures::{FutureExt, StreamExt};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QuerySelect,
};
use serde::Serialize;
use thiserror::Error;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use commit::Committer;
use executor::{ExecContext, ExecOutcome, LogSink, TaskProcess, TaskUser, protect_runner};
use log::Heading;

/// How a runner runs.
#[derive(Clone)]
pub struct Config {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection.
    pub nats: async_nats::Client,
    /// Unique id, e.g. `host-pid-random`.
    pub id: String,
    /// The names of the installation's subjects, streams and buckets.
    pub names: Namespace,
    /// Copies of each stream and bucket it creates when missing
    /// (`--nats-replicas`).
    pub replicas: datajump_nats::Replicas,
    /// The zone of a run whose stored zone cannot be read (`--timezone`).
    pub default_timezone: chrono_tz::Tz,
    /// Queues (worker groups) it serves.
    pub queues: Vec<String>,
    /// Tasks it runs at once.
    pub slots: usize,
    /// How long running tasks may finish after SIGTERM.
    pub drain_timeout: Duration,
    /// What task processes inherit and as whom they run (`--task-env`,
    /// `--task-user`).
    pub task_process: Arc<TaskProcess>,
    /// Where HTTP tasks may connect (`--http-allow`; the API's own address
    /// and metadata addresses are refused).
    pub network: Arc<executor::NetworkPolicy>,
    /// The most bytes of a task's log kept in full (`--max-log-bytes`);
    /// the tail the database keeps always holds the last lines.
    pub max_log_bytes: u64,
}

/// Why the runner stopped.
#[derive(Debug, Error)]
pub enum RunnerError {
    /// NATS failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
    /// The database has no installation identity.
    #[error(transparent)]
    Installation(#[from] InstallationError),
    /// The doorbell subscription failed.
    #[error("cannot subscribe to {subject}: {source}")]
    Subscribe {
        /// The subject.
        subject: String,
        /// Why.
        source: async_nats::SubscribeError,
    },
}

/// The heartbeat a runner keeps in `dj_runners`.
#[derive(Debug, Serialize)]
struct Heartbeat<'a> {
    id: &'a str,
    queues: &'a [String],
    slots: usize,
    running: usize,
    at: DateTime<Utc>,
}

/// Kill switches of the attempts this runner's handlers hold, by task
/// instance and attempt (0-based).
type Running = Arc<std::sync::Mutex<std::collections::BTreeMap<(i64, i32), CancellationToken>>>;

/// How this runner's attempts can be stopped.
#[derive(Clone)]
struct Stops {
    /// Cancelled at the drain timeout: every attempt stops and is requeued.
    drain: CancellationToken,
    /// Per-attempt kill switches, pulled by `dj.kill.<id>` or a status
    /// recheck. A handler holds its attempt's from before its claim until
    /// the attempt is recorded, so that while the database says an attempt
    /// is this runner's, this map says whether a process of it exists here.
    running: Running,
}

impl Stops {
    /// The kill switch of `claim`'s attempt, held by the caller until
    /// [`Stops::release`]; `None` if another handler already holds it (a
    /// second copy of the same work message).
    fn hold(&self, claim: datajump_engine::Claim) -> Option<CancellationToken> {
        let mut running = self.running.lock().ok()?;
        let key = (claim.task_instance_id.0, claim.attempt);
        if running.contains_key(&key) {
            return None;
        }
        let token = self.drain.child_token();
        running.insert(key, token.clone());
        Some(token)
    }

    fn release(&self, claim: datajump_engine::Claim) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(&(claim.task_instance_id.0, claim.attempt));
        }
    }

    /// Whether a handler holds attempt `attempt` of the instance.
    fn holds(&self, task_instance_id: i64, attempt: i32) -> bool {
        self.running
            .lock()
            .is_ok_and(|running| running.contains_key(&(task_instance_id, attempt)))
    }

    fn is_running(&self, task_instance_id: i64) -> bool {
        self.running.lock().is_ok_and(|running| {
            running
                .range((task_instance_id, i32::MIN)..=(task_instance_id, i32::MAX))
                .next()
                .is_some()
        })
    }

    fn kill(&self, task_instance_id: i64) {
        if let Ok(running) = self.running.lock() {
            for (_, token) in
                running.range((task_instance_id, i32::MIN)..=(task_instance_id, i32::MAX))
            {
                token.cancel();
            }
        }
    }
}

/// Listens on `dj.kill.*` and pulls the kill switch of attempts running
/// here, once the database confirms the kill: a kill message is a wake-up,
/// and one published by anyone but the engine must not stop work the
/// database says is still this runner's.
async fn kill_listener(config: KillCheck, stops: Stops, shutdown: CancellationToken) {
    let KillCheck {
        nats,
        names,
        db,
        runner_id,
    } = config;
    let mut kills = match nats.subscribe(names.kill_all()).await {
        Ok(kills) => kills,
        Err(e) => {
            warn!(error = %e, "cannot listen for kills; status rechecks still stop killed tasks");
            return;
        }
    };
    loop {
        tokio::select! {
            message = kills.next() => {
                let Some(message) = message else { return };
                let id = message.subject.as_str().rsplit('.').next().and_then(|id| id.parse::<i64>().ok());
                if let Some(id) = id.filter(|id| stops.is_running(*id)) {
                    match still_ours(&db, id, &runner_id).await {
                        Ok(false) => stops.kill(id),
                        Ok(true) => warn!(task_instance_id = id, "kill message for an attempt the database says is still running here; ignored"),
                        // The status recheck every few seconds retries.
                        Err(e) => warn!(task_instance_id = id, error = %e, "cannot confirm a kill; the next status recheck will"),
                    }
                }
            }
            () = shutdown.cancelled() => return,
        }
    }
}

/// What the kill listener needs to confirm a kill.
struct KillCheck {
    nats: async_nats::Client,
    names: Namespace,
    db: DatabaseConnection,
    runner_id: String,
}

/// Whether the instance is RUNNING under `runner_id`: its attempt should
/// go on.
async fn still_ours(db: &DatabaseConnection, id: i64, runner_id: &str) -> Result<bool, DbErr> {
    Ok(task_instance::Entity::find_by_id(id)
        .one(db)
        .await?
        .is_some_and(|row| {
            row.status == TaskStatus::Running && row.owner.as_deref() == Some(runner_id)
        }))
}

/// How often a running task sends AckProgress and heartbeats are written.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// How long a runner waits before retrying a task another live runner owns.
const OWNED_ELSEWHERE_DELAY: Duration = Duration::from_secs(5);

/// Runs the runner until `shutdown` is cancelled, then drains.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), RunnerError> {
    protect_runner(&config.task_process);
    let js = jetstream::new(config.nats.clone());
    let names = &config.names;
    datajump_nats::ensure_topology(&js, names, config.replicas).await?;
    let logs = datajump_nats::logs_store(&js, names).await?;
    let bus = Bus::new(
        js.clone(),
        names.clone(),
        installation::identity(&config.db).await?,
    );
    let mut sources: Vec<WorkSource> = Vec::new();
    let mut doorbell = futures::stream::SelectAll::new();
    for queue in &config.queues {
        datajump_nats::ensure_queue(&js, names, queue).await?;
        let subject = names.work_queue_all(queue);
        let subscription = config
            .nats
            .subscribe(subject.clone())
            .await
            .map_err(|source| RunnerError::Subscribe { subject, source })?;
        doorbell.push(subscription);
    }
    let work_stream = names.stream(Stream::Work);
    for priority in Priority::ALL {
        for queue in &config.queues {
            let name = subjects::runner_consumer(queue, priority);
            sources.push(WorkSource {
                queue: queue.clone(),
                priority,
                consumer: pull_consumer(&js, &work_stream, &name).await?,
                backlog: Backlog::default(),
            });
        }
    }
    let slots = Arc::new(Semaphore::new(config.slots));
    // Slots the fetch loop holds while it waits for work: taken from the
    // semaphore, but running nothing.
    let fetching = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let heartbeat = tokio::spawn(heartbeat_loop(
        config.clone(),
        js.clone(),
        Occupancy {
            slots: slots.clone(),
            fetching: fetching.clone(),
        },
        shutdown.clone(),
    ));
    let stops = Stops {
        drain: CancellationToken::new(),
        running: Running::default(),
    };
    let killer = tokio::spawn(kill_listener(
        KillCheck {
            nats: config.nats.clone(),
            names: config.names.clone(),
            db: config.db.clone(),
            runner_id: config.id.clone(),
        },
        stops.clone(),
        stops.drain.clone(),
    ));
    let committer = Committer::start(config.db.clone(), bus.clone(), config.id.clone());
    let mut running = tokio::task::JoinSet::new();
    info!(runner = %config.id, queues = ?config.queues, slots = config.slots, "runner started");

    'fetching: while !shutdown.is_cancelled() {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let mut permits = vec![permit];
        let mut rang = false;
        loop {
            // Every free slot is filled from one fetch per level rather than
            // one fetch per task: under load that was most of a task's NATS
            // round trips.
            while permits.len() < MAX_FETCH
                && let Ok(more) = slots.clone().try_acquire_owned()
            {
                permits.push(more);
            }
            while let Some(Some(ring)) = doorbell.next().now_or_never() {
                rung(names, &mut sources, &ring.subject);
            }
            fetching.store(permits.len(), std::sync::atomic::Ordering::Relaxed);
            let messages = fetch_batch(&mut sources, permits.len()).await;
            if !messages.is_empty() {
                fetching.store(0, std::sync::atomic::Ordering::Relaxed);
                for (message, permit) in messages.into_iter().zip(permits.drain(..)) {
                    let config = config.clone();
                    let bus = bus.clone();
                    let logs = logs.clone();
                    let stops = stops.clone();
                    let committer = committer.clone();
                    running.spawn(async move {
                        handle_work(&config, &bus, &logs, &committer, message, &stops, permit)
                            .await;
                    });
                }
                break;
            }
            // Idle: hold one slot only, so the heartbeat counts the others free.
            permits.truncate(1);
            fetching.store(permits.len(), std::sync::atomic::Ordering::Relaxed);
            // The doorbell (a core copy of the publish) can arrive before
            // the stream has stored the message, so a fetch right after a
            // ring may find nothing: look again shortly rather than at the
            // next one-second poll.
            let idle = if std::mem::take(&mut rang) {
                RECHECK_AFTER_RING
            } else {
                Duration::from_secs(1)
            };
            tokio::select! {
                ring = doorbell.next() => {
                    if let Some(ring) = ring {
                        rung(names, &mut sources, &ring.subject);
                    }
                    rang = true;
                }
                () = tokio::time::sleep(idle) => {},
                () = shutdown.cancelled() => break 'fetching,
            }
        }
        while running.try_join_next().is_some() {}
    }

    info!(runner = %config.id, running = running.len(), "runner draining");
    let drained = tokio::time::timeout(config.drain_timeout, async {
        while running.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!(runner = %config.id, "drain timeout: stopping running tasks and returning them to the queue");
        stops.drain.cancel();
        while running.join_next().await.is_some() {}
    }
    stops.drain.cancel();
    let _ = killer.await;
    heartbeat.abort();
    if let Ok(kv) = datajump_nats::key_value(&js, &names.runners_bucket()).await {
        let _ = kv.purge(&config.id).await;
    }
    info!(runner = %config.id, "runner stopped");
    Ok(())
}

/// How long a fetch waits for the server's answer. A fetch asks with
/// `no_wait`, so a live server answers at once, and the client sets no timer
/// of its own: an answer lost with the connection (nats-server restarting)
/// would leave the fetch loop waiting forever while the heartbeat task keeps
/// the runner looking alive.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// How soon a fetch that found nothing right after a doorbell ring looks
/// again.
const RECHECK_AFTER_RING: Duration = Duration::from_millis(5);

/// Most messages one fetch loop turn takes (and slots it fills at once).
const MAX_FETCH: usize = 64;

/// How long a level a fetch found empty is left alone when its doorbell has
/// not rung: work that arrives without a publish (a redelivery after a NAK
/// or an ack timeout) or whose ring was lost waits at most this long.
const RECHECK_QUIET_AFTER: Duration = Duration::from_secs(1);

/// How long before a fetch that found a level empty a ring of that level may
/// still be for a message the stream had not stored yet (see
/// [`RECHECK_AFTER_RING`]): the level is asked again.
const RING_RACE: Duration = Duration::from_millis(50);

/// One priority level of one queue's work.
struct WorkSource {
    queue: String,
    priority: Priority,
    consumer: PullConsumer,
    backlog: Backlog,
}

/// What the runner last learned of a level's backlog. Asking a level that has
/// nothing costs a NATS round trip, and a fetch asking every level in turn
/// while nearly all work sits in one would make most requests come back
/// empty, some of them on every task's way to starting. So a level
/// a fetch found empty is asked again only when its doorbell rings or
/// [`RECHECK_QUIET_AFTER`] has passed.
#[derive(Debug, Default, Clone, Copy)]
struct Backlog {
    /// When a fetch last came back with less than it asked for.
    drained_at: Option<Instant>,
    /// When the doorbell last rang for this level.
    rang_at: Option<Instant>,
}

impl Backlog {
    /// Whether a fetch should ask this level at `now`.
    fn worth_asking(&self, now: Instant) -> bool {
        let Some(drained) = self.drained_at else {
            return true;
        };
        now.duration_since(drained) >= RECHECK_QUIET_AFTER
            || self.rang_at.is_some_and(|rang| rang + RING_RACE >= drained)
    }
}

/// Notes a doorbell ring (the core copy of a work publish) on its level.
fn rung(names: &Namespace, sources: &mut [WorkSource], subject: &str) {
    if let Some((queue, priority)) = names.parse_work(subject)
        && let Some(source) = sources
            .iter_mut()
            .find(|s| s.priority == priority && s.queue == queue)
    {
        source.backlog.rang_at = Some(Instant::now());
    }
}

/// Up to `wanted` messages, taken from the levels worth asking in order
/// (priority 10 first), so a saturated runner always takes higher
/// priorities first.
async fn fetch_batch(sources: &mut [WorkSource], wanted: usize) -> Vec<jetstream::Message> {
    let mut taken = Vec::with_capacity(wanted);
    for source in sources {
        let room = wanted - taken.len();
        if room == 0 {
            break;
        }
        let asked_at = Instant::now();
        if !source.backlog.worth_asking(asked_at) {
            continue;
        }
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, async {
            let mut batch = source
                .consumer
                .fetch()
                .max_messages(room)
                .messages()
                .await?;
            let mut messages = Vec::with_capacity(room);
            while let Some(message) = batch.next().await {
                match message {
                    Ok(message) => messages.push(message),
                    Err(e) => debug!(error = %e, "fetch ended early"),
                }
            }
            Ok::<_, async_nats::jetstream::consumer::pull::BatchError>(messages)
        })
        .await;
        match fetched {
            Ok(Ok(messages)) => {
                source.backlog.drained_at = (messages.len() < room).then_some(asked_at);
                taken.extend(messages);
            }
            Ok(Err(e)) => debug!(error = %e, "fetch failed"),
            Err(_) => warn!("no answer to a fetch within {FETCH_TIMEOUT:?}; asking again"),
        }
    }
    taken
}

/// What the heartbeat counts a runner's running tasks from.
struct Occupancy {
    /// The task slots.
    slots: Arc<Semaphore>,
    /// Slots the fetch loop holds while waiting for work.
    fetching: Arc<std::sync::atomic::AtomicUsize>,
}

impl Occupancy {
    /// Tasks running now: slots taken, less those held for fetching.
    fn running(&self, slots: usize) -> usize {
        slots
            .saturating_sub(self.slots.available_permits())
            .saturating_sub(self.fetching.load(std::sync::atomic::Ordering::Relaxed))
    }
}

async fn heartbeat_loop(
    config: Config,
    js: Context,
    occupancy: Occupancy,
    shutdown: CancellationToken,
) {
    let Ok(kv) = datajump_nats::key_value(&js, &config.names.runners_bucket()).await else {
        warn!("no dj_runners bucket: this runner is invisible to others");
        return;
    };
    while !shutdown.is_cancelled() {
        let beat = Heartbeat {
            id: &config.id,
            queues: &config.queues,
            slots: config.slots,
            running: occupancy.running(config.slots),
            at: Utc::now(),
        };
        if let Ok(body) = serde_json::to_vec(&beat)
            && let Err(e) = kv.put(&config.id, body.into()).await
        {
            warn!(error = %e, "heartbeat failed");
        }
        tokio::select! {
            () = tokio::time::sleep(PROGRESS_EVERY) => {},
            () = shutdown.cancelled() => {},
        }
    }
}

async fn handle_work(
    config: &Config,
    bus: &Bus,
    logs: &ObjectStore,
    committer: &Committer,
    message: jetstream::Message,
    stops: &Stops,
    slot: OwnedSemaphorePermit,
) {
    let work = match WorkMsg::decode(&message.payload) {
        Ok(work) => work,
        Err(e) => {
            let sequence = message
                .info()
                .map(|i| i.stream_sequence)
                .unwrap_or_default();
            warn!(subject = %message.subject, sequence, error = %e, "poison work message terminated");
            metrics::poison_message(Stream::Work);
            if let Err(e) = datajump_nats::settle(&message, AckKind::Term).await {
                warn!(error = %e, "could not terminate poison work message");
            }
            return;
        }
    };
    let span = info_span!("task", dag_run_id = work.dag_run_id.0, task_instance_id = work.task_instance_id.0, attempt = work.attempt, task = %work.spec.task.name);
    async {
        let ack = match attempt(config, bus, logs, committer, &message, &work, stops, slot).await {
            Ok(ack) => ack,
            Err(e) => {
                warn!(error = %e, "database error; message will be redelivered");
                AckKind::Nak(Some(Duration::from_secs(1)))
            }
        };
        if let Err(e) = datajump_nats::settle(&message, ack).await {
            warn!(error = %e, "could not acknowledge work message");
        }
    }
    .instrument(span)
    .await
}

/// Claims and runs one attempt in `slot`; returns how to acknowledge the
/// message.
#[allow(clippy::too_many_arguments)]
async fn attempt(
    config: &Config,
    bus: &Bus,
    logs: &ObjectStore,
    committer: &Committer,
    message: &jetstream::Message,
    work: &WorkMsg,
    stops: &Stops,
    slot: OwnedSemaphorePermit,
) -> Result<AckKind, DbErr> {
    let claim = datajump_engine::Claim {
        task_instance_id: work.task_instance_id,
        attempt: work.attempt,
    };
    let Some(kill) = stops.hold(claim) else {
        debug!("another copy of this work message is being handled here");
        return Ok(AckKind::Ack);
    };
    let ack = claim_and_run(
        config, bus, logs, committer, message, work, claim, stops, slot, &kill,
    )
    .await;
    stops.release(claim);
    ack
}

/// [`attempt`] once its kill switch is held.
#[allow(clippy::too_many_arguments)]
async fn claim_and_run(
    config: &Config,
    bus: &Bus,
    logs: &ObjectStore,
    committer: &Committer,
    message: &jetstream::Message,
    work: &WorkMsg,
    claim: datajump_engine::Claim,
    stops: &Stops,
    slot: OwnedSemaphorePermit,
    kill: &CancellationToken,
) -> Result<AckKind, DbErr> {
    let Some((row, exec_row)) = committer.claim(claim).await? else {
        return not_claimed(config, bus, work, stops).await;
    };
    // What runs is what the database queued: the message only said which
    // row to claim, and one published by anyone else must not change the
    // command (docs/SECURITY.md).
    let (queued, unreadable) = match WorkMsg::for_claimed(&row, work.attempt) {
        Ok(queued) => (queued, None),
        // Only the message's ids and retry policy are used then: the
        // attempt ends invalid without running anything.
        Err(e) => (
            work.clone(),
            Some(format!("the instance's stored spec cannot be read: {e}")),
        ),
    };
    if unreadable.is_none() && queued != *work {
        warn!(
            "the work message differs from the instance in the database; running what the database holds"
        );
        metrics::poison_message(Stream::Work);
    }
    let work = &queued;
    // A sensor's later check continues an attempt started before it was
    // queued: no dispatch to measure.
    if let Some(queued) = row.queued_at.filter(|_| row.pokes == 0) {
        metrics::task_dispatched(queued, exec_row.start_time);
    }
    info!(runner = %config.id, "task started");
    let claimed = Claimed {
        message,
        work,
        unreadable,
        row: &row,
        exec_row: &exec_row,
        kill,
        drain: &stops.drain,
    };
    run_claimed(config, logs, committer, &claimed, slot).await
}

/// An attempt this runner has claimed.
struct Claimed<'a> {
    message: &'a jetstream::Message,
    /// The attempt as the database queued it.
    work: &'a WorkMsg,
    /// Why the stored spec could not be read, if it could not.
    unreadable: Option<String>,
    row: &'a task_instance::Model,
    exec_row: &'a execution::Model,
    /// Pulled by a kill.
    kill: &'a CancellationToken,
    /// Pulled at the drain timeout.
    drain: &'a CancellationToken,
}

/// Runs a claimed attempt to its end in `slot` and records it. The slot is
/// given back as soon as the task has stopped: recording the end and
/// publishing the completion use no resource a slot stands for, and holding
/// the slot through them (two round trips and a commit) kept a runner of
/// quick tasks idle for most of each task's turn.
async fn run_claimed(
    config: &Config,
    logs: &ObjectStore,
    committer: &Committer,
    claimed: &Claimed<'_>,
    slot: OwnedSemaphorePermit,
) -> Result<AckKind, DbErr> {
    let Claimed {
        message,
        work,
        ref unreadable,
        row,
        exec_row,
        kill,
        drain,
    } = *claimed;
    let start = exec_row.start_time;
    let task = &work.spec.task;
    let log = LogSink::new(
        Some((config.nats.clone(), &config.names, exec_row.id)),
        config.max_log_bytes,
    );
    log.header(&Heading {
        task_id: task.task_id,
        task_instance_id: row.id,
        attempt: exec_row.attempt,
        name: &task.name,
        task_type: task.task_type.as_str(),
        start,
        time_zone: work.spec.time_zone.parse().unwrap_or(chrono_tz::UTC),
    });
    // Parsed when the DAG was applied; what fails here was stored before
    // content was checked, and cannot run as written.
    let content = match unreadable {
        Some(why) => Err(why.clone()),
        None => TaskContent::parse(task.task_type, &task.content)
            .map_err(|e| format!("the task's content: {e}")),
    };
    let upstream = match content {
        Ok(_) => upstream_outputs(&config.db, row, &task.content).await,
        Err(_) => Ok(Params::new()),
    };
    let content = match upstream {
        Ok(upstream) => content.map(|content| (content, upstream)),
        Err(e) => Err(format!(
            "cannot read the outputs of the tasks before it: {e}"
        )),
    };
    // The partitions it writes are substituted before it runs: a template
    // that cannot be fails the attempt, as any other text would.
    let content = content.and_then(|(content, upstream)| {
        let params = param_context(work, &upstream, config.default_timezone);
        let written =
            datasets::written(&task.outputs, &params).map_err(|e| format!("outputs: {e}"))?;
        Ok((content, upstream, params, written))
    });
    let output_file = OutputFile::for_execution(exec_row.id);
    let mut written = Vec::new();
    let outcome = match content {
        Err(why) => ExecOutcome::Invalid(why),
        Ok((content, upstream, params, datasets)) => {
            written = datasets;
            let mut env = environment(work, row, &upstream);
            env.insert(outputs::FILE_ENV.to_owned(), output_file.path_text());
            let ctx = ExecContext {
                content,
                params,
                env,
                process: config.task_process.clone(),
                network: config.network.clone(),
                db: config.db.clone(),
                project_id: work.spec.project_id,
                timeout: Duration::from_secs(u64::try_from(task.timeout_secs).unwrap_or(0)),
                cancel: kill.clone(),
            };
            let run = executor::execute(&ctx, &log);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    outcome = &mut run => break outcome,
                    () = tokio::time::sleep(PROGRESS_EVERY) => {
                        let _ = message.ack_with(AckKind::Progress).await;
                        // A kill message can be lost; the database cannot.
                        if let Ok(false) = still_ours(&config.db, row.id, &config.id).await {
                            kill.cancel();
                        }
                        // So `datajump logs --follow` can start from what is written so far.
                        let _ = execution::ActiveModel {
                            id: Set(exec_row.id),
                            log_tail: Set(Some(log.tail())),
                            ..Default::default()
                        }
                        .update(&config.db)
                        .await;
                    }
                }
            }
        }
    };
    let end = Utc::now();
    drop(slot);
    output_file.collect(&log, config.task_process.user().map(TaskUser::uid));
    let duration_ms = (end - start).num_milliseconds();
    if let ExecOutcome::Invalid(why) = &outcome {
        log.line(&format!("[datajump] {why}"));
    }
    log.footer(outcome.exit_code(), duration_ms);
    let finished_log = log.finish();
    let log_path = store_full_log(logs, exec_row.id, finished_log.full).await;
    let abandoned = outcome == ExecOutcome::Cancelled && drain.is_cancelled();

    let sensor_content = match TaskContent::parse(task.task_type, &task.content) {
        Ok(TaskContent::Sensor(content)) => Some(content),
        _ => None,
    };
    let sensor = sensor_content.as_ref().map(|content| SensorWait {
        content,
        first_check: exec_row.start_time,
        check: row.pokes + 1,
    });
    let verdict = judge(
        &outcome,
        &task.retry,
        row.retries_used,
        end,
        sensor.as_ref(),
    );
    let (status, reason) = if abandoned {
        let why = "the runner shut down; the task went back to the queue";
        (TaskStatus::Failed, Some(why.to_owned()))
    } else {
        (verdict.attempt_status, verdict.reason)
    };
    let ended = datajump_engine::End {
        task_instance_id: row.instance_id(),
        // The execution's: a sensor's later check continues the attempt its
        // first check started.
        attempt: exec_row.attempt,
        execution_id: exec_row.id,
        abandoned,
        instance_end: verdict.end,
        status,
        reason,
        end,
        duration_ms,
        exit_code: outcome.exit_code(),
        log_tail: finished_log.tail,
        log_path,
        outputs: (!finished_log.outputs.is_empty())
            .then(|| datajump_shared::params::params_to_json(&finished_log.outputs)),
        written,
    };
    // Until it is committed, the attempt's result exists only in this
    // process: a failed commit (database down or restarting) is retried, with
    // AckProgress so the work message stays ours. NAKing instead would hand a
    // copy to runners that find the instance RUNNING under this live runner
    // and wait for it forever.
    let mut retry_in = Duration::from_millis(200);
    let mut retried = false;
    let datajump_engine::Ended { finished, requeued } = loop {
        match committer.end(ended.clone()).await {
            Ok(recorded) => break recorded,
            Err(e) if drain.is_cancelled() => return Err(e),
            Err(e) => {
                warn!(error = %e, ?retry_in, "cannot record the attempt's end; retrying");
                let _ = message.ack_with(AckKind::Progress).await;
                tokio::time::sleep(retry_in).await;
                retry_in = (retry_in * 2).min(Duration::from_secs(5));
                retried = true;
            }
        }
    };
    if requeued.is_some() {
        // Its work went out with the commit's effects.
        info!("task returned to the queue (runner shutting down)");
        return Ok(AckKind::Ack);
    }
    match finished {
        Some(row) => {
            // Its end was propagated in the same transaction, and the work
            // that released is published: nothing is left for a resolver.
            metrics::attempt_ended(row.status);
            info!(status = %row.status, duration_ms, "task finished");
        }
        None if retried => {
            // A failed commit may have reached the database before the
            // connection broke: a redelivered copy republishes the work it
            // released if the instance is finished.
            info!("attempt's end recorded after a retry; redelivering to check its completion");
            return Ok(AckKind::Nak(Some(Duration::from_secs(1))));
        }
        None => {
            info!("attempt ended after the instance was changed elsewhere (killed or taken over)")
        }
    }
    Ok(AckKind::Ack)
}

/// The file a task may write `name=value` outputs to (`$DJ_OUTPUT`). It is
/// not created for the task: most tasks write none, and a file created and
/// removed per attempt costs every task. Read back only if it is a regular
/// file of one link owned by the task's user, opened without following a
/// symbolic link: otherwise a task could have the runner read, and store
/// as outputs, a file only the runner may read.
struct OutputFile(std::path::PathBuf);

/// The most bytes of a `$DJ_OUTPUT` file read.
const MAX_OUTPUT_FILE_BYTES: u64 = 256 * 1024;

impl OutputFile {
    fn for_execution(execution_id: i64) -> OutputFile {
        OutputFile(std::env::temp_dir().join(format!(
            "datajump-output-{execution_id}-{:016x}",
            rand::random::<u64>()
        )))
    }

    fn path_text(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }

    /// Declares the outputs the task wrote, then removes the file. `uid`:
    /// the task user's, `None` when tasks run as the runner's own.
    fn collect(self, log: &LogSink, uid: Option<u32>) {
        use std::io::Read;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&self.0);
        let mut file = match opened {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                log.line(&format!("[datajump] ${}: not read: {e}", outputs::FILE_ENV));
                let _ = std::fs::remove_file(&self.0);
                return;
            }
        };
        let owner = uid.unwrap_or_else(|| nix::unistd::geteuid().as_raw());
        let trusted = file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.nlink() == 1 && m.uid() == owner);
        let mut text = Vec::new();
        if trusted {
            let _ = file
                .by_ref()
                .take(MAX_OUTPUT_FILE_BYTES)
                .read_to_end(&mut text);
        } else {
            log.line(&format!(
                "[datajump] ${}: not read: not a regular file of the task's own",
                outputs::FILE_ENV
            ));
        }
        let _ = std::fs::remove_file(&self.0);
        for line in String::from_utf8_lossy(&text)
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            log.output(line);
        }
    }
}

/// Uploads a full log the tail could not hold to the `dj_logs` object
/// store; returns its name there, or `None` when there is none or it could
/// not be stored (the database keeps the tail either way).
async fn store_full_log(
    store: &ObjectStore,
    execution_id: i64,
    file: Option<tempfile::NamedTempFile>,
) -> Option<String> {
    let file = file?;
    let name = subjects::log_object(execution_id);
    let mut reader = tokio::fs::File::open(file.path()).await.ok()?;
    match store.put(name.as_str(), &mut reader).await {
        Ok(_) => Some(name),
        Err(e) => {
            warn!(error = %e, "cannot store the full log; the database keeps its tail");
            None
        }
    }
}

/// The outputs of the tasks of `row`'s run that its content reads
/// (`${task.output.name}`), as parameters (`task.output.name`): one query,
/// made only when the content reads any.
async fn upstream_outputs(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    content: &serde_json::Value,
) -> Result<Params, DbErr> {
    let text = content.to_string();
    let read = outputs::tasks_read(&text);
    if read.is_empty() {
        return Ok(Params::new());
    }
    let rows: Vec<(String, Option<serde_json::Value>)> = task_instance::Entity::find()
        .select_only()
        .columns([
            task_instance::Column::TaskName,
            task_instance::Column::Outputs,
        ])
        .filter(task_instance::Column::DagRunId.eq(row.dag_run_id))
        .filter(task_instance::Column::TaskName.is_in(read.iter().copied()))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .flat_map(|(task, declared)| {
            params_from_json(&declared.unwrap_or_default())
                .into_iter()
                .map(move |(name, value)| (outputs::param_name(&task, &name), value))
        })
        .collect())
}

/// The parameter context of an attempt: built-ins from the run, user
/// parameters from the spec, and the outputs it reads (`upstream`, which
/// are untrusted); `default_zone` stands in for a zone that cannot be read.
fn param_context(work: &WorkMsg, upstream: &Params, default_zone: chrono_tz::Tz) -> ParamContext {
    let mut params = work.spec.params.clone();
    params.extend(upstream.clone());
    let mut untrusted = work.spec.untrusted_params.clone();
    untrusted.extend(upstream.keys().cloned());
    ParamContext {
        biz_date: work.biz_date,
        logical_time: work.spec.logical_time,
        time_zone: parse_time_zone(&work.spec.time_zone).unwrap_or(default_zone),
        run_id: work.dag_run_id.0,
        task_name: work.spec.task.name.clone(),
        params,
        untrusted,
    }
}

/// A claim lost: decide from the instance's current state what the message
/// means. The caller holds the kill switch of the message's attempt.
async fn not_claimed(
    config: &Config,
    bus: &Bus,
    work: &WorkMsg,
    stops: &Stops,
) -> Result<AckKind, DbErr> {
    let Some(row) = task_instance::Entity::find_by_id(work.task_instance_id.0)
        .one(&config.db)
        .await?
    else {
        warn!("work for a task instance that does not exist; terminated");
        return Ok(AckKind::Term);
    };
    if row.status.is_terminal() {
        // A runner may have died between commit and publish: its end
        // released children whose work may never have gone out. The
        // completion is republished too, for ends made elsewhere (a kill,
        // a takeover) that a resolver propagates.
        debug!(status = %row.status, "work for a finished task: republishing its completion and its queued children");
        let owed = datajump_engine::owed_by_finished(&config.db, &row).await?;
        return Ok(match owed.publish(bus).await {
            Ok(()) => AckKind::Ack,
            Err(_) => AckKind::Nak(Some(Duration::from_secs(1))),
        });
    }
    if row.status == TaskStatus::Running {
        let ours = row.owner.as_deref() == Some(config.id.as_str());
        if ours {
            // The caller holds the message's attempt, so another handler
            // here can only hold a different one.
            let running_here =
                row.last_attempt() != work.attempt && stops.holds(row.id, row.last_attempt());
            if running_here {
                debug!(
                    attempt = row.last_attempt(),
                    "stale work message: the task runs here"
                );
                return Ok(AckKind::Ack);
            }
            // The database gives this runner an attempt no process of it
            // runs: a claim committed whose answer was lost with the
            // connection (the message came back after a database error),
            // or an earlier process under the same runner id died. Either
            // way nothing will end it here, so it is taken over like a
            // lost runner's.
        } else if owner_alive(bus, row.owner.as_deref()).await {
            debug!(owner = ?row.owner, "task is running elsewhere");
            return Ok(AckKind::Nak(Some(OWNED_ELSEWHERE_DELAY)));
        }
        if let Some((taken, effects)) =
            datajump_engine::take_over(&config.db, &row, Utc::now()).await?
        {
            warn!(lost_owner = ?row.owner, status = %taken.status, "runner lost: task taken over");
            if !taken.status.is_terminal() {
                metrics::task_retried(RetryCause::RunnerLost);
            }
            // A failed publish is logged; the deadline scan republishes.
            let _ = effects.publish(bus).await;
        }
        return Ok(AckKind::Ack);
    }
    debug!(status = %row.status, attempt = row.attempt, "stale work message");
    Ok(AckKind::Ack)
}

/// True while `owner`'s heartbeat is in `dj_runners` (or when that cannot
/// be read: taking over a live runner's task would run it twice).
async fn owner_alive(bus: &Bus, owner: Option<&str>) -> bool {
    let Some(owner) = owner else { return false };
    match datajump_nats::key_value(bus.js(), &bus.names().runners_bucket()).await {
        Ok(kv) => !matches!(kv.get(owner).await, Ok(None)),
        Err(_) => true,
    }
}

/// How an attempt ends, as [`judge`] decides it.
#[derive(Debug, PartialEq)]
struct Verdict {
    /// What becomes of the instance.
    end: AttemptEnd,
    /// The attempt's own status (its execution row): a retried attempt
    /// still says how it ended.
    attempt_status: TaskStatus,
    /// Why, when it did not succeed.
    reason: Option<String>,
}

/// A sensor's attempt so far: what the runner needs to decide what a check
/// that found nothing means.
struct SensorWait<'a> {
    content: &'a SensorContent,
    /// When its attempt's first check started.
    first_check: DateTime<Utc>,
    /// The number of the check that just ended (1 for the first).
    check: i32,
}

/// What a sensor's check that found nothing means: another check later,
/// without a slot, or, once its `sensor_timeout` has passed, TIMEOUT
/// (SKIPPED with `soft_fail`).
fn judge_not_ready(missing: &str, sensor: &SensorWait<'_>, now: DateTime<Utc>) -> Verdict {
    let waited = (now - sensor.first_check).num_seconds();
    let limit = sensor.content.sensor_timeout_secs();
    if waited >= limit {
        let status = if sensor.content.soft_fail {
            TaskStatus::Skipped
        } else {
            TaskStatus::Timeout
        };
        return Verdict {
            end: AttemptEnd::Terminal(status),
            attempt_status: status,
            reason: Some(format!(
                "waited {}s, past its sensor_timeout of {limit}s, over {} checks: {missing}",
                waited, sensor.check
            )),
        };
    }
    let check_at = now + chrono::Duration::seconds(sensor.content.wait_after_secs(sensor.check));
    Verdict {
        end: AttemptEnd::Reschedule { check_at },
        attempt_status: TaskStatus::UpForReschedule,
        reason: Some(format!(
            "check {}: {missing}; next check at {}",
            sensor.check,
            check_at.format("%H:%M:%S UTC")
        )),
    }
}

/// Decides how an attempt ends: terminal, or a retry when the policy allows.
/// A failure retries if its exit code is listed (or none are); a timeout
/// only when the policy says `on_timeout`; both draw on the same budget. A
/// sensor's check that found nothing is [`judge_not_ready`]'s.
fn judge(
    outcome: &ExecOutcome,
    retry: &RetryPolicy,
    retries_used: i32,
    now: DateTime<Utc>,
    sensor: Option<&SensorWait<'_>>,
) -> Verdict {
    let (attempt_status, reason, retryable) = match outcome {
        ExecOutcome::NotReady(missing) => match sensor {
            Some(sensor) => return judge_not_ready(missing, sensor, now),
            None => (TaskStatus::Failed, Some(missing.clone()), false),
        },
        ExecOutcome::Success => (TaskStatus::Success, None, false),
        ExecOutcome::TimedOut => (
            TaskStatus::Timeout,
            Some("timed out".to_owned()),
            retry.on_timeout,
        ),
        ExecOutcome::Cancelled => (TaskStatus::Killed, Some("killed".to_owned()), false),
        ExecOutcome::Invalid(message) => (TaskStatus::Failed, Some(message.clone()), false),
        ExecOutcome::Failed { exit_code, message } => {
            let code_retries = retry.on_exit_codes.is_empty()
                || exit_code.is_some_and(|c| retry.on_exit_codes.contains(&c));
            (TaskStatus::Failed, Some(message.clone()), code_retries)
        }
    };
    let end = if retryable && retries_used < retry.max {
        let delay = retry.random_delay_secs(retries_used + 1);
        AttemptEnd::Retry {
            retry_at: now + chrono::Duration::seconds(delay),
        }
    } else {
        AttemptEnd::Terminal(attempt_status)
    };
    Verdict {
        end,
        attempt_status,
        reason,
    }
}

fn environment(
    work: &WorkMsg,
    row: &task_instance::Model,
    upstream: &Params,
) -> BTreeMap<String, String> {
    let task = &work.spec.task;
    let mut env = BTreeMap::new();
    for (name, value) in work.spec.params.iter().chain(upstream) {
        env.insert(env_name(name), value.clone());
    }
    let biz_date = work.biz_date.to_string();
    env.insert("DJ_BIZ_DATE".into(), biz_date.clone());
    env.insert("DJ_TASK_ID".into(), task.task_id.to_string());
    env.insert("DJ_TASK_NAME".into(), task.name.clone());
    env.insert("DJ_TASK_INSTANCE_ID".into(), row.id.to_string());
    env.insert("DJ_DAG_RUN_ID".into(), work.dag_run_id.to_string());
    env.insert("DJ_DAG_NAME".into(), work.spec.dag_name.clone());
    env.insert("DJ_ATTEMPT".into(), work.attempt.to_string());
    env.insert(
        "DJ_TRIGGER_TYPE".into(),
        row.trigger_type.as_str().to_owned(),
    );
    // The names the engine requirements give the executor's variables.
    env.insert("bizdate".into(), biz_date);
    env.insert("task_id".into(), task.task_id.to_string());
    env.insert("task_name".into(), task.name.clone());
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use datajump_shared::kinds::RetryStrategy;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max: 3,
            interval_secs: 10,
            strategy: RetryStrategy::Fixed,
            on_exit_codes: vec![],
            on_timeout: false,
            max_interval_secs: 3600,
            jitter_pct: 0,
        }
    }

    #[test]
    fn an_empty_level_is_asked_again_after_a_ring_or_a_quiet_second() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let unknown = Backlog::default();
        assert!(unknown.worth_asking(at(0)), "never asked: ask");

        let drained = Backlog {
            drained_at: Some(at(100)),
            rang_at: None,
        };
        assert!(!drained.worth_asking(at(101)), "found empty, no ring since");
        assert!(!drained.worth_asking(at(1_099)));
        assert!(
            drained.worth_asking(at(1_100)),
            "a quiet second: redeliveries"
        );

        let rang_after = Backlog {
            rang_at: Some(at(150)),
            ..drained
        };
        assert!(
            rang_after.worth_asking(at(151)),
            "rang since it was found empty"
        );

        let rang_just_before = Backlog {
            rang_at: Some(at(70)),
            ..drained
        };
        assert!(
            rang_just_before.worth_asking(at(105)),
            "the ring may have beaten the stream's store: ask again"
        );

        let rang_long_before = Backlog {
            rang_at: Some(at(10)),
            ..drained
        };
        assert!(!rang_long_before.worth_asking(at(105)));
    }

    fn retries(verdict: &Verdict) -> bool {
        matches!(verdict.end, AttemptEnd::Retry { .. })
    }

    #[test]
    fn retries_only_listed_exit_codes() {
        let mut retry = policy();
        retry.on_exit_codes = vec![75];
        let now = Utc::now();
        let fail = |code| ExecOutcome::Failed {
            exit_code: Some(code),
            message: String::new(),
        };
        let verdict = judge(&fail(75), &retry, 0, now, None);
        assert!(retries(&verdict));
        assert_eq!(verdict.attempt_status, TaskStatus::Failed);
        assert_eq!(
            verdict.end,
            AttemptEnd::Retry {
                retry_at: now + chrono::Duration::seconds(10)
            }
        );
        assert_eq!(
            judge(&fail(1), &retry, 0, now, None).end,
            AttemptEnd::Terminal(TaskStatus::Failed)
        );
        assert_eq!(
            judge(&fail(75), &retry, 3, now, None).end,
            AttemptEnd::Terminal(TaskStatus::Failed)
        );
    }

    #[test]
    fn timeouts_retry_only_when_asked() {
        let now = Utc::now();
        let mut retry = policy();
        // The exit-code filter is about failures, not timeouts.
        retry.on_exit_codes = vec![75];
        let verdict = judge(&ExecOutcome::TimedOut, &retry, 0, now, None);
        assert_eq!(verdict.end, AttemptEnd::Terminal(TaskStatus::Timeout));
        retry.on_timeout = true;
        let verdict = judge(&ExecOutcome::TimedOut, &retry, 0, now, None);
        assert!(retries(&verdict), "{verdict:?}");
        assert_eq!(verdict.attempt_status, TaskStatus::Timeout);
        assert_eq!(
            judge(&ExecOutcome::TimedOut, &retry, 3, now, None).end,
            AttemptEnd::Terminal(TaskStatus::Timeout),
            "the same budget as failures"
        );
        assert!(!retries(&judge(
            &ExecOutcome::Cancelled,
            &retry,
            0,
            now,
            None
        )));
    }

    #[test]
    fn a_sensor_waits_without_a_slot_then_times_out_or_is_skipped() {
        let now = Utc::now();
        let mut content: SensorContent = serde_json::from_value(serde_json::json!({
            "dataset": "ods.orders", "poke_interval": 10, "sensor_timeout": 60,
            "exponential_backoff": true,
        }))
        .expect("content");
        let not_ready = ExecOutcome::NotReady("ods.orders has not been written".into());
        let waiting = |first: i64, check: i32, content: &SensorContent| {
            let sensor = SensorWait {
                content,
                first_check: now - chrono::Duration::seconds(first),
                check,
            };
            judge(&not_ready, &policy(), 0, now, Some(&sensor))
        };
        let third = waiting(30, 3, &content);
        assert_eq!(
            third.end,
            AttemptEnd::Reschedule {
                check_at: now + chrono::Duration::seconds(40)
            },
            "10 s doubled twice"
        );
        assert_eq!(third.attempt_status, TaskStatus::UpForReschedule);
        assert_eq!(
            waiting(60, 5, &content).end,
            AttemptEnd::Terminal(TaskStatus::Timeout)
        );
        content.soft_fail = true;
        assert_eq!(
            waiting(61, 5, &content).end,
            AttemptEnd::Terminal(TaskStatus::Skipped)
        );
    }
}
