//! The closed sets that table columns store as text: a DAG's overlap
//! policy, a schedule's kind and catch-up, a dependency's type and
//! strategy, a retry's strategy, an alert's kind and state, a datasource's
//! kind.
//!
//! The shaping decision: **this module imports nothing else of the crate.**
//! `entities` stores these values, and the modules they belong with by
//! meaning (`dag_file`, `plan`, `alerts`, `datasources`) read rows into
//! their own types: defined there, each of those and `entities` imported
//! the other. Closed sets whose own module reads no rows (statuses, roles,
//! task types, dataset event sources) stay in that module.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

// Only for the doc of `AlertState::Failed`, which links it and is also the
// API's schema description, so it stays as written; the code imports nothing
// of the crate.
#[cfg(doc)]
use crate::alerts::MAX_ATTEMPTS;

/// What a fire does when the DAG already has `max_active_runs` runs.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Deserialize,
    Serialize,
    Default,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "lowercase")]
pub enum OverlapPolicy {
    /// Drop the fire.
    #[sea_orm(string_value = "skip")]
    Skip,
    /// Keep the run waiting until a slot frees.
    #[default]
    #[sea_orm(string_value = "wait")]
    Wait,
    /// Run anyway.
    #[sea_orm(string_value = "parallel")]
    Parallel,
}

impl OverlapPolicy {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            OverlapPolicy::Skip => "skip",
            OverlapPolicy::Wait => "wait",
            OverlapPolicy::Parallel => "parallel",
        }
    }
}

/// Which fires missed while no ticker ran are replayed.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Deserialize,
    Serialize,
    Default,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "lowercase")]
pub enum Catchup {
    /// None of them.
    #[sea_orm(string_value = "none")]
    None,
    /// Only the most recent one.
    #[default]
    #[sea_orm(string_value = "latest")]
    Latest,
    /// All of them, up to `catchup_limit`.
    #[sea_orm(string_value = "all")]
    All,
}

/// What starts a schedule's runs.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Deserialize,
    Serialize,
    Default,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "UPPERCASE")]
pub enum ScheduleKind {
    /// A cron expression's fire times.
    #[default]
    #[sea_orm(string_value = "CRON")]
    Cron,
    /// An event on `dj.event.<project>.<name>`.
    #[sea_orm(string_value = "EVENT")]
    Event,
    /// A successful run of another DAG (a dependency trigger).
    #[sea_orm(string_value = "AFTER")]
    After,
    /// Datasets written (a data schedule).
    #[sea_orm(string_value = "DATA")]
    Data,
}

impl ScheduleKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleKind::Cron => "CRON",
            ScheduleKind::Event => "EVENT",
            ScheduleKind::After => "AFTER",
            ScheduleKind::Data => "DATA",
        }
    }
}

impl Catchup {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Catchup::None => "none",
            Catchup::Latest => "latest",
            Catchup::All => "all",
        }
    }
}

/// How a child's start depends on a parent.
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
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(8))")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DepType {
    /// The parent's result matters.
    #[sea_orm(string_value = "STRONG")]
    Strong,
    /// Only that the parent is terminal.
    #[sea_orm(string_value = "WEAK")]
    Weak,
}

impl DepType {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            DepType::Strong => "STRONG",
            DepType::Weak => "WEAK",
        }
    }
}

/// When a task with parents may start (the engine requirements' dependency
/// strategies, set per task): the table of docs/DAG_FORMAT.md,
/// "Strategies", kept in [`crate::strategy`].
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
    Default,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Strategy {
    /// Every STRONG parent succeeded (a disabled one counts).
    #[default]
    #[sea_orm(string_value = "ALL_SUCCESS")]
    AllSuccess,
    /// As soon as one STRONG parent succeeds.
    #[sea_orm(string_value = "ONE_SUCCESS")]
    OneSuccess,
    /// Every parent ended and none failed (a branch not taken is fine).
    #[sea_orm(string_value = "NONE_FAILED")]
    NoneFailed,
    /// As soon as one STRONG parent fails: a failure handler.
    #[sea_orm(string_value = "ONE_FAILED")]
    OneFailed,
    /// Every STRONG parent failed.
    #[sea_orm(string_value = "ALL_FAILED")]
    AllFailed,
    /// Every parent ended, whatever its result. Also read from `NONE`, its
    /// earlier name.
    #[serde(alias = "NONE")]
    #[sea_orm(string_value = "ALL_DONE")]
    AllDone,
}

