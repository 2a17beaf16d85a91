//! Projects as a boundary, tried as the lead of one project would try to
//! step out of it: `datajump project create`, a token limited to the
//! project, and then every way across — another project's DAGs, runs and
//! logs by id, by name and by run key; creating or moving a DAG into
//! another project; a token wider than its own; what covers every project
//! (the audit log, metrics); events, which start DAGs of their own project
//! only; and a task of the project naming
//! another project's secret or datasource. Each is refused and changes
//! nothing, while the project's own work runs.

use reqwest::Method;
use serde_json::json;

use datajump_shared::RunStatus;
use datajump_shared::entities::{api_token, dag_run};
use sea_orm::{EntityTrait, PaginatorTrait};

use crate::api::{Api, TIMEOUT};
use crate::harness::http_receiver;
use crate::tokens::{call, datajump};

/// `datajump token create NAME --role ROLE [--project P]`'s token.
async fn token(env: &crate::harness::TestEnv, api: &Api, args: &[&str]) -> String {
    let mut all = vec!["token", "create"];
    all.extend_from_slice(args);
    let (ok, stdout, stderr) = datajump(env, api.base(), None, &all).await;
    assert!(ok, "token create {args:?}: {stderr}");
    stdout.trim().to_owned()
}

both_dbs!(
    events_start_dags_of_their_own_project_only,
    |env| async move {
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let api = Api::start(&env, None).await;
        let (ok, _, stderr) = datajump(&env, api.base(), None, &["project", "create", "b"]).await;
        assert!(ok, "{stderr}");
        // Project 2 binds a DAG to project 1's event name, hoping to receive
        // its payloads as parameters.
        env.apply(
        "name: a_orders\nschedules: [{ event: a.orders.ready }]\ntasks:\n  - { name: t, command: 'true' }\n",
    )
    .await;
        env.apply(
        "name: b_listens\nproject: 2\nschedules: [{ event: a.orders.ready }]\ntasks:\n  - { name: t, command: 'true' }\n",
    )
    .await;
        let (a_dag, b_dag) = (env.dag_id("a_orders").await, env.dag_id("b_listens").await);

        let published = api
            .post(
                "/api/v1/events/a.orders.ready",
                json!({ "customer_table": "a_private" }),
            )
            .await
            .expect(202);
        assert_eq!(published["project"], 1, "{published}");
        assert_eq!(published["subject"], "dj.event.1.a.orders.ready");
        assert_eq!(published["starts"], json!(["a_orders"]), "{published}");
        // A producer's publish on NATS: the short form is the default
        // project's, the long form names the project.
        env.nats
            .publish(
                "dj.event.a.orders.ready",
                r#"{"customer_table":"a_private"}"#.into(),
            )
            .await
            .expect("publish");
        env.nats
            .publish("dj.event.2.a.orders.ready", r#"{"note":"b_own"}"#.into())
            .await
            .expect("publish");
        env.nats.flush().await.expect("flush");
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while env.runs_of(a_dag).await.len() < 2 || env.runs_of(b_dag).await.is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the events started no runs"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        // The resolver handles events in order: project 1's two were settled
        // before project 2's started its run.
        let b_runs = env.runs_of(b_dag).await;
        assert_eq!(b_runs.len(), 1, "project 2 ran for project 1's event");
        assert_eq!(b_runs[0].params["note"], "b_own", "{:?}", b_runs[0].params);
        assert!(b_runs[0].params.get("customer_table").is_none());

        // A token limited to project 2 publishes its own project's events and
        // no other's.
        let lead = token(
            &env,
            &api,
            &["lead", "--role", "operator", "--project", "b"],
        )
        .await;
        let (status, body) = call(
            &api,
            Some(&lead),
            Method::POST,
            "/api/v1/events/a.orders.ready?project=1",
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 403, "{body}");
        let (status, body) = call(
            &api,
            Some(&lead),
            Method::POST,
            "/api/v1/events/a.orders.ready",
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 202, "{body}");
        assert_eq!(body["subject"], "dj.event.2.a.orders.ready", "{body}");
        assert_eq!(body["starts"], json!(["b_listens"]), "{body}");
        let (status, body) = call(
            &api,
            Some(&lead),
            Method::POST,
            "/api/v1/events/2024.orders",
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 400, "a name that would read as a project: {body}");
        assert_eq!(
            env.runs_of(a_dag).await.len(),
            2,
            "project 1 ran for project 2's event"
        );
    }
);

both_dbs!(a_project_token_stays_in_its_project, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let api = Api::start(&env, None).await;
    let (port, seen) = http_receiver(0);

    // The installation's operator sets up a second project with its own
    // secret; the default project has one of its own and a datasource.
    let (ok, stdout, stderr) = datajump(
        &env,
        api.base(),
        None,
        &["project", "create", "analytics", "--description", "reports"],
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(stdout.contains("created with id 2"), "{stdout}");
    let (ok, stdout, _) = datajump(&env, api.base(), None, &["project", "list"]).await;
    assert!(
        ok && stdout.contains("default") && stdout.contains("analytics"),
        "{stdout}"
    );
    for (name, project, value) in [
        ("platform_key", "default", "PLATFORM-SECRET-1"),
        ("analytics_key", "analytics", "ANALYTICS-SECRET-2"),
    ] {
        let (ok, _, stderr) = crate::harness::process::run_cli(
            &env,
            &[
                "secret",
                "set",
                name,
                "--project",
                project,
                "--value-env",
                "VALUE",
            ],
            &[("VALUE", value)],
        )
        .await;
        assert!(ok, "secret set {name}: {stderr}");
    }
    let warehouse = env.path("warehouse.db");
    std::fs::write(&warehouse, b"").expect("an empty SQLite file");
    let (ok, _, stderr) = datajump(
        &env,
        api.base(),
        None,
        &[
            "datasource",
            "add",
            "warehouse",
            "--kind",
            "sqlite",
            "--host",
            &warehouse.display().to_string(),
        ],
    )
    .await;
    assert!(ok, "{stderr}");

    env.apply("name: platform_nightly\ntasks:\n  - { name: t, command: 'echo platform' }\n")
        .await;
    let platform_dag = env.dag_id("platform_nightly").await;
    let platform_run = env
        .run_to_end("platform_nightly", RunStatus::Success, TIMEOUT)
        .await;
    let platform_instance = env.instances(platform_run.id).await[0].id;
    let unknown = env
        .try_apply("name: orphan\nproject: 7\ntasks:\n  - { name: t, command: 'true' }\n")
        .await
        .expect_err("a DAG of a project that does not exist is refused");
    assert!(unknown.contains("no project with id 7"), "{unknown}");

    let root = token(&env, &api, &["root", "--role", "admin"]).await;
    let lead = token(
        &env,
        &api,
        &["lead", "--role", "admin", "--project", "analytics"],
    )
    .await;
    let (_, session) = call(&api, Some(&lead), Method::GET, "/api/v1/session", None).await;
    assert_eq!(session["projectId"], 2, "{session}");

    // The lead's own work: a DAG created without naming a project lands
    // in the lead's, and its task uses the project's secret.
    let (status, created) = call(
        &api,
        Some(&lead),
        Method::POST,
        "/api/v1/dags",
        Some(json!({
            "name": "reports",
            "tasks": [{
                "name": "publish",
                "type": "HTTP",
                "content": {
                    "url": format!("http://127.0.0.1:{port}/reports"),
                    "headers": { "Authorization": "Bearer ${secret:analytics_key}" },
                },
            }],
        })),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["projectId"], 2, "{created}");
    let (status, triggered) = call(
        &api,
        Some(&lead),
        Method::POST,
        &format!("/api/v1/dags/{}/trigger", created["id"]),
        None,
    )
    .await;
    assert_eq!(status, 202, "{triggered}");
    let key = triggered["runKey"].as_str().expect("runKey").to_owned();
    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    assert_eq!(
        triggered["instanceId"], run.id,
        "the trigger answers the run's id once the resolver made it"
    );
    let (status, by_key) = call(
        &api,
        Some(&lead),
        Method::GET,
        &format!("/api/v1/dags/instances/by-key/{key}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "the lead reads its own run: {by_key}");

    // Another project's DAG, run and log do not exist for the lead.
    let runs_before = dag_run::Entity::find().count(&env.db).await.expect("runs");
    for (method, path) in [
        (Method::GET, format!("/api/v1/dags/{platform_dag}")),
        (
            Method::GET,
            "/api/v1/dags/by-name/platform_nightly".to_owned(),
        ),
        (
            Method::GET,
            format!("/api/v1/dags/{platform_dag}/instances"),
        ),
        (Method::POST, format!("/api/v1/dags/{platform_dag}/trigger")),
        (Method::POST, format!("/api/v1/dags/{platform_dag}/offline")),
        (Method::DELETE, format!("/api/v1/dags/{platform_dag}")),
        (
            Method::GET,
            format!("/api/v1/dags/instances/{}", platform_run.id),
        ),
        (
            Method::POST,
            format!("/api/v1/dags/instances/{}/rerun", platform_run.id),
        ),
        (
            Method::GET,
            format!("/api/v1/dags/instances/by-key/{}", platform_run.dedup_key),
        ),
        (
            Method::GET,
            format!("/api/v1/dags/task-instances/{platform_instance}/log"),
        ),
        (
            Method::POST,
            format!("/api/v1/task-instances/{platform_instance}/clear"),
        ),
    ] {
        let (status, body) = call(&api, Some(&lead), method.clone(), &path, None).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("no ")),
            "{method} {path} says it does not exist: {body}"
        );
    }
    assert_eq!(
        dag_run::Entity::find().count(&env.db).await.expect("runs"),
        runs_before,
        "no run was started across the boundary"
    );
    let (status, platform) = call(
        &api,
        Some(&root),
        Method::GET,
        &format!("/api/v1/dags/{platform_dag}"),
        None,
    )
    .await;
    assert_eq!(
        (status, platform["online"].clone()),
        (200, json!(true)),
        "{platform}"
    );

    // Lists keep to the project; asking for another is refused.
    let (_, own) = call(&api, Some(&lead), Method::GET, "/api/v1/dags", None).await;
    let names: Vec<&str> = own["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["reports"], "{own}");
    let (status, _) = call(
        &api,
        Some(&lead),
        Method::GET,
        "/api/v1/dags?projectId=1",
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (_, projects) = call(&api, Some(&lead), Method::GET, "/api/v1/projects", None).await;
    assert_eq!(projects["total"], 1, "{projects}");
    assert_eq!(projects["items"][0]["name"], "analytics");
    let (_, all) = call(&api, Some(&root), Method::GET, "/api/v1/projects", None).await;
    assert_eq!(all["total"], 2, "{all}");

    // Nothing is created or moved into another project.
    let (status, body) = call(
        &api,
        Some(&lead),
        Method::POST,
        "/api/v1/dags",
        Some(json!({ "name": "planted", "projectId": 1 })),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(
        &api,
        Some(&lead),
        Method::PUT,
        &format!("/api/v1/dags/{}", created["id"]),
        Some(json!({ "projectId": 1 })),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (_, still) = call(
        &api,
        Some(&root),
        Method::GET,
        "/api/v1/dags?projectId=1",
        None,
    )
    .await;
    assert_eq!(
        still["total"], 1,
        "only platform_nightly is in project 1: {still}"
    );

    // No token wider than the lead's own.
    let (status, body) = call(
        &api,
        Some(&lead),
        Method::POST,
        "/api/v1/tokens",
        Some(json!({ "name": "escape", "role": "admin", "projectId": 1 })),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, narrow) = call(
        &api,
        Some(&lead),
        Method::POST,
        "/api/v1/tokens",
        Some(json!({ "name": "analytics-ci", "role": "operator" })),
    )
    .await;
    assert_eq!(status, 201, "{narrow}");
    assert_eq!(
        narrow["projectId"], 2,
        "a token left unlimited takes its creator's project"
    );
    let tokens: Vec<(String, Option<i64>)> = api_token::Entity::find()
        .all(&env.db)
        .await
        .expect("tokens")
        .into_iter()
        .map(|t| (t.name, t.project_id))
        .collect();
    assert!(
        !tokens.iter().any(|(name, _)| name == "escape"),
        "{tokens:?}"
    );
    let (_, listed) = call(&api, Some(&lead), Method::GET, "/api/v1/tokens", None).await;
    let listed: Vec<&str> = listed["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        listed,
        ["analytics-ci", "lead"],
        "the lead sees its project's tokens only"
    );
    let (status, _) = call(
        &api,
        Some(&lead),
        Method::DELETE,
        "/api/v1/tokens/root",
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = call(&api, Some(&root), Method::GET, "/api/v1/audit", None).await;
    assert_eq!(status, 200, "root's token still works");

    // What covers every project needs a token that reaches every project.
    for (method, path) in [(Method::GET, "/api/v1/audit"), (Method::GET, "/metrics")] {
        let (status, body) = call(&api, Some(&lead), method.clone(), path, None).await;
        assert_eq!(status, 403, "{method} {path}: {body}");
    }

    // Datasets are a project's own: the lead announces and lists in
    // project 2, cannot announce or look into project 1, and a DAG of
    // project 1 waiting for the same name is not started by project 2's
    // event.
    env.apply("name: platform_on_data\nschedules: [{ on: shared.orders }]\ntasks:\n  - { name: t, command: 'true' }\n")
        .await;
    let (status, announced) = call(
        &api,
        Some(&lead),
        Method::POST,
        "/api/v1/datasets/shared.orders/events",
        Some(json!({ "partition": "2024-02-01" })),
    )
    .await;
    assert_eq!(status, 201, "{announced}");
    assert_eq!(announced["starts"], json!([]), "{announced}");
    let (status, body) = call(
        &api,
        Some(&lead),
        Method::POST,
        "/api/v1/datasets/shared.orders/events",
        Some(json!({ "project": 1 })),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(
        &api,
        Some(&lead),
        Method::GET,
        "/api/v1/datasets?project=1",
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (_, listed) = call(&api, Some(&lead), Method::GET, "/api/v1/datasets", None).await;
    assert_eq!(listed["items"][0]["projectId"], 2, "{listed}");
    assert_eq!(listed["items"][0]["consumers"], json!([]), "{listed}");
    let (_, platform) = call(
        &api,
        Some(&root),
        Method::GET,
        "/api/v1/datasets/shared.orders",
        None,
    )
    .await;
    assert_eq!(
        platform["events"], 0,
        "project 1 saw project 2's event: {platform}"
    );

    // A task of the project may not use another project's secret or
    // datasource, even by name.
    let (status, sneaky) = call(
        &api,
        Some(&lead),
        Method::POST,
        "/api/v1/dags",
        Some(json!({
            "name": "borrow",
            "tasks": [
                {
                    "name": "steal_secret",
                    "type": "HTTP",
                    "content": {
                        "url": format!("http://127.0.0.1:{port}/borrow"),
                        "headers": { "X-Api-Key": "${secret:platform_key}" },
                    },
                },
                {
                    "name": "steal_datasource",
                    "type": "SQL",
                    "datasource": "warehouse",
                    "sql": "select 1",
                },
            ],
        })),
    )
    .await;
    assert_eq!(status, 201, "{sneaky}");
    let (_, triggered) = call(
        &api,
        Some(&lead),
        Method::POST,
        &format!("/api/v1/dags/{}/trigger", sneaky["id"]),
        None,
    )
    .await;
    let key = triggered["runKey"].as_str().expect("runKey").to_owned();
    let run = env.wait_run(&key, TIMEOUT).await;
    assert_eq!(
        run.status,
        RunStatus::Failed,
        "{}",
        env.describe_run(&run).await
    );
    let reasons: Vec<String> = env
        .executions_by_name(run.id)
        .await
        .into_values()
        .flat_map(|attempts| attempts.into_iter().filter_map(|e| e.error_msg))
        .collect();
    let all_reasons = reasons.join("\n");
    assert!(
        all_reasons.contains("no secret named 'platform_key' in project 2"),
        "{all_reasons}"
    );
    assert!(
        all_reasons.contains("unknown datasource 'warehouse' in project 2"),
        "{all_reasons}"
    );

    let requests = seen.lock().expect("requests").clone();
    let paths: Vec<String> = requests
        .iter()
        .map(|r| r.headers.first().cloned().unwrap_or_default())
        .collect();
    assert_eq!(
        requests.len(),
        1,
        "only the reports task called out: {paths:?}"
    );
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case("authorization: Bearer ANALYTICS-SECRET-2")),
        "{:?}",
        requests[0].headers
    );
});

/// An installation upgraded from before projects were rows keeps its DAGs
/// where they were: each project id in use becomes a project, existing
/// secrets are the default project's, and the next project created takes
/// the id after the highest.
#[tokio::test]
async fn an_upgrade_turns_the_project_ids_in_use_into_projects() {
    use datajump_migrations::{Migrator, MigratorTrait};
    use datajump_shared::entities::dag;
    use datajump_shared::kinds::OverlapPolicy;
    use sea_orm::ActiveValue::Set;

    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    // Nine migrations: through 000010 (there is no 000005).
    let (db, ()) =
        datajump_store::db::connect_migrated(&url, async |db| Migrator::up(db, Some(9)).await)
            .await
            .expect("the schema before projects");
    let applied = Migrator::get_applied_migrations(&db)
        .await
        .expect("applied");
    assert_eq!(
        applied.last().map(|m| m.name().to_owned()).as_deref(),
        Some("m20261201_000010_file_managed")
    );
    let now = chrono::Utc::now();
    for (name, project) in [("old_default", 1), ("old_marketing", 5)] {
        dag::Entity::insert(dag::ActiveModel {
            name: Set(name.to_owned()),
            description: Set(String::new()),
            project_id: Set(project),
            owner: Set(None),
            online: Set(true),
            version: Set(1),
            params: Set(json!({})),
            max_active_runs: Set(1),
            overlap_policy: Set(OverlapPolicy::Wait),
            alert_config: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
            source_file: Set(None),
            file_online: Set(None),
            ..Default::default()
        })
        .exec(&db)
        .await
        .expect("a DAG of the old schema");
    }
    // Upgraded as a role starts: its pool opens on the final schema.
    db.close().await.expect("the old pool closed");
    let (db, ()) =
        datajump_store::db::connect_migrated(&url, async |db| Migrator::up(db, None).await)
            .await
            .expect("the upgrade");
    let projects: Vec<(i64, String)> = datajump_store::projects::list(&db)
        .await
        .expect("projects")
        .into_iter()
        .map(|p| (p.id, p.name))
        .collect();
    assert_eq!(
        projects,
        [(1, "default".to_owned()), (5, "project-5".to_owned())]
    );
    let next = datajump_store::projects::create(&db, "finance", "")
        .await
        .expect("a new project");
    assert_eq!(next.id, 6);
    assert!(matches!(
        datajump_store::projects::create(&db, "finance", "").await,
        Err(datajump_store::projects::ProjectError::Exists(_))
    ));
}

both_dbs!(
    a_project_token_learns_no_names_of_other_projects,
    |env| async move {
        // A token limited to project 2 read project 1's queue names and
        // counts in `/api/v1/queues`; deleting its own DAG was refused
        // with the names of project 1's DAGs that named it; creating a
        // token was refused with an offer to revoke project 1's token of
        // that name; and its sign-in was audited as `anonymous`.
        let _resolver = env.spawn_resolver().await;
        let api = Api::start(&env, None).await;
        let (ok, _, stderr) =
            datajump(&env, api.base(), None, &["project", "create", "analytics"]).await;
        assert!(ok, "{stderr}");
        env.apply(
            "name: platform_billing\ntasks:\n  - { name: t, command: 'true', queue: platform_private }\n",
        )
        .await;
        env.apply(
            "name: analytics_report\nproject: 2\ntasks:\n  - { name: publish, command: 'true', queue: analytics_q }\n",
        )
        .await;
        env.apply(
            "name: platform_watch\nschedules: [{ after: analytics_report }]\ntasks:\n  - { name: w, command: 'true', depends_on: [analytics_report/publish] }\n",
        )
        .await;
        let root = token(&env, &api, &["root", "--role", "admin"]).await;
        token(&env, &api, &["platform_ci", "--role", "viewer"]).await;
        let lead = token(
            &env,
            &api,
            &["lead", "--role", "admin", "--project", "analytics"],
        )
        .await;

        // Project 1's task waits on its queue, which no runner serves.
        env.trigger_for("platform_billing", "2024-03-01").await;
        let queue_names = |body: &serde_json::Value| -> Vec<String> {
            body["items"]
                .as_array()
                .expect("items")
                .iter()
                .filter_map(|q| q["queue"].as_str().map(str::to_owned))
                .collect()
        };
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let (status, body) = call(&api, Some(&root), Method::GET, "/api/v1/queues", None).await;
            assert_eq!(status, 200, "{body}");
            let waiting = body["items"]
                .as_array()
                .expect("items")
                .iter()
                .any(|q| q["queue"] == "platform_private" && q["queuedTasks"] == 1);
            if waiting {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "project 1's task never waited on its queue: {body}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        let (status, body) = call(&api, Some(&lead), Method::GET, "/api/v1/queues", None).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            queue_names(&body),
            ["analytics_q"],
            "a limited token sees its project's queues only: {body}"
        );
        assert!(
            !body.to_string().contains("platform_private"),
            "another project's queue named: {body}"
        );

        // Deleting its own DAG, which another project's DAG names (to no
        // effect: to it the name is of a DAG that does not exist).
        let report = env.dag_id("analytics_report").await;
        let (status, body) = call(
            &api,
            Some(&lead),
            Method::DELETE,
            &format!("/api/v1/dags/{report}"),
            None,
        )
        .await;
        assert!(
            !body.to_string().contains("platform_watch"),
            "another project's DAG named: {body}"
        );
        assert_eq!(status, 204, "{body}");

        // A token name another project holds.
        let (status, body) = call(
            &api,
            Some(&lead),
            Method::POST,
            "/api/v1/tokens",
            Some(json!({ "name": "platform_ci", "role": "viewer" })),
        )
        .await;
        assert_eq!(status, 409, "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("choose another") && !message.contains("revoke"),
            "{body}"
        );

        // A sign-in is audited as the token that signed in.
        let (status, body) = call(
            &api,
            None,
            Method::POST,
            "/api/v1/session",
            Some(json!({ "token": lead })),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let (status, audit) = call(
            &api,
            Some(&root),
            Method::GET,
            "/api/v1/audit?pageSize=100",
            None,
        )
        .await;
        assert_eq!(status, 200, "{audit}");
        let sign_ins: Vec<&serde_json::Value> = audit["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|e| e["action"] == "POST /api/v1/session")
            .collect();
        assert!(
            !sign_ins.is_empty()
                && sign_ins
                    .iter()
                    .all(|e| e["actor"] == "lead" && e["role"] == "admin"),
            "{audit}"
        );
    }
);
