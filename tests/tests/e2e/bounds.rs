//! Values past what the database stores (docs/SECURITY.md, "Sizes and
//! dates"): a business date chrono reads but PostgreSQL cannot store, names,
//! an owner and a cron expression longer than their columns, a NUL in a
//! path. The API refuses each with a 400 naming the field and the bound,
//! and changes nothing; on PostgreSQL each was a 500, or a 202 whose fire
//! the resolver retried every second for ever. A fire published straight
//! onto NATS that the database refuses ends, logged as poison, instead of
//! coming back.

use std::time::Duration;

use chrono::NaiveDate;
use datajump_shared::subjects::{self, Priority};
use sea_orm::DbBackend;
use serde_json::json;

use crate::api::{Api, id_of};

const TIMEOUT: Duration = Duration::from_secs(30);

/// `0 0,1,…,59 * * * ?`: a valid cron expression of 179 characters.
fn long_cron() -> String {
    let minutes: Vec<String> = (0..60).map(|m| m.to_string()).collect();
    format!("0 {} * * * ?", minutes.join(","))
}

both_dbs!(
    a_business_date_past_the_stored_range_is_refused,
    |env| async move {
        let _resolver = env.spawn_resolver().await;
        let api = Api::start(&env, None).await;
        let dag_id = bounded_dag(&api).await;

        // A business date chrono reads and PostgreSQL cannot store: 400, no run.
        for date in ["-262143-01-01", "0000-12-31", "+10000-01-01"] {
            api.post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "bizDate": date }),
            )
            .await
            .expect_error(400, "BAD_REQUEST", "invalid field `bizDate`: ");
        }
        let refused = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "bizDate": "-262143-01-01" }),
            )
            .await
            .expect(400);
        assert!(
            refused["message"]
                .as_str()
                .is_some_and(|m| m.contains("0001-01-01 to 9999-12-31")),
            "{refused}"
        );
        api.post(
            &format!("/api/v1/dags/{dag_id}/backfill"),
            json!({ "from": "-262143-01-01", "to": "-262143-01-03" }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "invalid field `from`: ");
        api.get(&format!(
            "/api/v1/dags/{dag_id}/executions?bizDate=-262143-01-01"
        ))
        .await
        .expect_error(400, "BAD_REQUEST", "0001-01-01 to 9999-12-31");
        // The last storable date is a date like any other.
        let last = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "bizDate": "9999-12-31" }),
            )
            .await
            .expect(202);
        let run = env
            .wait_run_created(last["runKey"].as_str().expect("runKey"), TIMEOUT)
            .await;
        assert_eq!(run.biz_date, NaiveDate::from_ymd_opt(9999, 12, 31).unwrap());
        assert_eq!(env.runs_of(dag_id).await.len(), 1, "only the last date ran");
    }
);

/// A DAG named `bounded` with one task, created through `api`; its id.
async fn bounded_dag(api: &Api) -> i64 {
    let dag = api
        .post(
            "/api/v1/dags",
            json!({ "name": "bounded", "tasks": [{ "name": "a", "command": "true" }] }),
        )
        .await
        .expect(201);
    id_of(&dag)
}

