//! The `datajump` CLI's user commands as a user runs them: the real binary
//! as a separate process, talking to a real API server (with a token) in
//! front of the test's database and NATS, with a real resolver and runner.
//! The process is given no database URL: everything goes through the API.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::api::{Api, TIMEOUT};
use crate::harness::{free_port, shell_path};

const DATAJUMP: &str = env!("CARGO_BIN_EXE_datajump-under-test");
const TOKEN: &str = "cli-test-token";

/// What a finished command printed, and how it exited.
struct Ran {
    success: bool,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// Asserts it succeeded; returns its stdout.
    #[track_caller]
    fn ok(self) -> String {
        assert!(self.success, "failed:\n{}\n{}", self.stdout, self.stderr);
        self.stdout
    }

    /// Asserts it failed with `needle` in its error output.
    #[track_caller]
    fn fails_with(self, needle: &str) {
        assert!(!self.success, "succeeded:\n{}", self.stdout);
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr
        );
    }

    /// Asserts it succeeded and printed JSON; returns it.
    #[track_caller]
    fn json(self) -> Value {
        let stdout = self.ok();
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
    }
}

/// Runs `datajump ARGS` against the API at `api_url`, with the token when
/// `token` is given, and no database or NATS settings at all.
async fn run_at(api_url: &str, token: Option<&str>, args: &[&str]) -> Ran {
    let mut command = tokio::process::Command::new(DATAJUMP);
    command
        .args(args)
        .env("DATAJUMP_API_URL", api_url)
        .env("DATAJUMP_LOG", "warn")
        .env_remove("DATAJUMP_DATABASE_URL")
        .env_remove("DATAJUMP_NATS_URL")
        .env_remove("DATAJUMP_API_TOKEN")
        .kill_on_drop(true);
    if let Some(token) = token {
        command.env("DATAJUMP_API_TOKEN", token);
    }
    let output: Output = tokio::time::timeout(TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("datajump {args:?} did not finish in time"))
        .expect("run datajump");
    Ran {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `datajump ARGS` against `api` with its token.
async fn datajump(api: &Api, args: &[&str]) -> Ran {
    run_at(api.base(), Some(TOKEN), args).await
}

/// Writes a DAG file into `dir`.
fn write_dag(dir: &Path, name: &str, yaml: &str) {
    std::fs::create_dir_all(dir).expect("create the DAG folder");
    std::fs::write(dir.join(format!("{name}.yaml")), yaml).expect("write a DAG file");
}

/// Polls `datajump runs DAG --json` until its newest run has finished.
async fn newest_finished_run(api: &Api, dag: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let runs = datajump(api, &["runs", dag, "--json"]).await.json();
        if let Some(run) = runs.get(0)
            && !matches!(run["status"].as_str(), Some("RUNNING" | "QUEUED"))
        {
            return run.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no finished run of {dag}: {runs}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

both_dbs!(cli_user_commands_go_through_the_api, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let api = Api::start(&env, Some(TOKEN)).await;
    let gate = env.path("gate");
    let dags = env.path("dags");
    write_dag(
        &dags,
        "cli_flow",
        r#"
name: cli_flow
description: two steps
params: { who: nobody }
tasks:
  - { name: first, command: "echo hello from ${who:shell}" }
  - { name: second, command: "echo second", depends_on: [first] }
"#,
    );
    write_dag(
        &dags,
        "cli_gate",
        &format!(
            r#"
name: cli_gate
tasks:
  - {{ name: wait, command: "while [ ! -f {} ]; do sleep 0.1; done", retry: {{ max: 0 }} }}
"#,
            shell_path(&gate)
        ),
    );
    write_dag(
        &dags,
        "cli_event",
        r#"
name: cli_event
schedules:
  - { name: on_ready, event: cli.ready }
tasks:
  - { name: react, command: "echo reacting to $DJ_PARAM_TABLE" }
"#,
    );
    let dags_dir = dags.to_str().expect("a UTF-8 path");

    // apply (a folder) → list → show; applying again changes nothing.
    let applied = datajump(&api, &["dag", "apply", "-f", dags_dir]).await.ok();
    for name in ["cli_flow", "cli_gate", "cli_event"] {
        assert!(
            applied.contains(&format!("dag '{name}'")) && applied.contains("created"),
            "{applied}"
        );
    }
    let again = datajump(&api, &["dag", "apply", "-f", dags_dir]).await.ok();
    assert_eq!(again.matches("unchanged (version 1)").count(), 3, "{again}");
    let listed = datajump(&api, &["dag", "list"]).await.ok();
    assert!(listed.starts_with("ID"), "a table: {listed}");
    for name in ["cli_flow", "cli_gate", "cli_event"] {
        assert!(listed.contains(name), "{listed}");
    }
    let listed = datajump(&api, &["dag", "list", "--json"]).await.json();
    assert_eq!(listed.as_array().map(Vec::len), Some(3), "{listed}");
    let shown = datajump(&api, &["dag", "show", "cli_flow"]).await.ok();
    assert!(
        shown.contains("DAG cli_flow") && shown.contains("two steps"),
        "{shown}"
    );
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("second") && l.contains("first")),
        "the dependency is shown: {shown}"
    );
    let shown = datajump(&api, &["dag", "show", "cli_event", "--json"])
        .await
        .json();
    assert_eq!(shown["schedules"][0]["event"], "cli.ready", "{shown}");

    // trigger --wait exits 0 on SUCCESS; runs --json is the API's runs.
    let waited = datajump(&api, &["trigger", "cli_flow", "--wait", "-p", "who=cli"])
        .await
        .ok();
    assert!(waited.contains("SUCCESS"), "{waited}");
    let runs = datajump(&api, &["runs", "cli_flow", "--json"]).await.json();
    let run = &runs[0];
    assert_eq!(run["status"], "SUCCESS", "{runs}");
    assert_eq!(run["triggerType"], "MANUAL");
    assert_eq!(run["runParams"]["who"], "cli");
    let tasks = run["taskInstances"].as_array().expect("taskInstances");
    assert_eq!(tasks.len(), 2, "{run}");
    let first = tasks[0]["id"].as_i64().expect("id").to_string();
    let second = tasks[1]["id"].as_i64().expect("id").to_string();
    let table = datajump(&api, &["runs", "cli_flow"]).await.ok();
    assert!(table.contains(&format!("run {}", run["id"])), "{table}");
    let log = datajump(&api, &["logs", &first]).await.ok();
    assert!(log.contains("hello from cli"), "{log}");

    // Marks and clears of a task instance, then a rerun of the run.
    let marked = datajump(&api, &["task", "mark-failed", &second, "--json"])
        .await
        .json();
    assert_eq!(marked["status"], "FAILED", "{marked}");
    let status_url = format!(
        "/api/v1/dags/instances/by-key/{}",
        run["runKey"].as_str().expect("runKey")
    );
    assert_eq!(api.wait_run(&status_url).await["status"], "FAILED");
    let cleared = datajump(&api, &["task", "clear", &second]).await.ok();
    assert!(cleared.contains("queued now: second"), "{cleared}");
    assert_eq!(api.wait_run(&status_url).await["status"], "SUCCESS");
    let rerun = datajump(&api, &["rerun", &run["id"].to_string()])
        .await
        .ok();
    assert!(rerun.contains("is running again"), "{rerun}");
    assert_eq!(api.wait_run(&status_url).await["status"], "SUCCESS");

    // kill a running task; killing it again is the API's 409.
    let triggered = datajump(&api, &["trigger", "cli_gate", "--json"])
        .await
        .json();
    let gate_url = triggered["statusUrl"].as_str().expect("statusUrl");
    let task = api.wait_task_running(gate_url).await.to_string();
    let killed = datajump(&api, &["kill", &task]).await.ok();
    assert!(
        killed.contains(&format!("killed task instance {task}")),
        "{killed}"
    );
    let ended = api.wait_run(gate_url).await;
    assert_eq!(ended["taskInstances"][0]["status"], "KILLED", "{ended}");
    datajump(&api, &["kill", &task])
        .await
        .fails_with("has already ended");

    // Errors: the API's message and a non-zero exit; a missing token; the
    // API down.
    datajump(&api, &["trigger", "no_such_dag"])
        .await
        .fails_with("no DAG named 'no_such_dag'");
    run_at(api.base(), None, &["trigger", "cli_flow"])
        .await
        .fails_with("requires a token");
    let down = format!("http://127.0.0.1:{}", free_port());
    run_at(&down, Some(TOKEN), &["dag", "list"])
        .await
        .fails_with(&format!(
            "cannot reach the API at {down} (is `datajump up` or `datajump api` running?)"
        ));

    // A DAG applied from a file is the file's: adding a schedule to it by
    // command is refused, naming the file.
    datajump(
        &api,
        &[
            "schedule",
            "add",
            "cli_flow",
            "nightly",
            "--cron",
            "0 0 2 * * ?",
        ],
    )
    .await
    .fails_with("is managed by the file");

    // schedule add → list → disable → delete, on a DAG made through the API.
    api.post(
        "/api/v1/dags",
        serde_json::json!({ "name": "cli_adhoc", "tasks": [{ "name": "a", "command": "true" }] }),
    )
    .await
    .expect(201);
    let added = datajump(
        &api,
        &[
            "schedule",
            "add",
            "cli_adhoc",
            "nightly",
            "--cron",
            "0 0 2 * * ?",
            "--zone",
            "UTC",
        ],
    )
    .await
    .ok();
    assert!(
        added.contains("nightly") && added.contains("active"),
        "{added}"
    );
    let listed = datajump(&api, &["schedule", "list", "cli_adhoc"])
        .await
        .ok();
    assert!(
        listed.contains("0 0 2 * * ?") && listed.contains("UTC"),
        "{listed}"
    );
    let paused = datajump(
        &api,
        &["schedule", "disable", "cli_adhoc", "nightly", "--json"],
    )
    .await
    .json();
    assert_eq!(paused["enabled"], false, "{paused}");
    datajump(&api, &["schedule", "delete", "cli_adhoc", "nightly"])
        .await
        .ok();
    let listed = datajump(&api, &["schedule", "list", "cli_adhoc", "--json"])
        .await
        .json();
    assert_eq!(listed, Value::Array(Vec::new()));
    datajump(&api, &["schedule", "delete", "cli_adhoc", "nightly"])
        .await
        .fails_with("no schedule named 'nightly'");

    // An event published through the CLI starts the DAG bound to it.
    let published = datajump(
        &api,
        &[
            "events",
            "publish",
            "cli.ready",
            "--payload",
            r#"{"table": "orders"}"#,
        ],
    )
    .await
    .ok();
    assert!(published.contains("dj.event.cli.ready"), "{published}");
    let reacted = newest_finished_run(&api, "cli_event").await;
    assert_eq!(reacted["triggerType"], "EVENT", "{reacted}");
    assert_eq!(reacted["status"], "SUCCESS", "{reacted}");
    let react = reacted["taskInstances"][0]["id"].to_string();
    let log = datajump(&api, &["logs", &react]).await.ok();
    assert!(log.contains("reacting to orders"), "{log}");

    // dag delete: refused while a run is active, then done.
    let triggered = datajump(&api, &["trigger", "cli_gate", "--json"])
        .await
        .json();
    let gate_url = triggered["statusUrl"].as_str().expect("statusUrl");
    api.wait_task_running(gate_url).await;
    datajump(&api, &["dag", "delete", "cli_gate"])
        .await
        .fails_with("running or queued run");
    std::fs::write(&gate, "").expect("open the gate");
    assert_eq!(api.wait_run(gate_url).await["status"], "SUCCESS");
    datajump(&api, &["dag", "delete", "cli_gate"]).await.ok();
    datajump(&api, &["dag", "show", "cli_gate"])
        .await
        .fails_with("no DAG named 'cli_gate'");
    env.check_roles();
});
