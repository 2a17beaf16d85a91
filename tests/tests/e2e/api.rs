//! The REST API over real HTTP: `datajump_api::serve_on` on 127.0.0.1:0 in
//! front of the test's database and NATS, with a real resolver and runner,
//! driven with reqwest — success paths and the main error paths (400, 401,
//! 404, 409) of each endpoint group.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::harness::{TestEnv, dj};

pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);

/// A running API server and an HTTP client for it; stopped on drop.
pub(crate) struct Api {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
    stop: CancellationToken,
}

impl Drop for Api {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// An answer: status and JSON body (`Null` when empty or not JSON).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Value,
    pub(crate) text: String,
    pub(crate) headers: reqwest::header::HeaderMap,
}

impl Answer {
    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub(crate) fn expect(self, status: u16) -> Value {
        assert_eq!(self.status, status, "unexpected answer: {}", self.text);
        self.body
    }

    /// Asserts an error answer: status, code, and a word of the message.
    #[track_caller]
    pub(crate) fn expect_error(self, status: u16, code: &str, needle: &str) {
        assert_eq!(self.status, status, "unexpected answer: {}", self.text);
        assert_eq!(self.body["error"], code, "{}", self.text);
        let message = self.body["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(needle),
            "message {message:?} lacks {needle:?}"
        );
    }
}

impl Api {
    /// Serves the API for `env` (its own connections, as a separate process
    /// would have), requiring `token` for changes when given.
    pub(crate) async fn start(env: &TestEnv, token: Option<&str>) -> Api {
        Api::start_with(env, token, datajump_api::BrowserRules::default()).await
    }

    /// As [`Api::start`], with `browser` as the extra names and origins.
    pub(crate) async fn start_with(
        env: &TestEnv,
        token: Option<&str>,
        browser: datajump_api::BrowserRules,
    ) -> Api {
        Api::start_configured(env, token, |config| config.browser = browser).await
    }

    /// As [`Api::start`], with the configuration changed by `adjust`.
    pub(crate) async fn start_configured(
        env: &TestEnv,
        token: Option<&str>,
        adjust: impl FnOnce(&mut datajump_api::Config),
    ) -> Api {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let db = datajump_store::db::connect(&env.db_url)
            .await
            .expect("API database connection");
        let nats = datajump_nats::connect(&env.nats_url(), "api")
            .await
            .expect("API NATS connection");
        let mut config = datajump_api::Config {
            installation: env.bus.installation().clone(),
            names: dj(),
            replicas: datajump_nats::Replicas::AUTO,
            db,
            nats,
            addr,
            token: token.map(str::to_owned),
            timezone: chrono_tz::Asia::Shanghai,
            browser: datajump_api::BrowserRules::default(),
            insecure_no_auth: false,
            public_metrics: false,
        };
        adjust(&mut config);
        let stop = CancellationToken::new();
        let token_for_server = stop.clone();
        tokio::spawn(async move {
            if let Err(e) = datajump_api::serve_on(listener, config, token_for_server).await {
                eprintln!("API server stopped: {e}");
            }
        });
        let api = Api {
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
            token: token.map(str::to_owned),
            stop,
        };
        // The API's NATS connection is made in the background: wait until
        // it reports ready, as a load balancer would.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = api.get("/readyz").await;
            if ready.status == 200 {
                break;
            }
            assert!(Instant::now() < deadline, "API not ready: {}", ready.text);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        api
    }

