//! DataJump's domain data, shared by every role: what the engine and the
//! roles talk about, not what they do with it.
//!
//! Everything two roles must agree on is named here once: subject and
//! stream names ([`subjects`]), message formats ([`messages`]), table rows
//! ([`entities`]), statuses ([`status`]), the DAG file format and its
//! validation ([`dag_file`]), task types and their content ([`content`]),
//! plans and parameter substitution.
//!
//! The shaping decision: **parse once into validated types that later code
//! trusts.** Every column that holds one of a fixed set of values is an
//! enum stored as its text (`DeriveActiveEnum`), a task's content is parsed
//! into a type per task type when its DAG is applied, and a DAG file is
//! checked whole (every problem reported at once) before anything is
//! stored. Nothing here opens a connection: reading and writing the catalog
//! and configuration tables is `datajump-store`'s, changing a task's or a
//! run's state is `datajump-engine`'s. The one rule about connections that
//! two roles must agree on, where HTTP tasks (runner) and alert webhooks
//! (ticker) may connect, is [`network`]: its guard is their HTTP clients'
//! resolver.

pub mod access;
pub mod alerts;
pub mod biz_date;
pub mod content;
pub mod dag_file;
pub mod datasets;
pub mod datasources;
pub mod duration;
pub mod entities;
pub mod features;
pub mod graph;
pub mod ids;
pub mod kinds;
pub mod logs;
pub mod map;
pub mod messages;
pub mod metrics;
pub mod naming;
pub mod network;
pub mod outputs;
pub mod params;
pub mod plan;
pub mod problem;
pub mod secrets;
pub mod status;
pub mod strategy;
pub mod subjects;

pub use ids::{RunId, TaskInstanceId};
pub use status::{RunStatus, TaskStatus, TriggerType};

/// `Display` of the closed-set enums: their stored name (`as_str`), the
/// text that logs, tables and error messages show.
macro_rules! display_as_stored_name {
    ($($name:ty),* $(,)?) => {$(
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_stored_name!(
    access::Role,
    content::TaskType,
    datasets::EventSource,
    datasets::OnUpdate,
    kinds::AlertKind,
    kinds::AlertState,
    kinds::Catchup,
    kinds::DatasourceKind,
    kinds::DepType,
    kinds::OverlapPolicy,
    kinds::RetryStrategy,
    kinds::ScheduleKind,
    kinds::Strategy,
    status::RunStatus,
    status::TaskStatus,
    status::TriggerType,
);
