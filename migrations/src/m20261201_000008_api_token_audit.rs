//! Named API tokens with a role, stored as hashes; the browser sessions
//! a token is exchanged for; and the audit log of every change made
//! through the API or the operator commands.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ApiToken {
    Table,
    Id,
    Name,
    Role,
    TokenHash,
    CreatedBy,
    CreatedAt,
    LastUsedAt,
}

#[derive(DeriveIden)]
enum ApiSession {
    Table,
    Id,
    SessionHash,
    TokenId,
    Name,
    Role,
    CreatedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    At,
    Actor,
    Role,
    Action,
    Target,
    Status,
    Origin,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ApiToken::Table)
                    .if_not_exists()
                    .col(big_pk_auto(ApiToken::Id))
                    .col(string_len_uniq(ApiToken::Name, 64))
                    .col(string_len(ApiToken::Role, 16))
                    .col(string_len_uniq(ApiToken::TokenHash, 64))
                    .col(string_len(ApiToken::CreatedBy, 128))
                    .col(timestamp_with_time_zone(ApiToken::CreatedAt))
                    .col(timestamp_with_time_zone_null(ApiToken::LastUsedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ApiSession::Table)
                    .if_not_exists()
                    .col(big_pk_auto(ApiSession::Id))
                    .col(string_len_uniq(ApiSession::SessionHash, 64))
                    .col(big_integer_null(ApiSession::TokenId))
                    .col(string_len(ApiSession::Name, 64))
                    .col(string_len(ApiSession::Role, 16))
                    .col(timestamp_with_time_zone(ApiSession::CreatedAt))
                    .col(timestamp_with_time_zone(ApiSession::ExpiresAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AuditLog::Table)
                    .if_not_exists()
                    .col(big_pk_auto(AuditLog::Id))
                    .col(timestamp_with_time_zone(AuditLog::At))
                    .col(string_len(AuditLog::Actor, 128))
                    .col(string_len(AuditLog::Role, 16))
                    .col(string_len(AuditLog::Action, 256))
                    .col(text(AuditLog::Target))
                    .col(small_integer(AuditLog::Status))
                    .col(string_len(AuditLog::Origin, 128))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_audit_log_at")
                    .table(AuditLog::Table)
                    .col(AuditLog::At)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(AuditLog::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(ApiSession::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(ApiToken::Table).to_owned())
            .await
    }
}
