//! Fault tests (issue #4): the roles run as real `datajump` processes that the
//! tests kill with SIGKILL, and nats-server and PostgreSQL are restarted under
//! them. PostgreSQL only, one nats-server version (docs/ARCHITECTURE.md, "Testing").
//!
//! Each test checks what a user would: every task instance of the run ends
//! terminal, the run ends as it should, no task instance has more than one
//! SUCCESS execution, and each shell task's side effect (a line appended to a
//! file) happened once. The processes are the real CLI
//! (`datajump-under-test`, see `tests/src/bin`), killed when the test ends,
//! with their output in files that are printed when the test fails
//! ([`crate::harness::process`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use datajump_shared::entities::{dag_run, schedule};
use datajump_shared::subjects::{self, Priority};
use datajump_shared::{RunStatus, TaskStatus};
use futures::StreamExt;
use sea_orm::EntityTrait;

use crate::harness::pg_cluster::PgCluster;
use crate::harness::process::{
    Process, group_members, is_worker_of, start_resolver, start_runner, start_ticker,
    wait_file_lines, wait_process_gone,
};
use crate::harness::{Backend, TestEnv, dj, shell_path};

/// Lines of the side-effect file `path`, counted.
pub(crate) fn count_lines(path: &Path) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        *counts.entry(line.trim().to_owned()).or_default() += 1;
    }
    counts
}

/// What every fault test asserts of a finished run: it ended `expected`,
/// every task instance is terminal, and none has more than one SUCCESS
/// execution. Returns the SUCCESS executions per task name.
pub(crate) async fn assert_run_sound(
    env: &TestEnv,
    run: &dag_run::Model,
    expected: RunStatus,
) -> BTreeMap<String, usize> {
    let detail = env.describe_run(run).await;
    assert_eq!(run.status, expected, "{detail}");
    assert_eq!(run.pending_instances, 0, "{detail}");
    let instances = env.instances(run.id).await;
    for row in &instances {
        assert!(
            row.status.is_terminal(),
            "task {} is {} in a finished run: {detail}",
            row.task_name,
            row.status
        );
    }
    let mut successes: BTreeMap<String, usize> = instances
        .iter()
        .map(|row| (row.task_name.clone(), 0))
        .collect();
    for (name, executions) in env.executions_by_name(run.id).await {
        let count = executions
            .iter()
            .filter(|e| e.status == TaskStatus::Success)
            .count();
        assert!(
            count <= 1,
            "task {name} succeeded {count} times: {executions:?}"
        );
        successes.insert(name, count);
    }
    successes
}

/// Asserts the shell tasks `names` each left their side effect exactly once.
pub(crate) fn assert_side_effects_once<'a>(path: &Path, names: impl IntoIterator<Item = &'a str>) {
    let counts = count_lines(path);
    for name in names {
        assert_eq!(
            counts.get(name).copied(),
            Some(1),
            "side effect of {name} in {}: {counts:?}",
            path.display()
        );
    }
}

pub(crate) const TWO_MINUTES: Duration = Duration::from_secs(120);
/// How long work may stall after a restart: a message lost with a crash is
/// redelivered after the consumers' 30 s ack wait, and work committed but
/// never published is republished by the deadline scan after 60 s.
pub(crate) const RECOVERY: Duration = Duration::from_secs(100);

