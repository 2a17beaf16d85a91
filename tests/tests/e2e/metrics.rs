//! `/metrics` over real HTTP: the API's own `/metrics` (with the system-wide
//! gauges read from the database and JetStream) and a role's
//! `--metrics-addr` server (`datajump_api::metrics::serve_on`, without
//! them), scraped with reqwest while real roles run a DAG. Every line of
//! every scrape is parsed by the strict parser below, not searched for.
//!
//! Counters and histograms are process-wide (`datajump_shared::metrics`) and
//! the harness runs every role in this test's process, so what a scrape shows
//! is the sum over all roles here — and, under `cargo test`, which runs tests
//! as threads of one process, over other tests too. Assertions on them are
//! therefore on deltas between two scrapes, and "at least" the work this
//! test did. The gauges read from the database and JetStream belong to this
//! test's private database and server, so they are asserted exactly.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage;
use datajump_shared::RunStatus;
use datajump_shared::subjects::Priority;
use tokio_util::sync::CancellationToken;

use crate::harness::process::{
    start_resolver_with, start_runner, start_ticker_with, wait_file_lines,
};
use crate::harness::{TestEnv, dj, free_port, shell_path};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A sample's labels, sorted by name.
type Labels = BTreeMap<String, String>;

/// One parsed scrape: every sample by name and labels, and each family's type.
#[derive(Debug, Default)]
struct Scrape {
    types: BTreeMap<String, String>,
    samples: BTreeMap<(String, Labels), f64>,
}

impl Scrape {
    /// Parses the Prometheus text format 0.0.4 strictly: every line is a
    /// `# HELP`, a `# TYPE` or a sample of a family whose `# TYPE` came
    /// before; no series twice; histograms cumulative, ending with `+Inf`
    /// equal to their `_count`.
    fn parse(text: &str) -> Scrape {
        let mut scrape = Scrape::default();
        let mut helped = std::collections::BTreeSet::new();
        for (number, line) in text.lines().enumerate() {
            let at = format!("line {}: {line:?}", number + 1);
            if let Some(comment) = line.strip_prefix('#') {
                let mut words = comment.trim_start().splitn(3, ' ');
                match (words.next(), words.next(), words.next()) {
                    (Some("HELP"), Some(name), Some(_)) => {
                        assert!(valid_name(name), "{at}: bad metric name");
                        assert!(helped.insert(name.to_owned()), "{at}: HELP twice");
                    }
                    (Some("TYPE"), Some(name), Some(kind)) => {
                        assert!(valid_name(name), "{at}: bad metric name");
                        assert!(
                            ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                            "{at}: unknown type"
                        );
                        let earlier = scrape.types.insert(name.to_owned(), kind.to_owned());
                        assert!(earlier.is_none(), "{at}: TYPE twice");
                        assert!(
                            !scrape
                                .samples
                                .keys()
                                .any(|(n, _)| family_of(n, &scrape.types) == name),
                            "{at}: TYPE after samples"
                        );
                    }
                    _ => panic!("{at}: a comment other than HELP or TYPE"),
                }
                continue;
            }
            let (name, labels, value) = parse_sample(line).unwrap_or_else(|e| panic!("{at}: {e}"));
            let family = family_of(&name, &scrape.types);
            let kind = scrape
                .types
                .get(family)
                .unwrap_or_else(|| panic!("{at}: sample before its family's TYPE"));
            if kind != "histogram" {
                assert_eq!(family, name, "{at}: suffix on a {kind}");
                assert!(!labels.contains_key("le"), "{at}: le outside a histogram");
            }
            assert!(
                scrape.samples.insert((name, labels), value).is_none(),
                "{at}: series twice"
            );
        }
        scrape.check_histograms();
        scrape
    }

