//! The role subcommands, each one process: `ticker`, `resolver`, `runner`, `api`,
//! and `migrate`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use datajump_migrations::{Migrator, MigratorTrait};
use datajump_shared::cron::parse_time_zone;
use datajump_shared::naming::validate_queue;
use sea_orm::DatabaseConnection;

use crate::Global;
use crate::commands::shutdown_on_signal;

/// Arguments of `ticker`.
#[derive(Args)]
pub struct TickerArgs {
    /// Serve only schedules whose id ≡ K (mod N), written `K/N`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    #[command(flatten)]
    pub retention: RetentionArgs,
}

/// How long finished runs are kept (shared by `ticker` and `up`).
#[derive(Args, Clone, Copy)]
pub struct RetentionArgs {
    /// Days finished runs, their executions and logs are kept (0 keeps them forever).
    #[arg(long, env = "DATAJUMP_RETENTION_DAYS", default_value_t = 30)]
    pub retention_days: u32,
}

impl RetentionArgs {
    fn period(self) -> Option<chrono::Duration> {
        (self.retention_days > 0).then(|| chrono::Duration::days(i64::from(self.retention_days)))
    }
}

/// Arguments of `resolver`.
#[derive(Args)]
pub struct ResolverArgs {
    /// Messages handled at once per consumer.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
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
}

/// Arguments of `api`.
#[derive(Args)]
pub struct ApiArgs {
    /// Address to listen on.
    #[arg(long, env = "DATAJUMP_API_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
}

/// Opens and migrates the database.
pub async fn database(global: &Global) -> Result<DatabaseConnection> {
    let db = datajump_shared::db::connect(&global.database_url)
        .await
        .with_context(|| format!("cannot open the database {}", global.database_url))?;
    Migrator::up(&db, None)
        .await
        .context("cannot migrate the database")?;
    Ok(db)
}

/// Connects to NATS, waiting for it.
pub async fn nats(global: &Global, name: &str) -> Result<async_nats::Client> {
    let client = tokio::time::timeout(
        Duration::from_secs(30),
        datajump_nats::connect(&global.nats_url, name),
    )
    .await
    .with_context(|| format!("NATS at {} did not answer within 30 s", global.nats_url))??;
    Ok(client)
}

/// `migrate`.
pub async fn migrate(global: &Global) -> Result<ExitCode> {
    database(global).await?;
    println!("database {} is up to date", global.database_url);
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

/// The ticker's configuration from flags.
pub fn ticker_config(
    global: &Global,
    db: DatabaseConnection,
    nats: async_nats::Client,
    shard: Option<&str>,
    retention: RetentionArgs,
) -> Result<datajump_ticker::Config> {
    Ok(datajump_ticker::Config {
        db,
        nats,
        shard: parse_shard(shard)?,
        default_timezone: parse_time_zone(&global.timezone)?,
        retention: retention.period(),
    })
}

/// The runner's configuration from flags.
pub fn runner_config(
    db: DatabaseConnection,
    nats: async_nats::Client,
    args: &RunnerArgs,
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
        id: runner_id(),
        queues: args.queues.clone(),
        slots: args.slots,
        drain_timeout: Duration::from_secs(args.drain_timeout),
    })
}

/// `host-pid-xxxx`: unique per process, readable in `execution.worker`.
fn runner_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "runner".to_owned());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &suffix[..4])
}

/// `ticker`.
pub async fn ticker(global: &Global, args: TickerArgs) -> Result<ExitCode> {
    let db = database(global).await?;
    let config = ticker_config(
        global,
        db,
        nats(global, "datajump-ticker").await?,
        args.shard.as_deref(),
        args.retention,
    )?;
    datajump_ticker::run(config, shutdown_on_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// `resolver`.
pub async fn resolver(global: &Global, args: ResolverArgs) -> Result<ExitCode> {
    let config = datajump_resolver::Config {
        db: database(global).await?,
        nats: nats(global, "datajump-resolver").await?,
        concurrency: args.concurrency.max(1),
    };
    datajump_resolver::run(config, shutdown_on_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// `runner`.
pub async fn runner(global: &Global, args: RunnerArgs) -> Result<ExitCode> {
    let db = database(global).await?;
    let config = runner_config(db, nats(global, "datajump-runner").await?, &args)?;
    datajump_runner::run(config, shutdown_on_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// `api`.
pub async fn api(global: &Global, args: ApiArgs) -> Result<ExitCode> {
    let config = datajump_api::Config {
        db: database(global).await?,
        nats: nats(global, "datajump-api").await?,
        addr: args.addr,
        token: std::env::var("DATAJUMP_API_TOKEN").ok(),
        timezone: parse_time_zone(&global.timezone)?,
    };
    datajump_api::serve(config, shutdown_on_signal()).await?;
    Ok(ExitCode::SUCCESS)
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
}
