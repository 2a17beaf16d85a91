//! `/metrics` in the Prometheus text format, for the API's own address and
//! for any role's `--metrics-addr`, which also serves the role's
//! `/healthz` and `/readyz` ([`Probes`]).
//!
//! Two kinds of figures: what this process recorded
//! ([`datajump_shared::metrics::render`]: attempts, runs, retries, poison
//! messages, latency histograms), and, when given a [`Cluster`], gauges of
//! the whole system read at scrape time — runs and tasks by state from the
//! database (one grouped count through the `(status, queue)` index and one
//! count of running runs), and from JetStream the work consumers' backlog
//! and the live runners' heartbeats.
//! Reading them when scraped costs the hot path nothing and can never be
//! stale. Only the API process (`datajump api`, `datajump up`) adds them, so
//! a deployment of many role processes reports each cluster figure once.
//! They are a [`Collector`] of a registry built for the scrape, so the one
//! encoder of `prometheus-client` writes the whole page.
//! A source that fails or does not answer within [`SOURCE_TIMEOUT`] leaves
//! its figures out and says so in `datajump_metrics_source_up`, rather than
//! failing the whole scrape.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use datajump_nats::QueueBacklog;
use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::metrics::{self, encode_gauges};
use datajump_shared::{RunStatus, TaskStatus};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::ApiError;

/// How long a scrape waits for the database or JetStream.
pub const SOURCE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the system-wide gauges are read.
#[derive(Clone)]
pub struct Cluster {
    /// The database (runs and tasks by state).
    pub db: DatabaseConnection,
    /// JetStream (work consumers' backlog).
    pub bus: datajump_nats::Bus,
}

impl Cluster {
    /// The gauges' sources of an API configured by `config`.
    pub fn new(config: &crate::Config) -> Cluster {
        Cluster {
            db: config.db.clone(),
            bus: datajump_nats::Bus::new(
                async_nats::jetstream::new(config.nats.clone()),
                config.names.clone(),
                config.installation.clone(),
            ),
        }
    }
}

/// What a role's `/readyz` checks: the database and NATS it works with
/// answer, and it is not `stopping`. A runner that got SIGTERM drains
/// (finishes the tasks it holds, takes no new ones) while its server still
/// answers, so an orchestrator sees it leave readiness before it exits.
#[derive(Clone)]
pub struct Probes {
    /// The role's database.
    pub db: DatabaseConnection,
    /// The role's NATS connection.
    pub nats: async_nats::Client,
    /// Cancelled when the role begins to stop.
    pub stopping: CancellationToken,
}

async fn role_readyz(
    State(probes): State<Arc<Probes>>,
) -> (
    axum::http::StatusCode,
    axum::Json<crate::routes::health::dto::Health>,
) {
    crate::routes::health::readiness(&probes.db, &probes.nats, probes.stopping.is_cancelled()).await
}

/// Runs and tasks by state, as the database has them now.
#[derive(Debug)]
struct StateCounts {
    runs_running: u64,
    /// `(status, queue, tasks)` for QUEUED and RUNNING.
    tasks: Vec<(TaskStatus, String, i64)>,
}

impl Cluster {
    async fn state_counts(&self) -> Result<StateCounts, DbErr> {
        let runs_running = dag_run::Entity::find()
            .filter(dag_run::Column::Status.eq(RunStatus::Running))
            .count(&self.db)
            .await?;
        let tasks = tasks_by_queue(&self.db).await?;
        Ok(StateCounts {
            runs_running,
            tasks,
        })
    }

    /// The work consumers' counters and the live runners' heartbeats: the
    /// figures read from JetStream.
    async fn jetstream_figures(&self) -> Result<JetStreamFigures, crate::error::Error> {
        let (backlog, runners) = tokio::try_join!(
            async {
                datajump_nats::work_backlog(self.bus.js(), self.bus.names())
                    .await
                    .map_err(crate::error::Error::from)
            },
            crate::routes::runners::live_runners(&self.bus),
        )?;
        Ok(JetStreamFigures { backlog, runners })
    }

