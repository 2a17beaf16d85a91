//! When each schedule last began to fire (docs/ARCHITECTURE.md "Dependency
//! triggers"): made, resumed, its DAG put online, or pointed at another
//! upstream. An `after:` schedule owes no run to an upstream run that
//! ended before then, nor a data schedule to an event recorded before
//! then, so a new or resumed schedule does not fire for what happened
//! while it did not exist or was paused.
//!
//! Schedules made before this column count from their last change, the
//! nearest moment the database knows.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Schedule {
    Table,
    ActiveSince,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .add_column(timestamp_with_time_zone_null(Schedule::ActiveSince))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(Schedule::Table)
                    .value(Schedule::ActiveSince, Expr::col(Schedule::UpdatedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Schedule::Table)
                    .drop_column(Schedule::ActiveSince)
                    .to_owned(),
            )
            .await
    }
}
