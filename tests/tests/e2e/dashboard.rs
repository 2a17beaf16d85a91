//! The Grafana dashboard `deploy/grafana/datajump.json` against a real
//! Prometheus (Debian's `prometheus` package) scraping real DataJump
//! processes: every panel's query, with the dashboard's variables and
//! Grafana's macros substituted as Grafana would, is evaluated through
//! Prometheus's HTTP API over a workload, and must return series that
//! changed during it (a flat line, zeros included, does not count). The
//! template variables' own queries must list what the workload made.
//! The metric names the deployment files mention must be ones Prometheus
//! scraped, and the KEDA alternative's query must answer.
//!
//! Panels fed only by a NATS exporter (`jetstream_*` metrics) need
//! prometheus-nats-exporter or NATS Surveyor, which neither Debian nor PyPI
//! packages: their queries are only checked to parse, and the skip is
//! printed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use datajump_shared::RunStatus;
use datajump_shared::subjects::Stream;
use serde_json::Value;

use crate::harness::process::{Process, start_resolver_with, start_runner, start_ticker_with};
use crate::harness::{Backend, TestEnv, dj, free_port};

/// The dashboard as shipped.
const DASHBOARD: &str = include_str!("../../../deploy/grafana/datajump.json");
/// The KEDA ScaledObject that scales runners on DataJump's backlog gauge.
const KEDA_PROMETHEUS: &str = include_str!("../../../deploy/kubernetes/keda/hpa-prometheus.yaml");
/// Prometheus's scrape (and evaluation) interval here.
const SCRAPE_SECONDS: u64 = 1;
/// What Grafana puts for `$__rate_interval` at this scrape interval: four
/// scrapes, the least `rate` needs to be steady.
const RATE_INTERVAL: &str = "4s";

/// A private Prometheus on a free port with its own store, killed on drop.
struct Prometheus {
    child: Child,
    url: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `DATAJUMP_TEST_PROMETHEUS`, or `prometheus` on PATH.
fn prometheus_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("DATAJUMP_TEST_PROMETHEUS") {
        return PathBuf::from(path);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("prometheus"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no prometheus binary: `apt-get install prometheus` (scripts/setup-services.sh does it with DATAJUMP_NEED_PROMETHEUS=1), or set DATAJUMP_TEST_PROMETHEUS"
            )
        })
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (`host:port`, each serving
    /// `/metrics`) as job `datajump`, and waits until every target is up.
    async fn scraping(targets: &[String]) -> Prometheus {
        let dir = tempfile::tempdir().expect("Prometheus directory");
        let config = dir.path().join("prometheus.yml");
        let listed: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {SCRAPE_SECONDS}s\n  evaluation_interval: {SCRAPE_SECONDS}s\nscrape_configs:\n  - job_name: datajump\n    static_configs:\n      - targets: [{}]\n",
                listed.join(", ")
            ),
        )
        .expect("write prometheus.yml");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
        let child = Command::new(prometheus_binary())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let prometheus = Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
            _dir: dir,
        };
        prometheus.wait_targets_up(targets.len()).await;
        prometheus
    }

    async fn get(&self, path: &str, query: &[(&str, String)]) -> Value {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .query(query)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = response.status();
        let body: Value = response.json().await.expect("Prometheus answers JSON");
        assert!(
            status.is_success() && body["status"] == "success",
            "GET {path} {query:?}: {status} {body}"
        );
        body["data"].clone()
    }

    async fn wait_targets_up(&self, targets: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let up = match self
                .http
                .get(format!("{}/api/v1/targets", self.url))
                .send()
                .await
            {
                Ok(response) => response
                    .json::<Value>()
                    .await
                    .ok()
                    .and_then(|body| body["data"]["activeTargets"].as_array().cloned())
                    .map(|active| active.iter().filter(|t| t["health"] == "up").count())
                    .unwrap_or(0),
                Err(_) => 0,
            };
            if up == targets {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{up} of {targets} targets up after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The series `expr` gives between `start` and `end`, one value per
    /// scrape: label set → values, NaN where the series had no sample at
    /// that step (a state no task was in) or was NaN (a quantile of
    /// nothing), so a series that appears or vanishes during the workload
    /// reads as the change a panel shows.
    async fn range(&self, expr: &str, start: f64, end: f64) -> BTreeMap<String, Vec<f64>> {
        let step = SCRAPE_SECONDS as f64;
        let data = self
            .get(
                "/api/v1/query_range",
                &[
                    ("query", expr.to_owned()),
                    ("start", format!("{start:.3}")),
                    ("end", format!("{end:.3}")),
                    ("step", format!("{SCRAPE_SECONDS}s")),
                ],
            )
            .await;
        let steps = ((end - start) / step).floor() as usize + 1;
        data["result"]
            .as_array()
            .expect("a matrix")
            .iter()
            .map(|series| {
                let mut values = vec![f64::NAN; steps];
                for point in series["values"].as_array().expect("values") {
                    let at = point[0].as_f64().expect("a timestamp");
                    let value = point[1]
                        .as_str()
                        .and_then(|v| v.parse::<f64>().ok())
                        .expect("a sample value");
                    let index = ((at - start) / step).round() as usize;
                    values[index.min(steps - 1)] = value;
                }
                (series["metric"].to_string(), values)
            })
            .collect()
    }

    /// Values of `label` on series matching `selector`.
    async fn label_values(&self, label: &str, selector: &str) -> Vec<String> {
        let data = self
            .get(
                &format!("/api/v1/label/{label}/values"),
                &[("match[]", selector.to_owned())],
            )
            .await;
        serde_json::from_value(data).expect("label values")
    }

    /// Every metric name Prometheus has scraped a sample of, and every
    /// family a target described (`# TYPE`), samples or not: a gauge such
    /// as `datajump_unserved_queue_tasks` has no series while all is well.
    async fn metric_names(&self) -> BTreeSet<String> {
        let data = self.get("/api/v1/label/__name__/values", &[]).await;
        let mut names: BTreeSet<String> = serde_json::from_value(data).expect("metric names");
        let metadata = self.get("/api/v1/metadata", &[]).await;
        names.extend(metadata.as_object().expect("metadata").keys().cloned());
        names
    }
}

/// Now as Prometheus's API takes it: seconds since the epoch.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
}

