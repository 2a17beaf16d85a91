//! The request and response bodies of the runner and queue routes ([`super`]);
//! those several route modules share are in [`crate::dto`].

use chrono::{DateTime, Utc};
use serde::Serialize;

/// A runner, from its heartbeat in `dj_runners`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunnerDto {
    /// Runner id.
    pub id: String,
    /// Queues it serves.
    pub queues: Vec<String>,
    /// Tasks it can run at once.
    pub slots: u64,
    /// Tasks it was running at its last heartbeat.
    pub running: u64,
    /// Its last heartbeat.
    pub last_seen: Option<DateTime<Utc>>,
    /// Its build's version; absent for runners built before heartbeats
    /// carried it.
    pub version: Option<String>,
    /// What its build understands of DAG definitions: `dag apply` refuses
    /// a DAG using a feature newer than a live runner of its queue
    /// understands (docs/OPERATIONS.md, "Upgrading DataJump"). 0 for runners built
    /// before heartbeats carried it.
    pub feature_level: u32,
}

/// A queue: who serves it and what waits in it, from the runners'
/// heartbeats, the work consumers' counters in JetStream and the task
/// instances in the database. To a token limited to a project, the task
/// and DAG counts are its project's and `backlog` is empty (the streams
/// count every project's work together).
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueDto {
    /// Queue name.
    pub queue: String,
    /// Live runners serving it.
    pub runners: u64,
    /// Their slots (a runner serving several queues counts in each).
    pub slots: u64,
    /// Task instances QUEUED on it: released, waiting for a runner.
    pub queued_tasks: u64,
    /// Task instances RUNNING on it.
    pub running_tasks: u64,
    /// Messages per priority band (10 highest, 1 lowest), for the bands
    /// holding any; empty when no runner ever created its consumers.
    pub backlog: Vec<BandBacklog>,
    /// Online DAGs with a task on this queue.
    pub dags: u64,
    /// No live runner serves it: its tasks wait until one starts with
    /// `--queues` naming it.
    pub unserved: bool,
}

/// What one priority band of a queue holds in JetStream.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BandBacklog {
    /// Priority, 1 (lowest) to 10 (highest).
    pub priority: u8,
    /// Messages no runner has taken yet.
    pub pending: u64,
    /// Messages taken and not yet acknowledged (running, or in flight).
    pub ack_pending: u64,
}
