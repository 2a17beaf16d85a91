//! The role subcommands, each one process: `ticker`, `resolver`, `runner`, `api`,
//! and `migrate`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use datajump_api::metrics::Probes;
use datajump_cron::parse_time_zone;
use datajump_migrations::{Migrator, MigratorTrait};
use datajump_shared::naming::validate_queue;
use datajump_shared::network::{Caller, NetworkPolicy};
use datajump_shared::subjects::Namespace;
use sea_orm::DatabaseConnection;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Global;
use crate::commands::shutdown_on_signal;
use crate::output::status;

/// Arguments of `ticker`.
#[derive(Args)]
pub struct TickerArgs {
    /// Serve only schedules whose id ≡ K (mod N), written `K/N`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// How long history is kept.
    #[command(flatten)]
    pub retention: RetentionArgs,
    /// Where alert webhooks may connect.
    #[command(flatten)]
    pub network: NetworkArgs,
    /// Where this process's own `/metrics` is served.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// Where outgoing HTTP may connect beyond the rule (`runner` for HTTP
/// tasks, `ticker` and `alerts test` for alert webhooks; `up` for both).
#[derive(Args, Clone)]
pub struct NetworkArgs {
    /// Destinations HTTP tasks (on a runner) and alert webhooks (on a
    /// ticker) may reach although they are refused otherwise: link-local or
    /// cloud-metadata addresses (169.254.0.0/16, fe80::/10,
    /// 100.100.100.200, fd00:ec2::254), or the DataJump API itself (any
    /// address reaching its listener at its port, from DATAJUMP_API_URL /
    /// --api: with a local API, every address of this host, 127.0.0.0/8,
    /// 0.0.0.0, [::], [::ffff:127.0.0.1] included). Host names, addresses
    /// or networks (10.0.0.0/8), comma-separated.
    #[arg(
        long,
        env = "DATAJUMP_HTTP_ALLOW",
        value_delimiter = ',',
        value_name = "HOSTS"
    )]
    pub http_allow: Vec<String>,
}

impl NetworkArgs {
    /// The policy for `caller` with the API at `api_url`.
    ///
    /// # Errors
    ///
    /// An `--http-allow` entry that is no name, address or network.
    pub fn policy(
        &self,
        api_url: Option<&str>,
        caller: Caller,
    ) -> Result<std::sync::Arc<NetworkPolicy>> {
        Ok(std::sync::Arc::new(NetworkPolicy::new(
            api_url,
            &self.http_allow,
            caller,
        )?))
    }
}

/// Where a role serves Prometheus metrics (every role command, and `up`
/// through [`RunnerArgs`]).
#[derive(Args, Clone, Copy)]
pub struct MetricsArgs {
    /// Serve this process's Prometheus metrics at http://HOST:PORT/metrics,
    /// and its probes at /healthz (the process answers) and /readyz (its
    /// database and NATS answer and it is not draining after SIGTERM; 503
    /// otherwise). Off by default; `api` and `up` also serve metrics on the
    /// API's address.
    #[arg(long, env = "DATAJUMP_METRICS_ADDR", value_name = "HOST:PORT")]
    pub metrics_addr: Option<SocketAddr>,
}

/// How long history is kept (shared by `ticker` and `up`). Periods are
/// spans such as `30d`, `12h`, `10m` or `1h30m` (digits alone are seconds);
/// `0` keeps that history forever.
#[derive(Args, Clone, Copy)]
pub struct RetentionArgs {
    /// How long finished runs are kept, with their task instances,
    /// executions and logs, and dataset events and triggers (the newest
    /// event of each dataset and partition, and each data schedule's last
    /// trigger, stay). Default 30d. Cleanup runs every tenth of the
    /// shortest period, at most hourly.
    #[arg(long, env = "DATAJUMP_RETENTION", value_name = "SPAN", value_parser = parse_kept_for)]
    pub retention: Option<KeptFor>,
    /// The same in days: the older flag, read when `--retention` is not
    /// given.
    #[arg(long, env = "DATAJUMP_RETENTION_DAYS", value_name = "DAYS")]
    pub retention_days: Option<u32>,
    /// How long alerts are kept, delivered or not. Default: as long as runs.
    #[arg(long, env = "DATAJUMP_ALERT_RETENTION", value_name = "SPAN", value_parser = parse_kept_for)]
    pub alert_retention: Option<KeptFor>,
    /// How long the audit log (who changed what, through the API) is kept.
    #[arg(long, env = "DATAJUMP_AUDIT_RETENTION", value_name = "SPAN", value_parser = parse_kept_for, default_value = "365d")]
    pub audit_retention: KeptFor,
}

