//! Cron fires: one run per fire time, with one ticker or two, and only for
//! the active schedules of online DAGs.

use std::time::Duration;

use datajump_shared::entities::{dag, schedule};
use datajump_shared::messages::scheduled_run_key;
use datajump_shared::{RunStatus, TriggerType, subjects};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use crate::harness::{TestEnv, dj};

/// How long the tickers run.
const TICKING: Duration = Duration::from_millis(4500);

/// Runs `tickers` tickers over a DAG firing every second for [`TICKING`],
/// then checks there is exactly one run per fire time, fire times being
/// consecutive seconds.
async fn one_run_per_fire(env: TestEnv, tickers: usize) {
    env.apply(
        r#"
name: every_second
max_active_runs: 100
overlap: parallel
schedules:
  - cron: "* * * * * ?"
tasks:
  - { name: tick, command: "true" }
"#,
    )
    .await;
    let dag_id = env.dag_id("every_second").await;
    let schedule_id = schedule::Entity::find()
        .one(&env.db)
        .await
        .expect("query schedule")
        .expect("the schedule")
        .id;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;

    let mut running = Vec::new();
    for _ in 0..tickers {
        running.push(env.spawn_ticker().await);
    }
    tokio::time::sleep(TICKING).await;
    for ticker in running {
        ticker.stop().await;
    }
    env.wait_consumer_idle(
        "DJ_FIRE",
        subjects::RESOLVER_FIRE_CONSUMER,
        Duration::from_secs(30),
    )
    .await;

    let runs = env.runs_of(dag_id).await;
    let times: Vec<i64> = runs.iter().map(|r| r.logical_time.timestamp()).collect();
    assert!(
        runs.len() >= 3,
        "at least 3 fires in {TICKING:?}, got {times:?}"
    );
    for pair in times.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            1,
            "fire times are distinct consecutive seconds: {times:?}"
        );
    }
    for run in &runs {
        assert_eq!(run.logical_time.timestamp_subsec_nanos(), 0);
        assert_eq!(run.trigger_type, TriggerType::Schedule);
        assert_eq!(run.schedule_id, Some(schedule_id));
        assert_eq!(
            run.dedup_key,
            scheduled_run_key(schedule_id, run.logical_time.timestamp())
        );
    }
    // JetStream kept one message per fire time: duplicates from a second
    // ticker were dropped by their Nats-Msg-Id before reaching a resolver.
    let mut stream = env
        .bus
        .js()
        .get_stream("DJ_FIRE")
        .await
        .expect("fire stream");
    let stored = stream
        .info()
        .await
        .expect("stream info")
        .state
        .last_sequence;
    assert_eq!(
        stored,
        runs.len() as u64,
        "fires stored in {} vs runs {times:?}",
        "DJ_FIRE"
    );

    for run in &runs {
        let done = env.wait_run(&run.dedup_key, Duration::from_secs(60)).await;
        assert_eq!(
            done.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&done).await
        );
    }
}

both_dbs!(schedule_every_second_one_ticker, |env| async move {
    one_run_per_fire(env, 1).await;
});

both_dbs!(schedule_every_second_two_tickers, |env| async move {
    one_run_per_fire(env, 2).await;
});

both_dbs!(
    ticker_fires_only_active_schedules_of_online_dags,
    |env| async move {
        for name in ["fires", "offline", "paused"] {
            env.apply(&format!(
                r#"
name: {name}
schedules:
  - cron: "* * * * * ?"
tasks:
  - {{ name: tick, command: "true" }}
"#
            ))
            .await;
        }
        let fires = env.dag_id("fires").await;
        let offline = env.dag_id("offline").await;
        let paused = env.dag_id("paused").await;
        dag::Entity::update_many()
            .col_expr(dag::Column::Online, Expr::value(false))
            .filter(dag::Column::Id.eq(offline))
            .exec(&env.db)
            .await
            .expect("take a DAG offline");
        schedule::Entity::update_many()
            .col_expr(schedule::Column::Active, Expr::value(false))
            .filter(schedule::Column::DagId.eq(paused))
            .exec(&env.db)
            .await
            .expect("pause a schedule");

        let ticker = env.spawn_ticker().await;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        ticker.stop().await;

        let stream = env
            .bus
            .js()
            .get_stream("DJ_FIRE")
            .await
            .expect("fire stream");
        assert!(
            stream
                .get_last_raw_message_by_subject(&dj().fire(fires))
                .await
                .is_ok(),
            "the active schedule of the online DAG fired"
        );
        for (what, dag_id) in [("offline DAG", offline), ("paused schedule", paused)] {
            assert!(
                stream
                    .get_last_raw_message_by_subject(&dj().fire(dag_id))
                    .await
                    .is_err(),
                "the {what} did not fire"
            );
        }
    }
);
