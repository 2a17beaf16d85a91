//! Task instance and run statuses, and how a run was triggered.
//!
//! The names are the ones of the engine requirements' state machine (with
//! KILLED where the data model says CANCELED) and are stored as these strings in the database and in messages.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Where a task instance is in its life (docs/ARCHITECTURE.md, "State machine").
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(32))")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    /// The row exists; nothing decided yet.
    #[sea_orm(string_value = "CREATED")]
    Created,
    /// Waiting for its parents.
    #[sea_orm(string_value = "PENDING")]
    Pending,
    /// Released: its work message is (or is about to be) on `dj.work.*`.
    #[sea_orm(string_value = "QUEUED")]
    Queued,
    /// A runner owns it and is executing an attempt.
    #[sea_orm(string_value = "RUNNING")]
    Running,
    /// A failed attempt with retries left; `deadline_at` holds the retry time.
    #[sea_orm(string_value = "UP_FOR_RETRY")]
    UpForRetry,
    /// A sensor whose condition did not hold yet, waiting for its next
    /// check without a runner slot; `deadline_at` holds the time of it.
    #[sea_orm(string_value = "UP_FOR_RESCHEDULE")]
    UpForReschedule,
    /// Finished well.
    #[sea_orm(string_value = "SUCCESS")]
    Success,
    /// Finished badly, no retries left.
    #[sea_orm(string_value = "FAILED")]
    Failed,
    /// Ran past its timeout and was killed.
    #[sea_orm(string_value = "TIMEOUT")]
    Timeout,
    /// Killed by a user.
    #[sea_orm(string_value = "KILLED")]
    Killed,
    /// Disabled task: never ran, counts as success for its children.
    #[sea_orm(string_value = "SKIPPED")]
    Skipped,
    /// Never ran because its dependency strategy failed.
    #[sea_orm(string_value = "UPSTREAM_FAILED")]
    UpstreamFailed,
}

impl TaskStatus {
    /// Statuses that end an instance's life in a run.
    pub const TERMINAL: [TaskStatus; 6] = [
        TaskStatus::Success,
        TaskStatus::Failed,
        TaskStatus::Timeout,
        TaskStatus::Killed,
        TaskStatus::Skipped,
        TaskStatus::UpstreamFailed,
    ];

    /// True once the instance can no longer change without a rerun or mark.
    pub fn is_terminal(self) -> bool {
        Self::TERMINAL.contains(&self)
    }

    /// True when children may treat this parent as having succeeded.
    pub fn counts_as_success(self) -> bool {
        matches!(self, TaskStatus::Success | TaskStatus::Skipped)
    }

    /// The stored name, e.g. `UPSTREAM_FAILED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Created => "CREATED",
            TaskStatus::Pending => "PENDING",
            TaskStatus::Queued => "QUEUED",
            TaskStatus::Running => "RUNNING",
            TaskStatus::UpForRetry => "UP_FOR_RETRY",
            TaskStatus::UpForReschedule => "UP_FOR_RESCHEDULE",
            TaskStatus::Success => "SUCCESS",
            TaskStatus::Failed => "FAILED",
            TaskStatus::Timeout => "TIMEOUT",
            TaskStatus::Killed => "KILLED",
            TaskStatus::Skipped => "SKIPPED",
            TaskStatus::UpstreamFailed => "UPSTREAM_FAILED",
        }
    }
}

/// Where a DAG run is in its life.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunStatus {
    /// Created, waiting for a free slot under the DAG's `max_active_runs`
    /// (overlap policy `wait`); its roots are not released yet.
    #[sea_orm(string_value = "QUEUED")]
    Queued,
    /// Its instances exist and its roots are released.
    #[sea_orm(string_value = "RUNNING")]
    Running,
    /// Every instance ended SUCCESS or SKIPPED.
    #[sea_orm(string_value = "SUCCESS")]
    Success,
    /// Some instance ended otherwise.
    #[sea_orm(string_value = "FAILED")]
    Failed,
    /// Killed as a whole.
    #[sea_orm(string_value = "KILLED")]
    Killed,
    /// Ran past its run timeout: its unfinished instances were killed.
    #[sea_orm(string_value = "TIMEOUT")]
    Timeout,
}

impl RunStatus {
    /// True once the run is over.
    pub fn is_terminal(self) -> bool {
        !matches!(self, RunStatus::Running | RunStatus::Queued)
    }

    /// True for a run that ended and did not succeed: what `rerun
    /// --failed-only` and `backfill --reprocess failed` take up again.
    pub fn is_unsuccessful(self) -> bool {
        matches!(
            self,
            RunStatus::Failed | RunStatus::Killed | RunStatus::Timeout
        )
    }

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "QUEUED",
            RunStatus::Running => "RUNNING",
            RunStatus::Success => "SUCCESS",
            RunStatus::Failed => "FAILED",
            RunStatus::Killed => "KILLED",
            RunStatus::Timeout => "TIMEOUT",
        }
    }
}

/// What started a run (and, for executions, an attempt).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TriggerType {
    /// A cron fire of a schedule.
    #[sea_orm(string_value = "SCHEDULE")]
    Schedule,
    /// `datajump trigger` or the API.
    #[sea_orm(string_value = "MANUAL")]
    Manual,
    /// `datajump backfill` over a range of business dates.
    #[sea_orm(string_value = "BACKFILL")]
    Backfill,
    /// An external event on `dj.event.<project>.<name>`.
    #[sea_orm(string_value = "EVENT")]
    Event,
    /// A successful run of another DAG (an `after:` schedule).
    #[sea_orm(string_value = "DEPENDENCY")]
    Dependency,
    /// Datasets written (a data schedule's `on:`).
    #[sea_orm(string_value = "DATASET")]
    Dataset,
    /// An attempt started by a rerun of a finished run (executions only).
    #[sea_orm(string_value = "RERUN")]
    Rerun,
}

impl TriggerType {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerType::Schedule => "SCHEDULE",
            TriggerType::Manual => "MANUAL",
            TriggerType::Backfill => "BACKFILL",
            TriggerType::Event => "EVENT",
            TriggerType::Dependency => "DEPENDENCY",
            TriggerType::Dataset => "DATASET",
            TriggerType::Rerun => "RERUN",
        }
    }
}
