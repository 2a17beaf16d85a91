//! What the web UI's pages read (api/src/routes/views.rs, stream.rs and the
//! DAG list): the runs × tasks grid, a run's Gantt bars, the live stream of
//! changes, a running attempt's log stream, the DAG list's recent runs and
//! schedules, the queues and who serves them, a backfill's dry run, and the UI itself at `/` — over real
//! HTTP in front of a real resolver and runner.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use datajump_shared::RunStatus;
use serde_json::{Value, json};

use crate::api::{Api, TIMEOUT};

/// The events of a Server-Sent Events answer, read as they arrive.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

/// One event: its name, id and data.
#[derive(Debug)]
struct Event {
    name: String,
    id: Option<String>,
    data: String,
}

impl Events {
    async fn open(api: &Api, path: &str) -> Events {
        let response = reqwest::Client::new()
            .get(format!("{}{path}", api.base()))
            .send()
            .await
            .expect("open the event stream");
        assert_eq!(response.status(), 200, "{path}");
        let kind = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(kind.starts_with("text/event-stream"), "{path}: {kind}");
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next event, or `None` when the stream ended or `deadline` passed.
    async fn next(&mut self, deadline: Instant) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event {
                    name: "message".to_owned(),
                    id: None,
                    data: String::new(),
                };
                let mut lines = 0;
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        event.name = name.trim().to_owned();
                    } else if let Some(id) = line.strip_prefix("id:") {
                        event.id = Some(id.trim().to_owned());
                    } else if let Some(data) = line.strip_prefix("data:") {
                        if lines > 0 {
                            event.data.push('\n');
                        }
                        event.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                        lines += 1;
                    }
                }
                if lines == 0 {
                    continue; // a keep-alive comment
                }
                return Some(event);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match tokio::time::timeout(left, self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }
}

async fn trigger(api: &Api, dag_id: i64) -> Value {
    let started = api
        .post(&format!("/api/v1/dags/{dag_id}/trigger"), json!({}))
        .await
        .expect(202);
    let status_url = started["statusUrl"].as_str().expect("statusUrl").to_owned();
    api.wait_run(&status_url).await
}

