//! Cron fires: one run per fire time, with one ticker or two, only for
//! the active schedules of online DAGs, and in a fair order when many are
//! due together.

use std::time::Duration;

use datajump_shared::entities::{dag, schedule};
use datajump_shared::messages::{FireMsg, Message, scheduled_run_key};
use datajump_shared::subjects::{self, Priority};
use datajump_shared::{RunStatus, TriggerType};
use futures::StreamExt;
use sea_orm::ActiveValue::{NotSet, Set};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter};

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
    env.wait_fires_idle(Duration::from_secs(30)).await;

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
                .get_last_raw_message_by_subject(&dj().fire(Priority::DEFAULT, fires))
                .await
                .is_ok(),
            "the active schedule of the online DAG fired"
        );
        for (what, dag_id) in [("offline DAG", offline), ("paused schedule", paused)] {
            assert!(
                stream
                    .get_last_raw_message_by_subject(&dj().fire(Priority::DEFAULT, dag_id))
                    .await
                    .is_err(),
                "the {what} did not fire"
            );
        }
    }
);

/// Schedules per project in [`fires_due_together_alternate_projects`].
const SCHEDULES_PER_PROJECT: usize = 1000;

both_dbs!(fires_due_together_alternate_projects, |env| async move {
    // Three projects with a thousand schedules each, all due every second,
    // and one DAG of the second project that says priority 9.
    let mut projects = vec![datajump_shared::dag_file::DEFAULT_PROJECT];
    for name in ["marketing", "finance"] {
        let created = datajump_store::projects::create(&env.db, name, "")
            .await
            .expect("create a project");
        projects.push(created.id);
    }
    let mut project_of = std::collections::HashMap::new();
    for (p, project) in projects.iter().enumerate() {
        env.apply(&format!(
            "name: p{p}_0000\nproject: {project}\nschedules: [{{ cron: '* * * * * ?' }}]\ntasks:\n  - {{ name: t, command: 'true' }}\n"
        ))
        .await;
        let template = dag::Entity::find_by_id(env.dag_id(&format!("p{p}_0000")).await)
            .one(&env.db)
            .await
            .expect("read the template DAG")
            .expect("the template DAG");
        let schedule = schedule::Entity::find()
            .filter(schedule::Column::DagId.eq(template.id))
            .one(&env.db)
            .await
            .expect("read the template schedule")
            .expect("the template schedule");
        let copies: Vec<String> = (1..SCHEDULES_PER_PROJECT)
            .map(|i| format!("p{p}_{i:04}"))
            .collect();
        for names in copies.chunks(200) {
            dag::Entity::insert_many(names.iter().map(|name| {
                let mut copy = template.clone().into_active_model().reset_all();
                copy.id = NotSet;
                copy.name = Set(name.clone());
                copy
            }))
            .exec_without_returning(&env.db)
            .await
            .expect("copy the template DAG");
        }
        let ids: Vec<i64> = dag::Entity::find()
            .filter(dag::Column::ProjectId.eq(*project))
            .all(&env.db)
            .await
            .expect("read the copies")
            .into_iter()
            .filter(|row| row.id != template.id)
            .map(|row| row.id)
            .collect();
        for ids in ids.chunks(200) {
            schedule::Entity::insert_many(ids.iter().map(|dag_id| {
                let mut copy = schedule.clone().into_active_model().reset_all();
                copy.id = NotSet;
                copy.dag_id = Set(*dag_id);
                copy
            }))
            .exec_without_returning(&env.db)
            .await
            .expect("copy the template schedule");
        }
        for row in dag::Entity::find()
            .filter(dag::Column::ProjectId.eq(*project))
            .all(&env.db)
            .await
            .expect("read the project's DAGs")
        {
            project_of.insert(row.id, *project);
        }
    }
    env.apply(&format!(
        "name: urgent\nproject: {}\npriority: 9\nschedules: [{{ cron: '* * * * * ?' }}]\ntasks:\n  - {{ name: t, command: 'true', priority: 2 }}\n",
        projects[1]
    ))
    .await;
    let urgent = env.dag_id("urgent").await;
    let schedule_of: std::collections::HashMap<i64, i64> = schedule::Entity::find()
        .all(&env.db)
        .await
        .expect("read the schedules")
        .into_iter()
        .map(|row| (row.dag_id, row.id))
        .collect();
    assert_eq!(schedule_of.len(), 3 * SCHEDULES_PER_PROJECT + 1);

    let mut fires = env
        .nats
        .subscribe(dj().stream_subjects(subjects::Stream::Fire))
        .await
        .expect("subscribe to fires");
    let ticker = env.spawn_ticker().await;
    let mut first = Vec::new();
    while first.len() < 31 {
        let message = tokio::time::timeout(Duration::from_secs(30), fires.next())
            .await
            .expect("the ticker fires within 30 s")
            .expect("the subscription stays open");
        let fire = FireMsg::decode(&message.payload).expect("a fire");
        let level = if fire.dag_id == urgent { 9 } else { 5 };
        assert_eq!(
            message.subject.as_str(),
            dj().fire(Priority::of(level), fire.dag_id),
            "each fire goes out on its DAG's level"
        );
        first.push((fire.dag_id, fire.logical_time));
    }
    ticker.stop().await;

    assert!(
        first.iter().all(|(_, at)| *at == first[0].1),
        "the first 31 fires are of one second: {first:?}"
    );
    assert_eq!(first[0].0, urgent, "the priority-9 DAG's fire goes first");
    let order: Vec<(i64, i64)> = first[1..]
        .iter()
        .map(|(dag_id, _)| (project_of[dag_id], schedule_of[dag_id]))
        .collect();
    let projects_in_turn: Vec<i64> = order.iter().map(|(project, _)| *project).collect();
    let expected: Vec<i64> = projects.iter().copied().cycle().take(30).collect();
    assert_eq!(
        projects_in_turn, expected,
        "then one fire of each project in turn"
    );
    for project in &projects {
        let schedules: Vec<i64> = order
            .iter()
            .filter(|(p, _)| p == project)
            .map(|(_, schedule)| *schedule)
            .collect();
        assert!(
            schedules.windows(2).all(|pair| pair[0] < pair[1]),
            "each project's fires by schedule id: {schedules:?}"
        );
    }
});
