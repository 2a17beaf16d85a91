//! Every claim reads the outputs its run's tasks have declared so far
//! (docs/PARAMETERS.md, "Values between tasks"); most instances declare
//! none, so a partial index of the few that did answers it without reading
//! the whole run, however large (a 10,000-task run would otherwise read
//! 10,000 rows per claim).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEX: &str = "ix_task_instance_declared_outputs";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Written as SQL: both databases DataJump keeps its state in
        // (SQLite and PostgreSQL) take a partial index in these words.
        manager
            .get_connection()
            .execute_unprepared(&format!(
                "CREATE INDEX IF NOT EXISTS {INDEX} ON task_instance (dag_run_id) \
                 WHERE outputs IS NOT NULL"
            ))
            .await
            .map(|_| ())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(&format!("DROP INDEX IF EXISTS {INDEX}"))
            .await
            .map(|_| ())
    }
}
