//! Retention: finished runs older than the retention period go, with their
//! task instances, executions and plan snapshots; recent runs stay.

use std::time::Duration;

use crate::harness::dj;

const TIMEOUT: Duration = Duration::from_secs(60);

both_dbs!(retention_removes_old_runs_only, |env| async move {
    use datajump_shared::entities::{alert, dag_run, dag_run_plan, execution, task_instance};
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
    let config = datajump_ticker::Config {
        db: env.db.clone(),
        nats: env.nats.clone(),
        names: dj(),
        replicas: datajump_nats::Replicas::AUTO,
        shard: None,
        default_timezone: chrono_tz::UTC,
        retention: Some(chrono::Duration::days(30)),
        network: std::sync::Arc::default(),
        periods: datajump_ticker::Periods::default(),
    };
    let removed =
        datajump_ticker::cleanup::remove_old_runs(&config, &env.bus, chrono::Duration::days(30))
            .await
            .expect("cleanup");
    assert_eq!(removed, 1);
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
                dag_run_plan::Entity::find_by_id(run)
                    .count(&db)
                    .await
                    .expect("count"),
            )
        }
    };
    assert_eq!(
        count(old.id).await,
        (0, 0, 0),
        "its instances, executions and plan went with it"
    );
    assert_eq!(count(recent.id).await, (1, 1, 1), "the recent run is kept");
    let alerts: Vec<String> = alert::Entity::find()
        .all(&env.db)
        .await
        .expect("alerts")
        .into_iter()
        .map(|a| a.dedup_key)
        .collect();
    assert_eq!(alerts, ["recent"], "alerts older than the period go");
});
