//! Cross-run (`offset_day`) and cross-DAG (`other_dag/task`) dependencies:
//! released the moment the awaited instance propagates, satisfied when the
//! awaited run can never exist, failed with a named reason on wait timeout.

use std::time::Duration;

use chrono::NaiveDate;
use datajump_shared::{RunStatus, TaskStatus};

use crate::harness::{TestEnv, date};

const TIMEOUT: Duration = Duration::from_secs(60);

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
    let first = env.trigger_for("daily", "2024-01-01").await;
    assert_eq!(
        env.wait_run(&first, TIMEOUT).await.status,
        RunStatus::Success
    );

    // 01-03 before 01-02: it waits, and 01-02's completion releases it.
    let third = env.trigger_for("daily", "2024-01-03").await;
    wait_task(&env, &third, "report", TaskStatus::Pending).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let waiting = env.run_by_key(&third).await.expect("run");
    assert_eq!(
        env.instances_by_name(waiting.id).await["report"].status,
        TaskStatus::Pending,
        "still waiting for 01-02"
    );

    let second = env.trigger_for("daily", "2024-01-02").await;
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
        let down = env.trigger_for("downstream", "2024-02-01").await;
        wait_task(&env, &down, "report", TaskStatus::Pending).await;
        let up = env.trigger_for("upstream", "2024-02-01").await;
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

        // The upstream cannot be deleted from under its dependant...
        let api = crate::api::Api::start(&env, None).await;
        let upstream_id = env.dag_id("upstream").await;
        api.send(
            reqwest::Method::DELETE,
            &format!("/api/v1/dags/{upstream_id}"),
            None,
            false,
        )
        .await
        .expect_error(409, "CONFLICT", "is depended on by downstream/report");
        // ...and a dependency on a DAG that does not exist is said at once.
        let noted = env
            .apply("name: orphaned\ntasks:\n  - { name: t, command: 'true', depends_on: [ghost/load] }\n")
            .await;
        assert!(
            noted.notes.iter().any(|n| n.contains(
                "task 't': ghost/load depends on the DAG 'ghost', which does not exist (yet)"
            )),
            "{:?}",
            noted.notes
        );
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
        let key = env.trigger_for("impatient", "2024-03-01").await;
        let run = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(run.status, RunStatus::Failed);
        let instances = env.instances_by_name(run.id).await;
        assert_eq!(
            instances["report"].status,
            TaskStatus::Timeout,
            "a dependency wait that runs out ends TIMEOUT, as the state machine has it"
        );
        let reason = instances["report"].reason.clone().unwrap_or_default();
        assert!(reason.contains("upstream/load for 2024-03-01"), "{reason}");
        // Beside the words, the code, naming the task and date in no
        // language's words (#40).
        let problem = instances["report"]
            .reason_problem
            .as_ref()
            .and_then(|stored| stored.read().ok())
            .cloned();
        assert_eq!(
            problem,
            Some(datajump_shared::problem::Problem::new(
                "task.wait_timeout",
                [("awaited", "upstream/load (2024-03-01)".to_owned())]
            ))
        );
        assert_eq!(instances["after"].status, TaskStatus::UpstreamFailed);
        assert!(env.executions(run.id).await.is_empty(), "nothing ran");
    }
);

