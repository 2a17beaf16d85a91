//! Invariants 1 and 4: a message delivered twice changes nothing the second
//! time, and a poison message is terminated, never redelivered.

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::jetstream::message::PublishMessage;
use datajump_shared::entities::dag_run;
use datajump_shared::messages::{DoneMsg, FireMsg, Message, VERSION, WorkMsg};
use datajump_shared::params::Params;
use datajump_shared::subjects::{self, Priority, Stream};
use datajump_shared::{RunId, RunStatus, TaskInstanceId, TaskStatus};
use futures::StreamExt;
use sea_orm::EntityTrait;

use crate::harness::dj;

const MINUTE: Duration = Duration::from_secs(60);
const PAIR: &str = r#"
name: pair
tasks:
  - { name: a, command: "true" }
  - { name: b, command: "true", depends_on: [a] }
"#;

fn again_id(kind: &str) -> String {
    format!("{kind}:again:{}", uuid::Uuid::new_v4().simple())
}

both_dbs!(fire_delivered_twice_creates_one_run, |env| async move {
    env.apply(PAIR).await;
    let dag_id = env.dag_id("pair").await;
    let _resolvers = [env.spawn_resolver().await, env.spawn_resolver().await];
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;

    let fire = env.manual_fire("pair").await;
    for _ in 0..2 {
        // Distinct message ids: JetStream stores both and both are delivered.
        let duplicate = env
            .bus
            .publish(
                Stream::Fire,
                dj().fire(Priority::DEFAULT, dag_id),
                &again_id("fire"),
                fire.encode(),
            )
            .await
            .expect("publish fire");
        assert!(!duplicate);
    }
    let run = env.wait_run(&fire.dedup_key, MINUTE).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    env.wait_fires_idle(MINUTE).await;

    let runs = env.runs_of(dag_id).await;
    assert_eq!(runs.len(), 1, "one run for one fire: {runs:?}");
    assert_eq!(env.instances(run.id).await.len(), 2);
    assert_eq!(env.executions(run.id).await.len(), 2);
});

both_dbs!(
    completion_delivered_twice_changes_nothing,
    |env| async move {
        env.apply(PAIR).await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("runner-1", &["default"], 4).await;
        let run = env.run_to_end("pair", RunStatus::Success, MINUTE).await;
        env.wait_consumer_idle("DJ_DONE", subjects::RESOLVER_DONE_CONSUMER, MINUTE)
            .await;
        let instances = env.instances(run.id).await;
        let executions = env.executions(run.id).await;

        // Both completions again: `a` (releases `b` the first time) and `b`
        // (finished the run the first time).
        for row in &instances {
            assert_eq!(row.status, TaskStatus::Success);
            let done = DoneMsg {
                v: VERSION,
                dag_run_id: RunId(run.id),
                task_instance_id: row.instance_id(),
                attempt: row.attempt - 1,
                status: row.status,
            };
            let duplicate = env
                .bus
                .publish(
                    Stream::Done,
                    dj().done(RunId(run.id)),
                    &again_id("done"),
                    done.encode(),
                )
                .await
                .expect("publish done");
            assert!(!duplicate);
        }
        env.wait_consumer_idle("DJ_DONE", subjects::RESOLVER_DONE_CONSUMER, MINUTE)
            .await;

        let after = dag_run::Entity::find_by_id(run.id)
            .one(&env.db)
            .await
            .expect("query run")
            .expect("the run");
        assert_eq!(after, run, "the run is unchanged");
        assert_eq!(
            env.instances(run.id).await,
            instances,
            "instances unchanged"
        );
        assert_eq!(
            env.executions(run.id).await,
            executions,
            "no new executions"
        );
    }
);

both_dbs!(work_for_finished_task_runs_nothing, |env| async move {
    env.apply(PAIR).await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;
    let run = env.run_to_end("pair", RunStatus::Success, MINUTE).await;
    let instances = env.instances(run.id).await;
    let executions = env.executions(run.id).await;
    let row = instances
        .iter()
        .find(|r| r.task_name == "a")
        .expect("instance a")
        .clone();

    // Completions are watched on core NATS: a republished completion
    // reaches core subscribers even when JetStream drops it as a duplicate.
    let mut completions = env
        .nats
        .subscribe(dj().done(RunId(run.id)))
        .await
        .expect("subscribe");
    env.nats.flush().await.expect("flush");
    let work = WorkMsg {
        attempt: row.attempt - 1,
        ..WorkMsg::for_queued(&row).expect("work message")
    };
    let priority = Priority::of(row.priority);
    env.bus
        .publish(
            Stream::Work,
            dj().work(&row.queue, priority),
            &again_id("work"),
            work.encode(),
        )
        .await
        .expect("publish work");

    let republished = tokio::time::timeout(MINUTE, async {
        while let Some(message) = completions.next().await {
            if let Ok(done) = DoneMsg::decode(&message.payload)
                && done.task_instance_id == row.instance_id()
            {
                return done;
            }
        }
        panic!("completion subscription ended");
    })
    .await
    .expect("the runner republishes the completion");
    assert_eq!(republished.status, TaskStatus::Success);
    assert_eq!(republished.attempt, row.attempt - 1);

    env.wait_consumer_idle(
        "DJ_WORK",
        &subjects::runner_consumer(&row.queue, priority),
        MINUTE,
    )
    .await;
    env.wait_consumer_idle("DJ_DONE", subjects::RESOLVER_DONE_CONSUMER, MINUTE)
        .await;
    assert_eq!(
        env.executions(run.id).await,
        executions,
        "nothing ran again"
    );
    assert_eq!(
        env.instances(run.id).await,
        instances,
        "instances unchanged"
    );
    let after = dag_run::Entity::find_by_id(run.id)
        .one(&env.db)
        .await
        .expect("query run")
        .expect("the run");
    assert_eq!(after, run, "the run is unchanged");
});

