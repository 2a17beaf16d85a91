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

        // The grid folds each map into one cell: the map's state, opening
        // its first item.
        let api = crate::api::Api::start(&env, None).await;
        let grid = api
            .get(&format!("/api/v1/dags/{}/grid", planned["load0"].dag_id))
            .await
            .expect(200);
        let row = grid["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .position(|t| t["name"] == "load0")
            .expect("a row for load0");
        assert_eq!(
            grid["tasks"]
                .as_array()
                .map(|t| t.iter().filter(|t| t["name"] == "load0").count()),
            Some(1),
            "{grid}"
        );
        let cell = &grid["runs"][0]["cells"][row];
        assert_eq!(cell[1], "FAILED", "{grid}");
        let first_item = rows
            .iter()
            .find(|r| r.is_map_item() && r.task_name == "load0" && r.map_index == 0)
            .expect("item 0");
        assert_eq!(cell[0], first_item.id, "{grid}");
        assert_eq!(
            grid["runs"][0]["maps"]
                .as_array()
                .and_then(|maps| maps.iter().find(|map| map["row"] == row)),
            Some(&serde_json::json!({ "row": row, "items": ITEMS, "failed": 1 })),
            "the cell counts the map's items and those that failed: {grid}"
        );
    }
);

/// The last log of `task` in run `run_id` (items: the first instance's).
async fn log_of(env: &crate::harness::TestEnv, run_id: i64, task: &str) -> String {
    let executions = env.executions_by_name(run_id).await;
    executions[task]
        .last()
        .and_then(|e| e.log_tail.clone())
        .unwrap_or_default()
}

/// Writes a JSON array of `count` table names to `$DJ_OUTPUT_JSON/tables.json`.
fn write_tables(count: usize) -> String {
    format!(
        "{{ printf '['; for i in $(seq 0 {last}); do [ $i -gt 0 ] && printf ','; \
         printf '\"warehouse.ods_table_%04d\"' $i; done; printf ']'; }} > \"$DJ_OUTPUT_JSON/tables.json\"",
        last = count - 1
    )
}

both_dbs!(
    a_large_output_lists_hundreds_of_items_and_what_a_task_leaves_there_cannot_trick_the_runner,
    |env| async move {
        const TIMEOUT: Duration = Duration::from_secs(120);
        // 300 names: some 8 KB, twice what an output may hold.
        env.apply(&format!(
            r#"
name: large
tasks:
  - name: list_tables
    command: '{}'
  - name: load
    depends_on: [list_tables]
    map: {{ over: "${{list_tables.output.tables}}", max_parallel: 25 }}
    command: 'echo "loading $DJ_MAP_ITEM"'
  - {{ name: report, command: 'true', depends_on: [load] }}
"#,
            write_tables(300).replace('\'', "''")
        ))
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 8).await;
        let run = env.run_to_end("large", RunStatus::Success, TIMEOUT).await;
        let rows = env.instances(run.id).await;
        let items: Vec<&task_instance::Model> = rows.iter().filter(|r| r.is_map_item()).collect();
        assert_eq!(items.len(), 300);
        assert!(items.iter().all(|i| i.status == TaskStatus::Success));
        let last = items.iter().max_by_key(|i| i.map_index).expect("items");
        let executions = env.executions(run.id).await;
        let log = executions
            .iter()
            .find(|e| e.task_instance_id == last.id)
            .and_then(|e| e.log_tail.clone())
            .unwrap_or_default();
        assert!(log.contains("loading warehouse.ods_table_0299"), "{log}");

        // What a task leaves in the folder instead of a file of its own is
        // not read, and the runner is not held up by it: the map has no list.
        for (trick, said) in [
            (
                r#"ln -s /etc/hostname "$DJ_OUTPUT_JSON/tables.json""#,
                "$DJ_OUTPUT_JSON/tables.json: not read",
            ),
            (
                r#"mkfifo "$DJ_OUTPUT_JSON/tables.json""#,
                "not a regular file of the task's own",
            ),
            (
                r#"echo '[1]' > "$DJ_OUTPUT_JSON/a.json"; echo '[2]' > "$DJ_OUTPUT_JSON/tables.json""#,
                "an attempt keeps one large output, and it wrote 2",
            ),
            (
                r#"head -c 1100000 /dev/zero | tr '\0' 1 > "$DJ_OUTPUT_JSON/tables.json""#,
                "tables.json: not kept: over the 1048576-byte limit",
            ),
            (
                r#"echo '{"a": 1}' > "$DJ_OUTPUT_JSON/tables.json""#,
                "not kept: not a JSON array",
            ),
        ] {
            env.apply(&format!(
                r#"
name: trick
tasks:
  - name: list_tables
    command: '{}'
  - name: load
    depends_on: [list_tables]
    map: {{ over: "${{list_tables.output.tables}}" }}
    command: 'echo "$DJ_MAP_ITEM"'
"#,
                trick.replace('\'', "''")
            ))
            .await;
            let run = env.run_to_end("trick", RunStatus::Failed, TIMEOUT).await;
            let log = log_of(&env, run.id, "list_tables").await;
            assert!(log.contains(said), "{trick}:\n{log}");
            let load = env
                .instances(run.id)
                .await
                .into_iter()
                .find(|r| r.task_name == "load")
                .expect("load");
            assert_eq!(load.status, TaskStatus::Failed, "{trick}");
            assert!(
                load.reason
                    .as_deref()
                    .is_some_and(|r| r.contains("was not declared")),
                "{trick}: {:?}",
                load.reason
            );
        }
    }
);

both_dbs!(
    hostile_items_reach_a_script_as_data_never_as_code,
    |env| async move {
        let marker = env.path("pwned");
        env.apply(&format!(
            r#"
name: hostile
tasks:
  - name: each
    map:
      over: ["$(touch {m})", "x; touch {m}", "`touch {m}`", "-n", "'; touch {m}; '"]
    command: 'printf "[%s] <%s>\n" ${{map.item:shell}} "$DJ_MAP_ITEM"'
"#,
            m = marker.display()
        ))
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let run = env
            .run_to_end("hostile", RunStatus::Success, Duration::from_secs(60))
            .await;
        assert!(!marker.exists(), "an item ran as code");
        let executions = env.executions(run.id).await;
        let logs: String = executions
            .iter()
            .filter_map(|e| e.log_tail.clone())
            .collect();
        for item in ["-n", "x; touch"] {
            assert!(
                logs.contains(&format!("[{item}")),
                "{item} printed as data:\n{logs}"
            );
        }
    }
);
