//! A browser session signed in with `DATAJUMP_API_TOKEN` keeps the SHA-256
//! of that token, so replacing the token ends the session
//! (docs/SECURITY.md, "Tokens, roles and the audit log"). Sessions made
//! before this column have none, and end at their next request.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ApiSession {
    Table,
    EnvTokenHash,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiSession::Table)
                    .add_column(string_len_null(ApiSession::EnvTokenHash, 64))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiSession::Table)
                    .drop_column(ApiSession::EnvTokenHash)
                    .to_owned(),
            )
            .await
    }
}