/// A retention period as given: `None` keeps forever (`0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptFor(Option<chrono::Duration>);

/// Reads a retention period: a span (`30d`, `10m`), digits alone as
/// seconds, `0` for forever.
fn parse_kept_for(text: &str) -> Result<KeptFor, String> {
    let secs = datajump_shared::duration::parse_seconds(text)?;
    if secs < 0 {
        return Err(format!(
            "'{text}' is negative; give a span such as 30d, or 0 to keep forever"
        ));
    }
    Ok(KeptFor(
        (secs > 0).then(|| chrono::Duration::seconds(secs.into())),
    ))
}

/// Runs are kept this long when neither flag says.
const DEFAULT_RUN_RETENTION_DAYS: i64 = 30;

impl RetentionArgs {
    /// The periods the ticker cleans by.
    pub fn periods(self) -> datajump_ticker::cleanup::Retention {
        let runs = match (self.retention, self.retention_days) {
            (Some(KeptFor(period)), _) => period,
            (None, Some(days)) => (days > 0).then(|| chrono::Duration::days(i64::from(days))),
            (None, None) => Some(chrono::Duration::days(DEFAULT_RUN_RETENTION_DAYS)),
        };
        datajump_ticker::cleanup::Retention {
            runs,
            alerts: self.alert_retention.map_or(runs, |KeptFor(period)| period),
            audit: self.audit_retention.0,
        }
    }
}

/// Arguments of `resolver`.
#[derive(Args)]
pub struct ResolverArgs {
    /// Messages handled at once per consumer.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Where this process's own `/metrics` is served.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// Arguments of `runner`.
#[derive(Args, Clone)]
pub struct RunnerArgs {
    /// Queues (worker groups) to serve, comma-separated.
    #[arg(
        long,
        env = "DATAJUMP_RUNNER_QUEUES",
        value_delimiter = ',',
        default_value = "default"
    )]
    pub queues: Vec<String>,
    /// Tasks run at once.
    #[arg(long, env = "DATAJUMP_RUNNER_SLOTS", default_value_t = 8)]
    pub slots: usize,
    /// Seconds running tasks may finish after SIGTERM before they are stopped.
    #[arg(long, default_value_t = 30)]
    pub drain_timeout: u64,
    /// Variables of the runner's environment passed to tasks, comma-separated
    /// (e.g. JAVA_HOME,SPARK_HOME), besides PATH, HOME, USER, LOGNAME, LANG,
    /// LANGUAGE, LC_*, TZ, TMPDIR and TERM. Nothing else of the runner's
    /// environment reaches a task, and DATAJUMP_* variables never do.
    #[arg(
        long,
        env = "DATAJUMP_TASK_ENV",
        value_delimiter = ',',
        value_name = "NAMES"
    )]
    pub task_env: Vec<String>,
    /// Run process tasks (SHELL, PYTHON, SPARK, FLINK) as this user (the runner must be root, or
    /// hold CAP_SETUID/CAP_SETGID). Recommended when the runner runs as root:
    /// a task running as root can read the runner's memory and files.
    #[arg(long, env = "DATAJUMP_TASK_USER", value_name = "USER")]
    pub task_user: Option<String>,
    /// The most bytes of one task's log kept in full (default 100 MiB); the
    /// rest is counted, not kept, and the log ends with a note saying so.
    /// The last 64 KiB are always kept in the database.
    #[arg(long, env = "DATAJUMP_MAX_LOG_BYTES", default_value_t = datajump_runner::executor::DEFAULT_MAX_LOG_BYTES, value_name = "BYTES")]
    pub max_log_bytes: u64,
    /// Where HTTP tasks (and, under `up`, alert webhooks) may connect.
    #[command(flatten)]
    pub network: NetworkArgs,
    /// Here rather than beside each command so that `up`, which flattens
    /// these arguments, takes the flag once; it serves every role's metrics.
    /// Where this process's own `/metrics` is served.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// Arguments of `api`.
