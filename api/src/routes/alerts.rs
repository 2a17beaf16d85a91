//! A DAG's alerts: what was noticed, where it went and how delivery went
//! (`datajump_shared::alerts`; the ticker sends them).

use axum::Json as AxumJson;
use axum::extract::State;
use chrono::{DateTime, Utc};
use datajump_shared::entities::alert;
use datajump_shared::kinds::{AlertKind, AlertState};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde::Serialize;

use super::{find_dag, paging};
use crate::AppState;
use crate::dto::{Page, PageQuery};
use crate::error::Result;
use crate::extract::{Path, Query};

/// One alert.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlertDto {
    /// Id.
    pub id: i64,
    /// `run_failed`, `task_failed`, `timeout`, `sla_miss` or `test`.
    pub kind: AlertKind,
    /// The run it is about.
    pub run_id: Option<i64>,
    /// The task instance it is about.
    pub task_instance_id: Option<i64>,
    /// The webhook's URL.
    pub webhook: String,
    /// `PENDING`, `SENDING`, `SENT` or `FAILED`.
    pub status: AlertState,
    /// Delivery attempts so far.
    pub attempts: i32,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// HTTP status of the last answer.
    pub response_status: Option<i32>,
    /// The JSON body sent.
    pub payload: serde_json::Value,
    /// When it was noticed.
    pub created_at: DateTime<Utc>,
    /// When the webhook accepted it.
    pub sent_at: Option<DateTime<Utc>>,
}

impl From<alert::Model> for AlertDto {
    fn from(row: alert::Model) -> AlertDto {
        AlertDto {
            webhook: row.target["url"].as_str().unwrap_or_default().to_owned(),
            id: row.id,
            kind: row.kind,
            run_id: row.dag_run_id,
            task_instance_id: row.task_instance_id,
            status: row.status,
            attempts: row.attempts,
            last_error: row.last_error,
            response_status: row.response_status,
            payload: row.payload,
            created_at: row.created_at,
            sent_at: row.sent_at,
        }
    }
}

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