both_dbs!(poison_messages_are_terminated, |env| async move {
    env.apply(PAIR).await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;

    let mut advisories = env
        .nats
        .subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>")
        .await
        .expect("subscribe to advisories");
    env.nats.flush().await.expect("flush");

    let publish = |subject: String, payload: Vec<u8>| {
        let js = env.bus.js().clone();
        async move {
            js.send_publish(subject, PublishMessage::build().payload(payload.into()))
                .await
                .expect("publish")
                .await
                .expect("publish ack")
                .sequence
        }
    };
    let missing_dag = FireMsg::manual(
        987_654_321,
        Priority::DEFAULT,
        chrono::Utc::now(),
        chrono::Utc::now().date_naive(),
        Params::new(),
    );
    let missing_instance = DoneMsg {
        v: VERSION,
        dag_run_id: RunId(1),
        task_instance_id: TaskInstanceId(987_654_321),
        attempt: 0,
        status: TaskStatus::Success,
    };
    let normal = Priority::DEFAULT;
    let mut expected = BTreeSet::from([
        (
            "DJ_DONE".to_owned(),
            subjects::RESOLVER_DONE_CONSUMER.to_owned(),
            publish(dj().done(RunId(1)), b"\xff\x00garbage{".to_vec()).await,
        ),
        (
            "DJ_DONE".to_owned(),
            subjects::RESOLVER_DONE_CONSUMER.to_owned(),
            publish(dj().done(RunId(1)), missing_instance.encode()).await,
        ),
        (
            "DJ_FIRE".to_owned(),
            subjects::resolver_fire_consumer(Priority::DEFAULT),
            publish(
                dj().fire(Priority::DEFAULT, 987_654_321),
                missing_dag.encode(),
            )
            .await,
        ),
        (
            "DJ_WORK".to_owned(),
            subjects::runner_consumer("default", normal),
            publish(dj().work("default", normal), b"not a work message".to_vec()).await,
        ),
    ]);

    tokio::time::timeout(MINUTE, async {
        while !expected.is_empty() {
            let Some(message) = advisories.next().await else {
                panic!("advisory subscription ended");
            };
            let advisory: serde_json::Value =
                serde_json::from_slice(&message.payload).expect("advisory JSON");
            let key = (
                advisory["stream"].as_str().unwrap_or_default().to_owned(),
                advisory["consumer"].as_str().unwrap_or_default().to_owned(),
                advisory["stream_seq"].as_u64().unwrap_or_default(),
            );
            if expected.remove(&key) {
                assert_eq!(
                    advisory["deliveries"].as_u64(),
                    Some(1),
                    "terminated on first delivery: {advisory}"
                );
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("poison messages not all terminated: {expected:?}"));

    // Longer than any NAK delay: a NAKed message would be back by now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for (stream, consumer) in [
        ("DJ_DONE", subjects::RESOLVER_DONE_CONSUMER.to_owned()),
        (
            "DJ_FIRE",
            subjects::resolver_fire_consumer(Priority::DEFAULT),
        ),
        ("DJ_WORK", subjects::runner_consumer("default", normal)),
    ] {
        let info = env.consumer_info(stream, &consumer).await;
        assert_eq!(
            (info.num_pending, info.num_ack_pending, info.num_redelivered),
            (0, 0, 0),
            "{stream}/{consumer} holds nothing and redelivered nothing"
        );
    }
    assert!(
        dag_run::Entity::find()
            .all(&env.db)
            .await
            .expect("query runs")
            .is_empty(),
        "poison created no run"
    );

    // The resolver and runner keep working.
    env.run_to_end("pair", RunStatus::Success, MINUTE).await;
});

/// The resolver creates a batch of fires' runs in one transaction; a fire
/// the database refuses (PostgreSQL enforces the 128-character `dedup_key`,
/// SQLite does not) must not hold back the fires that came with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fire_the_database_refuses_holds_back_no_other() {
    let env = crate::harness::TestEnv::new(crate::harness::Backend::Postgres).await;
    env.apply(PAIR).await;
    let dag_id = env.dag_id("pair").await;
    // Published before any resolver runs, so they arrive together.
    let mut refused = env.manual_fire("pair").await;
    refused.dedup_key = "k".repeat(200);
    env.bus
        .publish_fire(&refused)
        .await
        .expect("publish the refused fire");
    let mut keys = Vec::new();
    for _ in 0..5 {
        let fire = env.manual_fire("pair").await;
        env.bus.publish_fire(&fire).await.expect("publish fire");
        keys.push(fire.dedup_key);
    }
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("runner-1", &["default"], 4).await;
    for key in &keys {
        let run = env.wait_run(key, MINUTE).await;
        assert_eq!(
            run.status,
            RunStatus::Success,
            "{}",
            env.describe_run(&run).await
        );
    }
    let runs = env.runs_of(dag_id).await;
    assert_eq!(
        runs.len(),
        keys.len(),
        "only the accepted fires ran: {runs:?}"
    );
}