both_dbs!(
    a_weekday_job_waits_for_the_previous_batch_not_the_weekend,
    |env| async move {
        use datajump_shared::entities::dependency_wait;
        use sea_orm::EntityTrait;
        // Mon-Fri at 08:30: batches Sunday to Thursday (the business date
        // is the day before the fire). "Yesterday" of Monday's run (batch
        // Sunday) is Saturday, which no fire makes: the previous batch is
        // Thursday's.
        env.apply(
            r#"
name: weekday
schedules: [{ cron: "0 30 8 ? * MON-FRI" }]
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

        let thursday = env.trigger_for("weekday", "2024-01-11").await;
        assert_eq!(
            env.wait_run(&thursday, TIMEOUT).await.status,
            RunStatus::Success
        );
        // Monday's run does not wait for a Saturday that never comes.
        let monday = env.trigger_for("weekday", "2024-01-14").await;
        let monday_run = env.wait_run(&monday, TIMEOUT).await;
        assert_eq!(
            monday_run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&monday_run).await
        );

        // The next Monday's run comes before that week's Thursday: it waits
        // for Thursday's batch and says why that one.
        let next_monday = env.trigger_for("weekday", "2024-01-21").await;
        wait_task(&env, &next_monday, "report", TaskStatus::Pending).await;
        let waits = dependency_wait::Entity::find()
            .all(&env.db)
            .await
            .expect("waits");
        assert_eq!(waits.len(), 1, "{waits:?}");
        assert_eq!(waits[0].target_biz_date, date("2024-01-18"));
        assert!(
            waits[0].description.contains(
                "for 2024-01-18 (the latest batch: no schedule of weekday fires for 2024-01-20)"
            ),
            "{}",
            waits[0].description
        );
        // That week's other batches arrive; the waiting run holds the DAG's
        // only slot (max_active_runs 1), so they queue...
        let mut week = Vec::new();
        for day in ["2024-01-15", "2024-01-16", "2024-01-17"] {
            let key = env.trigger_for("weekday", day).await;
            let run = env.wait_run_created(&key, TIMEOUT).await;
            assert_eq!(run.status, RunStatus::Queued, "{day} waits for the slot");
            week.push(key);
        }
        // ...until Thursday's, which the waiting run awaits: it starts past
        // the limit, and so does each queued batch it awaits in turn, so
        // no run waits on the slot of a run waiting for it.
        week.push(env.trigger_for("weekday", "2024-01-18").await);
        week.push(next_monday);
        for key in &week {
            let run = env.wait_run(key, TIMEOUT).await;
            assert_eq!(
                run.status,
                RunStatus::Success,
                "{}",
                env.describe_run(&run).await
            );
        }
        let runs = env.runs_of(env.dag_id("weekday").await).await;
        let mut order: Vec<(chrono::DateTime<chrono::Utc>, NaiveDate)> = Vec::new();
        for run in &runs {
            let report = &env.executions_by_name(run.id).await["report"][0];
            order.push((report.start_time, run.biz_date));
        }
        order.sort();
        let dates: Vec<NaiveDate> = order.into_iter().map(|(_, d)| d).collect();
        let mut sorted = dates.clone();
        sorted.sort();
        assert_eq!(dates, sorted, "each batch ran after the one it depends on");
    }
);