both_dbs!(
    names_owners_and_crons_past_their_columns_are_refused,
    |env| async move {
        let api = Api::start(&env, None).await;
        let dag_id = bounded_dag(&api).await;

        // An owner, a schedule name, an event name and a cron expression
        // past their columns: 400 naming the bound, nothing stored.
        api.post(
            "/api/v1/dags",
            json!({ "name": "owned", "owner": "o".repeat(65), "tasks": [] }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "`owner` is 65 characters; at most 64");
        api.get("/api/v1/dags/by-name/owned").await.expect(404);
        // 64 characters of two bytes each fit (the column counts characters).
        api.post(
            "/api/v1/dags",
            json!({ "name": "夜".repeat(128), "owner": "ö".repeat(64), "tasks": [] }),
        )
        .await
        .expect(201);
        api.post(
            "/api/v1/dags",
            json!({ "name": "夜".repeat(129), "tasks": [] }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "must be 1-128 characters (not bytes)");
        api.put(
            &format!("/api/v1/dags/{dag_id}"),
            json!({ "owner": "o".repeat(65) }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "at most 64");

        let schedules = format!("/api/v1/dags/{dag_id}/schedules");
        api.post(
            &schedules,
            json!({ "name": "s".repeat(129), "cronExpression": "0 0 2 * * ?" }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "name must be 1-128 characters");
        let event = vec!["e".repeat(64); 4].join(".");
        api.post(&schedules, json!({ "name": "ev", "eventName": event }))
            .await
            .expect_error(400, "BAD_REQUEST", "at most 255 characters in all");
        let cron = long_cron();
        assert!(cron.len() > 128);
        api.post(&schedules, json!({ "name": "c", "cronExpression": cron }))
            .await
            .expect_error(
                400,
                "BAD_REQUEST",
                &format!(
                    "`cronExpression` is {} characters; at most 128 are stored",
                    cron.len()
                ),
            );
        api.put(
            &format!("/api/v1/dags/{dag_id}/schedule"),
            json!({ "cronExpression": long_cron() }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "at most 128 are stored");
        api.post(
            &schedules,
            json!({ "name": "dated", "cronExpression": "0 0 2 * * ?", "endDate": "-262143-01-01" }),
        )
        .await
        .expect_error(400, "BAD_REQUEST", "invalid field `endDate`: ");
        let after = api.get(&schedules).await.expect(200);
        assert_eq!(after["total"], 0, "nothing stored: {after}");
        let version = api.get(&format!("/api/v1/dags/{dag_id}")).await.expect(200);
        assert_eq!(version["version"], 1, "the DAG is unchanged: {version}");
    }
);

both_dbs!(a_nul_in_a_path_is_refused, |env| async move {
    let api = Api::start(&env, None).await;
    let dag_id = bounded_dag(&api).await;

    // A NUL in a path parameter: 400 before any route reads it.
    for path in [
        "/api/v1/dags/by-name/a%00b".to_owned(),
        "/api/v1/dags/instances/by-key/manual:%00".to_owned(),
        "/api/v1/datasets/dw.orders%00".to_owned(),
        "/api/v1/tokens/t%00".to_owned(),
        format!("/api/v1/dags/{dag_id}%00"),
    ] {
        api.get(&path)
            .await
            .expect_error(400, "BAD_REQUEST", "NUL character (%00)");
    }
    api.delete("/api/v1/tokens/t%00")
        .await
        .expect_error(400, "BAD_REQUEST", "NUL character (%00)");
});

both_dbs!(
    a_fire_the_database_refuses_ends_instead_of_coming_back,
    |env| async move {
        env.apply("name: direct\ntasks:\n  - { name: a, command: 'true' }\n")
            .await;
        let _resolver = env.spawn_resolver().await;

        // Published straight onto NATS, as a forger or an old build would:
        // a date PostgreSQL cannot store, which no longer decodes.
        let mut far = env.manual_fire("direct").await;
        far.biz_date = NaiveDate::from_ymd_opt(-262_143, 1, 1).unwrap();
        env.bus.publish_fire(&far).await.expect("publish");
        // A run key longer than its column (varchar(128)): PostgreSQL
        // refuses the insert with a data error; SQLite stores it.
        let mut long_key = env.manual_fire("direct").await;
        long_key.dedup_key = format!("manual:{}", "k".repeat(200));
        env.bus.publish_fire(&long_key).await.expect("publish");
        // A fire after them is not held back.
        let good = env.trigger("direct").await;
        env.wait_run_created(&good, TIMEOUT).await;

        // Each ended: nothing is left to deliver again.
        env.wait_fires_idle(TIMEOUT).await;
        let info = env
            .consumer_info(
                "DJ_FIRE",
                &subjects::resolver_fire_consumer(Priority::DEFAULT),
            )
            .await;
        assert_eq!(info.num_ack_pending, 0, "{info:?}");
        assert!(env.run_by_key(&far.dedup_key).await.is_none());
        let long_run = env.run_by_key(&long_key.dedup_key).await;
        match env.db.get_database_backend() {
            DbBackend::Postgres => assert!(long_run.is_none()),
            _ => assert!(long_run.is_some(), "SQLite keeps any length"),
        }
        // Still idle a few redelivery intervals later: not retried.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let info = env
            .consumer_info(
                "DJ_FIRE",
                &subjects::resolver_fire_consumer(Priority::DEFAULT),
            )
            .await;
        assert_eq!(
            (info.num_pending, info.num_ack_pending, info.num_redelivered),
            (0, 0, 0),
            "{info:?}"
        );
        env.check_roles();
    }
);
