//! What a committed transaction owes the broker, and the one place it is paid.
//!
//! Every engine entry point commits its transaction and only then hands its
//! caller an [`Effects`]: the work of instances it queued, the completions a
//! resolver must propagate, the kill notices for runners holding killed
//! tasks. [`Effects::publish`] sends them. A message is never sent before the
//! change it announces is committed, so a crash in between leaves only work
//! the redelivery and deadline-scan paths republish (docs/ARCHITECTURE.md,
//! "Crashes"), never a message about a change that did not happen.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_nats::{Bus, NatsError};
use datajump_shared::entities::{dataset_event, task_instance};
use datajump_shared::messages::{DatasetEventMsg, DoneMsg, FireMsg, Message, VERSION, WorkMsg};
use datajump_shared::subjects::{self, Priority, Stream};
use datajump_shared::{RunStatus, TaskInstanceId, TaskStatus, metrics};
use futures::StreamExt;
use tracing::{info, warn};

/// What a commit released, to act on after it. Only the engine makes one,
/// and only once the transaction that decided it has committed.
#[must_use = "what a commit released reaches no one until it is published"]
#[derive(Debug, Default)]
pub struct Effects {
    /// Instances now QUEUED: their work messages.
    pub(crate) queued: Vec<task_instance::Model>,
    /// Instances QUEUED for a while whose work message may have been lost
    /// or suppressed: sent again under a fresh id.
    pub(crate) republished: Vec<task_instance::Model>,
    /// Instances that became terminal without running (SKIPPED, UPSTREAM_FAILED).
    pub(crate) settled: Vec<task_instance::Model>,
    /// Runs this finished, with their final status.
    pub(crate) finished_runs: Vec<(i64, RunStatus)>,
    /// Waiting runs that this started in the slots it freed.
    pub(crate) started_runs: Vec<i64>,
    /// `(latest parent end, queued at)` of each instance a propagation
    /// queued: the first half of an edge's latency.
    pub(crate) edges: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// `(id, run id)` of each instance a propagation counted into its
    /// children and run (each is counted once, by one propagation).
    pub(crate) propagated: Vec<(i64, i64)>,
    /// Instances whose completion (of their last attempt) goes out on
    /// `dj.done.*`, for a resolver to propagate: ends made outside a
    /// runner's own commit (kills, takeovers), and republished ones.
    pub(crate) completions: Vec<task_instance::Model>,
    /// Killed instances a runner was holding: their runners are told on
    /// `dj.kill.<id>` (each runner also rechecks its tasks' status, so a lost
    /// notice still takes effect).
    pub(crate) kill_notices: Vec<TaskInstanceId>,
    /// Attempts a kill ended: instances killed while RUNNING.
    pub(crate) killed_attempts: usize,
    /// Runs of other DAGs that runs this commit finished SUCCESS start
    /// (their `after:` schedules): fires for a resolver.
    pub(crate) fires: Vec<FireMsg>,
    /// Dataset events recorded: announced on `dj.dataset.<name>`.
    pub(crate) dataset_events: Vec<dataset_event::Model>,
}

/// Messages published at once after a commit.
const PUBLISH_IN_FLIGHT: usize = 256;

impl Effects {
    /// Instances the commit made QUEUED.
    pub fn queued(&self) -> &[task_instance::Model] {
        &self.queued
    }

    /// Instances the commit settled without running them.
    pub fn settled(&self) -> &[task_instance::Model] {
        &self.settled
    }

    /// Runs the commit finished, with their final status.
    pub fn finished_runs(&self) -> &[(i64, RunStatus)] {
        &self.finished_runs
    }

    /// Fires the commit owes: runs of other DAGs it starts.
    pub fn fires(&self) -> &[FireMsg] {
        &self.fires
    }

    /// Waiting runs the commit started in the slots it freed.
    pub fn started_runs(&self) -> &[i64] {
        &self.started_runs
    }

    /// `(latest parent end, queued at)` of each instance a propagation queued.
    pub fn edges(&self) -> &[(DateTime<Utc>, DateTime<Utc>)] {
        &self.edges
    }

