//! Retention: finished runs older than the retention period go, with their
//! task instances and executions (their versions' plans stay); recent runs
//! stay; dataset history goes but for what data schedules still read; the
//! audit log has a period of its own.

use std::time::Duration;

use crate::harness::dj;

const TIMEOUT: Duration = Duration::from_secs(60);

/// One cleanup of `env`'s history by a ticker keeping it for `retention`.
async fn clean(
    env: &crate::harness::TestEnv,
    retention: datajump_ticker::cleanup::Retention,
) -> datajump_ticker::cleanup::Removed {
    let config = datajump_ticker::Config {
        db: env.db.clone(),
        nats: env.nats.clone(),
        names: dj(),
        replicas: datajump_nats::Replicas::AUTO,
        shard: None,
        default_timezone: chrono_tz::UTC,
        retention,
        network: std::sync::Arc::default(),
        periods: datajump_ticker::Periods::default(),
    };
    datajump_ticker::cleanup::clean(&config, &env.bus, chrono::Utc::now())
        .await
        .expect("cleanup")
}

both_dbs!(retention_removes_old_runs_only, |env| async move {
    use datajump_shared::entities::{alert, dag_run, dag_version_plan, execution, task_instance};
    use datajump_shared::kinds::{AlertKind, AlertState};
    use sea_orm::{
        ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter,
    };
    env.apply("name: kept\ntasks:\n  - { name: t, command: \"echo hi\" }\n")
        .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let old = env.wait_run(&env.trigger("kept").await, TIMEOUT).await;
    let recent = env.wait_run(&env.trigger("kept").await, TIMEOUT).await;
    dag_run::ActiveModel {
        id: Set(old.id),
        finished_at: Set(Some(chrono::Utc::now() - chrono::Duration::days(40))),
        ..Default::default()
    }
    .update(&env.db)
    .await
    .expect("age the run");
    let alert_aged = |days: i64, key: &str| alert::ActiveModel {
        dag_id: Set(old.dag_id),
        dag_run_id: Set(Some(old.id)),
        kind: Set(AlertKind::RunFailed),
        dedup_key: Set(key.to_owned()),
        target: Set(serde_json::json!({ "url": "http://127.0.0.1:9/" })),
        payload: Set(serde_json::json!({})),
        status: Set(AlertState::Sent),
        attempts: Set(1),
        next_attempt_at: Set(chrono::Utc::now()),
        created_at: Set(chrono::Utc::now() - chrono::Duration::days(days)),
        ..Default::default()
    };
    alert_aged(40, "old")
        .insert(&env.db)
        .await
        .expect("old alert");
    alert_aged(1, "recent")
        .insert(&env.db)
        .await
        .expect("recent alert");
    let removed = clean(
        &env,
        datajump_ticker::cleanup::Retention {
            runs: Some(chrono::Duration::days(30)),
            alerts: Some(chrono::Duration::days(30)),
            audit: None,
        },
    )
    .await;
    assert_eq!((removed.runs, removed.alerts), (1, 1));
    assert!(
        dag_run::Entity::find_by_id(old.id)
            .one(&env.db)
            .await
            .expect("query")
            .is_none()
    );
    let count = |run: i64| {
        let db = env.db.clone();
        async move {
            (
                task_instance::Entity::find()
                    .filter(task_instance::Column::DagRunId.eq(run))
                    .count(&db)
                    .await
                    .expect("count"),
                execution::Entity::find()
                    .filter(execution::Column::DagRunId.eq(run))
                    .count(&db)
                    .await
                    .expect("count"),
            )
        }
    };
    assert_eq!(
        count(old.id).await,
        (0, 0),
        "its instances and executions went with it"
    );
    assert_eq!(count(recent.id).await, (1, 1), "the recent run is kept");
    let plan = dag_version_plan::Entity::find_by_id((recent.dag_id, recent.dag_version))
        .one(&env.db)
        .await
        .expect("the version's plan")
        .expect("the plan of the kept run's version stays");
    let plan = plan.plan.read().expect("a plan");
    assert_eq!(
        plan.tasks
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["t"],
        "the kept run's plan names its task"
    );
    let alerts: Vec<String> = alert::Entity::find()
        .all(&env.db)
        .await
        .expect("alerts")
        .into_iter()
        .map(|a| a.dedup_key)
        .collect();
    assert_eq!(alerts, ["recent"], "alerts older than the period go");
});

