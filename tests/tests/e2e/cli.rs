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
    assert_eq!(shown["schedules"][0]["eventName"], "cli.ready", "{shown}");

    // trigger --wait exits 0 on SUCCESS; runs --json is the API's runs.
    let waited = datajump(&api, &["trigger", "cli_flow", "--wait", "-p", "who=cli"])
        .await
        .ok();
    assert!(waited.contains("SUCCESS"), "{waited}");
    let runs = datajump(&api, &["runs", "cli_flow", "--json"]).await.json();
    let plain = datajump(&api, &["trigger", "cli_flow", "-p", "who=again"])
        .await
        .ok();
    assert!(
        plain.starts_with("triggered cli_flow: run ") && plain.contains("run key manual:"),
        "trigger says the run's id: {plain}"
    );
    newest_finished_run(&api, "cli_flow").await;
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
    // Two runs now: a page of one says where the older one is.
    let page1 = datajump(&api, &["runs", "cli_flow", "--limit", "1"])
        .await
        .ok();
    assert!(
        page1.contains("1 of 2 runs shown; older: datajump runs cli_flow --page 2"),
        "{page1}"
    );
    let page2 = datajump(&api, &["runs", "cli_flow", "--limit", "1", "--page", "2"])
        .await
        .ok();
    assert!(page2.contains(&format!("run {}", run["id"])), "{page2}");
    let shown = datajump(&api, &["run", "show", &run["id"].to_string()])
        .await
        .ok();
    assert!(
        shown.starts_with(&format!("run {}  SUCCESS", run["id"])),
        "{shown}"
    );
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
    let waited = datajump(&api, &["rerun", &run["id"].to_string(), "--wait"])
        .await
        .ok();
    assert!(
        waited.contains("is running again")
            && waited.contains(&format!("run {}  SUCCESS", run["id"])),
        "rerun --wait ends with the finished run: {waited}"
    );

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
    assert!(
        published.contains("of project 1 to dj.event.1.cli.ready"),
        "{published}"
    );
    assert!(
        published.contains("starts a run of: cli_event"),
        "{published}"
    );
    let unbound = datajump(&api, &["events", "publish", "cli.nobody_listens"]).await;
    assert!(unbound.success, "{}", unbound.stderr);
    assert!(
        unbound.stderr.contains("the event starts nothing"),
        "{}",
        unbound.stderr
    );
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
    datajump(&api, &["dag", "delete", "cli_gate", "--yes"])
        .await
        .fails_with("running or queued run");
    std::fs::write(&gate, "").expect("open the gate");
    assert_eq!(api.wait_run(gate_url).await["status"], "SUCCESS");
    // Off a terminal there is nobody to confirm: it takes --yes.
    datajump(&api, &["dag", "delete", "cli_gate"])
        .await
        .fails_with("pass --yes");
    datajump(&api, &["dag", "pause", "cli_gate"]).await.ok();
    let paused = datajump(&api, &["dag", "show", "cli_gate", "--json"])
        .await
        .json();
    assert_eq!(paused["online"], false, "{paused}");
    datajump(&api, &["dag", "unpause", "cli_gate"]).await.ok();
    let unpaused = datajump(&api, &["dag", "show", "cli_gate", "--json"])
        .await
        .json();
    assert_eq!(unpaused["online"], true, "{unpaused}");
    datajump(&api, &["dag", "delete", "cli_gate", "-y"])
        .await
        .ok();
    datajump(&api, &["dag", "show", "cli_gate"])
        .await
        .fails_with("no DAG named 'cli_gate'");
    env.check_roles();
});

