//! Reads that grow with a DAG cannot take the API down: forty readers at
//! once of a 3,000-task DAG whose tasks wait for 50 others each — ten each
//! of its definition, canvas, grid and run (a dashboard left open in many
//! tabs, or anyone with a viewer token) — keep the real `datajump api`
//! process under 400 MB, and every reader gets the whole answer.
//!
//! Served unbounded, the forty would hold some 2 GB (about 50 MB each).
//! Served two at a time, the live memory is that of two reads, but the
//! peak resident set is higher and varies from run to run (230 to 300 MB
//! seen in a debug build): glibc keeps memory a thread freed in that
//! thread's arena, up to 64 MB each once large blocks have been freed, so
//! it depends on how many threads the reads happened to run on. The limit
//! leaves room for that spread and fails long before readers add up.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::process::Process;
use crate::harness::{Backend, TestEnv, free_port};

const TASKS: usize = 3_000;
const DEPENDENCIES: usize = 50;
const READERS: usize = 40;
const LIMIT_BYTES: u64 = 400 * 1024 * 1024;

/// The process's peak resident set (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("process status")
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmHWM")
}

/// Task `i` of the DAG in the file's form: it waits for the (up to) 50
/// tasks before it.
fn task(i: usize) -> Value {
    let depends_on: Vec<String> = (i.saturating_sub(DEPENDENCIES)..i)
        .map(|parent| format!("load_partition_{parent}"))
        .collect();
    json!({
        "name": format!("load_partition_{i}"),
        "command": "echo loading",
        "description": format!("loads partition {i} of the orders table into the warehouse"),
        "params": { "table": format!("orders_{i}") },
        "depends_on": depends_on,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_readers_of_a_3000_task_dag_stay_under_400_mb() {
    let env = TestEnv::new(Backend::Sqlite).await;
    // Applied as `datajump up` applies its DAG files: such a definition is
    // larger than the API takes in one request.
    let tasks: Vec<Value> = (0..TASKS).map(task).collect();
    env.apply(&json!({ "name": "wide", "tasks": tasks }).to_string())
        .await;
    let dag_id = env.dag_id("wide").await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut api = Process::start(
        &env,
        "api",
        &["api", "--addr", &format!("127.0.0.1:{port}")],
        &[],
    );
    api.wait_log("API listening", Duration::from_secs(60)).await;
    let _resolver = env.spawn_resolver().await;
    let http = reqwest::Client::new();
    let triggered: Value = http
        .post(format!("{base}/api/v1/dags/{dag_id}/trigger"))
        .json(&json!({}))
        .send()
        .await
        .expect("trigger")
        .json()
        .await
        .expect("triggered");
    let run_key = triggered["runKey"].as_str().expect("run key").to_owned();
    let run = env
        .wait_run_created(&run_key, Duration::from_secs(120))
        .await;

    let paths = [
        format!("/api/v1/dags/{dag_id}"),
        format!("/api/v1/dags/{dag_id}/canvas"),
        format!("/api/v1/dags/{dag_id}/grid"),
        format!("/api/v1/dags/{dag_id}/graph"),
        format!("/api/v1/dags/instances/{}", run.id),
    ];
    let before = peak_rss(api.pid());
    let mut peaks = Vec::new();
    // One reader of each answer, then forty at once, eight of each.
    for readers in [1, READERS] {
        let reads = (0..readers.max(paths.len())).map(|i| {
            let path = paths[i % paths.len()].clone();
            let (http, url) = (http.clone(), format!("{base}{path}"));
            tokio::spawn(async move {
                let response = http.get(url).send().await.expect("read");
                assert_eq!(response.status().as_u16(), 200, "{path}");
                (path, response.bytes().await.expect("body").len())
            })
        });
        let mut sizes: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        if readers == 1 {
            for read in reads {
                let (path, size) = read.await.expect("reader");
                sizes.entry(path).or_default().push(size);
            }
        } else {
            for read in futures::future::join_all(reads).await {
                let (path, size) = read.expect("reader");
                sizes.entry(path).or_default().push(size);
            }
        }
        for (path, sizes) in &sizes {
            assert!(
                sizes
                    .iter()
                    .all(|size| *size == sizes[0] && *size > TASKS * 50),
                "{path}: every reader gets the whole answer: {sizes:?}"
            );
        }
        let peak = peak_rss(api.pid());
        peaks.push((readers, peak / (1024 * 1024)));
        assert!(
            peak < LIMIT_BYTES,
            "the API peaked at {} MB (from {} MB before the reads; by readers at once: {peaks:?})",
            peak / (1024 * 1024),
            before / (1024 * 1024)
        );
    }
    eprintln!(
        "the API started at {} MB; peaks (MB) by readers at once: {peaks:?}",
        before / (1024 * 1024)
    );
    api.assert_running();
}
