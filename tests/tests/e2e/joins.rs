//! Invariant 2: a join starts exactly once however its parents' completions
//! race, with two resolvers handling them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use datajump_shared::{RunStatus, TaskStatus};

const JOINS: usize = 20;

/// Sleeps until the next whole second, so parents running at once finish
/// at the same instant. (`$(( ))` only: `${…}` could read as a parameter.)
const AT_NEXT_SECOND: &str = "d=$((1000000 - 10#$(date +%6N))); \
     sleep $((d / 1000000)).$(printf %06d $((d % 1000000)))";

both_dbs!(twenty_joins_two_resolvers, |env| async move {
    let mut yaml = String::from("name: joins\nmax_active_runs: 2\noverlap: parallel\ntasks:\n");
    yaml.push_str("  - { name: root, command: \"true\" }\n");
    for j in 0..JOINS {
        for side in ["l", "r"] {
            writeln!(
                yaml,
                "  - {{ name: p{j:02}{side}, command: '{AT_NEXT_SECOND}', depends_on: [root] }}"
            )
            .unwrap();
        }
        writeln!(
            yaml,
            "  - {{ name: j{j:02}, command: \"true\", depends_on: [p{j:02}l, p{j:02}r] }}"
        )
        .unwrap();
    }
    env.apply(&yaml).await;
    let _resolvers = [env.spawn_resolver().await, env.spawn_resolver().await];
    let _runners = [
        env.spawn_runner("runner-1", &["default"], 4).await,
        env.spawn_runner("runner-2", &["default"], 4).await,
        env.spawn_runner("runner-3", &["default"], 4).await,
    ];

    // Two runs at once: more completions racing.
    let keys = [env.trigger("joins").await, env.trigger("joins").await];
    for key in &keys {
        let run = env.wait_run(key, Duration::from_secs(180)).await;
        assert_eq!(
            run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&run).await
        );
        let instances = env.instances_by_name(run.id).await;
        assert_eq!(instances.len(), 1 + 3 * JOINS);
        let executions = env.executions_by_name(run.id).await;
        assert_eq!(executions.len(), 1 + 3 * JOINS, "every task ran");
        let ends: HashMap<&str, _> = executions
            .iter()
            .map(|(name, e)| (name.as_str(), e[0].end_time))
            .collect();
        for j in 0..JOINS {
            let name = format!("j{j:02}");
            let join = &instances[&name];
            assert_eq!(join.status, TaskStatus::Success, "{name}");
            assert_eq!(
                (join.pending_parents, join.strong_ok, join.strong_failed),
                (0, 2, 0),
                "{name}: both parents counted once"
            );
            let runs = &executions[&name];
            assert_eq!(runs.len(), 1, "{name} ran exactly once: {runs:?}");
            for side in ["l", "r"] {
                let parent = format!("p{j:02}{side}");
                assert!(
                    ends[parent.as_str()].is_some_and(|end| end <= runs[0].start_time),
                    "{name} started after {parent} ended"
                );
            }
        }
    }
});

