//! Large outputs (docs/PARAMETERS.md, "Values between tasks"): the one JSON
//! array of up to 1 MiB an attempt may write to `$DJ_OUTPUT_JSON/<name>.json`,
//! which a map's `over` reads. Kept in a table of its own, one row per task
//! instance, so that the instance rows every transition reads stay small.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum LargeOutput {
    Table,
    TaskInstanceId,
    DagRunId,
    Name,
    Value,
    CreatedAt,
}

/// The index a run's large outputs are removed by.
const BY_RUN: &str = "ix_large_output_run";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(LargeOutput::Table)
                    .if_not_exists()
                    .col(big_integer(LargeOutput::TaskInstanceId).primary_key())
                    .col(big_integer(LargeOutput::DagRunId))
                    .col(string_len(LargeOutput::Name, 64))
                    .col(text(LargeOutput::Value))
                    .col(timestamp_with_time_zone(LargeOutput::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(BY_RUN)
                    .table(LargeOutput::Table)
                    .col(LargeOutput::DagRunId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(LargeOutput::Table).to_owned())
            .await
    }
}
