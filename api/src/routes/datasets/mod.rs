//! Datasets: `GET /api/v1/datasets` (each with the DAGs that write it and
//! the data schedules that wait for it, the lineage), `GET
//! /api/v1/datasets/{name}`, its events at `GET …/{name}/events`, and `POST
//! …/{name}/events` to announce a dataset written outside DataJump, which
//! starts every data schedule it completes.

use axum::Json as AxumJson;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use chrono::Utc;
use datajump_engine::Announcement;
use datajump_shared::datasets::{self, Announced, EventSource, Written};
use datajump_shared::entities::dag;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use tracing::info;

use self::dto::{AnnouncedDto, DatasetDto, DatasetEventDto, DatasetEventQuery, DatasetQuery};
use super::shared::{CallerOf, paging, project_of};
use crate::AppState;
use crate::dto::Page;
use crate::error::{Error, Result};
use crate::extract::{Path, Query, parse_json};

pub mod dto;

fn checked_name(name: &str) -> Result<()> {
    datasets::validate_name(name).map_err(|e| Error::bad_request(e.to_string()))
}

/// `GET /api/v1/datasets`: a project's datasets by name, with the tasks
/// that write each and the data schedules that wait for it.
pub async fn list(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Query(query): Query<DatasetQuery>,
) -> Result<AxumJson<Page<DatasetDto>>> {
    let caller = crate::reach::caller(caller)?;
    let project = project_of(&caller, query.project)?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let all: Vec<DatasetDto> = datajump_store::datasets::list(&state.db, project)
        .await?
        .into_iter()
        .map(|dataset| DatasetDto::of(project, dataset))
        .collect();
    Ok(AxumJson(Page::of_all(all, page, page_size)))
}

/// `GET /api/v1/datasets/{name}`: one dataset; 404 when nothing writes
/// it, waits for it or announced it.
pub async fn show(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Path(name): Path<String>,
    Query(query): Query<DatasetQuery>,
) -> Result<AxumJson<DatasetDto>> {
    let caller = crate::reach::caller(caller)?;
    checked_name(&name)?;
    let project = project_of(&caller, query.project)?;
    datajump_store::datasets::show(&state.db, project, &name)
        .await?
        .map(|dataset| AxumJson(DatasetDto::of(project, dataset)))
        .ok_or_else(|| {
            Error::not_found(format!(
                "no dataset '{name}' in project {project}: no task writes it, no schedule waits for it and no event names it"
            ))
        })
}

/// `GET /api/v1/datasets/{name}/events`: its events, newest first.
pub async fn events(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Path(name): Path<String>,
    Query(query): Query<DatasetEventQuery>,
) -> Result<AxumJson<Page<DatasetEventDto>>> {
    let caller = crate::reach::caller(caller)?;
    checked_name(&name)?;
    let project = project_of(&caller, query.project)?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let (items, total) = datajump_store::datasets::events(
        &state.db,
        project,
        &name,
        query.partition.as_deref(),
        page,
        page_size,
    )
    .await?;
    Ok(AxumJson(Page {
        items: items.into_iter().map(DatasetEventDto::from).collect(),
        total,
        page,
        page_size,
    }))
}

/// `POST /api/v1/datasets/{name}/events`: records that the dataset (or one
/// partition) was written and starts the runs of every data schedule this
/// completes (201). The body is optional: `{ "partition": "2024-01-15",
/// "metadata": { … } }`.
pub async fn announce(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, AxumJson<AnnouncedDto>)> {
    let caller = crate::reach::caller(caller)?;
    checked_name(&name)?;
    let body: Announced = if body.iter().all(u8::is_ascii_whitespace) {
        Announced::default()
    } else {
        parse_json(&body)?
    };
    body.check()
        .map_err(|e| Error::bad_request(e.to_string()))?;
    let project = project_of(&caller, body.project)?;
    if datajump_store::projects::find(&state.db, project)
        .await?
        .is_none()
    {
        return Err(Error::not_found(format!(
            "no project with id {project} (`datajump project list`)"
        )));
    }
    let (mut recorded, effects) = datajump_engine::announce(
        &state.db,
        vec![Announcement {
            project_id: project,
            written: Written {
                dataset: name.clone(),
                partition: body.partition,
            },
            source: EventSource::Api,
            dag_run_id: None,
            task_instance_id: None,
            metadata: body.metadata,
            origin: None,
        }],
        Utc::now(),
    )
    .await?;
    let dag_ids: Vec<i64> = effects.fires().iter().map(|fire| fire.dag_id).collect();
    let starts = dag::Entity::find()
        .filter(dag::Column::Id.is_in(dag_ids))
        .order_by_asc(dag::Column::Name)
        .all(&state.db)
        .await?
        .into_iter()
        .map(|dag| dag.name)
        .collect();
    // Recorded and fired: a lost publish is sent again by the ticker.
    let _ = effects.publish(&state.bus).await;
    let event = recorded
        .pop()
        .ok_or_else(|| Error::Internal("the event was not recorded".to_owned()))?;
    info!(dataset = %name, partition = event.partition.as_deref().unwrap_or(""), by = %caller.name, "dataset announced through the API");
    Ok((
        StatusCode::CREATED,
        AxumJson(AnnouncedDto {
            event: event.into(),
            starts,
        }),
    ))
}