/// `kill -9` a runner while it runs a task: the task's process group dies
/// with it (no orphan), and another runner takes the task over once the dead
/// runner's heartbeat expires and the work message is redelivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runner_killed_mid_task_is_taken_over() {
    let env = TestEnv::new(Backend::Postgres).await;
    let side = env.path("side");
    let pids = env.path("pids");
    std::fs::create_dir_all(&pids).expect("pid directory");
    env.apply(&format!(
        r#"
name: long
tasks:
  - name: slow
    command: |
      echo "$$" > {pids}/$DJ_ATTEMPT
      echo "$PPID" >> {pids}/$DJ_ATTEMPT
      sleep 8 &
      echo "$!" >> {pids}/$DJ_ATTEMPT
      wait
      echo slow >> {side}
  - {{ name: after, command: "echo after >> {side}", depends_on: [slow] }}
"#,
        pids = pids.display(),
        side = shell_path(&side),
    ))
    .await;
    let _ticker = start_ticker(&env, "ticker").await;
    let _resolver = start_resolver(&env, "resolver").await;
    // runner-1's temporary files are its own, to see that none is left.
    let first_tmp = env.path("runner-1-tmp");
    std::fs::create_dir_all(&first_tmp).expect("runner-1's TMPDIR");
    let first_tmp_text = first_tmp.display().to_string();
    let mut first = start_runner(&env, "runner-1", 2, &[("TMPDIR", &first_tmp_text)]).await;

    let key = env.trigger("long").await;
    // The script, its guard (the script's parent and process group leader)
    // and the background sleep.
    let started = wait_file_lines(&pids.join("0"), 3, Duration::from_secs(60)).await;
    let [script, guard, sleep] = [0, 1, 2].map(|i| {
        started[i]
            .trim()
            .parse::<u32>()
            .expect("a pid in the pid file")
    });
    let run = env.run_by_key(&key).await.expect("the run");
    let slow = env.instances_by_name(run.id).await["slow"].clone();
    assert_eq!(slow.status, TaskStatus::Running);
    assert!(
        is_worker_of(slow.owner.as_deref().unwrap_or_default(), first.pid()),
        "slow is owned by runner-1: {slow:?}"
    );
    assert!(
        !group_members(guard).is_empty(),
        "the task's group is alive"
    );

    let _second = start_runner(&env, "runner-2", 2, &[]).await;
    let second_pid = _second.pid();
    first.kill9();
    for (pid, what) in [
        (guard, "the task's guard"),
        (script, "the task's script"),
        (sleep, "the task's background sleep"),
    ] {
        wait_process_gone(pid, what, Duration::from_secs(5)).await;
    }
    assert_eq!(
        group_members(guard),
        Vec::<u32>::new(),
        "processes left in the killed task's process group"
    );
    let left: Vec<_> = std::fs::read_dir(&first_tmp)
        .expect("runner-1's TMPDIR")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "the killed task's script file is gone: {left:?}"
    );

    let run = env.wait_run(&key, TWO_MINUTES).await;
    let successes = assert_run_sound(&env, &run, RunStatus::Success).await;
    assert_eq!(successes["slow"], 1);
    assert_side_effects_once(&side, ["slow", "after"]);
    let executions = env.executions_by_name(run.id).await;
    let slow_runs = &executions["slow"];
    assert_eq!(
        slow_runs.len(),
        2,
        "the lost attempt and the retry: {slow_runs:?}"
    );
    assert_eq!(slow_runs[0].status, TaskStatus::Failed);
    assert_eq!(
        slow_runs[0].error_msg.as_deref(),
        Some(datajump_engine::RUNNER_LOST)
    );
    assert!(is_worker_of(&slow_runs[0].worker, first.pid()));
    assert_eq!(slow_runs[1].status, TaskStatus::Success);
    assert!(
        is_worker_of(&slow_runs[1].worker, second_pid),
        "runner-2 finished it: {slow_runs:?}"
    );
}

/// A TCP proxy to NATS that the test can cut: a runner reaching NATS
/// through it is alive (its database and processes fine) but cannot renew
/// its heartbeat, as when the network splits it from NATS or its runtime
/// is stuck.
struct NatsLink {
    url: String,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl NatsLink {
    async fn to(upstream: String) -> NatsLink {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the link");
        let url = format!("nats://{}", listener.local_addr().expect("address"));
        let target = upstream.trim_start_matches("nats://").to_owned();
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (cut_in, open_in) = (cut.clone(), open.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if cut_in.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(mut server) = tokio::net::TcpStream::connect(&target).await else {
                    continue;
                };
                let copy = tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                open_in.lock().expect("links").push(copy.abort_handle());
            }
        });
        NatsLink {
            url,
            cut,
            open,
            accept,
        }
    }

    /// Drops every connection through the link and refuses new ones.
    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        for copy in self.open.lock().expect("links").drain(..) {
            copy.abort();
        }
    }
}

