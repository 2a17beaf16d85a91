//! `ui`: what the web UI's heaviest page costs. A DAG of 50 NOOP tasks runs
//! 1,000 times for real (runs and task instances as the engine writes
//! them), then an API in the bench process answers the DAG page's grid of
//! all 1,000 runs × 50 tasks in one request (`/api/v1/dags/{id}/grid`),
//! its default page of 25 runs, and the UI's own load (`/`, its script and
//! style sheet): time to answer and bytes sent, per repetition.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chrono::Utc;
use datajump_shared::entities::dag_run;
use datajump_shared::messages::FireMsg;
use datajump_shared::params::Params;
use datajump_shared::subjects::Priority;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use tokio_util::sync::CancellationToken;

use super::{Bench, TaskKind, Workload, apply, dag_yaml, wide};
use crate::report::{Row, Unit};
use crate::stats::Better;
use crate::system::System;

/// Tasks of the DAG.
const TASKS: usize = 50;
/// Runs the grid shows.
const RUNS: usize = 1000;

/// The `ui` rows.
pub(super) async fn run(bench: &Bench<'_>) -> Result<Vec<Row>> {
    let label = bench.label(Workload::Ui);
    let mut system = System::start(bench.backend, bench.datajump).await?;
    let measured = async {
        let yaml = dag_yaml(
            "bench_ui",
            TaskKind::Noop,
            &wide::tasks(TASKS),
            "max_active_runs: 50\noverlap: wait\n",
        );
        let dag_id = apply(&system, &yaml).await?;
        system.start_roles(bench.runners).await?;
        fill(&mut system, dag_id).await?;
        let stop = CancellationToken::new();
        let base = serve_api(&system, stop.clone()).await?;
        let result = measure(bench, &base, dag_id).await;
        stop.cancel();
        result
    }
    .await;
    system.stop().await;
    let samples = measured?;
    let row = |metric: &str, unit: Unit, values: &[f64]| {
        Row::new(&label, TaskKind::Noop, metric, unit, Better::Lower, values)
    };
    Ok(vec![
        row(
            "grid of 1,000 runs × 50 tasks: time to answer",
            Unit::Ms,
            &samples.full_grid_ms,
        ),
        row(
            "grid of 1,000 runs × 50 tasks: bytes sent (gzip)",
            Unit::MiB,
            &samples.full_grid_mib,
        ),
        row(
            "grid of 1,000 runs × 50 tasks: JSON before gzip",
            Unit::MiB,
            &samples.raw_grid_mib,
        ),
        row(
            "grid's default page (25 runs): time to answer",
            Unit::Ms,
            &samples.page_ms,
        ),
        row(
            "UI load (index, script, style sheet): time",
            Unit::Ms,
            &samples.load_ms,
        ),
        row(
            "UI load (index, script, style sheet): bytes sent (gzip)",
            Unit::MiB,
            &samples.load_mib,
        ),
    ])
}