both_dbs!(
    previous_run_waits_for_the_latest_earlier_run,
    |env| async move {
        use datajump_shared::entities::dependency_wait;
        use sea_orm::EntityTrait;
        let gate = env.path("gate");
        let file = format!(
            r#"
name: ordered
max_active_runs: 5
tasks:
  - name: step
    command: "if [ \"$DJ_BIZ_DATE\" = 2024-01-10 ]; then while [ ! -e {gate} ]; do sleep 0.1; done; fi"
    depends_on:
      - {{ task: step, previous_run: true }}
"#,
            gate = crate::harness::shell_path(&gate),
        );
        env.apply(&file).await;
        assert!(
            env.apply(&file).await.is_unchanged(),
            "previous_run is stored and read back as written"
        );
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;

        // The first run has no previous run; the next, days later, waits for
        // it whatever the gap (offset_day: -1 would wait for 01-04).
        let first = env.trigger_for("ordered", "2024-01-01").await;
        assert_eq!(
            env.wait_run(&first, TIMEOUT).await.status,
            RunStatus::Success
        );
        let later = env.trigger_for("ordered", "2024-01-05").await;
        assert_eq!(
            env.wait_run(&later, TIMEOUT).await.status,
            RunStatus::Success
        );

        let slow = env.trigger_for("ordered", "2024-01-10").await;
        wait_task(&env, &slow, "step", TaskStatus::Running).await;
        let next = env.trigger_for("ordered", "2024-01-12").await;
        wait_task(&env, &next, "step", TaskStatus::Pending).await;
        let waits = dependency_wait::Entity::find()
            .all(&env.db)
            .await
            .expect("waits");
        assert_eq!(waits.len(), 1, "{waits:?}");
        assert_eq!(waits[0].target_biz_date, date("2024-01-10"));
        assert!(
            waits[0]
                .description
                .contains("ordered/step of the previous run (2024-01-10)"),
            "{}",
            waits[0].description
        );
        std::fs::write(&gate, "").expect("open the gate");
        let slow_run = env.wait_run(&slow, TIMEOUT).await;
        let next_run = env.wait_run(&next, TIMEOUT).await;
        assert_eq!(
            (slow_run.status, next_run.status),
            (RunStatus::Success, RunStatus::Success)
        );
        let before = &env.executions_by_name(slow_run.id).await["step"][0];
        let after = &env.executions_by_name(next_run.id).await["step"][0];
        assert!(
            before.end_time.expect("ended") <= after.start_time,
            "01-12 ran after 01-10"
        );

        // Both fields at once is refused with the reason.
        let refused = env
        .try_apply("name: confused\ntasks:\n  - name: t\n    command: 'true'\n    depends_on: [{ task: t, previous_run: true, offset_day: -1 }]\n")
        .await
        .expect_err("previous_run with offset_day");
        assert!(
            refused.contains("both previous_run and offset_day"),
            "{refused}"
        );
    }
);

/// The runs of DAG `name` a dependency trigger started, oldest first.
async fn triggered_runs(
    env: &TestEnv,
    name: &str,
) -> Vec<datajump_shared::entities::dag_run::Model> {
    env.runs_of(env.dag_id(name).await)
        .await
        .into_iter()
        .filter(|run| run.trigger_type == datajump_shared::TriggerType::Dependency)
        .collect()
}

/// Waits until DAG `name` has `count` runs a dependency trigger started,
/// all ended, and returns them.
async fn wait_triggered(
    env: &TestEnv,
    name: &str,
    count: usize,
    within: Duration,
) -> Vec<datajump_shared::entities::dag_run::Model> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        env.check_roles();
        let runs = triggered_runs(env, name).await;
        if runs.len() == count && runs.iter().all(|r| r.status.is_terminal()) {
            return runs;
        }
        assert!(
            runs.len() <= count,
            "{} runs of {name} were triggered, not {count}: {runs:?}",
            runs.len()
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} has {} finished triggered runs, not {count}: {runs:?}",
            runs.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

