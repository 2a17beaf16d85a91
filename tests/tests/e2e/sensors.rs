//! SENSOR tasks (docs/DAG_FORMAT.md "Sensors"): between checks a sensor
//! waits UP_FOR_RESCHEDULE holding no runner slot, as one attempt with a
//! count of checks; it ends when its condition holds, or at its
//! `sensor_timeout` (SKIPPED with `soft_fail`), and an operator can kill
//! or mark it while it waits.

use std::time::{Duration, Instant};

use chrono::Utc;
use datajump_engine::Announcement;
use datajump_shared::datasets::{EventSource, Written};
use datajump_shared::entities::task_instance;
use datajump_shared::{RunStatus, TaskStatus};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use crate::harness::{TestEnv, http_receiver};

const TIMEOUT: Duration = Duration::from_secs(90);

/// Records that `dataset` (partition `partition`) was written, as an
/// announcement through the API does.
async fn announce(env: &TestEnv, dataset: &str, partition: Option<&str>) {
    let (_, effects) = datajump_engine::announce(
        &env.db,
        vec![Announcement {
            project_id: 1,
            written: Written {
                dataset: dataset.to_owned(),
                partition: partition.map(str::to_owned),
            },
            source: EventSource::Api,
            dag_run_id: None,
            task_instance_id: None,
            metadata: None,
            origin: None,
        }],
        chrono::Utc::now(),
    )
    .await
    .expect("announce");
    effects.publish(&env.bus).await.expect("publish");
}

/// Waits until every instance named in `tasks` of run `run_id` is `status`.
async fn wait_status(env: &TestEnv, run_id: i64, tasks: &[&str], status: TaskStatus) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        env.check_roles();
        let rows = env.instances_by_name(run_id).await;
        if tasks
            .iter()
            .all(|task| rows.get(*task).is_some_and(|row| row.status == status))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{tasks:?} never all {status}: {:?}",
            rows.values()
                .map(|r| (&r.task_name, r.status, r.pokes, &r.reason))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

both_dbs!(
    a_waiting_sensor_holds_no_slot_and_ends_once_its_partition_is_written,
    |env| async move {
        env.apply(
            r#"
name: waits
tasks:
  - name: wait_orders
    type: SENSOR
    content: { dataset: 'ext.orders/${bizdate}', poke_interval: 1 }
  - { name: load, command: 'true', depends_on: [wait_orders] }
"#,
        )
        .await;
        env.apply("name: busy\ntasks:\n  - { name: a, command: 'true' }\n  - { name: b, command: 'true', depends_on: [a] }\n")
            .await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        // One slot: were the sensor holding it, nothing else could run.
        let _runner = env.spawn_runner("r1", &["default"], 1).await;

        let key = env.trigger("waits").await;
        let run = env.wait_run_created(&key, TIMEOUT).await;
        let deadline = Instant::now() + TIMEOUT;
        let sensor = loop {
            let row = env.instances_by_name(run.id).await["wait_orders"].clone();
            if row.pokes >= 2 {
                break row;
            }
            assert!(
                Instant::now() < deadline,
                "the sensor never checked twice: {row:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(
            sensor
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("has not been written")),
            "{sensor:?}"
        );
        // The other DAG runs in the slot the sensor does not hold.
        env.run_to_end("busy", RunStatus::Success, TIMEOUT).await;

        announce(&env, "ext.orders", Some(&run.biz_date.to_string())).await;
        let written_at = Utc::now();
        let run = env.wait_run(&key, TIMEOUT).await;
        assert_eq!(
            run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&run).await
        );
        let rows = env.instances_by_name(run.id).await;
        let sensor = &rows["wait_orders"];
        let finished = sensor.finished_at.expect("finished");
        assert!(
            finished - written_at < chrono::Duration::seconds(1 + 10),
            "ended {}s after the partition was written, with a poke interval of 1s",
            (finished - written_at).num_seconds()
        );
        assert_eq!(sensor.attempt, 1, "one attempt however many checks");
        assert_eq!(sensor.pokes, 0, "the count starts again after the end");
        let executions = &env.executions_by_name(run.id).await["wait_orders"];
        assert_eq!(executions.len(), 1, "{executions:?}");
        assert_eq!(executions[0].status, TaskStatus::Success);
        assert!(
            executions[0]
                .log_tail
                .as_deref()
                .is_some_and(|log| log.contains("ready: ext.orders/")),
            "{:?}",
            executions[0].log_tail
        );
    }
);

