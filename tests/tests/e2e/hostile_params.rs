//! A trigger (or a fire published straight onto NATS) carries a hostile
//! parameter into a DAG written the naive way: `${p}` bare in a DELETE and
//! pasted into a shell command. The API refuses the trigger with the form
//! to write instead; the runner refuses the same values when they arrive
//! some other way, before anything runs; and the DAG written with
//! `${p:literal}` and `${p:shell}` runs the same value harmlessly.

use datajump_shared::dag_file::DEFAULT_PROJECT;
use std::collections::BTreeMap;
use std::time::Duration;

use datajump_shared::datasources::NewDatasource;
use datajump_shared::kinds::DatasourceKind;
use datajump_shared::{RunStatus, TaskStatus};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::json;

use crate::api::{Api, id_of};

const TIMEOUT: Duration = Duration::from_secs(60);
const ATTACK: &str = "id--";

both_dbs!(
    a_hostile_trigger_param_becomes_neither_sql_nor_shell,
    |env| async move {
        // The data the DAG deletes from: two rows with v = 'x'.
        let data_path = env.path("warehouse.db");
        let data =
            datajump_store::db::connect(&format!("sqlite://{}?mode=rwc", data_path.display()))
                .await
                .expect("warehouse database");
        for sql in [
            "create table t (id text, v text)",
            "insert into t values ('1', 'x'), ('2', 'x')",
        ] {
            data.execute_raw(Statement::from_string(data.get_database_backend(), sql))
                .await
                .expect("set up the warehouse");
        }
        let rows = || async {
            data.query_one_raw(Statement::from_string(
                data.get_database_backend(),
                "select count(*) as n from t",
            ))
            .await
            .expect("count")
            .and_then(|row| row.try_get::<i64>("", "n").ok())
            .expect("a count")
        };
        datajump_store::datasources::add(
            &env.db,
            DEFAULT_PROJECT,
            NewDatasource {
                name: "warehouse".to_owned(),
                kind: DatasourceKind::Sqlite,
                host: data_path.display().to_string(),
                port: None,
                database: None,
                username: None,
                password: None,
                params: BTreeMap::new(),
            },
        )
        .await
        .expect("datasource");
        let marker = env.path("shell-injection-ran");
        env.apply(&format!(
            r#"
name: naive_cleanup
params: {{ p: "0" }}
tasks:
  - name: purge
    type: SQL
    retry: {{ max: 2 }}
    datasource: warehouse
    sql: delete from t where id = ${{p}} and v = 'x'
  - name: announce
    retry: {{ max: 2 }}
    command: echo deleting ${{p}}; touch {marker}
"#,
            marker = marker.display()
        ))
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let api = Api::start(&env, None).await;

        // Through the API: a 400 naming each task and the form to write.
        let dag_id = id_of(
            &api.get("/api/v1/dags/by-name/naive_cleanup")
                .await
                .expect(200),
        );
        let refused = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "params": { "p": ATTACK } }),
            )
            .await;
        assert_eq!(refused.status, 400, "{}", refused.text);
        let details = refused.body["details"].to_string();
        assert!(
            details.contains("task purge") && details.contains("${p:literal}"),
            "{details}"
        );
        assert!(
            details.contains("task announce") && details.contains("$DJ_PARAM_P"),
            "{details}"
        );

        // Straight onto NATS, past the API: the runner refuses before running,
        // without retries, and says what to write.
        let mut fire = env.manual_fire("naive_cleanup").await;
        fire.params.insert("p".to_owned(), ATTACK.to_owned());
        env.bus.publish_fire(&fire).await.expect("publish fire");
        let run = env.wait_run(&fire.dedup_key, TIMEOUT).await;
        assert_eq!(run.status, RunStatus::Failed);
        let instances = env.instances_by_name(run.id).await;
        let executions = env.executions_by_name(run.id).await;
        for task in ["purge", "announce"] {
            assert_eq!(instances[task].status, TaskStatus::Failed, "{task}");
            assert_eq!(
                executions[task].len(),
                1,
                "{task}: an invalid attempt is not retried"
            );
            let reason = instances[task].reason.clone().unwrap_or_default();
            assert!(
                reason.contains("comes from a trigger or an event"),
                "{task}: {reason}"
            );
        }
        assert_eq!(rows().await, 2, "the hostile DELETE ran");
        assert!(!marker.exists(), "the hostile shell text ran");

        // Written with the quoting forms, the same value is only data.
        env.apply(
            r#"
name: careful_cleanup
tasks:
  - name: purge
    type: SQL
    datasource: warehouse
    sql: delete from t where id = ${p:literal} and v = 'x'
  - name: announce
    command: echo "deleting ${p:shell} ($DJ_PARAM_P)"
"#,
        )
        .await;
        let dag_id = id_of(
            &api.get("/api/v1/dags/by-name/careful_cleanup")
                .await
                .expect(200),
        );
        let run = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "params": { "p": ATTACK } }),
            )
            .await
            .expect(202);
        let finished = api
            .wait_run(run["statusUrl"].as_str().expect("statusUrl"))
            .await;
        assert_eq!(finished["status"], "SUCCESS", "{finished}");
        assert_eq!(rows().await, 2, "no row has the id 'id--'");
        // Quoted, a real id still matches.
        let run = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "params": { "p": "1" } }),
            )
            .await
            .expect(202);
        api.wait_run(run["statusUrl"].as_str().expect("statusUrl"))
            .await;
        assert_eq!(rows().await, 1, "the quoted id '1' was deleted");
        env.check_roles();
    }
);
