//! Message ids carry the installation's identity, and nothing published
//! first under an id can hold back what the database says must run
//! (docs/ARCHITECTURE.md "Message ids").
//!
//! 1. A database deleted and started afresh on the same NATS — what a
//!    newcomer does with the README's SQLite trial — restarts its ids at 1,
//!    yet none of its messages is dropped as a duplicate of the old one's.
//! 2. An attacker who can publish on the streams pre-publishes the ids of
//!    the next work messages and of a schedule's next fires: the work still
//!    runs at once, and every fire still makes exactly one run, within the
//!    stated bound.

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use datajump_shared::entities::{schedule, task_instance};
use datajump_shared::messages::scheduled_run_key;
use datajump_shared::subjects::{Priority, Stream};
use datajump_shared::{RunStatus, TaskInstanceId};
use futures::StreamExt;
use sea_orm::{EntityTrait, QueryOrder};

use crate::harness::process::{Process, run_cli};
use crate::harness::{Backend, TestEnv, dj, free_port};

/// `datajump_duplicate_publishes_total` of `stream` in a `/metrics` page.
fn duplicates(page: &str, stream: &str) -> f64 {
    let series = format!("datajump_duplicate_publishes_total{{stream=\"{stream}\"}} ");
    page.lines()
        .find_map(|line| line.strip_prefix(series.as_str()))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in the metrics page:\n{page}"))
}

/// Starts `datajump up` on the SQLite file `db`, with the test's NATS.
async fn up(env: &TestEnv, name: &str, db: &str, api_port: u16) -> Process {
    up_with(env, name, db, api_port, &env.path("dags"), &[]).await
}