both_dbs!(
    sensors_time_out_skip_succeed_on_other_checks_and_obey_operators,
    |env| async move {
        let (port, requests) = http_receiver(2);
        env.apply("name: upstream\ntasks:\n  - { name: load, command: 'true' }\n")
            .await;
        env.apply(&format!(
            r#"
name: sensing
tasks:
  - {{ name: times_out, type: SENSOR, content: {{ file: '/nonexistent/${{bizdate}}/*.csv', poke_interval: 1, sensor_timeout: 2 }} }}
  - {{ name: soft, type: SENSOR, content: {{ file: '/nonexistent/x', poke_interval: 1, sensor_timeout: 2, soft_fail: true }} }}
  - {{ name: after_soft, command: 'true', depends_on: [soft] }}
  - {{ name: killed, type: SENSOR, content: {{ dataset: never.written, poke_interval: 1 }} }}
  - {{ name: marked, type: SENSOR, content: {{ dataset: never.written, poke_interval: 1 }} }}
  - {{ name: marked_failed, type: SENSOR, content: {{ dataset: never.written, poke_interval: 1 }} }}
  - {{ name: http, type: SENSOR, content: {{ http: {{ url: 'http://127.0.0.1:{port}/ready' }}, poke_interval: 1 }} }}
  - {{ name: dependent, type: SENSOR, content: {{ dag: upstream, task: load, poke_interval: 1 }} }}
"#
        ))
        .await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let key = env.trigger("sensing").await;
        let run = env.wait_run_created(&key, TIMEOUT).await;
        wait_status(
            &env,
            run.id,
            &["killed", "marked", "marked_failed"],
            TaskStatus::UpForReschedule,
        )
        .await;
        let rows = env.instances_by_name(run.id).await;
        env.kill_instance(rows["killed"].id).await.expect("kill");
        env.mark(rows["marked"].id, TaskStatus::Success)
            .await
            .expect("mark");
        env.mark(rows["marked_failed"].id, TaskStatus::Failed)
            .await
            .expect("mark");
        // The dependent check holds once upstream's task of the same date
        // succeeded.
        let mut fire = env.manual_fire("upstream").await;
        fire.biz_date = run.biz_date;
        env.bus.publish_fire(&fire).await.expect("fire");

        let run = env.wait_run(&key, TIMEOUT).await;
        let rows = env.instances_by_name(run.id).await;
        let status = |task: &str| rows[task].status;
        assert_eq!(status("times_out"), TaskStatus::Timeout);
        assert!(
            rows["times_out"]
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("sensor_timeout of 2s")
                    && r.contains("nothing matches /nonexistent/")),
            "{:?}",
            rows["times_out"].reason
        );
        assert_eq!(status("soft"), TaskStatus::Skipped);
        assert_eq!(
            status("after_soft"),
            TaskStatus::Success,
            "SKIPPED lets it run"
        );
        assert_eq!(status("killed"), TaskStatus::Killed);
        assert_eq!(status("marked"), TaskStatus::Success);
        assert_eq!(status("marked_failed"), TaskStatus::Failed);
        assert_eq!(status("http"), TaskStatus::Success);
        assert!(
            requests.lock().expect("requests").len() >= 3,
            "two failed answers, then a success"
        );
        assert_eq!(status("dependent"), TaskStatus::Success);
        assert_eq!(
            run.status,
            RunStatus::Failed,
            "a timeout and a kill fail the run"
        );
        let waiting: Vec<task_instance::Model> = task_instance::Entity::find()
            .filter(task_instance::Column::Status.eq(TaskStatus::UpForReschedule))
            .all(&env.db)
            .await
            .expect("instances");
        assert!(waiting.is_empty(), "{waiting:?}");

        // A sensor with no check, or two, is refused when applied.
        let refused = env
            .try_apply("name: bad\ntasks:\n  - { name: s, type: SENSOR, content: { dataset: a.b, file: /x } }\n")
            .await
            .expect_err("two checks");
        assert!(
            refused.contains("a SENSOR checks exactly one of"),
            "{refused}"
        );
    }
);

