//! Task outputs (`shared/src/outputs.rs`): the small named values a task's
//! last attempt declared, kept on its instance for the tasks after it.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskInstance {
    Table,
    Outputs,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .add_column(json_null(TaskInstance::Outputs))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .drop_column(TaskInstance::Outputs)
                    .to_owned(),
            )
            .await
    }
}
