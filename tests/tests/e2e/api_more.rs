//! The REST API beyond the product's API paths, over real HTTP as in [`crate::api`]: a
//! DAG's `/schedules` collection, executions by business date and task,
//! rerun, backfill, and the OpenAPI document covering every route.

use std::time::Duration;

use futures::StreamExt;
use reqwest::Method;
use serde_json::json;

use crate::api::{Api, id_of};

use crate::harness::dj;

/// Waits for the next schedule-change announcement tickers listen to.
async fn announced(changes: &mut async_nats::Subscriber, what: &str) {
    tokio::time::timeout(Duration::from_secs(10), changes.next())
        .await
        .unwrap_or_else(|_| panic!("tickers were not told about {what}"))
        .expect("subscription open");
}

both_dbs!(api_schedules_collection, |env| async move {
    let api = Api::start(&env, None).await;
    let mut changes = env
        .nats
        .subscribe(dj().schedules_changed())
        .await
        .expect("subscribe to schedule changes");
    let dag = api
        .post("/api/v1/dags", json!({ "name": "reports" }))
        .await
        .expect(201);
    let dag_id = id_of(&dag);
    let url = format!("/api/v1/dags/{dag_id}/schedules");
    let empty = api.get(&url).await.expect(200);
    assert_eq!(empty["total"], 0, "{empty}");

    // Create: a cron schedule, then an event trigger.
    let created = api
        .post(
            &url,
            json!({ "name": "morning", "cronExpression": "0 0 8 * * ?", "timezone": "UTC" }),
        )
        .await;
    let location = created
        .headers
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let morning = created.expect(201);
    let morning_id = morning["scheduleId"].as_i64().expect("scheduleId");
    assert_eq!(location, Some(format!("{url}/{morning_id}")));
    assert_eq!(morning["cronExpression"], "0 0 8 * * ?");
    assert_eq!(morning["enabled"], true);
    // Every setting of the schedule is in its answer.
    for (field, value) in [
        ("startDate", json!(null)),
        ("endDate", json!(null)),
        ("catchup", json!("latest")),
        ("misfireGrace", json!(60)),
        ("bizDateOffset", json!(-1)),
    ] {
        assert_eq!(morning[field], value, "{field} in {morning}");
    }
    assert!(morning["catchupLimit"].is_i64(), "{morning}");
    assert!(
        morning["nextFireTime"]
            .as_str()
            .is_some_and(|t| t.contains("T08:00:00")),
        "{morning}"
    );
    announced(&mut changes, "a new schedule").await;
    let orders = api
        .post(
            &url,
            json!({ "name": "orders", "eventName": "orders.ready" }),
        )
        .await
        .expect(201);
    assert_eq!(orders["kind"], "EVENT");
    assert_eq!(orders["eventName"], "orders.ready");
    let orders_id = orders["scheduleId"].as_i64().expect("scheduleId");

    // Bad input.
    api.post(
        &url,
        json!({ "name": "morning", "cronExpression": "@daily" }),
    )
    .await
    .expect_error(409, "CONFLICT", "morning");
    api.post(
        &url,
        json!({ "name": "x", "cronExpression": "0 61 * * * ?" }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`cronExpression`");
    api.post(&url, json!({ "name": "x", "cron": "@daily" }))
        .await
        .expect_error(400, "BAD_REQUEST", "`cron`");
    api.post(&url, json!({ "cronExpression": "@daily" }))
        .await
        .expect_error(400, "BAD_REQUEST", "`name`");
    api.post(&url, json!({ "name": "x" })).await.expect_error(
        400,
        "BAD_REQUEST",
        "`cronExpression`",
    );
    api.post(
        &url,
        json!({ "name": "x", "cronExpression": "@daily", "eventName": "a.b" }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`eventName`");
    api.post(&url, json!({ "name": "x", "eventName": "Bad..Name" }))
        .await
        .expect_error(400, "BAD_REQUEST", "Bad..Name");
    api.send(Method::POST, &url, Some("{".to_owned()), true)
        .await
        .expect_error(400, "BAD_REQUEST", "not valid JSON");
    api.post("/api/v1/dags/987654/schedules", json!({ "name": "x" }))
        .await
        .expect_error(404, "NOT_FOUND", "987654");

    // List, paginated; the singular /schedule now answers 409.
    let page = api.get(&format!("{url}?pageSize=1")).await.expect(200);
    assert_eq!(page["total"], 2, "{page}");
    assert_eq!(page["items"][0]["name"], "morning");
    let page2 = api
        .get(&format!("{url}?page=2&pageSize=1"))
        .await
        .expect(200);
    assert_eq!(page2["items"][0]["name"], "orders");
    api.get(&format!("{url}?pageSize=0"))
        .await
        .expect_error(400, "BAD_REQUEST", "pageSize");
    api.get(&format!("/api/v1/dags/{dag_id}/schedule"))
        .await
        .expect_error(409, "CONFLICT", "2 schedules");

    // One schedule: get, change (it keeps its id), pause, resume.
    let one = format!("{url}/{morning_id}");
    assert_eq!(api.get(&one).await.expect(200)["name"], "morning");
    let changed = api
        .put(&one, json!({ "cronExpression": "0 30 9 * * ?" }))
        .await
        .expect(200);
    assert_eq!(changed["scheduleId"], morning_id);
    assert_eq!(changed["cronExpression"], "0 30 9 * * ?");
    assert_eq!(changed["timezone"], "UTC", "fields left out are kept");
    announced(&mut changes, "a changed schedule").await;
    api.put(&one, json!({ "name": "evening" }))
        .await
        .expect_error(400, "BAD_REQUEST", "renamed");
    api.put(&one, json!({ "enable": false }))
        .await
        .expect_error(400, "BAD_REQUEST", "`enable`");
    let paused = api.post_empty(&format!("{one}/disable")).await.expect(200);
    assert_eq!(paused["enabled"], false);
    assert!(paused["nextFireTime"].is_null());
    let resumed = api.post_empty(&format!("{one}/enable")).await.expect(200);
    assert_eq!(resumed["enabled"], true);
    let dag_now = api.get(&format!("/api/v1/dags/{dag_id}")).await.expect(200);
    assert!(
        dag_now["version"].as_i64().is_some_and(|v| v > 1),
        "schedule changes bump the DAG's version: {dag_now}"
    );

    // Unknown ids, and a schedule of another DAG.
    api.get(&format!("{url}/987654"))
        .await
        .expect_error(404, "NOT_FOUND", "987654");
    let other = api
        .post("/api/v1/dags", json!({ "name": "other" }))
        .await
        .expect(201);
    api.get(&format!(
        "/api/v1/dags/{}/schedules/{morning_id}",
        id_of(&other)
    ))
    .await
    .expect_error(404, "NOT_FOUND", "no schedule");
    api.get(&format!("{url}/abc"))
        .await
        .expect_error(400, "BAD_REQUEST", "scheduleId");

    // Delete one: the other is the DAG's only schedule again.
    api.delete(&format!("{url}/{orders_id}")).await.expect(204);
    announced(&mut changes, "a removed schedule").await;
    api.delete(&format!("{url}/{orders_id}"))
        .await
        .expect_error(404, "NOT_FOUND", "no schedule");
    let primary = api
        .get(&format!("/api/v1/dags/{dag_id}/schedule"))
        .await
        .expect(200);
    assert_eq!(primary["scheduleId"], morning_id);
    assert_eq!(api.get(&url).await.expect(200)["total"], 1);
});

both_dbs!(api_executions_rerun_and_backfill, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let api = Api::start(&env, None).await;
    let marker = env.path("upstream-ready");
    let dag = api
        .post(
            "/api/v1/dags",
            json!({
                "name": "warehouse",
                "overlap": "wait",
                "tasks": [
                    { "name": "extract", "command": "echo extracted" },
                    {
                        "name": "load",
                        "command": format!("test -f {}", marker.display()),
                        "dependsOn": ["extract"],
                        "retry": { "max": 0 },
                    },
                ],
            }),
        )
        .await
        .expect(201);
    let dag_id = id_of(&dag);

    // A run whose `load` fails, then a rerun of the failed part only.
    let triggered = api
        .post(
            &format!("/api/v1/dags/{dag_id}/trigger"),
            json!({ "bizDate": "2023-12-31" }),
        )
        .await
        .expect(202);
    let status_url = triggered["statusUrl"].as_str().expect("statusUrl");
    let failed = api.wait_run(status_url).await;
    assert_eq!(failed["status"], "FAILED", "{failed}");
    let run_id = id_of(&failed);
    std::fs::write(&marker, "").expect("marker file");
    let rerun = api
        .post(
            &format!("/api/v1/dags/instances/{run_id}/rerun"),
            json!({ "failedOnly": true }),
        )
        .await
        .expect(200);
    assert_eq!(rerun["id"], run_id);
    assert_eq!(rerun["failedOnly"], true);
    assert_eq!(
        rerun["queuedTaskInstances"][0]["taskName"], "load",
        "{rerun}"
    );
    let again = api.wait_run(status_url).await;
    assert_eq!(again["status"], "SUCCESS", "{again}");
    let extract = again["taskInstances"]
        .as_array()
        .and_then(|all| all.iter().find(|t| t["taskName"] == "extract"))
        .expect("extract instance");
    assert_eq!(extract["attempts"], 1, "extract was not rerun: {again}");
    api.post(
        &format!("/api/v1/dags/instances/{run_id}/rerun"),
        json!({ "failed_only": true }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`failed_only`");
    api.post_empty("/api/v1/dags/instances/987654/rerun")
        .await
        .expect_error(404, "NOT_FOUND", "987654");

    // Backfill three business dates, then an overlapping range.
    let url = format!("/api/v1/dags/{dag_id}/backfill");
    let first = api
        .post(&url, json!({ "from": "2024-01-01", "to": "2024-01-03" }))
        .await
        .expect(202);
    let runs = first["runs"].as_array().expect("runs").clone();
    assert_eq!(runs.len(), 3, "{first}");
    assert_eq!(runs[1]["bizDate"], "2024-01-02");
    for run in &runs {
        let done = api
            .wait_run(run["statusUrl"].as_str().expect("statusUrl"))
            .await;
        assert_eq!(done["status"], "SUCCESS", "{done}");
        assert_eq!(done["triggerType"], "BACKFILL", "{done}");
        assert_eq!(done["bizDate"], run["bizDate"], "{done}");
    }
    let second = api
        .post(&url, json!({ "from": "2024-01-02", "to": "2024-01-04" }))
        .await
        .expect(202);
    assert_eq!(second["runs"].as_array().map(Vec::len), Some(1), "{second}");
    assert_eq!(second["runs"][0]["bizDate"], "2024-01-04");
    let skipped = second["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 2, "{second}");
    assert!(skipped.iter().all(|s| s["runId"].is_i64()), "{second}");
    api.wait_run(second["runs"][0]["statusUrl"].as_str().expect("statusUrl"))
        .await;
    api.post(&url, json!({ "from": "2024-01-05", "to": "2024-01-04" }))
        .await
        .expect_error(400, "BAD_REQUEST", "`to`");
    api.post(
        &url,
        json!({ "from": "2024-01-05", "to": "2024-01-06", "parallel": 2 }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`parallel`");
    api.post(&url, json!({ "from": "January", "to": "2024-01-06" }))
        .await
        .expect_error(400, "BAD_REQUEST", "`from`");
    api.post(
        "/api/v1/dags/987654/backfill",
        json!({ "from": "2024-01-05", "to": "2024-01-06" }),
    )
    .await
    .expect_error(404, "NOT_FOUND", "987654");

    // Executions by business date and task.
    let executions = format!("/api/v1/dags/{dag_id}/executions");
    let load = api
        .get(&format!("{executions}?bizDate=2024-01-02&task=load"))
        .await
        .expect(200);
    assert_eq!(load["total"], 1, "{load}");
    assert_eq!(load["items"][0]["taskName"], "load");
    assert_eq!(load["items"][0]["bizDate"], "2024-01-02");
    assert_eq!(load["items"][0]["status"], "SUCCESS");
    assert_eq!(load["items"][0]["triggerType"], "BACKFILL");
    let day = api
        .get(&format!("{executions}?bizDate=2024-01-02"))
        .await
        .expect(200);
    assert_eq!(day["total"], 2, "{day}");
    let all_loads = api
        .get(&format!("{executions}?task=load&pageSize=2"))
        .await
        .expect(200);
    assert_eq!(all_loads["total"], 5, "{all_loads}");
    assert_eq!(
        all_loads["items"][0]["bizDate"], "2024-01-04",
        "newest first"
    );
    let page3 = api
        .get(&format!("{executions}?task=load&pageSize=2&page=3"))
        .await
        .expect(200);
    assert_eq!(page3["items"][0]["bizDate"], "2023-12-31", "{page3}");
    let succeeded = api
        .get(&format!("{executions}?status=SUCCESS"))
        .await
        .expect(200);
    assert_eq!(succeeded["total"], 10, "{succeeded}");
    let none = api
        .get(&format!("{executions}?bizDate=2020-01-01"))
        .await
        .expect(200);
    assert_eq!(none["total"], 0);
    api.get(&format!("{executions}?bizDate=yesterday"))
        .await
        .expect_error(400, "BAD_REQUEST", "bizDate");
    api.get(&format!("{executions}?status=BROKEN"))
        .await
        .expect_error(400, "BAD_REQUEST", "status");
    api.get(&format!("{executions}?taskName=load"))
        .await
        .expect_error(400, "BAD_REQUEST", "taskName");
    api.get("/api/v1/dags/987654/executions")
        .await
        .expect_error(404, "NOT_FOUND", "987654");
    env.check_roles();
});

both_dbs!(api_rerun_of_a_live_run_conflicts, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let api = Api::start(&env, None).await;
    let dag = api
        .post(
            "/api/v1/dags",
            json!({
                "name": "slow",
                "tasks": [{ "name": "nap", "command": "sleep 60", "retry": { "max": 0 } }],
            }),
        )
        .await
        .expect(201);
    let triggered = api
        .post_empty(&format!("/api/v1/dags/{}/trigger", id_of(&dag)))
        .await
        .expect(202);
    let status_url = triggered["statusUrl"].as_str().expect("statusUrl");
    api.wait_task_running(status_url).await;
    let run_id = id_of(&api.get(status_url).await.expect(200));
    api.post_empty(&format!("/api/v1/dags/instances/{run_id}/rerun"))
        .await
        .expect_error(409, "CONFLICT", "nap");
    api.post_empty(&format!("/api/v1/dags/instances/{run_id}/kill"))
        .await
        .expect(200);
    api.wait_run(status_url).await;
    env.check_roles();
});

/// A concrete path for a documented one: ids that do not exist.
fn probe_path(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment {
            "{name}" => "probe.openapi",
            "{runKey}" => "manual:none",
            s if s.starts_with('{') => "987654",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

both_dbs!(api_openapi_document_covers_every_route, |env| async move {
    let api = Api::start(&env, None).await;
    let document = api.get("/api/v1/openapi.json").await.expect(200);
    assert!(
        document["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.")),
        "{document}"
    );
    let paths = document["paths"].as_object().expect("paths");
    for (path, method) in [
        ("/api/v1/dags/{dagId}/schedules", "post"),
        ("/api/v1/dags/{dagId}/schedules/{scheduleId}", "delete"),
        ("/api/v1/dags/{dagId}/executions", "get"),
        ("/api/v1/dags/instances/{instanceId}/rerun", "post"),
        ("/api/v1/dags/{dagId}/backfill", "post"),
        ("/api/v1/openapi.json", "get"),
        ("/healthz", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} is not documented"
        );
    }
    // Every documented operation is served: the router answers it with
    // its handler, never with "no endpoint" or "method not allowed".
    let mut probed = 0;
    for (path, item) in paths {
        for method in item.as_object().expect("path item").keys() {
            let verb =
                Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("an HTTP method");
            let concrete = probe_path(path);
            if path.ends_with("/stream") {
                // An event stream answers for as long as it is read: its
                // headers say it is served.
                let response = reqwest::Client::new()
                    .request(verb, format!("{}{concrete}", api.base()))
                    .send()
                    .await
                    .expect("open the stream");
                if response.status() != 200 {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    assert!(
                        status != 405 && !text.contains("no endpoint"),
                        "{method} {path} ({concrete}) is documented but not served: {text}"
                    );
                }
                probed += 1;
                continue;
            }
            let answer = api.send(verb, &concrete, None, true).await;
            let message = answer.body["message"].as_str().unwrap_or_default();
            assert!(
                answer.status != 405 && !message.starts_with("no endpoint"),
                "{method} {path} ({concrete}) is documented but not served: {}",
                answer.text
            );
            probed += 1;
        }
    }
    assert!(probed > 30, "only {probed} operations documented");
});

both_dbs!(api_canvas_save_and_load, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let api = Api::start(&env, None).await;
    let gate = env.path("gate");
    let dag = api
        .post("/api/v1/dags", json!({ "name": "drawn" }))
        .await
        .expect(201);
    let dag_id = id_of(&dag);
    let url = format!("/api/v1/dags/{dag_id}/canvas");

    // Save: nodes with positions, an edge; load gives them back.
    let saved = api
        .post(
            &url,
            json!({
                "tasks": [
                    {
                        "name": "first",
                        "command": format!("while [ ! -f {} ]; do sleep 0.1; done", gate.display()),
                        "positionX": 10,
                        "positionY": 20,
                    },
                    { "name": "second", "command": "echo old", "positionX": 10, "positionY": 120 },
                ],
                "edges": [{ "source": "first", "target": "second" }],
            }),
        )
        .await
        .expect(200);
    let v1 = saved["version"].as_i64().expect("version");
    assert_eq!(v1, 2, "saving the canvas bumped the version: {saved}");
    assert_eq!(
        saved["edges"],
        json!([{ "source": "first", "target": "second" }])
    );
    let loaded = api.get(&url).await.expect(200);
    assert_eq!(loaded["tasks"][1]["name"], "second");
    assert_eq!(loaded["tasks"][1]["positionY"], 120);
    assert_eq!(
        loaded["tasks"][1]["dependsOn"],
        json!([]),
        "edges are not repeated"
    );
    assert_eq!(loaded["edges"], saved["edges"]);
    let tasks = api
        .get(&format!("/api/v1/dags/{dag_id}/tasks"))
        .await
        .expect(200);
    assert_eq!(tasks["items"][1]["dependsOn"][0]["task"], "first");

    // Saving what was loaded (ids and all) changes nothing.
    let same = api
        .post(
            &url,
            json!({ "tasks": loaded["tasks"], "edges": loaded["edges"] }),
        )
        .await
        .expect(200);
    assert_eq!(same["version"], v1);
    // Edges between node ids, as a canvas library saves them: each node's
    // `id` as loaded stands for its task.
    let by_id = api
        .post(
            &url,
            json!({
                "tasks": loaded["tasks"],
                "edges": [{
                    "id": "xy-edge",
                    "source": loaded["tasks"][0]["id"],
                    "target": loaded["tasks"][1]["id"],
                }],
            }),
        )
        .await
        .expect(200);
    assert_eq!(by_id["version"], v1, "the same edge, by ids: {by_id}");
    assert_eq!(by_id["edges"], saved["edges"]);

    // Bad canvases change nothing.
    let cyclic = json!({
        "tasks": [
            { "name": "a", "command": "true" },
            { "name": "b", "command": "true" },
        ],
        "edges": [{ "source": "a", "target": "b" }, { "source": "b", "target": "a" }],
    });
    api.post(&url, cyclic)
        .await
        .expect_error(400, "BAD_REQUEST", "cycle detected: a -> b -> a");
    api.post(
        &url,
        json!({ "tasks": [{ "name": "a", "command": "true" }], "edges": [{ "source": "a", "target": "z" }] }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "edges[0].target");
    api.post(&url, json!({ "tasks": [], "nodes": [] }))
        .await
        .expect_error(400, "BAD_REQUEST", "`nodes`");
    api.post(
        &url,
        json!({ "tasks": [{ "name": "a", "comand": "true" }] }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`comand`");
    api.post(
        &url,
        json!({ "tasks": [{ "name": "a", "command": "true", "positionX": "left" }] }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "positionX");
    api.send(Method::POST, &url, Some("[".to_owned()), true)
        .await
        .expect_error(400, "BAD_REQUEST", "not valid JSON");
    api.get("/api/v1/dags/987654/canvas")
        .await
        .expect_error(404, "NOT_FOUND", "987654");
    assert_eq!(api.get(&url).await.expect(200)["version"], v1);

    // Edit the canvas while a run is in flight: the run keeps its snapshot.
    let triggered = api
        .post_empty(&format!("/api/v1/dags/{dag_id}/trigger"))
        .await
        .expect(202);
    let status_url = triggered["statusUrl"].as_str().expect("statusUrl");
    api.wait_task_running(status_url).await;
    let edited = api
        .post(
            &url,
            json!({
                "tasks": [
                    { "name": "first", "command": "true" },
                    { "name": "replacement", "command": "echo new" },
                ],
            }),
        )
        .await
        .expect(200);
    assert_eq!(edited["version"], v1 + 1);
    assert_eq!(edited["edges"], json!([]), "missing edges are no edges");
    std::fs::write(&gate, "").expect("gate file");
    let run = api.wait_run(status_url).await;
    assert_eq!(run["status"], "SUCCESS", "{run}");
    assert_eq!(run["dagVersion"], v1, "{run}");
    let names: Vec<&str> = run["taskInstances"]
        .as_array()
        .expect("taskInstances")
        .iter()
        .filter_map(|t| t["taskName"].as_str())
        .collect();
    assert_eq!(names, ["first", "second"], "{run}");
    let log = api
        .get(&format!(
            "/api/v1/dags/task-instances/{}/log",
            run["taskInstances"][1]["id"]
        ))
        .await;
    assert!(log.text.contains("old"), "{}", log.text);
    // The next run takes the new definition.
    let next = api
        .post_empty(&format!("/api/v1/dags/{dag_id}/trigger"))
        .await
        .expect(202);
    let next = api
        .wait_run(next["statusUrl"].as_str().expect("statusUrl"))
        .await;
    assert_eq!(next["dagVersion"], v1 + 1, "{next}");
    assert_eq!(
        next["taskInstances"][1]["taskName"], "replacement",
        "{next}"
    );
    env.check_roles();
});

both_dbs!(
    a_stored_reason_carries_its_code_beside_its_words,
    |env| async move {
        env.apply(
            r#"
name: reasons
tasks:
  - name: breaks
    command: "exit 3"
    retry: { max: 0 }
  - name: after_it
    command: "true"
    depends_on: [breaks]
  - name: switched_off
    command: "true"
    enabled: false
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("reasons").await;
        let started = api
            .post(&format!("/api/v1/dags/{dag_id}/trigger"), json!({}))
            .await
            .expect(202);
        let run = api
            .wait_run(started["statusUrl"].as_str().expect("statusUrl"))
            .await;
        let detail = api
            .get(&format!("/api/v1/dags/instances/{}", run["id"]))
            .await
            .expect(200);
        let instance = |name: &str| {
            detail["taskInstances"]
                .as_array()
                .and_then(|all| all.iter().find(|t| t["taskName"] == name))
                .cloned()
                .unwrap_or_else(|| panic!("{name}: {detail}"))
        };
        let breaks = instance("breaks");
        assert_eq!(breaks["errorMessage"], "exit code 3", "{breaks}");
        assert_eq!(
            breaks["errorProblem"],
            json!({ "code": "attempt.exit_code", "params": { "code": "3" } })
        );
        assert_eq!(
            instance("after_it")["errorProblem"]["code"],
            "task.upstream_failed"
        );
        assert_eq!(
            instance("switched_off")["errorProblem"]["code"],
            "task.disabled"
        );
        let attempt = api
            .get(&format!("/api/v1/dags/task-instances/{}", breaks["id"]))
            .await
            .expect(200);
        assert_eq!(
            attempt["executions"][0]["errorProblem"],
            json!({ "code": "attempt.exit_code", "params": { "code": "3" } }),
            "{attempt}"
        );

        // A mark says who made it and what it set.
        api.post(
            &format!("/api/v1/task-instances/{}/mark", breaks["id"]),
            json!({ "status": "SUCCESS" }),
        )
        .await
        .expect(200);
        let marked = api
            .get(&format!("/api/v1/dags/task-instances/{}", breaks["id"]))
            .await
            .expect(200);
        assert_eq!(marked["errorMessage"], "marked SUCCESS by a user");
        assert_eq!(
            marked["errorProblem"],
            json!({ "code": "task.marked", "params": { "status": "SUCCESS" } })
        );
    }
);

// #40: an invalid DAG's problems come with the code and values a UI says
// them from, index for index with the English `details`; a problem said in
// English only has `null` there, and nothing is stored.
both_dbs!(
    an_invalid_dags_problems_carry_codes_beside_their_words,
    |env| async move {
        let api = Api::start(&env, None).await;
        let refused = api
            .post(
                "/api/v1/dags",
                json!({
                    "name": "coded",
                    "schedules": [{ "name": "nightly", "cron": "0 60 2 * * ?" }],
                    "tasks": [
                        { "name": "load", "command": "true", "dependsOn": ["extract"], "priority": 11 },
                        { "name": "twice", "command": "true" },
                        { "name": "twice", "command": "true" },
                        { "name": "q", "command": "true", "retry": { "max": -1 } },
                    ],
                }),
            )
            .await;
        assert_eq!(refused.status, 400, "{}", refused.text);
        let details = refused.body["details"].as_array().expect("details");
        let coded = refused.body["detailProblems"]
            .as_array()
            .expect("detailProblems");
        assert_eq!(details.len(), coded.len(), "{}", refused.body);
        let code_of = |needle: &str| {
            let index = details
                .iter()
                .position(|d| d.as_str().is_some_and(|d| d.contains(needle)))
                .unwrap_or_else(|| panic!("no detail with {needle:?}: {}", refused.body));
            coded[index].clone()
        };
        assert_eq!(
            code_of("depends on unknown task 'extract'"),
            json!({ "code": "dag.unknown_dependency", "params": { "task": "load", "parent": "extract" } })
        );
        assert_eq!(
            code_of("priority must be 1-10"),
            json!({ "code": "dag.priority", "params": { "task": "load", "value": "11" } })
        );
        assert_eq!(
            code_of("defined 2 times"),
            json!({ "code": "dag.defined_twice", "params": { "task": "twice", "count": "2" } })
        );
        let cron = code_of("schedule 'nightly'");
        assert_eq!(cron["code"], "cron.out_of_range", "{cron}");
        assert_eq!(cron["params"]["schedule"], "nightly", "{cron}");
        assert_eq!(cron["params"]["value"], "60", "{cron}");
        assert_eq!(code_of("retry max and interval"), json!(null));
        assert!(
            datajump_store::catalog::dag_by_name(&env.db, "coded")
                .await
                .is_err(),
            "a DAG was stored"
        );
    }
);

// #41: a SWITCH over the API: its conditions checked as they are typed,
// hostile ones refused before any parser sees them, a bad branch refused
// naming its case, and a stored SWITCH reading back as itself.
both_dbs!(
    switch_conditions_are_checked_and_hostile_ones_refused,
    |env| async move {
        let api = Api::start(&env, None).await;
        let check = |condition: String| {
            let api = &api;
            async move {
                api.post(
                    "/api/v1/dags/validate-condition",
                    json!({ "condition": condition }),
                )
                .await
                .expect(200)
            }
        };
        let valid = check("int(tasks.count.output.rows) > 0 && params.region == 'eu'".into()).await;
        assert_eq!(valid["valid"], true, "{valid}");
        assert_eq!(
            valid["reads"],
            json!(["params.region", "tasks.count.output.rows"])
        );
        let broken = check("tasks.count.status ==".into()).await;
        assert_eq!(broken["valid"], false);
        assert!(
            broken["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("the condition does not parse at line 1, column 22")),
            "{broken}"
        );
        let outside = check("env.HOME != ''".into()).await;
        assert!(
            outside["error"]
                .as_str()
                .is_some_and(|e| e.contains("reads 'env' at column 1")),
            "{outside}"
        );
        // Deep enough to overflow any stack if a parser saw it.
        let deep = check(format!("{}1{}", "(".repeat(50_000), ")".repeat(50_000))).await;
        assert!(
            deep["error"].as_str().is_some_and(
                |e| e.contains("is 100001 bytes long; a condition may be at most 1024")
            ),
            "{deep}"
        );
        let nested = check(format!("{}1{} == 1", "[".repeat(40), "]".repeat(40))).await;
        assert!(
            nested["error"]
                .as_str()
                .is_some_and(|e| e.contains("nests brackets 17 deep at column 17")),
            "{nested}"
        );
        let looped = check("[1,2].all(x, [3].exists(y, x < y))".into()).await;
        assert!(
            looped["error"]
                .as_str()
                .is_some_and(|e| e.contains("inside another macro")),
            "{looped}"
        );
        // The longest chain the limits allow compiles on its own thread.
        let chain = format!("{} > 0", vec!["1"; 500].join("+"));
        assert_eq!(check(chain).await["valid"], true);
        api.get("/healthz").await.expect(200);

        let dag = |then: &str| {
            json!({
                "name": "routed",
                "tasks": [
                    { "name": "count", "command": "true" },
                    {
                        "name": "route", "type": "SWITCH", "dependsOn": ["count"],
                        "cases": [{ "when": "tasks.count.status == 'SUCCESS'", "then": [then] }],
                        "default": ["notice"],
                    },
                    { "name": "load", "command": "true", "dependsOn": ["route"] },
                    { "name": "notice", "command": "true", "dependsOn": ["route"] },
                ],
            })
        };
        let refused = api.post("/api/v1/dags", dag("count")).await;
        assert_eq!(refused.status, 400, "{}", refused.text);
        assert!(
            refused
                .text
                .contains("task 'route': cases[0].then: 'count' is not a child of 'route'")
                && refused
                    .text
                    .contains("'load' depends on it, but no case and not 'default' names it"),
            "{}",
            refused.text
        );
        let created = api.post("/api/v1/dags", dag("load")).await.expect(201);
        let id = id_of(&created);
        let before = api.get(&format!("/api/v1/dags/{id}")).await.expect(200);
        let after = api
            .put(&format!("/api/v1/dags/{id}"), json!({}))
            .await
            .expect(200);
        assert_eq!(
            before["version"], after["version"],
            "a SWITCH reads back as itself: {after}"
        );
    }
);