impl Drop for NatsLink {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// A runner alive but cut off from NATS cannot renew its heartbeat, so
/// another runner takes its task over; its lease watchdog must have killed
/// the task's processes by then, or the task runs twice at once (a `sleep`
/// task with no retries did, before the lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runner_cut_off_from_nats_stops_its_tasks_before_another_takes_them_over() {
    let env = TestEnv::new(Backend::Postgres).await;
    let dir = env.path("attempts");
    std::fs::create_dir_all(&dir).expect("attempt directory");
    // Each attempt notes any earlier attempt's script still alive (a
    // zombie, killed but not yet reaped by whoever adopted it, runs
    // nothing), then records its own; the first one sleeps past the
    // takeover.
    env.apply(&format!(
        r#"
name: once_at_a_time
tasks:
  - name: slow
    retry: {{ max: 0 }}
    command: |
      for pid in $(cat {dir}/pids 2>/dev/null); do
        state=$(sed -n 's/^State:[[:space:]]*//p' /proc/$pid/status 2>/dev/null)
        case "$state" in ""|Z*) ;; *) echo "$pid $state" >> {dir}/overlaps ;; esac
      done
      echo "$$" >> {dir}/pids
      if [ "$DJ_ATTEMPT" = 0 ]; then sleep 60; fi
"#,
        dir = shell_path(&dir),
    ))
    .await;
    let _resolver = env.spawn_resolver().await;
    // Its deadline scan republishes the work the cut-off runner could not.
    let _ticker = env.spawn_ticker().await;
    let link = NatsLink::to(env.nats_url()).await;
    let _cut_off = env
        .spawn_runner_through("cut-off", &["default"], 2, &link.url)
        .await;
    let key = env.trigger("once_at_a_time").await;
    let first = wait_file_lines(&dir.join("pids"), 1, Duration::from_secs(60)).await;
    let first_pid: i32 = first[0].trim().parse().expect("a pid");
    let _healthy = env.spawn_runner("healthy", &["default"], 2).await;
    link.cut();

    let run = env.wait_run(&key, TWO_MINUTES).await;
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{}",
        env.describe_run(&run).await
    );
    let overlaps = std::fs::read_to_string(dir.join("overlaps")).unwrap_or_default();
    assert!(
        overlaps.is_empty(),
        "the second attempt started while the first one's process {first_pid} still ran: {overlaps}"
    );
    let executions = env.executions_by_name(run.id).await;
    let slow = &executions["slow"];
    assert_eq!(slow.len(), 2, "{slow:?}");
    assert!(slow[0].worker.starts_with("cut-off"), "{slow:?}");
    assert!(
        slow[0]
            .error_msg
            .as_deref()
            .is_some_and(|why| why.contains("renewed no heartbeat")),
        "{slow:?}"
    );
    assert!(slow[1].worker.starts_with("healthy"), "{slow:?}");
    assert_eq!(slow[1].status, TaskStatus::Success);
}