    fn check_histograms(&self) {
        for (family, kind) in &self.types {
            if kind != "histogram" {
                continue;
            }
            let mut series: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
            for ((name, labels), value) in &self.samples {
                if *name == format!("{family}_bucket") {
                    let mut rest = labels.clone();
                    let le = rest.remove("le").expect("a bucket without le");
                    series
                        .entry(rest)
                        .or_default()
                        .push((parse_value(&le).expect("le"), *value));
                }
            }
            for (labels, mut buckets) in series {
                buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                assert!(
                    buckets.windows(2).all(|w| w[0].1 <= w[1].1),
                    "{family}{labels:?}: buckets not cumulative: {buckets:?}"
                );
                let (last_le, last) = *buckets.last().expect("buckets");
                assert_eq!(last_le, f64::INFINITY, "{family}{labels:?}: no +Inf bucket");
                let count = self
                    .samples
                    .get(&(format!("{family}_count"), labels.clone()));
                assert_eq!(count, Some(&last), "{family}{labels:?}: _count is not +Inf");
                assert!(
                    self.samples
                        .contains_key(&(format!("{family}_sum"), labels.clone())),
                    "{family}{labels:?}: no _sum"
                );
            }
        }
    }

    /// The value of a series, if present.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.samples.get(&(name.to_owned(), labels)).copied()
    }

    /// The value of a series that must be present.
    #[track_caller]
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no series {name}{labels:?} in the scrape"))
    }

    /// True if any series of `name` is present.
    fn has(&self, name: &str) -> bool {
        self.samples.keys().any(|(n, _)| n == name)
    }
}

/// The family a sample belongs to: itself, or a histogram it is a part of.
fn family_of<'a>(name: &'a str, types: &BTreeMap<String, String>) -> &'a str {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && types.get(base).is_some_and(|k| k == "histogram")
        {
            return base;
        }
    }
    name
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text.parse().map_err(|e| format!("bad value {text:?}: {e}")),
    }
}

/// `name{label="value",…} value [timestamp]`.
fn parse_sample(line: &str) -> Result<(String, Labels, f64), String> {
    let end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..end];
    if !valid_name(name) {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[end..];
    let mut labels = Labels::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices().peekable();
        loop {
            if let Some((i, '}')) = chars.peek().copied() {
                rest = &inner[i + 1..];
                break;
            }
            let start = chars.peek().map(|(i, _)| *i).ok_or("unterminated labels")?;
            let eq = inner[start..].find('=').ok_or("label without =")? + start;
            let label = &inner[start..eq];
            if !valid_name(label) || label.contains(':') {
                return Err(format!("bad label name {label:?}"));
            }
            while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                chars.next();
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return Err("label value not quoted".to_owned());
            }
            let mut value = String::new();
            loop {
                match chars.next().map(|(_, c)| c) {
                    Some('"') => break,
                    Some('\\') => match chars.next().map(|(_, c)| c) {
                        Some('\\') => value.push('\\'),
                        Some('"') => value.push('"'),
                        Some('n') => value.push('\n'),
                        other => return Err(format!("bad escape {other:?}")),
                    },
                    Some('\n') | None => return Err("unterminated label value".to_owned()),
                    Some(c) => value.push(c),
                }
            }
            if labels.insert(label.to_owned(), value).is_some() {
                return Err(format!("label {label} twice"));
            }
            match chars.peek().map(|(_, c)| *c) {
                Some(',') => {
                    chars.next();
                }
                Some('}') => {}
                _ => return Err("expected , or } after a label".to_owned()),
            }
        }
    }
    let mut fields = rest
        .strip_prefix(' ')
        .ok_or("no space before the value")?
        .split(' ');
    let value = parse_value(fields.next().ok_or("no value")?)?;
    if let Some(timestamp) = fields.next() {
        timestamp
            .parse::<i64>()
            .map_err(|e| format!("bad timestamp: {e}"))?;
    }
    if fields.next().is_some() {
        return Err("text after the timestamp".to_owned());
    }
    Ok((name.to_owned(), labels, value))
}

