//! DataJump on a three-node NATS JetStream cluster (issue #22): streams,
//! buckets and the object store kept in three copies, scaled only when an
//! operator asks, and runs that finish soundly while nodes are lost.
//!
//! Run with the current nats-server only (scripts/test.sh): 2.9's R3
//! streams have known recovery bugs (docs/ARCHITECTURE.md "Testing").

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream;
use datajump_shared::RunStatus;
use datajump_shared::subjects::{Namespace, Stream};
use nix::sys::signal::Signal;

use crate::faults::{
    TWO_MINUTES, assert_run_sound, assert_side_effects_once, count_lines, layered_dag,
};
use crate::harness::process::{
    Process, run_cli, start_resolver, start_runner, start_ticker, wait_file_lines,
};
use crate::harness::{Backend, TestEnv, dj};

/// Every stream behind an installation's topology: its own streams, its
/// three buckets' and its log store's.
fn streams_of(names: &Namespace) -> Vec<String> {
    let mut streams: Vec<String> = Stream::ALL
        .into_iter()
        .map(|stream| names.stream(stream))
        .collect();
    streams.push(format!("KV_{}", names.ticker_bucket()));
    streams.push(format!("KV_{}", names.runners_bucket()));
    streams.push(format!("KV_{}", names.resolvers_bucket()));
    streams.push(format!("OBJ_{}", names.logs_bucket()));
    streams
}

/// Each stream's configured copies and the peers its leader reports.
async fn copies(env: &TestEnv, names: &Namespace) -> Vec<(String, usize, usize)> {
    let js = jetstream::new(env.nats.clone());
    let mut found = Vec::new();
    for name in streams_of(names) {
        let mut stream = js
            .get_stream(&name)
            .await
            .unwrap_or_else(|e| panic!("stream {name}: {e}"));
        let info = stream.info().await.expect("stream info");
        let peers = info.cluster.as_ref().map_or(0, |c| c.replicas.len());
        found.push((name, info.config.num_replicas, peers));
    }
    found
}

/// `auto` replicas are three on a three-node cluster; an installation made
/// with one copy (as on a single server before the cluster grew) is
/// reported by `topology check` and left alone by roles, and
/// `topology apply --replicas 3` scales every stream, bucket and the log
/// store, their consumers following.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streams_have_three_copies_and_one_copy_is_scaled_only_when_asked() {
    let env = TestEnv::on_cluster(Backend::Sqlite).await;
    for (stream, replicas, peers) in copies(&env, &dj()).await {
        assert_eq!((replicas, peers), (3, 2), "{stream}: copies and followers");
    }

    let grown: Namespace = "grown".parse().expect("prefix");
    let with_prefix = |args: &[&'static str]| {
        let mut all = vec!["--nats-prefix", "grown"];
        all.extend_from_slice(args);
        all
    };
    let (ok, _, err) = run_cli(
        &env,
        &with_prefix(&["--nats-replicas", "1", "topology", "apply"]),
        &[],
    )
    .await;
    assert!(ok, "{err}");
    for (stream, replicas, _) in copies(&env, &grown).await {
        assert_eq!(replicas, 1, "{stream} made with --nats-replicas 1");
    }
    // A role's start creates what is missing and changes nothing existing.
    let (ok, out, err) = run_cli(&env, &with_prefix(&["topology", "apply"]), &[]).await;
    assert!(ok, "{err}");
    assert!(out.contains("num_replicas is 1, expected 3"), "{out}");
    let (ok, out, _) = run_cli(&env, &with_prefix(&["topology", "check"]), &[]).await;
    assert!(!ok, "check fails on drift: {out}");
    for stream in streams_of(&grown) {
        assert!(
            out.lines()
                .any(|line| line.contains(&stream) && line.contains("topology apply --replicas 3")),
            "{stream} not reported with its fix:\n{out}"
        );
    }

    let (ok, out, err) = run_cli(
        &env,
        &with_prefix(&["topology", "apply", "--replicas", "3"]),
        &[],
    )
    .await;
    assert!(ok, "{err}");
    for stream in streams_of(&grown) {
        assert!(
            out.contains(&format!("scaled stream {stream} from 1 to 3 replicas")),
            "{stream}:\n{out}"
        );
    }
    // The followers are placed and caught up a moment after the update.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found = copies(&env, &grown).await;
        if found
            .iter()
            .all(|(_, replicas, peers)| (*replicas, *peers) == (3, 2))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not scaled: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let js = jetstream::new(env.nats.clone());
    let mut consumer = js
        .get_stream(grown.stream(Stream::Work))
        .await
        .expect("work stream")
        .get_consumer::<jetstream::consumer::pull::Config>("runner-default-p5")
        .await
        .expect("a work consumer");
    loop {
        let info = consumer.info().await.expect("consumer info").clone();
        let followers = info.cluster.as_ref().map_or(0, |c| c.replicas.len());
        if (info.config.num_replicas, followers) == (3, 2) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the consumer follows its stream: {} copies, {:?}",
            info.config.num_replicas,
            info.cluster
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (ok, out, err) = run_cli(&env, &with_prefix(&["topology", "check"]), &[]).await;
    assert!(ok, "{out}{err}");
}

