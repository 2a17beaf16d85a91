//! A DAG's fire priority (issue 49, "Fair under a storm"): fires due in the
//! same second go out by it. `priority` is what the file says (`None`:
//! not said); `fire_priority` is what fires use, the written one or else
//! the highest of the DAG's root tasks, kept on the row so the ticker
//! reads it with the schedules rather than from every task. Existing DAGs
//! get theirs from their tasks here.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Dag {
    Table,
    Priority,
    FirePriority,
}

/// The highest priority among each DAG's tasks without a parent in the
/// same run, as `DagFile::fire_priority` computes it for a new file.
const ROOTS_PRIORITY: &str = "UPDATE dag SET fire_priority = COALESCE((
    SELECT MAX(t.priority) FROM task t
    WHERE t.dag_id = dag.id AND NOT EXISTS (
        SELECT 1 FROM task_dependency d
        WHERE d.task_id = t.id AND d.parent_dag IS NULL
          AND d.offset_day = 0 AND d.previous_run = FALSE)
), 5)";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(Dag::Table)
                    .add_column(integer_null(Dag::Priority))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Dag::Table)
                    .add_column(integer(Dag::FirePriority).default(5))
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(ROOTS_PRIORITY)
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Dag::FirePriority, Dag::Priority] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Dag::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
