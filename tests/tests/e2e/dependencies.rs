//! Cross-run (`offset_day`) and cross-DAG (`other_dag/task`) dependencies:
//! released the moment the awaited instance propagates, satisfied when the
//! awaited run can never exist, failed with a named reason on wait timeout.

use std::time::Duration;

use chrono::NaiveDate;
use datajump_shared::{RunStatus, TaskStatus};

use crate::harness::TestEnv;

const TIMEOUT: Duration = Duration::from_secs(60);

fn date(text: &str) -> NaiveDate {
    text.parse().expect("date")
}

/// Triggers DAG `name` for business date `biz_date`; returns the run key.
async fn trigger_for(env: &TestEnv, name: &str, biz_date: &str) -> String {
    let mut fire = env.manual_fire(name).await;
    fire.biz_date = date(biz_date);
    env.bus.publish_fire(&fire).await.expect("publish fire");
    fire.dedup_key
}

/// Waits until the run exists and its instance `task` has `status`.
async fn wait_task(env: &TestEnv, key: &str, task: &str, status: TaskStatus) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(run) = env.run_by_key(key).await
            && env
                .instances_by_name(run.id)
                .await
                .get(task)
                .is_some_and(|t| t.status == status)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{task} never became {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

both_dbs!(offset_day_waits_for_yesterday, |env| async move {
    env.apply(
        r#"
name: daily
max_active_runs: 5
tasks:
  - name: report
    command: "true"
    depends_on:
      - { task: report, offset_day: -1 }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;

    // The first run: the day before it can never run, so it counts as done.
    let first = trigger_for(&env, "daily", "2024-01-01").await;
    assert_eq!(
        env.wait_run(&first, TIMEOUT).await.status,
        RunStatus::Success
    );

    // 01-03 before 01-02: it waits, and 01-02's completion releases it.
    let third = trigger_for(&env, "daily", "2024-01-03").await;
    wait_task(&env, &third, "report", TaskStatus::Pending).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let waiting = env.run_by_key(&third).await.expect("run");
    assert_eq!(
        env.instances_by_name(waiting.id).await["report"].status,
        TaskStatus::Pending,
        "still waiting for 01-02"
    );

    let second = trigger_for(&env, "daily", "2024-01-02").await;
    let second_run = env.wait_run(&second, TIMEOUT).await;
    let third_run = env.wait_run(&third, TIMEOUT).await;
    assert_eq!(second_run.status, RunStatus::Success);
    assert_eq!(
        third_run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&third_run).await
    );
    let before = &env.executions_by_name(second_run.id).await["report"][0];
    let after = &env.executions_by_name(third_run.id).await["report"][0];
    assert!(
        before.end_time.expect("ended") <= after.start_time,
        "01-03 ran after 01-02"
    );
});

both_dbs!(
    cross_dag_dependency_is_released_by_the_other_dag,
    |env| async move {
        env.apply(
            r#"
name: upstream
tasks:
  - { name: load, command: "sleep 0.5" }
"#,
        )
        .await;
        env.apply(
            r#"
name: downstream
tasks:
  - name: report
    command: "true"
    depends_on: [upstream/load]
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let down = trigger_for(&env, "downstream", "2024-02-01").await;
        wait_task(&env, &down, "report", TaskStatus::Pending).await;
        let up = trigger_for(&env, "upstream", "2024-02-01").await;
        let up_run = env.wait_run(&up, TIMEOUT).await;
        let down_run = env.wait_run(&down, TIMEOUT).await;
        assert_eq!(
            down_run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&down_run).await
        );
        let load = &env.executions_by_name(up_run.id).await["load"][0];
        let report = &env.executions_by_name(down_run.id).await["report"][0];
        assert!(load.end_time.expect("ended") <= report.start_time);
    }
);

both_dbs!(
    dependency_wait_times_out_naming_what_it_waited_for,
    |env| async move {
        env.apply(
            r#"
name: upstream
tasks:
  - { name: load, command: "true" }
"#,
        )
        .await;
        env.apply(
            r#"
name: impatient
tasks:
  - name: report
    command: "true"
    wait_timeout: 2
    depends_on: [upstream/load]
  - { name: after, command: "true", depends_on: [report] }
"#,
        )
        .await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let key = trigger_for(&env, "impatient", "2024-03-01").await;
        let run = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(run.status, RunStatus::Failed);
        let instances = env.instances_by_name(run.id).await;
        assert_eq!(instances["report"].status, TaskStatus::Failed);
        let reason = instances["report"].reason.clone().unwrap_or_default();
        assert!(reason.contains("upstream/load for 2024-03-01"), "{reason}");
        assert_eq!(instances["after"].status, TaskStatus::UpstreamFailed);
        assert!(env.executions(run.id).await.is_empty(), "nothing ran");
    }
);