/// [`up`] with its own DAGs folder and environment.
async fn up_with(
    env: &TestEnv,
    name: &str,
    db: &str,
    api_port: u16,
    dags: &std::path::Path,
    extra_env: &[(&str, &str)],
) -> Process {
    let data_dir = env.path(name);
    let mut vars = vec![
        ("DATAJUMP_DATABASE_URL", db),
        ("DATAJUMP_DATA_DIR", data_dir.to_str().expect("utf-8 path")),
    ];
    vars.extend_from_slice(extra_env);
    let mut up = Process::start(
        env,
        name,
        &[
            "up",
            "--dags",
            dags.to_str().expect("utf-8 path"),
            "--api-addr",
            &format!("127.0.0.1:{api_port}"),
        ],
        &vars,
    );
    up.wait_log("DataJump is up.", Duration::from_secs(60))
        .await;
    up
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_started_afresh_on_the_same_nats_loses_no_message() {
    let env = TestEnv::new(Backend::Sqlite).await;
    std::fs::create_dir_all(env.path("dags")).expect("dags folder");
    std::fs::write(
        env.path("dags").join("hello.yaml"),
        "name: hello\ntasks:\n  - { name: first, command: 'echo one' }\n  - { name: second, command: 'echo two', depends_on: [first] }\n",
    )
    .expect("write a DAG");
    let file = env.path("trial.db");
    let db = format!("sqlite://{}?mode=rwc", file.display());
    let api_port = free_port();
    let api_url = format!("http://127.0.0.1:{api_port}");
    let http = reqwest::Client::new();

    let mut identities = Vec::new();
    for round in ["first", "second"] {
        let mut system = up(&env, &format!("up-{round}"), &db, api_port).await;
        let started = Instant::now();
        let (ok, stdout, stderr) = run_cli(
            &env,
            &["trigger", "hello", "--wait"],
            &[("DATAJUMP_API_URL", &api_url)],
        )
        .await;
        assert!(
            ok,
            "{round} trigger: {stdout}\n{stderr}\n{}",
            system.log_text()
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the {round} database's run took {:?}",
            started.elapsed()
        );
        let page = http
            .get(format!("{api_url}/metrics"))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics page");
        for stream in ["work", "done"] {
            assert_eq!(
                duplicates(&page, stream),
                0.0,
                "the {round} database's messages were dropped as duplicates on {stream}"
            );
        }
        let log = system.log_text();
        let identity = log
            .lines()
            .find_map(|line| line.split("(installation ").nth(1))
            .and_then(|rest| rest.split(')').next())
            .unwrap_or_else(|| panic!("`up` names no installation:\n{log}"))
            .to_owned();
        identities.push(identity);
        system.kill9();
        system.wait_exit(Duration::from_secs(10)).await;
        // What the newcomer did: delete the SQLite file and start again.
        std::fs::remove_file(&file).expect("delete the database");
    }
    assert_ne!(
        identities[0], identities[1],
        "a new database is a new installation"
    );
}

/// Two installations, each with its own database and `--nats-prefix`, on
/// one nats-server: each runs its own DAG, and nothing of one reaches the
/// other's subjects or streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_installations_with_their_own_prefixes_share_one_nats() {
    let env = TestEnv::new(Backend::Sqlite).await;
    let mut systems = Vec::new();
    for (name, prefix) in [("ours", "dj"), ("theirs", "team2")] {
        let dags = env.path(&format!("dags-{name}"));
        std::fs::create_dir_all(&dags).expect("dags folder");
        let marker = env.path(&format!("{name}.ran"));
        std::fs::write(
            dags.join("hello.yaml"),
            format!(
                "name: hello\ntasks:\n  - {{ name: mark, command: 'echo {name} >> {}' }}\n",
                marker.display()
            ),
        )
        .expect("write a DAG");
        let db = format!(
            "sqlite://{}?mode=rwc",
            env.path(&format!("{name}.db")).display()
        );
        let api_port = free_port();
        let system = up_with(
            &env,
            &format!("up-{name}"),
            &db,
            api_port,
            &dags,
            &[("DATAJUMP_NATS_PREFIX", prefix)],
        )
        .await;
        systems.push((name, system, format!("http://127.0.0.1:{api_port}"), marker));
    }

    // While theirs runs, our subjects stay silent.
    let mut ours = env.nats.subscribe("dj.>").await.expect("watch dj.>");
    let (_, _, their_api, their_marker) = &systems[1];
    let (ok, stdout, stderr) = run_cli(
        &env,
        &["trigger", "hello", "--wait"],
        &[("DATAJUMP_API_URL", their_api)],
    )
    .await;
    assert!(ok, "their trigger: {stdout}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(their_marker).expect("their task ran"),
        "theirs\n"
    );
    let leaked = tokio::time::timeout(Duration::from_millis(500), ours.next()).await;
    assert!(
        leaked.is_err(),
        "their run published on our subjects: {:?}",
        leaked.ok().flatten().map(|m| m.subject)
    );

    let (_, _, our_api, our_marker) = &systems[0];
    let (ok, stdout, stderr) = run_cli(
        &env,
        &["trigger", "hello", "--wait"],
        &[("DATAJUMP_API_URL", our_api)],
    )
    .await;
    assert!(ok, "our trigger: {stdout}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(our_marker).expect("our task ran"),
        "ours\n"
    );
    assert_eq!(
        std::fs::read_to_string(their_marker).expect("their marker"),
        "theirs\n",
        "our run ran their task"
    );
    for (stream, subjects) in [("DJ_WORK", "dj.work.*.*"), ("TEAM2_WORK", "team2.work.*.*")] {
        let info = env
            .bus
            .js()
            .get_stream(stream)
            .await
            .unwrap_or_else(|e| panic!("no stream {stream}: {e}"))
            .cached_info()
            .clone();
        assert_eq!(info.config.subjects, vec![subjects.to_owned()]);
        assert!(info.state.last_sequence > 0, "{stream} carried no work");
    }
    for ((name, mut system, _, _), prefix) in systems.into_iter().zip(["dj", "team2"]) {
        system.assert_running();
        let log = system.log_text();
        assert!(
            log.contains(&format!("with prefix {prefix}")),
            "{name}: `up` does not say its prefix:\n{log}"
        );
    }
}

