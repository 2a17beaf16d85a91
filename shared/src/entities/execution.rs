//! `execution`: one attempt of a task instance, with the fields the data model asks of an execution record.

use sea_orm::entity::prelude::*;

use crate::{TaskStatus, TriggerType};

/// An attempt; `(task_instance_id, attempt)` is unique.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "execution")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The instance.
    pub task_instance_id: i64,
    /// The run.
    pub dag_run_id: i64,
    /// The task.
    pub task_id: i64,
    /// The schedule that fired the run, if any.
    pub schedule_id: Option<i64>,
    /// Business date.
    pub biz_date: Date,
    /// RUNNING, then the attempt's outcome.
    pub status: TaskStatus,
    /// 0-based attempt number.
    pub attempt: i32,
    /// What started this attempt.
    pub trigger_type: TriggerType,
    /// Runner id.
    pub worker: String,
    /// Start of the attempt.
    pub start_time: DateTimeUtc,
    /// End of the attempt.
    pub end_time: Option<DateTimeUtc>,
    /// End − start.
    pub duration_ms: Option<i64>,
    /// Process exit code, when there was a process.
    pub exit_code: Option<i32>,
    /// Where the full log is (object store name).
    pub log_path: Option<String>,
    /// Last part of the log (capped).
    pub log_tail: Option<String>,
    /// Why it failed.
    pub error_msg: Option<String>,
    /// The code and values of `error_msg`, when it has them
    /// ([`crate::problem::Reason::problem`]).
    pub error_problem: Option<super::stored_json::StoredJson<crate::problem::Problem>>,
    /// Row creation.
    pub created_at: DateTimeUtc,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