    /// The server's base URL (`http://127.0.0.1:PORT`), for `datajump --api`.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Sends a request with the API's token (if any) and an optional raw body.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        auth: bool,
    ) -> Answer {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if auth && let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        let response = request.send().await.expect("HTTP request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("HTTP body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            body,
            text,
            headers,
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None, true).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> Answer {
        self.send(Method::POST, path, Some(body.to_string()), true)
            .await
    }

    pub(crate) async fn post_empty(&self, path: &str) -> Answer {
        self.send(Method::POST, path, None, true).await
    }

    pub(crate) async fn put(&self, path: &str, body: Value) -> Answer {
        self.send(Method::PUT, path, Some(body.to_string()), true)
            .await
    }

    pub(crate) async fn delete(&self, path: &str) -> Answer {
        self.send(Method::DELETE, path, None, true).await
    }

    /// Follows a trigger's `statusUrl` until the run is finished.
    pub(crate) async fn wait_run(&self, status_url: &str) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let answer = self.get(status_url).await;
            if answer.status == 200 {
                let status = answer.body["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if !matches!(status.as_str(), "RUNNING" | "QUEUED") {
                    return answer.body;
                }
            } else {
                assert_eq!(answer.status, 404, "{}", answer.text);
            }
            assert!(
                Instant::now() < deadline,
                "run at {status_url} not finished: {}",
                answer.text
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the task instance is RUNNING (its process has started).
    pub(crate) async fn wait_task_running(&self, status_url: &str) -> i64 {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let answer = self.get(status_url).await;
            if answer.status == 200
                && let Some(task) = answer.body["taskInstances"].get(0)
                && task["status"] == "RUNNING"
            {
                return task["id"].as_i64().expect("task instance id");
            }
            assert!(
                Instant::now() < deadline,
                "no running task at {status_url}: {}",
                answer.text
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

pub(crate) fn id_of(body: &Value) -> i64 {
    body["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no id in {body}"))
}

both_dbs!(api_dag_lifecycle_and_runs, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let api = Api::start(&env, None).await;

    api.get("/healthz").await.expect(200);
    let ready = api.get("/readyz").await.expect(200);
    assert_eq!(ready["database"], "ok");

    // Create with tasks, in the DAG file's shape with camelCase names.
    let created = api
        .post(
            "/api/v1/dags",
            json!({
                "name": "greeter",
                "description": "says hello",
                "projectId": 1,
                "maxActiveRuns": 2,
                "params": { "greeting": "default" },
                "tasks": [
                    { "name": "hello", "command": "echo hello ${greeting:shell}" },
                    {
                        "name": "bye",
                        "command": "echo bye",
                        "dependsOn": ["hello"],
                        "retry": { "max": 0, "onExitCodes": [] },
                    },
                ],
            }),
        )
        .await;
    assert!(created.headers.get("location").is_some());
    let created = created.expect(201);
    let dag_id = id_of(&created);
    assert_eq!(created["version"], 1);
    assert_eq!(created["maxActiveRuns"], 2);
    assert_eq!(created["tasks"][1]["dependsOn"][0]["task"], "hello");
    assert_eq!(created["tasks"][1]["retry"]["max"], 0);

    // Bad input: duplicate name, unknown field, cycle, snake_case, bad JSON.
    api.post("/api/v1/dags", json!({ "name": "greeter" }))
        .await
        .expect_error(409, "CONFLICT", "already exists");
    api.post("/api/v1/dags", json!({ "name": "x", "colour": "red" }))
        .await
        .expect_error(400, "BAD_REQUEST", "`colour`");
    api.post(
        "/api/v1/dags",
        json!({ "name": "x", "tasks": [{ "name": "a", "command": "true", "retrys": 1 }] }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`retrys`");
    api.post("/api/v1/dags", json!({ "name": "x", "max_active_runs": 1 }))
        .await
        .expect_error(400, "BAD_REQUEST", "`max_active_runs`");
    api.post(
        "/api/v1/dags",
        json!({
            "name": "loop",
            "tasks": [
                { "name": "a", "command": "true", "dependsOn": ["c"] },
                { "name": "b", "command": "true", "dependsOn": ["a"] },
                { "name": "c", "command": "true", "dependsOn": ["b"] },
            ],
        }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "cycle: ");
    api.send(Method::POST, "/api/v1/dags", Some("{".to_owned()), true)
        .await
        .expect_error(400, "BAD_REQUEST", "not valid JSON");
    api.post(
        "/api/v1/dags",
        json!({ "name": "x", "schedules": [{ "cron": "0 61 * * *" }] }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "invalid cron");

    // Minimal DAGs (§6.1 fields only), one in another project; pagination.
    api.post("/api/v1/dags", json!({ "name": "nowhere", "projectId": 2 }))
        .await
        .expect_error(400, "BAD_REQUEST", "no project with id 2");
    datajump_store::projects::create(&env.db, "elsewhere", "")
        .await
        .expect("project 2");
    for (name, project) in [("second", 1), ("third", 1), ("elsewhere", 2)] {
        api.post(
            "/api/v1/dags",
            json!({ "name": name, "description": "minimal", "projectId": project }),
        )
        .await
        .expect(201);
    }
    let page1 = api.get("/api/v1/dags?pageSize=2").await.expect(200);
    assert_eq!(page1["total"], 3);
    assert_eq!(page1["page"], 1);
    assert_eq!(page1["pageSize"], 2);
    assert_eq!(page1["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(page1["items"][0]["name"], "greeter");
    let page2 = api.get("/api/v1/dags?page=2&pageSize=2").await.expect(200);
    assert_eq!(page2["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(page2["items"][0]["name"], "third");
    let other = api.get("/api/v1/dags?projectId=2").await.expect(200);
    assert_eq!(other["total"], 1);
    assert_eq!(other["items"][0]["name"], "elsewhere");
    api.get("/api/v1/dags?pageSize=0")
        .await
        .expect_error(400, "BAD_REQUEST", "pageSize");
    api.get("/api/v1/dags?sort=name")
        .await
        .expect_error(400, "BAD_REQUEST", "sort");

    // Get, tasks, update (fields left out are kept), online/offline.
    let got = api.get(&format!("/api/v1/dags/{dag_id}")).await.expect(200);
    assert_eq!(got["name"], "greeter");
    assert_eq!(got["params"]["greeting"], "default");
    let tasks = api
        .get(&format!("/api/v1/dags/{dag_id}/tasks"))
        .await
        .expect(200);
    assert_eq!(tasks["total"], 2);
    assert!(tasks["items"][0]["id"].is_i64());
    assert_eq!(tasks["items"][1]["dependsOn"][0]["task"], "hello");
    let updated = api
        .put(
            &format!("/api/v1/dags/{dag_id}"),
            json!({ "description": "says hello, politely" }),
        )
        .await
        .expect(200);
    assert_eq!(updated["version"], 2);
    assert_eq!(updated["description"], "says hello, politely");
    assert_eq!(updated["tasks"].as_array().map(Vec::len), Some(2));
    let unchanged = api
        .put(&format!("/api/v1/dags/{dag_id}"), json!({}))
        .await
        .expect(200);
    assert_eq!(
        unchanged["version"], 2,
        "re-applying the same definition changed it"
    );
    api.put(
        &format!("/api/v1/dags/{dag_id}"),
        json!({ "name": "renamed" }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "renamed");
    let offline = api
        .post_empty(&format!("/api/v1/dags/{dag_id}/offline"))
        .await
        .expect(200);
    assert_eq!(offline["online"], false);
    let online = api
        .post_empty(&format!("/api/v1/dags/{dag_id}/online"))
        .await
        .expect(200);
    assert_eq!(online["online"], true);

    // Edge validation (§6.3).
    let cyclic = api
        .post(
            &format!("/api/v1/dags/{dag_id}/validate"),
            json!({ "edges": [
                { "source": "a", "target": "b" },
                { "source": "b", "target": "c" },
                { "source": "c", "target": "a" },
            ] }),
        )
        .await
        .expect(200);
    assert_eq!(cyclic["valid"], false);
    let message = cyclic["message"].as_str().unwrap_or_default();
    for node in ["a", "b", "c"] {
        assert!(message.contains(node), "{message}");
    }
    let fine = api
        .post(
            &format!("/api/v1/dags/{dag_id}/validate"),
            json!({ "edges": [{ "source": "a", "target": "b" }] }),
        )
        .await
        .expect(200);
    assert_eq!(fine["valid"], true);
    // As a canvas library sends them: edge ids, numeric node ids.
    let drawn = api
        .post(
            &format!("/api/v1/dags/{dag_id}/validate"),
            json!({ "edges": [
                { "id": "e1-2", "source": 1, "target": 2, "type": "smoothstep" },
                { "id": "e2-1", "source": "2", "target": 1 },
            ] }),
        )
        .await
        .expect(200);
    assert_eq!(drawn["valid"], false, "{drawn}");
    assert_eq!(drawn["cycle"], json!(["1", "2", "1"]), "{drawn}");
    api.post(
        &format!("/api/v1/dags/{dag_id}/validate"),
        json!({ "edges": [{ "source": 1.5, "target": 2 }] }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "a node id is a string or an integer");
    api.post(
        &format!("/api/v1/dags/{dag_id}/validate"),
        json!({ "edges": [{ "sorce": "a", "target": "b" }] }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "source");
    let empty = api
        .post(&format!("/api/v1/dags/{dag_id}/validate"), json!({}))
        .await
        .expect(200);
    assert_eq!(empty["valid"], true);
    let no_body = api
        .post_empty(&format!("/api/v1/dags/{dag_id}/validate"))
        .await
        .expect(200);
    assert_eq!(no_body["valid"], true);

    // Trigger with params and follow the run to SUCCESS.
    let triggered = api
        .post(
            &format!("/api/v1/dags/{dag_id}/trigger"),
            json!({ "params": { "greeting": "from-the-api" } }),
        )
        .await
        .expect(202);
    assert_eq!(triggered["dagId"], dag_id);
    let run_key = triggered["runKey"].as_str().expect("runKey").to_owned();
    let status_url = triggered["statusUrl"]
        .as_str()
        .expect("statusUrl")
        .to_owned();
    assert!(status_url.ends_with(&run_key), "{status_url}");
    let run = api.wait_run(&status_url).await;
    assert_eq!(run["status"], "SUCCESS", "{run}");
    assert_eq!(run["runKey"], run_key.as_str());
    assert_eq!(run["triggerType"], "MANUAL");
    assert_eq!(run["runParams"]["greeting"], "from-the-api");
    let run_id = id_of(&run);

    let history = api
        .get(&format!("/api/v1/dags/{dag_id}/instances?limit=20"))
        .await
        .expect(200);
    assert_eq!(history["total"], 1);
    assert_eq!(history["items"][0]["id"], run_id);
    let detail = api
        .get(&format!("/api/v1/dags/instances/{run_id}"))
        .await
        .expect(200);
    let instances = detail["taskInstances"].as_array().expect("taskInstances");
    assert_eq!(instances.len(), 2);
    assert!(
        instances.iter().all(|t| t["status"] == "SUCCESS"),
        "{detail}"
    );
    let status = api
        .get(&format!("/api/v1/dags/instances/{run_id}/status"))
        .await
        .expect(200);
    assert_eq!(status["status"], "SUCCESS");
    assert_eq!(status["finished"], true);
    assert_eq!(status["taskCounts"]["SUCCESS"], 2);

    let hello = instances
        .iter()
        .find(|t| t["taskName"] == "hello")
        .expect("hello instance");
    let hello_id = id_of(hello);
    let task = api
        .get(&format!("/api/v1/dags/task-instances/{hello_id}"))
        .await
        .expect(200);
    assert_eq!(task["executions"].as_array().map(Vec::len), Some(1));
    assert_eq!(task["executions"][0]["exitCode"], 0);
    let log = api
        .get(&format!("/api/v1/dags/task-instances/{hello_id}/log"))
        .await;
    assert_eq!(log.status, 200, "{}", log.text);
    assert!(
        log.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/plain")),
        "{:?}",
        log.headers
    );
    // #38 (low): task output is never sniffed into HTML by a browser.
    assert_eq!(
        log.headers
            .get("x-content-type-options")
            .and_then(|v| v.to_str().ok()),
        Some("nosniff"),
        "{:?}",
        log.headers
    );
    assert!(log.text.contains("hello from-the-api"), "{}", log.text);
    assert!(
        log.text
            .contains("========== Task Execution End =========="),
        "{}",
        log.text
    );
    assert_eq!(
        log.headers
            .get("x-datajump-log-source")
            .and_then(|v| v.to_str().ok()),
        Some("full"),
        "an ended attempt's short log is whole: {:?}",
        log.headers
    );
    let first = api
        .get(&format!(
            "/api/v1/dags/task-instances/{hello_id}/log?attempt=0"
        ))
        .await;
    assert_eq!(first.status, 200);
    assert!(first.text.contains("hello from-the-api"), "{}", first.text);
    api.get(&format!(
        "/api/v1/dags/task-instances/{hello_id}/log?attempt=7"
    ))
    .await
    .expect_error(404, "NOT_FOUND", "no attempt 7");

    // Unknown ids and bad ids.
    for path in [
        "/api/v1/dags/987654".to_owned(),
        "/api/v1/dags/987654/tasks".to_owned(),
        "/api/v1/dags/987654/instances".to_owned(),
        "/api/v1/dags/instances/987654".to_owned(),
        "/api/v1/dags/instances/987654/status".to_owned(),
        "/api/v1/dags/instances/by-key/manual:nope".to_owned(),
        "/api/v1/dags/task-instances/987654".to_owned(),
        "/api/v1/dags/task-instances/987654/log".to_owned(),
        "/api/v1/no/such/thing".to_owned(),
    ] {
        let answer = api.get(&path).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.text);
        assert_eq!(answer.body["error"], "NOT_FOUND", "{path}: {}", answer.text);
    }
    api.post("/api/v1/dags/987654/trigger", json!({}))
        .await
        .expect_error(404, "NOT_FOUND", "987654");
    api.delete("/api/v1/dags/987654")
        .await
        .expect_error(404, "NOT_FOUND", "987654");
    api.get("/api/v1/dags/abc")
        .await
        .expect_error(400, "BAD_REQUEST", "abc");
    api.post(
        &format!("/api/v1/dags/{dag_id}/trigger"),
        json!({ "params": {}, "extra": 1 }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`extra`");

    // Delete: the DAG and its history are gone.
    api.delete(&format!("/api/v1/dags/{dag_id}"))
        .await
        .expect(204);
    api.get(&format!("/api/v1/dags/{dag_id}"))
        .await
        .expect_error(404, "NOT_FOUND", "no DAG");
    api.get(&format!("/api/v1/dags/instances/{run_id}"))
        .await
        .expect_error(404, "NOT_FOUND", "no DAG instance");
    env.check_roles();
});

both_dbs!(api_schedules_and_cron, |env| async move {
    let api = Api::start(&env, None).await;

    // validate-cron: valid with the next fire times, invalid with the reason.
    let valid = api
        .post(
            "/api/v1/dags/schedule/validate-cron",
            json!({ "cronExpression": "0 0 2 * * ?", "timezone": "UTC", "count": 3 }),
        )
        .await
        .expect(200);
    assert_eq!(valid["valid"], true, "{valid}");
    assert!(valid["description"].as_str().is_some_and(|d| !d.is_empty()));
    let times = valid["nextFireTimes"].as_array().expect("nextFireTimes");
    assert_eq!(times.len(), 3);
    assert_eq!(valid["nextFireTime"], times[0]);
    assert!(
        times[0].as_str().is_some_and(|t| t.contains("T02:00:00")),
        "{valid}"
    );
    let invalid = api
        .post(
            "/api/v1/dags/schedule/validate-cron",
            json!({ "cronExpression": "0 61 * * * ?" }),
        )
        .await
        .expect(200);
    assert_eq!(invalid["valid"], false);
    assert!(
        invalid["error"].as_str().is_some_and(|e| e.contains("61")),
        "{invalid}"
    );
    // Beside the English, a stable code and its values for a UI's words.
    assert_eq!(
        invalid["problem"],
        json!({
            "code": "cron.out_of_range",
            "params": { "expr": "0 61 * * * ?", "field": "minute", "value": "61", "min": "0", "max": "59" },
        }),
        "{invalid}"
    );
    assert!(invalid["nextFireTime"].is_null());
    assert!(valid["warning"].is_null(), "{valid}");
    let never = api
        .post(
            "/api/v1/dags/schedule/validate-cron",
            json!({ "cronExpression": "0 0 0 30 2 ?" }),
        )
        .await
        .expect(200);
    assert!(
        never["warning"]
            .as_str()
            .is_some_and(|w| w.contains("never fires")),
        "February 30 is valid syntax that never comes: {never}"
    );
    api.post(
        "/api/v1/dags/schedule/validate-cron",
        json!({ "cronExpression": "@daily", "count": 0 }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`count`");
    api.post("/api/v1/dags/schedule/validate-cron", json!({}))
        .await
        .expect_error(400, "BAD_REQUEST", "cronExpression");

    // The primary schedule: none, then put, disable, enable.
    let dag = api
        .post(
            "/api/v1/dags",
            json!({ "name": "nightly", "description": "" }),
        )
        .await
        .expect(201);
    let dag_id = id_of(&dag);
    let schedule_url = format!("/api/v1/dags/{dag_id}/schedule");
    api.get(&schedule_url)
        .await
        .expect_error(404, "NOT_FOUND", "no schedule");
    api.post_empty(&format!("{schedule_url}/disable"))
        .await
        .expect_error(404, "NOT_FOUND", "no schedule");
    let put = api
        .put(
            &schedule_url,
            json!({ "cronExpression": "0 30 1 * * ?", "enabled": true }),
        )
        .await
        .expect(200);
    assert_eq!(put["dagId"], dag_id);
    assert_eq!(put["cronExpression"], "0 30 1 * * ?");
    assert_eq!(put["enabled"], true);
    assert_eq!(put["timezone"], "Asia/Shanghai");
    assert!(
        put["cronDescription"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
    assert!(
        put["nextFireTime"]
            .as_str()
            .is_some_and(|t| t.contains("T01:30:00+08:00")),
        "{put}"
    );
    let got = api.get(&schedule_url).await.expect(200);
    assert_eq!(got["scheduleId"], put["scheduleId"]);
    let disabled = api
        .post_empty(&format!("{schedule_url}/disable"))
        .await
        .expect(200);
    assert_eq!(disabled["enabled"], false);
    assert!(disabled["nextFireTime"].is_null());
    assert_eq!(
        disabled["scheduleId"], put["scheduleId"],
        "the schedule kept its id"
    );
    let enabled = api
        .post(
            &format!("{schedule_url}/enable"),
            json!({ "cronExpression": "0 0 3 * * ?" }),
        )
        .await
        .expect(200);
    assert_eq!(enabled["enabled"], true);
    assert_eq!(enabled["cronExpression"], "0 0 3 * * ?");
    let refused = api
        .put(&schedule_url, json!({ "cronExpression": "0 0 25 * * ?" }))
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(refused.body["error"], "BAD_REQUEST");
    assert_eq!(
        refused.body["code"], "cron.out_of_range",
        "{}",
        refused.text
    );
    assert_eq!(refused.body["params"]["field"], "hour", "{}", refused.text);
    assert_eq!(refused.body["params"]["max"], "23", "{}", refused.text);
    api.put(&schedule_url, json!({ "cronExpression": "bad cron" }))
        .await
        .expect_error(400, "BAD_REQUEST", "`cronExpression`");
    api.put(
        &schedule_url,
        json!({ "cronExpression": "@daily", "timezone": "Mars/Olympus" }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`timezone`");
    api.put(
        &schedule_url,
        json!({ "cronExpression": "@daily", "enable": true }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "`enable`");
    api.get("/api/v1/dags/987654/schedule")
        .await
        .expect_error(404, "NOT_FOUND", "987654");

    // A DAG with several schedules has no single /schedule.
    let several = api
        .post(
            "/api/v1/dags",
            json!({
                "name": "twice",
                "schedules": [
                    { "name": "morning", "cron": "0 0 8 * * ?" },
                    { "name": "orders", "event": "orders.ready" },
                ],
            }),
        )
        .await
        .expect(201);
    let several_id = id_of(&several);
    // Answered with the names the /schedules collection uses.
    assert_eq!(several["schedules"][1]["eventName"], "orders.ready");
    assert_eq!(several["schedules"][0]["cronExpression"], "0 0 8 * * ?");
    assert_eq!(several["schedules"][0]["enabled"], true);
    assert!(several["schedules"][0].get("cron").is_none(), "{several}");
    // A stored definition reads back as itself: re-applying changes nothing.
    for id in [dag_id, several_id] {
        let before = api.get(&format!("/api/v1/dags/{id}")).await.expect(200);
        let after = api
            .put(&format!("/api/v1/dags/{id}"), json!({}))
            .await
            .expect(200);
        assert_eq!(before["version"], after["version"], "{after}");
    }
    api.get(&format!("/api/v1/dags/{several_id}/schedule"))
        .await
        .expect_error(409, "CONFLICT", "2 schedules");
    api.put(
        &format!("/api/v1/dags/{several_id}/schedule"),
        json!({ "cronExpression": "@daily" }),
    )
    .await
    .expect_error(409, "CONFLICT", "2 schedules");
});

both_dbs!(api_kills_and_delete_conflict, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let api = Api::start(&env, None).await;
    let dag = api
        .post(
            "/api/v1/dags",
            json!({
                "name": "sleepy",
                "maxActiveRuns": 3,
                "overlap": "parallel",
                "tasks": [{ "name": "nap", "command": "sleep 60", "retry": { "max": 0 } }],
            }),
        )
        .await
        .expect(201);
    let dag_id = id_of(&dag);

    // Kill a task instance through the API.
    let first = api
        .post_empty(&format!("/api/v1/dags/{dag_id}/trigger"))
        .await
        .expect(202);
    let first_url = first["statusUrl"].as_str().expect("statusUrl").to_owned();
    let task_id = api.wait_task_running(&first_url).await;
    api.delete(&format!("/api/v1/dags/{dag_id}"))
        .await
        .expect_error(409, "CONFLICT", "running or queued");
    let started = Instant::now();
    let killed = api
        .post_empty(&format!("/api/v1/task-instances/{task_id}/kill"))
        .await
        .expect(200);
    assert_eq!(killed["status"], "KILLED");
    let run = api.wait_run(&first_url).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the kill took {:?}",
        started.elapsed()
    );
    assert_eq!(run["taskInstances"][0]["status"], "KILLED", "{run}");
    assert_ne!(run["status"], "SUCCESS", "{run}");
    api.post_empty(&format!("/api/v1/task-instances/{task_id}/kill"))
        .await
        .expect_error(409, "CONFLICT", "already ended");
    api.post_empty("/api/v1/task-instances/987654/kill")
        .await
        .expect_error(404, "NOT_FOUND", "987654");

    // Kill a whole run through the API.
    let second = api
        .post_empty(&format!("/api/v1/dags/{dag_id}/trigger"))
        .await
        .expect(202);
    let second_url = second["statusUrl"].as_str().expect("statusUrl").to_owned();
    api.wait_task_running(&second_url).await;
    let run_id = id_of(&api.get(&second_url).await.expect(200));
    let killed_run = api
        .post_empty(&format!("/api/v1/dags/instances/{run_id}/kill"))
        .await
        .expect(200);
    assert_eq!(killed_run["status"], "KILLED");
    assert_eq!(
        killed_run["killedTaskInstances"].as_array().map(Vec::len),
        Some(1)
    );
    let run = api.wait_run(&second_url).await;
    assert_eq!(run["status"], "KILLED", "{run}");
    api.post_empty(&format!("/api/v1/dags/instances/{run_id}/kill"))
        .await
        .expect_error(409, "CONFLICT", "already ended");

    // With no live run left the DAG can go.
    api.delete(&format!("/api/v1/dags/{dag_id}"))
        .await
        .expect(204);
    env.check_roles();
});

both_dbs!(api_token_events_and_runners, |env| async move {
    // Without a token the API refuses to listen beyond loopback.
    let refused = datajump_api::serve(
        datajump_api::Config {
            installation: env.bus.installation().clone(),
            names: dj(),
            replicas: datajump_nats::Replicas::AUTO,
            db: env.db.clone(),
            nats: env.nats.clone(),
            addr: "0.0.0.0:0".parse().expect("address"),
            token: None,
            timezone: chrono_tz::Asia::Shanghai,
            browser: datajump_api::BrowserRules::default(),
            insecure_no_auth: false,
            public_metrics: false,
        },
        CancellationToken::new(),
    )
    .await;
    assert!(
        matches!(refused, Err(datajump_api::ApiError::InsecureAddress { .. })),
        "{refused:?}"
    );

    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-a", &["default", "etl"], 3).await;
    let api = Api::start(&env, Some("s3cret-token")).await;
    let dag = json!({
        "name": "on_orders",
        "schedules": [{ "event": "orders.ready" }],
        "tasks": [{ "name": "load", "command": "echo region=${region:shell}" }],
    });

    // Every route but the probes needs the token.
    api.send(Method::POST, "/api/v1/dags", Some(dag.to_string()), false)
        .await
        .expect_error(401, "UNAUTHORIZED", "Bearer");
    let wrong = api
        .http
        .post(format!("{}/api/v1/dags", api.base))
        .bearer_auth("guess")
        .body(dag.to_string())
        .send()
        .await
        .expect("HTTP request");
    assert_eq!(wrong.status().as_u16(), 401);
    assert!(wrong.headers().get("www-authenticate").is_some());
    api.send(
        Method::POST,
        "/api/v1/events/orders.ready",
        Some("{}".into()),
        false,
    )
    .await
    .expect_error(401, "UNAUTHORIZED", "token");
    api.send(Method::GET, "/api/v1/dags", None, false)
        .await
        .expect_error(401, "UNAUTHORIZED", "token");
    api.send(Method::GET, "/healthz", None, false)
        .await
        .expect(200);
    api.get("/api/v1/dags").await.expect(200);
    let created = api.post("/api/v1/dags", dag).await.expect(201);
    assert_eq!(created["changes"]["notes"], json!([]), "{created}");
    assert_eq!(created["changes"]["created"], true, "{created}");
    let dag_id = id_of(&created);

    // A parameter pasted bare into a script is noted when the DAG is
    // stored, and a trigger that sets it is refused before any run exists.
    let bare = api
        .post(
            "/api/v1/dags",
            json!({ "name": "bare_region", "tasks": [{ "name": "t", "command": "echo ${region}" }] }),
        )
        .await
        .expect(201);
    let notes = bare["changes"]["notes"].to_string();
    assert!(
        notes.contains("${region} is pasted in as written"),
        "{bare}"
    );
    assert!(notes.contains("${region:shell}"), "{bare}");
    api.post(
        &format!("/api/v1/dags/{}/trigger", id_of(&bare)),
        json!({ "params": { "region": "eu; touch /tmp/owned" } }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", ":shell");
    api.send(
        Method::DELETE,
        &format!("/api/v1/dags/{dag_id}"),
        None,
        false,
    )
    .await
    .expect_error(401, "UNAUTHORIZED", "token");

    // Events: a bad name is refused; a good one starts the bound DAG.
    for bad in ["Orders", "orders..ready", "orders.*", "orders.>"] {
        api.post(&format!("/api/v1/events/{bad}"), json!({}))
            .await
            .expect_error(400, "BAD_REQUEST", "invalid event name");
    }
    api.send(
        Method::POST,
        "/api/v1/events/orders.ready",
        Some("not json".into()),
        true,
    )
    .await
    .expect_error(400, "BAD_REQUEST", "not valid JSON");
    api.send(
        Method::POST,
        "/api/v1/events/orders.ready",
        Some("[1, 2]".into()),
        true,
    )
    .await
    .expect_error(400, "BAD_REQUEST", "JSON object of parameters");
    api.post(
        "/api/v1/events/orders.ready",
        json!({ "biz_date": "2024-01-15; rm -rf /", "region": "cn" }),
    )
    .await
    .expect_error(400, "BAD_REQUEST", "must be a date written YYYY-MM-DD");
    let huge = json!({ "blob": "x".repeat(70 * 1024) });
    api.post("/api/v1/events/orders.ready", huge)
        .await
        .expect_error(413, "PAYLOAD_TOO_LARGE", "over the limit");
    let published = api
        .post("/api/v1/events/orders.ready", json!({ "region": "cn" }))
        .await
        .expect(202);
    assert_eq!(published["subject"], "dj.event.1.orders.ready");
    assert!(published["sequence"].as_u64().is_some_and(|s| s > 0));
    let deadline = Instant::now() + TIMEOUT;
    let run = loop {
        let runs = api
            .get(&format!("/api/v1/dags/{dag_id}/instances"))
            .await
            .expect(200);
        if let Some(run) = runs["items"].get(0)
            && !matches!(run["status"].as_str(), Some("RUNNING" | "QUEUED"))
        {
            break run.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the event started no run: {runs}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(run["triggerType"], "EVENT", "{run}");
    assert_eq!(run["status"], "SUCCESS", "{run}");
    assert_eq!(run["runParams"]["region"], "cn", "{run}");
    assert_eq!(published["starts"], json!(["on_orders"]), "{published}");
    // Each attempt records the schedule that fired its run.
    let run_id = run["id"].as_i64().expect("id");
    let schedule_id = run["scheduleId"]
        .as_i64()
        .expect("an event run has its schedule");
    for attempt in env.executions(run_id).await {
        assert_eq!(attempt.schedule_id, Some(schedule_id), "{attempt:?}");
    }

    // The same event published straight to NATS, as `nats pub` would (a
    // core publish the DJ_EVENT stream captures), starts the DAG too.
    env.nats
        .publish(
            "dj.event.orders.ready",
            r#"{"region":"eu","biz_date":"2024-01-15"}"#.into(),
        )
        .await
        .expect("publish");
    env.nats.flush().await.expect("flush");
    let deadline = Instant::now() + TIMEOUT;
    let second = loop {
        let runs = api
            .get(&format!("/api/v1/dags/{dag_id}/instances"))
            .await
            .expect(200);
        if runs["total"] == 2
            && let Some(newest) = runs["items"]
                .as_array()
                .and_then(|items| items.iter().find(|r| r["id"] != run["id"]))
            && !matches!(newest["status"].as_str(), Some("RUNNING" | "QUEUED"))
        {
            break newest.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the NATS event started no run: {runs}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(second["triggerType"], "EVENT", "{second}");
    assert_eq!(second["status"], "SUCCESS", "{second}");
    assert_eq!(second["runParams"]["region"], "eu", "{second}");
    // The event named its business date; the API's had none, so the
    // schedule's rule (yesterday, in the schedule's zone) set it.
    assert_eq!(second["bizDate"], "2024-01-15", "{second}");
    assert_ne!(run["bizDate"], "2024-01-15", "{run}");

    // Runners, from their heartbeats.
    let runners = api.get("/api/v1/runners").await.expect(200);
    assert_eq!(runners["total"], 1, "{runners}");
    assert_eq!(runners["items"][0]["id"], "runner-a");
    assert_eq!(runners["items"][0]["queues"], json!(["default", "etl"]));
    assert_eq!(runners["items"][0]["slots"], 3);
    assert!(runners["items"][0]["lastSeen"].is_string(), "{runners}");
    // Idle (its runs have ended), it runs nothing; the heartbeat is written
    // every few seconds, so give it one beat to say so.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let runners = api.get("/api/v1/runners").await.expect(200);
        if runners["items"][0]["running"] == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "an idle runner runs nothing: {runners}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    env.check_roles();
});
