//! Reliability behaviours (issue #4): retry spacing and exit-code filters,
//! timeouts, priorities under saturation, queue routing, catch-up, backfill
//! and graceful drain, each measured from the rows a user would read.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use datajump_engine::ResetScope;
use datajump_shared::entities::{execution, schedule, task_instance};
use datajump_shared::subjects::{self, Priority};
use datajump_shared::{RunStatus, TaskStatus, TriggerType};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use crate::api::Api;
use crate::harness::{TestEnv, shell_path};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Waits until the run with `key` exists and `done` holds for its instances
/// by task name; returns them.
async fn wait_instances(
    env: &TestEnv,
    key: &str,
    what: &str,
    done: impl Fn(&BTreeMap<String, task_instance::Model>) -> bool,
) -> BTreeMap<String, task_instance::Model> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        env.check_roles();
        if let Some(run) = env.run_by_key(key).await {
            let instances = env.instances_by_name(run.id).await;
            if done(&instances) {
                return instances;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not after {TIMEOUT:?}: {}",
                env.describe_run(&run).await
            );
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the run was never created"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Seconds from the end of each attempt to the start of the next.
fn waits_between_attempts(executions: &[execution::Model]) -> Vec<f64> {
    executions
        .windows(2)
        .map(|pair| {
            let ended = pair[0].end_time.expect("a retried attempt has ended");
            (pair[1].start_time - ended).as_seconds_f64()
        })
        .collect()
}

both_dbs!(retries_follow_their_policy, |env| async move {
    env.apply(
        r#"
name: retrying
max_active_runs: 1
tasks:
  - name: fixed
    command: exit 1
    retry: { max: 2, interval: 2, strategy: FIXED }
  - name: exponential
    command: exit 1
    retry: { max: 2, interval: 2, strategy: EXPONENTIAL }
  - name: filtered
    command: exit 3
    retry: { max: 3, interval: 1, on_exit_codes: [75] }
"#,
    )
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let run = env.run_to_end("retrying", RunStatus::Failed, TIMEOUT).await;

    let instances = env.instances_by_name(run.id).await;
    let executions = env.executions_by_name(run.id).await;
    for (task, attempts) in [("fixed", 3), ("exponential", 3), ("filtered", 1)] {
        assert_eq!(instances[task].status, TaskStatus::Failed, "{task}");
        let rows = &executions[task];
        assert_eq!(rows.len(), attempts, "{task}: {rows:?}");
        for (n, row) in rows.iter().enumerate() {
            assert_eq!(row.attempt, i32::try_from(n).expect("small"), "{task}");
            assert_eq!(row.status, TaskStatus::Failed, "{task} attempt {n}");
        }
    }
    assert_eq!(instances["fixed"].retries_used, 2);
    assert_eq!(
        executions["filtered"][0].exit_code,
        Some(3),
        "an exit code not in on_exit_codes fails at once"
    );

    // FIXED waits its interval each time; EXPONENTIAL doubles it. The
    // deadline scan wakes for each retry's time: never early.
    for (task, expected) in [("fixed", [2.0, 2.0]), ("exponential", [2.0, 4.0])] {
        let waits = waits_between_attempts(&executions[task]);
        for (wait, expected) in waits.iter().zip(expected) {
            assert!(
                (expected - 0.05..expected + 5.0).contains(wait),
                "{task}: waited {waits:?}, expected about {expected} s each"
            );
        }
        let starts: Vec<DateTime<Utc>> = executions[task].iter().map(|e| e.start_time).collect();
        for (pair, expected) in starts.windows(2).zip(expected) {
            assert!(
                (pair[1] - pair[0]).as_seconds_f64() >= expected,
                "{task}: attempts started at {starts:?}"
            );
        }
    }
});

both_dbs!(timeouts_retry_only_when_asked, |env| async move {
    // Each attempt leaves a background child that would touch its marker
    // after 3 s: a timeout must kill the whole process group.
    let (final_marker, retried_marker) = (env.path("final"), env.path("retried"));
    env.apply(&format!(
        r#"
name: slow
tasks:
  - name: final
    command: (sleep 3; touch {final_marker}) & sleep 30
    timeout: 1
    retry: {{ max: 2, interval: 1 }}
  - name: retried
    command: (sleep 3; touch {retried_marker}) & sleep 30
    timeout: 1
    retry: {{ max: 1, interval: 1, on_timeout: true }}
"#,
        final_marker = shell_path(&final_marker),
        retried_marker = shell_path(&retried_marker),
    ))
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let run = env.run_to_end("slow", RunStatus::Failed, TIMEOUT).await;

    let instances = env.instances_by_name(run.id).await;
    let executions = env.executions_by_name(run.id).await;
    for (task, attempts) in [("final", 1), ("retried", 2)] {
        assert_eq!(instances[task].status, TaskStatus::Timeout, "{task}");
        let statuses: Vec<TaskStatus> = executions[task].iter().map(|e| e.status).collect();
        assert_eq!(statuses, vec![TaskStatus::Timeout; attempts], "{task}");
        for row in &executions[task] {
            let took = row.duration_ms.expect("ended");
            assert!(
                (900..5000).contains(&took),
                "{task}: an attempt with a 1 s timeout took {took} ms"
            );
        }
    }
    assert_eq!(instances["final"].retries_used, 0, "no retry from TIMEOUT");
    assert_eq!(instances["retried"].retries_used, 1);
    let waits = waits_between_attempts(&executions["retried"]);
    assert!(waits[0] >= 0.95, "the retry waited its interval: {waits:?}");

    // Past the moment the background children would have touched their markers.
    let last_start = executions["retried"][1].start_time;
    let settle = (last_start + chrono::Duration::seconds(4) - Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(settle).await;
    assert!(
        !final_marker.exists(),
        "the timed-out process group is gone"
    );
    assert!(
        !retried_marker.exists(),
        "each timed-out attempt's group is gone"
    );
});

both_dbs!(
    saturated_runners_take_every_priority_in_order,
    |env| async move {
        // Two tasks at each of the ten priorities, all queued before any
        // runner looks; two runners of one slot each then take them.
        let mut tasks = String::new();
        for n in 1..=2 {
            for priority in 1..=10 {
                tasks.push_str(&format!(
                    "  - {{ name: p{priority}_{n}, command: 'sleep 1', priority: {priority} }}\n"
                ));
            }
        }
        env.apply(&format!("name: priorities\ntasks:\n{tasks}"))
            .await;
        let _resolver = env.spawn_resolver().await;
        let key = env.trigger("priorities").await;
        wait_instances(&env, &key, "all twenty queued", |instances| {
            instances.len() == 20 && instances.values().all(|i| i.status == TaskStatus::Queued)
        })
        .await;
        // Every work message is in its level's consumer before a runner looks.
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let mut pending = 0;
            for priority in Priority::ALL {
                let name = subjects::runner_consumer(subjects::DEFAULT_QUEUE, priority);
                pending += env.consumer_info("DJ_WORK", &name).await.num_pending;
            }
            if pending == 20 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{pending} of 20 work messages published"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        let _first = env.spawn_runner("r1", &["default"], 1).await;
        let _second = env.spawn_runner("r2", &["default"], 1).await;
        let run = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(run.status, RunStatus::Success);
        let names: BTreeMap<i64, String> = env
            .instances(run.id)
            .await
            .into_iter()
            .map(|i| (i.id, i.task_name))
            .collect();
        let started: Vec<(chrono::DateTime<chrono::Utc>, i32, String)> = env
            .executions(run.id)
            .await
            .into_iter()
            .map(|e| {
                let name = names[&e.task_instance_id].clone();
                let priority = name[1..name.find('_').unwrap_or(1)].parse().unwrap_or(0);
                (e.start_time, priority, name)
            })
            .collect();
        assert!(
            started.iter().any(|s| s.2.ends_with("_1")) && started.len() == 20,
            "{started:?}"
        );
        // No task started well before one of higher priority: the two
        // runners free their slots together, so a pair may start a moment
        // apart in either order (more on a loaded machine), never a whole
        // task (1 s) apart, as first-come order within a band would.
        for (at, priority, name) in &started {
            for (later, higher, other) in &started {
                assert!(
                    !(higher > priority && *later - *at > chrono::Duration::milliseconds(600)),
                    "{name} (priority {priority}) started at {at}, before {other} (priority {higher}) at {later}"
                );
            }
        }
    }
);

both_dbs!(queues_route_work_to_their_runners, |env| async move {
    env.apply(
        r#"
name: routed
tasks:
  - { name: extract, type: NOOP, queue: etl }
  - { name: load, type: NOOP, queue: etl }
  - { name: train, type: NOOP, queue: ml }
  - { name: score, type: NOOP, queue: ml }
  - { name: stranded, type: NOOP, queue: nobody }
"#,
    )
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _etl = env.spawn_runner("r-etl", &["etl"], 2).await;
    let _ml = env.spawn_runner("r-ml", &["ml"], 2).await;
    let key = env.trigger("routed").await;
    let instances = wait_instances(&env, &key, "served queues done", |instances| {
        ["extract", "load", "train", "score"].iter().all(|t| {
            instances
                .get(*t)
                .is_some_and(|i| i.status == TaskStatus::Success)
        })
    })
    .await;
    let run_id = instances["extract"].dag_run_id;
    let executions = env.executions_by_name(run_id).await;
    for (task, runner) in [
        ("extract", "r-etl"),
        ("load", "r-etl"),
        ("train", "r-ml"),
        ("score", "r-ml"),
    ] {
        let workers: Vec<&str> = executions[task].iter().map(|e| e.worker.as_str()).collect();
        assert_eq!(workers, [runner], "{task} runs on its queue's runner");
    }
    assert_eq!(instances["stranded"].status, TaskStatus::Queued);
    assert!(!executions.contains_key("stranded"), "nothing ran it");

    // The ticker reports the unserved queue and how many tasks wait there.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let unserved = datajump_shared::metrics::unserved_queues();
        if unserved.get("nobody") == Some(&1) {
            assert_eq!(
                unserved.len(),
                1,
                "served queues are not reported: {unserved:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the unserved queue was not reported: {unserved:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let row = env.instances_by_name(run_id).await["stranded"].clone();
    assert_eq!(
        row.status,
        TaskStatus::Queued,
        "it still waits, it is not lost"
    );

    // A runner for the queue picks the waiting task up.
    let _late = env.spawn_runner("r-late", &["nobody"], 1).await;
    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(run.status, RunStatus::Success);
    let executions = env.executions_by_name(run_id).await;
    assert_eq!(executions["stranded"][0].worker, "r-late");
});

both_dbs!(overlap_parallel_runs_beyond_the_limit, |env| async move {
    env.apply(
        r#"
name: overlapping
max_active_runs: 1
overlap: parallel
tasks:
  - { name: work, command: "sleep 2" }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let keys = [
        env.trigger("overlapping").await,
        env.trigger("overlapping").await,
        env.trigger("overlapping").await,
    ];
    let mut spans = Vec::new();
    for key in &keys {
        let run = env.wait_run(key, TIMEOUT).await;
        assert_eq!(run.status, RunStatus::Success);
        let executions = env.executions(run.id).await;
        assert_eq!(executions.len(), 1);
        spans.push((
            executions[0].start_time,
            executions[0].end_time.expect("ended"),
        ));
    }
    let last_start = spans.iter().map(|s| s.0).max().expect("three runs");
    let first_end = spans.iter().map(|s| s.1).min().expect("three runs");
    assert!(
        last_start < first_end,
        "all three runs ran at once despite max_active_runs 1: {spans:?}"
    );
});

both_dbs!(catchup_policies_replay_missed_fires, |env| async move {
    let policies = [("none", 0), ("latest", 1), ("all", 3)];
    for (policy, _) in policies {
        env.apply(&format!(
            r#"
name: catchup_{policy}
max_active_runs: 10
schedules:
  - cron: "0 * * * * ?"
    catchup: {policy}
    catchup_limit: 3
    misfire_grace: 0
tasks:
  - {{ name: work, type: NOOP }}
"#
        ))
        .await;
    }
    // Keep clear of a minute boundary, so the ticker sees the same missed
    // minutes as this test.
    let to_boundary = 60 - i64::from(chrono::Timelike::second(&Utc::now()));
    if to_boundary < 5 {
        tokio::time::sleep(Duration::from_secs(to_boundary.unsigned_abs() + 1)).await;
    }
    // Each schedule last fired ten minutes ago, as if no ticker ran since.
    let started = Utc::now();
    let kv = datajump_nats::key_value(env.bus.js(), "dj_ticker")
        .await
        .expect("dj_ticker");
    let last = started.timestamp() - 600;
    let mut schedule_ids = BTreeMap::new();
    for (policy, _) in policies {
        let dag_id = env.dag_id(&format!("catchup_{policy}")).await;
        let row = schedule::Entity::find()
            .filter(schedule::Column::DagId.eq(dag_id))
            .one(&env.db)
            .await
            .expect("query schedule")
            .expect("a schedule");
        kv.put(
            env.bus.installation().ticker_key(row.id),
            last.to_string().into(),
        )
        .await
        .expect("seed dj_ticker");
        schedule_ids.insert(policy, (dag_id, row.id));
    }
    let _resolver = env.spawn_resolver().await;
    let _ticker = env.spawn_ticker().await;

    // Missed minutes are the fire times in (last, started].
    let minute = |unix: i64| unix - unix.rem_euclid(60);
    let latest_missed = minute(started.timestamp());
    let replayed = |dag_id| {
        let env = &env;
        async move {
            let mut times: Vec<i64> = env
                .runs_of(dag_id)
                .await
                .into_iter()
                .filter(|r| r.logical_time <= started)
                .map(|r| r.logical_time.timestamp())
                .collect();
            times.sort_unstable();
            times
        }
    };
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut all_there = true;
        for (policy, expected) in policies {
            all_there &= replayed(schedule_ids[policy].0).await.len() >= expected;
        }
        if all_there {
            break;
        }
        assert!(Instant::now() < deadline, "missed fires were not replayed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A replay published late would show up by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (policy, expected) in policies {
        let (dag_id, schedule_id) = schedule_ids[policy];
        let times = replayed(dag_id).await;
        let wanted: Vec<i64> = (0..i64::try_from(expected).expect("small"))
            .rev()
            .map(|back| latest_missed - 60 * back)
            .collect();
        assert_eq!(
            times, wanted,
            "catchup {policy}: the most recent missed fires"
        );
        for run in env.runs_of(dag_id).await {
            assert_eq!(run.trigger_type, TriggerType::Schedule);
            assert_eq!(
                run.dedup_key,
                datajump_shared::messages::scheduled_run_key(
                    schedule_id,
                    run.logical_time.timestamp()
                ),
                "a replayed fire has its scheduled run key"
            );
        }
    }
});

both_dbs!(clear_downstream_reruns_a_task_and_below, |env| async move {
    env.apply(
        r#"
name: cleared
tasks:
  - { name: extract, command: "true" }
  - { name: transform, command: "true", depends_on: [extract] }
  - { name: load, command: "true", depends_on: [transform] }
  - { name: side, command: "true", depends_on: [extract] }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let run = env.run_to_end("cleared", RunStatus::Success, TIMEOUT).await;
    let key = run.dedup_key.clone();
    let transform = env.instances_by_name(run.id).await["transform"].clone();

    // Clearing one task alone reruns only it.
    env.reset(
        run.id,
        ResetScope::Task {
            task_id: transform.task_id,
            downstream: false,
        },
    )
    .await
    .expect("clear");
    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(run.status, RunStatus::Success);
    let counts = |executions: &BTreeMap<String, Vec<execution::Model>>| {
        executions
            .iter()
            .map(|(task, rows)| (task.clone(), rows.len()))
            .collect::<BTreeMap<String, usize>>()
    };
    let expected = |t: usize, l: usize| {
        BTreeMap::from([
            ("extract".to_owned(), 1),
            ("load".to_owned(), l),
            ("side".to_owned(), 1),
            ("transform".to_owned(), t),
        ])
    };
    assert_eq!(
        counts(&env.executions_by_name(run.id).await),
        expected(2, 1)
    );

    // With --downstream its children run again too, and nothing else.
    env.reset(
        run.id,
        ResetScope::Task {
            task_id: transform.task_id,
            downstream: true,
        },
    )
    .await
    .expect("clear --downstream");
    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    let executions = env.executions_by_name(run.id).await;
    assert_eq!(counts(&executions), expected(3, 2));
    let transform_runs: Vec<(i32, TriggerType)> = executions["transform"]
        .iter()
        .map(|e| (e.attempt, e.trigger_type))
        .collect();
    assert_eq!(
        transform_runs,
        [
            (0, TriggerType::Manual),
            (1, TriggerType::Rerun),
            (2, TriggerType::Rerun)
        ]
    );
    // load reran after transform's last attempt ended.
    assert!(
        executions["transform"][2]
            .end_time
            .is_some_and(|end| end <= executions["load"][1].start_time),
        "the downstream waits for the cleared task"
    );
});

both_dbs!(stopped_runner_drains_its_running_task, |env| async move {
    env.apply(
        r#"
name: draining
tasks:
  - { name: long, command: "sleep 3", retry: { max: 0 } }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let runner = env
        .spawn_runner_with_drain("r1", &["default"], 2, Duration::from_secs(30))
        .await;
    let key = env.trigger("draining").await;
    wait_instances(&env, &key, "long running", |instances| {
        instances
            .get("long")
            .is_some_and(|i| i.status == TaskStatus::Running)
    })
    .await;

    // The cancel token is what SIGTERM pulls: the runner finishes the task
    // before it stops.
    runner.stop().await;
    let stopped = Utc::now();
    let run = env.run_by_key(&key).await.expect("run");
    assert_eq!(
        env.instances(run.id).await[0].status,
        TaskStatus::Success,
        "the task finished before the runner stopped"
    );
    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(run.status, RunStatus::Success);
    let executions = env.executions(run.id).await;
    assert_eq!(
        executions.len(),
        1,
        "one attempt, not given back: {executions:?}"
    );
    assert_eq!(executions[0].status, TaskStatus::Success);
    assert_eq!(executions[0].worker, "r1");
    assert!(executions[0].end_time.is_some_and(|end| end <= stopped));
    let kv = datajump_nats::key_value(env.bus.js(), "dj_runners")
        .await
        .expect("dj_runners");
    assert!(
        matches!(kv.get("r1").await, Ok(None)),
        "a stopped runner removes its heartbeat"
    );
});

/// Runs `datajump backfill` (the real CLI, as a process) against `api`;
/// returns its stderr and stdout, after checking it succeeded.
async fn backfill(api: &Api, dag: &str, from: &str, to: &str, parallel: &str) -> String {
    backfill_with(api.base(), dag, from, to, &["--parallel", parallel]).await
}

/// [`backfill`] against the API at `api_url`, with `flags` after the dates.
async fn backfill_with(api_url: &str, dag: &str, from: &str, to: &str, flags: &[&str]) -> String {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_datajump-under-test"))
        .args(["backfill", dag, "--from", from, "--to", to])
        .args(flags)
        .env("DATAJUMP_API_URL", api_url)
        .env("DATAJUMP_LOG", "warn")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(TIMEOUT, output)
        .await
        .expect("backfill finished in time")
        .expect("run datajump backfill");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(output.status.success(), "backfill failed:\n{text}");
    text
}

both_dbs!(
    backfill_skips_dates_that_ran_and_bounds_parallelism,
    |env| async move {
        env.apply(
            r#"
name: filled
max_active_runs: 10
schedules:
  - cron: "0 0 2 * * ?"
tasks:
  - { name: work, command: "sleep 1" }
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 8).await;
        let api = Api::start(&env, None).await;
        backfill(&api, "filled", "2024-01-03", "2024-01-03", "1").await;
        let dag_id = env.dag_id("filled").await;
        let earlier = env.runs_of(dag_id).await;
        assert_eq!(earlier.len(), 1);

        let output = backfill(&api, "filled", "2024-01-01", "2024-01-05", "2").await;
        assert!(
            output.contains("2024-01-03 already ran (SUCCESS); skipped"),
            "{output}"
        );
        // Not a terminal: a line per finished date, then the summary.
        assert!(output.contains("[5/5]"), "{output}");
        assert!(
            output.contains("5 dates, 4 ran, 1 already existed, 0 did not succeed"),
            "{output}"
        );

        let runs = env.runs_of(dag_id).await;
        let dates: Vec<String> = runs.iter().map(|r| r.biz_date.to_string()).collect();
        let mut unique = dates.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique,
            [
                "2024-01-01",
                "2024-01-02",
                "2024-01-03",
                "2024-01-04",
                "2024-01-05"
            ],
            "one run per date"
        );
        assert_eq!(dates.len(), 5, "no duplicates: {dates:?}");
        let rerun = runs
            .iter()
            .find(|r| r.biz_date.to_string() == "2024-01-03")
            .expect("01-03");
        assert_eq!(
            rerun.id, earlier[0].id,
            "the date that ran was not run again"
        );
        let mut spans = Vec::new();
        for run in runs.iter().filter(|r| r.id != earlier[0].id) {
            assert_eq!(run.status, RunStatus::Success);
            assert_eq!(run.trigger_type, TriggerType::Backfill);
            let executions = env.executions(run.id).await;
            assert_eq!(executions.len(), 1);
            spans.push((
                executions[0].start_time,
                executions[0].end_time.expect("ended"),
            ));
        }
        let most_at_once = spans
            .iter()
            .map(|(start, _)| {
                spans
                    .iter()
                    .filter(|(s, e)| s <= start && start < e)
                    .count()
            })
            .max()
            .unwrap_or_default();
        assert_eq!(
            most_at_once, 2,
            "--parallel 2 runs two at once, never more: {spans:?}"
        );
    }
);

both_dbs!(
    backfill_says_when_max_active_runs_caps_it,
    |env| async move {
        env.apply("name: capped\ntasks:\n  - { name: work, command: 'true' }\n")
            .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let output = backfill(&api, "capped", "2024-02-01", "2024-02-02", "3").await;
        assert!(
            output.contains(
                "capped allows 1 active run(s) (its max_active_runs), so at most 1 of the 3"
            ) && output.contains("--max-active-runs N lets this backfill's runs go up to N"),
            "{output}"
        );
        let quiet = backfill(&api, "capped", "2024-02-03", "2024-02-03", "1").await;
        assert!(!quiet.contains("max_active_runs"), "{quiet}");
    }
);

both_dbs!(
    backfill_max_active_runs_lifts_the_limit_for_its_runs_only,
    |env| async move {
        env.apply("name: one_at_a_time\ntasks:\n  - { name: work, command: 'sleep 2' }\n")
            .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 8).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("one_at_a_time").await;
        let filling = {
            let api_url = api.base().to_owned();
            tokio::spawn(async move {
                backfill_with(
                    &api_url,
                    "one_at_a_time",
                    "2024-03-01",
                    "2024-03-03",
                    &["--parallel", "3", "--max-active-runs", "3"],
                )
                .await
            })
        };
        // All three dates run at once, though the DAG allows one run.
        let started = Instant::now();
        loop {
            let running = env
                .runs_of(dag_id)
                .await
                .iter()
                .filter(|r| r.status == RunStatus::Running)
                .count();
            if running == 3 {
                break;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "never three backfill runs at once"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The DAG's own limit still holds for its other runs.
        let manual = env
            .wait_run_created(&env.trigger("one_at_a_time").await, TIMEOUT)
            .await;
        assert_eq!(
            manual.status,
            RunStatus::Queued,
            "a manual run started beside three backfill runs of a max_active_runs 1 DAG"
        );
        let output = filling.await.expect("the backfill task");
        assert!(!output.contains("note:"), "{output}");
        let manual = env.wait_run(&manual.dedup_key, TIMEOUT).await;
        assert_eq!(manual.status, RunStatus::Success);
        let runs = env.runs_of(dag_id).await;
        let backfilled: Vec<_> = runs
            .iter()
            .filter(|r| r.trigger_type == TriggerType::Backfill)
            .collect();
        assert_eq!(backfilled.len(), 3);
        let mut last_end = None;
        for run in &backfilled {
            assert_eq!(run.status, RunStatus::Success);
            let end = env.executions(run.id).await[0].end_time.expect("ended");
            last_end = last_end.max(Some(end));
        }
        let manual_start = env.executions(manual.id).await[0].start_time;
        assert!(
            Some(manual_start) >= last_end,
            "the manual run started at {manual_start} while backfill runs ran (last ended {last_end:?})"
        );
        let dag = datajump_shared::entities::dag::Entity::find_by_id(dag_id)
            .one(&env.db)
            .await
            .expect("query the DAG")
            .expect("the DAG");
        assert_eq!(dag.max_active_runs, 1, "the backfill changed the DAG");
    }
);

/// The dates a run of `run_id` printed: its one task's log tail.
async fn printed_dates(env: &TestEnv, run_id: i64) -> String {
    let executions = env.executions(run_id).await;
    let tail = executions
        .last()
        .and_then(|e| e.log_tail.clone())
        .unwrap_or_default();
    tail.lines()
        .find(|line| line.starts_with("dates "))
        .unwrap_or_else(|| panic!("no dates line in:\n{tail}"))
        .to_owned()
}

both_dbs!(
    a_date_has_the_same_parameters_and_runs_once_however_it_is_started,
    |env| async move {
        let marker = shell_path(&env.path("fixed"));
        env.apply(&format!(
            r#"
name: dated
max_active_runs: 5
schedules:
  - cron: "0 0 2 * * ?"
    timezone: UTC
tasks:
  - name: report
    command: "echo dates ${{bizdate}} ${{today}} ${{yesterday}} $[yyyyMMdd] $[yyyyMMdd-1]; test ${{bizdate}} != 2024-01-11 || test -e {marker}"
    retry: {{ max: 0 }}
"#
        ))
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("dated").await;

        // A manual run of 2024-01-10, triggered today, sees the dates its
        // scheduled run (2024-01-11 02:00 UTC) would have.
        let manual = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                serde_json::json!({ "bizDate": "2024-01-10" }),
            )
            .await
            .expect(202);
        let manual = api
            .wait_run(manual["statusUrl"].as_str().expect("statusUrl"))
            .await;
        assert_eq!(manual["status"], "SUCCESS", "{manual}");
        let manual_id = manual["id"].as_i64().expect("run id");
        assert_eq!(
            printed_dates(&env, manual_id).await,
            "dates 2024-01-10 2024-01-11 2024-01-10 20240111 20240110"
        );
        // A manual run of 2024-01-11, which fails until fixed.
        let failing = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                serde_json::json!({ "bizDate": "2024-01-11" }),
            )
            .await
            .expect(202);
        let failing = api
            .wait_run(failing["statusUrl"].as_str().expect("statusUrl"))
            .await;
        assert_eq!(failing["status"], "FAILED", "{failing}");
        let failing_id = failing["id"].as_i64().expect("run id");

        // The backfill counts both manual runs as the dates' runs.
        let output = backfill(&api, "dated", "2024-01-10", "2024-01-12", "2").await;
        assert!(
            output.contains("2024-01-10 already ran (SUCCESS); skipped"),
            "{output}"
        );
        assert!(
            output.contains(
                "2024-01-11 already ran (FAILED); skipped (--reprocess failed runs it again)"
            ),
            "{output}"
        );
        let runs = env.runs_of(dag_id).await;
        assert_eq!(runs.len(), 3, "one new run, for 2024-01-12: {runs:?}");
        let backfilled = runs
            .iter()
            .find(|r| r.biz_date.to_string() == "2024-01-12")
            .expect("the 2024-01-12 run");
        assert_eq!(backfilled.trigger_type, TriggerType::Backfill);
        assert_eq!(
            printed_dates(&env, backfilled.id).await,
            "dates 2024-01-12 2024-01-13 2024-01-12 20240113 20240112",
            "a backfill sees the dates a manual run of its date sees"
        );

        // Fixed: --reprocess failed runs the failed date again, in place.
        std::fs::write(env.path("fixed"), "").expect("fix");
        let output = backfill_with(
            api.base(),
            "dated",
            "2024-01-10",
            "2024-01-12",
            &["--reprocess", "failed"],
        )
        .await;
        assert!(
            output.contains("3 dates, 1 ran, 2 already existed, 0 did not succeed"),
            "{output}"
        );
        let runs = env.runs_of(dag_id).await;
        assert_eq!(runs.len(), 3, "reprocessing makes no new run: {runs:?}");
        let again = runs.iter().find(|r| r.id == failing_id).expect("the run");
        assert_eq!(again.status, RunStatus::Success);
        assert_eq!(env.executions(failing_id).await.len(), 2);

        // --reprocess all runs every finished date again.
        let before: usize = {
            let mut total = 0;
            for run in &runs {
                total += env.executions(run.id).await.len();
            }
            total
        };
        let output = backfill_with(
            api.base(),
            "dated",
            "2024-01-10",
            "2024-01-12",
            &["--reprocess", "all", "--parallel", "3"],
        )
        .await;
        assert!(
            output.contains("3 dates, 3 ran, 0 already existed, 0 did not succeed"),
            "{output}"
        );
        let mut after = 0;
        for run in env.runs_of(dag_id).await {
            assert_eq!(run.status, RunStatus::Success);
            after += env.executions(run.id).await.len();
        }
        assert_eq!(after, before + 3);
    }
);

both_dbs!(retries_start_on_time, |env| async move {
    // The deadline scan wakes at the next deadline: a retry after 1 s does
    // not wait for a scan that comes once a second (that made retries up
    // to a second late). The bound is loose for a loaded machine; a scan
    // every second would pass it for five retries in a row once in 200.
    env.apply(
        r#"
name: punctual
tasks:
  - { name: flaky, command: exit 1, retry: { max: 5, interval: 1 } }
"#,
    )
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let run = env.run_to_end("punctual", RunStatus::Failed, TIMEOUT).await;
    let executions = env.executions_by_name(run.id).await;
    let waits = waits_between_attempts(&executions["flaky"]);
    assert_eq!(waits.len(), 5, "{waits:?}");
    for wait in &waits {
        assert!(
            (0.95..1.35).contains(wait),
            "each retry starts within a few hundred ms of its time: {waits:?}"
        );
    }
});

both_dbs!(
    a_claim_committed_whose_answer_was_lost_is_taken_over,
    |env| async move {
        env.apply("name: lost_answer\ntasks:\n  - name: only\n    command: \"true\"\n")
            .await;
        let _resolver = env.spawn_resolver().await;
        let key = env.trigger("lost_answer").await;
        let queued = wait_instances(&env, &key, "queued", |instances| {
            instances
                .get("only")
                .is_some_and(|ti| ti.status == TaskStatus::Queued)
        })
        .await["only"]
            .clone();
        // What a runner's claim leaves when its commit reaches the database
        // and the answer is lost with the connection: the instance RUNNING
        // under that runner, an execution row, and the work message back
        // in the queue for the same runner (which Naked it on the error).
        let claim = datajump_engine::Claim {
            task_instance_id: queued.instance_id(),
            attempt: 0,
        };
        let (recorded, _) =
            datajump_engine::record(&env.db, "r1", &[&claim], &[], chrono::Utc::now())
                .await
                .expect("the claim commits");
        assert_eq!(recorded.claimed.len(), 1, "the claim was won");

        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let run = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(
            run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&run).await
        );
        let attempts = &env.executions_by_name(run.id).await["only"];
        let outcome: Vec<(TaskStatus, Option<&str>)> = attempts
            .iter()
            .map(|e| (e.status, e.error_msg.as_deref()))
            .collect();
        assert_eq!(
            outcome,
            [
                (TaskStatus::Failed, Some(datajump_engine::RUNNER_LOST)),
                (TaskStatus::Success, None),
            ],
            "the attempt no process ran is closed, and a fresh one runs"
        );
    }
);
