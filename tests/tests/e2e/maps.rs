//! Mapped tasks end to end (issue 42): with two resolvers and three runners
//! racing, every item is claimed and run once, no map has more than its
//! `max_parallel` items running at once, and each map's children are
//! released once, when its last item ends.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use datajump_shared::entities::task_instance;
use datajump_shared::{RunStatus, TaskStatus};

const MAPS: usize = 4;
const ITEMS: usize = 12;
const MAX_PARALLEL: usize = 3;

both_dbs!(
    every_item_runs_once_within_its_places_with_two_resolvers,
    |env| async move {
        let mut yaml = String::from("name: maps\ntasks:\n");
        let items: Vec<String> = (0..ITEMS).map(|i| format!("t{i}")).collect();
        for m in 0..MAPS {
            // Map 0 has one item that fails: its handler runs, its join does not.
            let fail = if m == 0 {
                r#"[ "$DJ_MAP_INDEX" = 5 ] && exit 3; "#
            } else {
                ""
            };
            writeln!(
                yaml,
                "  - {{ name: a{m}, command: 'true' }}\n  \
                 - {{ name: b{m}, command: 'true' }}\n  \
                 - name: load{m}\n    depends_on: [a{m}, b{m}]\n    retry: {{ max: 0 }}\n    \
                 map: {{ over: [{}], max_parallel: {MAX_PARALLEL} }}\n    \
                 command: '{fail}sleep 0.05; echo \"$DJ_MAP_ITEM\"'\n  \
                 - {{ name: join{m}, command: 'true', depends_on: [load{m}] }}\n  \
                 - {{ name: handle{m}, command: 'true', strategy: ONE_FAILED, depends_on: [load{m}] }}",
                items.join(", ")
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
        let key = env.trigger("maps").await;
        let run = env.wait_run(&key, Duration::from_secs(180)).await;
        assert_eq!(
            run.status,
            RunStatus::Failed,
            "map 0's failed item fails it: {}",
            env.describe_run(&run).await
        );
        let rows = env.instances(run.id).await;
        let executions = env.executions(run.id).await;
        let mut runs_of: BTreeMap<i64, usize> = BTreeMap::new();
        for execution in &executions {
            *runs_of.entry(execution.task_instance_id).or_default() += 1;
        }
        let planned: BTreeMap<&str, &task_instance::Model> = rows
            .iter()
            .filter(|row| !row.is_map_item())
            .map(|row| (row.task_name.as_str(), row))
            .collect();
        for m in 0..MAPS {
            let name = format!("load{m}");
            let aggregate = planned[name.as_str()];
            let mine: Vec<&task_instance::Model> = rows
                .iter()
                .filter(|row| row.is_map_item() && row.task_id == aggregate.task_id)
                .collect();
            assert_eq!(mine.len(), ITEMS, "{name}: one instance per item");
            assert_eq!(
                (
                    aggregate.map_items,
                    aggregate.map_ended,
                    aggregate.map_failed
                ),
                (Some(ITEMS as i32), ITEMS as i32, i32::from(m == 0)),
                "{name}"
            );
            assert!(
                !runs_of.contains_key(&aggregate.id),
                "{name}: the aggregate itself never runs"
            );
            for item in &mine {
                assert_eq!(
                    runs_of.get(&item.id),
                    Some(&1),
                    "{name}[{}] claimed and run exactly once",
                    item.map_index
                );
            }
            // At no instant were more than max_parallel of its items running.
            let spans: Vec<_> = executions
                .iter()
                .filter(|e| mine.iter().any(|item| item.id == e.task_instance_id))
                .map(|e| (e.start_time, e.end_time.expect("ended")))
                .collect();
            for (start, _) in &spans {
                let running = spans
                    .iter()
                    .filter(|(s, e)| s <= start && start < e)
                    .count();
                assert!(
                    running <= MAX_PARALLEL,
                    "{name}: {running} items ran at once"
                );
            }
            let (join, handle) = (format!("join{m}"), format!("handle{m}"));
            let (ran, skipped) = if m == 0 {
                (&handle, &join)
            } else {
                (&join, &handle)
            };
            assert_eq!(
                runs_of.get(&planned[ran.as_str()].id),
                Some(&1),
                "{ran} released once, after the last item"
            );
            assert!(
                !runs_of.contains_key(&planned[skipped.as_str()].id),
                "{skipped} never ran"
            );
            let expected = if m == 0 {
                TaskStatus::Failed
            } else {
                TaskStatus::Success
            };
            assert_eq!(aggregate.status, expected, "{name}");
            let last_item_end = mine.iter().filter_map(|i| i.finished_at).max();
            assert!(
                planned[ran.as_str()].started_at >= last_item_end,
                "{ran} started after {name}'s last item ended"
            );
        }
    }
);
