//! Schedules: the DAG's primary schedule, its `/schedules`
//! collection, and cron validation.
//!
//! A DAG may have several schedules (the data model allows many): the collection
//! `/api/v1/dags/{dagId}/schedules` lists, creates, reads, changes, pauses
//! and removes them by id, while the product API's singular `/schedule`
//! addresses the DAG's only one and answers 409 when it has several.
//! Every change is stored through the DAG's definition, so it is validated
//! and announced to tickers like any `dag apply`.

use axum::Json as AxumJson;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use datajump_cron::{CronError, CronExpr, parse_time_zone};
use datajump_shared::entities::{dag, schedule};
use datajump_shared::problem::Problem;
use datajump_store::catalog::Origin;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Map, Value, json};

use self::dto::{
    ScheduleBody, ScheduleDisable, ScheduleEnable, ScheduleUpdate, ValidateCronRequest,
    ValidateCronResponse,
};
use super::shared::{find_dag, paging, schedule_dto, store};
use crate::AppState;
use crate::definition;
use crate::dto::{Page, PageQuery, ScheduleDto};
use crate::error::{Error, Result};
use crate::extract::{Json, JsonOrEmpty, Path, Query};

pub mod dto;

/// Most fire times `validate-cron` lists.
pub const MAX_FIRE_TIMES: u32 = 100;

/// The DAG's only schedule: `None` if it has none, 409 if it has several.
async fn primary(state: &AppState, dag: &dag::Model) -> Result<Option<schedule::Model>> {
    let mut schedules = definition::schedules_of(&state.db, dag.id).await?;
    if schedules.len() > 1 {
        return Err(Error::conflict(format!(
            "DAG '{}' has {} schedules ({}): /schedule addresses a DAG with one; use /api/v1/dags/{}/schedules/{{scheduleId}}",
            dag.name,
            schedules.len(),
            schedules
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            dag.id
        )));
    }
    Ok(schedules.pop())
}

/// Checks a cron expression given in field `field`.
fn check_cron(field: &str, expression: &str) -> Result<()> {
    CronExpr::parse(expression).map(|_| ()).map_err(|e| {
        Error::bad_request_coded(format!("invalid field `{field}`: {e}"), Problem::from(&e))
    })
}

/// Changes the DAG's only schedule (or creates one, named `default`, when
/// `create` allows) with `change`, stores the definition, and answers the
/// schedule as stored.
async fn change_schedule(
    state: &AppState,
    dag_id: i64,
    create: bool,
    origin: Origin<'_>,
    change: impl FnOnce(&mut Map<String, Value>),
) -> Result<AxumJson<ScheduleDto>> {
    let dag = find_dag(state, dag_id).await?;
    let existing = primary(state, &dag).await?;
    if existing.is_none() && !create {
        return Err(Error::not_found(format!(
            "DAG '{}' has no schedule; create one with PUT /api/v1/dags/{dag_id}/schedule",
            dag.name
        )));
    }
    let mut schedule = match &existing {
        Some(row) => definition::schedule_file(row)
            .as_object()
            .cloned()
            .unwrap_or_default(),
        None => {
            let mut fresh = Map::new();
            fresh.insert("name".into(), json!("default"));
            fresh
        }
    };
    change(&mut schedule);
    save_schedules(state, &dag, origin, |schedules| {
        *schedules = vec![Value::Object(schedule)];
        Ok(())
    })
    .await?;
    match primary(state, &dag).await? {
        Some(row) => Ok(AxumJson(schedule_dto(&row))),
        None => Err(Error::Internal(format!(
            "the schedule of DAG {dag_id} vanished after it was stored"
        ))),
    }
}

/// Stores the DAG's definition with its schedules (file form) changed by
/// `edit`: validated, versioned and announced to tickers as `dag apply`.
async fn save_schedules(
    state: &AppState,
    dag: &dag::Model,
    origin: Origin<'_>,
    edit: impl FnOnce(&mut Vec<Value>) -> Result<()>,
) -> Result<()> {
    let mut file = definition::load(&state.db, dag).await?;
    let mut schedules = match file.remove("schedules") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    edit(&mut schedules)?;
    file.insert("schedules".into(), Value::Array(schedules));
    let parsed = definition::parse(&file)?;
    store(state, &parsed, origin).await?;
    Ok(())
}

/// Sets a schedule's cron expression (replacing an event trigger).
fn set_cron(schedule: &mut Map<String, Value>, expression: &str) {
    schedule.remove("event");
    schedule.remove("after");
    schedule.insert("cron".into(), json!(expression));
}