/// A task whose runner dies three times fails for good rather than taking
/// runner after runner down with it; its own retry budget is not used.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_that_loses_its_runner_three_times_fails() {
    let env = TestEnv::new(Backend::Postgres).await;
    env.apply(
        r#"
name: deadly
tasks:
  - { name: slow, command: "sleep 300", retry: { max: 5 } }
"#,
    )
    .await;
    let _ticker = start_ticker(&env, "ticker").await;
    let _resolver = start_resolver(&env, "resolver").await;
    let mut runner = start_runner(&env, "runner-1", 1, &[]).await;
    let key = env.trigger("deadly").await;
    for next in 2..=4 {
        let owned = Instant::now();
        loop {
            let run = env.run_by_key(&key).await;
            let slow = match &run {
                Some(run) => env.instances_by_name(run.id).await.remove("slow"),
                None => None,
            };
            if let Some(slow) = slow
                && slow.status == TaskStatus::Running
                && is_worker_of(slow.owner.as_deref().unwrap_or_default(), runner.pid())
            {
                break;
            }
            assert!(
                owned.elapsed() < TWO_MINUTES,
                "runner-{} never ran slow",
                next - 1
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let successor = start_runner(&env, &format!("runner-{next}"), 1, &[]).await;
        runner.kill9();
        runner = successor;
    }
    let run = env.wait_run(&key, TWO_MINUTES).await;
    assert_eq!(run.status, RunStatus::Failed);
    let slow = env.instances_by_name(run.id).await["slow"].clone();
    assert_eq!(slow.status, TaskStatus::Failed);
    assert_eq!(
        slow.reason.as_deref(),
        Some(
            format!(
                "{} {} times",
                datajump_engine::RUNNER_LOST,
                datajump_engine::MAX_RUNNER_LOST
            )
            .as_str()
        )
    );
    assert_eq!(slow.retries_used, 0, "lost runners use no retry");
    let attempts = &env.executions_by_name(run.id).await["slow"];
    assert_eq!(attempts.len(), 3, "{attempts:?}");
    assert!(
        attempts.iter().all(|a| a.status == TaskStatus::Failed
            && a.error_msg.as_deref() == Some(datajump_engine::RUNNER_LOST)),
        "{attempts:?}"
    );
}

/// Abort a runner between committing a task's terminal state — which also
/// released its children — and publishing their work (the runner's
/// test-only switch `DATAJUMP_FAULT_EXIT_AFTER_COMMIT`): the unacknowledged
/// work message is redelivered to another runner, which finds the task
/// finished and republishes its queued children's work, so they run — and
/// the task does not run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runner_dying_after_commit_still_releases_children() {
    let env = TestEnv::new(Backend::Postgres).await;
    let side = env.path("side");
    let side_word = shell_path(&side);
    env.apply(&format!(
        r#"
name: fork
tasks:
  - {{ name: a, command: "echo a >> {side_word}" }}
  - {{ name: b, command: "echo b >> {side_word}", depends_on: [a] }}
  - {{ name: c, command: "echo c >> {side_word}", depends_on: [a] }}
"#
    ))
    .await;
    let _ticker = start_ticker(&env, "ticker").await;
    let _resolver = start_resolver(&env, "resolver").await;
    let mut faulty = start_runner(
        &env,
        "runner-faulty",
        2,
        &[("DATAJUMP_FAULT_EXIT_AFTER_COMMIT", "1")],
    )
    .await;

    let key = env.trigger("fork").await;
    let status = faulty.wait_exit(Duration::from_secs(60)).await;
    assert_eq!(
        status.signal(),
        Some(6),
        "the runner aborted (SIGABRT) after the commit: {status}"
    );
    let run = env.run_by_key(&key).await.expect("the run");
    let before = env.instances_by_name(run.id).await;
    assert_eq!(before["a"].status, TaskStatus::Success, "a was committed");
    for child in ["b", "c"] {
        assert_eq!(
            before[child].status,
            TaskStatus::Queued,
            "{child} released in a's commit, its work not yet published"
        );
    }
    assert!(
        !env.executions_by_name(run.id).await.contains_key("b"),
        "b has not started"
    );

    let _healthy = start_runner(&env, "runner-healthy", 2, &[]).await;
    let run = env.wait_run(&key, TWO_MINUTES).await;
    let successes = assert_run_sound(&env, &run, RunStatus::Success).await;
    assert_eq!(
        successes,
        BTreeMap::from([("a".into(), 1), ("b".into(), 1), ("c".into(), 1)])
    );
    assert_side_effects_once(&side, ["a", "b", "c"]);
    assert_eq!(
        env.executions_by_name(run.id).await["a"].len(),
        1,
        "a ran once"
    );
    // The redelivered work of `a` (after ACK_WAIT) got the children going,
    // not the deadline scan, which would wait REPUBLISH_AFTER.
    let executions = env.executions_by_name(run.id).await;
    let after = env.instances_by_name(run.id).await;
    for child in ["b", "c"] {
        let queued = after[child]
            .queued_at
            .expect("a queued child has queued_at");
        let waited = executions[child][0].start_time - queued;
        assert!(
            waited < datajump_engine::REPUBLISH_AFTER,
            "{child} waited {waited} in the queue: its work came from the deadline scan"
        );
    }
}

