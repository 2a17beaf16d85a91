//! The HTTP control plane (axum).
//!
//! For now it serves health and readiness, so `datajump up` and deployments
//! have a probe; the REST API of `003_*` §6 grows here. Readiness checks the
//! two things every request will need — the database and NATS — so a load
//! balancer stops sending traffic to an instance that cannot serve it.

use std::net::SocketAddr;

use axum::{Json, Router, extract::State, http::StatusCode, routing::get};
use sea_orm::DatabaseConnection;
use serde::Serialize;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// How the API runs.
#[derive(Clone)]
pub struct Config {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection.
    pub nats: async_nats::Client,
    /// Where to listen.
    pub addr: SocketAddr,
}

/// Why the API stopped.
#[derive(Debug, Error)]
pub enum ApiError {
    /// Could not listen or serve.
    #[error("API server on {addr}: {source}")]
    Serve {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
    database: &'static str,
    nats: &'static str,
}

async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        database: "unchecked",
        nats: "unchecked",
    })
}

async fn readyz(State(config): State<Config>) -> (StatusCode, Json<Health>) {
    let database = if config.db.ping().await.is_ok() {
        "ok"
    } else {
        "unreachable"
    };
    let nats = match config.nats.connection_state() {
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

/// The router, separate from [`serve`] so tests can drive it.
pub fn router(config: Config) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(config)
}

/// Serves until `shutdown` is cancelled.
pub async fn serve(config: Config, shutdown: CancellationToken) -> Result<(), ApiError> {
    let addr = config.addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ApiError::Serve { addr, source })?;
    info!(%addr, "API listening");
    axum::serve(listener, router(config))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|source| ApiError::Serve { addr, source })
}