/// `GET /api/v1/dags/{dagId}/schedule`: the DAG's schedule, with its cron
/// in words and its next fire time; 404 without one, 409 with several.
pub async fn get(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
) -> Result<AxumJson<ScheduleDto>> {
    let dag = find_dag(&state, dag_id).await?;
    match primary(&state, &dag).await? {
        Some(row) => Ok(AxumJson(schedule_dto(&row))),
        None => Err(Error::not_found(format!(
            "DAG '{}' has no schedule",
            dag.name
        ))),
    }
}

/// `PUT /api/v1/dags/{dagId}/schedule` `{ cronExpression, enabled?,
/// timezone? }`: sets (or creates) the DAG's schedule. `enabled` left out
/// keeps the current state (a new schedule is enabled).
pub async fn put(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Json(body): Json<ScheduleUpdate>,
) -> Result<AxumJson<ScheduleDto>> {
    check_cron("cronExpression", &body.cron_expression)?;
    if let Some(zone) = &body.timezone {
        parse_time_zone(zone).map_err(|e| {
            Error::bad_request_coded(format!("invalid field `timezone`: {e}"), Problem::from(&e))
        })?;
    }
    change_schedule(&state, dag_id, true, Origin::Edit, |schedule| {
        set_cron(schedule, &body.cron_expression);
        if let Some(enabled) = body.enabled {
            schedule.insert("active".into(), json!(enabled));
        }
        if let Some(zone) = &body.timezone {
            schedule.insert("timezone".into(), json!(zone));
        }
    })
    .await
}

/// `POST /api/v1/dags/{dagId}/schedule/enable` `{ cronExpression? }`:
/// resumes the schedule (setting its cron when given; a DAG without a
/// schedule needs one).
pub async fn enable(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    JsonOrEmpty(body): JsonOrEmpty<ScheduleEnable>,
) -> Result<AxumJson<ScheduleDto>> {
    if let Some(expression) = &body.cron_expression {
        check_cron("cronExpression", expression)?;
    }
    let create = body.cron_expression.is_some();
    // Resuming is the operator's; setting a cron is an edit.
    let origin = if create {
        Origin::Edit
    } else {
        Origin::Operation
    };
    change_schedule(&state, dag_id, create, origin, |schedule| {
        if let Some(expression) = &body.cron_expression {
            set_cron(schedule, expression);
        }
        schedule.insert("active".into(), json!(true));
    })
    .await
}

/// `POST /api/v1/dags/{dagId}/schedule/disable`: pauses the schedule.
pub async fn disable(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    JsonOrEmpty(_body): JsonOrEmpty<ScheduleDisable>,
) -> Result<AxumJson<ScheduleDto>> {
    change_schedule(&state, dag_id, false, Origin::Operation, |schedule| {
        schedule.insert("active".into(), json!(false));
    })
    .await
}

/// The schedule `schedule_id` of DAG `dag_id` (with the DAG), or 404.
async fn find_schedule(
    state: &AppState,
    dag_id: i64,
    schedule_id: i64,
) -> Result<(dag::Model, schedule::Model)> {
    let dag = find_dag(state, dag_id).await?;
    let row = schedule::Entity::find_by_id(schedule_id)
        .filter(schedule::Column::DagId.eq(dag_id))
        .one(&state.db)
        .await?
        .ok_or_else(|| {
            Error::not_found(format!(
                "DAG '{}' has no schedule with id {schedule_id}",
                dag.name
            ))
        })?;
    Ok((dag, row))
}

/// The schedule of DAG `dag_id` named `name`, as stored.
async fn schedule_named(state: &AppState, dag_id: i64, name: &str) -> Result<schedule::Model> {
    schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag_id))
        .filter(schedule::Column::Name.eq(name))
        .one(&state.db)
        .await?
        .ok_or_else(|| {
            Error::Internal(format!(
                "schedule '{name}' of DAG {dag_id} vanished after it was stored"
            ))
        })
}

