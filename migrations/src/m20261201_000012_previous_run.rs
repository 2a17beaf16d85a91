//! `previous_run` dependencies: an edge that waits for the same task in
//! the awaited DAG's latest earlier run, whatever its business date
//! (Airflow's `depends_on_past`).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskDependency {
    Table,
    PreviousRun,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskDependency::Table)
                    .add_column(boolean(TaskDependency::PreviousRun).default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskDependency::Table)
                    .drop_column(TaskDependency::PreviousRun)
                    .to_owned(),
            )
            .await
    }
}
