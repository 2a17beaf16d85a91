//! The API's live stream (docs/ARCHITECTURE.md "Web UI") reads, once a
//! second while a page is open, the runs in flight and those that finished
//! in the last minute: `status` leads an existing index for the first, and
//! this index finds the second without reading the whole run history.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DagRun {
    Table,
    FinishedAt,
}

const INDEX: &str = "ix_dag_run_finished_at";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(DagRun::Table)
                    .col(DagRun::FinishedAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(INDEX).table(DagRun::Table).to_owned())
            .await
    }
}