/// Writes the fields `body` gives into `schedule` (file form); the name is
/// the caller's business.
fn apply_body(schedule: &mut Map<String, Value>, body: &ScheduleBody) -> Result<()> {
    let triggers = [
        body.cron_expression.is_some(),
        body.event_name.is_some(),
        body.after.is_some(),
    ];
    if triggers.iter().filter(|given| **given).count() > 1 {
        return Err(Error::bad_request(
            "give one of `cronExpression`, `eventName` and `after`: a schedule has one trigger",
        ));
    }
    if let Some(expression) = &body.cron_expression {
        check_cron("cronExpression", expression)?;
        set_cron(schedule, expression);
    }
    if let Some(event) = &body.event_name {
        schedule.remove("cron");
        schedule.remove("after");
        schedule.insert("event".into(), json!(event));
    }
    if let Some(upstream) = &body.after {
        schedule.remove("cron");
        schedule.remove("event");
        schedule.insert("after".into(), json!(upstream));
    }
    let fields = [
        ("active", body.enabled.map(Value::from)),
        ("timezone", body.timezone.clone().map(Value::from)),
        ("start_date", body.start_date.map(|d| json!(d))),
        ("end_date", body.end_date.map(|d| json!(d))),
        ("catchup", body.catchup.clone().map(Value::from)),
        ("catchup_limit", body.catchup_limit.map(Value::from)),
        ("misfire_grace", body.misfire_grace.map(Value::from)),
        ("biz_date_offset", body.biz_date_offset.map(Value::from)),
        (
            "timeout",
            body.timeout.map(|minutes| json!(u64::from(minutes) * 60)),
        ),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            schedule.insert(key.into(), value);
        }
    }
    Ok(())
}

/// `GET /api/v1/dags/{dagId}/schedules?page=&pageSize=`: the DAG's
/// schedules in id order.
pub async fn list(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Query(query): Query<PageQuery>,
) -> Result<AxumJson<Page<ScheduleDto>>> {
    find_dag(&state, dag_id).await?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let paginator = schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag_id))
        .order_by_asc(schedule::Column::Id)
        .paginate(&state.db, page_size);
    let total = paginator.num_items().await?;
    let rows = paginator.fetch_page(page - 1).await?;
    Ok(AxumJson(Page {
        items: rows.iter().map(schedule_dto).collect(),
        total,
        page,
        page_size,
    }))
}

/// `POST /api/v1/dags/{dagId}/schedules`: adds a schedule (201); 409 if
/// the DAG has one with that name.
pub async fn create(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Json(body): Json<ScheduleBody>,
) -> Result<Response> {
    let dag = find_dag(&state, dag_id).await?;
    let name = match body.name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => return Err(Error::bad_request("missing field `name`")),
    };
    if body.cron_expression.is_none() && body.event_name.is_none() && body.after.is_none() {
        return Err(Error::bad_request(
            "missing field `cronExpression` (or `eventName` for an event trigger, `after` for a dependency trigger)",
        ));
    }
    let mut schedule = Map::new();
    schedule.insert("name".into(), json!(name));
    apply_body(&mut schedule, &body)?;
    save_schedules(&state, &dag, Origin::Edit, |schedules| {
        if schedules.iter().any(|s| s["name"] == name.as_str()) {
            return Err(Error::conflict(format!(
                "DAG '{}' already has a schedule named '{name}'",
                dag.name
            )));
        }
        schedules.push(Value::Object(schedule));
        Ok(())
    })
    .await?;
    let row = schedule_named(&state, dag_id, &name).await?;
    let location = format!("/api/v1/dags/{dag_id}/schedules/{}", row.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        AxumJson(schedule_dto(&row)),
    )
        .into_response())
}

/// `GET /api/v1/dags/{dagId}/schedules/{scheduleId}`: one schedule.
pub async fn get_one(
    State(state): State<AppState>,
    Path((dag_id, schedule_id)): Path<(i64, i64)>,
) -> Result<AxumJson<ScheduleDto>> {
    let (_, row) = find_schedule(&state, dag_id, schedule_id).await?;
    Ok(AxumJson(schedule_dto(&row)))
}

/// Changes schedule `schedule_id` of DAG `dag_id` with `body` and answers
/// it as stored; it keeps its id.
async fn change_one(
    state: &AppState,
    dag_id: i64,
    schedule_id: i64,
    body: &ScheduleBody,
) -> Result<AxumJson<ScheduleDto>> {
    let (dag, row) = find_schedule(state, dag_id, schedule_id).await?;
    if let Some(name) = &body.name
        && *name != row.name
    {
        return Err(Error::bad_request(format!(
            "invalid field `name`: a schedule cannot be renamed (it is '{}'); create a new one instead",
            row.name
        )));
    }
    let mut schedule = definition::schedule_file(&row)
        .as_object()
        .cloned()
        .unwrap_or_default();
    apply_body(&mut schedule, body)?;
    // Pausing or resuming alone is the operator's; anything else an edit.
    let origin = if body.only_enabled() {
        Origin::Operation
    } else {
        Origin::Edit
    };
    save_schedules(state, &dag, origin, |schedules| {
        for item in schedules.iter_mut() {
            if item["name"] == row.name.as_str() {
                *item = Value::Object(schedule);
                break;
            }
        }
        Ok(())
    })
    .await?;
    Ok(AxumJson(
        schedule_named(state, dag_id, &row.name)
            .await
            .map(|r| schedule_dto(&r))?,
    ))
}