both_dbs!(
    the_grid_is_every_run_by_every_task_in_one_request,
    |env| async move {
        env.apply(
            r#"
name: gridded
tasks:
  - name: load
    depends_on: [extract]
    command: "true"
  - name: extract
    command: "true"
  - name: audit
    command: "true"
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("gridded").await;
        let mut run_ids = Vec::new();
        for _ in 0..3 {
            let run = trigger(&api, dag_id).await;
            assert_eq!(run["status"], "SUCCESS", "{run}");
            run_ids.push(run["id"].as_i64().expect("run id"));
        }
        // A run made last for an old business date (a backfill's) is shown
        // with its date: after the others.
        let started = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "bizDate": "2020-01-01" }),
            )
            .await
            .expect(202);
        let old_date = api
            .wait_run(started["statusUrl"].as_str().expect("statusUrl"))
            .await;
        assert_eq!(old_date["status"], "SUCCESS", "{old_date}");
        let old_date = old_date["id"].as_i64().expect("run id");

        let grid = api
            .get(&format!("/api/v1/dags/{dag_id}/grid"))
            .await
            .expect(200);
        let tasks: Vec<&str> = grid["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        // Parents first; among tasks ready together, the file's order: load
        // is listed first but waits for extract, and comes as soon as it may.
        assert_eq!(tasks, ["extract", "load", "audit"], "{grid}");
        let position = |name: &str| tasks.iter().position(|t| *t == name);
        assert_eq!(
            grid["tasks"][position("load").expect("load")]["upstream"],
            json!(["extract"])
        );
        let shown: Vec<i64> = grid["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter_map(|r| r["id"].as_i64())
            .collect();
        let mut by_date: Vec<i64> = run_ids.iter().rev().copied().collect();
        by_date.push(old_date);
        assert_eq!(
            shown, by_date,
            "latest business date first, newest first within a date"
        );
        assert_eq!(grid["runs"][3]["bizDate"], "2020-01-01");
        assert_eq!(grid["hasMore"], false);
        let newest = env.instances_by_name(run_ids[2]).await;
        for (row, name) in tasks.iter().enumerate() {
            let cell = &grid["runs"][0]["cells"][row];
            assert_eq!(cell[0], newest[*name].id, "{name}: {cell}");
            assert_eq!(cell[1], "SUCCESS", "{name}: {cell}");
            assert_eq!(cell[2], 1, "{name}: one attempt");
        }

        let page = api
            .get(&format!("/api/v1/dags/{dag_id}/grid?runs=2"))
            .await
            .expect(200);
        assert_eq!(page["runs"].as_array().map(Vec::len), Some(2));
        assert_eq!(page["hasMore"], true);
        let older = api
            .get(&format!(
                "/api/v1/dags/{dag_id}/grid?runs=2&before={}",
                run_ids[1]
            ))
            .await
            .expect(200);
        assert_eq!(older["runs"][0]["id"], run_ids[0]);
        assert_eq!(older["runs"][1]["id"], old_date);
        assert_eq!(older["hasMore"], false);
        let oldest = api
            .get(&format!(
                "/api/v1/dags/{dag_id}/grid?runs=2&before={}",
                run_ids[0]
            ))
            .await
            .expect(200);
        assert_eq!(oldest["runs"][0]["id"], old_date, "{oldest}");
        assert_eq!(oldest["runs"].as_array().map(Vec::len), Some(1));
        api.get(&format!("/api/v1/dags/{dag_id}/grid?runs=0"))
            .await
            .expect_error(400, "BAD_REQUEST", "runs");
        api.get("/api/v1/dags/999999/grid")
            .await
            .expect_error(404, "NOT_FOUND", "999999");
    }
);

