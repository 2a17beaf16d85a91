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
