//! Retry options beyond the first release's (a TIMEOUT retried on request,
//! a cap and jitter for the wait), and an index for the ticker's check of
//! QUEUED instances on queues no live runner serves.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Task {
    Table,
    RetryOnTimeout,
    RetryMaxIntervalSecs,
    RetryJitterPct,
}

#[derive(DeriveIden)]
enum TaskInstance {
    Table,
    Status,
    Queue,
}

/// Name of the index on `task_instance (status, queue)`.
const STATUS_QUEUE_INDEX: &str = "ix_task_instance_status_queue";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite takes one column per ALTER TABLE.
        for column in [
            boolean(Task::RetryOnTimeout).default(false).to_owned(),
            integer(Task::RetryMaxIntervalSecs).default(3600).to_owned(),
            integer(Task::RetryJitterPct).default(0).to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Task::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_index(
                Index::create()
                    .name(STATUS_QUEUE_INDEX)
                    .table(TaskInstance::Table)
                    .col(TaskInstance::Status)
                    .col(TaskInstance::Queue)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(STATUS_QUEUE_INDEX)
                    .table(TaskInstance::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            Task::RetryOnTimeout,
            Task::RetryMaxIntervalSecs,
            Task::RetryJitterPct,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Task::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
