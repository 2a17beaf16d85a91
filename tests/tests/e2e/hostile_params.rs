//! A trigger (or a fire published straight onto NATS) carries a hostile
//! parameter into a DAG written the naive way: `${p}` bare in a DELETE and
//! pasted into a shell command. The API refuses the trigger with the form
//! to write instead; the runner refuses the same values when they arrive
//! some other way, before anything runs; and the DAG written with
//! `${p:literal}` and `${p:shell}` runs the same value harmlessly.
//!
//! A quoting form inside an open string is no quoting at all: the quotes it
//! writes close the string around it (#38). Such a DAG is refused at apply,
//! and one stored before that rule is refused at the trigger and, arriving
//! on NATS, by the runner, before anything runs.

use datajump_shared::dag_file::{DEFAULT_PROJECT, DagFile};
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
    command: echo "deleting "${p:shell}" ($DJ_PARAM_P)"
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

/// The DAG of the quoting attack: each task places a quoting form inside a
/// string of its language, and each attack value closes that string to run
/// `touch` on the marker.
fn quoted_forms_dag(name: &str) -> String {
    format!(
        r###"
name: {name}
params: {{ p: "0" }}
tasks:
  - name: up
    retry: {{ max: 2 }}
    command: echo "##dj-output v=$DJ_PARAM_P"
  - name: sh
    retry: {{ max: 2 }}
    command: echo "value=[${{p:shell}}]"
  - name: py
    type: PYTHON
    retry: {{ max: 2 }}
    script: print('v=${{p:python}}')
  - name: out
    retry: {{ max: 2 }}
    depends_on: [up]
    command: echo "got ${{up.output.v:shell}}"
"###
    )
}

