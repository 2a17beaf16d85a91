//! The waits a DAG bounds (docs/ARCHITECTURE.md "Timeouts"): a task no
//! runner takes within its `queue_timeout` ends TIMEOUT naming its queue,
//! and a run RUNNING past its run timeout is killed and ends TIMEOUT, its
//! bound counted again from each start (a rerun, a slot given).

use std::time::{Duration, Instant};

use datajump_engine::ResetScope;
use datajump_shared::entities::{dag_run, schedule};
use datajump_shared::{RunStatus, TaskStatus, TriggerType};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use crate::api::Api;
use crate::harness::TestEnv;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The run `id` as stored now.
async fn run_now(env: &TestEnv, id: i64) -> dag_run::Model {
    dag_run::Entity::find_by_id(id)
        .one(&env.db)
        .await
        .expect("query the run")
        .expect("the run")
}

/// Waits until run `id` has `status`.
async fn wait_status(env: &TestEnv, id: i64, status: RunStatus) -> dag_run::Model {
    let started = Instant::now();
    loop {
        env.check_roles();
        let run = run_now(env, id).await;
        if run.status == status {
            return run;
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "run {id} never reached {status}: {}",
            env.describe_run(&run).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

both_dbs!(
    a_task_no_runner_takes_ends_timeout_naming_its_queue,
    |env| async move {
        // The DAG-wide bound, written as a duration string, applies to the
        // task on a queue no runner serves; the one on `default` runs.
        env.apply(
            r#"
name: stranded
queue_timeout: 3s
tasks:
  - { name: load, command: "true" }
  - { name: train, command: "true", queue: gpu, depends_on: [load] }
  - { name: report, command: "true", depends_on: [train] }
"#,
        )
        .await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let run = env.run_to_end("stranded", RunStatus::Failed, TIMEOUT).await;
        let instances = env.instances_by_name(run.id).await;
        assert_eq!(instances["load"].status, TaskStatus::Success);
        let train = &instances["train"];
        assert_eq!(train.status, TaskStatus::Timeout);
        let reason = train.reason.clone().unwrap_or_default();
        assert!(
            reason.contains("queue 'gpu'") && reason.contains("queue_timeout 3s"),
            "{reason}"
        );
        let waited = train.finished_at.expect("finished") - train.queued_at.expect("queued");
        assert!(
            waited >= chrono::Duration::seconds(3) && waited < chrono::Duration::seconds(30),
            "ended after waiting {waited} QUEUED, not at its 3 s queue timeout"
        );
        assert_eq!(instances["report"].status, TaskStatus::UpstreamFailed);
        let executions = env.executions_by_name(run.id).await;
        assert!(!executions.contains_key("train"), "{executions:?}");
    }
);

both_dbs!(
    a_run_past_its_timeout_is_killed_and_each_start_counts_again,
    |env| async move {
        env.apply(
            r#"
name: slow
max_active_runs: 1
run_timeout: 3
tasks:
  - { name: crawl, command: "sleep 30" }
  - { name: after, command: "true", depends_on: [crawl] }
"#,
        )
        .await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;

        let first_key = env.trigger("slow").await;
        let first = env.wait_run(&first_key, TIMEOUT).await;
        assert_eq!(
            first.status,
            RunStatus::Timeout,
            "{}",
            env.describe_run(&first).await
        );
        assert_eq!(first.timeout_secs, Some(3));
        let instances = env.instances_by_name(first.id).await;
        for name in ["crawl", "after"] {
            assert_eq!(instances[name].status, TaskStatus::Killed, "{name}");
            let reason = instances[name].reason.clone().unwrap_or_default();
            assert!(
                reason.contains("the run timed out") && reason.contains("3s"),
                "{reason}"
            );
        }
        // The sleep was stopped, not left to run its 30 s.
        let started = Instant::now();
        loop {
            let executions = env.executions_by_name(first.id).await;
            let crawl = &executions["crawl"][0];
            if let Some(end) = crawl.end_time {
                assert!(
                    end - crawl.start_time < chrono::Duration::seconds(20),
                    "{crawl:?}"
                );
                break;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "the attempt never ended: {crawl:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // A rerun while another run holds the DAG's slot waits QUEUED, and
        // its bound counts from when it gets the slot, not from the rerun.
        let second_key = env.trigger("slow").await;
        let second = env.wait_run_created(&second_key, TIMEOUT).await;
        let second = wait_status(&env, second.id, RunStatus::Running).await;
        env.reset(first.id, ResetScope::All).await.expect("rerun");
        let waiting = run_now(&env, first.id).await;
        assert_eq!(
            waiting.status,
            RunStatus::Queued,
            "the slot is the second run's"
        );
        assert_eq!(
            waiting.timeout_at, None,
            "a waiting run has no deadline yet"
        );
        let second = env.wait_run(&second.dedup_key, TIMEOUT).await;
        assert_eq!(second.status, RunStatus::Timeout);
        let restarted = wait_status(&env, first.id, RunStatus::Running).await;
        let second_end = second.finished_at.expect("finished");
        assert!(
            restarted.timeout_at.expect("armed") >= second_end + chrono::Duration::seconds(3),
            "{:?} does not count from the slot freed at {second_end}",
            restarted.timeout_at
        );
        let again = wait_status(&env, first.id, RunStatus::Timeout).await;

        // A rerun with the slot free runs at once, with a fresh deadline.
        env.reset(first.id, ResetScope::All).await.expect("rerun");
        let reopened = run_now(&env, first.id).await;
        assert_eq!(reopened.status, RunStatus::Running);
        assert!(reopened.timeout_at > again.timeout_at);
        wait_status(&env, first.id, RunStatus::Timeout).await;
    }
);

/// Publishes event `name` through the API and returns the run it started
/// once that run has ended.
async fn run_of_event(env: &TestEnv, api: &Api, dag_id: i64, name: &str) -> dag_run::Model {
    let before = env.runs_of(dag_id).await.len();
    api.post(&format!("/api/v1/events/{name}"), json!({}))
        .await
        .expect(202);
    let started = Instant::now();
    loop {
        let runs = env.runs_of(dag_id).await;
        if runs.len() > before
            && let Some(run) = runs
                .iter()
                .filter(|r| r.trigger_type == TriggerType::Event)
                .max_by_key(|r| r.id)
            && run.status.is_terminal()
        {
            return run.clone();
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "event {name} ran nothing: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

both_dbs!(
    a_schedule_timeout_is_minutes_in_the_api_and_bounds_its_runs,
    |env| async move {
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let api = Api::start(&env, None).await;
        let created = api
            .post(
                "/api/v1/dags",
                json!({
                    "name": "nightly",
                    "runTimeout": 300,
                    "schedules": [
                        { "cronExpression": "0 0 2 * * ?" },
                        { "eventName": "orders.landed", "timeout": 2 },
                    ],
                    "tasks": [{ "name": "t", "command": "true", "queueTimeout": "10m" }],
                }),
            )
            .await
            .expect(201);
        let dag_id = created["id"].as_i64().expect("id");
        let stored = schedule::Entity::find()
            .filter(schedule::Column::DagId.eq(dag_id))
            .filter(schedule::Column::EventName.eq("orders.landed"))
            .one(&env.db)
            .await
            .expect("query")
            .expect("the schedule");
        assert_eq!(
            stored.timeout_secs,
            Some(120),
            "2 minutes are stored as seconds"
        );
        let schedules = api
            .get(&format!("/api/v1/dags/{dag_id}/schedules"))
            .await
            .expect(200);
        assert!(schedules["items"][0]["timeout"].is_null(), "{schedules}");
        assert_eq!(schedules["items"][1]["timeout"], 2, "{schedules}");
        let definition = api.get(&format!("/api/v1/dags/{dag_id}")).await.expect(200);
        assert_eq!(definition["runTimeout"], 300, "{definition}");
        assert_eq!(definition["schedules"][1]["timeout"], 2, "{definition}");
        assert_eq!(definition["tasks"][0]["queueTimeout"], 600, "{definition}");

        // A manual run is held to the DAG's bound, a run the event
        // schedule fires to the schedule's.
        let triggered = api
            .post(&format!("/api/v1/dags/{dag_id}/trigger"), json!({}))
            .await
            .expect(202);
        let key = triggered["runKey"].as_str().expect("runKey");
        assert_eq!(env.wait_run(key, TIMEOUT).await.timeout_secs, Some(300));
        let fired = run_of_event(&env, &api, dag_id, "orders.landed").await;
        assert_eq!(fired.status, RunStatus::Success);
        assert_eq!(fired.timeout_secs, Some(120));

        // 0 is no limit, not the DAG's.
        let schedule_id = stored.id;
        api.put(
            &format!("/api/v1/dags/{dag_id}/schedules/{schedule_id}"),
            json!({ "timeout": 0 }),
        )
        .await
        .expect(200);
        let fired = run_of_event(&env, &api, dag_id, "orders.landed").await;
        assert_eq!(fired.timeout_secs, None);

        api.post(
            "/api/v1/dags",
            json!({ "name": "bad", "runTimeout": "soon", "tasks": [{ "name": "t", "command": "true" }] }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "30m");
    }
);
