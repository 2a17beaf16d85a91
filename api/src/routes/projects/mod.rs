//! `GET /api/v1/projects`: the projects a caller's token reaches (all of
//! them, or its own), for a page's project filter. Projects are created
//! with `datajump project create`.

use axum::Json as AxumJson;
use axum::extract::{Extension, State};
use chrono::{DateTime, Utc};
use datajump_shared::entities::project;
use serde::{Deserialize, Serialize};

use super::shared::{CallerOf, paging};
use crate::AppState;
use crate::dto::{Page, PageQuery};
use crate::error::Result;
use crate::extract::Query;

/// A project.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectDto {
    /// Its id: a DAG's `projectId`.
    pub id: i64,
    /// Its unique name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

impl From<project::Model> for ProjectDto {
    fn from(row: project::Model) -> ProjectDto {
        ProjectDto {
            id: row.id,
            name: row.name,
            description: row.description,
            created_at: row.created_at,
        }
    }
}

/// `GET /api/v1/projects?page=&pageSize=`: the projects within reach, by id.
pub async fn list(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Query(query): Query<PageQuery>,
) -> Result<AxumJson<Page<ProjectDto>>> {
    let caller = crate::reach::caller(caller)?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let within: Vec<ProjectDto> = datajump_store::projects::list(&state.db)
        .await?
        .into_iter()
        .filter(|p| caller.reach.includes(p.id))
        .map(ProjectDto::from)
        .collect();
    Ok(AxumJson(Page::of_all(within, page, page_size)))
}
