//! The waits a data team bounds (docs/ARCHITECTURE.md "Timeouts"): how long
//! a task may wait QUEUED for a runner (`queue_timeout`, per task with a
//! DAG-wide default) and how long a run may be RUNNING (`run_timeout` of
//! the DAG, `timeout` of a schedule for the runs it fires). A run carries
//! its own bound and, once it runs, the instant that bound falls, which the
//! ticker's deadline scan looks up by `(status, timeout_at)`.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Dag {
    Table,
    QueueTimeoutSecs,
    RunTimeoutSecs,
}

#[derive(DeriveIden)]
enum Task {
    Table,
    QueueTimeoutSecs,
}

#[derive(DeriveIden)]
enum Schedule {
    Table,
    TimeoutSecs,
}

#[derive(DeriveIden)]
enum DagRun {
    Table,
    Status,
    TimeoutSecs,
    TimeoutAt,
}

const RUN_TIMEOUT_INDEX: &str = "ix_dag_run_status_timeout_at";

/// One column per statement: SQLite alters a table one column at a time.
fn add_column(table: impl IntoIden, column: ColumnDef) -> TableAlterStatement {
    Table::alter().table(table).add_column(column).to_owned()
}

fn drop_column(table: impl IntoIden, column: impl IntoIden) -> TableAlterStatement {
    Table::alter().table(table).drop_column(column).to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for statement in [
            add_column(Dag::Table, integer_null(Dag::QueueTimeoutSecs)),
            add_column(Dag::Table, integer_null(Dag::RunTimeoutSecs)),
            add_column(Task::Table, integer_null(Task::QueueTimeoutSecs)),
            add_column(Schedule::Table, integer_null(Schedule::TimeoutSecs)),
            add_column(DagRun::Table, integer_null(DagRun::TimeoutSecs)),
            add_column(
                DagRun::Table,
                timestamp_with_time_zone_null(DagRun::TimeoutAt),
            ),
        ] {
            manager.alter_table(statement).await?;
        }
        manager
            .create_index(
                Index::create()
                    .name(RUN_TIMEOUT_INDEX)
                    .table(DagRun::Table)
                    .col(DagRun::Status)
                    .col(DagRun::TimeoutAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(RUN_TIMEOUT_INDEX)
                    .table(DagRun::Table)
                    .to_owned(),
            )
            .await?;
        for statement in [
            drop_column(DagRun::Table, DagRun::TimeoutAt),
            drop_column(DagRun::Table, DagRun::TimeoutSecs),
            drop_column(Schedule::Table, Schedule::TimeoutSecs),
            drop_column(Task::Table, Task::QueueTimeoutSecs),
            drop_column(Dag::Table, Dag::RunTimeoutSecs),
            drop_column(Dag::Table, Dag::QueueTimeoutSecs),
        ] {
            manager.alter_table(statement).await?;
        }
        Ok(())
    }
}
