//! Rerun in place, clearing and marking tasks by hand.

use std::time::Duration;

use datajump_engine::ResetScope;
use datajump_shared::{RunStatus, TaskStatus, TriggerType};

const TIMEOUT: Duration = Duration::from_secs(60);

both_dbs!(
    rerun_failed_only_reruns_failures_and_their_downstream,
    |env| async move {
        let marker = env.path("fixed");
        env.apply(&format!(
            r#"
name: flaky
tasks:
  - {{ name: extract, command: "true" }}
  - name: transform
    command: test -f {marker}
    retry: {{ max: 0 }}
    depends_on: [extract]
  - {{ name: load, command: "true", depends_on: [transform] }}
  - {{ name: side, command: "true", depends_on: [extract] }}
"#,
            marker = crate::harness::shell_path(&marker)
        ))
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let run = env.run_to_end("flaky", RunStatus::Failed, TIMEOUT).await;
        let key = run.dedup_key.clone();

        std::fs::write(&marker, "").expect("fix the data");
        let released = env
            .reset(run.id, ResetScope::FailedOnly)
            .await
            .expect("rerun");
        assert_eq!(
            released
                .iter()
                .map(|r| r.task_name.as_str())
                .collect::<Vec<_>>(),
            ["transform"]
        );
        let rerun = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(rerun.id, run.id, "in place");
        assert_eq!(
            rerun.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&rerun).await
        );
        let executions = env.executions_by_name(run.id).await;
        assert_eq!(
            executions["extract"].len(),
            1,
            "succeeded tasks are not rerun"
        );
        assert_eq!(executions["side"].len(), 1);
        let transform: Vec<(i32, TaskStatus, TriggerType)> = executions["transform"]
            .iter()
            .map(|e| (e.attempt, e.status, e.trigger_type))
            .collect();
        assert_eq!(
            transform,
            [
                (0, TaskStatus::Failed, TriggerType::Manual),
                (1, TaskStatus::Success, TriggerType::Rerun)
            ],
            "attempts keep counting; the rerun's attempt says RERUN"
        );
        assert_eq!(
            executions["load"].len(),
            1,
            "load never ran before, runs now"
        );
    }
);

both_dbs!(mark_success_lets_the_downstream_run, |env| async move {
    env.apply(
        r#"
name: marked
tasks:
  - { name: broken, command: "exit 1", retry: { max: 0 } }
  - { name: next, command: "true", depends_on: [broken] }
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let run = env.run_to_end("marked", RunStatus::Failed, TIMEOUT).await;
    let key = run.dedup_key.clone();
    let broken = env.instances_by_name(run.id).await["broken"].clone();
    env.mark(broken.id, TaskStatus::Success)
        .await
        .expect("mark success");
    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    let instances = env.instances_by_name(run.id).await;
    assert_eq!(instances["broken"].status, TaskStatus::Success);
    assert_eq!(instances["next"].status, TaskStatus::Success);
    assert_eq!(
        env.executions_by_name(run.id).await["broken"].len(),
        1,
        "a mark runs nothing"
    );

    // Marking the finished leaf FAILED fails the finished run again.
    let next = instances["next"].clone();
    env.mark(next.id, TaskStatus::Failed)
        .await
        .expect("mark failed");
    let run = env.run_by_key(&key).await.expect("run");
    assert_eq!(
        run.status,
        RunStatus::Failed,
        "a failed mark fails the finished run"
    );
});