/// A thousand sensors waiting on one runner of four slots leave the slots
/// to other work, and each ends within its poke interval (and the time
/// the runner takes to check a thousand) once its dataset is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_waiting_sensors_leave_four_slots_free() {
    const SENSORS: usize = 1000;
    const POKE_INTERVAL: i64 = 10;
    let env = TestEnv::new(crate::harness::Backend::Sqlite).await;
    let mut yaml = String::from("name: many\ntasks:\n");
    for i in 0..SENSORS {
        yaml.push_str(&format!(
            "  - {{ name: s{i}, type: SENSOR, content: {{ dataset: big.ready, poke_interval: {POKE_INTERVAL} }} }}\n"
        ));
    }
    env.apply(&yaml).await;
    env.apply("name: other\ntasks:\n  - { name: a, command: 'true' }\n  - { name: b, command: 'true', depends_on: [a] }\n  - { name: c, command: 'true', depends_on: [b] }\n")
        .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;

    let key = env.trigger("many").await;
    let deadline = Instant::now() + TIMEOUT * 2;
    loop {
        env.check_roles();
        let checked = match env.run_by_key(&key).await {
            Some(run) => env
                .instances(run.id)
                .await
                .iter()
                .filter(|row| row.pokes >= 1)
                .count(),
            None => 0,
        };
        if checked == SENSORS {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{checked} of {SENSORS} sensors checked once"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Every sensor is waiting, and other work still runs.
    env.run_to_end("other", RunStatus::Success, TIMEOUT).await;

    announce(&env, "big.ready", None).await;
    let written_at = Utc::now();
    let run = env.wait_run(&key, TIMEOUT * 2).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    let rows = env.instances(run.id).await;
    let slowest = rows
        .iter()
        .filter_map(|row| row.finished_at)
        .map(|at| at - written_at)
        .max()
        .expect("finished sensors");
    assert!(
        slowest < chrono::Duration::seconds(POKE_INTERVAL + 30),
        "the last sensor ended {}s after the dataset was written",
        slowest.num_seconds()
    );
    assert!(rows.iter().all(|row| row.attempt == 1));
}

// #38 (high 5): a `dag` sensor looks at its own project's DAGs only. Project
// 2's `upstream/load` succeeded for the date; project 1's sensor on that
// name sees no such DAG and times out saying so, as it would for a name no
// DAG has.
both_dbs!(
    a_dag_sensor_does_not_see_another_projects_runs,
    |env| async move {
        datajump_store::projects::create(&env.db, "analytics", "")
            .await
            .expect("project 2");
        env.apply("name: upstream\nproject: 2\ntasks:\n  - { name: load, command: 'true' }\n")
            .await;
        env.apply(
            "name: watcher\ntasks:\n  - { name: waits, type: SENSOR, content: { dag: upstream, task: load, poke_interval: 1, sensor_timeout: 3 } }\n",
        )
        .await;
        let _ticker = env.spawn_ticker().await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let theirs = env.trigger_for("upstream", "2024-05-01").await;
        assert_eq!(
            env.wait_run(&theirs, TIMEOUT).await.status,
            RunStatus::Success
        );
        let ours = env.trigger_for("watcher", "2024-05-01").await;
        let run = env.wait_run(&ours, TIMEOUT).await;
        let rows = env.instances_by_name(run.id).await;
        assert_eq!(
            rows["waits"].status,
            TaskStatus::Timeout,
            "{:?}",
            rows["waits"]
        );
        assert!(
            rows["waits"]
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("there is no DAG 'upstream' in project 1")),
            "{:?}",
            rows["waits"].reason
        );
    }
);
