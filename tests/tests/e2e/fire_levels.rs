//! Fire levels (docs/ARCHITECTURE.md "Priorities"): a resolver turns the
//! fires of the highest level into runs first, and an installation from
//! before fire levels keeps the fires it had.

use std::time::Duration;

use datajump_shared::entities::dag_run;
use datajump_shared::messages::Message;
use datajump_shared::subjects::{self, Priority};
use sea_orm::{EntityTrait, PaginatorTrait, QueryOrder};

use crate::harness::dj;

const TIMEOUT: Duration = Duration::from_secs(120);

both_dbs!(
    an_urgent_fire_becomes_a_run_before_a_backlog_of_others,
    |env| async move {
        env.apply("name: bulk\ntasks:\n  - { name: t, command: 'true' }\n")
            .await;
        env.apply("name: urgent\npriority: 10\ntasks:\n  - { name: t, command: 'true' }\n")
            .await;
        const BACKLOG: usize = 3_000;
        for _ in 0..BACKLOG {
            let fire = env.manual_fire("bulk").await;
            env.bus
                .publish_fire(&fire)
                .await
                .expect("publish a bulk fire");
        }
        // The resolver is working through the backlog, with the next
        // fires of it buffered, when the urgent one comes.
        let _resolver = env.spawn_resolver().await;
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let made_before = loop {
            let made = dag_run::Entity::find()
                .count(&env.db)
                .await
                .expect("count the runs");
            if made >= 300 {
                break usize::try_from(made).expect("a count");
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the resolver made only {made} of the backlog's runs in {TIMEOUT:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let mut urgent = env.manual_fire("urgent").await;
        urgent.priority = Priority::HIGHEST;
        env.bus
            .publish_fire(&urgent)
            .await
            .expect("publish the urgent fire");

        env.wait_run_created(&urgent.dedup_key, TIMEOUT).await;
        env.wait_fires_idle(TIMEOUT).await;
        let made: Vec<String> = dag_run::Entity::find()
            .order_by_asc(dag_run::Column::Id)
            .all(&env.db)
            .await
            .expect("read the runs")
            .into_iter()
            .map(|run| run.dedup_key)
            .collect();
        assert_eq!(made.len(), BACKLOG + 1, "every fire made its run");
        let place = made
            .iter()
            .position(|key| *key == urgent.dedup_key)
            .expect("the urgent run");
        // First come, first served, it would wait for the whole backlog;
        // it waits only for the batch being committed when it came and
        // the one after (and a batch either side of the count).
        assert!(
            place < made_before + 4 * datajump_resolver::FIRE_BATCH,
            "{made_before} runs were made before the urgent fire came, and it was made {place}th of {}",
            BACKLOG + 1
        );
    }
);

both_dbs!(
    an_installation_from_before_fire_levels_keeps_its_fires,
    |env| async move {
        env.apply("name: old\ntasks:\n  - { name: t, command: 'true' }\n")
            .await;
        let js = env.bus.js().clone();
        // The fire stream and consumer as releases before levels made them.
        let stream = dj().stream(subjects::Stream::Fire);
        let mut config = js
            .get_stream(&stream)
            .await
            .expect("the fire stream")
            .cached_info()
            .config
            .clone();
        js.delete_stream(&stream)
            .await
            .expect("drop the new stream");
        config.subjects = vec![dj().legacy_fire()];
        js.create_stream(config).await.expect("an old fire stream");
        js.get_stream(&stream)
            .await
            .expect("the old stream")
            .create_consumer(datajump_nats::consumer_config(
                subjects::LEGACY_RESOLVER_FIRE_CONSUMER,
                &dj().legacy_fire(),
                false,
            ))
            .await
            .expect("the old consumer");
        // A fire of the old form: on `dj.fire.<dag_id>`, with no level in it.
        let waiting = env.manual_fire("old").await;
        let mut old_form: serde_json::Value =
            serde_json::from_slice(&waiting.encode()).expect("a fire is JSON");
        old_form
            .as_object_mut()
            .expect("an object")
            .remove("priority");
        js.publish(
            format!("{}.fire.{}", dj(), waiting.dag_id),
            serde_json::to_vec(&old_form).expect("JSON").into(),
        )
        .await
        .expect("publish an old fire")
        .await
        .expect("stored");

        // What every role does at start.
        let drift = datajump_nats::ensure_topology(&js, &dj(), datajump_nats::Replicas::AUTO)
            .await
            .expect("the topology upgraded");
        assert!(drift.is_empty(), "nothing left different: {drift:?}");
        let subjects_now = js
            .get_stream(&stream)
            .await
            .expect("the fire stream")
            .cached_info()
            .config
            .subjects
            .clone();
        assert_eq!(subjects_now, [dj().stream_subjects(subjects::Stream::Fire)]);

        let _resolver = env.spawn_resolver().await;
        env.wait_run_created(&waiting.dedup_key, TIMEOUT).await;
        let new_form = env.trigger("old").await;
        env.wait_run_created(&new_form, TIMEOUT).await;
        env.wait_consumer_idle(&stream, subjects::LEGACY_RESOLVER_FIRE_CONSUMER, TIMEOUT)
            .await;
        env.wait_fires_idle(TIMEOUT).await;
        let stored = js
            .get_stream(&stream)
            .await
            .expect("the fire stream")
            .info()
            .await
            .expect("its state")
            .state
            .messages;
        assert_eq!(stored, 0, "both fires were taken off the work queue");
    }
);
