//! Projects as rows: the seed's `projectId`, until now a bare number on
//! each DAG, becomes a table a token can be limited to, and secrets and
//! datasources belong to one project each.
//!
//! Project ids are chosen by the code that creates them (the next after
//! the highest), not by an autoincrement, because this migration writes
//! the ids existing DAGs already carry: project 1, `default`, which every
//! DAG file means when it names none, and one row per other id in use.
//! Existing secrets and datasources move into project 1; tokens and
//! sessions gain a nullable project (none: every project).

use sea_orm_migration::sea_orm::{ConnectionTrait, TryGetable};
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Project {
    Table,
    Id,
    Name,
    Description,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Dag {
    Table,
    ProjectId,
}

#[derive(DeriveIden)]
enum Secret {
    Table,
    ProjectId,
}

#[derive(DeriveIden)]
enum Datasource {
    Table,
    ProjectId,
}

#[derive(DeriveIden)]
enum ApiToken {
    Table,
    ProjectId,
}

#[derive(DeriveIden)]
enum ApiSession {
    Table,
    ProjectId,
}

/// The project a DAG file means when it names none.
const DEFAULT_PROJECT: i64 = 1;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Project::Table)
                    .if_not_exists()
                    .col(big_integer(Project::Id).primary_key())
                    .col(string_len_uniq(Project::Name, 64))
                    .col(text(Project::Description))
                    .col(timestamp_with_time_zone(Project::CreatedAt))
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        let in_use = Query::select()
            .distinct()
            .column(Dag::ProjectId)
            .from(Dag::Table)
            .to_owned();
        let mut ids = vec![DEFAULT_PROJECT];
        for row in db.query_all(&in_use).await? {
            let id =
                i64::try_get_by_index(&row, 0).map_err(|e| DbErr::Migration(format!("{e:?}")))?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        for id in ids {
            let name = if id == DEFAULT_PROJECT {
                "default".to_owned()
            } else {
                format!("project-{id}")
            };
            let mut insert = Query::insert();
            insert
                .into_table(Project::Table)
                .columns([
                    Project::Id,
                    Project::Name,
                    Project::Description,
                    Project::CreatedAt,
                ])
                .values([id.into(), name.into(), "".into(), Expr::current_timestamp()])
                .map_err(|e| DbErr::Migration(e.to_string()))?;
            manager.exec_stmt(insert).await?;
        }
        // One column per statement: SQLite adds one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(Secret::Table)
                    .add_column(big_integer(Secret::ProjectId).default(DEFAULT_PROJECT))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Datasource::Table)
                    .add_column(big_integer(Datasource::ProjectId).default(DEFAULT_PROJECT))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiToken::Table)
                    .add_column(big_integer_null(ApiToken::ProjectId))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiSession::Table)
                    .add_column(big_integer_null(ApiSession::ProjectId))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (table, column) in [
            (
                ApiSession::Table.into_iden(),
                ApiSession::ProjectId.into_iden(),
            ),
            (ApiToken::Table.into_iden(), ApiToken::ProjectId.into_iden()),
            (
                Datasource::Table.into_iden(),
                Datasource::ProjectId.into_iden(),
            ),
            (Secret::Table.into_iden(), Secret::ProjectId.into_iden()),
        ] {
            manager
                .alter_table(Table::alter().table(table).drop_column(column).to_owned())
                .await?;
        }
        manager
            .drop_table(Table::drop().table(Project::Table).to_owned())
            .await
    }
}