both_dbs!(
    a_successful_run_starts_its_dependants_once_with_its_date,
    |env| async move {
        env.apply("name: extract\ntasks:\n  - { name: load, command: 'true' }\n")
            .await;
        env.apply("name: flaky\ntasks:\n  - { name: load, command: 'false', retry: { max: 0 } }\n")
            .await;
        let report = env
            .apply(
                r#"
name: report
schedules:
  - { name: after_extract, after: extract }
  - { name: after_flaky, after: flaky }
tasks:
  - { name: summarize, command: 'echo "report for $DJ_BIZ_DATE"' }
"#,
            )
            .await;
        assert!(report.notes.is_empty(), "{:?}", report.notes);
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;

        let upstream_key = env.trigger_for("extract", "2024-03-01").await;
        let upstream = env.wait_run(&upstream_key, TIMEOUT).await;
        assert_eq!(upstream.status, RunStatus::Success);
        let runs = wait_triggered(&env, "report", 1, TIMEOUT).await;
        assert_eq!(runs[0].status, RunStatus::Success);
        assert_eq!(
            runs[0].biz_date,
            date("2024-03-01"),
            "the upstream's business date"
        );
        assert!(
            runs[0].dedup_key.ends_with(&format!(":{}", upstream.id)),
            "{}",
            runs[0].dedup_key
        );

        // The same upstream run succeeding again (a rerun) starts nothing new.
        env.reset(upstream.id, datajump_engine::ResetScope::All)
            .await
            .expect("rerun");
        assert_eq!(
            env.wait_run(&upstream_key, TIMEOUT).await.status,
            RunStatus::Success
        );

        // A failed upstream run starts nothing; made SUCCESS by a mark, it
        // owes its dependants a run, which the ticker sends.
        let flaky_key = env.trigger_for("flaky", "2024-03-02").await;
        let flaky = env.wait_run(&flaky_key, TIMEOUT).await;
        assert_eq!(flaky.status, RunStatus::Failed);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            triggered_runs(&env, "report").await.len(),
            1,
            "a FAILED run triggered"
        );
        let load = env.instances_by_name(flaky.id).await["load"].id;
        env.mark(load, TaskStatus::Success).await.expect("mark");
        let runs = wait_triggered(&env, "report", 2, TIMEOUT).await;
        assert_eq!(runs[1].biz_date, date("2024-03-02"));
        assert_eq!(runs[1].status, RunStatus::Success);

        let refused = env
            .try_apply(
                "name: loop\nschedules: [{ after: loop }]\ntasks: [{ name: t, command: 'true' }]\n",
            )
            .await
            .expect_err("a DAG after itself");
        assert!(refused.contains("is this DAG"), "{refused}");
        let noted = env
            .apply("name: orphan\nschedules: [{ after: ghost }]\ntasks: [{ name: t, command: 'true' }]\n")
            .await;
        assert!(
            noted
                .notes
                .iter()
                .any(|n| n.contains("schedule 'default': after ghost")),
            "{:?}",
            noted.notes
        );
    }
);

both_dbs!(
    an_after_schedule_is_made_through_the_api,
    |env| async move {
        use serde_json::json;
        env.apply("name: extract\ntasks:\n  - { name: load, command: 'true' }\n")
            .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let api = crate::api::Api::start(&env, None).await;
        let created = api
            .post(
                "/api/v1/dags",
                json!({ "name": "report", "tasks": [{ "name": "t", "command": "true" }] }),
            )
            .await
            .expect(201);
        let dag_id = created["id"].as_i64().expect("id");
        let url = format!("/api/v1/dags/{dag_id}/schedules");
        api.post(
            &url,
            json!({ "name": "both", "after": "extract", "eventName": "x.y" }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "one trigger");
        let schedule = api
            .post(&url, json!({ "name": "after_extract", "after": "extract" }))
            .await
            .expect(201);
        assert_eq!(schedule["kind"], "AFTER", "{schedule}");
        assert_eq!(schedule["after"], "extract", "{schedule}");

        let upstream = env.trigger_for("extract", "2024-05-01").await;
        assert_eq!(
            env.wait_run(&upstream, TIMEOUT).await.status,
            RunStatus::Success
        );
        let runs = wait_triggered(&env, "report", 1, TIMEOUT).await;
        assert_eq!(runs[0].biz_date, date("2024-05-01"));
        assert_eq!(runs[0].status, RunStatus::Success);
    }
);

both_dbs!(
    after_schedules_and_dependencies_stay_in_their_project,
    |env| async move {
        // Project B named project A's DAG in `after:` and in `dag/task`: it
        // got a run per successful run of A's and waited on A's task, so it
        // learned A's results and timing.
        let other = datajump_store::projects::create(&env.db, "analytics", "another team")
            .await
            .expect("second project");
        env.apply("name: extract\ntasks:\n  - { name: load, command: 'true' }\n")
            .await;
        let spy = env
            .apply(&format!(
                r#"
name: spy
project: {project}
schedules: [{{ after: extract }}]
tasks:
  - {{ name: t, command: 'true' }}
"#,
                project = other.id
            ))
            .await;
        let waiter = env
            .apply(&format!(
                r#"
name: waiter
project: {project}
tasks:
  - {{ name: w, command: 'true', depends_on: [extract/load] }}
"#,
                project = other.id
            ))
            .await;
        for (report, uses) in [
            (&spy, "schedule 'default': after extract"),
            (&waiter, "task 'w': extract/load"),
        ] {
            assert!(
                report.notes.iter().any(|n| n.contains(uses)
                    && n.contains("depends on the DAG 'extract', which does not exist (yet)")),
                "another project's DAG is, to this one, a DAG that does not exist: {:?}",
                report.notes
            );
        }
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;

        let upstream = env.trigger_for("extract", "2024-03-01").await;
        assert_eq!(
            env.wait_run(&upstream, TIMEOUT).await.status,
            RunStatus::Success
        );
        let key = env.trigger_for("waiter", "2024-03-01").await;
        let run = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(
            run.status,
            RunStatus::Failed,
            "the other project's success was seen"
        );
        let w = &env.instances_by_name(run.id).await["w"];
        assert_eq!(
            w.status,
            TaskStatus::UpstreamFailed,
            "as for a DAG that does not exist: counted as not succeeded"
        );
        // A fire the upstream run owed would have gone out with its commit,
        // before the waiter's run even started: its run would exist by now.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            triggered_runs(&env, "spy").await.is_empty(),
            "another project's run started an `after:` schedule"
        );
    }
);

