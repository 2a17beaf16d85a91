//! Sensors (docs/DAG_FORMAT.md "Sensors"): the waiting state
//! UP_FOR_RESCHEDULE, one character longer than a status column held, and
//! the count of checks a sensor's attempt has made.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskInstance {
    Table,
    Status,
    Pokes,
}

#[derive(DeriveIden)]
enum Execution {
    Table,
    Status,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite does not enforce a text column's length (nor can it alter
        // a column); the others must make room for UP_FOR_RESCHEDULE.
        if manager.get_database_backend() != DbBackend::Sqlite {
            manager
                .alter_table(
                    Table::alter()
                        .table(TaskInstance::Table)
                        .modify_column(
                            ColumnDef::new(TaskInstance::Status)
                                .string_len(32)
                                .not_null(),
                        )
                        .to_owned(),
                )
                .await?;
            manager
                .alter_table(
                    Table::alter()
                        .table(Execution::Table)
                        .modify_column(ColumnDef::new(Execution::Status).string_len(32).not_null())
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .add_column(
                        ColumnDef::new(TaskInstance::Pokes)
                            .integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskInstance::Table)
                    .drop_column(TaskInstance::Pokes)
                    .to_owned(),
            )
            .await
    }
}
