//! Every operator action from every state it applies to: kills of live
//! tasks and runs, marks of finished and waiting tasks, reruns of failed and
//! killed runs. Each step asserts what an operator would check (the task's
//! status, the run's status, what ran again) on real runs, so together they
//! apply every operator row of the engine's transition table.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use datajump_engine::{OperatorError, ResetScope};
use datajump_shared::entities::task_instance;
use datajump_shared::{RunStatus, TaskStatus};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Every status a task instance can be left in, in one DAG: `hung` runs
/// until it is killed, the `flaky` ones wait an hour for their retry, and
/// their children wait for them.
const STATES_DAG: &str = r#"
name: states
max_active_runs: 1
tasks:
  - { name: ok, command: "true" }
  - { name: bad, command: "exit 1", retry: { max: 0 } }
  - { name: slow, command: "sleep 30", timeout: 1, retry: { max: 0 } }
  - { name: off, command: "true", enabled: false }
  - { name: after_bad, command: "true", depends_on: [bad] }
  - { name: hung, command: "sleep 300" }
  - { name: flaky, command: "exit 1", retry: { max: 1, interval: 3600 } }
  - { name: flaky2, command: "exit 1", retry: { max: 1, interval: 3600 } }
  - { name: flaky3, command: "exit 1", retry: { max: 1, interval: 3600 } }
  - { name: after_flaky, command: "true", depends_on: [flaky] }
  - { name: after_flaky2, command: "true", depends_on: [flaky2] }
  - { name: after_flaky3, command: "true", depends_on: [flaky3] }
"#;

/// What each task of a fresh run of [`STATES_DAG`] settles into before an
/// operator steps in.
const SETTLED: [(&str, TaskStatus); 12] = [
    ("ok", TaskStatus::Success),
    ("bad", TaskStatus::Failed),
    ("slow", TaskStatus::Timeout),
    ("off", TaskStatus::Skipped),
    ("after_bad", TaskStatus::UpstreamFailed),
    ("hung", TaskStatus::Running),
    ("flaky", TaskStatus::UpForRetry),
    ("flaky2", TaskStatus::UpForRetry),
    ("flaky3", TaskStatus::UpForRetry),
    ("after_flaky", TaskStatus::Pending),
    ("after_flaky2", TaskStatus::Pending),
    ("after_flaky3", TaskStatus::Pending),
];

type Instances = BTreeMap<String, task_instance::Model>;