both_dbs!(
    one_propagation_counts_a_batch_into_each_join,
    |env| async move {
        use datajump_shared::entities::task_instance;
        use sea_orm::sea_query::Expr;
        use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

        env.apply(
            r#"
name: batch
tasks:
  - { name: a, command: "true" }
  - { name: b, command: "true" }
  - { name: c, command: "true" }
  - { name: all, command: "true", depends_on: [a, b, c] }
  - { name: any, command: "true", depends_on: [a, b], strategy: ONE_SUCCESS }
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let key = env.trigger("batch").await;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let run = loop {
            if let Some(run) = env.run_by_key(&key).await {
                let queued = env
                    .instances(run.id)
                    .await
                    .iter()
                    .filter(|i| i.status == TaskStatus::Queued)
                    .count();
                if queued == 3 {
                    break run;
                }
            }
            assert!(std::time::Instant::now() < deadline, "roots not queued");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        // Three parents end at once, as a runner's batch would report them.
        let roots = env.instances_by_name(run.id).await;
        let ids: Vec<datajump_shared::TaskInstanceId> = ["a", "b", "c"]
            .iter()
            .map(|n| roots[*n].instance_id())
            .collect();
        for (name, status) in [
            ("a", TaskStatus::Success),
            ("b", TaskStatus::Failed),
            ("c", TaskStatus::Success),
        ] {
            task_instance::Entity::update_many()
                .col_expr(task_instance::Column::Status, Expr::value(status.as_str()))
                .col_expr(
                    task_instance::Column::FinishedAt,
                    Expr::value(chrono::Utc::now()),
                )
                .filter(task_instance::Column::Id.eq(roots[name].id))
                .exec(&env.db)
                .await
                .expect("end a parent");
        }
        let propagate = || async {
            datajump_engine::propagate(&env.db, ids.clone(), chrono::Utc::now())
                .await
                .expect("propagate")
        };
        let released = propagate().await;
        let names = |rows: &[task_instance::Model]| {
            rows.iter().map(|r| r.task_name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(names(released.queued()), ["any"], "one success is enough");
        assert_eq!(names(released.settled()), ["all"]);
        assert_eq!(
            released.edges().len(),
            1,
            "the queued join's edge is measured"
        );
        let after = env.instances_by_name(run.id).await;
        let counters = |name: &str| {
            let i = &after[name];
            (i.status, i.pending_parents, i.strong_ok, i.strong_failed)
        };
        assert_eq!(counters("all"), (TaskStatus::UpstreamFailed, 0, 2, 1));
        assert_eq!(counters("any"), (TaskStatus::Queued, 0, 1, 1));
        let run = env.run_by_key(&key).await.expect("run");
        assert_eq!(
            (run.status, run.pending_instances, run.failed_instances),
            (RunStatus::Running, 1, 2),
            "a, b, c and the settled join counted off once each"
        );

        let again = propagate().await;
        assert!(
            again.queued().is_empty() && again.settled().is_empty() && again.edges().is_empty(),
            "a second propagation of the same instances is a no-op"
        );
        let run = env.run_by_key(&key).await.expect("run");
        assert_eq!((run.pending_instances, run.failed_instances), (1, 2));
        assert_eq!(env.instances_by_name(run.id).await["all"].strong_failed, 1);
    }
);

// #41: failure handlers (ONE_FAILED) are released once each with two
// resolvers and three runners; their B skips pass down and stop at a
// NONE_FAILED join; allowed failures leave the run's result to the others
// and are listed in the run's answer.
both_dbs!(
    failure_handlers_run_once_and_skips_pass_down_with_two_resolvers,
    |env| async move {
        const LINES: usize = 6;
        let mut yaml = String::from("name: handlers\ntasks:\n");
        let mut ends = Vec::new();
        for i in 0..LINES {
            // Even lines' loads are allowed to fail.
            let allowed = i % 2 == 0;
            writeln!(
                yaml,
                "  - {{ name: load{i}, command: 'exit 3', retry: {{ max: 0 }}, allow_failure: {allowed} }}\n  \
                 - {{ name: handle{i}, command: 'true', strategy: ONE_FAILED, depends_on: [load{i}] }}\n  \
                 - {{ name: all_failed{i}, command: 'true', strategy: ALL_FAILED, depends_on: [handle{i}] }}\n  \
                 - {{ name: after{i}, command: 'true', depends_on: [all_failed{i}] }}"
            )
            .unwrap();
            ends.push(format!("after{i}"));
            ends.push(format!("handle{i}"));
        }
        writeln!(
            yaml,
            "  - {{ name: summary, command: 'true', strategy: NONE_FAILED, depends_on: [{}] }}",
            ends.join(", ")
        )
        .unwrap();
        env.apply(&yaml).await;
        let _resolvers = [env.spawn_resolver().await, env.spawn_resolver().await];
        let _runners = [
            env.spawn_runner("runner-1", &["default"], 4).await,
            env.spawn_runner("runner-2", &["default"], 4).await,
            env.spawn_runner("runner-3", &["default"], 4).await,
        ];
        let key = env.trigger("handlers").await;
        let run = env.wait_run(&key, Duration::from_secs(120)).await;
        assert_eq!(
            run.status,
            RunStatus::Failed,
            "the odd loads may not fail: {}",
            env.describe_run(&run).await
        );
        let instances = env.instances_by_name(run.id).await;
        let executions = env.executions_by_name(run.id).await;
        for i in 0..LINES {
            let handle = format!("handle{i}");
            assert_eq!(instances[&handle].status, TaskStatus::Success, "{handle}");
            assert_eq!(executions[&handle].len(), 1, "{handle} ran exactly once");
            for skipped in [format!("all_failed{i}"), format!("after{i}")] {
                let row = &instances[&skipped];
                assert!(
                    row.status == TaskStatus::Skipped && row.flow_skipped,
                    "{skipped}: {row:?}"
                );
                assert!(!executions.contains_key(&skipped), "{skipped} never ran");
            }
        }
        assert_eq!(instances["summary"].status, TaskStatus::Success);
        assert_eq!(executions["summary"].len(), 1, "the join ran once");

        let api = crate::api::Api::start(&env, None).await;
        let detail = api
            .get(&format!("/api/v1/dags/instances/{}", run.id))
            .await
            .expect(200);
        assert_eq!(
            detail["allowedFailures"],
            serde_json::json!(["load0", "load2", "load4"]),
            "{detail}"
        );
        let after0 = detail["taskInstances"]
            .as_array()
            .expect("taskInstances")
            .iter()
            .find(|t| t["taskName"] == "after0")
            .expect("after0");
        assert_eq!(after0["flowSkipped"], true, "{after0}");
        assert_eq!(
            after0["errorProblem"]["code"], "task.flow_skipped",
            "{after0}"
        );
    }
);

// #41: SWITCH tasks are decided once each, with two resolvers and three
// runners racing to propagate their parents: one decision row each, the
// chosen branch run once, the others never.
both_dbs!(
    switches_are_decided_once_with_two_resolvers,
    |env| async move {
        const LINES: usize = 8;
        let mut yaml = String::from("name: switches\ntasks:\n");
        let mut ends = Vec::new();
        for i in 0..LINES {
            writeln!(
                yaml,
                "  - {{ name: count{i}, command: 'echo \"##dj-output rows={i}\"' }}\n  \
                 - {{ name: other{i}, command: 'true' }}\n  \
                 - name: route{i}\n    type: SWITCH\n    depends_on: [count{i}, other{i}]\n    \
                 cases:\n      - {{ when: \"int(tasks.count{i}.output.rows) % 2 == 0\", then: [even{i}] }}\n    \
                 default: [odd{i}]\n  \
                 - {{ name: even{i}, command: 'true', depends_on: [route{i}] }}\n  \
                 - {{ name: odd{i}, command: 'true', depends_on: [route{i}] }}"
            )
            .unwrap();
            ends.push(format!("even{i}"));
            ends.push(format!("odd{i}"));
        }
        writeln!(
            yaml,
            "  - {{ name: summary, command: 'true', strategy: NONE_FAILED, depends_on: [{}] }}",
            ends.join(", ")
        )
        .unwrap();
        env.apply(&yaml).await;
        let _resolvers = [env.spawn_resolver().await, env.spawn_resolver().await];
        let _runners = [
            env.spawn_runner("runner-1", &["default"], 4).await,
            env.spawn_runner("runner-2", &["default"], 4).await,
            env.spawn_runner("runner-3", &["default"], 4).await,
        ];
        let key = env.trigger("switches").await;
        let run = env.wait_run(&key, Duration::from_secs(120)).await;
        assert_eq!(
            run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&run).await
        );
        let instances = env.instances_by_name(run.id).await;
        let executions = env.executions_by_name(run.id).await;
        for i in 0..LINES {
            let route = format!("route{i}");
            assert_eq!(instances[&route].status, TaskStatus::Success, "{route}");
            let decided = &executions[&route];
            assert_eq!(decided.len(), 1, "{route} decided exactly once");
            assert_eq!((decided[0].attempt, decided[0].worker.as_str()), (0, ""));
            let (chosen, skipped) = if i % 2 == 0 {
                (format!("even{i}"), format!("odd{i}"))
            } else {
                (format!("odd{i}"), format!("even{i}"))
            };
            assert_eq!(executions[&chosen].len(), 1, "{chosen} ran once");
            let row = &instances[&skipped];
            assert!(
                row.status == TaskStatus::Skipped && row.flow_skipped,
                "{skipped}: {row:?}"
            );
            assert!(!executions.contains_key(&skipped), "{skipped} never ran");
        }
        assert_eq!(executions["summary"].len(), 1, "the join ran once");
    }
);
