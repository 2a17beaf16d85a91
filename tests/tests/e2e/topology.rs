//! `ensure_topology`: creates what is missing, reports drift in what exists
//! and never changes it, and is safe to call from many processes at once.

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, stream};
use datajump_shared::subjects;

use crate::harness::{NatsServer, dj};

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
            datajump_nats::ensure_topology(
                &jetstream::new(client),
                &dj(),
                datajump_nats::Replicas::AUTO,
            )
            .await
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
    for name in ["DJ_FIRE", "DJ_EVENT", "DJ_WORK", "DJ_DONE"] {
        js.get_stream(name)
            .await
            .unwrap_or_else(|e| panic!("stream {name}: {e}"));
    }
    for (stream, consumer) in [
        ("DJ_FIRE", "resolver-fire-p10"),
        ("DJ_FIRE", "resolver-fire-p1"),
        ("DJ_DONE", subjects::RESOLVER_DONE_CONSUMER),
        ("DJ_EVENT", subjects::RESOLVER_EVENT_CONSUMER),
        ("DJ_WORK", "runner-default-p10"),
        ("DJ_WORK", "runner-default-p1"),
    ] {
        datajump_nats::pull_consumer(&js, stream, consumer)
            .await
            .unwrap_or_else(|e| panic!("consumer {stream}/{consumer}: {e}"));
    }
    datajump_nats::key_value(&js, "dj_ticker")
        .await
        .expect("dj_ticker");
    let runners = datajump_nats::key_value(&js, "dj_runners")
        .await
        .expect("dj_runners");
    runners
        .put("probe", "x".into())
        .await
        .expect("KV put works on this server");
    js.get_object_store("dj_logs").await.expect("dj_logs");
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
            name: "DJ_WORK".to_owned(),
            subjects: vec!["dj.work.*.*".to_owned()],
            retention: stream::RetentionPolicy::WorkQueue,
            duplicate_window: Duration::from_secs(30),
            ..Default::default()
        })
        .await
        .expect("create DJ_WORK");
    work.create_consumer(pull::Config {
        durable_name: Some("runner-default-p10".to_owned()),
        filter_subject: "dj.work.default.p10".to_owned(),
        max_deliver: 5,
        ..Default::default()
    })
    .await
    .expect("create consumer");

    let drift = datajump_nats::ensure_topology(&js, &dj(), datajump_nats::Replicas::AUTO)
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
            .any(|d| d.starts_with("DJ_WORK/runner-default-p10: max_deliver")),
        "max_deliver drift reported: {text:?}"
    );
    assert_eq!(drift.len(), 2, "only the two differences: {text:?}");

    let mut work = js.get_stream("DJ_WORK").await.expect("DJ_WORK");
    let info = work.info().await.expect("info");
    assert_eq!(
        info.config.duplicate_window,
        Duration::from_secs(30),
        "left unchanged"
    );
    let mut consumer = datajump_nats::pull_consumer(&js, "DJ_WORK", "runner-default-p10")
        .await
        .expect("consumer");
    assert_eq!(
        consumer.info().await.expect("info").config.max_deliver,
        5,
        "left unchanged"
    );
}

/// A newcomer's nats-server started without `-js`: every role and `datajump
/// up` stop at once with the fix in the message, not with a bare "no
/// responders".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_jetstream_is_refused_with_the_fix() {
    let env = crate::harness::TestEnv::new(crate::harness::Backend::Sqlite).await;
    let port = crate::harness::free_port();
    let mut plain = std::process::Command::new(crate::harness::nats_binary())
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start nats-server without JetStream");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nats-server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("nats://127.0.0.1:{port}");
    for args in [
        &["ticker"][..],
        &["topology", "check"],
        &["up", "--api-addr", "127.0.0.1:0"],
    ] {
        let started = std::time::Instant::now();
        let (ok, stdout, stderr) =
            crate::harness::process::run_cli(&env, args, &[("DATAJUMP_NATS_URL", url.as_str())])
                .await;
        assert!(
            !ok,
            "datajump {args:?} ran on a server without JetStream: {stdout}"
        );
        assert!(
            stderr.contains("does not have JetStream enabled") && stderr.contains("-js"),
            "datajump {args:?}: {stderr}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "datajump {args:?} took {:?} to say so",
            started.elapsed()
        );
    }
    let _ = plain.kill();
    let _ = plain.wait();
}

/// `settle` returns once the consumer has processed the acknowledgement,
/// and reports one that nobody confirms instead of dropping it silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_waits_for_the_server_and_reports_an_unconfirmed_ack() {
    use futures::StreamExt;
    let server = NatsServer::start();
    let client = datajump_nats::connect(&server.url(), "settle")
        .await
        .expect("connect");
    let js = jetstream::new(client);
    let stream = js
        .create_stream(stream::Config {
            name: "ACKS".into(),
            subjects: vec!["acks.>".into()],
            ..Default::default()
        })
        .await
        .expect("stream");
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("acks".into()),
            ..Default::default()
        })
        .await
        .expect("consumer");
    for n in 0..2 {
        js.publish(format!("acks.{n}"), "x".into())
            .await
            .expect("publish")
            .await
            .expect("stored");
    }
    let mut messages = consumer
        .fetch()
        .max_messages(2)
        .messages()
        .await
        .expect("fetch");
    let first = messages.next().await.expect("one").expect("message");
    let second = messages.next().await.expect("two").expect("message");

    datajump_nats::settle(&first, jetstream::AckKind::Ack)
        .await
        .expect("confirmed");
    let mut consumer = stream
        .get_consumer::<pull::Config>("acks")
        .await
        .expect("consumer");
    let info = consumer.info().await.expect("info");
    assert_eq!(info.ack_floor.stream_sequence, 1, "{info:?}");
    assert_eq!(info.num_ack_pending, 1);

    // No consumer left to answer: the ack cannot be confirmed, and says so.
    stream
        .delete_consumer("acks")
        .await
        .expect("delete consumer");
    let error = datajump_nats::settle(&second, jetstream::AckKind::Ack)
        .await
        .expect_err("nobody confirms")
        .to_string();
    assert!(error.contains("not confirmed after 3 tries"), "{error}");
}