both_dbs!(
    a_quoting_form_inside_a_string_is_refused_at_apply_and_at_run,
    |env| async move {
        let marker = env.path("quoted-injection-ran");
        let marker_text = marker.display().to_string();
        let shell_attack = format!("x\"; touch {marker_text}; echo \"");
        let python_attack = format!("'); open('{marker_text}', 'w'); print('");
        let api = Api::start(&env, None).await;

        // `dag apply`: refused, each task named with the form, where it
        // stands and what to write instead.
        let refused = env
            .try_apply(&quoted_forms_dag("quoted"))
            .await
            .expect_err("a quoting form inside a string applies");
        for needle in [
            "task 'sh': ${p:shell} stands inside a double-quoted string",
            "\"value=[\"${p:shell}\"]\"",
            "task 'py': ${p:python} stands inside a string literal",
            "'v=' + ${p:python}",
            "task 'out': ${up.output.v:shell} stands inside a double-quoted string",
            "$DJ_PARAM_UP_OUTPUT_V",
        ] {
            assert!(
                refused.contains(needle),
                "{needle:?} missing from: {refused}"
            );
        }
        assert!(!refused.contains("task 'up'"), "{refused}");

        // The API's create and update go through the same rule.
        let created = api
            .post(
                "/api/v1/dags",
                json!({
                    "name": "quoted",
                    "tasks": [{ "name": "sh", "command": "echo \"value=[${p:shell}]\"" }],
                }),
            )
            .await;
        assert_eq!(created.status, 400, "{}", created.text);
        assert!(
            created
                .text
                .contains("${p:shell} stands inside a double-quoted string"),
            "{}",
            created.text
        );
        env.apply("name: quoted\ntasks:\n  - { name: sh, command: 'true' }\n")
            .await;
        let dag_id = id_of(&api.get("/api/v1/dags/by-name/quoted").await.expect(200));
        let updated = api
            .put(
                &format!("/api/v1/dags/{dag_id}"),
                json!({ "tasks": [{ "name": "sh", "command": "echo 'v=${p:shell}'" }] }),
            )
            .await;
        assert_eq!(updated.status, 400, "{}", updated.text);
        assert!(
            updated
                .text
                .contains("${p:shell} stands inside a single-quoted string"),
            "{}",
            updated.text
        );

        // A DAG stored before the rule (written past `DagFile::parse`).
        let stored: DagFile =
            serde_yaml_ng::from_str(&quoted_forms_dag("stored_before")).expect("YAML");
        datajump_store::catalog::apply(
            &env.db,
            &stored,
            crate::harness::TIMEZONE,
            datajump_store::catalog::Origin::Edit,
        )
        .await
        .expect("stored without the check");
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let dag_id = id_of(
            &api.get("/api/v1/dags/by-name/stored_before")
                .await
                .expect(200),
        );
        // A trigger is answered 400 before a run exists.
        let refused = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "params": { "p": shell_attack } }),
            )
            .await;
        assert_eq!(refused.status, 400, "{}", refused.text);
        let details = refused.body["details"].to_string();
        assert!(
            details.contains("task sh: ${p:shell} stands inside a double-quoted string"),
            "{details}"
        );
        assert!(
            !details.contains(&marker_text),
            "the value stays out: {details}"
        );

        // Straight onto NATS: the runner refuses each task before it runs,
        // without retries, and never shows the value.
        for attack in [&shell_attack, &python_attack] {
            let mut fire = env.manual_fire("stored_before").await;
            fire.params.insert("p".to_owned(), attack.clone());
            env.bus.publish_fire(&fire).await.expect("publish fire");
            let run = env.wait_run(&fire.dedup_key, TIMEOUT).await;
            assert_eq!(run.status, RunStatus::Failed);
            let instances = env.instances_by_name(run.id).await;
            let executions = env.executions_by_name(run.id).await;
            assert_eq!(instances["up"].status, TaskStatus::Success);
            for (task, form) in [
                ("sh", "${p:shell}"),
                ("py", "${p:python}"),
                ("out", "${up.output.v:shell}"),
            ] {
                assert_eq!(instances[task].status, TaskStatus::Failed, "{task}");
                assert_eq!(
                    executions[task].len(),
                    1,
                    "{task}: a refused attempt is not retried"
                );
                let reason = instances[task].reason.clone().unwrap_or_default();
                assert!(
                    reason.contains(&format!("{form} stands inside")),
                    "{task}: {reason}"
                );
                assert!(!reason.contains(&marker_text), "{task}: {reason}");
            }
        }
        assert!(!marker.exists(), "the value closed the string and ran");
        env.check_roles();
    }
);

both_dbs!(
    a_trigger_param_that_would_begin_a_spark_argument_with_a_dash_is_refused,
    |env| async move {
        // In the place of the jar, `--conf=…` is an option of spark-submit's
        // (#38): the API answers 400 before a run exists.
        env.apply(
            r#"
name: submit
params: { jar: /jobs/etl.jar }
tasks:
  - name: etl
    type: SPARK
    content: { jar: "${jar}", app_args: ["--day=${day}"] }
"#,
        )
        .await;
        let api = Api::start(&env, None).await;
        let dag_id = id_of(&api.get("/api/v1/dags/by-name/submit").await.expect(200));
        let refused = api
            .post(
                &format!("/api/v1/dags/{dag_id}/trigger"),
                json!({ "params": { "jar": "--conf=spark.jars=/tmp/evil.jar", "day": "1" } }),
            )
            .await;
        assert_eq!(refused.status, 400, "{}", refused.text);
        let details = refused.body["details"].to_string();
        assert!(
            details.contains("task etl: 'jar': parameter ${jar}")
                && details.contains("would begin a command-line argument with '-'"),
            "{details}"
        );
        assert!(!details.contains("evil"), "the value stays out: {details}");
        // After the DAG's own `--day=`, a leading '-' is a value.
        api.post(
            &format!("/api/v1/dags/{dag_id}/trigger"),
            json!({ "params": { "jar": "/jobs/other.jar", "day": "-1" } }),
        )
        .await
        .expect(202);
    }
);