    /// Reads the system-wide gauges.
    async fn read(&self) -> SystemGauges {
        let (counts, jetstream) = tokio::join!(
            tokio::time::timeout(SOURCE_TIMEOUT, self.state_counts()),
            tokio::time::timeout(SOURCE_TIMEOUT, self.jetstream_figures()),
        );
        let counts = match counts {
            Ok(Ok(counts)) => Some(counts),
            Ok(Err(e)) => {
                warn!(error = %e, "metrics: cannot count runs and tasks");
                None
            }
            Err(_) => {
                warn!("metrics: the database did not answer in time");
                None
            }
        };
        let jetstream = match jetstream {
            Ok(Ok(figures)) => Some(figures),
            Ok(Err(e)) => {
                warn!(error = %e, "metrics: cannot read the work consumers or runner heartbeats");
                None
            }
            Err(_) => {
                warn!("metrics: JetStream did not answer in time");
                None
            }
        };

        SystemGauges { counts, jetstream }
    }
}

/// `(status, queue, tasks)` of the QUEUED and RUNNING task instances: one
/// grouped count through the `(status, queue)` index.
pub(crate) async fn tasks_by_queue(
    db: &DatabaseConnection,
) -> Result<Vec<(TaskStatus, String, i64)>, DbErr> {
    task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::Status)
        .column(task_instance::Column::Queue)
        .column_as(Expr::col(task_instance::Column::Id).count(), "tasks")
        .filter(task_instance::Column::Status.is_in([TaskStatus::Queued, TaskStatus::Running]))
        .group_by(task_instance::Column::Status)
        .group_by(task_instance::Column::Queue)
        .into_tuple()
        .all(db)
        .await
}

/// The system-wide gauges as one scrape read them; a source that failed is
/// `None`.
#[derive(Debug)]
struct SystemGauges {
    counts: Option<StateCounts>,
    jetstream: Option<JetStreamFigures>,
}

/// What a scrape read from JetStream.
#[derive(Debug)]
struct JetStreamFigures {
    backlog: Vec<QueueBacklog>,
    runners: Vec<crate::routes::runners::dto::RunnerDto>,
}

impl Collector for SystemGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_gauges(
            &mut encoder,
            "datajump_metrics_source_up",
            "1 if this scrape could read the source of the system-wide gauges, 0 if their figures are missing.",
            [
                ("database", self.counts.is_some()),
                ("jetstream", self.jetstream.is_some()),
            ]
            .map(|(source, up)| ([("source", source)], i64::from(up))),
        )?;
        if let Some(counts) = &self.counts {
            encode_state_counts(&mut encoder, counts)?;
        }
        if let Some(jetstream) = &self.jetstream {
            encode_backlog(&mut encoder, &jetstream.backlog)?;
            encode_runners(&mut encoder, &jetstream.runners)?;
        }
        Ok(())
    }
}

fn encode_state_counts(
    encoder: &mut DescriptorEncoder,
    counts: &StateCounts,
) -> Result<(), std::fmt::Error> {
    let no_labels: [(&str, &str); 0] = [];
    encode_gauges(
        encoder,
        "datajump_dag_runs_running",
        "DAG runs in state RUNNING.",
        [(no_labels, counts.runs_running)],
    )?;
    for (status, name, help) in [
        (
            TaskStatus::Queued,
            "datajump_tasks_queued",
            "Task instances in state QUEUED (released, waiting for a runner), per queue.",
        ),
        (
            TaskStatus::Running,
            "datajump_tasks_running",
            "Task instances in state RUNNING, per queue.",
        ),
    ] {
        encode_gauges(
            encoder,
            name,
            help,
            counts
                .tasks
                .iter()
                .filter(|(s, _, _)| *s == status)
                .map(|(_, queue, tasks)| ([("queue", queue.as_str())], *tasks)),
        )?;
    }
    Ok(())
}