/// Garbage bytes on `dj.fire.*`, `dj.work.*` and `dj.done.*` reach the real
/// role processes: each message is terminated on its first delivery, the
/// role's log names its subject and stream sequence, and the system keeps
/// serving (a run triggered afterwards completes).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn garbage_on_every_stream_is_terminated_and_logged() {
    let env = TestEnv::new(Backend::Postgres).await;
    let side = env.path("side");
    let side_word = shell_path(&side);
    env.apply(&format!(
        r#"
name: pair
tasks:
  - {{ name: a, command: "echo a >> {side_word}" }}
  - {{ name: b, command: "echo b >> {side_word}", depends_on: [a] }}
"#
    ))
    .await;
    let mut ticker = start_ticker(&env, "ticker").await;
    let mut resolver = start_resolver(&env, "resolver").await;
    let mut runner = start_runner(&env, "runner", 2, &[]).await;

    let mut advisories = env
        .nats
        .subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>")
        .await
        .expect("subscribe to advisories");
    env.nats.flush().await.expect("flush");

    let garbage = b"\xff\x00 not json {".to_vec();
    let dag_id = env.dag_id("pair").await;
    let mut expected = BTreeMap::new();
    for (subject, stream, consumer) in [
        (
            dj().fire(Priority::DEFAULT, dag_id),
            "DJ_FIRE",
            subjects::resolver_fire_consumer(Priority::DEFAULT),
        ),
        (
            dj().work("default", Priority::DEFAULT),
            "DJ_WORK",
            subjects::runner_consumer("default", Priority::DEFAULT),
        ),
        (
            dj().done(datajump_shared::RunId(1)),
            "DJ_DONE",
            subjects::RESOLVER_DONE_CONSUMER.to_owned(),
        ),
        (
            dj().event(1, "garbage.test"),
            "DJ_EVENT",
            subjects::RESOLVER_EVENT_CONSUMER.to_owned(),
        ),
    ] {
        let sequence = env
            .bus
            .js()
            .publish(subject.clone(), garbage.clone().into())
            .await
            .expect("publish")
            .await
            .expect("publish ack")
            .sequence;
        expected.insert((stream.to_owned(), consumer, sequence), subject);
    }
    let mut terminated = expected.clone();
    tokio::time::timeout(Duration::from_secs(60), async {
        while !terminated.is_empty() {
            let message = advisories.next().await.expect("advisory subscription");
            let advisory: serde_json::Value =
                serde_json::from_slice(&message.payload).expect("advisory JSON");
            let key = (
                advisory["stream"].as_str().unwrap_or_default().to_owned(),
                advisory["consumer"].as_str().unwrap_or_default().to_owned(),
                advisory["stream_seq"].as_u64().unwrap_or_default(),
            );
            if terminated.remove(&key).is_some() {
                assert_eq!(
                    advisory["deliveries"].as_u64(),
                    Some(1),
                    "terminated on its first delivery: {advisory}"
                );
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not terminated: {terminated:?}"));

    // The role that got each message logged its subject and stream sequence.
    for ((stream, _, sequence), subject) in &expected {
        let (role, log) = if stream == "DJ_WORK" {
            ("runner", runner.log_text())
        } else {
            ("resolver", resolver.log_text())
        };
        let logged = log.lines().any(|line| {
            line.contains("poison")
                && line.contains(subject.as_str())
                && line.contains(&format!("sequence={sequence}"))
        });
        assert!(
            logged,
            "the {role} logs the poison message on {subject} at sequence {sequence}:\n{log}"
        );
    }

    let key = env.trigger("pair").await;
    let run = env.wait_run(&key, Duration::from_secs(60)).await;
    assert_run_sound(&env, &run, RunStatus::Success).await;
    assert_side_effects_once(&side, ["a", "b"]);
    // Nothing is waiting for redelivery: a NAKed poison message would be.
    for (stream, consumer) in [
        (
            "DJ_FIRE",
            subjects::resolver_fire_consumer(Priority::DEFAULT),
        ),
        ("DJ_DONE", subjects::RESOLVER_DONE_CONSUMER.to_owned()),
        (
            "DJ_WORK",
            subjects::runner_consumer("default", Priority::DEFAULT),
        ),
        ("DJ_EVENT", subjects::RESOLVER_EVENT_CONSUMER.to_owned()),
    ] {
        env.wait_consumer_idle(stream, &consumer, Duration::from_secs(10))
            .await;
    }
    for process in [&mut ticker, &mut resolver, &mut runner] {
        process.assert_running();
    }
}

/// A DAG of `layers` × `width` shell tasks; each task after the first layer
/// joins two tasks of the layer before, and appends its name to `side`.
pub(crate) fn layered_dag(
    name: &str,
    layers: usize,
    width: usize,
    command: &str,
    side: &Path,
) -> String {
    let side = shell_path(side);
    let mut yaml = format!("name: {name}\ntasks:\n");
    for layer in 0..layers {
        for i in 0..width {
            let task = format!("t{layer:02}_{i:02}");
            let depends = if layer == 0 {
                String::new()
            } else {
                let (a, b) = (i, (i + 1) % width);
                format!(
                    ", depends_on: [t{p:02}_{a:02}, t{p:02}_{b:02}]",
                    p = layer - 1
                )
            };
            writeln!(
                yaml,
                "  - {{ name: {task}, command: \"{command}echo $DJ_TASK_NAME >> {side}\"{depends} }}"
            )
            .expect("write to a string");
        }
    }
    yaml
}

/// A random number in `0..bound` (the tests need no reproducible stream; the
/// delays they draw are printed).
fn random_below(bound: u64) -> u64 {
    let bits = uuid::Uuid::new_v4().as_u128();
    u64::try_from(bits % u128::from(bound.max(1))).unwrap_or_default()
}

/// `kill -9` the resolver again and again at random moments while a
/// 200-task DAG runs (a fresh resolver each time): what a dead resolver held
/// unacknowledged is redelivered, what it committed but never published is
/// republished by the deadline scan, and the run completes with every task
/// run exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resolver_killed_repeatedly_during_a_200_task_dag() {
    let env = TestEnv::new(Backend::Postgres).await;
    let side = env.path("side");
    // 0.8 s per task makes the run last at least 16 s (20 layers), however
    // fast the engine gets, so the kills below land while it runs.
    env.apply(&layered_dag("wide", 20, 10, "sleep 0.8; ", &side))
        .await;
    let _ticker = start_ticker(&env, "ticker").await;
    let _runner_1 = start_runner(&env, "runner-1", 8, &[]).await;
    let _runner_2 = start_runner(&env, "runner-2", 8, &[]).await;
    let mut resolver = start_resolver(&env, "resolver-0").await;

    let key = env.trigger("wide").await;
    let mut killed = Vec::new();
    let mut kills_mid_run = 0;
    for round in 1..=12 {
        let delay = Duration::from_millis(300 + random_below(2200));
        tokio::time::sleep(delay).await;
        let run = env.run_by_key(&key).await;
        if run.as_ref().is_some_and(|run| run.status.is_terminal()) {
            break;
        }
        if let Some(run) = &run {
            let done = env
                .instances(run.id)
                .await
                .iter()
                .filter(|row| row.status.is_terminal())
                .count();
            eprintln!("kill {round} after {delay:?}: {done}/200 tasks finished");
        }
        resolver.kill9();
        kills_mid_run += 1;
        killed.push(resolver);
        resolver = start_resolver(&env, &format!("resolver-{round}")).await;
    }
    assert!(
        kills_mid_run >= 5,
        "the run should still be going after 5 kills, it ended after {kills_mid_run}"
    );

    let run = env.wait_run(&key, Duration::from_secs(150)).await;
    let successes = assert_run_sound(&env, &run, RunStatus::Success).await;
    assert_eq!(successes.len(), 200);
    assert!(successes.values().all(|&n| n == 1), "{successes:?}");
    let names: Vec<String> = successes.keys().cloned().collect();
    assert_side_effects_once(&side, names.iter().map(String::as_str));
    assert_eq!(count_lines(&side).values().sum::<usize>(), 200);
    resolver.assert_running();
}

/// The restart tests' system: an 8 × 5 layered DAG of 0.3 s shell tasks,
/// a ticker, a resolver and two 3-slot runners, and a run triggered.
/// Returns the side-effect file, the role processes and the run key.
pub(crate) async fn start_layers(env: &TestEnv) -> (PathBuf, Vec<Process>, String) {
    let side = env.path("side");
    env.apply(&layered_dag("layers", 8, 5, "sleep 0.3; ", &side))
        .await;
    let roles = vec![
        start_ticker(env, "ticker").await,
        start_resolver(env, "resolver").await,
        start_runner(env, "runner-1", 3, &[]).await,
        start_runner(env, "runner-2", 3, &[]).await,
    ];
    let key = env.trigger("layers").await;
    (side, roles, key)
}

/// The run of [`start_layers`] ends SUCCESS with each of its 40 tasks run
/// once, and every role process is still alive.
pub(crate) async fn assert_layers_done(
    env: &TestEnv,
    key: &str,
    side: &Path,
    roles: &mut [Process],
) {
    let run = env.wait_run(key, TWO_MINUTES).await;
    let successes = assert_run_sound(env, &run, RunStatus::Success).await;
    assert_eq!(successes.len(), 40);
    let names: Vec<String> = successes.keys().cloned().collect();
    assert_side_effects_once(side, names.iter().map(String::as_str));
    for role in roles {
        role.assert_running();
    }
}

/// nats-server is killed and restarted (same port, same JetStream store)
/// twice in the middle of a run: every role reconnects on its own and the
/// run completes, each task once. (Before runners put a timer on their
/// fetches, a fetch whose answer was lost in the restart hung the runner's
/// fetch loop for good while its heartbeat kept it looking alive.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nats_server_restart_mid_run() {
    let mut env = TestEnv::new(Backend::Postgres).await;
    let (side, mut roles, key) = start_layers(&env).await;
    for restart in 1..=2 {
        wait_file_lines(&side, 10 * restart, RECOVERY).await;
        let run = env.run_by_key(&key).await.expect("the run");
        assert_eq!(run.status, RunStatus::Running, "restart {restart} mid-run");
        env.restart_nats(Duration::from_secs(2));
    }

    assert_layers_done(&env, &key, &side, &mut roles).await;
    // The system still takes new work after the restart.
    let again = env.trigger("layers").await;
    let run = env.wait_run(&again, TWO_MINUTES).await;
    assert_run_sound(&env, &run, RunStatus::Success).await;
}

/// Two DAGs fire every 10 seconds, one with `catchup: latest`, one with
/// `catchup: none`, both with a 2 s misfire grace. The ticker is killed after
/// a fire at T and restarted at T+23 s, so the fires at T+10 and T+20 were
/// missed: on restart `latest` publishes the one at T+20 once and `none`
/// publishes neither; both fire on time again at T+30.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ticker_killed_across_fire_times_catches_up_by_policy() {
    let env = TestEnv::new(Backend::Postgres).await;
    for policy in ["latest", "none"] {
        env.apply(&format!(
            r#"
name: catchup_{policy}
max_active_runs: 10
overlap: parallel
schedules:
  - cron: "0/10 * * * * ?"
    catchup: {policy}
    misfire_grace: 2
tasks:
  - {{ name: t, command: "true" }}
"#
        ))
        .await;
    }
    let latest = env.dag_id("catchup_latest").await;
    let none = env.dag_id("catchup_none").await;
    let _resolver = start_resolver(&env, "resolver").await;
    let _runner = start_runner(&env, "runner", 4, &[]).await;
    let mut ticker = start_ticker(&env, "ticker-1").await;

    // The first fire of both schedules, at T.
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = loop {
        let (a, b) = (env.runs_of(latest).await, env.runs_of(none).await);
        if let (Some(a), Some(b)) = (a.first(), b.first()) {
            assert_eq!(a.logical_time, b.logical_time, "same cron, same fire time");
            break a.logical_time;
        }
        assert!(Instant::now() < deadline, "no fire within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Both fires are recorded in dj_ticker (publish first, then KV).
    let kv = datajump_nats::key_value(env.bus.js(), "dj_ticker")
        .await
        .expect("dj_ticker");
    let schedules: Vec<i64> = schedule::Entity::find()
        .all(&env.db)
        .await
        .expect("query schedule")
        .into_iter()
        .map(|s| s.id)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    for schedule_id in &schedules {
        loop {
            let recorded = kv
                .get(env.bus.installation().ticker_key(*schedule_id))
                .await
                .expect("read dj_ticker")
                .and_then(|v| String::from_utf8(v.to_vec()).ok());
            if recorded == Some(first.timestamp().to_string()) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "fire at {first} not recorded: {recorded:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    ticker.kill9();
    let at = |secs: i64| first + chrono::Duration::seconds(secs);
    assert!(
        chrono::Utc::now() < at(9),
        "the ticker was killed before the next fire time {}",
        at(10)
    );

    sleep_until(at(23)).await;
    let mut ticker = start_ticker(&env, "ticker-2").await;
    assert!(
        chrono::Utc::now() < at(29),
        "the restarted ticker loaded its schedules before {} (slow machine?)",
        at(30)
    );
    sleep_until(at(33)).await;
    ticker.kill9();
    env.wait_fires_idle(Duration::from_secs(30)).await;

    let mut total_runs = 0;
    for (dag_id, expected) in [
        (latest, vec![at(0), at(20), at(30)]),
        (none, vec![at(0), at(30)]),
    ] {
        let runs = env.runs_of(dag_id).await;
        let times: Vec<_> = runs.iter().map(|run| run.logical_time).collect();
        assert_eq!(times, expected, "fire times of DAG {dag_id}");
        for run in &runs {
            let run = env.wait_run(&run.dedup_key, Duration::from_secs(60)).await;
            assert_run_sound(&env, &run, RunStatus::Success).await;
        }
        total_runs += runs.len();
    }
    // One message per fire reached the stream: nothing was published twice.
    let stored = env
        .bus
        .js()
        .get_stream("DJ_FIRE")
        .await
        .expect("fire stream")
        .info()
        .await
        .expect("stream info")
        .state
        .last_sequence;
    assert_eq!(stored, total_runs as u64, "fires stored in {}", "DJ_FIRE");
    let log = ticker.log_text();
    assert!(
        log.contains("catching up a missed fire"),
        "the restarted ticker logs the catch-up:\n{log}"
    );
}

/// Sleeps until the wall clock reaches `at`.
async fn sleep_until(at: chrono::DateTime<chrono::Utc>) {
    if let Ok(wait) = (at - chrono::Utc::now()).to_std() {
        tokio::time::sleep(wait).await;
    }
}

/// PostgreSQL crashes and comes back, three times during a run: the roles'
/// queries fail or wait while it is down, work resumes when it is back, and
/// nothing is lost or done twice. (Before the runner retried the commit of
/// an attempt's end, a crash at that moment left the task RUNNING forever.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_restart_mid_run() {
    let cluster = PgCluster::start();
    let env = TestEnv::with_database(cluster.url()).await;
    let (side, mut roles, key) = start_layers(&env).await;
    // Three crashes, each after some more tasks finished: one crash cuts
    // only the few queries in flight at that instant, so a single one would
    // often miss the interesting moments (a runner committing a task's end).
    for crash in 1..=3 {
        wait_file_lines(&side, 8 * crash, RECOVERY).await;
        let run = env.run_by_key(&key).await.expect("the run");
        assert_eq!(run.status, RunStatus::Running, "crash {crash} mid-run");
        cluster.crash_and_restart(Duration::from_secs(3));
    }

    assert_layers_done(&env, &key, &side, &mut roles).await;
}

/// Scaling runners down as an autoscaler would, 4 → 1 while a 200-task
/// DAG runs: three runners get SIGTERM one after another, each drains (its
/// running tasks finish within the drain timeout or go back to the queue)
/// and exits 0, and the last runner finishes the run with every task run
/// exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scaling_runners_down_loses_and_repeats_nothing() {
    let env = TestEnv::new(Backend::Postgres).await;
    let side = env.path("side");
    // 40 layers of 0.2 s tasks: long enough that every SIGTERM lands while
    // tasks run, short enough that drains finish them.
    env.apply(&layered_dag("scale", 40, 5, "sleep 0.2; ", &side))
        .await;
    let _ticker = start_ticker(&env, "ticker").await;
    let _resolver = start_resolver(&env, "resolver").await;
    let mut runners = Vec::new();
    for i in 1..=4 {
        runners.push(start_runner(&env, &format!("runner-{i}"), 3, &[]).await);
    }
    let key = env.trigger("scale").await;
    let mut last = runners.pop().expect("four runners");
    for (i, mut runner) in runners.into_iter().enumerate() {
        wait_file_lines(&side, 30 * (i + 1), TWO_MINUTES).await;
        let run = env.run_by_key(&key).await.expect("the run");
        assert_eq!(
            run.status,
            RunStatus::Running,
            "scale-down {} mid-run",
            i + 1
        );
        runner.terminate();
        let status = runner.wait_exit(Duration::from_secs(30)).await;
        assert!(
            status.success(),
            "a drained runner exits 0, got {status}:\n{}",
            runner.log_text()
        );
    }
    let run = env.wait_run(&key, TWO_MINUTES).await;
    let successes = assert_run_sound(&env, &run, RunStatus::Success).await;
    assert_eq!(successes.len(), 200);
    let names: Vec<String> = successes.keys().cloned().collect();
    assert_side_effects_once(&side, names.iter().map(String::as_str));
    assert_eq!(count_lines(&side).values().sum::<usize>(), 200);
    last.assert_running();
}
