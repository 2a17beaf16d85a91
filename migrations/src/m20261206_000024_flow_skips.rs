//! Two kinds of SKIPPED (docs/DAG_FORMAT.md, "Strategies"): a task skipped
//! by control flow is B to its children, not S as a disabled one is, so an
//! instance records which it was (`flow_skipped`) and counts its STRONG
//! parents that ended B (`strong_skipped`). A task may allow its failure
//! (`allow_failure`: the run does not fail for it). The strategy once
//! called `NONE` is stored as `ALL_DONE`.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskInstance {
    Table,
    StrongSkipped,
    FlowSkipped,
}

#[derive(DeriveIden)]
enum Task {
    Table,
    Strategy,
    AllowFailure,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .add_column(integer(TaskInstance::StrongSkipped).default(0))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .add_column(boolean(TaskInstance::FlowSkipped).default(false))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .add_column(boolean(Task::AllowFailure).default(false))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(Task::Table)
                    .value(Task::Strategy, "ALL_DONE")
                    .and_where(Expr::col(Task::Strategy).eq("NONE"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .exec_stmt(
                Query::update()
                    .table(Task::Table)
                    .value(Task::Strategy, "NONE")
                    .and_where(Expr::col(Task::Strategy).eq("ALL_DONE"))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Task::Table)
                    .drop_column(Task::AllowFailure)
                    .to_owned(),
            )
            .await?;
        for column in [TaskInstance::FlowSkipped, TaskInstance::StrongSkipped] {
            manager
                .alter_table(
                    Table::alter()
                        .table(TaskInstance::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