#[derive(Args)]
pub struct ApiArgs {
    /// Address to listen on.
    #[arg(long, env = "DATAJUMP_API_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Who may reach the API from a browser.
    #[command(flatten)]
    pub access: AccessArgs,
    /// Where this process's own `/metrics` is served.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// Who may reach the API, beyond the token: the rules that keep a web page
/// in the operator's browser from driving a local API.
#[derive(Args)]
pub struct AccessArgs {
    /// Names (besides localhost, 127.0.0.1 and [::1]) that a loopback API
    /// answers to, comma-separated: a name in /etc/hosts, a tunnel's. Any
    /// other `Host` gets 403, so a hostile DNS name pointed at 127.0.0.1
    /// cannot read the API.
    #[arg(
        long,
        env = "DATAJUMP_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_name = "NAMES"
    )]
    pub allowed_hosts: Vec<String>,
    /// Origins (scheme://host[:port], comma-separated) whose pages may send
    /// changes besides the API's own, e.g. a dashboard on another port.
    /// Other cross-origin changes get 403.
    #[arg(
        long,
        env = "DATAJUMP_ALLOWED_ORIGINS",
        value_delimiter = ',',
        value_name = "ORIGINS"
    )]
    pub allowed_origins: Vec<String>,
    /// The URL users reach the API at when it is not the listen address (a
    /// reverse proxy, an SSH tunnel): its origin and host are allowed.
    #[arg(long, env = "DATAJUMP_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Serve beyond loopback with no token. Whoever can reach the address
    /// can then run commands as the runners' user: for an isolated network
    /// only.
    #[arg(long, env = "DATAJUMP_INSECURE_NO_AUTH")]
    pub insecure_no_auth: bool,
    /// Serve the API's /metrics without a token even once tokens exist
    /// (by default it then needs a viewer's: Prometheus sends one with
    /// `authorization: { credentials_file: … }`). The page names DAGs and
    /// queues, no secrets.
    #[arg(long, env = "DATAJUMP_PUBLIC_METRICS")]
    pub public_metrics: bool,
}

/// The API's configuration: the listen address, the token from
/// `DATAJUMP_API_TOKEN`, the access rules and the database's installation.
pub async fn api_config(
    global: &Global,
    db: DatabaseConnection,
    nats: async_nats::Client,
    addr: SocketAddr,
    access: &AccessArgs,
) -> Result<datajump_api::Config> {
    Ok(datajump_api::Config {
        installation: datajump_store::installation::identity(&db).await?,
        names: global.nats_prefix.clone(),
        replicas: global.nats_replicas,
        db,
        nats,
        addr,
        token: std::env::var("DATAJUMP_API_TOKEN").ok(),
        timezone: parse_time_zone(&global.timezone)?,
        browser: datajump_api::BrowserRules::new(
            &access.allowed_hosts,
            &access.allowed_origins,
            access.public_url.as_deref(),
        )?,
        insecure_no_auth: access.insecure_no_auth,
        public_metrics: access.public_metrics,
    })
}

/// Whether a command may create the database it is pointed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMissing {
    /// `up` and `migrate`: create it.
    Create,
    /// Everything else: a SQLite file that does not exist is a mistake (a
    /// command run from another directory, a typo), never a new database.
    Refuse,
}

