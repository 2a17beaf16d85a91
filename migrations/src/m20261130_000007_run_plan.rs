//! A run's plan snapshot moves from `dag_run` to a table of its own.
//!
//! Every completion updates its run's counters, and a row update rewrites
//! (on SQLite: re-reads, re-encodes and compares) the whole row — with the
//! plan of a 10,000-task DAG that was megabytes per completion, so a wide
//! run slowed down as it grew. The snapshot is written once and only read
//! for audit, so it lives apart from the counters.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DagRun {
    Table,
    Id,
    Plan,
}

#[derive(DeriveIden)]
enum DagRunPlan {
    Table,
    DagRunId,
    Plan,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DagRunPlan::Table)
                    .if_not_exists()
                    .col(big_integer(DagRunPlan::DagRunId).primary_key())
                    .col(json(DagRunPlan::Plan))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(DagRunPlan::Table)
                    .columns([DagRunPlan::DagRunId, DagRunPlan::Plan])
                    .select_from(
                        Query::select()
                            .columns([DagRun::Id, DagRun::Plan])
                            .from(DagRun::Table)
                            .to_owned(),
                    )
                    .map_err(|e| DbErr::Migration(e.to_string()))?
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(DagRun::Table)
                    .drop_column(DagRun::Plan)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(DagRun::Table)
                    .add_column(json_null(DagRun::Plan))
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(DagRunPlan::Table).to_owned())
            .await
    }
}