/// An HTTP server answering `/metrics`, stopped on drop.
struct Server {
    url: String,
    http: reqwest::Client,
    stop: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Server {
    /// The API on 127.0.0.1:0 with its own connections, as `datajump api`
    /// runs it: its `/metrics` has the system-wide gauges.
    async fn api(env: &TestEnv) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let config = datajump_api::Config {
            installation: env.bus.installation().clone(),
            names: dj(),
            replicas: datajump_nats::Replicas::AUTO,
            db: datajump_store::db::connect(&env.db_url)
                .await
                .expect("API database connection"),
            nats: datajump_nats::connect(&env.nats_url(), "api")
                .await
                .expect("API NATS connection"),
            addr,
            token: None,
            timezone: chrono_tz::Asia::Shanghai,
            browser: datajump_api::BrowserRules::default(),
            insecure_no_auth: false,
            public_metrics: false,
        };
        let stop = CancellationToken::new();
        tokio::spawn(datajump_api::serve_on(listener, config, stop.clone()));
        Server::at(addr, stop)
    }

    /// A role's `--metrics-addr` server: this process's figures only.
    async fn role(env: &TestEnv) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let stop = CancellationToken::new();
        let probes = datajump_api::metrics::Probes {
            db: env.db.clone(),
            nats: env.nats.clone(),
            stopping: CancellationToken::new(),
        };
        tokio::spawn(datajump_api::metrics::serve_on(
            listener,
            None,
            probes,
            stop.clone(),
        ));
        Server::at(addr, stop)
    }

    fn at(addr: std::net::SocketAddr, stop: CancellationToken) -> Server {
        Server {
            url: format!("http://{addr}/metrics"),
            http: reqwest::Client::new(),
            stop,
        }
    }

    /// GETs `/metrics` and parses every line.
    async fn scrape(&self) -> Scrape {
        let response = self.http.get(&self.url).send().await.expect("GET /metrics");
        assert_eq!(response.status(), 200);
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(
            content_type.starts_with("text/plain; version=0.0.4"),
            "content type {content_type:?}"
        );
        Scrape::parse(&response.text().await.expect("body"))
    }

    /// Scrapes until `ready` holds, for at most [`TIMEOUT`].
    async fn scrape_until(&self, what: &str, ready: impl Fn(&Scrape) -> bool) -> Scrape {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let scrape = self.scrape().await;
            if ready(&scrape) {
                return scrape;
            }
            assert!(Instant::now() < deadline, "never {what}: {scrape:#?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

const ATTEMPTS: &str = "datajump_task_attempts_total";
const DISPATCH_COUNT: &str = "datajump_dispatch_latency_seconds_count";
const EDGE_COUNT: &str = "datajump_edge_release_latency_seconds_count";
const POISON: &str = "datajump_poison_messages_total";
const RUNS_RUNNING: &str = "datajump_dag_runs_running";
const TASKS_RUNNING: &str = "datajump_tasks_running";
const BACKLOG: &str = "datajump_work_backlog_messages";
const DEFAULT_P5: [(&str, &str); 2] = [("queue", "default"), ("priority", "5")];

both_dbs!(metrics_move_when_a_run_succeeds, |env| async move {
    let gate = env.path("gate");
    let marker = env.path("failed-once");
    env.apply(&format!(
        r#"
name: metrics_diamond
tasks:
  - name: a
    script: |
      while [ ! -e {gate} ]; do sleep 0.05; done
  - {{ name: b, command: "true", depends_on: [a] }}
  - name: c
    script: |
      if [ -f {marker} ]; then exit 0; else touch {marker}; exit 1; fi
    retry: {{ max: 1, interval: 1 }}
    depends_on: [a]
  - {{ name: d, command: "true", depends_on: [b, c] }}
"#,
        gate = shell_path(&gate),
        marker = shell_path(&marker),
    ))
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;
    let api = Server::api(&env).await;
    let role = Server::role(&env).await;

    let before = api.scrape().await;
    assert_eq!(before.value(RUNS_RUNNING, &[]), 0.0);
    for source in ["database", "jetstream"] {
        assert_eq!(
            before.value("datajump_metrics_source_up", &[("source", source)]),
            1.0
        );
    }

    // Poison on the done and work streams: terminated and counted.
    for subject in [
        dj().done(datajump_shared::RunId(1)),
        dj().work("default", Priority::DEFAULT),
    ] {
        env.bus
            .js()
            .send_publish(
                subject,
                PublishMessage::build().payload(b"\xffgarbage{".to_vec().into()),
            )
            .await
            .expect("publish")
            .await
            .expect("publish ack");
    }
    let poison = |s: &Scrape, stream: &str| s.value(POISON, &[("stream", stream)]);
    let poisoned = api
        .scrape_until("poison messages counted", |s| {
            ["done", "work"]
                .into_iter()
                .all(|stream| poison(s, stream) - poison(&before, stream) >= 1.0)
        })
        .await;
    assert_eq!(poisoned.value(BACKLOG, &DEFAULT_P5), 0.0);

    let key = env.trigger("metrics_diamond").await;
    // While `a` waits at its gate: one run and one task running, and its
    // work message delivered but not acknowledged.
    let during = api
        .scrape_until("task a running", |s| {
            s.get(TASKS_RUNNING, &[("queue", "default")]) == Some(1.0)
        })
        .await;
    assert_eq!(during.value(RUNS_RUNNING, &[]), 1.0);
    assert_eq!(during.value(BACKLOG, &DEFAULT_P5), 1.0);
    std::fs::write(&gate, b"").expect("open the gate");

    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    // The last runner acknowledges its message just after the run is over.
    let after = api
        .scrape_until("the work stream drained", |s| {
            s.get(BACKLOG, &DEFAULT_P5) == Some(0.0)
        })
        .await;

    let delta = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.get(name, labels).unwrap_or(0.0)
    };
    // Five attempts: c failed once and was retried.
    assert!(delta(ATTEMPTS, &[("status", "SUCCESS")]) >= 4.0);
    assert!(delta(ATTEMPTS, &[("status", "UP_FOR_RETRY")]) >= 1.0);
    assert!(delta("datajump_task_retries_total", &[("cause", "failure")]) >= 1.0);
    assert!(delta(DISPATCH_COUNT, &[]) >= 5.0);
    // b and c released by a, d by the later of b and c (a was a root).
    assert!(delta(EDGE_COUNT, &[]) >= 3.0);
    assert!(delta("datajump_dag_runs_finished_total", &[("status", "SUCCESS")]) >= 1.0);
    assert_eq!(after.value(RUNS_RUNNING, &[]), 0.0);
    for name in ["datajump_tasks_queued", TASKS_RUNNING] {
        assert!(
            !after.has(name),
            "{name} has series with nothing queued or running"
        );
    }

    // A role's server: the same process-wide figures, no system-wide gauges.
    let own = role.scrape().await;
    assert!(
        own.value(ATTEMPTS, &[("status", "SUCCESS")])
            >= after.value(ATTEMPTS, &[("status", "SUCCESS")])
    );
    for name in [RUNS_RUNNING, BACKLOG, "datajump_metrics_source_up"] {
        assert!(!own.types.contains_key(name), "{name} on a role's server");
    }
});

both_dbs!(fire_lag_is_measured, |env| async move {
    env.apply(
        r#"
name: metrics_every_second
schedules:
  - cron: "* * * * * ?"
tasks:
  - { name: tick, command: "true" }
"#,
    )
    .await;
    let server = Server::role(&env).await;
    let before = server.scrape().await;
    let count = "datajump_fire_lag_seconds_count";
    let _ticker = env.spawn_ticker().await;
    let after = server
        .scrape_until("three fires published", |s| {
            s.value(count, &[]) - before.value(count, &[]) >= 3.0
        })
        .await;
    // Fires on time, with a loose bound: each within 5 s of its second.
    let within = |s: &Scrape| s.value("datajump_fire_lag_seconds_bucket", &[("le", "5")]);
    assert_eq!(
        within(&after) - within(&before),
        after.value(count, &[]) - before.value(count, &[])
    );
});

both_dbs!(a_killed_run_counts_its_killed_attempts, |env| async move {
    env.apply("name: long_one\ntasks:\n  - { name: nap, command: 'sleep 30' }\n")
        .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 2).await;
    let api = Server::api(&env).await;
    let before = api.scrape().await;
    let key = env.trigger("long_one").await;
    api.scrape_until("nap running", |s| {
        s.get(TASKS_RUNNING, &[("queue", "default")]) == Some(1.0)
    })
    .await;
    let run = env.wait_run_created(&key, TIMEOUT).await;
    let (killed, effects) =
        datajump_engine::kill_run(&env.db, datajump_shared::RunId(run.id), chrono::Utc::now())
            .await
            .expect("kill the run")
            .expect("the run was live");
    assert_eq!(killed.len(), 1);
    effects.publish(&env.bus).await.expect("publish the kill");
    let killed = |s: &Scrape, name: &str| s.get(name, &[("status", "KILLED")]).unwrap_or(0.0);
    let after = api
        .scrape_until("the kill counted", |s| {
            killed(s, ATTEMPTS) > killed(&before, ATTEMPTS)
        })
        .await;
    assert_eq!(killed(&after, ATTEMPTS) - killed(&before, ATTEMPTS), 1.0);
    assert_eq!(
        killed(&after, "datajump_dag_runs_finished_total")
            - killed(&before, "datajump_dag_runs_finished_total"),
        1.0
    );
});

