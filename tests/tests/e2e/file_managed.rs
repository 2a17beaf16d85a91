//! A DAG applied from a file is the file's: what an operator does to its
//! operational state (offline, a schedule paused) survives `datajump up`
//! restarting and re-applying the unchanged file, a changed `online:` or
//! `active:` line of the file still applies, and an edit of its definition
//! through the API is refused with 409 naming the file (docs/DAG_FORMAT.md
//! "File-managed DAGs"). A DAG made through the API stays editable there.

use datajump_shared::dag_file::DagFile;
use datajump_shared::entities::{dag, schedule};
use datajump_store::catalog::{self, ApplyReport, Origin};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use crate::api::{Api, id_of};
use crate::harness::TestEnv;

const PATH: &str = "/srv/dags/nightly.yaml";

/// The DAG file, with `extra` lines added at the top level and `active` as
/// the schedule's own line (if any).
fn nightly(extra: &str, active: Option<bool>) -> String {
    let active = active.map_or(String::new(), |a| format!(", active: {a}"));
    format!(
        "name: nightly\n{extra}schedules:\n  - {{ name: hourly, cron: '0 0 * * * ?'{active} }}\ntasks:\n  - {{ name: load, command: 'true' }}\n"
    )
}

/// What `datajump up` does with a file of its DAGs folder at start.
async fn apply_file(env: &TestEnv, yaml: &str) -> ApplyReport {
    let file = DagFile::parse(yaml).expect("a valid DAG file");
    catalog::apply(&env.db, &file, "Asia/Shanghai", Origin::File(PATH))
        .await
        .expect("apply the file")
}

/// (the DAG's `online`, its schedule's `active`) as stored.
async fn state(env: &TestEnv) -> (bool, bool) {
    let dag = dag::Entity::find()
        .filter(dag::Column::Name.eq("nightly"))
        .one(&env.db)
        .await
        .expect("query")
        .expect("the DAG");
    let schedule = schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag.id))
        .one(&env.db)
        .await
        .expect("query")
        .expect("the schedule");
    (dag.online, schedule.active)
}

both_dbs!(
    operators_keep_what_they_did_across_restarts,
    |env| async move {
        let api = Api::start(&env, None).await;
        assert!(apply_file(&env, &nightly("", None)).await.created);
        let dag = api.get("/api/v1/dags/by-name/nightly").await.expect(200);
        assert_eq!(dag["sourceFile"], PATH, "{dag}");
        let dag_id = id_of(&dag);
        let schedules = api
            .get(&format!("/api/v1/dags/{dag_id}/schedules"))
            .await
            .expect(200);
        let schedule_id = schedules["items"][0]["scheduleId"]
            .as_i64()
            .expect("schedule id");

        // The operator takes the DAG offline and pauses its schedule.
        api.post_empty(&format!("/api/v1/dags/{dag_id}/offline"))
            .await
            .expect(200);
        api.post_empty(&format!(
            "/api/v1/dags/{dag_id}/schedules/{schedule_id}/disable"
        ))
        .await
        .expect(200);
        assert_eq!(state(&env).await, (false, false));

        // `up` restarts and applies the unchanged file: nothing moves.
        let again = apply_file(&env, &nightly("", None)).await;
        assert!(again.is_unchanged(), "{again}");
        assert_eq!(
            state(&env).await,
            (false, false),
            "the operator's state survives"
        );

        // Definition edits anywhere but the file are refused, naming it.
        api.put(
            &format!("/api/v1/dags/{dag_id}"),
            json!({ "description": "changed by hand" }),
        )
        .await
        .expect_error(409, "CONFLICT", PATH);
        api.post(
            &format!("/api/v1/dags/{dag_id}/schedules"),
            json!({ "name": "extra", "cronExpression": "0 0 3 * * ?" }),
        )
        .await
        .expect_error(409, "CONFLICT", "managed by the file");
        api.put(
            &format!("/api/v1/dags/{dag_id}/schedules/{schedule_id}"),
            json!({ "cronExpression": "0 30 * * * ?" }),
        )
        .await
        .expect_error(409, "CONFLICT", "managed by the file");
        assert_eq!(
            api.get(&format!("/api/v1/dags/{dag_id}")).await.expect(200)["description"],
            "",
            "a refused edit changes nothing"
        );

        // The file's own lines still apply when they change...
        apply_file(&env, &nightly("online: true\n", Some(false))).await;
        assert_eq!(
            state(&env).await,
            (false, false),
            "`online: true` is what the file always said; `active: false` is what the operator chose"
        );
        apply_file(&env, &nightly("online: false\n", Some(true))).await;
        assert_eq!(
            state(&env).await,
            (false, true),
            "the file's `active` line changed to true"
        );
        // ...and the operator's choice wins again until they change once more.
        api.post_empty(&format!("/api/v1/dags/{dag_id}/online"))
            .await
            .expect(200);
        apply_file(&env, &nightly("online: false\n", Some(true))).await;
        assert_eq!(
            state(&env).await,
            (true, true),
            "unchanged file, operator's online"
        );
        apply_file(&env, &nightly("online: true\n", Some(true))).await;
        apply_file(&env, &nightly("online: false\n", Some(true))).await;
        assert_eq!(
            state(&env).await,
            (false, true),
            "the file's line changed to false"
        );

        // A DAG made through the API stays the API's to edit.
        let made = api
            .post(
                "/api/v1/dags",
                json!({ "name": "by_hand", "tasks": [{ "name": "a", "command": "true" }] }),
            )
            .await
            .expect(201);
        assert!(made["sourceFile"].is_null(), "{made}");
        api.put(
            &format!("/api/v1/dags/{}", id_of(&made)),
            json!({ "description": "edited" }),
        )
        .await
        .expect(200);
    }
);