/// Opens and migrates the database; returns it with the number of
/// migrations this applied.
pub async fn open_database(
    global: &Global,
    if_missing: IfMissing,
) -> Result<(DatabaseConnection, usize)> {
    let url = global.database_url()?;
    if let Some(file) = url.sqlite_file() {
        if global.database_url_given.is_none() {
            warn_of_an_earlier_default(global);
        }
        if !file.exists() {
            if if_missing == IfMissing::Refuse {
                bail!(
                    "no database at {}: start DataJump with `datajump up` (or create it with \
                     `datajump migrate`), or point --database-url / DATAJUMP_DATABASE_URL at \
                     the database DataJump runs on",
                    file.display()
                );
            }
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
        }
    }
    // Migrated on a connection of its own before the pool opens
    // (`connect_migrated`): a pooled connection older than the schema can
    // read a new column as NULL.
    let opened = datajump_store::db::connect_migrated(url.as_str(), async |db| {
        let pending = Migrator::get_pending_migrations(db).await?.len();
        Migrator::up(db, None).await?;
        Ok(pending)
    });
    // A database that does not answer fails within `connect_migrated`'s
    // connect timeout; a migration takes the time it needs.
    let (db, pending) = opened
        .await
        .with_context(|| format!("cannot open and migrate the database {url}"))?;
    Ok((db, pending))
}

/// Opens and migrates the database, which must exist (every command but
/// `up` and `migrate`).
pub async fn database(global: &Global) -> Result<DatabaseConnection> {
    Ok(open_database(global, IfMissing::Refuse).await?.0)
}

/// Says so when the working directory holds the database or data folder
/// of a version that kept them there, while this one uses the data folder.
fn warn_of_an_earlier_default(global: &Global) {
    let old_db = std::path::Path::new(datajump_store::db::DEFAULT_SQLITE_FILE);
    let new_db = global
        .data_dir
        .join(datajump_store::db::DEFAULT_SQLITE_FILE);
    if old_db.exists() && !new_db.exists() {
        eprintln!(
            "warning: ./{} is the database of an earlier DataJump, which kept it in the working \
             directory; this one uses {}. To keep it: mkdir -p {dir} && mv datajump.db* {dir}/ \
             (and mv .datajump/* {dir}/ for its secret key), or pass \
             --database-url 'sqlite://datajump.db?mode=rwc'",
            old_db.display(),
            new_db.display(),
            dir = global.data_dir.display()
        );
    }
}

/// Connects to NATS, waiting for it.
pub async fn nats(global: &Global, name: &str) -> Result<async_nats::Client> {
    let client = tokio::time::timeout(
        Duration::from_secs(30),
        datajump_nats::connect_with(&global.nats_url, name, &global.nats_auth()),
    )
    .await
    .with_context(|| format!("NATS at {} did not answer within 30 s", global.nats_url))??;
    Ok(client)
}

/// `migrate`.
pub async fn migrate(global: &Global) -> Result<ExitCode> {
    let (_, applied) = open_database(global, IfMissing::Create).await?;
    status!(
        "applied {applied} migration{}: database {} is up to date",
        if applied == 1 { "" } else { "s" },
        global.database_url()?
    );
    Ok(ExitCode::SUCCESS)
}

fn parse_shard(shard: Option<&str>) -> Result<Option<(u64, u64)>> {
    let Some(shard) = shard else { return Ok(None) };
    let parsed = shard
        .split_once('/')
        .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    match parsed {
        Some((k, n)) if n > 0 && k < n => Ok(Some((k, n))),
        _ => bail!("--shard '{shard}': expected K/N with 0 <= K < N, e.g. 0/2"),
    }
}

/// The ticker's configuration from flags; `api_url` is the API's address,
/// which alert webhooks may not call (unless `network` allows it).
pub fn ticker_config(
    global: &Global,
    (db, nats): (DatabaseConnection, async_nats::Client),
    shard: Option<&str>,
    retention: RetentionArgs,
    network: &NetworkArgs,
    api_url: Option<&str>,
) -> Result<datajump_ticker::Config> {
    Ok(datajump_ticker::Config {
        db,
        nats,
        names: global.nats_prefix.clone(),
        replicas: global.nats_replicas,
        shard: parse_shard(shard)?,
        default_timezone: parse_time_zone(&global.timezone)?,
        retention: retention.periods(),
        network: network.policy(api_url, Caller::Webhook)?,
        periods: datajump_ticker::Periods::default(),
    })
}

