//! Cross-run and cross-DAG dependencies: the index from an awaited
//! (task, business date) to the instances waiting for it, and each task's
//! wait timeout.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DependencyWait {
    Table,
    Id,
    WaiterInstanceId,
    WaiterRunId,
    TargetTaskId,
    TargetBizDate,
    DepType,
    Description,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Task {
    Table,
    WaitTimeoutSecs,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DependencyWait::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DependencyWait::Id))
                    .col(big_integer(DependencyWait::WaiterInstanceId))
                    .col(big_integer(DependencyWait::WaiterRunId))
                    .col(big_integer(DependencyWait::TargetTaskId))
                    .col(date(DependencyWait::TargetBizDate))
                    .col(string_len(DependencyWait::DepType, 16))
                    .col(text(DependencyWait::Description))
                    .col(timestamp_with_time_zone(DependencyWait::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_dependency_wait_target")
                    .table(DependencyWait::Table)
                    .col(DependencyWait::TargetTaskId)
                    .col(DependencyWait::TargetBizDate)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_dependency_wait_waiter")
                    .table(DependencyWait::Table)
                    .col(DependencyWait::WaiterInstanceId)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .add_column(integer(Task::WaitTimeoutSecs).default(86_400))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .drop_column(Task::WaitTimeoutSecs)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(
                Table::drop()
                    .table(DependencyWait::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}