/// `PUT /api/v1/dags/{dagId}/schedules/{scheduleId}`: changes the fields
/// given, keeps the others.
pub async fn update(
    State(state): State<AppState>,
    Path((dag_id, schedule_id)): Path<(i64, i64)>,
    Json(body): Json<ScheduleBody>,
) -> Result<AxumJson<ScheduleDto>> {
    change_one(&state, dag_id, schedule_id, &body).await
}

/// `POST /api/v1/dags/{dagId}/schedules/{scheduleId}/enable`: resumes it.
pub async fn enable_one(
    State(state): State<AppState>,
    Path((dag_id, schedule_id)): Path<(i64, i64)>,
) -> Result<AxumJson<ScheduleDto>> {
    let body = ScheduleBody {
        enabled: Some(true),
        ..ScheduleBody::default()
    };
    change_one(&state, dag_id, schedule_id, &body).await
}

/// `POST /api/v1/dags/{dagId}/schedules/{scheduleId}/disable`: pauses it.
pub async fn disable_one(
    State(state): State<AppState>,
    Path((dag_id, schedule_id)): Path<(i64, i64)>,
) -> Result<AxumJson<ScheduleDto>> {
    let body = ScheduleBody {
        enabled: Some(false),
        ..ScheduleBody::default()
    };
    change_one(&state, dag_id, schedule_id, &body).await
}

/// `DELETE /api/v1/dags/{dagId}/schedules/{scheduleId}`: removes it (204);
/// the DAG's runs it started stay.
pub async fn delete_one(
    State(state): State<AppState>,
    Path((dag_id, schedule_id)): Path<(i64, i64)>,
) -> Result<StatusCode> {
    let (dag, row) = find_schedule(&state, dag_id, schedule_id).await?;
    save_schedules(&state, &dag, Origin::Edit, |schedules| {
        schedules.retain(|s| s["name"] != row.name.as_str());
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

fn invalid(zone: String, error: &CronError) -> AxumJson<ValidateCronResponse> {
    AxumJson(ValidateCronResponse {
        valid: false,
        description: None,
        next_fire_time: None,
        next_fire_times: None,
        timezone: zone,
        error: Some(error.to_string()),
        problem: Some(Problem::from(error)),
        warning: None,
    })
}

/// `POST /api/v1/dags/schedule/validate-cron` `{ cronExpression,
/// timezone?, count? }`: whether the expression is valid, what it means,
/// its next fire time and, with `count`, the next `count` fire times.
pub async fn validate_cron(
    State(state): State<AppState>,
    Json(body): Json<ValidateCronRequest>,
) -> Result<AxumJson<ValidateCronResponse>> {
    if let Some(count) = body.count
        && !(1..=MAX_FIRE_TIMES).contains(&count)
    {
        return Err(Error::bad_request(format!(
            "invalid field `count`: must be 1-{MAX_FIRE_TIMES}, got {count}"
        )));
    }
    let zone_name = body
        .timezone
        .clone()
        .unwrap_or_else(|| state.timezone.to_string());
    let zone = match parse_time_zone(&zone_name) {
        Ok(zone) => zone,
        Err(e) => return Ok(invalid(zone_name, &e)),
    };
    let cron = match CronExpr::parse(&body.cron_expression) {
        Ok(cron) => cron,
        Err(e) => return Ok(invalid(zone.name().to_owned(), &e)),
    };
    let now: DateTime<_> = Utc::now().with_timezone(&zone);
    let next_fire_times = body.count.map(|count| {
        cron.iter_after(&now)
            .take(count as usize)
            .map(|t| t.to_rfc3339())
            .collect::<Vec<_>>()
    });
    let next_fire_time = cron.next_after(&now).map(|t| t.to_rfc3339());
    let warning = next_fire_time.is_none().then(|| {
        "it never fires: a date that does not exist or a year gone by (a DAG with it is refused)"
            .to_owned()
    });
    Ok(AxumJson(ValidateCronResponse {
        valid: true,
        description: Some(cron.describe()),
        next_fire_time,
        next_fire_times,
        timezone: zone.name().to_owned(),
        error: None,
        problem: None,
        warning,
    }))
}
