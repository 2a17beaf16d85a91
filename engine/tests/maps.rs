//! Mapped tasks (docs/ARCHITECTURE.md, "Map"), tested by calling the engine
//! directly on a real database (SQLite; PostgreSQL where a server answers):
//! a list read where the task would be released, items at most
//! `max_parallel` at once, released by index as others end, and the task
//! counted once, for its run and its children, when its last item ends.

mod env;

use datajump_shared::map::MapValue;
use datajump_shared::{RunStatus, TaskStatus};
use env::{EngineEnv, date, failure, status_of, success};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};

/// Every backend a rule is checked on here.
async fn envs() -> Vec<EngineEnv> {
    let mut envs = vec![EngineEnv::sqlite().await];
    envs.extend(EngineEnv::postgres().await);
    envs
}

async fn check_invariants(env: &EngineEnv) {
    let (runs, rows) = (env.all_runs().await, env.all_instances().await);
    let broken = env::invariants::violations(&runs, &rows);
    assert!(broken.is_empty(), "{:?}: {broken:#?}", env.backend);
}

fn outputs(name: &str, value: &str) -> Option<datajump_shared::outputs::Outputs> {
    Some([(name.to_owned(), value.to_owned())].into())
}

use TaskStatus::{Failed, Pending, Queued, Success};

/// The indexes of the items `released` queued, in index order: a
/// statement's RETURNING rows come in no order PostgreSQL promises.
fn queued_items(released: &datajump_engine::Effects) -> Vec<i32> {
    let mut indexes: Vec<i32> = released
        .queued()
        .iter()
        .filter(|row| row.is_map_item())
        .map(|row| row.map_index)
        .collect();
    indexes.sort_unstable();
    indexes
}

