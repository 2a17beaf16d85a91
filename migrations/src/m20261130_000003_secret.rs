//! Named secrets (credential headers of HTTP tasks): read by the runner when
//! an attempt starts, so their values never travel in a message.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Secret {
    Table,
    Id,
    Name,
    Value,
    Description,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Secret::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Secret::Id))
                    .col(string_len_uniq(Secret::Name, 128))
                    .col(text(Secret::Value))
                    .col(text(Secret::Description).default(""))
                    .col(timestamp_with_time_zone(Secret::CreatedAt))
                    .col(timestamp_with_time_zone(Secret::UpdatedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Secret::Table).to_owned())
            .await
    }
}
