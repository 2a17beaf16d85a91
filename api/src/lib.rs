//! The HTTP control plane (axum): the product's REST API and what users
//! need beyond it (kills, external events, the runner list), plus health and
//! readiness probes.
//!
//! Every route lives under `/api/v1` except `/healthz`, `/readyz` and
//! `/metrics`. The
//! API is a thin layer over the same domain code the CLI uses: DAGs are
//! stored by [`datajump_store::catalog::apply`] (so they are validated
//! exactly like DAG files), runs are started by publishing a fire that a
//! resolver takes, and kills go through the engine (`datajump_engine::kill_instance`).
//!
//! Modules: [`routes`] (one module per resource, each with its bodies in
//! its `dto` submodule), [`dto`] (the bodies several routes share),
//! [`definition`] (DAG definitions as JSON), [`error`] (the error shape),
//! [`extract`] (extractors answering bad input with that shape), [`auth`]
//! (who may reach a route), [`reach`] (tokens limited to a project),
//! [`features`] (no DAG using what a live role does not understand),
//! [`browser`] (the rules that keep web pages
//! out), [`metrics`] (`/metrics`, merged beside the route
//! table's routes because the same router also serves a role's
//! `--metrics-addr`, and because it answers Prometheus text, not JSON).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use sea_orm::DatabaseConnection;
use thiserror::Error;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

pub use browser::BrowserRules;

pub mod auth;
pub mod browser;
pub mod chunked;
pub mod definition;
pub mod dto;
pub mod error;
pub mod extract;
pub mod features;
pub mod live;
pub mod metrics;
pub mod reach;
pub mod routes;

/// How the API runs.
#[derive(Clone)]
pub struct Config {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection.
    pub nats: async_nats::Client,
    /// The database's installation, whose identity the message ids carry
    /// ([`datajump_store::installation::identity`]).
    pub installation: datajump_shared::subjects::Installation,
    /// The names of the installation's subjects, streams and buckets
    /// (`--nats-prefix`).
    pub names: datajump_shared::subjects::Namespace,
    /// Copies of each stream and bucket it creates when missing
    /// (`--nats-replicas`).
    pub replicas: datajump_nats::Replicas,
    /// Where to listen.
    pub addr: SocketAddr,
    /// The bearer token every mutating request (POST, PUT, DELETE) must
    /// carry (`DATAJUMP_API_TOKEN`); `None` (or empty) means no token, which
    /// is only allowed on a loopback address.
    pub token: Option<String>,
    /// Zone for manual runs' business dates and new schedules that name
    /// none (`DATAJUMP_TIMEZONE`).
    pub timezone: chrono_tz::Tz,
    /// The names and origins browsers may reach the API by, beyond its
    /// own (`--allowed-hosts`, `--allowed-origins`, `--public-url`).
    pub browser: BrowserRules,
    /// Serve beyond loopback without a token (`--insecure-no-auth`).
    pub insecure_no_auth: bool,
    /// Serve `/metrics` without a token even when tokens are required
    /// (`--public-metrics`): for a Prometheus that cannot send one.
    pub public_metrics: bool,
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
    /// Could not listen or serve `/metrics` on a `--metrics-addr`.
    #[error("metrics server on {addr}: {source}")]
    MetricsServe {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The JetStream topology is missing and could not be created, or NATS
    /// failed.
    #[error(transparent)]
    Nats(#[from] datajump_nats::NatsError),
    /// Asked to listen beyond this machine with no token.
    #[error(
        "refusing to serve the API on {addr} without a token: anyone who can reach it could run commands. Set DATAJUMP_API_TOKEN, listen on a loopback address such as 127.0.0.1, or (on an isolated network only) pass --insecure-no-auth"
    )]
    InsecureAddress {
        /// The address.
        addr: SocketAddr,
    },
}

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection (core publishes: schedule changes).
    pub nats: async_nats::Client,
    /// JetStream on `nats` (fires, events, KV, object store), with the
    /// installation the message ids name.
    pub bus: datajump_nats::Bus,
    /// The required bearer token, if any.
    pub token: Option<Arc<str>>,
    /// Zone for manual runs' business dates and new schedules.
    pub timezone: Arc<str>,
    /// The browser rules.
    pub browser: Arc<BrowserRules>,
    /// Whether the listener is on a loopback address, where the `Host`
    /// rule applies.
    pub loopback: bool,
    /// Permits of the reads whose answer grows with a whole DAG
    /// ([`routes::table::WHOLE_DAG_READS`]).
    pub whole_dag_reads: Arc<tokio::sync::Semaphore>,
    /// What changed in runs and task instances, for the live streams.
    pub live: live::Live,
}

