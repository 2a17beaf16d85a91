//! `/healthz` (the process answers) and `/readyz` (it can serve: the
//! database and NATS are both reachable), for `datajump up` and deployments.
//! Readiness checks the two things every request needs, so a load balancer
//! stops sending traffic to an instance that cannot serve it. A role's
//! `--metrics-addr` serves the same two probes ([`crate::metrics::Probes`]),
//! where readiness also fails while the role drains after SIGTERM.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use sea_orm::DatabaseConnection;

use self::dto::Health;
use crate::AppState;

pub mod dto;

/// `GET /healthz`: the process is up (nothing else is checked).
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        database: "unchecked",
        nats: "unchecked",
    })
}

/// `GET /readyz`: 200 when the database and NATS answer, 503 otherwise.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    readiness(&state.db, &state.nats, false).await
}

/// 200 when the database and NATS answer and the process is not `draining`,
/// 503 otherwise; the body says which.
pub(crate) async fn readiness(
    db: &DatabaseConnection,
    nats: &async_nats::Client,
    draining: bool,
) -> (StatusCode, Json<Health>) {
    let database = if db.ping().await.is_ok() {
        "ok"
    } else {
        "unreachable"
    };
    let nats = match nats.connection_state() {
        async_nats::connection::State::Connected => "ok",
        _ => "unreachable",
    };
    let status = if draining {
        "draining"
    } else if database == "ok" && nats == "ok" {
        "ok"
    } else {
        "unavailable"
    };
    let code = if status == "ok" {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        Json(Health {
            status,
            database,
            nats,
        }),
    )
}
