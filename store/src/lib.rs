//! DataJump's database, outside the state machine: connecting to it
//! ([`db`]), the installation's identity ([`installation`]), the catalog a
//! DAG file is applied to ([`catalog`]), what it says about datasets
//! ([`datasets`]), projects ([`projects`]), the datasources and secrets tasks
//! use (sealed at rest, [`sealing`]), API tokens ([`tokens`]), browser
//! sessions ([`sessions`]) and the audit log ([`audit`]), alert delivery's
//! outbox rows ([`alerts`]) and backfill plans ([`backfill`]).
//!
//! The shaping decision: **`datajump-shared` says what the data is, this
//! crate reads and writes it, and `datajump-engine` alone changes a task's
//! or a run's state.** Nothing here touches `task_instance.status` or
//! `dag_run.status`; every function takes a connection (or one of
//! [`db::begin_write`]'s transactions) and leaves publishing to its caller,
//! so the same code serves the API, the CLI's offline commands, the ticker
//! and the tests.

pub mod alerts;
pub mod audit;
pub mod backfill;
pub mod catalog;
pub mod datasets;
pub mod datasources;
pub mod db;
pub mod installation;
pub mod projects;
pub mod sealing;
pub mod secrets;
pub mod sessions;
pub mod tokens;
