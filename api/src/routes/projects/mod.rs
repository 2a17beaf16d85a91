//! `GET /api/v1/projects`: the projects a caller's token reaches (all of
//! them, or its own), for a page's project filter. Projects are created
//! with `datajump project create`.

use axum::Json as AxumJson;
use axum::extract::{Extension, State};

use self::dto::ProjectDto;
use super::shared::{CallerOf, paging};
use crate::AppState;
use crate::dto::{Page, PageQuery};
use crate::error::Result;
use crate::extract::Query;

pub mod dto;

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
