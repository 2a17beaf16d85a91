//! A run's own `max_active_runs`: a backfill started with `--max-active-runs`
//! lets its runs start while fewer than that many of the DAG's runs are
//! active, without changing the DAG (docs/ARCHITECTURE.md "Run slots").

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DagRun {
    Table,
    MaxActiveRuns,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(DagRun::Table)
                    .add_column(integer_null(DagRun::MaxActiveRuns))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(DagRun::Table)
                    .drop_column(DagRun::MaxActiveRuns)
                    .to_owned(),
            )
            .await
    }
}