/// Runs the DAG [`RUNS`] times, each its own business date, and waits for
/// them all to end.
async fn fill(system: &mut System<'_>, dag_id: i64) -> Result<()> {
    let first = Utc::now().date_naive() - chrono::Days::new(RUNS as u64);
    for day in 0..RUNS {
        let date = first + chrono::Days::new(day as u64);
        let fire = FireMsg::manual(dag_id, Priority::DEFAULT, Utc::now(), date, Params::new());
        system.bus.publish_fire(&fire).await?;
    }
    let started = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let ended = dag_run::Entity::find()
            .filter(dag_run::Column::DagId.eq(dag_id))
            .filter(dag_run::Column::FinishedAt.is_not_null())
            .count(&system.db)
            .await?;
        if ended as usize >= RUNS {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(900) {
            bail!("only {ended} of {RUNS} runs ended within 15 minutes");
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!("  ui: {ended} of {RUNS} runs of {TASKS} tasks ended");
            last_report = Instant::now();
        }
        system.check_alive()?;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Serves the API on a free loopback port in this process, as `datajump
/// api` would; returns its base URL.
async fn serve_api(system: &System<'_>, stop: CancellationToken) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let config = datajump_api::Config {
        db: system.db.clone(),
        nats: system.nats.clone(),
        installation: system.bus.installation().clone(),
        names: system.bus.names().clone(),
        replicas: datajump_nats::Replicas::AUTO,
        addr,
        token: None,
        timezone: chrono_tz::UTC,
        browser: datajump_api::BrowserRules::default(),
        insecure_no_auth: false,
        public_metrics: false,
    };
    tokio::spawn(async move {
        if let Err(e) = datajump_api::serve_on(listener, config, stop).await {
            eprintln!("bench API stopped: {e}");
        }
    });
    let base = format!("http://{addr}");
    let client = reqwest::Client::new();
    let started = Instant::now();
    while client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .map_or(true, |r| !r.status().is_success())
    {
        if started.elapsed() > Duration::from_secs(20) {
            bail!("the bench's API did not get ready");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(base)
}

#[derive(Default)]
struct Samples {
    full_grid_ms: Vec<f64>,
    full_grid_mib: Vec<f64>,
    raw_grid_mib: Vec<f64>,
    page_ms: Vec<f64>,
    load_ms: Vec<f64>,
    load_mib: Vec<f64>,
}

/// `url`'s answer, whole, asking for it gzipped as a browser does:
/// (milliseconds until the last byte, bytes sent).
async fn fetch(client: &reqwest::Client, url: &str) -> Result<(f64, usize)> {
    let started = Instant::now();
    let answer = client
        .get(url)
        .header(reqwest::header::ACCEPT_ENCODING, "gzip")
        .send()
        .await?;
    let status = answer.status();
    let body = answer.bytes().await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if !status.is_success() {
        bail!("GET {url}: {status}");
    }
    Ok((ms, body.len()))
}

const MIB: f64 = 1024.0 * 1024.0;

async fn measure(bench: &Bench<'_>, base: &str, dag_id: i64) -> Result<Samples> {
    let client = reqwest::Client::new();
    let mut samples = Samples::default();
    let grid = format!("{base}/api/v1/dags/{dag_id}/grid?runs={RUNS}");
    // A first read, not compressed, checks the answer and warms the pools
    // and the database's cache, as a page opened a second time finds them.
    let text = client.get(&grid).send().await?.text().await?;
    let shown: serde_json::Value = serde_json::from_str(&text).context("the grid's JSON")?;
    let cells: usize = shown["runs"].as_array().map_or(0, |runs| {
        runs.iter()
            .map(|r| r["cells"].as_array().map_or(0, Vec::len))
            .sum()
    });
    if cells != RUNS * TASKS {
        bail!("the grid holds {cells} cells, not {}", RUNS * TASKS);
    }
    if !datajump_ui::is_built() {
        bail!("this bench was built without the web UI (web/dist): build it first");
    }
    let index = client.get(format!("{base}/")).send().await?.text().await?;
    let assets: Vec<&str> = index
        .split('"')
        .filter(|part| part.starts_with("/assets/"))
        .collect();
    for _ in 0..bench.repeat {
        let (ms, bytes) = fetch(&client, &grid).await?;
        samples.raw_grid_mib.push(text.len() as f64 / MIB);
        samples.full_grid_ms.push(ms);
        samples.full_grid_mib.push(bytes as f64 / MIB);
        let (ms, _) = fetch(&client, &format!("{base}/api/v1/dags/{dag_id}/grid")).await?;
        samples.page_ms.push(ms);
        let started = Instant::now();
        let (_, mut bytes) = fetch(&client, &format!("{base}/")).await?;
        for asset in &assets {
            bytes += fetch(&client, &format!("{base}{asset}")).await?.1;
        }
        samples
            .load_ms
            .push(started.elapsed().as_secs_f64() * 1000.0);
        samples.load_mib.push(bytes as f64 / MIB);
    }
    Ok(samples)
}