impl Strategy {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::AllSuccess => "ALL_SUCCESS",
            Strategy::OneSuccess => "ONE_SUCCESS",
            Strategy::NoneFailed => "NONE_FAILED",
            Strategy::OneFailed => "ONE_FAILED",
            Strategy::AllFailed => "ALL_FAILED",
            Strategy::AllDone => "ALL_DONE",
        }
    }

    /// Whether it runs a task only after a failure, so a task with no
    /// STRONG parent to fail may not have it.
    pub fn needs_a_failure(self) -> bool {
        matches!(self, Strategy::OneFailed | Strategy::AllFailed)
    }
}

/// How the wait between retries grows.
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
    Default,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RetryStrategy {
    /// The same interval every time.
    #[default]
    #[sea_orm(string_value = "FIXED")]
    Fixed,
    /// interval × 2^(attempt−1).
    #[sea_orm(string_value = "EXPONENTIAL")]
    Exponential,
}

impl RetryStrategy {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryStrategy::Fixed => "FIXED",
            RetryStrategy::Exponential => "EXPONENTIAL",
        }
    }
}

/// What can be alerted on.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(32))")]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// A run ended FAILED.
    #[sea_orm(string_value = "run_failed")]
    RunFailed,
    /// A task instance ended FAILED with no retry left.
    #[sea_orm(string_value = "task_failed")]
    TaskFailed,
    /// An attempt ran past its timeout.
    #[sea_orm(string_value = "timeout")]
    Timeout,
    /// A run was still not finished `sla` seconds after its logical time.
    #[sea_orm(string_value = "sla_miss")]
    SlaMiss,
    /// `datajump alerts test`.
    #[sea_orm(string_value = "test")]
    Test,
}

impl AlertKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::RunFailed => "run_failed",
            AlertKind::TaskFailed => "task_failed",
            AlertKind::Timeout => "timeout",
            AlertKind::SlaMiss => "sla_miss",
            AlertKind::Test => "test",
        }
    }

    /// The kinds a config may list in `on` (all but `test`).
    pub const EVENTS: [AlertKind; 4] = [
        AlertKind::RunFailed,
        AlertKind::TaskFailed,
        AlertKind::Timeout,
        AlertKind::SlaMiss,
    ];
}

/// Where an alert row is in its delivery.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AlertState {
    /// Waiting for its next attempt.
    #[sea_orm(string_value = "PENDING")]
    Pending,
    /// Held by a sender until its lease ends.
    #[sea_orm(string_value = "SENDING")]
    Sending,
    /// Accepted by the target (2xx).
    #[sea_orm(string_value = "SENT")]
    Sent,
    /// Given up after [`MAX_ATTEMPTS`].
    #[sea_orm(string_value = "FAILED")]
    Failed,
}

impl AlertState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Pending => "PENDING",
            AlertState::Sending => "SENDING",
            AlertState::Sent => "SENT",
            AlertState::Failed => "FAILED",
        }
    }
}

/// The database products a datasource can point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
pub enum DatasourceKind {
    /// PostgreSQL.
    #[sea_orm(string_value = "POSTGRESQL")]
    Postgresql,
    /// MySQL or MariaDB.
    #[sea_orm(string_value = "MYSQL")]
    Mysql,
    /// A SQLite file (its path is the datasource's `host`).
    #[sea_orm(string_value = "SQLITE")]
    Sqlite,
}

impl DatasourceKind {
    /// Every kind, in the order help texts list them.
    pub const ALL: [DatasourceKind; 3] = [
        DatasourceKind::Postgresql,
        DatasourceKind::Mysql,
        DatasourceKind::Sqlite,
    ];

    /// The name stored in `datasource.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            DatasourceKind::Postgresql => "POSTGRESQL",
            DatasourceKind::Mysql => "MYSQL",
            DatasourceKind::Sqlite => "SQLITE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_stored_kind_is_an_error() {
        use sea_orm::ActiveEnum as _;
        assert!(DatasourceKind::try_from_value(&"ORACLE".to_owned()).is_err());
        assert_eq!(
            DatasourceKind::try_from_value(&"MYSQL".to_owned()).ok(),
            Some(DatasourceKind::Mysql)
        );
    }
}
