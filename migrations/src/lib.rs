//! DataJump's database schema as sea-orm migrations.
//!
//! One migration set serves SQLite and PostgreSQL: the same binary switches by
//! URL, so the schema is written once in sea-query's portable terms and never
//! as raw SQL of one dialect. Migrations name their tables with their own
//! `DeriveIden` enums instead of borrowing the entities, so that a later change
//! to an entity can never rewrite what an old migration did.

pub use sea_orm_migration::prelude::*;

mod m20261129_000001_create_tables;
mod m20261129_000002_dependency_wait;
mod m20261130_000003_secret;
mod m20261130_000004_retry_options;
mod m20261130_000006_alert;
mod m20261130_000007_run_plan;
mod m20261201_000008_api_token_audit;
mod m20261201_000009_installation;
mod m20261201_000010_file_managed;
mod m20261201_000011_projects;
mod m20261201_000012_previous_run;
mod m20261201_000013_run_max_active_runs;
mod m20261202_000014_timeouts;
mod m20261202_000015_after_schedule;
mod m20261202_000016_task_outputs;
mod m20261202_000017_run_finished_index;
mod m20261203_000018_datasets;
mod m20261204_000019_sensors;
mod m20261204_000020_session_token_hash;
mod m20261205_000021_schedule_active_since;
mod m20261206_000022_declared_outputs_index;
mod m20261206_000023_reason_problems;
mod m20261206_000024_flow_skips;
mod m20261207_000025_dag_priority;
mod m20261207_000026_version_plans;
mod m20261207_000027_task_maps;
mod m20261207_000028_large_outputs;

/// Every migration, in order.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261129_000001_create_tables::Migration),
            Box::new(m20261129_000002_dependency_wait::Migration),
            Box::new(m20261130_000003_secret::Migration),
            Box::new(m20261130_000004_retry_options::Migration),
            Box::new(m20261130_000006_alert::Migration),
            Box::new(m20261130_000007_run_plan::Migration),
            Box::new(m20261201_000008_api_token_audit::Migration),
            Box::new(m20261201_000009_installation::Migration),
            Box::new(m20261201_000010_file_managed::Migration),
            Box::new(m20261201_000011_projects::Migration),
            Box::new(m20261201_000012_previous_run::Migration),
            Box::new(m20261201_000013_run_max_active_runs::Migration),
            Box::new(m20261202_000014_timeouts::Migration),
            Box::new(m20261202_000015_after_schedule::Migration),
            Box::new(m20261202_000016_task_outputs::Migration),
            Box::new(m20261202_000017_run_finished_index::Migration),
            Box::new(m20261203_000018_datasets::Migration),
            Box::new(m20261204_000019_sensors::Migration),
            Box::new(m20261204_000020_session_token_hash::Migration),
            Box::new(m20261205_000021_schedule_active_since::Migration),
            Box::new(m20261206_000022_declared_outputs_index::Migration),
            Box::new(m20261206_000023_reason_problems::Migration),
            Box::new(m20261206_000024_flow_skips::Migration),
            Box::new(m20261207_000025_dag_priority::Migration),
            Box::new(m20261207_000026_version_plans::Migration),
            Box::new(m20261207_000027_task_maps::Migration),
            Box::new(m20261207_000028_large_outputs::Migration),
        ]
    }
}