    /// Owes the completions of killed instances, and a kill notice to the
    /// runner of each one a runner held (it has an owner); counts the
    /// attempts of those that were RUNNING (`before`: their statuses
    /// before the kill).
    pub(crate) fn announce_kills(
        &mut self,
        killed: &[task_instance::Model],
        before: &HashMap<i64, TaskStatus>,
    ) {
        // A mapped task's aggregate is RUNNING with no attempt of its own.
        self.killed_attempts += killed
            .iter()
            .filter(|row| before.get(&row.id) == Some(&TaskStatus::Running))
            .filter(|row| !row.is_expanded_map())
            .count();
        self.kill_notices.extend(
            killed
                .iter()
                .filter(|row| row.owner.is_some())
                .map(task_instance::Model::instance_id),
        );
        self.completions.extend(killed.iter().cloned());
    }

    /// Adds what another commit released, to publish both together.
    pub fn merge(&mut self, other: Effects) {
        self.queued.extend(other.queued);
        self.republished.extend(other.republished);
        self.settled.extend(other.settled);
        self.finished_runs.extend(other.finished_runs);
        self.started_runs.extend(other.started_runs);
        self.edges.extend(other.edges);
        self.propagated.extend(other.propagated);
        self.completions.extend(other.completions);
        self.kill_notices.extend(other.kill_notices);
        self.killed_attempts += other.killed_attempts;
        self.fires.extend(other.fires);
        self.dataset_events.extend(other.dataset_events);
    }

    /// Publishes everything: kill notices, completions and work all at once,
    /// not one acknowledgement after another, so the fiftieth child of a
    /// fan-out is not held behind the other forty-nine. Records the
    /// transitions' metrics and logs them. A publish that fails is logged;
    /// the commit already happened, and the deadline scan republishes the
    /// work of QUEUED instances and redelivery the rest. Returns the first
    /// failure, for callers that report it (the API).
    pub async fn publish(self, bus: &Bus) -> Result<(), NatsError> {
        for &(parent_end, queued_at) in &self.edges {
            metrics::edge_released(parent_end, queued_at);
        }
        for row in &self.settled {
            info!(dag_run_id = row.dag_run_id, task_instance_id = row.id, task = %row.task_name, status = %row.status, reason = row.reason.as_deref().unwrap_or(""), "task settled");
        }
        for _ in 0..self.killed_attempts {
            metrics::attempt_ended(TaskStatus::Killed);
        }
        for &(run_id, status) in &self.finished_runs {
            metrics::run_finished(status);
            info!(dag_run_id = run_id, %status, "run finished");
        }
        for &run_id in &self.started_runs {
            info!(dag_run_id = run_id, "waiting run started");
        }
        let mut outgoing: Vec<Outgoing<'_>> = Vec::with_capacity(
            self.kill_notices.len()
                + self.completions.len()
                + self.queued.len()
                + self.republished.len()
                + self.fires.len()
                + self.dataset_events.len(),
        );
        outgoing.extend(self.kill_notices.iter().copied().map(Outgoing::Kill));
        outgoing.extend(self.completions.iter().map(Outgoing::Completion));
        outgoing.extend(self.queued.iter().map(Outgoing::Work));
        outgoing.extend(self.republished.iter().map(Outgoing::Republish));
        outgoing.extend(self.fires.iter().map(Outgoing::Fire));
        outgoing.extend(self.dataset_events.iter().map(Outgoing::Dataset));
        let first_failure = std::sync::Mutex::new(None);
        futures::stream::iter(outgoing)
            .for_each_concurrent(PUBLISH_IN_FLIGHT, |message| {
                let first_failure = &first_failure;
                async move {
                    if let Err(e) = message.send(bus).await
                        && let Ok(mut first) = first_failure.lock()
                    {
                        first.get_or_insert(e);
                    }
                }
            })
            .await;
        match first_failure.into_inner() {
            Ok(Some(e)) => Err(e),
            _ => Ok(()),
        }
    }
}

