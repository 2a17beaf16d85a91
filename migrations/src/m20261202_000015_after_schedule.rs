//! Dependency triggers (docs/DAG_FORMAT.md "Dependency triggers"): a
//! schedule of kind AFTER names the DAG whose successful runs fire it, by
//! name, so it may name a DAG applied later. The index finds the schedules
//! a finished run fires in the transaction that finishes it.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Schedule {
    Table,
    AfterDag,
}

const INDEX: &str = "ix_schedule_after_dag";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .add_column(string_len_null(Schedule::AfterDag, 128))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(Schedule::Table)
                    .col(Schedule::AfterDag)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(INDEX).table(Schedule::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .drop_column(Schedule::AfterDag)
                    .to_owned(),
            )
            .await
    }
}
