//! `datajump up`: every role in one process, with embedded defaults.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use datajump_cron::parse_time_zone;
use datajump_shared::dag_file::DagFile;
use tokio::task::JoinSet;

use crate::Global;
use crate::client::Client;
use crate::commands::dag::expand;
use crate::commands::roles::{
    AccessArgs, IfMissing, RetentionArgs, RunnerArgs, api_config, metrics_server, nats,
    open_database, runner_config, ticker_config,
};
use crate::commands::shutdown_on_signal;
use crate::output::{printable, status};

/// Arguments of `up`.
#[derive(Args)]
pub struct UpArgs {
    /// Folder of DAG files applied at start.
    #[arg(long, env = "DATAJUMP_DAGS_DIR", default_value = "./dags")]
    dags: PathBuf,
    /// Where the API listens.
    #[arg(long, env = "DATAJUMP_API_ADDR", default_value = "127.0.0.1:8080")]
    api_addr: std::net::SocketAddr,
    /// Who may reach the API from a browser.
    #[command(flatten)]
    access: AccessArgs,
    #[command(flatten)]
    runner: RunnerArgs,
    #[command(flatten)]
    retention: RetentionArgs,
}

/// Configures the secret key `up`'s roles seal and open values with: the
/// configured one, or a new one written to `secret.key` in the data folder
/// (whose path is returned), so the local trial stores no secret in clear.
fn secret_key(global: &Global) -> Result<Option<PathBuf>> {
    use datajump_store::sealing;
    if let Some(key) = sealing::key_from_environment(&global.data_dir)? {
        sealing::configure(Some(key));
        return Ok(None);
    }
    let key = sealing::SecretKey::generate();
    let path = sealing::default_key_file(&global.data_dir);
    key.write(&path)?;
    sealing::configure(Some(key));
    Ok(Some(path))
}

/// The SQLite datasource the example SQL DAG uses, created on first start
/// with an empty database file in the data folder's `datasources` folder
/// (the one part of it a SQLite datasource may open); `None` when one of
/// that name existed already (the operator's to keep).
async fn example_datasource(client: &Client, global: &Global) -> Result<Option<PathBuf>> {
    if client
        .datasources()
        .await?
        .iter()
        .any(|d| d.name == EXAMPLE_DATASOURCE)
    {
        return Ok(None);
    }
    let folder = global
        .data_dir
        .join(datajump_runner::executor::DATASOURCES_FOLDER);
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let file = folder.join("example.db");
    if !file.exists() {
        std::fs::write(&file, b"").with_context(|| format!("cannot create {}", file.display()))?;
    }
    client
        .add_datasource(
            datajump_store::projects::DEFAULT_PROJECT,
            datajump_shared::datasources::NewDatasource {
                name: EXAMPLE_DATASOURCE.to_owned(),
                kind: datajump_shared::kinds::DatasourceKind::Sqlite,
                host: file.display().to_string(),
                port: None,
                database: None,
                username: None,
                password: None,
                params: std::collections::BTreeMap::new(),
            },
        )
        .await?;
    Ok(Some(file))
}

/// The name of the datasource of `dags/example_sql.yaml`.
const EXAMPLE_DATASOURCE: &str = "example_sqlite";

