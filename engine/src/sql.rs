//! Statement helpers the transitions share.

use sea_orm::{ConnectionTrait, DbErr};

use datajump_shared::entities::task_instance;

pub(crate) type Ti = task_instance::Entity;

pub(crate) type TiCol = task_instance::Column;

pub(crate) async fn update_instance<C: ConnectionTrait>(
    conn: &C,
    update: sea_orm::UpdateMany<Ti>,
) -> Result<Option<task_instance::Model>, DbErr> {
    Ok(update.exec_with_returning(conn).await?.into_iter().next())
}

/// The most ids one statement lists: far under SQLite's and PostgreSQL's
/// bound-parameter limits, and small enough to keep a statement's plan cheap.
pub(crate) const IN_LIST_MAX: usize = 1000;

/// Runs the update `build` makes for each [`IN_LIST_MAX`] chunk of `ids`
/// and returns every updated row.
pub(crate) async fn update_chunked<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    build: impl Fn(&[i64]) -> sea_orm::UpdateMany<Ti>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    let mut rows = Vec::new();
    for chunk in ids.chunks(IN_LIST_MAX) {
        rows.extend(build(chunk).exec_with_returning(conn).await?);
    }
    Ok(rows)
}
