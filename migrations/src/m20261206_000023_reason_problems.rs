//! Reasons with a stable code (`shared/src/problem.rs`): beside the English
//! words of why a task instance or an attempt ended, their code and values,
//! so a UI says them in its reader's language.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskInstance {
    Table,
    ReasonProblem,
}

#[derive(DeriveIden)]
enum Execution {
    Table,
    ErrorProblem,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .add_column(json_null(TaskInstance::ReasonProblem))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Execution::Table)
                    .add_column(json_null(Execution::ErrorProblem))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Execution::Table)
                    .drop_column(Execution::ErrorProblem)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .drop_column(TaskInstance::ReasonProblem)
                    .to_owned(),
            )
            .await
    }
}
