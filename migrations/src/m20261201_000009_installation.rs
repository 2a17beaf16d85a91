//! The installation: one row naming this database, created with it. Every
//! NATS message id and `dj_ticker` key carries its identity, so two
//! databases that share a NATS server (one deleted and started afresh, or
//! two set up side by side) never have their messages dropped as each
//! other's duplicates.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Installation {
    Table,
    Id,
    CreatedAt,
}

/// Characters of the identity: 64 random bits in lower-case hex.
const IDENTITY_LEN: usize = 16;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Installation::Table)
                    .if_not_exists()
                    .col(string_len(Installation::Id, 32).primary_key())
                    .col(timestamp_with_time_zone(Installation::CreatedAt))
                    .to_owned(),
            )
            .await?;
        let mut identity = uuid::Uuid::new_v4().simple().to_string();
        identity.truncate(IDENTITY_LEN);
        let mut insert = Query::insert();
        insert
            .into_table(Installation::Table)
            .columns([Installation::Id, Installation::CreatedAt])
            .values([identity.into(), Expr::current_timestamp()])
            .map_err(|e| DbErr::Migration(e.to_string()))?;
        manager.exec_stmt(insert).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Installation::Table).to_owned())
            .await
    }
}
