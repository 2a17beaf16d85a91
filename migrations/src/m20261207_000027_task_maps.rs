//! Tasks mapped over a list (docs/DAG_FORMAT.md, "Map"; docs/ARCHITECTURE.md,
//! "Map"). A task keeps its `map`; an instance is the one planned with its
//! run (`map_index` -1) or item `map_index` 0…n−1 of a mapped task's list,
//! unique on (run, task, index). A mapped task's planned instance is its
//! items' aggregate: `map_items` items were made, `map_ended` of them have
//! ended and been counted, `map_failed` of those ended F.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Task {
    Table,
    Map,
}

#[derive(DeriveIden)]
enum TaskInstance {
    Table,
    DagRunId,
    TaskId,
    MapIndex,
    MapItems,
    MapEnded,
    MapFailed,
}

/// The index `(dag_run_id, task_id)` was unique under before items.
const RUN_TASK: &str = "ux_task_instance_run_task";
/// The index that replaces it.
const RUN_TASK_ITEM: &str = "ux_task_instance_run_task_item";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .add_column(json_null(Task::Map))
                    .to_owned(),
            )
            .await?;
        for column in [
            integer(TaskInstance::MapIndex).default(-1).to_owned(),
            integer_null(TaskInstance::MapItems).to_owned(),
            integer(TaskInstance::MapEnded).default(0).to_owned(),
            integer(TaskInstance::MapFailed).default(0).to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(TaskInstance::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_index(
                Index::create()
                    .name(RUN_TASK_ITEM)
                    .table(TaskInstance::Table)
                    .col(TaskInstance::DagRunId)
                    .col(TaskInstance::TaskId)
                    .col(TaskInstance::MapIndex)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name(RUN_TASK)
                    .table(TaskInstance::Table)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Items go with the index that allowed them.
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(TaskInstance::Table)
                    .and_where(Expr::col(TaskInstance::MapIndex).gte(0))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(RUN_TASK)
                    .table(TaskInstance::Table)
                    .col(TaskInstance::DagRunId)
                    .col(TaskInstance::TaskId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name(RUN_TASK_ITEM)
                    .table(TaskInstance::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            TaskInstance::MapFailed,
            TaskInstance::MapEnded,
            TaskInstance::MapItems,
            TaskInstance::MapIndex,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(TaskInstance::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .drop_column(Task::Map)
                    .to_owned(),
            )
            .await
    }
}