/// One message a commit owes.
enum Outgoing<'a> {
    Kill(TaskInstanceId),
    Completion(&'a task_instance::Model),
    Work(&'a task_instance::Model),
    Republish(&'a task_instance::Model),
    Fire(&'a FireMsg),
    Dataset(&'a dataset_event::Model),
}

impl Outgoing<'_> {
    async fn send(self, bus: &Bus) -> Result<(), NatsError> {
        let result = match self {
            Outgoing::Kill(id) => {
                let subject = bus.names().kill(id);
                bus.js()
                    .publish(subject.clone(), "".into())
                    .await
                    .map(drop)
                    .map_err(|e| NatsError::JetStream {
                        what: format!("publish {subject}"),
                        source: e.into(),
                    })
            }
            Outgoing::Completion(row) => publish_done(bus, row).await,
            Outgoing::Work(row) => {
                let published = publish_work(bus, row, false).await;
                if published.is_ok() {
                    info!(dag_run_id = row.dag_run_id, task_instance_id = row.id, task = %row.task_name, "task queued");
                }
                published
            }
            Outgoing::Fire(fire) => {
                let published = bus.publish_fire(fire).await.map(drop);
                if published.is_ok() {
                    info!(dag_id = fire.dag_id, dedup_key = %fire.dedup_key, biz_date = %fire.biz_date, trigger = %fire.trigger_type, "trigger fired");
                }
                published
            }
            Outgoing::Dataset(event) => {
                let message = DatasetEventMsg::from(event);
                let published = bus
                    .publish(
                        Stream::Dataset,
                        bus.names().dataset(&event.dataset),
                        &bus.installation().dataset_msg_id(event.id),
                        message.encode(),
                    )
                    .await
                    .map(drop);
                if published.is_ok() {
                    info!(dataset = %event.dataset, partition = event.partition.as_deref().unwrap_or(""), dag_run_id = event.dag_run_id, task_instance_id = event.task_instance_id, "dataset written");
                }
                published
            }
            Outgoing::Republish(row) => {
                let published = publish_work(bus, row, true).await;
                if published.is_ok() {
                    info!(dag_run_id = row.dag_run_id, task_instance_id = row.id, task = %row.task_name, "work republished: the task is still QUEUED");
                }
                published
            }
        };
        if let Err(e) = &result {
            warn!(error = %e, "publishing after a commit failed; the deadline scan or redelivery sends it again");
        }
        result
    }
}

/// Publishes the work message of a QUEUED instance to its queue and priority:
/// under its attempt's id the first time, under a fresh one when `again`
/// (docs/ARCHITECTURE.md "Message ids").
async fn publish_work(bus: &Bus, row: &task_instance::Model, again: bool) -> Result<(), NatsError> {
    let work = WorkMsg::for_queued(row).map_err(|e| NatsError::JetStream {
        what: format!("encode work of task instance {}", row.id),
        source: e.into(),
    })?;
    let subject = bus.names().work(&row.queue, Priority::of(row.priority));
    let mut msg_id = bus
        .installation()
        .work_msg_id(row.instance_id(), row.attempt);
    // A sensor's next check continues its attempt: its own id, so the
    // duplicate window does not hold it back.
    if row.pokes > 0 {
        msg_id.push_str(&format!(":check{}", row.pokes));
    }
    if again {
        let fresh = subjects::fresh_msg_id(&msg_id);
        bus.publish(Stream::Work, subject, &fresh, work.encode())
            .await?;
        Ok(())
    } else {
        bus.publish_unsuppressed(Stream::Work, subject, &msg_id, work.encode())
            .await
    }
}

/// Publishes the completion of a terminal (or retrying) instance's last
/// attempt (`attempt` counts the claims made, so the last is one less).
async fn publish_done(bus: &Bus, row: &task_instance::Model) -> Result<(), NatsError> {
    let attempt = row.last_attempt();
    let done = DoneMsg {
        v: VERSION,
        dag_run_id: row.run_id(),
        task_instance_id: row.instance_id(),
        attempt,
        status: row.status,
    };
    let msg_id = bus.installation().done_msg_id(row.instance_id(), attempt);
    bus.publish_unsuppressed(
        Stream::Done,
        bus.names().done(row.run_id()),
        &msg_id,
        done.encode(),
    )
    .await
}