/// A layered DAG of `layers` × 5 shell tasks of `sleep 0.4` and a small
/// diamond applied, two tickers, two resolvers and two 3-slot runners
/// started as processes on the cluster, and a run of the layers triggered:
/// (side-effect file, roles, run key).
async fn start_on_cluster(env: &TestEnv, layers: usize) -> (PathBuf, Vec<Process>, String) {
    let side = env.path("side");
    env.apply(&layered_dag("layers", layers, 5, "sleep 0.4; ", &side))
        .await;
    env.apply(AFTERWARDS).await;
    let roles = vec![
        start_ticker(env, "ticker-1").await,
        start_ticker(env, "ticker-2").await,
        start_resolver(env, "resolver-1").await,
        start_resolver(env, "resolver-2").await,
        start_runner(env, "runner-1", 3, &[]).await,
        start_runner(env, "runner-2", 3, &[]).await,
    ];
    let key = env.trigger("layers").await;
    (side, roles, key)
}

/// A run after the cluster's trouble: a diamond, so that a release, a
/// fan-out and a join each go through the recovered streams.
const AFTERWARDS: &str = "name: afterwards\ntasks:\n  - { name: a, command: 'true' }\n  - { name: b, command: 'true', depends_on: [a] }\n  - { name: c, command: 'true', depends_on: [a] }\n  - { name: d, command: 'true', depends_on: [b, c] }\n";

/// The run of [`start_on_cluster`] ends SUCCESS with each of its tasks run
/// once, the roles are alive, and a new run still goes through.
async fn assert_cluster_run_done(
    env: &TestEnv,
    key: &str,
    side: &Path,
    tasks: usize,
    roles: &mut [Process],
) {
    let run = env.wait_run(key, TWO_MINUTES).await;
    let successes = assert_run_sound(env, &run, RunStatus::Success).await;
    assert_eq!(successes.len(), tasks);
    let names: Vec<String> = successes.keys().cloned().collect();
    assert_side_effects_once(side, names.iter().map(String::as_str));
    assert_eq!(count_lines(side).values().sum::<usize>(), tasks);
    let again = env.trigger("afterwards").await;
    let run = env.wait_run(&again, TWO_MINUTES).await;
    assert_eq!(
        assert_run_sound(env, &run, RunStatus::Success).await.len(),
        4
    );
    for role in roles {
        role.assert_running();
    }
}

/// `kill -9` of the node leading the work stream while a 40-task DAG runs
/// under two tickers, two resolvers and two runners: the other two nodes
/// elect a new leader, every role reconnects, and the run ends SUCCESS with
/// each task run once. The node comes back and the system takes new work.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_survives_the_loss_of_the_work_stream_leader() {
    let mut env = TestEnv::on_cluster(Backend::Postgres).await;
    let (side, mut roles, key) = start_on_cluster(&env, 8).await;
    wait_file_lines(&side, 10, TWO_MINUTES).await;
    let work = dj().stream(Stream::Work);
    let leader = env
        .cluster()
        .stream_leader(&work)
        .expect("a work stream leader");
    let node = env.cluster().node(&leader);
    eprintln!("killing {leader}, the leader of {work}");
    env.cluster().kill9(node);

    let run = env.wait_run(&key, TWO_MINUTES).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    let new_leader = env.cluster().stream_leader(&work);
    assert!(
        new_leader.as_ref().is_some_and(|new| *new != leader),
        "{work} has a new leader: {new_leader:?}"
    );
    env.cluster().restart(node);
    assert_cluster_run_done(&env, &key, &side, 40, &mut roles).await;
}