both_dbs!(
    a_new_or_resumed_after_schedule_owes_nothing_to_earlier_runs,
    |env| async move {
        // An `after:` schedule made, or resumed, after an upstream run had
        // ended got a run for it all the same: the ticker's net for lost
        // fires (runs that ended SUCCESS in the last minutes with no run
        // of their dependants) sent it the fire it never owed.
        env.apply("name: extract\ntasks:\n  - { name: load, command: 'true' }\n")
            .await;
        let dependant = |name: &str, active: bool, online: bool| {
            format!(
                "name: {name}\nonline: {online}\nschedules: [{{ name: after_extract, after: extract, active: {active} }}]\ntasks: [{{ name: t, command: 'true' }}]\n"
            )
        };
        env.apply(&dependant("resumed", false, true)).await;
        env.apply(&dependant("put_online", true, false)).await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;

        let key = env.trigger_for("extract", "2024-03-01").await;
        let ended = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(ended.status, RunStatus::Success);
        env.apply(&dependant("resumed", true, true)).await;
        env.apply(&dependant("put_online", true, true)).await;
        env.apply(&dependant("made_later", true, true)).await;

        // The ticker looks for owed fires every `queue_check_every` among
        // runs that ended more than `owed_fires_after` ago: three looks
        // later, and a margin for a loaded machine, it has looked.
        let finished_at = ended.finished_at.expect("an ended run has its end");
        let periods = crate::harness::TICKER_PERIODS;
        let looked = finished_at
            + chrono::Duration::from_std(
                periods.owed_fires_after + 3 * periods.queue_check_every + Duration::from_secs(3),
            )
            .expect("seconds");
        if let Ok(left) = (looked - chrono::Utc::now()).to_std() {
            tokio::time::sleep(left).await;
        }
        env.check_roles();
        let mut ran = Vec::new();
        for name in ["resumed", "put_online", "made_later"] {
            if !triggered_runs(&env, name).await.is_empty() {
                ran.push(name);
            }
        }
        assert!(
            ran.is_empty(),
            "{ran:?} ran for an upstream run that ended before they fired"
        );

        // Each fires for the upstream runs that end from now on.
        let key = env.trigger_for("extract", "2024-03-02").await;
        assert_eq!(env.wait_run(&key, TIMEOUT).await.status, RunStatus::Success);
        for name in ["resumed", "put_online", "made_later"] {
            let runs = wait_triggered(&env, name, 1, TIMEOUT).await;
            assert_eq!(runs[0].biz_date, date("2024-03-02"), "{name}");
            assert_eq!(runs[0].status, RunStatus::Success, "{name}");
        }
    }
);
