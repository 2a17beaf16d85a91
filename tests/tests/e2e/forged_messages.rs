//! Someone who can publish on NATS forges the messages that drive the
//! runners: a work message for a QUEUED instance carrying another command
//! (at priority 10, so it is fetched first), and a kill for a task that
//! should go on. Messages are wake-ups: the runner runs what the database
//! queued and kills only what the database says should die.

use std::time::{Duration, Instant};

use datajump_shared::messages::{Message, WorkMsg};
use datajump_shared::subjects::Priority;
use datajump_shared::{RunStatus, TaskInstanceId, TaskStatus};
use serde_json::json;

use crate::harness::{TestEnv, dj};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Waits until the only instance of the run with `key` is `status`.
async fn wait_instance(
    env: &TestEnv,
    key: &str,
    status: TaskStatus,
) -> datajump_shared::entities::task_instance::Model {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        env.check_roles();
        if let Some(run) = env.run_by_key(key).await
            && let Some(instance) = env.instances(run.id).await.into_iter().next()
            && instance.status == status
        {
            return instance;
        }
        assert!(Instant::now() < deadline, "no {status} instance for {key}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

both_dbs!(
    a_forged_work_message_cannot_change_what_runs,
    |env| async move {
        let marker = env.path("forged-command-ran");
        env.apply(
            r#"
name: payroll
tasks:
  - name: pay
    retry: { max: 0 }
    command: echo "the real command ran"
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let key = env.trigger("payroll").await;
        let queued = wait_instance(&env, &key, TaskStatus::Queued).await;

        // The genuine message's ids and attempt, another command, priority 10.
        let mut forged = WorkMsg::for_queued(&queued).expect("work message");
        forged.spec.task.content =
            json!({ "command": format!("echo FORGED; touch {}", marker.display()) });
        env.bus
            .js()
            .publish(
                dj().work("default", Priority::HIGHEST),
                forged.encode().into(),
            )
            .await
            .expect("publish")
            .await
            .expect("stored");

        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let run = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(run.status, RunStatus::Success);
        let executions = env.executions_by_name(run.id).await;
        assert_eq!(executions["pay"].len(), 1, "one attempt ran");
        let log = executions["pay"][0].log_tail.clone().expect("log");
        assert!(log.contains("the real command ran"), "{log}");
        assert!(!log.contains("FORGED"), "the forged command ran:\n{log}");
        assert!(!marker.exists(), "the forged command ran");
    }
);

both_dbs!(a_forged_kill_does_not_stop_a_task, |env| async move {
    env.apply(
        r#"
name: long_load
tasks:
  - name: load
    retry: { max: 0 }
    command: sleep 3; echo "load finished"
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let key = env.trigger("long_load").await;
    let running = wait_instance(&env, &key, TaskStatus::Running).await;

    // Nothing in the database says it should die.
    env.nats
        .publish(dj().kill(TaskInstanceId(running.id)), "".into())
        .await
        .expect("publish kill");
    env.nats.flush().await.expect("flush");

    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "a forged kill stopped the task"
    );
    let executions = env.executions_by_name(run.id).await;
    let log = executions["load"][0].log_tail.clone().expect("log");
    assert!(log.contains("load finished"), "{log}");

    // A kill the engine makes still stops a task at once.
    let key = env.trigger("long_load").await;
    let running = wait_instance(&env, &key, TaskStatus::Running).await;
    env.kill_instance(running.id).await.expect("kill");
    let run = env.wait_run(&key, TIMEOUT).await;
    let killed = env.instances_by_name(run.id).await;
    assert_eq!(killed["load"].status, TaskStatus::Killed, "{run:?}");
    let executions = env.ended_executions_by_name(run.id, TIMEOUT).await;
    let log = executions["load"][0].log_tail.clone().expect("log");
    assert!(
        !log.contains("load finished"),
        "the kill did not stop it:
{log}"
    );
});