async fn wait_settled(env: &crate::harness::TestEnv, run_id: i64) -> Instances {
    let started = Instant::now();
    loop {
        let instances = env.instances_by_name(run_id).await;
        let now: Vec<(&str, TaskStatus)> = SETTLED
            .iter()
            .map(|(name, _)| (*name, instances[*name].status))
            .collect();
        if now == SETTLED {
            return instances;
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "run {run_id} did not settle: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn status(instances: &Instances, name: &str) -> TaskStatus {
    instances[name].status
}

/// The run `key` names, once a resolver has created it.
async fn created(env: &crate::harness::TestEnv, key: &str) -> i64 {
    env.wait_run_created(key, TIMEOUT).await.id
}

/// Marks a task instance, then waits for its run to be finished again (a
/// mark of a finished task reruns its downstream).
async fn mark(env: &crate::harness::TestEnv, key: &str, id: i64, to: TaskStatus) -> Instances {
    env.mark(id, to).await.expect("mark");
    let run = env.wait_run(key, TIMEOUT).await;
    env.instances_by_name(run.id).await
}

both_dbs!(operator_actions_from_every_state, |env| async move {
    env.apply(STATES_DAG).await;
    let _resolver = env.spawn_resolver().await;
    let _ticker = env.spawn_ticker().await;
    let _runner = env.spawn_runner("r1", &["default"], 8).await;

    // A run waiting for the DAG's only slot is killed with its PENDING tasks.
    let first = env.trigger("states").await;
    let run_id = created(&env, &first).await;
    let waiting = env.trigger("states").await;
    let waiting_id = created(&env, &waiting).await;
    assert_eq!(
        env.run_by_key(&waiting).await.expect("run").status,
        RunStatus::Queued,
        "max_active_runs: 1"
    );
    env.kill_run(waiting_id).await.expect("kill").expect("live");
    assert_eq!(
        env.wait_run(&waiting, TIMEOUT).await.status,
        RunStatus::Killed
    );
    assert!(
        env.instances(waiting_id)
            .await
            .iter()
            .all(|i| i.status == TaskStatus::Killed),
        "every task of a killed run is KILLED"
    );

    // Live tasks: kill the running one and one waiting for its retry, mark
    // the others and the children that wait for them.
    let instances = wait_settled(&env, run_id).await;
    let id = |name: &str| instances[name].id;
    assert!(env.kill_instance(id("hung")).await.expect("kill").is_some());
    assert!(
        env.kill_instance(id("flaky3"))
            .await
            .expect("kill")
            .is_some()
    );
    for (name, to) in [
        ("after_flaky", TaskStatus::Success),
        ("after_flaky2", TaskStatus::Failed),
        ("flaky", TaskStatus::Success),
        ("flaky2", TaskStatus::Failed),
    ] {
        env.mark(id(name), to).await.expect("mark a waiting task");
    }
    let run = env.wait_run(&first, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Failed,
        "{}",
        env.describe_run(&run).await
    );
    let after = env.instances_by_name(run_id).await;
    for (name, expected) in [
        ("hung", TaskStatus::Killed),
        ("flaky3", TaskStatus::Killed),
        ("after_flaky3", TaskStatus::UpstreamFailed),
        ("flaky", TaskStatus::Success),
        ("after_flaky", TaskStatus::Success),
        ("flaky2", TaskStatus::Failed),
        ("after_flaky2", TaskStatus::Failed),
    ] {
        assert_eq!(status(&after, name), expected, "{name}");
    }
    assert!(
        !env.executions_by_name(run_id)
            .await
            .contains_key("after_flaky"),
        "a marked task runs nothing"
    );

    // The finished run, leaves first: each mark recounts the run, which
    // stays FAILED while failures remain.
    for (name, to) in [
        ("ok", TaskStatus::Success),
        ("slow", TaskStatus::Success),
        ("off", TaskStatus::Failed),
        ("hung", TaskStatus::Success),
        ("after_bad", TaskStatus::Success),
        ("after_flaky3", TaskStatus::Failed),
        ("after_flaky2", TaskStatus::Failed),
    ] {
        let now = mark(&env, &first, id(name), to).await;
        assert_eq!(status(&now, name), to, "{name}");
        assert_eq!(
            env.run_by_key(&first).await.expect("run").status,
            RunStatus::Failed,
            "failures remain"
        );
    }
    // Marking a failed parent SUCCESS reruns its downstream.
    let now = mark(&env, &first, id("bad"), TaskStatus::Success).await;
    assert_eq!(status(&now, "after_bad"), TaskStatus::Success);
    assert_eq!(
        env.executions_by_name(run_id).await["after_bad"].len(),
        1,
        "the downstream of the marked task ran"
    );
    // The last failures marked SUCCESS (a leaf last): the run succeeds.
    for name in ["flaky3", "flaky2", "off"] {
        mark(&env, &first, id(name), TaskStatus::Success).await;
    }
    let run = env.wait_run(&first, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    mark(&env, &first, id("ok"), TaskStatus::Success).await;
    assert_eq!(
        env.run_by_key(&first).await.expect("run").status,
        RunStatus::Success
    );

    // A second run ends in every finished state, and is rerun whole.
    let second = env.trigger("states").await;
    let second_id = created(&env, &second).await;
    let instances = wait_settled(&env, second_id).await;
    let id2 = |name: &str| instances[name].id;
    for name in ["hung", "flaky", "flaky2", "flaky3"] {
        env.kill_instance(id2(name)).await.expect("kill");
    }
    assert_eq!(
        env.wait_run(&second, TIMEOUT).await.status,
        RunStatus::Failed
    );
    let queued = env.reset(second_id, ResetScope::All).await.expect("rerun");
    assert!(!queued.is_empty(), "the roots run again");
    assert_eq!(
        env.run_by_key(&second).await.expect("run").status,
        RunStatus::Running
    );
    let refused = env
        .reset(second_id, ResetScope::All)
        .await
        .expect_err("live tasks cannot be rerun");
    assert!(matches!(refused, OperatorError::Live(..)), "{refused}");
    let again = wait_settled(&env, second_id).await;
    assert!(
        again["ok"].attempt > instances["ok"].attempt,
        "ok ran again"
    );
    // Its finished tasks cannot be cleared while the rest still run.
    let refused = env
        .reset(
            second_id,
            ResetScope::Task {
                task_id: again["ok"].task_id,
                downstream: false,
            },
        )
        .await
        .expect_err("a live run cannot be reset");
    assert!(
        matches!(refused, OperatorError::RunLive(_, RunStatus::Running)),
        "{refused}"
    );
    assert_eq!(
        status(&env.instances_by_name(second_id).await, "ok"),
        TaskStatus::Success,
        "a refused reset changes nothing"
    );

    // Killed as a whole, the run stays KILLED whatever is marked in it.
    env.kill_run(second_id).await.expect("kill").expect("live");
    assert_eq!(
        env.wait_run(&second, TIMEOUT).await.status,
        RunStatus::Killed
    );
    for (name, to) in [
        ("slow", TaskStatus::Failed),
        ("hung", TaskStatus::Failed),
        ("off", TaskStatus::Success),
    ] {
        let now = mark(&env, &second, id2(name), to).await;
        assert_eq!(status(&now, name), to, "{name}");
    }
    assert_eq!(
        env.run_by_key(&second).await.expect("run").status,
        RunStatus::Killed
    );
    let refused = env
        .mark(id2("ok"), TaskStatus::Skipped)
        .await
        .expect_err("only SUCCESS and FAILED are marks");
    assert!(matches!(
        refused,
        OperatorError::NotAMark(TaskStatus::Skipped)
    ));

    // A killed run is rerun like a failed one.
    env.reset(waiting_id, ResetScope::All)
        .await
        .expect("rerun a killed run");
    assert_eq!(
        env.run_by_key(&waiting).await.expect("run").status,
        RunStatus::Running
    );
    env.kill_run(waiting_id).await.expect("kill").expect("live");
    assert_eq!(
        env.wait_run(&waiting, TIMEOUT).await.status,
        RunStatus::Killed
    );
});
