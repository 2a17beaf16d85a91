//! Running DAGs through the real roles: ordering, several runners, long chains,
//! retries. The dependency rules themselves (strategies, WEAK, disabled tasks)
//! are engine decisions, tested in `engine/tests/rules.rs`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

use datajump_shared::{RunStatus, TaskStatus};

use crate::harness::shell_path;

const MINUTE: Duration = Duration::from_secs(60);

both_dbs!(diamond_runs_in_order, |env| async move {
    env.apply(
        r#"
name: diamond
tasks:
  - { name: a, command: "true" }
  - { name: b, command: "sleep 1", depends_on: [a] }
  - { name: c, command: "sleep 1", depends_on: [a] }
  - { name: d, command: "true", depends_on: [b, c] }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;

    let run = env.run_to_end("diamond", RunStatus::Success, MINUTE).await;
    assert_eq!(run.pending_instances, 0);

    let instances = env.instances_by_name(run.id).await;
    assert_eq!(instances.len(), 4);
    for (name, row) in &instances {
        assert_eq!(row.status, TaskStatus::Success, "task {name}");
    }
    let executions = env.executions_by_name(run.id).await;
    for name in ["a", "b", "c", "d"] {
        assert_eq!(
            executions[name].len(),
            1,
            "task {name}: {:?}",
            executions[name]
        );
        assert_eq!(
            executions[name][0].status,
            TaskStatus::Success,
            "task {name}"
        );
    }
    let span = |name: &str| {
        let e = &executions[name][0];
        (
            e.start_time,
            e.end_time.expect("finished execution has an end"),
        )
    };
    let (a, b, c, d) = (span("a"), span("b"), span("c"), span("d"));
    assert!(
        a.1 <= b.0 && a.1 <= c.0,
        "b and c start after a ends: {a:?} {b:?} {c:?}"
    );
    assert!(
        b.0 < c.1 && c.0 < b.1,
        "b and c overlap in time: b {b:?}, c {c:?}"
    );
    assert!(
        d.0 >= b.1 && d.0 >= c.1,
        "d starts after b and c end: {b:?} {c:?} {d:?}"
    );
});

both_dbs!(three_runners_share_a_wide_dag, |env| async move {
    let mut yaml = String::from("name: wide\ntasks:\n");
    for i in 0..30 {
        writeln!(yaml, "  - {{ name: t{i:02}, command: \"sleep 0.3\" }}").unwrap();
    }
    env.apply(&yaml).await;
    let _resolver = env.spawn_resolver().await;
    let _runners = [
        env.spawn_runner("runner-1", &["default"], 4).await,
        env.spawn_runner("runner-2", &["default"], 4).await,
        env.spawn_runner("runner-3", &["default"], 4).await,
    ];

    let run = env.run_to_end("wide", RunStatus::Success, MINUTE).await;
    let executions = env.executions(run.id).await;
    assert_eq!(executions.len(), 30);
    let instances: BTreeSet<i64> = executions.iter().map(|e| e.task_instance_id).collect();
    assert_eq!(instances.len(), 30, "each task ran once");
    let workers: BTreeSet<&str> = executions.iter().map(|e| e.worker.as_str()).collect();
    assert_eq!(
        workers,
        BTreeSet::from(["runner-1", "runner-2", "runner-3"]),
        "every runner took part"
    );
});

both_dbs!(chain_of_1000_tasks, |env| async move {
    const LENGTH: usize = 1000;
    let mut yaml = String::from("name: chain\ntasks:\n  - { name: t0000, command: \"true\" }\n");
    for i in 1..LENGTH {
        writeln!(
            yaml,
            "  - {{ name: t{i:04}, command: \"true\", depends_on: [t{:04}] }}",
            i - 1
        )
        .unwrap();
    }
    env.apply(&yaml).await;
    let _resolver = env.spawn_resolver().await;
    let _runners = [
        env.spawn_runner("runner-1", &["default"], 4).await,
        env.spawn_runner("runner-2", &["default"], 4).await,
    ];

    let run = env
        .run_to_end("chain", RunStatus::Success, Duration::from_secs(600))
        .await;
    let executions = env.executions(run.id).await;
    assert_eq!(executions.len(), LENGTH);
    assert!(executions.iter().all(|e| e.status == TaskStatus::Success));
    let instances = env.instances_by_name(run.id).await;
    assert_eq!(instances.len(), LENGTH);
    // Each link started after its parent ended.
    let by_instance: std::collections::HashMap<i64, _> =
        executions.iter().map(|e| (e.task_instance_id, e)).collect();
    for i in 1..LENGTH {
        let parent = by_instance[&instances[&format!("t{:04}", i - 1)].id];
        let child = by_instance[&instances[&format!("t{i:04}")].id];
        assert!(
            parent.end_time.is_some_and(|end| end <= child.start_time),
            "t{i:04} started before its parent ended"
        );
    }
});

both_dbs!(failed_attempt_is_retried, |env| async move {
    let marker = env.path("marker");
    let yaml = format!(
        r#"
name: flaky
tasks:
  - name: flaky
    script: |
      if [ -f {marker} ]; then exit 0; else touch {marker}; exit 1; fi
    retry: {{ max: 1, interval: 1 }}
"#,
        marker = shell_path(&marker)
    );
    env.apply(&yaml).await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 2).await;

    let run = env.run_to_end("flaky", RunStatus::Success, MINUTE).await;
    let instances = env.instances_by_name(run.id).await;
    let flaky = &instances["flaky"];
    assert_eq!(flaky.status, TaskStatus::Success);
    assert_eq!(flaky.attempt, 2, "two attempts started");
    assert_eq!(flaky.retries_used, 1);

    let executions = env.executions(run.id).await;
    assert_eq!(executions.len(), 2, "{executions:?}");
    assert_eq!(executions[0].attempt, 0);
    assert_eq!(executions[0].status, TaskStatus::Failed);
    assert_eq!(executions[0].exit_code, Some(1));
    assert_eq!(executions[1].attempt, 1);
    assert_eq!(executions[1].status, TaskStatus::Success);
    let first_end = executions[0].end_time.expect("first attempt ended");
    assert!(
        executions[1].start_time >= first_end + chrono::Duration::milliseconds(900),
        "the retry waits its interval: failed at {first_end}, retried at {}",
        executions[1].start_time
    );
});