impl AppState {
    /// The state of a router over `config`, whose streams end when
    /// `shutdown` is cancelled.
    pub fn new(config: &Config, shutdown: CancellationToken) -> AppState {
        AppState {
            db: config.db.clone(),
            nats: config.nats.clone(),
            bus: metrics::Cluster::new(config).bus,
            token: effective_token(config).map(Arc::from),
            timezone: Arc::from(config.timezone.name()),
            browser: Arc::new(config.browser.clone()),
            loopback: config.addr.ip().is_loopback(),
            whole_dag_reads: Arc::new(tokio::sync::Semaphore::new(routes::table::WHOLE_DAG_READS)),
            live: live::Live::new(config.db.clone(), shutdown),
        }
    }
}

/// The configured token, treating an empty one as none.
fn effective_token(config: &Config) -> Option<&str> {
    config.token.as_deref().filter(|t| !t.trim().is_empty())
}

/// The router, separate from [`serve`] so tests can drive it: the route
/// table's routes and `/metrics` with the system-wide gauges, which needs a
/// viewer's token once tokens exist unless `public_metrics`. Its live
/// streams end when `shutdown` is cancelled.
pub fn router(config: Config, shutdown: CancellationToken) -> Router {
    let cluster = metrics::Cluster::new(&config);
    let state = AppState::new(&config, shutdown);
    // The metrics name the DAGs of every project.
    let (access, scope) = if config.public_metrics {
        (
            routes::table::Access::Public,
            routes::table::Scope::Unscoped,
        )
    } else {
        (
            routes::table::Access::Role(datajump_shared::access::Role::Viewer),
            routes::table::Scope::Installation,
        )
    };
    let rule = auth::Rule {
        access,
        scope,
        route: "/metrics",
    };
    let metrics = routes::behind_rules(state.clone(), rule, metrics::router(Some(cluster)));
    // Answers are gzipped for clients that ask (browsers do): a grid of
    // 1,000 runs × 50 tasks is mostly repeated states. Event streams are
    // left alone by the layer's defaults, so their events are not held back.
    routes::router(state)
        .merge(metrics)
        .layer(axum::middleware::from_fn(extract::refuse_nul_in_path))
        .layer(tower_http::compression::CompressionLayer::new())
}

/// Fails when `addr` is reachable from other machines and no token is set.
///
/// # Errors
///
/// [`ApiError::InsecureAddress`].
pub fn check_address(config: &Config, addr: SocketAddr) -> Result<(), ApiError> {
    if !addr.ip().is_loopback() && effective_token(config).is_none() && !config.insecure_no_auth {
        return Err(ApiError::InsecureAddress { addr });
    }
    Ok(())
}

/// Listens on `config.addr` and serves until `shutdown` is cancelled.
///
/// # Errors
///
/// [`ApiError::InsecureAddress`] for a non-loopback address without a
/// token (checked before binding); [`ApiError::Serve`] when the address
/// cannot be bound or serving fails.
pub async fn serve(config: Config, shutdown: CancellationToken) -> Result<(), ApiError> {
    let addr = config.addr;
    check_address(&config, addr)?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ApiError::Serve { addr, source })?;
    serve_on(listener, config, shutdown).await
}

/// Serves on an already bound `listener` (tests bind `127.0.0.1:0`) until
/// `shutdown` is cancelled; the listener's address replaces `config.addr`.
///
/// # Errors
///
/// As [`serve`].
pub async fn serve_on(
    listener: TcpListener,
    mut config: Config,
    shutdown: CancellationToken,
) -> Result<(), ApiError> {
    let addr = listener.local_addr().map_err(|source| ApiError::Serve {
        addr: config.addr,
        source,
    })?;
    check_address(&config, addr)?;
    // Like every role: the streams its fires, events and reads use.
    datajump_nats::ensure_topology(
        &async_nats::jetstream::new(config.nats.clone()),
        &config.names,
        config.replicas,
    )
    .await?;
    config.addr = addr;
    info!(%addr, token = effective_token(&config).is_some(), "API listening");
    let app = router(config, shutdown.clone()).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|source| ApiError::Serve { addr, source })
}
