//! `/healthz` (the process answers) and `/readyz` (it can serve: the
//! database and NATS are both reachable), for `datajump up` and deployments.
//! Readiness checks the two things every request needs, so a load balancer
//! stops sending traffic to an instance that cannot serve it.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use crate::AppState;

/// The body of both probes.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Health {
    /// `ok` or `unavailable`.
    pub status: &'static str,
    /// `ok`, `unreachable` or `unchecked`.
    pub database: &'static str,
    /// `ok`, `unreachable` or `unchecked`.
    pub nats: &'static str,
}

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
    let database = if state.db.ping().await.is_ok() {
        "ok"
    } else {
        "unreachable"
    };
    let nats = match state.nats.connection_state() {
        async_nats::connection::State::Connected => "ok",
        _ => "unreachable",
    };
    let ready = database == "ok" && nats == "ok";
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(Health {
            status: if ready { "ok" } else { "unavailable" },
            database,
            nats,
        }),
    )
}
