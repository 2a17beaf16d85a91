//! `task`: a task of a DAG, as defined now (runs use their snapshot).

use sea_orm::entity::prelude::*;

use crate::content::TaskType;
use crate::kinds::{RetryStrategy, Strategy};

/// A task definition. `(dag_id, name)` is unique.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "task")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Owning DAG.
    pub dag_id: i64,
    /// Unique within the DAG.
    pub name: String,
    /// Free text.
    pub description: String,
    /// What it runs as.
    pub task_type: TaskType,
    /// Type-specific configuration (command, script, sql, url …).
    pub content: Json,
    /// Task-level parameters (object of strings).
    pub params: Json,
    /// 1–10, higher runs first.
    pub priority: i32,
    /// Retries after the first attempt.
    pub retry_max: i32,
    /// Base retry interval in seconds.
    pub retry_interval_secs: i32,
    /// `FIXED` or `EXPONENTIAL`.
    pub retry_strategy: RetryStrategy,
    /// Exit codes that may retry (empty: any failure).
    pub retry_on_exit_codes: Json,
    /// Whether a TIMEOUT attempt is retried like a failure.
    pub retry_on_timeout: bool,
    /// Cap of the wait between retries, in seconds.
    pub retry_max_interval_secs: i32,
    /// Random shortening of each wait between retries, in percent.
    pub retry_jitter_pct: i32,
    /// Seconds; 0 means none.
    pub timeout_secs: i32,
    /// Seconds a cross-run dependency may be waited for before the task fails.
    pub wait_timeout_secs: i32,
    /// Seconds it may wait QUEUED for a runner; `None`: the DAG's.
    pub queue_timeout_secs: Option<i32>,
    /// Worker group.
    pub queue: String,
    /// `ALL_SUCCESS`, `ONE_SUCCESS` or `NONE`.
    pub strategy: Strategy,
    /// Its failure does not fail the run (`allow_failure`).
    pub allow_failure: bool,
    /// Disabled tasks end SKIPPED.
    pub enabled: bool,
    /// Canvas position for a UI.
    pub position_x: Option<i32>,
    /// Canvas position for a UI.
    pub position_y: Option<i32>,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
    /// The datasets it writes, as declared (`dw.orders/${bizdate}`): a
    /// JSON list of strings; `None` when it declares none.
    pub datasets: Option<Json>,
    /// Its `map` (a [`crate::map::MapSpec`]); `None` when it is not mapped.
    pub map: Option<Json>,
}

impl Model {
    /// The datasets it writes, as declared (validated when its DAG was
    /// applied); none when it declares none or the stored list does not read.
    pub fn declared_datasets(&self) -> Vec<String> {
        self.datasets
            .as_ref()
            .and_then(|value| serde_json::from_value(value.clone()).ok())
            .unwrap_or_default()
    }

    /// Its map (validated when its DAG was applied); `None` when it is not
    /// mapped or the stored spec does not read.
    pub fn map_spec(&self) -> Option<crate::map::MapSpec> {
        self.map
            .as_ref()
            .and_then(|value| serde_json::from_value(value.clone()).ok())
    }
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