both_dbs!(the_graph_draws_every_kind_of_dependency, |env| async move {
    env.apply(
        r#"
name: orders
tasks:
  - name: publish
    command: "true"
    outputs: ["dw.orders/${bizdate}"]
"#,
    )
    .await;
    env.apply(
        r#"
name: warehouse
schedules:
  - { name: after_orders, after: orders }
  - { name: after_crm, after: crm_later }
  - { name: when_fx, on: { all: [dim.fx_rates, dw.orders] } }
tasks:
  - name: extract
    command: "true"
  - name: audit
    command: "true"
  - name: load
    command: "true"
    depends_on: [extract, { task: audit, type: WEAK }]
  - name: wait_crm
    type: SENSOR
    content: { dataset: "ext.crm_users/${bizdate}" }
  - name: report
    command: "true"
    outputs: ["dw.report/${bizdate}"]
    depends_on:
      - load
      - wait_crm
      - { task: report, offset_day: -1 }
      - { task: load, previous_run: true }
      - { task: orders/publish, type: WEAK }
"#,
    )
    .await;
    let api = Api::start(&env, None).await;
    let orders = env.dag_id("orders").await;
    let dag_id = env.dag_id("warehouse").await;
    let graph = api
        .get(&format!("/api/v1/dags/{dag_id}/graph"))
        .await
        .expect(200);
    let nodes: Vec<(String, String)> = graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap_or("?").to_owned(),
                n["kind"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect();
    let kind_of = |id: &str| {
        nodes
            .iter()
            .find(|(node, _)| node == id)
            .map(|(_, kind)| kind.as_str())
    };
    for task in ["extract", "audit", "load", "wait_crm", "report"] {
        assert_eq!(kind_of(task), Some("TASK"), "{task}: {graph}");
    }
    assert_eq!(kind_of("dag/orders/publish"), Some("DAG_TASK"), "{graph}");
    assert_eq!(kind_of("run/-1/report"), Some("OTHER_RUN"), "{graph}");
    assert_eq!(kind_of("previous/load"), Some("OTHER_RUN"), "{graph}");
    assert_eq!(kind_of("after/orders"), Some("DAG"), "{graph}");
    assert_eq!(kind_of("after/crm_later"), Some("DAG"), "{graph}");
    for dataset in ["dim.fx_rates", "dw.orders", "ext.crm_users", "dw.report"] {
        assert_eq!(
            kind_of(&format!("dataset/{dataset}")),
            Some("DATASET"),
            "{dataset}: {graph}"
        );
    }
    assert_eq!(nodes.len(), 5 + 9, "each stub once: {graph}");
    let node = |id: &str| {
        graph["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|n| n["id"] == id))
            .cloned()
            .unwrap_or(Value::Null)
    };
    // A stub links to its DAG where the project has it.
    assert_eq!(node("dag/orders/publish")["dagId"], orders);
    assert_eq!(node("after/orders")["dagId"], orders);
    assert_eq!(node("after/crm_later")["dagId"], Value::Null);
    assert_eq!(node("wait_crm")["taskType"], "SENSOR");

    let edges: BTreeSet<(String, String, String)> = graph["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            let text = |key: &str| e[key].as_str().unwrap_or("?").to_owned();
            (text("source"), text("target"), text("kind"))
        })
        .collect();
    let expected: BTreeSet<(String, String, String)> = [
        ("extract", "load", "STRONG"),
        ("audit", "load", "WEAK"),
        ("load", "report", "STRONG"),
        ("wait_crm", "report", "STRONG"),
        ("run/-1/report", "report", "CROSS_RUN"),
        ("previous/load", "report", "PREVIOUS_RUN"),
        ("dag/orders/publish", "report", "CROSS_DAG"),
        ("dataset/ext.crm_users", "wait_crm", "READS"),
        // What starts a run reaches the tasks that wait for no other.
        ("after/orders", "extract", "AFTER"),
        ("after/orders", "audit", "AFTER"),
        ("after/orders", "wait_crm", "AFTER"),
        ("after/crm_later", "extract", "AFTER"),
        ("after/crm_later", "audit", "AFTER"),
        ("after/crm_later", "wait_crm", "AFTER"),
        ("dataset/dim.fx_rates", "extract", "READS"),
        ("dataset/dim.fx_rates", "audit", "READS"),
        ("dataset/dim.fx_rates", "wait_crm", "READS"),
        ("dataset/dw.orders", "extract", "READS"),
        ("dataset/dw.orders", "audit", "READS"),
        ("dataset/dw.orders", "wait_crm", "READS"),
        ("report", "dataset/dw.report", "WRITES"),
    ]
    .into_iter()
    .map(|(s, t, k)| (s.to_owned(), t.to_owned(), k.to_owned()))
    .collect();
    assert_eq!(edges, expected, "{graph}");
    let edge = |source: &str| {
        graph["edges"]
            .as_array()
            .and_then(|e| e.iter().find(|e| e["source"] == source))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(edge("run/-1/report")["offsetDay"], -1);
    assert_eq!(edge("dag/orders/publish")["weak"], true);
    assert_eq!(edge("previous/load")["weak"], false);

    // The canvas carries the WEAK edge as an edge, and saving what was
    // loaded keeps it WEAK and the version as it was.
    let url = format!("/api/v1/dags/{dag_id}/canvas");
    let canvas = api.get(&url).await.expect(200);
    let canvas_edges: BTreeSet<String> = canvas["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert!(
        canvas_edges
            .contains(&json!({ "source": "audit", "target": "load", "type": "WEAK" }).to_string()),
        "{canvas}"
    );
    assert!(
        canvas_edges.contains(&json!({ "source": "extract", "target": "load" }).to_string()),
        "{canvas}"
    );
    let load = canvas["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "load"))
        .cloned()
        .expect("load");
    assert_eq!(
        load["dependsOn"],
        json!([]),
        "edges are not repeated: {load}"
    );
    let same = api
        .post(
            &url,
            json!({ "tasks": canvas["tasks"], "edges": canvas["edges"] }),
        )
        .await
        .expect(200);
    assert_eq!(same["version"], canvas["version"], "{same}");
    assert_eq!(same["edges"], canvas["edges"]);
    let tasks = api
        .get(&format!("/api/v1/dags/{dag_id}/tasks"))
        .await
        .expect(200);
    let load = tasks["items"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "load"))
        .cloned()
        .expect("load");
    assert!(
        load["dependsOn"].as_array().is_some_and(|deps| deps
            .iter()
            .any(|d| d["task"] == "audit" && d["type"] == "WEAK")),
        "{load}"
    );

    api.get("/api/v1/dags/987654/graph")
        .await
        .expect_error(404, "NOT_FOUND", "987654");
});

both_dbs!(the_gantt_has_a_bar_for_every_attempt, |env| async move {
    let marker = env.path("failed-once");
    env.apply(&format!(
        r#"
name: flaky
tasks:
  - name: first
    command: "true"
  - name: second
    depends_on: [first]
    retry: {{ max: 1, interval: 0 }}
    command: "if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 3"
"#,
        marker = marker.display()
    ))
    .await;
    let _resolver = env.spawn_resolver().await;
    let _ticker = env.spawn_ticker().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let api = Api::start(&env, None).await;
    let run = trigger(&api, env.dag_id("flaky").await).await;
    assert_eq!(run["status"], "SUCCESS", "{run}");
    let gantt = api
        .get(&format!("/api/v1/dags/instances/{}/gantt", run["id"]))
        .await
        .expect(200);
    let bars: Vec<(String, i64, String)> = gantt["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|b| {
            (
                b["taskName"].as_str().unwrap_or_default().to_owned(),
                b["attempt"].as_i64().unwrap_or(-1),
                b["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        bars,
        vec![
            ("first".to_owned(), 0, "SUCCESS".to_owned()),
            ("second".to_owned(), 0, "FAILED".to_owned()),
            ("second".to_owned(), 1, "SUCCESS".to_owned()),
        ],
        "{gantt}"
    );
    for bar in gantt["attempts"].as_array().into_iter().flatten() {
        assert!(
            bar["endTime"].as_str() >= bar["startTime"].as_str(),
            "{bar}"
        );
        assert_eq!(bar["workerId"], "r1", "{bar}");
    }
});

both_dbs!(
    the_live_stream_shows_a_run_from_start_to_end,
    |env| async move {
        env.apply(
            r#"
name: watched
tasks:
  - name: a
    command: sleep 2
  - name: b
    depends_on: [a]
    command: "true"
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("watched").await;
        let mut events = Events::open(&api, "/api/v1/stream").await;
        let deadline = Instant::now() + TIMEOUT;
        let ready = events.next(deadline).await.expect("a first event");
        assert_eq!(ready.name, "ready");
        let run = trigger(&api, dag_id).await;
        let run_id = run["id"].as_i64().expect("run id");

        let mut task_states: Vec<(String, String)> = Vec::new();
        let mut run_states: Vec<String> = Vec::new();
        while !run_states.iter().any(|s| s == "SUCCESS") {
            let event = events.next(deadline).await.unwrap_or_else(|| {
                panic!("the stream ended early: {task_states:?} {run_states:?}")
            });
            let data: Value = serde_json::from_str(&event.data).expect("JSON data");
            match event.name.as_str() {
                "task" if data["runId"] == run_id => task_states.push((
                    data["taskName"].as_str().unwrap_or_default().to_owned(),
                    data["status"].as_str().unwrap_or_default().to_owned(),
                )),
                "run" if data["id"] == run_id => {
                    assert_eq!(data["dagId"], dag_id);
                    run_states.push(data["status"].as_str().unwrap_or_default().to_owned());
                }
                _ => {}
            }
        }
        assert!(
            task_states.contains(&("a".to_owned(), "RUNNING".to_owned())),
            "a two-second task is seen running: {task_states:?}"
        );
        for task in ["a", "b"] {
            assert_eq!(
                task_states
                    .iter()
                    .rev()
                    .find(|(t, _)| t == task)
                    .map(|(_, s)| s.as_str()),
                Some("SUCCESS"),
                "{task}: {task_states:?}"
            );
        }
        assert_eq!(
            run_states.first().map(String::as_str),
            Some("RUNNING"),
            "{run_states:?}"
        );
    }
);

both_dbs!(
    a_running_attempts_log_arrives_line_by_line,
    |env| async move {
        env.apply(
            r#"
name: chatty
tasks:
  - name: talk
    command: |
      for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.3; done
      printf 'progress 10%%\rprogress 100%%\n'
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("chatty").await;
        let started = api
            .post(&format!("/api/v1/dags/{dag_id}/trigger"), json!({}))
            .await
            .expect(202);
        let key = started["runKey"].as_str().expect("runKey").to_owned();
        let run = env.wait_run_created(&key, TIMEOUT).await;
        let deadline = Instant::now() + TIMEOUT;
        let id = loop {
            let talk = &env.instances_by_name(run.id).await["talk"];
            if talk.started_at.is_some() {
                break talk.id;
            }
            assert!(Instant::now() < deadline, "talk never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let mut events = Events::open(
            &api,
            &format!("/api/v1/dags/task-instances/{id}/log/stream"),
        )
        .await;
        let mut lines: Vec<(u64, String)> = Vec::new();
        let end = loop {
            let event = events
                .next(deadline)
                .await
                .expect("the stream ends with `end`");
            match event.name.as_str() {
                "line" => lines.push((
                    event
                        .id
                        .and_then(|n| n.parse().ok())
                        .expect("a line number"),
                    serde_json::from_str(&event.data).expect("a JSON string"),
                )),
                "end" => break event,
                other => panic!("unexpected event {other}: {}", event.data),
            }
        };
        let end: Value = serde_json::from_str(&end.data).expect("JSON");
        assert_eq!(end["status"], "SUCCESS", "{end}");
        lines.sort();
        lines.dedup();
        let numbers: Vec<u64> = lines.iter().map(|(n, _)| *n).collect();
        let first = numbers[0];
        assert_eq!(
            numbers,
            (first..first + numbers.len() as u64).collect::<Vec<_>>(),
            "every line once, blank ones too: {lines:?}"
        );
        let said: Vec<&str> = lines
            .iter()
            .filter(|(_, t)| t.starts_with("line "))
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(
            said,
            ["line 1", "line 2", "line 3", "line 4", "line 5", "line 6"]
        );
        if let Some((_, progress)) = lines.iter().find(|(_, t)| t.starts_with("progress")) {
            assert_eq!(progress, "progress 100%", "what a terminal shows");
        }
        // An attempt that ended answers at once.
        let mut ended = Events::open(
            &api,
            &format!("/api/v1/dags/task-instances/{id}/log/stream"),
        )
        .await;
        let event = ended
            .next(Instant::now() + Duration::from_secs(5))
            .await
            .expect("an end event");
        assert_eq!(event.name, "end");
        assert_eq!(env.wait_run(&key, TIMEOUT).await.status, RunStatus::Success);
    }
);

both_dbs!(
    the_dag_list_carries_recent_runs_and_schedules,
    |env| async move {
        env.apply(
            r#"
name: listed_daily
schedules:
  - cron: "0 0 2 * * ?"
tasks:
  - name: only
    command: "true"
"#,
        )
        .await;
        env.apply("name: listed_other\ntasks:\n  - name: only\n    command: \"true\"\n")
            .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("listed_daily").await;
        let first = trigger(&api, dag_id).await;
        let second = trigger(&api, dag_id).await;

        let page = api.get("/api/v1/dags").await.expect(200);
        let daily = page["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|d| d["name"] == "listed_daily")
            .expect("listed_daily listed")
            .clone();
        assert_eq!(
            daily["recentRuns"][0]["id"], second["id"],
            "newest first: {daily}"
        );
        assert_eq!(daily["recentRuns"][1]["id"], first["id"]);
        assert_eq!(daily["recentRuns"][0]["status"], "SUCCESS");
        assert_eq!(daily["schedules"][0]["cronExpression"], "0 0 2 * * ?");
        assert!(daily["schedules"][0]["nextFireTime"].is_string(), "{daily}");

        let found = api.get("/api/v1/dags?search=OTHER").await.expect(200);
        let names: Vec<&str> = found["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|d| d["name"].as_str())
            .collect();
        assert_eq!(names, ["listed_other"]);
        assert_eq!(found["items"][0]["recentRuns"], json!([]));
        let none = api.get("/api/v1/dags?search=%25").await.expect(200);
        assert_eq!(
            none["total"], 0,
            "a % is a character, not a wildcard: {none}"
        );
    }
);

both_dbs!(
    a_queue_no_runner_serves_shows_with_what_waits_on_it,
    |env| async move {
        env.apply(
            r#"
name: on_gpu
tasks:
  - name: prepare
    command: "true"
  - name: train
    depends_on: [prepare]
    queue: gpu
    priority: 8
    command: "true"
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("on_gpu").await;
        let queue = |page: &Value, name: &str| {
            page["items"]
                .as_array()
                .and_then(|items| items.iter().find(|q| q["queue"] == name))
                .cloned()
        };

        let before = api.get("/api/v1/queues").await.expect(200);
        let gpu = queue(&before, "gpu").expect("a queue an online DAG names is listed");
        assert_eq!(gpu["unserved"], true, "{gpu}");
        assert_eq!(gpu["dags"], 1, "{gpu}");
        assert_eq!(gpu["queuedTasks"], 0, "{gpu}");
        let default = queue(&before, "default").expect("default");
        assert_eq!(default["unserved"], false, "{default}");
        assert_eq!(default["runners"], 1, "{default}");
        assert_eq!(default["slots"], 4, "{default}");

        let started = api
            .post(&format!("/api/v1/dags/{dag_id}/trigger"), json!({}))
            .await
            .expect(202);
        let status_url = started["statusUrl"].as_str().expect("statusUrl").to_owned();
        // `prepare` runs on default; `train` then waits on gpu, which no
        // runner serves.
        let deadline = Instant::now() + TIMEOUT;
        let gpu = loop {
            let page = api.get("/api/v1/queues").await.expect(200);
            let gpu = queue(&page, "gpu").expect("gpu");
            if gpu["queuedTasks"] == 1 {
                break gpu;
            }
            assert!(Instant::now() < deadline, "train never queued: {page}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(gpu["unserved"], true, "{gpu}");
        assert_eq!(gpu["runners"], 0, "{gpu}");

        assert_eq!(gpu["backlog"], json!([]), "no consumer yet: {gpu}");

        // A runner for gpu takes it.
        let gpu_runner = env.spawn_runner("r2", &["gpu"], 2).await;
        let run = api.wait_run(&status_url).await;
        assert_eq!(run["status"], "SUCCESS", "{run}");
        let after = api.get("/api/v1/queues").await.expect(200);
        let gpu = queue(&after, "gpu").expect("gpu");
        assert_eq!(gpu["unserved"], false, "{gpu}");
        assert_eq!(gpu["runners"], 1, "{gpu}");
        assert_eq!(gpu["slots"], 2, "{gpu}");
        assert_eq!(gpu["queuedTasks"], 0, "{gpu}");
        assert_eq!(gpu["runningTasks"], 0, "{gpu}");

        // That runner gone, the next `train` waits in its band of the
        // consumer the runner left behind.
        gpu_runner.stop().await;
        api.post(&format!("/api/v1/dags/{dag_id}/trigger"), json!({}))
            .await
            .expect(202);
        let deadline = Instant::now() + TIMEOUT;
        let gpu = loop {
            let page = api.get("/api/v1/queues").await.expect(200);
            let gpu = queue(&page, "gpu").expect("gpu");
            if gpu["queuedTasks"] == 1 && gpu["backlog"] != json!([]) {
                break gpu;
            }
            assert!(Instant::now() < deadline, "train never queued: {page}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(gpu["unserved"], true, "{gpu}");
        assert_eq!(
            gpu["backlog"],
            json!([{"priority": 8, "pending": 1, "ackPending": 0}]),
            "{gpu}"
        );
        api.get("/api/v1/queues?pageSize=0")
            .await
            .expect_error(400, "BAD_REQUEST", "pageSize");
    }
);

both_dbs!(
    a_backfill_dry_run_says_what_would_run_and_starts_nothing,
    |env| async move {
        env.apply(
            r#"
name: refill
schedules:
  - cron: "0 0 2 * * ?"
tasks:
  - name: only
    command: "true"
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("refill").await;
        let ran = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "bizDate": "2026-11-02" }),
            )
            .await
            .expect(202);
        api.wait_run(ran["statusUrl"].as_str().expect("statusUrl"))
            .await;
        let body = json!({ "from": "2026-11-01", "to": "2026-11-03" });
        let preview = api
            .post(
                &format!("/api/v1/dags/{dag_id}/backfill?dryRun=true"),
                body.clone(),
            )
            .await
            .expect(200);
        assert_eq!(preview["dryRun"], true);
        let dates: Vec<&str> = preview["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter_map(|r| r["bizDate"].as_str())
            .collect();
        assert_eq!(dates, ["2026-11-01", "2026-11-03"], "{preview}");
        assert_eq!(preview["skipped"][0]["bizDate"], "2026-11-02");
        assert!(
            preview["skipped"][0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("already has run")),
            "{preview}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            env.runs_of(dag_id).await.len(),
            1,
            "a dry run starts nothing"
        );
        let started = api
            .post(&format!("/api/v1/dags/{dag_id}/backfill"), body)
            .await
            .expect(202);
        assert_eq!(started["dryRun"], false);
        assert_eq!(started["runs"].as_array().map(Vec::len), Some(2));
    }
);

both_dbs!(the_web_ui_is_served_beside_the_api, |env| async move {
    let api = Api::start(&env, None).await;
    for page in ["/", "/dags/3", "/runs/12?tab=gantt"] {
        let answer = api.get(page).await;
        let kind = answer
            .headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert_eq!(kind, "text/html; charset=utf-8", "{page}");
        if datajump_ui::is_built() {
            assert_eq!(answer.status, 200, "{page}");
            assert!(answer.text.contains("<div id=\"root\">"), "{}", answer.text);
            let policy = answer
                .headers
                .get(reqwest::header::CONTENT_SECURITY_POLICY)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            assert!(policy.contains("default-src 'self'"), "{policy}");
        } else {
            assert_eq!(answer.status, 404, "{page}");
            assert!(
                answer.text.contains("npm --prefix web ci"),
                "{}",
                answer.text
            );
        }
    }
    // The API's own paths keep their JSON errors.
    api.get("/api/v1/nothing-here")
        .await
        .expect_error(404, "NOT_FOUND", "no endpoint");
    // A page reached by another name (DNS rebinding) gets no UI either.
    let rebound = reqwest::Client::new()
        .get(format!("{}/", api.base()))
        .header(reqwest::header::HOST, "attacker.example")
        .send()
        .await
        .expect("request");
    assert_eq!(rebound.status(), 403);
});
