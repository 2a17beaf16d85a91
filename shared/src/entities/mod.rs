//! SeaORM entities: one module per table of docs/ARCHITECTURE.md "Tables".
//!
//! These are the only row types; [`crate::plan`] maps them to the domain
//! types that travel in messages. JSON columns the engine acts on are typed
//! ([`StoredJson`]): read once, where the row is read.

pub mod alert;
pub mod api_session;
pub mod api_token;
pub mod audit_log;
pub mod dag;
pub mod dag_run;
pub mod dag_version_plan;
pub mod dataset_event;
pub mod dataset_trigger;
pub mod datasource;
pub mod dependency_wait;
pub mod execution;
pub mod installation;
pub mod large_output;
pub mod project;
pub mod schedule;
pub mod secret;
mod stored_json;
pub mod task;
pub mod task_dependency;
pub mod task_instance;

pub use stored_json::{StoredJson, UnreadableJson};
