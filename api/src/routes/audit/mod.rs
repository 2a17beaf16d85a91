//! The audit log: every change made through the API or an operator
//! command, newest first (`datajump_store::audit`; written by
//! [`crate::auth`] after each change is answered).

use axum::Json as AxumJson;
use axum::extract::State;

use self::dto::AuditDto;
use super::shared::paging;
use crate::AppState;
use crate::dto::{Page, PageQuery};
use crate::error::Result;
use crate::extract::Query;

pub mod dto;

/// `GET /api/v1/audit`: the audit log, newest first.
pub async fn list(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
) -> Result<AxumJson<Page<AuditDto>>> {
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let (rows, total) = datajump_store::audit::list(&state.db, page, page_size).await?;
    Ok(AxumJson(Page {
        items: rows.into_iter().map(AuditDto::from).collect(),
        total,
        page,
        page_size,
    }))
}