/// Pre-published ids suppress nothing: a task whose work id was taken runs
/// at once, and fires whose ids were taken still make one run each.
async fn pre_published_ids_suppress_nothing(env: TestEnv) {
    env.apply(
        r#"
name: every_five
max_active_runs: 100
overlap: parallel
schedules:
  - cron: "*/5 * * * * ?"
tasks:
  - { name: tick, command: "true" }
"#,
    )
    .await;
    env.apply("name: once\ntasks:\n  - { name: only, command: 'echo ran' }\n")
        .await;
    let dag_id = env.dag_id("every_five").await;
    let schedule_id = schedule::Entity::find()
        .one(&env.db)
        .await
        .expect("query schedules")
        .expect("the schedule")
        .id;
    let installation = env.bus.installation().clone();

    // The attacker takes the ids of the next task instances' first
    // attempts and of the schedule's next four fires.
    let next_instance = task_instance::Entity::find()
        .order_by_desc(task_instance::Column::Id)
        .one(&env.db)
        .await
        .expect("query instances")
        .map_or(1, |row| row.id + 1);
    for id in next_instance..next_instance + 5 {
        let duplicate = env
            .bus
            .publish(
                Stream::Work,
                dj().work("default", Priority::DEFAULT),
                &installation.work_msg_id(TaskInstanceId(id), 0),
                b"{\"forged\":true}".to_vec(),
            )
            .await
            .expect("pre-publish work");
        assert!(!duplicate);
    }
    let now = Utc::now().timestamp();
    let first_fire = (now / 5 + 2) * 5;
    let fires: Vec<i64> = (0..4).map(|n| first_fire + 5 * n).collect();
    for at in &fires {
        env.bus
            .publish(
                Stream::Fire,
                dj().fire(Priority::DEFAULT, dag_id),
                &installation.fire_msg_id(schedule_id, *at),
                b"{\"forged\":true}".to_vec(),
            )
            .await
            .expect("pre-publish a fire");
    }

    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;
    let _ticker = env.spawn_ticker().await;
    // The work: its first publish is dropped, and republished at once.
    let started = Instant::now();
    let run = env
        .run_to_end("once", RunStatus::Success, Duration::from_secs(60))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the task waited {:?} behind a pre-published id",
        started.elapsed()
    );
    let ran = env.executions(run.id).await;
    assert_eq!(ran.len(), 1, "one attempt: {ran:?}");

    // The fires: each is dropped, found to have no run and republished.
    let last = Utc
        .timestamp_opt(fires[fires.len() - 1], 0)
        .single()
        .expect("a time");
    let bound = Duration::from_secs(60);
    for at in &fires {
        let key = scheduled_run_key(schedule_id, *at);
        let fire_time = Utc.timestamp_opt(*at, 0).single().expect("a time");
        let wait = (fire_time - Utc::now()).to_std().unwrap_or_default() + bound;
        let run = env.wait_run(&key, wait).await;
        assert_eq!(
            run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&run).await
        );
        assert!(
            run.created_at - fire_time < chrono::Duration::from_std(bound).expect("bound"),
            "the fire of {fire_time} made its run only at {}",
            run.created_at
        );
    }
    // Exactly one run per fire time, the suppressed ones included.
    let runs = env.runs_of(dag_id).await;
    let mut times: Vec<i64> = runs
        .iter()
        .map(|r| r.logical_time.timestamp())
        .filter(|t| *t <= last.timestamp())
        .collect();
    let count = times.len();
    times.dedup();
    assert_eq!(count, times.len(), "a fire time with two runs: {times:?}");
    for at in &fires {
        assert!(times.contains(at), "no run for {at}: {times:?}");
    }
}

both_dbs!(
    pre_published_message_ids_suppress_nothing,
    |env| async move {
        pre_published_ids_suppress_nothing(env).await;
    }
);
