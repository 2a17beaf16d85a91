//! The initial schema: every table of docs/ARCHITECTURE.md "Tables" with its full columns.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Dag {
    Table,
    Id,
    Name,
    Description,
    ProjectId,
    Owner,
    Online,
    Version,
    Params,
    MaxActiveRuns,
    OverlapPolicy,
    AlertConfig,
    CreatedAt,
    UpdatedAt,
}

// Variants are column names; `task_type` is the seed's name for the column.
#[allow(clippy::enum_variant_names)]
#[derive(DeriveIden)]
enum Task {
    Table,
    Id,
    DagId,
    Name,
    Description,
    TaskType,
    Content,
    Params,
    Priority,
    RetryMax,
    RetryIntervalSecs,
    RetryStrategy,
    RetryOnExitCodes,
    TimeoutSecs,
    Queue,
    Strategy,
    Enabled,
    PositionX,
    PositionY,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum TaskDependency {
    Table,
    Id,
    DagId,
    TaskId,
    ParentTaskId,
    ParentDag,
    ParentTask,
    DepType,
    OffsetDay,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Schedule {
    Table,
    Id,
    DagId,
    Name,
    Kind,
    CronExpr,
    EventName,
    Timezone,
    StartDate,
    EndDate,
    Active,
    Catchup,
    CatchupLimit,
    MisfireGraceSecs,
    BizDateOffsetDays,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum DagRun {
    Table,
    Id,
    DagId,
    DagVersion,
    ScheduleId,
    DedupKey,
    TriggerType,
    BizDate,
    LogicalTime,
    Plan,
    Params,
    Status,
    PendingInstances,
    FailedInstances,
    CreatedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum TaskInstance {
    Table,
    Id,
    DagRunId,
    DagId,
    TaskId,
    TaskName,
    BizDate,
    TriggerType,
    Status,
    Attempt,
    RetriesUsed,
    Owner,
    Queue,
    Priority,
    DeadlineAt,
    PendingParents,
    StrongParents,
    StrongOk,
    StrongFailed,
    Propagated,
    Children,
    Spec,
    Reason,
    CreatedAt,
    QueuedAt,
    StartedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum Execution {
    Table,
    Id,
    TaskInstanceId,
    DagRunId,
    TaskId,
    ScheduleId,
    BizDate,
    Status,
    Attempt,
    TriggerType,
    Worker,
    StartTime,
    EndTime,
    DurationMs,
    ExitCode,
    LogPath,
    LogTail,
    ErrorMsg,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Datasource {
    Table,
    Id,
    Name,
    Kind,
    Host,
    Port,
    Database,
    Username,
    Password,
    Params,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Dag::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Dag::Id))
                    .col(string_len_uniq(Dag::Name, 128))
                    .col(text(Dag::Description).default(""))
                    .col(big_integer(Dag::ProjectId).default(1))
                    .col(string_len_null(Dag::Owner, 64))
                    .col(boolean(Dag::Online).default(true))
                    .col(integer(Dag::Version).default(1))
                    .col(json(Dag::Params))
                    .col(integer(Dag::MaxActiveRuns).default(1))
                    .col(string_len(Dag::OverlapPolicy, 16).default("wait"))
                    .col(json_null(Dag::AlertConfig))
                    .col(timestamp_with_time_zone(Dag::CreatedAt))
                    .col(timestamp_with_time_zone(Dag::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Task::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Task::Id))
                    .col(big_integer(Task::DagId))
                    .col(string_len(Task::Name, 128))
                    .col(text(Task::Description).default(""))
                    .col(string_len(Task::TaskType, 32))
                    .col(json(Task::Content))
                    .col(json(Task::Params))
                    .col(integer(Task::Priority).default(5))
                    .col(integer(Task::RetryMax).default(3))
                    .col(integer(Task::RetryIntervalSecs).default(60))
                    .col(string_len(Task::RetryStrategy, 16).default("FIXED"))
                    .col(json(Task::RetryOnExitCodes))
                    .col(integer(Task::TimeoutSecs).default(3600))
                    .col(string_len(Task::Queue, 64).default("default"))
                    .col(string_len(Task::Strategy, 16).default("ALL_SUCCESS"))
                    .col(boolean(Task::Enabled).default(true))
                    .col(integer_null(Task::PositionX))
                    .col(integer_null(Task::PositionY))
                    .col(timestamp_with_time_zone(Task::CreatedAt))
                    .col(timestamp_with_time_zone(Task::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_task_dag_name")
                    .table(Task::Table)
                    .col(Task::DagId)
                    .col(Task::Name)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TaskDependency::Table)
                    .if_not_exists()
                    .col(big_pk_auto(TaskDependency::Id))
                    .col(big_integer(TaskDependency::DagId))
                    .col(big_integer(TaskDependency::TaskId))
                    .col(big_integer_null(TaskDependency::ParentTaskId))
                    .col(string_len_null(TaskDependency::ParentDag, 128))
                    .col(string_len(TaskDependency::ParentTask, 128))
                    .col(string_len(TaskDependency::DepType, 16).default("STRONG"))
                    .col(integer(TaskDependency::OffsetDay).default(0))
                    .col(timestamp_with_time_zone(TaskDependency::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_task_dependency_dag")
                    .table(TaskDependency::Table)
                    .col(TaskDependency::DagId)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_task_dependency_parent")
                    .table(TaskDependency::Table)
                    .col(TaskDependency::ParentDag)
                    .col(TaskDependency::ParentTask)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Schedule::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Schedule::Id))
                    .col(big_integer(Schedule::DagId))
                    .col(string_len(Schedule::Name, 128))
                    .col(string_len(Schedule::Kind, 16).default("CRON"))
                    .col(string_len_null(Schedule::CronExpr, 128))
                    .col(string_len_null(Schedule::EventName, 256))
                    .col(string_len(Schedule::Timezone, 64).default("Asia/Shanghai"))
                    .col(date_null(Schedule::StartDate))
                    .col(date_null(Schedule::EndDate))
                    .col(boolean(Schedule::Active).default(true))
                    .col(string_len(Schedule::Catchup, 16).default("latest"))
                    .col(integer(Schedule::CatchupLimit).default(100))
                    .col(integer(Schedule::MisfireGraceSecs).default(60))
                    .col(integer(Schedule::BizDateOffsetDays).default(-1))
                    .col(timestamp_with_time_zone(Schedule::CreatedAt))
                    .col(timestamp_with_time_zone(Schedule::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_schedule_dag_name")
                    .table(Schedule::Table)
                    .col(Schedule::DagId)
                    .col(Schedule::Name)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(DagRun::Table)
                    .if_not_exists()
                    .col(big_pk_auto(DagRun::Id))
                    .col(big_integer(DagRun::DagId))
                    .col(integer(DagRun::DagVersion))
                    .col(big_integer_null(DagRun::ScheduleId))
                    .col(string_len_uniq(DagRun::DedupKey, 128))
                    .col(string_len(DagRun::TriggerType, 16))
                    .col(date(DagRun::BizDate))
                    .col(timestamp_with_time_zone(DagRun::LogicalTime))
                    .col(json(DagRun::Plan))
                    .col(json(DagRun::Params))
                    .col(string_len(DagRun::Status, 16))
                    .col(integer(DagRun::PendingInstances))
                    .col(integer(DagRun::FailedInstances).default(0))
                    .col(timestamp_with_time_zone(DagRun::CreatedAt))
                    .col(timestamp_with_time_zone_null(DagRun::FinishedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_dag_run_dag_status")
                    .table(DagRun::Table)
                    .col(DagRun::DagId)
                    .col(DagRun::Status)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_dag_run_dag_biz_date")
                    .table(DagRun::Table)
                    .col(DagRun::DagId)
                    .col(DagRun::BizDate)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TaskInstance::Table)
                    .if_not_exists()
                    .col(big_pk_auto(TaskInstance::Id))
                    .col(big_integer(TaskInstance::DagRunId))
                    .col(big_integer(TaskInstance::DagId))
                    .col(big_integer(TaskInstance::TaskId))
                    .col(string_len(TaskInstance::TaskName, 128))
                    .col(date(TaskInstance::BizDate))
                    .col(string_len(TaskInstance::TriggerType, 16))
                    .col(string_len(TaskInstance::Status, 16))
                    .col(integer(TaskInstance::Attempt).default(0))
                    .col(integer(TaskInstance::RetriesUsed).default(0))
                    .col(string_len_null(TaskInstance::Owner, 128))
                    .col(string_len(TaskInstance::Queue, 64))
                    .col(integer(TaskInstance::Priority))
                    .col(timestamp_with_time_zone_null(TaskInstance::DeadlineAt))
                    .col(integer(TaskInstance::PendingParents))
                    .col(integer(TaskInstance::StrongParents))
                    .col(integer(TaskInstance::StrongOk).default(0))
                    .col(integer(TaskInstance::StrongFailed).default(0))
                    .col(boolean(TaskInstance::Propagated).default(false))
                    .col(json(TaskInstance::Children))
                    .col(json(TaskInstance::Spec))
                    .col(text_null(TaskInstance::Reason))
                    .col(timestamp_with_time_zone(TaskInstance::CreatedAt))
                    .col(timestamp_with_time_zone_null(TaskInstance::QueuedAt))
                    .col(timestamp_with_time_zone_null(TaskInstance::StartedAt))
                    .col(timestamp_with_time_zone_null(TaskInstance::FinishedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_task_instance_run_task")
                    .table(TaskInstance::Table)
                    .col(TaskInstance::DagRunId)
                    .col(TaskInstance::TaskId)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_task_instance_deadline")
                    .table(TaskInstance::Table)
                    .col(TaskInstance::DeadlineAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_task_instance_task_biz_date")
                    .table(TaskInstance::Table)
                    .col(TaskInstance::TaskId)
                    .col(TaskInstance::BizDate)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Execution::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Execution::Id))
                    .col(big_integer(Execution::TaskInstanceId))
                    .col(big_integer(Execution::DagRunId))
                    .col(big_integer(Execution::TaskId))
                    .col(big_integer_null(Execution::ScheduleId))
                    .col(date(Execution::BizDate))
                    .col(string_len(Execution::Status, 16))
                    .col(integer(Execution::Attempt))
                    .col(string_len(Execution::TriggerType, 16))
                    .col(string_len(Execution::Worker, 128))
                    .col(timestamp_with_time_zone(Execution::StartTime))
                    .col(timestamp_with_time_zone_null(Execution::EndTime))
                    .col(big_integer_null(Execution::DurationMs))
                    .col(integer_null(Execution::ExitCode))
                    .col(string_len_null(Execution::LogPath, 256))
                    .col(text_null(Execution::LogTail))
                    .col(text_null(Execution::ErrorMsg))
                    .col(timestamp_with_time_zone(Execution::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_execution_instance_attempt")
                    .table(Execution::Table)
                    .col(Execution::TaskInstanceId)
                    .col(Execution::Attempt)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_execution_biz_date_task")
                    .table(Execution::Table)
                    .col(Execution::BizDate)
                    .col(Execution::TaskId)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Datasource::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Datasource::Id))
                    .col(string_len_uniq(Datasource::Name, 128))
                    .col(string_len(Datasource::Kind, 16))
                    .col(string_len(Datasource::Host, 256))
                    .col(integer_null(Datasource::Port))
                    .col(string_len_null(Datasource::Database, 128))
                    .col(string_len_null(Datasource::Username, 128))
                    .col(text_null(Datasource::Password))
                    .col(json(Datasource::Params))
                    .col(timestamp_with_time_zone(Datasource::CreatedAt))
                    .col(timestamp_with_time_zone(Datasource::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            Datasource::Table.into_iden(),
            Execution::Table.into_iden(),
            TaskInstance::Table.into_iden(),
            DagRun::Table.into_iden(),
            Schedule::Table.into_iden(),
            TaskDependency::Table.into_iden(),
            Task::Table.into_iden(),
            Dag::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}
