//! Run concurrency (`max_active_runs` with the overlap policy) and kills.

use std::time::Duration;

use datajump_shared::subjects::Priority;
use datajump_shared::{RunStatus, TaskStatus};

use crate::harness::dj;

const TIMEOUT: Duration = Duration::from_secs(60);

type Span = (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>);

/// Waits for each run of `keys` to succeed with one attempt; returns each
/// attempt's (start, end).
async fn successful_attempt_spans(env: &crate::harness::TestEnv, keys: &[String]) -> Vec<Span> {
    let mut spans = Vec::new();
    for key in keys {
        let run = env.wait_run(key, TIMEOUT).await;
        assert_eq!(
            run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&run).await
        );
        let executions = env.executions(run.id).await;
        assert_eq!(executions.len(), 1, "one attempt per run");
        spans.push((
            executions[0].start_time,
            executions[0].end_time.expect("ended"),
        ));
    }
    spans
}

both_dbs!(overlap_wait_runs_one_at_a_time, |env| async move {
    env.apply(
        r#"
name: serial
max_active_runs: 1
overlap: wait
tasks:
  - { name: work, command: "sleep 1" }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let keys = [
        env.trigger("serial").await,
        env.trigger("serial").await,
        env.trigger("serial").await,
    ];
    let mut spans = successful_attempt_spans(&env, &keys).await;
    spans.sort();
    for pair in spans.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "runs overlapped although max_active_runs is 1: {spans:?}"
        );
    }
});

both_dbs!(
    a_batch_of_fires_shares_the_run_slots_it_finds,
    |env| async move {
        use datajump_shared::messages::Message;
        env.apply(
            r#"
name: pair
max_active_runs: 2
overlap: wait
tasks:
  - { name: work, command: "sleep 1" }
"#,
        )
        .await;
        // Published before the resolver starts, so one batch takes them all:
        // five fires, and a second copy of the first under another message
        // id (JetStream would drop a copy with the same id).
        let mut keys = Vec::new();
        let mut first = None;
        for _ in 0..5 {
            let fire = env.manual_fire("pair").await;
            env.bus.publish_fire(&fire).await.expect("publish fire");
            keys.push(fire.dedup_key.clone());
            first.get_or_insert(fire);
        }
        let first = first.expect("five fires");
        env.bus
            .js()
            .publish(
                dj().fire(Priority::DEFAULT, first.dag_id),
                first.encode().into(),
            )
            .await
            .expect("publish copy")
            .await
            .expect("copy stored");
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let spans = successful_attempt_spans(&env, &keys).await;
        assert_eq!(
            env.runs_of(first.dag_id).await.len(),
            5,
            "the copy of a fire created no run"
        );
        let most_at_once = spans
            .iter()
            .map(|(start, _)| {
                spans
                    .iter()
                    .filter(|(s, e)| s <= start && start < e)
                    .count()
            })
            .max();
        assert_eq!(
            most_at_once,
            Some(2),
            "max_active_runs 2: two runs at a time, not fewer, not more: {spans:?}"
        );
    }
);

both_dbs!(overlap_skip_drops_the_fire, |env| async move {
    env.apply(
        r#"
name: skipper
max_active_runs: 1
overlap: skip
tasks:
  - { name: work, command: "sleep 2" }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let first = env.trigger("skipper").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = env.trigger("skipper").await;
    let run = env.wait_run(&first, TIMEOUT).await;
    assert_eq!(run.status, RunStatus::Success);
    assert!(
        env.run_by_key(&second).await.is_none(),
        "the second fire was skipped"
    );
    assert_eq!(env.runs_of(run.dag_id).await.len(), 1);
});

both_dbs!(
    killing_a_task_stops_it_and_its_children_follow,
    |env| async move {
        let marker = env.path("grandchild-alive");
        env.apply(&format!(
            r#"
name: killme
tasks:
  - name: sleeper
    command: (sleep 30; touch {marker}) & sleep 30
  - name: strong_child
    command: "true"
    depends_on: [sleeper]
  - name: weak_child
    command: "true"
    depends_on: [{{task: sleeper, type: WEAK}}]
"#,
            marker = crate::harness::shell_path(&marker)
        ))
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let key = env.trigger("killme").await;
        let run = loop {
            let run = env.run_by_key(&key).await;
            if let Some(run) = run {
                let sleeper = env.instances_by_name(run.id).await.remove("sleeper");
                if sleeper.is_some_and(|s| s.status == TaskStatus::Running) {
                    break run;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sleeper = env.instances_by_name(run.id).await["sleeper"].clone();
        let killed = env.kill_instance(sleeper.id).await.expect("kill");
        assert!(killed.is_some(), "a running task can be killed");
        let run = env.wait_run(&key, Duration::from_secs(10)).await;
        assert_eq!(
            run.status,
            RunStatus::Failed,
            "{}",
            env.describe_run(&run).await
        );
        let instances = env.instances_by_name(run.id).await;
        assert_eq!(instances["sleeper"].status, TaskStatus::Killed);
        assert_eq!(instances["strong_child"].status, TaskStatus::UpstreamFailed);
        assert_eq!(instances["weak_child"].status, TaskStatus::Success);
        let executions = env
            .ended_executions_by_name(run.id, Duration::from_secs(10))
            .await;
        assert_eq!(executions["sleeper"].len(), 1, "a kill is not retried");
        assert_eq!(executions["sleeper"][0].status, TaskStatus::Killed);
        // The whole process group died, background child included.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!marker.exists(), "no process of the killed task survives");
        assert!(
            env.kill_instance(sleeper.id).await.expect("kill").is_none(),
            "killing a finished task changes nothing"
        );
    }
);

both_dbs!(killing_a_run_starts_the_waiting_one, |env| async move {
    env.apply(
        r#"
name: longrun
max_active_runs: 1
tasks:
  - { name: a, command: "sleep 30" }
  - { name: b, command: "true", depends_on: [a] }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let keys = [env.trigger("longrun").await, env.trigger("longrun").await];
    // The resolver handles the two fires concurrently: either may win the slot.
    let (first, second, first_run) = loop {
        if let (Some(a), Some(b)) = (
            env.run_by_key(&keys[0]).await,
            env.run_by_key(&keys[1]).await,
        ) {
            let mut statuses = [a.status, b.status];
            statuses.sort_by_key(|s| s.as_str());
            assert_eq!(
                statuses,
                [RunStatus::Queued, RunStatus::Running],
                "one runs, one waits for the slot"
            );
            break if a.status == RunStatus::Running {
                (keys[0].clone(), keys[1].clone(), a)
            } else {
                (keys[1].clone(), keys[0].clone(), b)
            };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let killed = env
        .kill_run(first_run.id)
        .await
        .expect("kill run")
        .expect("the run was live");
    assert!(
        !killed.started_runs.is_empty(),
        "the waiting run took the slot"
    );
    let first_run = env.wait_run(&first, Duration::from_secs(10)).await;
    assert_eq!(first_run.status, RunStatus::Killed);
    for instance in env.instances(first_run.id).await {
        assert_eq!(
            instance.status,
            TaskStatus::Killed,
            "{}",
            instance.task_name
        );
    }
    // The second run is running now; kill it too so the test ends quickly.
    let second_run = env.run_by_key(&second).await.expect("second run");
    assert_eq!(second_run.status, RunStatus::Running);
    env.kill_run(second_run.id).await.expect("kill");
    assert_eq!(
        env.wait_run(&second, Duration::from_secs(10)).await.status,
        RunStatus::Killed
    );
});
