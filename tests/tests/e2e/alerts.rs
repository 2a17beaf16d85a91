//! Alerting against a real local webhook receiver: a failing run, a task's
//! final failure, a timeout and an SLA miss each reach the webhook once, with
//! the secret header resolved, retried with backoff while the receiver
//! answers 500; `datajump alerts test` (the real CLI) reports delivery.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use datajump_shared::alerts::status;
use datajump_shared::entities::alert;
use datajump_shared::{RunStatus, secrets};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

const TIMEOUT: Duration = Duration::from_secs(90);
const TOKEN: &str = "hook-s3cret-42";

/// One request the receiver got: its header lines and JSON body.
#[derive(Debug, Clone)]
struct Received {
    headers: Vec<String>,
    body: serde_json::Value,
}

/// A webhook receiver answering 500 to its first `failures` requests and
/// 200 afterwards.
fn receiver(failures: usize) -> (u16, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let requests = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut headers = Vec::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                headers.push(line.trim_end().to_owned());
                line.clear();
            }
            let length = headers
                .iter()
                .find_map(|h| {
                    let (name, value) = h.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let mut requests = requests.lock().expect("requests");
            let answer: &[u8] = if requests.len() < failures {
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            };
            requests.push(Received {
                headers,
                body: serde_json::from_slice(&body).unwrap_or_default(),
            });
            drop(requests);
            let _ = (&stream).write_all(answer);
        }
    });
    (port, seen)
}

both_dbs!(failures_timeouts_and_sla_misses_alert, |env| async move {
    let (port, seen) = receiver(2);
    let refused = env
        .try_apply(&format!(
            r#"
name: alerting
alerts:
  webhooks: [{{ url: "http://127.0.0.1:{port}/hook", headers: {{ Authorization: "Bearer {TOKEN}" }} }}]
tasks: [{{ name: a, command: "true" }}]
"#
        ))
        .await
        .expect_err("a literal credential is refused");
    assert!(
        refused.contains("webhooks[0]: header 'Authorization'"),
        "{refused}"
    );

    secrets::set(&env.db, "hook_token", TOKEN, None)
        .await
        .expect("secret");
    env.apply(&format!(
        r#"
name: alerting
alerts:
  webhooks:
    - url: http://127.0.0.1:{port}/hook
      headers: {{ Authorization: "Bearer ${{secret:hook_token}}" }}
  sla: 1
tasks:
  - {{ name: slow, command: "sleep 4" }}
  - {{ name: boom, command: "exit 2", retry: {{ max: 0 }} }}
  - {{ name: late, command: "sleep 10", timeout: 1, retry: {{ max: 0 }} }}
"#
    ))
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let run = env.wait_run(&env.trigger("alerting").await, TIMEOUT).await;
    assert_eq!(run.status, RunStatus::Failed);

    // run_failed, task_failed for boom and late, timeout for late, sla_miss.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let alerts = loop {
        let alerts = alert::Entity::find()
            .filter(alert::Column::DagRunId.eq(run.id))
            .all(&env.db)
            .await
            .expect("alerts");
        if alerts.len() == 5 && alerts.iter().all(|a| a.status == status::SENT) {
            break alerts;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "alerts not all sent: {alerts:#?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let mut kinds: Vec<&str> = alerts.iter().map(|a| a.kind.as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "run_failed",
            "sla_miss",
            "task_failed",
            "task_failed",
            "timeout"
        ]
    );
    let retried: Vec<_> = alerts.iter().filter(|a| a.attempts > 1).collect();
    assert!(
        !retried.is_empty(),
        "the two 500s were retried: {alerts:#?}"
    );

    let received = seen.lock().expect("requests").clone();
    assert_eq!(received.len(), 5 + 2, "each alert once, plus the two 500s");
    for request in &received {
        assert!(
            request
                .headers
                .iter()
                .any(|h| h.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}"))),
            "{request:?}"
        );
    }
    let boom = received
        .iter()
        .find(|r| r.body["kind"] == "task_failed" && r.body["taskName"] == "boom")
        .expect("boom's alert");
    assert_eq!(boom.body["dag"], "alerting");
    assert_eq!(boom.body["runId"], run.id);
    assert_eq!(boom.body["status"], "FAILED");

    // The API shows them, with their delivery.
    let api = crate::api::Api::start(&env, None).await;
    let listed = api
        .get(&format!("/api/v1/dags/{}/alerts?pageSize=50", run.dag_id))
        .await
        .expect(200);
    assert_eq!(listed["total"], 5, "{listed}");
    let items = listed["items"].as_array().expect("items");
    assert!(
        items.iter().all(|a| a["status"] == "SENT"
            && a["webhook"] == format!("http://127.0.0.1:{port}/hook")
            && a["runId"] == run.id),
        "{listed}"
    );
    assert!(
        items.iter().any(|a| a["attempts"].as_i64() > Some(1)),
        "{listed}"
    );

    // The definition over the API shows the alerts, and changing the DAG
    // through the API (a schedule added) keeps them.
    let detail = api
        .get(&format!("/api/v1/dags/{}", run.dag_id))
        .await
        .expect(200);
    assert_eq!(
        detail["alerts"]["webhooks"][0]["headers"]["Authorization"], "Bearer ${secret:hook_token}",
        "{detail}"
    );
    api.post(
        &format!("/api/v1/dags/{}/schedules", run.dag_id),
        serde_json::json!({ "name": "nightly", "cronExpression": "0 0 3 * * ?" }),
    )
    .await
    .expect(201);
    let dag = datajump_shared::entities::dag::Entity::find_by_id(run.dag_id)
        .one(&env.db)
        .await
        .expect("dag")
        .expect("dag row");
    assert!(
        dag.alert_config.is_some_and(|c| c["sla"] == 1),
        "the alert config survives an API change"
    );

    // The real CLI: a test alert reaches the receiver and is reported SENT.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_datajump-under-test"))
        .args(["--database-url", &env.db_url, "--nats-url", &env.nats_url()])
        .args(["alerts", "test", "alerting"])
        .env("DATAJUMP_LOG", "warn")
        .output()
        .await
        .expect("datajump alerts test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("http://127.0.0.1:{port}/hook: SENT (HTTP 200)")),
        "{stdout}"
    );
    let last = seen
        .lock()
        .expect("requests")
        .last()
        .cloned()
        .expect("a test alert");
    assert_eq!(last.body["kind"], "test");
});