both_dbs!(stopped_runner_returns_its_task, |env| async move {
    env.apply(
        r#"
name: long
tasks:
  - { name: long, command: "sleep 4", retry: { max: 0 } }
"#,
    )
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let first = env
        .spawn_runner_with_drain("runner-1", &["default"], 2, Duration::from_secs(1))
        .await;
    let key = env.trigger("long").await;

    // Wait until runner-1 runs it, then stop runner-1: after its drain
    // timeout it gives the task back without using a retry.
    let deadline = std::time::Instant::now() + MINUTE;
    loop {
        if let Some(run) = env.run_by_key(&key).await
            && env
                .instances(run.id)
                .await
                .iter()
                .any(|row| row.status == TaskStatus::Running)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the task never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.stop().await;
    let _second = env.spawn_runner("runner-2", &["default"], 2).await;

    let run = env.wait_run(&key, MINUTE).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    let instance = &env.instances(run.id).await[0];
    assert_eq!(instance.retries_used, 0, "giving a task back uses no retry");
    let executions = env.executions(run.id).await;
    assert_eq!(executions.len(), 2, "{executions:?}");
    assert_eq!(
        (executions[0].attempt, executions[0].worker.as_str()),
        (0, "runner-1")
    );
    assert_ne!(executions[0].status, TaskStatus::Success);
    assert!(
        executions[0].end_time.is_some(),
        "the abandoned attempt is closed"
    );
    assert_eq!(
        (executions[1].attempt, executions[1].worker.as_str()),
        (1, "runner-2")
    );
    assert_eq!(executions[1].status, TaskStatus::Success);
});

// A runner commits the attempts that end together in one transaction: each
// must still be recorded as it ended, not as its neighbour did.
both_dbs!(
    attempts_ending_together_are_recorded_each_as_it_ended,
    |env| async move {
        let marker = env.path("marker");
        let yaml = format!(
            r#"
name: together
tasks:
  - {{ name: ok_a, command: "sleep 0.3; echo said-ok_a" }}
  - {{ name: ok_b, command: "sleep 0.3; echo said-ok_b" }}
  - {{ name: exit_3, command: "sleep 0.3; echo said-exit_3; exit 3", retry: {{ max: 0 }} }}
  - {{ name: exit_4, command: "sleep 0.3; exit 4", retry: {{ max: 0 }} }}
  - name: flaky
    script: |
      sleep 0.3
      if [ -f {marker} ]; then echo said-again; exit 0; else touch {marker}; exit 5; fi
    retry: {{ max: 1, interval: 1 }}
"#,
            marker = shell_path(&marker)
        );
        env.apply(&yaml).await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("runner-1", &["default"], 8).await;

        let run = env.run_to_end("together", RunStatus::Failed, MINUTE).await;
        assert_eq!(run.pending_instances, 0);

        let instances = env.instances_by_name(run.id).await;
        for (name, status, retries_used) in [
            ("ok_a", TaskStatus::Success, 0),
            ("ok_b", TaskStatus::Success, 0),
            ("exit_3", TaskStatus::Failed, 0),
            ("exit_4", TaskStatus::Failed, 0),
            ("flaky", TaskStatus::Success, 1),
        ] {
            let instance = &instances[name];
            assert_eq!(instance.status, status, "task {name}");
            assert_eq!(instance.retries_used, retries_used, "task {name}");
            assert!(
                instance.finished_at.is_some(),
                "task {name} has a finish time"
            );
        }
        assert!(instances["ok_a"].reason.is_none());
        assert!(
            instances["exit_3"]
                .reason
                .as_deref()
                .is_some_and(|r| r.contains('3')),
            "{:?}",
            instances["exit_3"].reason
        );

        let executions = env.executions_by_name(run.id).await;
        let attempt = |name: &str, index: usize| &executions[name][index];
        for (name, index, status, exit_code, said) in [
            ("ok_a", 0, TaskStatus::Success, Some(0), Some("said-ok_a")),
            ("ok_b", 0, TaskStatus::Success, Some(0), Some("said-ok_b")),
            (
                "exit_3",
                0,
                TaskStatus::Failed,
                Some(3),
                Some("said-exit_3"),
            ),
            ("exit_4", 0, TaskStatus::Failed, Some(4), None),
            ("flaky", 0, TaskStatus::Failed, Some(5), None),
            ("flaky", 1, TaskStatus::Success, Some(0), Some("said-again")),
        ] {
            let execution = attempt(name, index);
            assert_eq!(
                execution.attempt,
                i32::try_from(index).expect("small"),
                "{name}"
            );
            assert_eq!(execution.status, status, "{name} attempt {index}");
            assert_eq!(execution.exit_code, exit_code, "{name} attempt {index}");
            let tail = execution.log_tail.as_deref().unwrap_or_default();
            for other in ["said-ok_a", "said-ok_b", "said-exit_3", "said-again"] {
                assert_eq!(
                    tail.contains(other),
                    said == Some(other),
                    "{name} attempt {index} log: {tail}"
                );
            }
            let end = execution.end_time.expect("ended");
            assert!(
                execution.duration_ms.is_some_and(|ms| ms >= 300),
                "{name} attempt {index} took {:?} ms",
                execution.duration_ms
            );
            assert!(end >= execution.start_time, "{name} attempt {index}");
            assert_eq!(
                execution.error_msg.is_some(),
                status != TaskStatus::Success,
                "{name} attempt {index}"
            );
        }
        assert_eq!(executions["flaky"].len(), 2);
    }
);