/// The runner's configuration from flags.
/// A runner's configuration; `api_url` is the API's address, which HTTP
/// tasks may not call (unless `--http-allow` says so).
pub fn runner_config(
    db: DatabaseConnection,
    nats: async_nats::Client,
    names: &Namespace,
    replicas: datajump_nats::Replicas,
    default_timezone: chrono_tz::Tz,
    args: &RunnerArgs,
    api_url: Option<&str>,
) -> Result<datajump_runner::Config> {
    for queue in &args.queues {
        validate_queue(queue)?;
    }
    if args.slots == 0 {
        bail!("--slots must be at least 1");
    }
    Ok(datajump_runner::Config {
        db,
        nats,
        names: names.clone(),
        replicas,
        default_timezone,
        id: datajump_shared::ids::role_process_id(),
        queues: args.queues.clone(),
        slots: args.slots,
        drain_timeout: Duration::from_secs(args.drain_timeout),
        task_process: std::sync::Arc::new(datajump_runner::executor::TaskProcess::new(
            &args.task_env,
            args.task_user.as_deref(),
        )?),
        max_log_bytes: args.max_log_bytes,
        network: args.network.policy(api_url, Caller::HttpTask)?,
        // Set by the roles that have one (`runner`, `up`); a benchmark's
        // runners have none.
        data_folder: None,
    })
}

/// Binds `--metrics-addr`, if given, and serves `/metrics`, `/healthz` and
/// `/readyz` there until `shutdown` is cancelled. Binding happens here,
/// before the role starts, so a bad address fails the command at once.
/// `cluster` adds the system-wide gauges (the API process only; see
/// `datajump_api::metrics`).
pub async fn metrics_server(
    args: MetricsArgs,
    cluster: Option<datajump_api::metrics::Cluster>,
    probes: Probes,
    shutdown: CancellationToken,
) -> Result<Option<JoinHandle<Result<()>>>> {
    let Some(addr) = args.metrics_addr else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot serve metrics on {addr}"))?;
    Ok(Some(tokio::spawn(async move {
        datajump_api::metrics::serve_on(listener, cluster, probes, shutdown)
            .await
            .map_err(anyhow::Error::from)
    })))
}

/// Runs `role` with its `--metrics-addr` server beside it; the server stops
/// when the role does, however it ends, and reports not ready from the
/// moment `shutdown` is cancelled.
async fn with_metrics<E>(
    args: MetricsArgs,
    cluster: Option<datajump_api::metrics::Cluster>,
    (db, nats): (DatabaseConnection, async_nats::Client),
    shutdown: &CancellationToken,
    role: impl Future<Output = Result<(), E>>,
) -> Result<ExitCode>
where
    anyhow::Error: From<E>,
{
    // Not a child of `shutdown`: the server must outlive the signal, to
    // answer `/readyz` with 503 while the role drains.
    let stop_metrics = CancellationToken::new();
    let probes = Probes {
        db,
        nats,
        stopping: shutdown.clone(),
    };
    let server = metrics_server(args, cluster, probes, stop_metrics.clone()).await?;
    let result = role.await;
    stop_metrics.cancel();
    if let Some(server) = server {
        server.await??;
    }
    result?;
    Ok(ExitCode::SUCCESS)
}

/// `ticker`.
pub async fn ticker(global: &Global, args: TickerArgs) -> Result<ExitCode> {
    let config = ticker_config(
        global,
        (
            database(global).await?,
            nats(global, "datajump-ticker").await?,
        ),
        args.shard.as_deref(),
        args.retention,
        &args.network,
        Some(&global.api_url),
    )?;
    let probes = (config.db.clone(), config.nats.clone());
    let shutdown = shutdown_on_signal();
    let role = datajump_ticker::run(config, shutdown.clone());
    with_metrics(args.metrics, None, probes, &shutdown, role).await
}

