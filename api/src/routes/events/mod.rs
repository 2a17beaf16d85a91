//! External events: `POST /api/v1/events/{name}?project=ID` publishes the
//! JSON body to `dj.event.{project}.{name}` through JetStream — the same
//! message a user can publish with the `nats` CLI — and a resolver fires
//! every DAG of that project whose event schedule names it, with the body's
//! top-level fields as run parameters.

use axum::Json as AxumJson;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use datajump_shared::entities::dag;
use datajump_shared::messages::{EventPayload, EventPayloadError};
use datajump_shared::naming::validate_event;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use tracing::info;

use self::dto::{EventQuery, EventResponse};
use super::shared::{CallerOf, project_of};
use crate::AppState;

use crate::error::{Error, Result};
use crate::extract::{Path, Query, parse_json};

pub mod dto;

/// `POST /api/v1/events/{name}`: publishes the event (202). The name is
/// dot-separated `[a-z0-9_-]{1,64}` tokens; the body is any JSON (an empty
/// body is `{}`). The event belongs to `?project=` (default: the token's
/// project, or the default one), which must be within the caller's reach.
pub async fn publish(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Path(name): Path<String>,
    Query(query): Query<EventQuery>,
    body: Bytes,
) -> Result<(StatusCode, AxumJson<EventResponse>)> {
    let caller = crate::reach::caller(caller)?;
    validate_event(&name).map_err(|e| Error::bad_request(e.to_string()))?;
    let project = project_of(&caller, query.project)?;
    let payload = if body.iter().all(u8::is_ascii_whitespace) {
        Bytes::from_static(b"{}")
    } else {
        parse_json::<serde_json::Value>(&body)?;
        match EventPayload::parse(&body) {
            Ok(_) => body,
            Err(e @ EventPayloadError::TooLarge(_)) => {
                return Err(Error::PayloadTooLarge(e.to_string()));
            }
            Err(e) => return Err(Error::bad_request(e.to_string())),
        }
    };
    let subject = state.bus.names().event(project, &name);
    let ack = state
        .bus
        .js()
        .publish(subject.clone(), payload)
        .await
        .map_err(|e| Error::Nats(format!("publish to {subject}: {e}")))?
        .await
        .map_err(|e| Error::Nats(format!("publish to {subject}: {e}")))?;
    info!(event = %name, project, sequence = ack.sequence, "event published through the API");
    let dag_ids: Vec<i64> = datajump_store::catalog::event_schedules(&state.db, project, &name)
        .await?
        .iter()
        .map(|(schedule, _)| schedule.dag_id)
        .collect();
    let (starts, offline): (Vec<dag::Model>, Vec<dag::Model>) = dag::Entity::find()
        .filter(dag::Column::Id.is_in(dag_ids))
        .order_by_asc(dag::Column::Name)
        .all(&state.db)
        .await?
        .into_iter()
        .partition(|dag| dag.online);
    let names = |dags: Vec<dag::Model>| dags.into_iter().map(|d| d.name).collect();
    Ok((
        StatusCode::ACCEPTED,
        AxumJson(EventResponse {
            event: name,
            project,
            subject,
            stream: ack.stream,
            sequence: ack.sequence,
            starts: names(starts),
            offline: names(offline),
        }),
    ))
}
