//! Reads that grow with a DAG cannot take the API down: forty readers at
//! once of a 3,000-task DAG's definition, canvas and run (a dashboard left
//! open in many tabs, or anyone with a viewer token) keep the real `datajump
//! api` process under 300 MB, and every reader gets the whole answer.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::process::Process;
use crate::harness::{Backend, TestEnv, free_port};

const TASKS: usize = 3_000;
const READERS: usize = 40;
const LIMIT_BYTES: u64 = 300 * 1024 * 1024;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_readers_of_a_3000_task_dag_stay_under_300_mb() {
    let env = TestEnv::new(Backend::Sqlite).await;
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

    let tasks: Vec<Value> = (0..TASKS)
        .map(|i| {
            json!({
                "name": format!("load_partition_{i}"),
                "command": "echo loading",
                "description": format!("loads partition {i} of the orders table into the warehouse"),
                "params": { "table": format!("orders_{i}") },
            })
        })
        .collect();
    let created: Value = http
        .post(format!("{base}/api/v1/dags"))
        .json(&json!({ "name": "wide", "tasks": tasks }))
        .send()
        .await
        .expect("create the DAG")
        .json()
        .await
        .expect("created");
    let dag_id = created["id"].as_i64().expect("DAG id");
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
        .wait_run_created(&run_key, Duration::from_secs(60))
        .await;

    let before = peak_rss(api.pid());
    for path in [
        format!("/api/v1/dags/{dag_id}"),
        format!("/api/v1/dags/{dag_id}/canvas"),
        format!("/api/v1/dags/instances/{}", run.id),
    ] {
        let reads = (0..READERS).map(|_| {
            let (http, url) = (http.clone(), format!("{base}{path}"));
            tokio::spawn(async move {
                let response = http.get(url).send().await.expect("read");
                assert_eq!(response.status().as_u16(), 200);
                response.bytes().await.expect("body").len()
            })
        });
        let sizes: Vec<usize> = futures::future::join_all(reads)
            .await
            .into_iter()
            .map(|size| size.expect("reader"))
            .collect();
        assert!(
            sizes
                .iter()
                .all(|size| *size == sizes[0] && *size > TASKS * 50),
            "{path}: every reader gets the whole answer: {sizes:?}"
        );
    }
    let peak = peak_rss(api.pid());
    assert!(
        peak < LIMIT_BYTES,
        "the API peaked at {} MB (from {} MB before the reads)",
        peak / (1024 * 1024),
        before / (1024 * 1024)
    );
    api.assert_running();
}