/// `resolver`.
pub async fn resolver(global: &Global, args: ResolverArgs) -> Result<ExitCode> {
    let config = datajump_resolver::Config {
        db: database(global).await?,
        nats: nats(global, "datajump-resolver").await?,
        names: global.nats_prefix.clone(),
        replicas: global.nats_replicas,
        default_timezone: parse_time_zone(&global.timezone)?,
        concurrency: args.concurrency.max(1),
    };
    let probes = (config.db.clone(), config.nats.clone());
    let shutdown = shutdown_on_signal();
    let role = datajump_resolver::run(config, shutdown.clone());
    with_metrics(args.metrics, None, probes, &shutdown, role).await
}

/// `runner`.
pub async fn runner(global: &Global, args: RunnerArgs) -> Result<ExitCode> {
    let db = database(global).await?;
    let config = datajump_runner::Config {
        data_folder: Some(global.data_dir.as_path().into()),
        ..runner_config(
            db,
            nats(global, "datajump-runner").await?,
            &global.nats_prefix,
            global.nats_replicas,
            parse_time_zone(&global.timezone)?,
            &args,
            Some(&global.api_url),
        )?
    };
    let probes = (config.db.clone(), config.nats.clone());
    let shutdown = shutdown_on_signal();
    let role = datajump_runner::run(config, shutdown.clone());
    with_metrics(args.metrics, None, probes, &shutdown, role).await
}

/// `api`.
pub async fn api(global: &Global, args: ApiArgs) -> Result<ExitCode> {
    let config = api_config(
        global,
        database(global).await?,
        nats(global, "datajump-api").await?,
        args.addr,
        &args.access,
    )
    .await?;
    let cluster = datajump_api::metrics::Cluster::new(&config);
    let probes = (config.db.clone(), config.nats.clone());
    let shutdown = shutdown_on_signal();
    let role = datajump_api::serve(config, shutdown.clone());
    with_metrics(args.metrics, Some(cluster), probes, &shutdown, role).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards() {
        assert_eq!(parse_shard(Some("1/4")).unwrap(), Some((1, 4)));
        assert!(parse_shard(Some("4/4")).is_err());
        assert!(parse_shard(Some("x")).is_err());
        assert_eq!(parse_shard(None).unwrap(), None);
    }

    #[test]
    fn retention_takes_spans_and_the_older_days_flag() {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            retention: RetentionArgs,
        }
        let periods = |args: &[&str]| {
            <Flags as clap::Parser>::try_parse_from(
                std::iter::once("ticker").chain(args.iter().copied()),
            )
            .map(|flags| flags.retention.periods())
            .map_err(|e| e.to_string())
        };
        let (days, minutes) = (chrono::Duration::days, chrono::Duration::minutes);
        let defaults = periods(&[]).unwrap();
        assert_eq!(
            (defaults.runs, defaults.alerts, defaults.audit),
            (Some(days(30)), Some(days(30)), Some(days(365)))
        );
        let soak = periods(&["--retention", "10m"]).unwrap();
        assert_eq!(
            (soak.runs, soak.alerts),
            (Some(minutes(10)), Some(minutes(10)))
        );
        assert_eq!(
            periods(&["--retention-days", "7"]).unwrap().runs,
            Some(days(7))
        );
        assert_eq!(
            periods(&["--retention", "1h", "--retention-days", "7"])
                .unwrap()
                .runs,
            Some(chrono::Duration::hours(1)),
            "the span wins"
        );
        let forever = periods(&[
            "--retention",
            "0",
            "--audit-retention",
            "0",
            "--alert-retention",
            "90d",
        ])
        .unwrap();
        assert_eq!(
            (forever.runs, forever.alerts, forever.audit),
            (None, Some(days(90)), None)
        );
        assert_eq!(periods(&["--retention-days", "0"]).unwrap().runs, None);
        let refused = periods(&["--retention", "soon"]).unwrap_err();
        assert!(
            refused.contains("--retention") && refused.contains("soon"),
            "{refused}"
        );
    }
}