/// Runs `up`.
pub async fn run(global: &Global, args: UpArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&global.data_dir)
        .with_context(|| format!("cannot create {}", global.data_dir.display()))?;
    // Removed when `up` returns; `datajump down` signals the pid in it.
    let _pid_file = crate::commands::lifecycle::PidFile::create(&global.data_dir)?;
    let key_file = secret_key(global)?;
    let mut nats_child = crate::nats_server::ensure(&global.nats_url, &global.data_dir).await?;
    let (db, _) = open_database(global, IfMissing::Create).await?;
    let client = Client::with_database(db.clone(), global);
    let nats_client = nats(global, "datajump-up").await?;
    let js = async_nats::jetstream::new(nats_client.clone());
    datajump_nats::ensure_topology(&js, &global.nats_prefix, global.nats_replicas).await?;
    let api = api_config(
        global,
        db.clone(),
        nats_client.clone(),
        args.api_addr,
        &args.access,
    )
    .await?;

    let example_db = example_datasource(&client, global).await?;
    let files = if args.dags.is_dir() {
        expand(std::slice::from_ref(&args.dags))?
    } else {
        Vec::new()
    };
    for path in &files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        match DagFile::parse(&text) {
            Ok(dag) => {
                let report = client.apply(&dag, path).await?;
                status!(
                    "dag '{}' ({}): {report}",
                    printable(&dag.name),
                    printable(&path.display().to_string())
                );
            }
            Err(e) => eprintln!(
                "{}: {e}\n  (skipped)",
                printable(&path.display().to_string())
            ),
        }
    }

    status!("DataJump is up.");
    status!(
        "  database: {} (installation {})",
        global.database_url()?,
        api.installation
    );
    status!(
        "  NATS:     {} with prefix {}{}",
        global.nats_url,
        global.nats_prefix,
        if nats_child.is_some() {
            format!(
                " (started here, data in {})",
                global.data_dir.join("nats").display()
            )
        } else {
            " (found running: not started here)".to_owned()
        }
    );
    if let Some(path) = &key_file {
        status!(
            "  secrets:  encrypted at rest with the key in {} (created now: keep a copy; roles \
             on other hosts need it as DATAJUMP_SECRET_KEY)",
            path.display()
        );
    }
    status!(
        "  DAGs:     {} ({} files)",
        args.dags.display(),
        files.len()
    );
    if let Some(file) = &example_db {
        status!(
            "  examples: datasource {EXAMPLE_DATASOURCE} created on the SQLite file {} (for example_sql)",
            file.display()
        );
    }
    if datajump_ui::is_built() {
        status!("  web UI:   http://{}/", args.api_addr);
    } else {
        status!(
            "  web UI:   not built into this binary (http://{}/ says how: npm --prefix web ci && npm --prefix web run build, then rebuild)",
            args.api_addr
        );
    }
    status!("  API:      http://{}/api/v1/openapi.json", args.api_addr);
    status!("  metrics:  http://{}/metrics", args.api_addr);
    status!(
        "  logs:     this terminal (one line per run and task transition); task output is kept per execution in the database"
    );
    status!(
        "  try:      datajump trigger example_diamond --wait   |   datajump runs example_diamond"
    );
    status!("  stop:     Ctrl-C here, or `datajump down` from another terminal");

    let shutdown = shutdown_on_signal();
    let mut roles = JoinSet::new();
    let api_url = format!("http://{}", args.api_addr);
    let ticker = ticker_config(
        global,
        (db.clone(), nats_client.clone()),
        None,
        args.retention,
        &args.runner.network,
        Some(&api_url),
    )?;
    let resolver = datajump_resolver::Config {
        db: db.clone(),
        nats: nats_client.clone(),
        names: global.nats_prefix.clone(),
        replicas: global.nats_replicas,
        default_timezone: parse_time_zone(&global.timezone)?,
        concurrency: 16,
    };
    let runner = datajump_runner::Config {
        data_folder: Some(global.data_dir.as_path().into()),
        ..runner_config(
            db.clone(),
            nats_client.clone(),
            &global.nats_prefix,
            global.nats_replicas,
            parse_time_zone(&global.timezone)?,
            &args.runner,
            Some(&api_url),
        )?
    };
    let cluster = datajump_api::metrics::Cluster::new(&api);
    let token = shutdown.clone();
    roles.spawn(async move {
        datajump_ticker::run(ticker, token)
            .await
            .map_err(anyhow::Error::from)
    });
    let token = shutdown.clone();
    roles.spawn(async move {
        datajump_resolver::run(resolver, token)
            .await
            .map_err(anyhow::Error::from)
    });
    let token = shutdown.clone();
    roles.spawn(async move {
        datajump_runner::run(runner, token)
            .await
            .map_err(anyhow::Error::from)
    });
    let token = shutdown.clone();
    roles.spawn(async move {
        datajump_api::serve(api, token)
            .await
            .map_err(anyhow::Error::from)
    });

    let probes = datajump_api::metrics::Probes {
        db: db.clone(),
        nats: nats_client.clone(),
        stopping: shutdown.clone(),
    };
    if let Some(server) =
        metrics_server(args.runner.metrics, Some(cluster), probes, shutdown.clone()).await?
    {
        roles.spawn(async move { server.await? });
    }

    let mut failure = None;
    while let Some(joined) = roles.join_next().await {
        let result = joined.map_err(anyhow::Error::from).and_then(|r| r);
        if let Err(e) = result {
            tracing::error!(error = %format!("{e:#}"), "a role stopped; shutting down");
            failure.get_or_insert(e);
            shutdown.cancel();
        }
    }
    if let Some(child) = nats_child.as_mut() {
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let _ = child.wait().await;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(ExitCode::SUCCESS),
    }
}
