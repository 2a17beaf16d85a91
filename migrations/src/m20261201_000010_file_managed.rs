//! File-managed DAGs: the file a DAG was applied from, and what that file
//! last said about its operational state (a DAG's `online`, each
//! schedule's `active`), so that a restart or an unchanged re-apply keeps
//! what an operator changed, while a changed line of the file still applies.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Dag {
    Table,
    SourceFile,
    FileOnline,
}

#[derive(DeriveIden)]
enum Schedule {
    Table,
    FileActive,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite adds one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(Dag::Table)
                    .add_column(text_null(Dag::SourceFile))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Dag::Table)
                    .add_column(boolean_null(Dag::FileOnline))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .add_column(boolean_null(Schedule::FileActive))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .drop_column(Schedule::FileActive)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Dag::Table)
                    .drop_column(Dag::FileOnline)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Dag::Table)
                    .drop_column(Dag::SourceFile)
                    .to_owned(),
            )
            .await
    }
}
