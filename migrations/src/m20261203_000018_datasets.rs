//! Datasets (docs/DAG_FORMAT.md "Datasets"): the events announcing that a
//! dataset, or one partition of it, was written; what each task declares it
//! writes; the condition of each data schedule; and each data schedule's
//! triggers, which record what it consumed and let a fire lost between a
//! commit and its publish be found again.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DatasetEvent {
    Table,
    Id,
    ProjectId,
    Dataset,
    Partition,
    Source,
    DagRunId,
    TaskInstanceId,
    Metadata,
    Origin,
    CreatedAt,
}

#[derive(DeriveIden)]
enum DatasetTrigger {
    Table,
    Id,
    ScheduleId,
    DedupKey,
    Partition,
    EventId,
    BizDate,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Task {
    Table,
    Datasets,
}

#[derive(DeriveIden)]
enum Schedule {
    Table,
    DataCondition,
    OnUpdate,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DatasetEvent::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DatasetEvent::Id))
                    .col(big_integer(DatasetEvent::ProjectId))
                    .col(string_len(DatasetEvent::Dataset, 255))
                    .col(string_len_null(DatasetEvent::Partition, 128))
                    .col(string_len(DatasetEvent::Source, 16))
                    .col(big_integer_null(DatasetEvent::DagRunId))
                    .col(big_integer_null(DatasetEvent::TaskInstanceId))
                    .col(json_null(DatasetEvent::Metadata))
                    .col(string_len_null(DatasetEvent::Origin, 128).unique_key())
                    .col(timestamp_with_time_zone(DatasetEvent::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_dataset_event_partition")
                    .table(DatasetEvent::Table)
                    .col(DatasetEvent::ProjectId)
                    .col(DatasetEvent::Dataset)
                    .col(DatasetEvent::Partition)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DatasetTrigger::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DatasetTrigger::Id))
                    .col(big_integer(DatasetTrigger::ScheduleId))
                    .col(string_len_uniq(DatasetTrigger::DedupKey, 255))
                    .col(string_len_null(DatasetTrigger::Partition, 128))
                    .col(big_integer(DatasetTrigger::EventId))
                    .col(date(DatasetTrigger::BizDate))
                    .col(timestamp_with_time_zone(DatasetTrigger::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_dataset_trigger_schedule")
                    .table(DatasetTrigger::Table)
                    .col(DatasetTrigger::ScheduleId)
                    .col(DatasetTrigger::EventId)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_dataset_trigger_created")
                    .table(DatasetTrigger::Table)
                    .col(DatasetTrigger::CreatedAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .add_column(json_null(Task::Datasets))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .add_column(json_null(Schedule::DataCondition))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .add_column(string_len_null(Schedule::OnUpdate, 16))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Schedule::OnUpdate, Schedule::DataCondition] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Schedule::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .drop_column(Task::Datasets)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(DatasetTrigger::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(DatasetEvent::Table).to_owned())
            .await
    }
}
