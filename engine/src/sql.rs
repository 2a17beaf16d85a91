//! Statement helpers the transitions share.

use sea_orm::sea_query::Expr;
use sea_orm::{ConnectionTrait, DbErr};

use datajump_shared::entities::{StoredJson, task_instance};
use datajump_shared::problem::{Problem, Reason};

pub(crate) type Ti = task_instance::Entity;

pub(crate) type TiCol = task_instance::Column;

/// `update` giving the instance `reason`: its English words and, beside
/// them, its code and values.
pub(crate) fn with_reason(
    update: sea_orm::UpdateMany<Ti>,
    reason: &Reason,
) -> sea_orm::UpdateMany<Ti> {
    update
        .col_expr(TiCol::Reason, Expr::value(reason.text()))
        .col_expr(TiCol::ReasonProblem, Expr::value(stored_problem(reason)))
}

/// What `reason_problem` (`error_problem` of an attempt) holds for `reason`.
pub(crate) fn stored_problem(reason: &Reason) -> Option<StoredJson<Problem>> {
    reason.problem().map(StoredJson::new)
}

pub(crate) async fn update_instance<C: ConnectionTrait>(
    conn: &C,
    update: sea_orm::UpdateMany<Ti>,
) -> Result<Option<task_instance::Model>, DbErr> {
    Ok(update.exec_with_returning(conn).await?.into_iter().next())
}

/// The most ids one statement lists: far under SQLite's and PostgreSQL's
/// bound-parameter limits, and small enough to keep a statement's plan cheap.
pub(crate) const IN_LIST_MAX: usize = 1000;

/// Rows one multi-row INSERT carries: a few thousand bound parameters at
/// most, far under either database's limit.
pub(crate) const INSERT_CHUNK: usize = 200;

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
