//! The DataJump domain, shared by every role.
//!
//! Everything two roles must agree on lives here and only here: subject and
//! stream names, message formats, table rows, task and run statuses, the cron
//! dialect, the DAG file format and, above all, the state-transition functions.
//!
//! The shaping decision: **the database is the truth and every state change is
//! a conditional update** (`UPDATE … WHERE id = ? AND status IN (…)`) whose row
//! count says who won. Messages only wake roles up, so any handler may run
//! twice, on any replica, and the second run changes nothing. Keeping the
//! transitions in this one crate means no role can write a status another role
//! does not expect.

pub mod alerts;
pub mod backfill;
pub mod biz_date;
pub mod catalog;
pub mod dag_file;
pub mod datasources;
pub mod db;
pub mod entities;
pub mod logs;
pub mod messages;
pub mod metrics;
pub mod naming;
pub mod params;
pub mod plan;
pub mod secrets;
pub mod status;
pub mod subjects;

pub use status::{RunStatus, TaskStatus, TriggerType};
