//! `ensure_topology`: creates what is missing, reports drift in what exists
//! and never changes it, and is safe to call from many processes at once.

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, stream};
use datajump_shared::subjects;

use crate::harness::NatsServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_everything_concurrently() {
    let server = NatsServer::start();
    let mut calls = Vec::new();
    for i in 0..4 {
        let url = server.url();
        calls.push(tokio::spawn(async move {
            let client = datajump_nats::connect(&url, &format!("topology-{i}"))
                .await
                .expect("connect");
            datajump_nats::ensure_topology(&jetstream::new(client)).await
        }));
    }
    for call in calls {
        let drift = call.await.expect("join").expect("ensure_topology");
        assert!(drift.is_empty(), "fresh server has no drift: {drift:?}");
    }
    let client = datajump_nats::connect(&server.url(), "check")
        .await
        .expect("connect");
    let js = jetstream::new(client);
    for name in [
        subjects::FIRE_STREAM,
        subjects::EVENT_STREAM,
        subjects::WORK_STREAM,
        subjects::DONE_STREAM,
    ] {
        js.get_stream(name)
            .await
            .unwrap_or_else(|e| panic!("stream {name}: {e}"));
    }
    for (stream, consumer) in [
        (subjects::FIRE_STREAM, subjects::RESOLVER_FIRE_CONSUMER),
        (subjects::DONE_STREAM, subjects::RESOLVER_DONE_CONSUMER),
        (subjects::EVENT_STREAM, subjects::RESOLVER_EVENT_CONSUMER),
        (subjects::WORK_STREAM, "runner-default-high"),
        (subjects::WORK_STREAM, "runner-default-low"),
    ] {
        datajump_nats::pull_consumer(&js, stream, consumer)
            .await
            .unwrap_or_else(|e| panic!("consumer {stream}/{consumer}: {e}"));
    }
    datajump_nats::key_value(&js, subjects::TICKER_BUCKET)
        .await
        .expect("dj_ticker");
    let runners = datajump_nats::key_value(&js, subjects::RUNNERS_BUCKET)
        .await
        .expect("dj_runners");
    runners
        .put("probe", "x".into())
        .await
        .expect("KV put works on this server");
    js.get_object_store(subjects::LOGS_BUCKET)
        .await
        .expect("dj_logs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn drift_is_reported_and_left_alone() {
    let server = NatsServer::start();
    let client = datajump_nats::connect(&server.url(), "operator")
        .await
        .expect("connect");
    let js = jetstream::new(client);
    // An operator created DJ_WORK by hand, with a short duplicate window, and
    // a work consumer that gives up after 5 deliveries.
    let work = js
        .create_stream(stream::Config {
            name: subjects::WORK_STREAM.to_owned(),
            subjects: vec![subjects::WORK_ALL.to_owned()],
            retention: stream::RetentionPolicy::WorkQueue,
            duplicate_window: Duration::from_secs(30),
            ..Default::default()
        })
        .await
        .expect("create DJ_WORK");
    work.create_consumer(pull::Config {
        durable_name: Some("runner-default-high".to_owned()),
        filter_subject: "dj.work.default.high".to_owned(),
        max_deliver: 5,
        ..Default::default()
    })
    .await
    .expect("create consumer");

    let drift = datajump_nats::ensure_topology(&js)
        .await
        .expect("ensure_topology");
    let text: Vec<String> = drift.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|d| d.starts_with("DJ_WORK: duplicate_window")),
        "duplicate window drift reported: {text:?}"
    );
    assert!(
        text.iter()
            .any(|d| d.starts_with("DJ_WORK/runner-default-high: max_deliver")),
        "max_deliver drift reported: {text:?}"
    );
    assert_eq!(drift.len(), 2, "only the two differences: {text:?}");

    let mut work = js.get_stream(subjects::WORK_STREAM).await.expect("DJ_WORK");
    let info = work.info().await.expect("info");
    assert_eq!(
        info.config.duplicate_window,
        Duration::from_secs(30),
        "left unchanged"
    );
    let mut consumer =
        datajump_nats::pull_consumer(&js, subjects::WORK_STREAM, "runner-default-high")
            .await
            .expect("consumer");
    assert_eq!(
        consumer.info().await.expect("info").config.max_deliver,
        5,
        "left unchanged"
    );
}
