//! A DAG's alerts: what was noticed, where it went and how delivery went
//! (`datajump_shared::alerts`; the ticker sends them).

use axum::Json as AxumJson;
use axum::extract::State;
use datajump_shared::entities::alert;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};

use self::dto::AlertDto;
use super::shared::{find_dag, paging};
use crate::AppState;
use crate::dto::{Page, PageQuery};
use crate::error::Result;
use crate::extract::{Path, Query};

pub mod dto;

/// `GET /api/v1/dags/{dagId}/alerts`: the DAG's alerts, newest first.
pub async fn list(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Query(query): Query<PageQuery>,
) -> Result<AxumJson<Page<AlertDto>>> {
    find_dag(&state, dag_id).await?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let paginator = alert::Entity::find()
        .filter(alert::Column::DagId.eq(dag_id))
        .order_by_desc(alert::Column::Id)
        .paginate(&state.db, page_size);
    let total = paginator.num_items().await?;
    let rows = paginator.fetch_page(page - 1).await?;
    Ok(AxumJson(Page {
        items: rows.into_iter().map(AlertDto::from).collect(),
        total,
        page,
        page_size,
    }))
}
