//! Ids of runs and task instances as types of their own, in messages and
//! in the engine's functions, so a run's id cannot be passed where a task
//! instance's is meant. Rows keep plain `i64` columns; [`run_id`] and
//! [`instance_id`] on the row types give the typed ids. Also the id of a
//! role process ([`role_process_id`]).
//!
//! [`run_id`]: crate::entities::task_instance::Model::run_id
//! [`instance_id`]: crate::entities::task_instance::Model::instance_id

use serde::{Deserialize, Serialize};

/// A `dag_run.id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

/// A `task_instance.id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskInstanceId(pub i64);

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for TaskInstanceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// `host-pid-xxxx`: the id a runner or resolver process writes its
/// heartbeat under (and a runner its `execution.worker`), unique per
/// process.
pub fn role_process_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "datajump".to_owned());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &suffix[..4])
}