/// `datajump … | head -1`: the reader goes away before the command is done
/// printing, and the command ends quietly with success, as a Unix tool
/// does, instead of panicking on the write.
#[tokio::test]
async fn a_closed_pipe_ends_a_command_quietly() {
    for args in [
        &["cron", "next", "0 * * * * ?", "-n", "50", "--tz", "UTC"][..],
        &["cron", "describe", "0 30 8 ? * MON-FRI"][..],
    ] {
        let mut child = tokio::process::Command::new(crate::harness::process::DATAJUMP)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start datajump");
        // The reader closes before the first line is written.
        drop(child.stdout.take());
        let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("datajump ended")
            .expect("datajump's output");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{args:?} ended {:?}: {stderr}",
            output.status
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

both_dbs!(
    trigger_wait_says_what_happens_as_it_happens,
    |env| async move {
        // The ticker's deadline scan starts retries.
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let api = Api::start(&env, Some(TOKEN)).await;
        let marker = shell_path(&env.path("tried-once"));
        let dags = env.path("dags");
        write_dag(
            &dags,
            "chatty",
            &format!(
                r#"
name: chatty
params: {{ nap: "0" }}
tasks:
  - name: flaky
    command: "if [ -e {marker} ]; then echo fine; else touch {marker}; echo not yet; exit 1; fi"
    retry: {{ max: 1, interval: 1 }}
  - name: broken
    depends_on: [flaky]
    command: "sleep 1; for i in $(seq 1 30); do echo line $i; done; exit 3"
    retry: {{ max: 0 }}
  - name: slow
    command: "sleep \"$DJ_PARAM_NAP\""
"#
            ),
        );
        datajump(&api, &["dag", "apply", "-f", &dags.display().to_string()])
            .await
            .ok();
        let waited = datajump(&api, &["trigger", "chatty", "--wait", "--timeout", "20"]).await;
        assert!(
            !waited.success,
            "a failed run exits non-zero: {}",
            waited.stdout
        );
        let out = &waited.stdout;
        // A state that lasts less than a poll (200 ms) may go unseen; the
        // attempt count still says what happened.
        for expected in [
            "flaky: UP_FOR_RETRY after attempt 1: exit code 1",
            "| not yet",
            "retries at ",
            "flaky: SUCCESS",
            "broken: RUNNING (attempt 1)",
            "broken: FAILED",
            "| line 30",
            "the whole log: datajump logs ",
        ] {
            assert!(out.contains(expected), "no {expected:?} in:\n{out}");
        }
        assert!(
            !out.contains("| line 3\n"),
            "only the log's last lines:\n{out}"
        );
        let position = |needle: &str| out.find(needle).unwrap_or(usize::MAX);
        assert!(
            position("UP_FOR_RETRY") < position("flaky: SUCCESS"),
            "in the order they happened:\n{out}"
        );

        let gave_up = datajump(
            &api,
            &[
                "trigger",
                "chatty",
                "--wait",
                "--timeout",
                "1",
                "-p",
                "nap=30",
            ],
        )
        .await;
        gave_up.fails_with("did not finish within 1s (--timeout)");

        // A typo'd command says so at its first retry, with its log.
        write_dag(
            &dags,
            "typo",
            "name: typo\ntasks:\n  - { name: greet, command: 'ecoh hello', retry: { max: 3, interval: 30 } }\n",
        );
        datajump(
            &api,
            &[
                "dag",
                "apply",
                "-f",
                &dags.join("typo.yaml").display().to_string(),
            ],
        )
        .await
        .ok();
        let typo = datajump(&api, &["trigger", "typo", "--wait", "--timeout", "4"]).await;
        assert!(
            typo.stdout.contains(
                "greet: UP_FOR_RETRY after attempt 1: exit code 127: command not found \
                 (check its spelling and the runner's PATH)"
            ),
            "{}",
            typo.stdout
        );
        assert!(
            typo.stdout.lines().any(|line| line.contains("| ")
                && line.contains("ecoh")
                && line.contains("not found")),
            "the shell's complaint is shown:\n{}",
            typo.stdout
        );
    }
);

both_dbs!(
    dag_apply_says_what_it_changes_and_dry_run_changes_nothing,
    |env| async move {
        let api = Api::start(&env, Some(TOKEN)).await;
        let dags = env.path("dags");
        let file = dags.join("reports.yaml").display().to_string();
        write_dag(
            &dags,
            "reports",
            r#"
name: reports
schedules: [{ name: nightly, cron: "0 0 2 * * ?" }]
tasks:
  - { name: extract, command: "echo extract" }
  - { name: old_step, command: "echo old", depends_on: [extract] }
"#,
        );
        let first = datajump(&api, &["dag", "apply", "-f", &file]).await.ok();
        assert!(first.contains("created (version 1)"), "{first}");

        write_dag(
            &dags,
            "reports",
            r#"
name: reports
schedules:
  - { name: nightly, cron: "0 0 2 * * ?" }
  - { name: weekly, cron: "0 0 6 ? * MON" }
tasks:
  - { name: extract, command: "echo extract --all" }
  - { name: publish, command: "echo publish", depends_on: [extract] }
"#,
        );
        let preview = datajump(&api, &["dag", "apply", "-f", &file, "--dry-run"])
            .await
            .ok();
        for expected in [
            "would be updated (version 2)",
            "tasks added: publish",
            "tasks changed: extract",
            "tasks removed: old_step",
            "schedules added: weekly",
        ] {
            assert!(preview.contains(expected), "no {expected:?} in:\n{preview}");
        }
        let shown = datajump(&api, &["dag", "show", "reports", "--json"])
            .await
            .json();
        assert_eq!(shown["version"], 1, "a dry run stores nothing: {shown}");
        let tasks: Vec<&str> = shown["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(tasks, ["extract", "old_step"], "{shown}");

        let applied = datajump(&api, &["dag", "apply", "-f", &file]).await.ok();
        assert!(applied.contains("updated (version 2)"), "{applied}");
        assert!(!applied.contains("would be"), "{applied}");
        assert!(applied.contains("tasks removed: old_step"), "{applied}");
        let again = datajump(&api, &["dag", "apply", "-f", &file]).await.ok();
        assert!(again.contains("unchanged (version 2)"), "{again}");

        write_dag(
            &dags,
            "fresh",
            "name: fresh\ntasks:\n  - { name: t, command: 'true' }\n",
        );
        let fresh = dags.join("fresh.yaml").display().to_string();
        let preview = datajump(&api, &["dag", "apply", "-f", &fresh, "--dry-run"])
            .await
            .ok();
        assert!(
            preview.contains("would be created (version 1)"),
            "{preview}"
        );
        datajump(&api, &["dag", "show", "fresh"])
            .await
            .fails_with("no DAG named 'fresh'");
    }
);

/// Runs `datajump ARGS` in `cwd` as a newcomer would, with only `HOME`
/// (and `PATH`) set and `extra` on top.
async fn run_as_newcomer(cwd: &Path, home: &Path, args: &[&str], extra: &[(&str, &str)]) -> Ran {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(crate::harness::process::DATAJUMP)
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("DATAJUMP_LOG", "warn")
            .envs(extra.iter().copied())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("datajump {args:?} did not finish in time"))
    .expect("run datajump");
    Ran {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The database is the same wherever a command runs from; only `up` and
/// `migrate` create one; a wrong URL is said at once and plainly.
#[tokio::test]
async fn the_database_is_found_from_any_directory() {
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    let (project, elsewhere) = (root.path().join("project"), root.path().join("elsewhere"));
    for dir in [&home, &project, &elsewhere] {
        std::fs::create_dir_all(dir).expect("dir");
    }
    let default_db = home.join(".local/share/datajump/datajump.db");

    // Before any database exists, an operator command refuses to make one.
    let refused = run_as_newcomer(&elsewhere, &home, &["secret", "list"], &[]).await;
    refused.fails_with("no database at ");
    assert!(!default_db.exists(), "nothing was created");
    assert!(std::fs::read_dir(&elsewhere).expect("dir").next().is_none());

    let migrated = run_as_newcomer(&project, &home, &["migrate"], &[])
        .await
        .ok();
    let all =
        <datajump_migrations::Migrator as datajump_migrations::MigratorTrait>::migrations().len();
    assert!(
        migrated.contains(&format!("applied {all} migrations")),
        "{migrated}"
    );
    assert!(default_db.exists(), "the database is in the data folder");
    let again = run_as_newcomer(&project, &home, &["migrate"], &[])
        .await
        .ok();
    assert!(again.contains("applied 0 migrations"), "{again}");

    // A secret set from one directory is listed from another.
    run_as_newcomer(
        &project,
        &home,
        &["secret", "set", "api_key", "--value-env", "V"],
        &[("V", "s3cret")],
    )
    .await
    .ok();
    let listed = run_as_newcomer(&elsewhere, &home, &["secret", "list"], &[])
        .await
        .ok();
    assert!(listed.contains("api_key"), "{listed}");

    // A database left where an earlier version kept it is pointed out.
    std::fs::write(elsewhere.join("datajump.db"), b"").expect("an old database");
    let elsewhere_home = root.path().join("other-home");
    std::fs::create_dir_all(&elsewhere_home).expect("dir");
    let warned = run_as_newcomer(&elsewhere, &elsewhere_home, &["migrate"], &[]).await;
    assert!(
        warned
            .stderr
            .contains("./datajump.db is the database of an earlier DataJump")
            && warned.stderr.contains("mv datajump.db*"),
        "{}",
        warned.stderr
    );

    // URLs that cannot work are refused at once, without the password.
    run_as_newcomer(
        &project,
        &home,
        &["migrate"],
        &[("DATAJUMP_DATABASE_URL", "mysql://root@127.0.0.1/dj")],
    )
    .await
    .fails_with("'mysql://' cannot hold DataJump's own state");
    let started = Instant::now();
    let unreachable = run_as_newcomer(
        &project,
        &home,
        &["secret", "list"],
        &[(
            "DATAJUMP_DATABASE_URL",
            &format!("postgres://etl:hunter2@127.0.0.1:{}/dj", free_port()),
        )],
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(!unreachable.success);
    assert!(
        unreachable.stderr.contains("postgres://etl:***@127.0.0.1:"),
        "{}",
        unreachable.stderr
    );
    assert!(
        !unreachable.stderr.contains("hunter2"),
        "{}",
        unreachable.stderr
    );
}

both_dbs!(
    datasource_add_tries_the_connection_first,
    |env| async move {
        let cli = |args: Vec<String>| {
            let env = &env;
            async move {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                crate::harness::process::run_cli(env, &args, &[]).await
            }
        };
        let owned = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        let port = free_port().to_string();
        let unreachable = owned(&[
            "datasource",
            "add",
            "warehouse",
            "--kind",
            "postgresql",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--database",
            "dw",
            "--user",
            "etl",
        ]);
        let (ok, _, stderr) = cli(unreachable.clone()).await;
        assert!(
            !ok && stderr.contains("not added: cannot connect"),
            "{stderr}"
        );
        assert!(stderr.contains("--no-test"), "{stderr}");
        let (_, listed, _) = cli(owned(&["datasource", "list"])).await;
        assert!(!listed.contains("warehouse"), "nothing stored: {listed}");

        let mut later = unreachable;
        later.push("--no-test".to_owned());
        let (ok, _, stderr) = cli(later).await;
        assert!(ok, "{stderr}");
        let (ok, _, stderr) = cli(owned(&["datasource", "test", "warehouse"])).await;
        assert!(!ok && stderr.contains("cannot connect"), "{stderr}");

        let file = env.path("lite.db");
        std::fs::write(&file, b"").expect("an empty SQLite file");
        let file = file.display().to_string();
        let (ok, _, stderr) = cli(owned(&[
            "datasource",
            "add",
            "lite",
            "--kind",
            "sqlite",
            "--host",
            &file,
        ]))
        .await;
        assert!(ok, "{stderr}");
        let (ok, stdout, stderr) = cli(owned(&["datasource", "test", "lite"])).await;
        assert!(
            ok && stdout.contains("datasource 'lite' connects"),
            "{stdout}{stderr}"
        );
    }
);

/// `--timezone` and `--tz` are one flag; a zone that does not exist is an
/// error, not a silent default, and so is a global setting given to a
/// command that does not read it.
#[tokio::test]
async fn time_zones_are_one_flag_and_checked() {
    let after = "2024-03-09T00:00:00Z";
    let mut answers = Vec::new();
    for flag in ["--tz", "--timezone"] {
        let ran = run_at(
            "http://127.0.0.1:9",
            None,
            &[
                "cron",
                "next",
                "0 0 9 * * ?",
                "-n",
                "1",
                "--after",
                after,
                flag,
                "Europe/London",
            ],
        )
        .await;
        answers.push(ran.ok());
    }
    assert_eq!(answers[0], answers[1]);
    assert!(
        answers[0].starts_with("2024-03-09T09:00:00+00:00"),
        "{}",
        answers[0]
    );
    run_at(
        "http://127.0.0.1:9",
        None,
        &["cron", "next", "@daily", "--tz", "Mars/Olympus"],
    )
    .await
    .fails_with("Mars/Olympus");
    run_at(
        "http://127.0.0.1:9",
        None,
        &["runs", "x", "--timezone", "Nowhere"],
    )
    .await
    .fails_with("Nowhere");
    run_at(
        "http://127.0.0.1:9",
        None,
        &["runs", "x", "--timezone", "UTC"],
    )
    .await
    .fails_with("--timezone does nothing for `datajump runs`");
    run_at(
        "http://127.0.0.1:9",
        None,
        &[
            "dag",
            "list",
            "--database-url",
            "sqlite:///tmp/elsewhere.db",
        ],
    )
    .await
    .fails_with("--database-url does nothing for `datajump dag`: it talks to the API (--api)");
}

/// `datajump down` stops the `up` of the same data folder from another
/// shell; `datajump reset` then drops the database and the streams, and
/// asks first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_stops_up_and_reset_starts_over() {
    use crate::harness::process::{Process, run_cli};
    let env = crate::harness::TestEnv::new(crate::harness::Backend::Sqlite).await;
    let data = env.path("trial-data");
    let data_text = data.display().to_string();
    let file = env.path("trial.db");
    let db = format!("sqlite://{}?mode=rwc", file.display());
    let dags = env.path("dags");
    std::fs::create_dir_all(&dags).expect("dags folder");
    let settings = [
        ("DATAJUMP_DATABASE_URL", db.as_str()),
        ("DATAJUMP_DATA_DIR", data_text.as_str()),
    ];
    let mut up = Process::start(
        &env,
        "up",
        &[
            "up",
            "--dags",
            &dags.display().to_string(),
            "--api-addr",
            &format!("127.0.0.1:{}", free_port()),
        ],
        &settings,
    );
    up.wait_log("DataJump is up.", Duration::from_secs(60))
        .await;
    assert!(data.join("up.pid").exists(), "up names itself");

    let (ok, stdout, stderr) = run_cli(&env, &["reset", "--yes"], &settings).await;
    assert!(
        !ok && stderr.contains("stop it first with `datajump down`"),
        "{stdout}{stderr}"
    );
    let (ok, stdout, stderr) = run_cli(&env, &["down"], &settings).await;
    assert!(ok && stdout.contains("stopped"), "{stdout}{stderr}");
    assert!(
        up.wait_exit(Duration::from_secs(30)).await.success(),
        "up stopped cleanly"
    );
    assert!(!data.join("up.pid").exists(), "the pid file went with it");
    let (ok, stdout, _) = run_cli(&env, &["down"], &settings).await;
    assert!(ok && stdout.contains("nothing to stop"), "{stdout}");

    // Off a terminal, reset needs --yes and drops nothing without it.
    let (ok, _, stderr) = run_cli(&env, &["reset"], &settings).await;
    assert!(!ok && stderr.contains("pass --yes"), "{stderr}");
    assert!(file.exists());
    let (ok, stdout, stderr) = run_cli(&env, &["reset", "--yes"], &settings).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(
        stdout.contains("dropped DJ_WORK") && stdout.contains("dropped the database"),
        "{stdout}"
    );
    assert!(!file.exists(), "the SQLite file is gone");
    assert!(
        env.bus.js().get_stream("DJ_WORK").await.is_err(),
        "the work stream is gone"
    );
    let (ok, _, stderr) = run_cli(&env, &["secret", "list"], &settings).await;
    assert!(!ok && stderr.contains("no database at"), "{stderr}");
}

/// The gallery in `dags/` as a newcomer meets it: `datajump up` applies
/// every file (creating the example SQLite datasource), and each example
/// that needs nothing from outside runs to SUCCESS as its comment says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_dags_run_as_their_comments_say() {
    use crate::harness::process::Process;
    let env = crate::harness::TestEnv::new(crate::harness::Backend::Sqlite).await;
    let gallery = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dags");
    let data = env.path("up-data");
    let api_addr = format!("127.0.0.1:{}", free_port());
    let api_url = format!("http://{api_addr}");
    let mut up = Process::start(
        &env,
        "up",
        &[
            "up",
            "--dags",
            &gallery.display().to_string(),
            "--api-addr",
            &api_addr,
        ],
        &[("DATAJUMP_DATA_DIR", &data.display().to_string())],
    );
    up.wait_log("DataJump is up.", Duration::from_secs(60))
        .await;
    let log = up.log_text();
    assert!(!log.contains("(skipped)"), "every example applies:\n{log}");
    for name in [
        "example_diamond",
        "example_python",
        "example_sql",
        "example_retries",
        "example_recovery",
        "example_switch",
        "example_conditions",
        "example_map",
        "example_weekday",
        "example_cross_dag",
        "example_event",
        "example_http",
        "example_ods",
        "example_dwd",
        "example_dws",
        "example_warehouse",
    ] {
        assert!(
            log.contains(&format!("dag '{name}'")),
            "{name} applied:\n{log}"
        );
    }
    assert!(log.contains("datasource example_sqlite created"), "{log}");

    for (dag, params) in [
        ("example_python", &["-p", "rows=2"][..]),
        ("example_sql", &[][..]),
        ("example_retries", &[][..]),
        ("example_weekday", &[][..]),
    ] {
        let mut args = vec!["trigger", dag, "--wait", "--timeout", "60"];
        args.extend_from_slice(params);
        let ran = run_at(&api_url, None, &args).await;
        assert!(ran.success, "{dag}:\n{}\n{}", ran.stdout, ran.stderr);
    }
    // The failure path is not needed when the load succeeds, and runs when
    // it fails; the run stays FAILED, and the summary goes out both times.
    let recovered = run_at(
        &api_url,
        None,
        &["trigger", "example_recovery", "--wait", "--timeout", "60"],
    )
    .await;
    assert!(
        recovered.success,
        "{}\n{}",
        recovered.stdout, recovered.stderr
    );
    let broke = run_at(
        &api_url,
        None,
        &[
            "trigger",
            "example_recovery",
            "--wait",
            "--timeout",
            "60",
            "-p",
            "fail=yes",
        ],
    )
    .await;
    assert!(
        !broke.success,
        "a failed load fails the run: {}",
        broke.stdout
    );
    let recovery = run_at(&api_url, None, &["runs", "example_recovery", "--json"])
        .await
        .json();
    let statuses = |run: &serde_json::Value| -> Vec<(String, String)> {
        run["taskInstances"]
            .as_array()
            .expect("taskInstances")
            .iter()
            .map(|t| {
                (
                    t["taskName"].as_str().unwrap_or_default().to_owned(),
                    t["status"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    assert_eq!(recovery[0]["status"], "FAILED", "{recovery}");
    assert_eq!(
        statuses(&recovery[0]),
        pairs(&[
            ("load", "FAILED"),
            ("drop_staging", "SUCCESS"),
            ("page_owner", "SUCCESS"),
            ("summary", "SUCCESS")
        ]),
        "{recovery}"
    );
    assert_eq!(recovery[1]["status"], "SUCCESS", "{recovery}");
    assert_eq!(
        statuses(&recovery[1]),
        pairs(&[
            ("load", "SUCCESS"),
            ("drop_staging", "SKIPPED"),
            ("page_owner", "SKIPPED"),
            ("summary", "SUCCESS")
        ]),
        "{recovery}"
    );
    // The SWITCH skips the load and its report when there are no new rows,
    // and runs them when there are; the summary goes out both times.
    for params in [&[][..], &["-p", "new_rows=12"][..]] {
        let mut args = vec!["trigger", "example_switch", "--wait", "--timeout", "60"];
        args.extend_from_slice(params);
        let ran = run_at(&api_url, None, &args).await;
        assert!(ran.success, "{}\n{}", ran.stdout, ran.stderr);
    }
    let switched = run_at(&api_url, None, &["runs", "example_switch", "--json"])
        .await
        .json();
    assert_eq!(
        statuses(&switched[1]),
        pairs(&[
            ("count_new", "SUCCESS"),
            ("route", "SUCCESS"),
            ("load", "SKIPPED"),
            ("report", "SKIPPED"),
            ("no_data_notice", "SUCCESS"),
            ("summary", "SUCCESS")
        ]),
        "{switched}"
    );
    assert_eq!(
        statuses(&switched[0]),
        pairs(&[
            ("count_new", "SUCCESS"),
            ("route", "SUCCESS"),
            ("load", "SUCCESS"),
            ("report", "SUCCESS"),
            ("no_data_notice", "SKIPPED"),
            ("summary", "SUCCESS")
        ]),
        "{switched}"
    );
    let route = switched[1]["taskInstances"][1]["id"].to_string();
    let decision = run_at(&api_url, None, &["logs", &route]).await.ok();
    assert!(
        decision.contains("tasks.count_new.output.rows = \"0\"")
            && decision.contains("runs: no_data_notice")
            && decision.contains("skipped: load"),
        "the decision is the SWITCH's log:\n{decision}"
    );
    // The conditions task pages the owner when the load fails.
    let paged = run_at(
        &api_url,
        None,
        &[
            "trigger",
            "example_conditions",
            "--wait",
            "--timeout",
            "60",
            "-p",
            "fail=yes",
        ],
    )
    .await;
    assert!(
        !paged.success,
        "the failed load fails the run: {}",
        paged.stdout
    );
    let conditions = run_at(&api_url, None, &["runs", "example_conditions", "--json"])
        .await
        .json();
    assert_eq!(
        statuses(&conditions[0]),
        pairs(&[
            ("load", "FAILED"),
            ("on_load", "SUCCESS"),
            ("publish", "SKIPPED"),
            ("page_owner", "SUCCESS")
        ]),
        "{conditions}"
    );
    // The map loads each listed table as an item of its own, three at a
    // time, and the report runs once all seven are in.
    let mapped = run_at(
        &api_url,
        None,
        &["trigger", "example_map", "--wait", "--timeout", "60"],
    )
    .await;
    assert!(mapped.success, "{}\n{}", mapped.stdout, mapped.stderr);
    assert!(
        mapped.stdout.contains("load_table[6]: SUCCESS"),
        "each item's progress is shown:\n{}",
        mapped.stdout
    );
    let map_runs = run_at(&api_url, None, &["runs", "example_map", "--json"])
        .await
        .json();
    let tables = [
        "ods.orders",
        "ods.users",
        "ods.items",
        "ods.payments",
        "ods.refunds",
        "ods.coupons",
        "ods.stores",
    ];
    let mut want = vec![("list_tables".to_owned(), "SUCCESS".to_owned())];
    want.extend(
        tables
            .iter()
            .map(|_| ("load_table".to_owned(), "SUCCESS".to_owned())),
    );
    want.push(("report".to_owned(), "SUCCESS".to_owned()));
    assert_eq!(statuses(&map_runs[0]), want, "{map_runs}");
    let items: Vec<(i64, String)> = map_runs[0]["taskInstances"]
        .as_array()
        .expect("taskInstances")
        .iter()
        .filter(|t| t["taskName"] == "load_table")
        .map(|t| {
            (
                t["mapIndex"].as_i64().unwrap_or(-1),
                t["mapItem"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(i64, String)> = tables
        .iter()
        .enumerate()
        .map(|(i, table)| (i as i64, (*table).to_owned()))
        .collect();
    assert_eq!(items, expected, "{map_runs}");
    assert_eq!(map_runs[0]["mappedTasks"][0]["taskName"], "load_table");
    assert_eq!(map_runs[0]["mappedTasks"][0]["status"], "SUCCESS");
    assert_eq!(map_runs[0]["mappedTasks"][0]["items"], 7);
    let third = map_runs[0]["taskInstances"][3]["id"].to_string();
    let third_log = run_at(&api_url, None, &["logs", &third]).await.ok();
    assert!(
        third_log.contains("loading ods.items (item 2 of the list)"),
        "an item reads its value and index:\n{third_log}"
    );
    let shown = run_at(&api_url, None, &["runs", "example_map"]).await.ok();
    assert!(
        shown.contains("load_table: SUCCESS over 7 items, 7 ended")
            && shown.contains("load_table[3]")
            && shown.contains("item ods.payments"),
        "{shown}"
    );
    let retried = run_at(&api_url, None, &["runs", "example_retries", "--json"])
        .await
        .json();
    assert_eq!(retried[0]["taskInstances"][0]["attempts"], 3, "{retried}");
    let sql = run_at(&api_url, None, &["runs", "example_sql", "--json"])
        .await
        .json();
    let report = sql[0]["taskInstances"][2]["id"].to_string();
    let report_log = run_at(&api_url, None, &["logs", &report]).await.ok();
    assert!(
        report_log.contains(sql[0]["bizDate"].as_str().expect("bizDate")),
        "the report reads back the row of its business date:\n{report_log}"
    );

    // The cross-DAG example waits for example_diamond's run of its date.
    run_at(&api_url, None, &["trigger", "example_diamond"])
        .await
        .ok();
    let crossed = run_at(
        &api_url,
        None,
        &["trigger", "example_cross_dag", "--wait", "--timeout", "60"],
    )
    .await;
    assert!(crossed.success, "{}\n{}", crossed.stdout, crossed.stderr);

    let published = run_at(
        &api_url,
        None,
        &[
            "events",
            "publish",
            "orders.ready",
            "--payload",
            r#"{"table": "orders"}"#,
        ],
    )
    .await
    .ok();
    assert!(
        published.contains("starts a run of: example_event"),
        "{published}"
    );
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let runs = run_at(&api_url, None, &["runs", "example_event", "--json"])
            .await
            .json();
        if runs[0]["status"] == "SUCCESS" {
            break;
        }
        assert!(Instant::now() < deadline, "the event's run: {runs}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The warehouse: one ODS run, whose users wait for the CRM's export,
    // starts DWD on its orders, and DWS once both the clean orders and
    // the users are in, all for its date.
    run_at(&api_url, None, &["trigger", "example_ods"])
        .await
        .ok();
    let biz_date = loop {
        let runs = run_at(&api_url, None, &["runs", "example_ods", "--json"])
            .await
            .json();
        let sensor = runs[0]["taskInstances"]
            .as_array()
            .and_then(|tasks| {
                tasks
                    .iter()
                    .find(|t| t["taskName"] == "wait_for_crm_export")
                    .cloned()
            })
            .unwrap_or_default();
        if sensor["status"] == "UP_FOR_RESCHEDULE" {
            break runs[0]["bizDate"].clone();
        }
        assert!(Instant::now() < deadline + TIMEOUT, "the sensor: {runs}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let announced = run_at(
        &api_url,
        None,
        &[
            "dataset",
            "announce",
            "ext.crm_users",
            "--partition",
            biz_date.as_str().expect("bizDate"),
        ],
    )
    .await
    .ok();
    assert!(announced.contains("recorded event"), "{announced}");
    loop {
        let runs = run_at(&api_url, None, &["runs", "example_dws", "--json"])
            .await
            .json();
        if runs[0]["status"] == "SUCCESS" {
            assert_eq!(runs[0]["bizDate"], biz_date, "{runs}");
            assert_eq!(runs[0]["triggerType"], "DATASET", "{runs}");
            break;
        }
        assert!(Instant::now() < deadline + TIMEOUT, "the DWS run: {runs}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let lineage = run_at(&api_url, None, &["dataset", "show", "dwd.orders"])
        .await
        .ok();
    assert!(
        lineage.contains("example_dwd/clean_orders") && lineage.contains("example_dws"),
        "{lineage}"
    );

    // The 60-task warehouse waits for the ODS run of its date, which ended.
    let warehouse = run_at(
        &api_url,
        None,
        &["trigger", "example_warehouse", "--wait", "--timeout", "120"],
    )
    .await;
    assert!(
        warehouse.success,
        "{}\n{}",
        warehouse.stdout, warehouse.stderr
    );
    up.kill9();
}

/// The heartbeat a runner built before heartbeats carried a version wrote
/// to `dj_runners`: no `version`, no `features`.
fn heartbeat_of_an_older_runner(id: &str, queue: &str) -> String {
    serde_json::json!({
        "id": id,
        "queues": [queue],
        "slots": 2,
        "running": 0,
        "at": chrono::Utc::now().to_rfc3339(),
    })
    .to_string()
}

/// A DAG whose task on `queue` names a secret in its Spark conf: a feature
/// of feature level 1 (`datajump_shared::features`).
fn spark_dag_with_a_secret_conf(name: &str, queue: &str) -> String {
    format!(
        r#"
name: {name}
tasks:
  - name: load
    type: SPARK
    queue: {queue}
    content:
      jar: /jobs/load.jar
      conf: {{ spark.hadoop.fs.s3a.secret.key: "${{secret:s3_key}}" }}
"#
    )
}

both_dbs!(
    dag_apply_refuses_a_feature_a_live_role_is_too_old_for,
    |env| async move {
        use datajump_shared::features::FeatureLevel;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r-new", &["bigdata"], 1).await;
        let api = Api::start(&env, Some(TOKEN)).await;

        // Both roles of this build say which build they are.
        let runners = api.get("/api/v1/runners").await.expect(200);
        let new = runners["items"]
            .as_array()
            .and_then(|items| items.iter().find(|r| r["id"] == "r-new"))
            .unwrap_or_else(|| panic!("r-new is listed: {runners}"));
        assert_eq!(new["version"], env!("CARGO_PKG_VERSION"), "{new}");
        assert_eq!(new["featureLevel"], FeatureLevel::CURRENT.get(), "{new}");
        let deadline = Instant::now() + TIMEOUT;
        let resolvers = loop {
            let live = datajump_nats::live_resolvers(env.bus.js(), env.bus.names())
                .await
                .expect("read dj_resolvers");
            if !live.is_empty() || Instant::now() > deadline {
                break live;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(resolvers.len(), 1, "{resolvers:?}");
        assert_eq!(resolvers[0].features, FeatureLevel::CURRENT);
        assert_eq!(resolvers[0].version, env!("CARGO_PKG_VERSION"));

        // A runner of an older build serves `bigdata` beside it.
        let heartbeats = datajump_nats::key_value(env.bus.js(), "dj_runners")
            .await
            .expect("dj_runners");
        heartbeats
            .put(
                "old-7-ab12",
                heartbeat_of_an_older_runner("old-7-ab12", "bigdata").into(),
            )
            .await
            .expect("write the older runner's heartbeat");

        let dags = env.path("dags");
        let file = dags.join("jobs.yaml").display().to_string();
        write_dag(
            &dags,
            "jobs",
            &spark_dag_with_a_secret_conf("jobs", "bigdata"),
        );
        // A dry run is refused as the apply is, and neither stores anything.
        for args in [
            vec!["dag", "apply", "-f", &file, "--dry-run"],
            vec!["dag", "apply", "-f", &file],
        ] {
            let refused = datajump(&api, &args).await;
            assert!(!refused.success, "{args:?} succeeded:\n{}", refused.stdout);
            for needle in [
                "task 'load' uses a SPARK or FLINK conf value naming ${secret:…}",
                "runners understand from feature level 1 on",
                "live runner old-7-ab12, serving queue 'bigdata', is a build from before \
                 roles reported their version",
                "upgrade every runner and resolver before applying this DAG",
            ] {
                assert!(
                    refused.stderr.contains(needle),
                    "{args:?}: no {needle:?} in:\n{}",
                    refused.stderr
                );
            }
        }
        api.get("/api/v1/dags/by-name/jobs").await.expect_error(
            404,
            "NOT_FOUND",
            "no DAG named 'jobs'",
        );

        // The older runner does not serve `etl`, so a task there is no
        // business of its.
        write_dag(
            &dags,
            "jobs_etl",
            &spark_dag_with_a_secret_conf("jobs_etl", "etl"),
        );
        let etl = dags.join("jobs_etl.yaml").display().to_string();
        datajump(&api, &["dag", "apply", "-f", &etl]).await.ok();

        // Once the older runner has stopped, the DAG is applied.
        heartbeats
            .purge("old-7-ab12")
            .await
            .expect("the older runner stops");
        let applied = datajump(&api, &["dag", "apply", "-f", &file]).await.ok();
        assert!(applied.contains("created (version 1)"), "{applied}");
    }
);