/// A panel query as Grafana sends it with every variable at "All".
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", RATE_INTERVAL)
        .replace("$job", ".*")
        .replace("$queue", ".*")
        .replace("$work_stream", &dj().stream(Stream::Work))
}

/// Whether a series changed: two values differ (NaN, no sample or a
/// quantile of no observations, differs from every number).
fn changed(values: &[f64]) -> bool {
    values
        .windows(2)
        .any(|w| w[0].to_bits() != w[1].to_bits() && !(w[0].is_nan() && w[1].is_nan()))
}

/// `datajump_…` names in `text`, with a histogram's `_bucket`, `_sum` and
/// `_count` kept as written.
fn metric_names_in(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("datajump_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_panel_of_the_dashboard_shows_a_live_workload() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    let env = TestEnv::new(Backend::Postgres).await;
    env.apply(
        r#"
name: dash_work
tasks:
  - { name: extract, command: "sleep 2" }
  - { name: load_a, command: "sleep 2", depends_on: [extract] }
  - { name: load_b, command: "sleep 2", depends_on: [extract] }
  - { name: load_c, command: "sleep 2", depends_on: [extract] }
  - { name: report, command: "true", depends_on: [load_a, load_b, load_c] }
"#,
    )
    .await;
    let marker = env.path("failed-once");
    env.apply(&format!(
        r#"
name: dash_flaky
tasks:
  - name: flaky
    command: "if [ -f {marker} ]; then exit 0; fi; touch {marker}; exit 1"
    retry: {{ max: 1, interval: 1 }}
"#,
        marker = crate::harness::shell_path(&marker)
    ))
    .await;

    let api_port = free_port();
    let address = || format!("127.0.0.1:{}", free_port());
    let (ticker_at, resolver_at, runner_at, second_runner_at) =
        (address(), address(), address(), address());
    let mut api = Process::start(
        &env,
        "api",
        &["api", "--addr", &format!("127.0.0.1:{api_port}")],
        &[],
    );
    api.wait_log("API listening", Duration::from_secs(60)).await;
    let mut ticker =
        start_ticker_with(&env, "ticker", &[("DATAJUMP_METRICS_ADDR", &ticker_at)]).await;
    let mut resolver =
        start_resolver_with(&env, "resolver", &[("DATAJUMP_METRICS_ADDR", &resolver_at)]).await;
    let _runner = start_runner(
        &env,
        "runner-1",
        2,
        &[("DATAJUMP_METRICS_ADDR", &runner_at)],
    )
    .await;

    let prometheus = Prometheus::scraping(&[
        format!("127.0.0.1:{api_port}"),
        ticker_at.clone(),
        resolver_at.clone(),
        runner_at.clone(),
    ])
    .await;
    // A quiet baseline: nothing queued, no fire, one runner.
    tokio::time::sleep(Duration::from_secs(5 * SCRAPE_SECONDS)).await;
    let start = now();

    // The workload: a DAG on a cron of every second (fires, fire lag), two
    // runs of a fan-out of two-second tasks on two slots (a backlog that
    // builds and drains), a task that fails once and retries, and a second
    // runner scaled in midway.
    env.apply(
        r#"
name: dash_cron
schedules:
  - cron: "* * * * * ?"
tasks:
  - { name: tick, command: "true" }
"#,
    )
    .await;
    let runs = [
        env.trigger("dash_work").await,
        env.trigger("dash_work").await,
        env.trigger("dash_flaky").await,
    ];
    tokio::time::sleep(Duration::from_secs(4)).await;
    let _second = start_runner(
        &env,
        "runner-2",
        2,
        &[("DATAJUMP_METRICS_ADDR", &second_runner_at)],
    )
    .await;
    for key in &runs {
        let run = env.wait_run(key, Duration::from_secs(120)).await;
        assert_eq!(run.status, RunStatus::Success, "run {key}");
    }
    // Stop the cron (its runs keep the figures moving otherwise) and let
    // the last scrapes and rate windows see the end.
    env.apply(
        r#"
name: dash_cron
tasks:
  - { name: tick, command: "true" }
"#,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(8 * SCRAPE_SECONDS)).await;
    let end = now();

    let mut checked = 0;
    let mut skipped = Vec::new();
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        let title = panel["title"].as_str().expect("a title");
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {title:?} has no query");
        for target in targets {
            let expr = substitute(target["expr"].as_str().expect("an expr"));
            assert!(
                !expr.contains('$'),
                "{title}: unsubstituted variable in {expr}"
            );
            let series = prometheus.range(&expr, start, end).await;
            if expr.contains("jetstream_") {
                // Parsed and evaluated above without error; nothing feeds it.
                skipped.push(format!("{title}: {expr}"));
                continue;
            }
            assert!(!series.is_empty(), "{title}: no series for {expr}");
            assert!(
                series.values().any(|values| changed(values)),
                "{title}: {expr} did not change during the workload: {series:?}"
            );
            checked += 1;
        }
    }
    for skip in &skipped {
        eprintln!("SKIPPED (no NATS exporter here; the query only parsed): {skip}");
    }
    assert!(checked >= 15, "only {checked} panel queries checked");

    // The template variables list what the workload made.
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    let variable = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("variable {name}"))
    };
    for (name, expected) in [("job", "datajump"), ("queue", "default")] {
        let query = variable(name)["query"]["query"]
            .as_str()
            .expect("a label_values query");
        let (selector, label) = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .and_then(|q| q.rsplit_once(", "))
            .unwrap_or_else(|| panic!("{name}: not label_values(selector, label): {query}"));
        let values = prometheus.label_values(label, &substitute(selector)).await;
        assert!(
            values.iter().any(|v| v == expected),
            "${name} lists {values:?}, without {expected}"
        );
    }
    assert_eq!(
        variable("work_stream")["query"],
        dj().stream(Stream::Work),
        "the work stream variable defaults to the default prefix's stream"
    );

    // Every metric the deployment files name is one DataJump exports.
    let scraped = prometheus.metric_names().await;
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let mut mentioned = metric_names_in(DASHBOARD);
    for file in walk(&deploy) {
        let text = std::fs::read_to_string(&file).expect("a deploy file");
        for name in metric_names_in(&text) {
            assert!(
                scraped.contains(&name),
                "{} names {name}, which no DataJump process exports",
                file.display()
            );
            mentioned.insert(name);
        }
    }
    assert!(mentioned.contains("datajump_work_backlog_messages"));

    // The KEDA alternative's query answers with the backlog.
    let query = KEDA_PROMETHEUS
        .lines()
        .find_map(|line| line.trim().strip_prefix("query: "))
        .expect("the trigger's query")
        .trim_matches('\'');
    let series = prometheus.range(query, start, end).await;
    let values = series
        .values()
        .next()
        .unwrap_or_else(|| panic!("{query}: no series"));
    assert!(
        values.iter().any(|v| *v > 0.0),
        "{query} never saw the backlog: {values:?}"
    );

    api.assert_running();
    ticker.assert_running();
    resolver.assert_running();
}

/// Every file under `dir`, recursively.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
