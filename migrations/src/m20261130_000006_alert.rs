//! Alerts: one row per (event, webhook), written when the ticker notices the
//! event and updated as it is delivered, so a crash never loses one and the
//! history is visible through the API.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Alert {
    Table,
    Id,
    DagId,
    DagRunId,
    TaskInstanceId,
    Kind,
    DedupKey,
    Target,
    Payload,
    Status,
    Attempts,
    NextAttemptAt,
    LastError,
    ResponseStatus,
    CreatedAt,
    SentAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Alert::Table)
                    .if_not_exists()
                    .col(big_pk_auto(Alert::Id))
                    .col(big_integer(Alert::DagId))
                    .col(big_integer_null(Alert::DagRunId))
                    .col(big_integer_null(Alert::TaskInstanceId))
                    .col(string_len(Alert::Kind, 32))
                    .col(string_len_uniq(Alert::DedupKey, 200))
                    .col(json(Alert::Target))
                    .col(json(Alert::Payload))
                    .col(string_len(Alert::Status, 16))
                    .col(integer(Alert::Attempts).default(0))
                    .col(timestamp_with_time_zone(Alert::NextAttemptAt))
                    .col(text_null(Alert::LastError))
                    .col(integer_null(Alert::ResponseStatus))
                    .col(timestamp_with_time_zone(Alert::CreatedAt))
                    .col(timestamp_with_time_zone_null(Alert::SentAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_alert_due")
                    .table(Alert::Table)
                    .col(Alert::Status)
                    .col(Alert::NextAttemptAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_alert_dag")
                    .table(Alert::Table)
                    .col(Alert::DagId)
                    .col(Alert::Id)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Alert::Table).to_owned())
            .await
    }
}