#[tokio::test]
async fn a_map_runs_each_item_at_most_n_at_once_by_index_and_its_child_after_the_last() {
    const LOADS: &str = r#"
name: loads
tasks:
  - { name: start, type: NOOP }
  - name: load
    depends_on: [start]
    map: { over: [orders, 42, true, users, items], max_parallel: 2 }
    command: 'echo "$DJ_MAP_ITEM"'
  - { name: report, type: NOOP, depends_on: [load] }
"#;
    for env in envs().await {
        let run = env.start(LOADS).await;
        let released = env.run_task(run, "start", success()).await;
        let load = env.instance(run, "load").await;
        assert_eq!(load.status, TaskStatus::Running, "{:?}", env.backend);
        assert_eq!(load.map_items, Some(5));
        assert_eq!(
            env.item_statuses(run, "load").await,
            [Queued, Queued, Pending, Pending, Pending],
            "{:?}: the first max_parallel items by index",
            env.backend
        );
        assert_eq!(
            queued_items(&released),
            [0, 1],
            "{:?}: their work goes out",
            env.backend
        );
        let items = env.items(run, "load").await;
        let values: Vec<MapValue> = items
            .iter()
            .map(|item| {
                item.spec
                    .read()
                    .expect("spec")
                    .map_item
                    .clone()
                    .expect("an item")
                    .value
            })
            .collect();
        assert_eq!(
            values.iter().map(MapValue::as_param).collect::<Vec<_>>(),
            ["orders", "42", "true", "users", "items"]
        );
        assert!(
            items
                .iter()
                .all(|item| item.task_name == "load"
                    && item.children.read().is_ok_and(Vec::is_empty))
        );
        assert_eq!(
            env.run(run).await.pending_instances,
            2,
            "{:?}: the run counts the task, not its items",
            env.backend
        );
        check_invariants(&env).await;

        // Item 1 ends first: item 2 takes its place, the report still waits.
        let released = env.run_item(run, "load", 1, success()).await;
        assert_eq!(queued_items(&released), [2]);
        assert_eq!(
            env.item_statuses(run, "load").await,
            [Queued, Success, Queued, Pending, Pending]
        );
        assert_eq!(status_of(&env.statuses(run).await, "report"), Pending);
        check_invariants(&env).await;
        for index in [0, 2, 3] {
            let _released = env.run_item(run, "load", index, success()).await;
            check_invariants(&env).await;
        }
        assert_eq!(
            status_of(&env.statuses(run).await, "report"),
            Pending,
            "{:?}: one item left",
            env.backend
        );
        let released = env.run_item(run, "load", 4, success()).await;
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "load"), Success, "{:?}", env.backend);
        assert_eq!(
            status_of(&statuses, "report"),
            Queued,
            "{:?}: released by the last item",
            env.backend
        );
        assert!(
            released
                .queued()
                .iter()
                .any(|row| row.task_name == "report")
        );
        let _released = env.run_task(run, "report", success()).await;
        let run_row = env.run(run).await;
        assert_eq!(run_row.status, RunStatus::Success, "{:?}", env.backend);
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_failed_item_fails_the_map_once_every_item_ended_and_its_failure_handler_runs() {
    const TABLES: &str = r#"
name: tables
params: { tables: '["a", "b", "c"]' }
tasks:
  - name: load
    map: { over: "${tables}", max_parallel: 1 }
    command: 'echo "$DJ_MAP_ITEM"'
  - { name: report, type: NOOP, depends_on: [load] }
  - { name: cleanup, type: NOOP, strategy: ONE_FAILED, depends_on: [load] }
"#;
    for env in envs().await {
        // A root map is expanded when its run starts.
        let run = env.start(TABLES).await;
        assert_eq!(
            env.item_statuses(run, "load").await,
            [Queued, Pending, Pending],
            "{:?}",
            env.backend
        );
        let released = env.run_item(run, "load", 0, failure()).await;
        assert_eq!(
            queued_items(&released),
            [1],
            "{:?}: a failed item frees its place too",
            env.backend
        );
        let _released = env.run_item(run, "load", 1, success()).await;
        let statuses = env.statuses(run).await;
        assert_eq!(
            status_of(&statuses, "load"),
            TaskStatus::Running,
            "{:?}: not before the last item",
            env.backend
        );
        assert_eq!(status_of(&statuses, "cleanup"), Pending);
        check_invariants(&env).await;
        let _released = env.run_item(run, "load", 2, success()).await;
        let rows = env.instances(run).await;
        assert_eq!(rows["load"].status, Failed, "{:?}", env.backend);
        assert_eq!(
            rows["load"].reason.as_deref(),
            Some("1 of its 3 map items failed")
        );
        assert_eq!(rows["report"].status, TaskStatus::UpstreamFailed);
        assert_eq!(
            rows["cleanup"].status, Queued,
            "{:?}: its failure handler runs",
            env.backend
        );
        let _released = env.run_task(run, "cleanup", success()).await;
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_list_from_an_output_is_read_when_the_map_may_run_an_empty_one_skips_and_a_bad_one_fails()
{
    const LISTED: &str = r#"
name: listed
max_active_runs: 10
tasks:
  - { name: list_tables, type: NOOP }
  - name: load
    depends_on: [list_tables]
    map: { over: "${list_tables.output.tables}", max_parallel: 4, max_items: 3 }
    command: 'echo "$DJ_MAP_ITEM"'
  - { name: report, type: NOOP, depends_on: [load] }
"#;
    for env in envs().await {
        let dag = env.apply(LISTED).await;
        let mut day = 0;
        let mut next_run = async || {
            day += 1;
            let (run, _released) = env.fire(dag, date(&format!("2026-01-{day:02}"))).await;
            run.expect("a run")
        };

        let run = next_run().await;
        let _released = env
            .run_task_declaring(
                run,
                "list_tables",
                success(),
                outputs("tables", r#"["ods.a", "ods.b"]"#),
            )
            .await;
        assert_eq!(
            env.item_statuses(run, "load").await,
            [Queued, Queued],
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;

        // An empty list: the map is skipped by control flow, as is its child.
        let run = next_run().await;
        let _released = env
            .run_task_declaring(run, "list_tables", success(), outputs("tables", "[]"))
            .await;
        let rows = env.instances(run).await;
        assert_eq!(
            rows["load"].status,
            TaskStatus::Skipped,
            "{:?}",
            env.backend
        );
        assert!(rows["load"].flow_skipped);
        assert_eq!(
            rows["load"].reason.as_deref(),
            Some("skipped: its map list (${list_tables.output.tables}) is empty")
        );
        assert_eq!(
            rows["report"].status,
            TaskStatus::Skipped,
            "{:?}: B passes down",
            env.backend
        );
        assert!(env.items(run, "load").await.is_empty());
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Success,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;

        // Lists that cannot be mapped over fail the task, saying why.
        for (declared, said) in [
            (
                outputs("tables", r#"["a", {"b": 1}]"#),
                "item 1: is an object; an item is a string, a number or a boolean",
            ),
            (
                outputs("tables", r#"["a", "b", "c", "d"]"#),
                "has 4 items, more than the 3 its map allows (max_items)",
            ),
            (outputs("tables", "ods.a,ods.b"), "is not a JSON array"),
            (
                outputs("other", "[1]"),
                "was not declared: task 'list_tables' ended without output 'tables'",
            ),
            (None, "was not declared"),
        ] {
            let run = next_run().await;
            let _released = env
                .run_task_declaring(run, "list_tables", success(), declared)
                .await;
            let rows = env.instances(run).await;
            assert_eq!(rows["load"].status, Failed, "{:?}: {said}", env.backend);
            let reason = rows["load"].reason.clone().unwrap_or_default();
            assert!(
                reason.starts_with("its map list (${list_tables.output.tables}) ")
                    && reason.contains(said),
                "{:?}: {reason}",
                env.backend
            );
            let problem = rows["load"]
                .reason_problem
                .as_ref()
                .and_then(|p| p.read().ok())
                .map(|p| p.code.clone());
            assert_eq!(problem.as_deref(), Some("task.map_list"));
            assert_eq!(rows["report"].status, TaskStatus::UpstreamFailed);
            assert!(
                env.items(run, "load").await.is_empty(),
                "{:?}: no item is made",
                env.backend
            );
            assert_eq!(env.run(run).await.status, RunStatus::Failed);
        }
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn killing_a_run_kills_its_map_and_every_item_and_an_item_retry_keeps_its_place() {
    const RETRIED: &str = r#"
name: retried
tasks:
  - name: load
    map: { over: [1, 2, 3], max_parallel: 1 }
    retry: { max: 1, interval: 60 }
    command: 'echo "$DJ_MAP_ITEM"'
"#;
    for env in envs().await {
        let run = env.start(RETRIED).await;
        let item = env.items(run, "load").await.remove(0);
        let (execution, _released) = env.claim(&item).await;
        let item = env.instance_by_id(item.id).await;
        let retry_at = env.now + chrono::Duration::seconds(60);
        let released = env
            .end(
                &item,
                execution.expect("claimed"),
                datajump_engine::AttemptEnd::Retry { retry_at },
            )
            .await;
        assert!(
            released.queued().is_empty(),
            "{:?}: a retrying item keeps its place",
            env.backend
        );
        assert_eq!(
            env.item_statuses(run, "load").await,
            [TaskStatus::UpForRetry, Pending, Pending]
        );
        check_invariants(&env).await;

        let (killed, _effects) = datajump_engine::kill_run(&env.db, run, env.now)
            .await
            .expect("kill_run")
            .expect("a running run");
        assert!(
            killed.len() >= 4,
            "{:?}: {} killed",
            env.backend,
            killed.len()
        );
        assert_eq!(env.run(run).await.status, RunStatus::Killed);
        assert_eq!(
            status_of(&env.statuses(run).await, "load"),
            TaskStatus::Killed
        );
        assert!(
            env.item_statuses(run, "load")
                .await
                .iter()
                .all(|s| *s == TaskStatus::Killed),
            "{:?}",
            env.backend
        );
    }
}

#[tokio::test]
async fn a_failed_only_rerun_runs_the_failed_items_again_and_a_clear_reads_the_list_again() {
    const RERUN: &str = r#"
name: rerun
tasks:
  - { name: list_tables, type: NOOP }
  - name: load
    depends_on: [list_tables]
    map: { over: "${list_tables.output.tables}", max_parallel: 2 }
    retry: { max: 0 }
    command: 'echo "$DJ_MAP_ITEM"'
  - { name: report, type: NOOP, depends_on: [load] }
"#;
    use datajump_engine::ResetScope;
    for env in envs().await {
        let run = env.start(RERUN).await;
        let _released = env
            .run_task_declaring(
                run,
                "list_tables",
                success(),
                outputs("tables", r#"["a","b","c","d"]"#),
            )
            .await;
        for (index, end) in [
            (0, success()),
            (1, failure()),
            (2, success()),
            (3, failure()),
        ] {
            let _released = env.run_item(run, "load", index, end).await;
        }
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}",
            env.backend
        );
        let before: Vec<i64> = env.items(run, "load").await.iter().map(|i| i.id).collect();

        // Only the failed items run again, in the same rows; the list is kept.
        let released = datajump_engine::reset(&env.db, run, ResetScope::FailedOnly, env.now)
            .await
            .expect("rerun --failed-only");
        assert_eq!(queued_items(&released), [1, 3], "{:?}", env.backend);
        let items = env.items(run, "load").await;
        assert_eq!(
            items.iter().map(|i| i.id).collect::<Vec<_>>(),
            before,
            "{:?}: the same items",
            env.backend
        );
        assert_eq!(
            env.item_statuses(run, "load").await,
            [Success, Queued, Success, Queued]
        );
        let load = env.instance(run, "load").await;
        assert_eq!(
            (load.status, load.map_ended, load.map_failed),
            (TaskStatus::Running, 2, 0)
        );
        check_invariants(&env).await;
        for index in [1, 3] {
            let _released = env.run_item(run, "load", index, success()).await;
        }
        assert_eq!(
            status_of(&env.statuses(run).await, "report"),
            Queued,
            "{:?}",
            env.backend
        );
        let _released = env.run_task(run, "report", success()).await;
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Success,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;

        // A clear of the mapped task reads its list again: the items and
        // their attempts go, and new ones are made from the current value.
        let task_id = env.instance(run, "load").await.task_id;
        let released = datajump_engine::reset(
            &env.db,
            run,
            ResetScope::Task {
                task_id,
                downstream: true,
            },
            env.now,
        )
        .await
        .expect("clear");
        assert_eq!(released.queued().len(), 2, "{:?}", env.backend);
        let items = env.items(run, "load").await;
        assert_eq!(items.len(), 4);
        assert!(
            items.iter().all(|i| !before.contains(&i.id)),
            "{:?}: new items",
            env.backend
        );
        let orphans = datajump_shared::entities::execution::Entity::find()
            .filter(
                datajump_shared::entities::execution::Column::TaskInstanceId.is_in(before.clone()),
            )
            .count(&env.db)
            .await
            .expect("executions");
        assert_eq!(
            orphans, 0,
            "{:?}: the old items' attempts went with them",
            env.backend
        );
        check_invariants(&env).await;

        // A full rerun runs the list task again: its new list is mapped.
        for index in 0..4 {
            let _released = env.run_item(run, "load", index, success()).await;
        }
        let _released = env.run_task(run, "report", success()).await;
        let _released = datajump_engine::reset(&env.db, run, ResetScope::All, env.now)
            .await
            .expect("rerun");
        assert!(env.items(run, "load").await.is_empty(), "{:?}", env.backend);
        let _released = env
            .run_task_declaring(run, "list_tables", success(), outputs("tables", r#"["x"]"#))
            .await;
        assert_eq!(
            env.item_statuses(run, "load").await,
            [Queued],
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn killing_a_map_kills_its_live_items_and_an_ended_item_cannot_be_marked() {
    const KILLED: &str = r#"
name: killed
tasks:
  - { name: load, map: { over: [1, 2, 3], max_parallel: 2 }, command: 'echo "$DJ_MAP_ITEM"' }
  - { name: report, type: NOOP, depends_on: [load] }
"#;
    for env in envs().await {
        let run = env.start(KILLED).await;
        let _released = env.run_item(run, "load", 0, success()).await;
        let item = env.items(run, "load").await.remove(0);
        let refused = datajump_engine::mark(&env.db, item.instance_id(), Failed, env.now)
            .await
            .expect_err("an ended item is counted");
        assert!(
            refused.to_string().contains("item 0 of 'load' has ended"),
            "{refused}"
        );
        let load = env.instance(run, "load").await;
        let (killed, _effects) =
            datajump_engine::kill_instance(&env.db, load.instance_id(), env.now)
                .await
                .expect("kill")
                .expect("a live map");
        assert_eq!(killed.status, TaskStatus::Killed);
        assert_eq!(
            env.item_statuses(run, "load").await,
            [Success, TaskStatus::Killed, TaskStatus::Killed],
            "{:?}: its live items die with it",
            env.backend
        );
        // The resolver propagates the kills' completions.
        let mut ids = vec![killed.instance_id()];
        ids.extend(
            env.items(run, "load")
                .await
                .iter()
                .filter(|item| item.status == TaskStatus::Killed)
                .map(|item| item.instance_id()),
        );
        let _released = datajump_engine::propagate(&env.db, ids, env.now)
            .await
            .expect("propagate");
        let rows = env.instances(run).await;
        assert_eq!(
            rows["report"].status,
            TaskStatus::UpstreamFailed,
            "{:?}",
            env.backend
        );
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_map_reads_a_large_output_and_a_retry_starts_without_the_last_attempts() {
    const LARGE: &str = r#"
name: large
tasks:
  - { name: list_tables, type: NOOP, retry: { max: 1, interval: 60 } }
  - name: load
    depends_on: [list_tables]
    map: { over: "${list_tables.output.tables}", max_parallel: 10, max_items: 2000 }
    command: 'echo "$DJ_MAP_ITEM"'
"#;
    use datajump_shared::entities::large_output;
    use datajump_shared::outputs::LargeOutput;
    let tables: Vec<String> = (0..1500).map(|i| format!("ods.table_{i:04}")).collect();
    let large = LargeOutput::read(
        "tables",
        serde_json::to_string(&tables).expect("json").as_bytes(),
    )
    .expect("a large output");
    for mut env in envs().await {
        let run = env.start(LARGE).await;
        // The first attempt writes one and fails: its retry starts without it.
        let row = env.instance(run, "list_tables").await;
        let (execution, _released) = env.claim(&row).await;
        let claimed = env.instance(run, "list_tables").await;
        let retry_at = env.now + chrono::Duration::seconds(60);
        let _released = env
            .end_writing(
                &claimed,
                execution.expect("claimed"),
                datajump_engine::AttemptEnd::Retry { retry_at },
                None,
                Some(large.clone()),
            )
            .await;
        let kept = large_output::Entity::find()
            .count(&env.db)
            .await
            .expect("count");
        assert_eq!(
            kept, 1,
            "{:?}: the attempt's large output is kept",
            env.backend
        );
        env.now = retry_at;
        let _released = env.retry_due(&env.instance(run, "list_tables").await).await;
        let _released = env
            .run_task_writing(run, "list_tables", success(), large.clone())
            .await;
        let stored: Vec<large_output::Model> = large_output::Entity::find()
            .all(&env.db)
            .await
            .expect("rows");
        assert_eq!(stored.len(), 1, "{:?}: one per instance", env.backend);
        assert_eq!(stored[0].value, large.value());

        let items = env.items(run, "load").await;
        assert_eq!(items.len(), 1500, "{:?}", env.backend);
        assert_eq!(
            items.iter().filter(|i| i.status == Queued).count(),
            10,
            "{:?}: max_parallel at once",
            env.backend
        );
        let last = items[1499]
            .spec
            .read()
            .expect("spec")
            .map_item
            .clone()
            .expect("an item");
        assert_eq!(last.value.as_param(), "ods.table_1499");
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn another_run_and_another_dag_wait_for_the_map_not_for_its_items() {
    const LOADS: &str = r#"
name: loads
max_active_runs: 5
tasks:
  - name: load
    map: { over: [a, b, c], max_parallel: 3 }
    command: 'echo "$DJ_MAP_ITEM"'
  - { name: compare, type: NOOP, depends_on: [{ task: load, offset_day: -1 }] }
"#;
    const REPORT: &str = r#"
name: report_dag
max_active_runs: 5
tasks:
  - { name: report, type: NOOP, depends_on: [loads/load] }
"#;
    use datajump_shared::entities::dependency_wait;
    for env in envs().await {
        let waits = async || {
            dependency_wait::Entity::find()
                .count(&env.db)
                .await
                .expect("count the waits")
        };
        let loads = env.apply(LOADS).await;
        let report = env.apply(REPORT).await;
        let (monday, _released) = env.fire(loads, date("2026-01-04")).await;
        let monday = monday.expect("a run");
        let (tuesday, _released) = env.fire(loads, date("2026-01-05")).await;
        let tuesday = tuesday.expect("a run");
        let (reader, _released) = env.fire(report, date("2026-01-04")).await;
        let reader = reader.expect("a run");
        assert_eq!(
            waits().await,
            2,
            "{:?}: Tuesday's compare and the report wait for Monday's map",
            env.backend
        );

        for index in [0, 1] {
            let released = env.run_item(monday, "load", index, success()).await;
            assert!(
                released.queued().iter().all(|row| row.is_map_item()),
                "{:?}: an item releases no waiter",
                env.backend
            );
        }
        assert_eq!(waits().await, 2, "{:?}", env.backend);
        assert_eq!(status_of(&env.statuses(reader).await, "report"), Pending);
        assert_eq!(status_of(&env.statuses(tuesday).await, "compare"), Pending);

        let released = env.run_item(monday, "load", 2, success()).await;
        let mut woken: Vec<&str> = released
            .queued()
            .iter()
            .map(|row| row.task_name.as_str())
            .collect();
        woken.sort_unstable();
        assert_eq!(
            woken,
            ["compare", "report"],
            "{:?}: the last item ends the map, which releases both",
            env.backend
        );
        assert_eq!(waits().await, 0);
        check_invariants(&env).await;

        // A run made after the map ended counts it at once; a failed map
        // fails what waits for it.
        let (late, _released) = env.fire(report, date("2026-01-04")).await;
        let late = late.expect("a run");
        assert_eq!(
            status_of(&env.statuses(late).await, "report"),
            Queued,
            "{:?}",
            env.backend
        );
        let (failing, _released) = env.fire(report, date("2026-01-05")).await;
        let failing = failing.expect("a run");
        for (index, end) in [(0, success()), (1, failure()), (2, success())] {
            let _released = env.run_item(tuesday, "load", index, end).await;
        }
        assert_eq!(status_of(&env.statuses(tuesday).await, "load"), Failed);
        assert_eq!(
            status_of(&env.statuses(failing).await, "report"),
            TaskStatus::UpstreamFailed,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}