/// GETs `url` and returns its status and JSON body.
async fn probe(http: &reqwest::Client, url: &str) -> (u16, serde_json::Value) {
    let response = http
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    let body = response
        .json()
        .await
        .unwrap_or_else(|e| panic!("{url} answered no JSON: {e}"));
    (status, body)
}

// What an orchestrator watches on each role's `--metrics-addr`: ticker,
// resolver and runner processes answer `/healthz` and `/readyz` once up, and
// a runner given SIGTERM while a task runs leaves readiness (503 draining)
// at once but stays alive and finishes the task before it exits 0.
both_dbs!(role_probes_follow_a_runners_drain, |env| async move {
    let side = env.path("side");
    env.apply(&format!(
        r#"
name: drain
tasks:
  - {{ name: slow, command: "echo started >> {side}; sleep 3; echo finished >> {side}" }}
"#,
        side = shell_path(&side)
    ))
    .await;
    let address = || format!("127.0.0.1:{}", free_port());
    let (ticker_at, resolver_at, runner_at) = (address(), address(), address());
    let mut ticker =
        start_ticker_with(&env, "ticker", &[("DATAJUMP_METRICS_ADDR", &ticker_at)]).await;
    let mut resolver =
        start_resolver_with(&env, "resolver", &[("DATAJUMP_METRICS_ADDR", &resolver_at)]).await;
    let mut runner =
        start_runner(&env, "runner", 1, &[("DATAJUMP_METRICS_ADDR", &runner_at)]).await;

    let http = reqwest::Client::new();
    for at in [&ticker_at, &resolver_at, &runner_at] {
        let (status, body) = probe(&http, &format!("http://{at}/healthz")).await;
        assert_eq!((status, &body["status"]), (200, &"ok".into()), "{at}");
        let (status, body) = probe(&http, &format!("http://{at}/readyz")).await;
        assert_eq!(status, 200, "{at} /readyz: {body}");
        assert_eq!(
            body,
            serde_json::json!({ "status": "ok", "database": "ok", "nats": "ok" })
        );
    }

    let key = env.trigger("drain").await;
    wait_file_lines(&side, 1, Duration::from_secs(60)).await;
    runner.terminate();
    let readyz = format!("http://{runner_at}/readyz");
    let deadline = Instant::now() + Duration::from_secs(2);
    let body = loop {
        let (status, body) = probe(&http, &readyz).await;
        if status == 503 {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "still ready 2 s after SIGTERM: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(body["status"], "draining");
    let (status, _) = probe(&http, &format!("http://{runner_at}/healthz")).await;
    assert_eq!(status, 200, "a draining runner is alive");
    runner.assert_running();

    let exit = runner.wait_exit(Duration::from_secs(30)).await;
    assert!(
        exit.success(),
        "drained runner exited {exit}:\n{}",
        runner.log_text()
    );
    assert_eq!(
        std::fs::read_to_string(&side).expect("side file"),
        "started\nfinished\n",
        "the task the runner held ran to its end"
    );
    let run = env.wait_run(&key, Duration::from_secs(30)).await;
    assert_eq!(run.status, RunStatus::Success);
    ticker.assert_running();
    resolver.assert_running();
});
