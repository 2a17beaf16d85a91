//! Datasets and data schedules (docs/DAG_FORMAT.md "Datasets"): tasks that
//! write partitions start the DAGs waiting for them once, with the
//! partition's date; announcements through the API do the same; `rerun`,
//! `any` and unpartitioned datasets behave as documented.

use std::time::{Duration, Instant};

use chrono::NaiveDate;
use datajump_shared::entities::{dag_run, dataset_event};
use datajump_shared::{RunStatus, TriggerType};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;

use crate::api::Api;
use crate::harness::{TestEnv, date};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The runs of DAG `name` that datasets started, oldest first.
async fn data_runs(env: &TestEnv, name: &str) -> Vec<dag_run::Model> {
    let mut runs: Vec<dag_run::Model> = env
        .runs_of(env.dag_id(name).await)
        .await
        .into_iter()
        .filter(|run| run.trigger_type == TriggerType::Dataset)
        .collect();
    runs.sort_by_key(|run| run.id);
    runs
}

/// Waits until DAG `name` has exactly `count` runs datasets started, all
/// ended; fails at once if it has more.
async fn wait_data_runs(env: &TestEnv, name: &str, count: usize) -> Vec<dag_run::Model> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        env.check_roles();
        let runs = data_runs(env, name).await;
        assert!(
            runs.len() <= count,
            "{name} has {} data runs, not {count}: {runs:?}",
            runs.len()
        );
        if runs.len() == count && runs.iter().all(|run| run.status.is_terminal()) {
            return runs;
        }
        assert!(
            Instant::now() < deadline,
            "{name} has {} finished data runs, not {count}: {runs:?}",
            runs.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Long enough for a fire that should not exist to have made its run.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

async fn events_of(env: &TestEnv, dataset: &str) -> Vec<dataset_event::Model> {
    dataset_event::Entity::find()
        .filter(dataset_event::Column::Dataset.eq(dataset))
        .all(&env.db)
        .await
        .expect("dataset events")
}

both_dbs!(
    a_dag_on_two_datasets_runs_once_per_partition_with_its_date,
    |env| async move {
        env.apply(
            r#"
name: ods_orders
tasks:
  - name: load
    command: 'echo "rows=42" >> "$DJ_OUTPUT"'
    outputs: ['ods.orders/${bizdate}']
"#,
        )
        .await;
        env.apply(
            "name: ods_users\ntasks:\n  - { name: load, command: 'true', outputs: ['ods.users/${bizdate}'] }\n",
        )
        .await;
        env.apply(
            r#"
name: dws
schedules:
  - on: { all: [ods.orders, ods.users] }
tasks:
  - { name: build, command: 'test "$DJ_BIZ_DATE" = 2024-03-01 -o "$DJ_BIZ_DATE" = 2024-03-02' }
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;

        // One upstream written: nothing starts.
        let orders = env.trigger_for("ods_orders", "2024-03-01").await;
        let orders = env.wait_run(&orders, TIMEOUT).await;
        assert_eq!(orders.status, RunStatus::Success);
        let written = events_of(&env, "ods.orders").await;
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(written[0].partition.as_deref(), Some("2024-03-01"));
        assert_eq!(written[0].dag_run_id, Some(orders.id));
        assert_eq!(written[0].metadata, Some(json!({ "rows": "42" })));
        settle().await;
        assert!(
            data_runs(&env, "dws").await.is_empty(),
            "started on one of two"
        );

        // Both written: one run, of the partition's date.
        let users = env.trigger_for("ods_users", "2024-03-01").await;
        assert_eq!(
            env.wait_run(&users, TIMEOUT).await.status,
            RunStatus::Success
        );
        let runs = wait_data_runs(&env, "dws", 1).await;
        assert_eq!(runs[0].biz_date, date("2024-03-01"));
        assert_eq!(runs[0].status, RunStatus::Success);

        // The partition restated: `ignore` (the default) starts nothing.
        env.reset(orders.id, datajump_engine::ResetScope::All)
            .await
            .expect("rerun");
        let deadline = Instant::now() + TIMEOUT;
        while events_of(&env, "ods.orders").await.len() < 2 {
            assert!(Instant::now() < deadline, "the rerun wrote no event");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        settle().await;
        assert_eq!(data_runs(&env, "dws").await.len(), 1, "a restatement reran");

        // Announced from outside through the API: the same rule.
        let first = api
            .post(
                "/api/v1/datasets/ods.orders/events",
                json!({ "partition": "2024-03-02", "metadata": { "source": "spark" } }),
            )
            .await
            .expect(201);
        assert_eq!(first["starts"], json!([]), "{first}");
        assert_eq!(first["event"]["source"], "API");
        let second = api
            .post(
                "/api/v1/datasets/ods.users/events",
                json!({ "partition": "2024-03-02" }),
            )
            .await
            .expect(201);
        assert_eq!(second["starts"], json!(["dws"]), "{second}");
        let runs = wait_data_runs(&env, "dws", 2).await;
        assert_eq!(runs[1].biz_date, date("2024-03-02"));
        assert_eq!(runs[1].status, RunStatus::Success);

        // Bad input changes nothing.
        api.post("/api/v1/datasets/ODS.Orders/events", json!({}))
            .await
            .expect_error(400, "BAD_REQUEST", "invalid dataset name");
        api.post(
            "/api/v1/datasets/ods.orders/events",
            json!({ "partition": "a\nb" }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "invalid partition");
        api.post(
            "/api/v1/datasets/ods.orders/events",
            json!({ "metadata": [1, 2] }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "metadata must be a JSON object");
        api.post(
            "/api/v1/datasets/ods.orders/events",
            json!({ "project": 99 }),
        )
        .await
        .expect_error(404, "NOT_FOUND", "no project with id 99");
        api.post(
            "/api/v1/datasets/ods.orders/events",
            json!({ "partitions": ["2024-03-02"] }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "unknown field `partitions`");
        api.post(
            "/api/v1/datasets/ods.orders/events",
            json!({ "metadata": { "path": "a\u{0}b" } }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "NUL character");
        api.get("/api/v1/datasets/ods.orders/events?partition=a%00b")
            .await
            .expect_error(400, "BAD_REQUEST", "NUL character");
        assert_eq!(events_of(&env, "ods.orders").await.len(), 3);

        // Any number JSON holds is kept and read back as sent, the largest
        // and smallest too: PostgreSQL returns them as exact decimals of up
        // to 309 digits, which a JSON reader rounding carelessly finds out
        // of range, making the event and every list holding it unreadable.
        let extremes = json!({ "max": f64::MAX, "min": -f64::MAX, "tiny": 5e-324, "big": 1e300 });
        let stored = api
            .post(
                "/api/v1/datasets/ext.numbers/events",
                json!({ "metadata": extremes }),
            )
            .await
            .expect(201);
        assert_eq!(stored["event"]["metadata"], extremes, "{stored}");
        let listed = api
            .get("/api/v1/datasets/ext.numbers/events")
            .await
            .expect(200);
        assert_eq!(listed["items"][0]["metadata"], extremes, "{listed}");

        // Lineage and history, as `datajump dataset` shows them.
        let listed = api.get("/api/v1/datasets").await.expect(200);
        let orders = listed["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|d| d["name"] == "ods.orders")
            .cloned()
            .expect("ods.orders listed");
        assert_eq!(
            orders["producers"],
            json!([{ "dag": "ods_orders", "task": "load", "partition": "${bizdate}" }])
        );
        assert_eq!(
            orders["consumers"],
            json!([{ "dag": "dws", "schedule": "default", "active": true }])
        );
        assert_eq!(orders["events"], 3);
        assert_eq!(orders["lastEvent"]["partition"], "2024-03-02");
        let history = api
            .get("/api/v1/datasets/ods.orders/events?partition=2024-03-01")
            .await
            .expect(200);
        assert_eq!(history["total"], 2, "{history}");
        assert_eq!(history["items"][0]["source"], "TASK");
        api.get("/api/v1/datasets/no.such").await.expect_error(
            404,
            "NOT_FOUND",
            "no dataset 'no.such'",
        );
    }
);

both_dbs!(
    rerun_any_and_unpartitioned_datasets_follow_their_rules,
    |env| async move {
        env.apply(
            r#"
name: daily
schedules:
  - on: { all: [ref.rates, ods.sales] }
tasks:
  - { name: t, command: 'true' }
"#,
        )
        .await;
        env.apply(
            r#"
name: restated
schedules:
  - on: { any: [ods.sales, ods.returns] }
    on_update: rerun
tasks:
  - { name: t, command: 'true' }
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let api = Api::start(&env, None).await;
        let announce = |dataset: &'static str, partition: Option<&'static str>| {
            let api = &api;
            async move {
                api.post(
                    &format!("/api/v1/datasets/{dataset}/events"),
                    json!({ "partition": partition }),
                )
                .await
                .expect(201)
            }
        };

        // A partition of sales, then the unpartitioned rates: `daily` runs
        // for the partition's date; `restated` ran on the sales alone.
        announce("ods.sales", Some("2024-05-01")).await;
        let started = announce("ref.rates", None).await;
        assert_eq!(started["starts"], json!(["daily"]), "{started}");
        let daily = wait_data_runs(&env, "daily", 1).await;
        assert_eq!(daily[0].biz_date, date("2024-05-01"));

        // The rates were consumed: the next partition waits for new ones.
        announce("ods.sales", Some("2024-05-02")).await;
        settle().await;
        assert_eq!(data_runs(&env, "daily").await.len(), 1, "rates reused");
        announce("ref.rates", None).await;
        let daily = wait_data_runs(&env, "daily", 2).await;
        assert_eq!(daily[1].biz_date, date("2024-05-02"));

        // `any` with `rerun`: each event of either dataset is a run, a
        // restated partition included, dated by its partition.
        announce("ods.returns", Some("20240503")).await;
        announce("ods.sales", Some("2024-05-01")).await;
        let restated = wait_data_runs(&env, "restated", 4).await;
        let dates: Vec<NaiveDate> = restated.iter().map(|run| run.biz_date).collect();
        assert_eq!(
            dates,
            vec![
                date("2024-05-01"),
                date("2024-05-02"),
                date("2024-05-03"),
                date("2024-05-01")
            ]
        );
        assert_eq!(
            dataset_event::Entity::find()
                .count(&env.db)
                .await
                .expect("count"),
            6
        );

        // A condition that cannot be met is refused when applied.
        let refused = env
            .try_apply("name: bad\nschedules: [{ on: { all: [] } }]\ntasks: [{ name: t, command: 'true' }]\n")
            .await
            .expect_err("an empty condition");
        assert!(refused.contains("needs at least one dataset"), "{refused}");
        let refused = env
            .try_apply("name: bad\nschedules: [{ cron: '0 0 * * * ?', on_update: rerun }]\ntasks: [{ name: t, command: 'true', outputs: [Bad.Name] }]\n")
            .await
            .expect_err("bad outputs");
        assert!(
            refused.contains("on_update is for data schedules"),
            "{refused}"
        );
        assert!(
            refused.contains("invalid dataset name 'Bad.Name'"),
            "{refused}"
        );
    }
);

both_dbs!(
    partitions_written_at_the_same_moment_start_one_run_each,
    |env| async move {
        // Two tasks of one run write the two datasets a condition needs and
        // end together, recorded by two runners in their own transactions:
        // whichever commits second sees both, and the condition fires once.
        env.apply(
            r#"
name: upstream
tasks:
  - { name: a, command: 'sleep 0.3', outputs: ['ds.a/${bizdate}'] }
  - { name: b, command: 'sleep 0.3', outputs: ['ds.b/${bizdate}'] }
"#,
        )
        .await;
        env.apply(
            "name: downstream\nschedules: [{ on: { all: [ds.a, ds.b] } }]\ntasks: [{ name: t, command: 'true' }]\n",
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _first = env.spawn_runner("r1", &["default"], 1).await;
        let _second = env.spawn_runner("r2", &["default"], 1).await;
        let days = [
            "2024-06-01",
            "2024-06-02",
            "2024-06-03",
            "2024-06-04",
            "2024-06-05",
        ];
        let mut keys = Vec::new();
        for day in days {
            keys.push(env.trigger_for("upstream", day).await);
        }
        for key in &keys {
            assert_eq!(env.wait_run(key, TIMEOUT).await.status, RunStatus::Success);
        }
        let runs = wait_data_runs(&env, "downstream", days.len()).await;
        let mut dates: Vec<NaiveDate> = runs.iter().map(|run| run.biz_date).collect();
        dates.sort();
        assert_eq!(dates, days.map(date).to_vec());
        settle().await;
        assert_eq!(data_runs(&env, "downstream").await.len(), days.len());
    }
);