both_dbs!(
    retention_keeps_what_data_schedules_still_read,
    |env| async move {
        use datajump_shared::entities::{audit_log, dataset_event, dataset_trigger};
        use sea_orm::sea_query::Expr;
        use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait};
        use serde_json::json;

        env.apply(
            "name: joined\nschedules: [{ on: { all: [ods.orders, ods.users] } }]\ntasks: [{ name: t, command: 'true' }]\n",
        )
        .await;
        let api = crate::api::Api::start(&env, None).await;
        let announce = |dataset: &'static str, partition: &'static str| {
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
        // Orders of the 1st twice (the first restated), then the 2nd and
        // 3rd both ways: two fires of `joined`.
        announce("ods.orders", "2024-05-01").await;
        announce("ods.orders", "2024-05-01").await;
        for day in ["2024-05-02", "2024-05-03"] {
            announce("ods.orders", day).await;
            let started = announce("ods.users", day).await;
            assert_eq!(started["starts"], json!(["joined"]), "{started}");
        }
        let forty_days_ago = chrono::Utc::now() - chrono::Duration::days(40);
        dataset_event::Entity::update_many()
            .col_expr(
                dataset_event::Column::CreatedAt,
                Expr::value(forty_days_ago),
            )
            .exec(&env.db)
            .await
            .expect("age the events");
        dataset_trigger::Entity::update_many()
            .col_expr(
                dataset_trigger::Column::CreatedAt,
                Expr::value(forty_days_ago),
            )
            .exec(&env.db)
            .await
            .expect("age the triggers");
        for (days, target) in [(400, "old"), (100, "recent")] {
            audit_log::ActiveModel {
                at: Set(chrono::Utc::now() - chrono::Duration::days(days)),
                actor: Set("alice".to_owned()),
                role: Set("admin".to_owned()),
                action: Set("secret set".to_owned()),
                target: Set(target.to_owned()),
                status: Set(0),
                origin: Set("cli@test".to_owned()),
                ..Default::default()
            }
            .insert(&env.db)
            .await
            .expect("an audit entry");
        }

        let removed = clean(
            &env,
            datajump_ticker::cleanup::Retention {
                runs: Some(chrono::Duration::days(30)),
                alerts: None,
                audit: Some(chrono::Duration::days(365)),
            },
        )
        .await;
        assert_eq!(
            (
                removed.dataset_events,
                removed.dataset_triggers,
                removed.audit
            ),
            (1, 1, 1),
            "the restated event, the earlier fire and the year-old audit entry went: {removed:?}"
        );
        let events: Vec<(String, Option<String>)> = dataset_event::Entity::find()
            .all(&env.db)
            .await
            .expect("events")
            .into_iter()
            .map(|event| (event.dataset, event.partition))
            .collect();
        assert_eq!(events.len(), 5, "one per dataset and partition: {events:?}");
        let audit: Vec<String> = audit_log::Entity::find()
            .all(&env.db)
            .await
            .expect("audit")
            .into_iter()
            .map(|entry| entry.target)
            .collect();
        assert!(
            audit.contains(&"recent".to_owned()) && !audit.contains(&"old".to_owned()),
            "{audit:?}"
        );

        // The orders of the 1st, forty days old, still complete the
        // condition when its users arrive.
        let started = announce("ods.users", "2024-05-01").await;
        assert_eq!(started["starts"], json!(["joined"]), "{started}");
    }
);