fn encode_backlog(
    encoder: &mut DescriptorEncoder,
    backlog: &[QueueBacklog],
) -> Result<(), std::fmt::Error> {
    let labels = |consumer: &QueueBacklog| {
        [
            ("queue", consumer.queue.clone()),
            ("priority", consumer.priority.level().to_string()),
        ]
    };
    encode_gauges(
        encoder,
        "datajump_work_backlog_messages",
        "Work messages a queue's priority level holds: not yet delivered plus delivered and not yet acknowledged (num_pending + num_ack_pending of its consumer).",
        backlog.iter().map(|consumer| {
            (
                labels(consumer),
                consumer.pending.saturating_add(consumer.ack_pending),
            )
        }),
    )?;
    encode_gauges(
        encoder,
        "datajump_work_ack_pending_messages",
        "Work messages of a queue's priority level delivered to a runner and not yet acknowledged (num_ack_pending of its consumer): tasks running, or taken and not yet started.",
        backlog
            .iter()
            .map(|consumer| (labels(consumer), consumer.ack_pending)),
    )
}

/// Live runners per queue they serve (a runner serving two queues counts
/// in both).
fn encode_runners(
    encoder: &mut DescriptorEncoder,
    runners: &[crate::routes::runners::dto::RunnerDto],
) -> Result<(), std::fmt::Error> {
    let mut per_queue: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for runner in runners {
        for queue in &runner.queues {
            *per_queue.entry(queue.as_str()).or_default() += 1;
        }
    }
    encode_gauges(
        encoder,
        "datajump_runners_alive",
        "Runners whose heartbeat is live, per queue they serve; a queue no live runner serves has no series.",
        per_queue
            .into_iter()
            .map(|(queue, runners)| ([("queue", queue)], runners)),
    )
}

/// `GET /metrics`: this process's metrics, plus the system-wide gauges of
/// `cluster` when given.
pub fn router(cluster: Option<Cluster>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(cluster.map(Arc::new))
}

async fn scrape(State(cluster): State<Option<Arc<Cluster>>>) -> impl IntoResponse {
    let mut page = String::new();
    metrics::render(&mut page);
    if let Some(cluster) = cluster {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(cluster.read().await));
        metrics::encode(&mut page, &registry);
    }
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], page)
}

/// [`router`] with a role's `/healthz` and `/readyz`.
pub fn role_router(cluster: Option<Cluster>, probes: Probes) -> Router {
    router(cluster).merge(
        Router::new()
            .route("/healthz", get(crate::routes::health::healthz))
            .route("/readyz", get(role_readyz))
            .with_state(Arc::new(probes)),
    )
}

/// Serves [`role_router`] on `addr` until `shutdown` is cancelled: a role's
/// `--metrics-addr`. Unlike the API without a token, it may listen on any
/// address: the page is read-only and holds no secret.
///
/// # Errors
///
/// [`ApiError::MetricsServe`] when the address cannot be bound or serving fails.
pub async fn serve(
    addr: SocketAddr,
    cluster: Option<Cluster>,
    probes: Probes,
    shutdown: CancellationToken,
) -> Result<(), ApiError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ApiError::MetricsServe { addr, source })?;
    serve_on(listener, cluster, probes, shutdown).await
}

/// Serves [`role_router`] on an already bound `listener` (tests bind
/// `127.0.0.1:0`) until `shutdown` is cancelled.
///
/// # Errors
///
/// As [`serve`].
pub async fn serve_on(
    listener: TcpListener,
    cluster: Option<Cluster>,
    probes: Probes,
    shutdown: CancellationToken,
) -> Result<(), ApiError> {
    let addr = listener
        .local_addr()
        .map_err(|source| ApiError::MetricsServe {
            // The listener cannot say where it listens: the address is unknown.
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            source,
        })?;
    info!(%addr, "metrics listening on /metrics, probes on /healthz and /readyz");
    axum::serve(listener, role_router(cluster, probes))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|source| ApiError::MetricsServe { addr, source })
}