/// `kill -9` of the node leading the most streams and consumers while a
/// 40-task DAG runs and a cron fires every second, under two tickers and
/// two resolvers: the run ends SUCCESS with each task once, and the cron's
/// runs are one per second, none missed while leaders moved and none
/// doubled.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_and_a_cron_survive_the_loss_of_the_busiest_node() {
    let mut env = TestEnv::on_cluster(Backend::Postgres).await;
    let (side, mut roles, key) = start_on_cluster(&env, 8).await;
    let every_second = "name: heartbeat\nschedules:\n  - cron: \"* * * * * ?\"\ntasks:\n  - { name: tick, command: \"true\" }\n";
    env.apply(every_second).await;
    let dag_id = env.dag_id("heartbeat").await;
    wait_file_lines(&side, 10, TWO_MINUTES).await;
    let busiest = env
        .cluster()
        .busiest_node()
        .expect("a node leading streams");
    let node = env.cluster().node(&busiest);
    eprintln!("killing {busiest}, the node leading the most streams and consumers");
    env.cluster().kill9(node);

    let run = env.wait_run(&key, TWO_MINUTES).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    env.cluster().restart(node);
    // Let the cron go on with every node back, then stop it and let the
    // last fires arrive.
    tokio::time::sleep(Duration::from_secs(5)).await;
    env.apply("name: heartbeat\ntasks:\n  - { name: tick, command: \"true\" }\n")
        .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut times: Vec<i64> = env
        .runs_of(dag_id)
        .await
        .iter()
        .map(|run| run.logical_time.timestamp())
        .collect();
    times.sort_unstable();
    assert!(times.len() >= 10, "fires: {times:?}");
    for pair in times.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            1,
            "one run per second, none missed or doubled, across the node's loss: {times:?}"
        );
    }
    assert_cluster_run_done(&env, &key, &side, 40, &mut roles).await;
}

/// Every node restarted in turn while a run goes on, each waited for until
/// the cluster is healthy before the next goes down (the rule for a
/// rolling upgrade): the run ends SUCCESS with each task once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_survives_a_rolling_restart_of_every_node() {
    let mut env = TestEnv::on_cluster(Backend::Postgres).await;
    let (side, mut roles, key) = start_on_cluster(&env, 40).await;
    for (i, node) in ["n0", "n1", "n2"].into_iter().enumerate() {
        wait_file_lines(&side, 10 * (i + 1), TWO_MINUTES).await;
        let run = env.run_by_key(&key).await.expect("the run");
        assert_eq!(run.status, RunStatus::Running, "restart of {node} mid-run");
        let node = env.cluster().node(node);
        env.cluster().restart(node);
    }
    assert_cluster_run_done(&env, &key, &side, 200, &mut roles).await;
}

/// The work stream's leader hung (SIGSTOP) for 20 s mid-run, then resumed:
/// the others elect a new leader meanwhile, the hung node's stale view is
/// discarded when it comes back, and no task runs twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_survives_a_hung_node() {
    let mut env = TestEnv::on_cluster(Backend::Postgres).await;
    let (side, mut roles, key) = start_on_cluster(&env, 40).await;
    wait_file_lines(&side, 10, TWO_MINUTES).await;
    let work = dj().stream(Stream::Work);
    let leader = env
        .cluster()
        .stream_leader(&work)
        .expect("a work stream leader");
    let node = env.cluster().node(&leader);
    eprintln!("stopping {leader}, the leader of {work}, for 20 s");
    env.cluster().signal(node, Signal::SIGSTOP);
    tokio::time::sleep(Duration::from_secs(20)).await;
    env.cluster().signal(node, Signal::SIGCONT);
    env.cluster().wait_healthy();
    assert_cluster_run_done(&env, &key, &side, 200, &mut roles).await;
}
