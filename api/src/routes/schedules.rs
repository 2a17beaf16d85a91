//! Schedules (`003_*` §6.5): the DAG's primary schedule, and cron
//! validation.
//!
//! A DAG may have several schedules (`000_*` §4.3); the singular
//! `/schedule` addresses the DAG's only one and answers 409 when it has
//! several (they are edited through the DAG's `schedules` with
//! `PUT /api/v1/dags/{dagId}`). Changes are stored through the DAG's
//! definition, so they are validated and announced to tickers like any
//! `dag apply`.

use axum::Json as AxumJson;
use axum::extract::State;
use chrono::{DateTime, NaiveTime, TimeZone, Utc};
use datajump_shared::cron::{CronExpr, parse_time_zone};
use datajump_shared::entities::{dag, schedule};
use serde_json::{Map, Value, json};

use super::{find_dag, store};
use crate::AppState;
use crate::definition;
use crate::dto::{
    ScheduleDisable, ScheduleDto, ScheduleEnable, ScheduleUpdate, ValidateCronRequest,
    ValidateCronResponse,
};
use crate::error::{Error, Result};
use crate::extract::{Json, JsonOrEmpty, Path};

/// Most fire times `validate-cron` lists.
pub const MAX_FIRE_TIMES: u32 = 100;

/// The DAG's only schedule: `None` if it has none, 409 if it has several.
async fn primary(state: &AppState, dag: &dag::Model) -> Result<Option<schedule::Model>> {
    let mut schedules = definition::schedules_of(&state.db, dag.id).await?;
    if schedules.len() > 1 {
        return Err(Error::conflict(format!(
            "DAG '{}' has {} schedules ({}): /schedule addresses a DAG with one; edit its `schedules` with PUT /api/v1/dags/{}",
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

/// The next fire of a cron schedule after now, within its start and end
/// dates, as RFC 3339 in its zone.
fn next_fire(row: &schedule::Model, cron: &CronExpr) -> Option<String> {
    let zone = parse_time_zone(&row.timezone).ok()?;
    let now = Utc::now().with_timezone(&zone);
    let after = match row.start_date {
        Some(start) => {
            let start = zone
                .from_local_datetime(&start.and_time(NaiveTime::MIN))
                .earliest()?;
            // One second earlier, so a fire at the very start counts.
            let start = start - chrono::Duration::seconds(1);
            if start > now { start } else { now }
        }
        None => now,
    };
    let next = cron.next_after(&after)?;
    if let Some(end) = row.end_date
        && next.date_naive() > end
    {
        return None;
    }
    Some(next.to_rfc3339())
}

fn dto(row: &schedule::Model) -> ScheduleDto {
    let cron = row
        .cron_expr
        .as_deref()
        .filter(|_| row.kind != "EVENT")
        .and_then(|c| CronExpr::parse(c).ok());
    ScheduleDto {
        dag_id: row.dag_id,
        schedule_id: row.id,
        name: row.name.clone(),
        kind: row.kind.clone(),
        cron_expression: row.cron_expr.clone(),
        cron_description: cron.as_ref().map(CronExpr::describe),
        event_name: row.event_name.clone(),
        enabled: row.active,
        next_fire_time: cron
            .as_ref()
            .filter(|_| row.active)
            .and_then(|c| next_fire(row, c)),
        timezone: row.timezone.clone(),
    }
}

/// Checks a cron expression given in field `field`.
fn check_cron(field: &str, expression: &str) -> Result<()> {
    CronExpr::parse(expression)
        .map(|_| ())
        .map_err(|e| Error::bad_request(format!("invalid field `{field}`: {e}")))
}

/// Changes the DAG's only schedule (or creates one, named `default`, when
/// `create` allows) with `change`, stores the definition, and answers the
/// schedule as stored.
async fn change_schedule(
    state: &AppState,
    dag_id: i64,
    create: bool,
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
    let mut file = definition::load(&state.db, &dag).await?;
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
    file.insert("schedules".into(), json!([schedule]));
    let parsed = definition::parse(&file)?;
    store(state, &parsed).await?;
    match primary(state, &dag).await? {
        Some(row) => Ok(AxumJson(dto(&row))),
        None => Err(Error::Internal(format!(
            "the schedule of DAG {dag_id} vanished after it was stored"
        ))),
    }
}

/// Sets a schedule's cron expression (replacing an event trigger).
fn set_cron(schedule: &mut Map<String, Value>, expression: &str) {
    schedule.remove("event");
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
        Some(row) => Ok(AxumJson(dto(&row))),
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
        parse_time_zone(zone)
            .map_err(|e| Error::bad_request(format!("invalid field `timezone`: {e}")))?;
    }
    change_schedule(&state, dag_id, true, |schedule| {
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
    change_schedule(&state, dag_id, create, |schedule| {
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
    change_schedule(&state, dag_id, false, |schedule| {
        schedule.insert("active".into(), json!(false));
    })
    .await
}

fn invalid(zone: String, error: String) -> AxumJson<ValidateCronResponse> {
    AxumJson(ValidateCronResponse {
        valid: false,
        description: None,
        next_fire_time: None,
        next_fire_times: None,
        timezone: zone,
        error: Some(error),
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
        Err(e) => return Ok(invalid(zone_name, e.to_string())),
    };
    let cron = match CronExpr::parse(&body.cron_expression) {
        Ok(cron) => cron,
        Err(e) => return Ok(invalid(zone.name().to_owned(), e.to_string())),
    };
    let now: DateTime<_> = Utc::now().with_timezone(&zone);
    let next_fire_times = body.count.map(|count| {
        cron.iter_after(&now)
            .take(count as usize)
            .map(|t| t.to_rfc3339())
            .collect::<Vec<_>>()
    });
    Ok(AxumJson(ValidateCronResponse {
        valid: true,
        description: Some(cron.describe()),
        next_fire_time: cron.next_after(&now).map(|t| t.to_rfc3339()),
        next_fire_times,
        timezone: zone.name().to_owned(),
        error: None,
    }))
}
