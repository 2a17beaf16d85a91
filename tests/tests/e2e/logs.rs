//! Task logs: the full log in the `dj_logs` object store with a capped tail
//! in the database, live lines while the task runs, and an unknown
//! placeholder failing the attempt before anything runs.

use std::time::Duration;

use datajump_shared::{RunStatus, TaskStatus, logs, subjects};
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use crate::api::Api;

const TIMEOUT: Duration = Duration::from_secs(60);

both_dbs!(a_one_mebibyte_log_is_stored_whole, |env| async move {
    // 20,000 numbered lines of 60 bytes: about 1.2 MiB.
    env.apply(
        r#"
name: chatty
tasks:
  - name: talk
    type: PYTHON
    script: |
      for i in range(20000):
          print(f"line {i:06d} " + "x" * 48)
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let run = env.run_to_end("chatty", RunStatus::Success, TIMEOUT).await;
    let exec = env.executions_by_name(run.id).await["talk"][0].clone();

    let tail = exec.log_tail.clone().expect("a tail");
    assert!(
        tail.len() <= logs::TAIL_BYTES + 512,
        "the row keeps only the tail: {} bytes",
        tail.len()
    );
    assert!(
        logs::dropped_lines(&tail) > 0,
        "the tail says it was cut: {}",
        &tail[..120]
    );
    assert!(
        tail.contains("line 019999"),
        "the tail ends with the last lines"
    );

    let name = exec.log_path.clone().expect("stored in the object store");
    assert_eq!(name, subjects::log_object(exec.id));
    let store = env
        .bus
        .js()
        .get_object_store("dj_logs")
        .await
        .expect("dj_logs");
    let mut object = store.get(name.as_str()).await.expect("log object");
    let mut full = String::new();
    object
        .read_to_string(&mut full)
        .await
        .expect("read the log");
    assert!(
        full.len() > 1024 * 1024,
        "the whole log: {} bytes",
        full.len()
    );
    for i in [0, 1, 9_999, 19_999] {
        assert!(
            full.contains(&format!("line {i:06} ")),
            "line {i} is in the full log"
        );
    }
    assert!(full.starts_with("========== Task Execution Start =========="));
    // The header names the instance and attempt beside the task, and the
    // start in the run's zone (the default schedule zone, Asia/Shanghai).
    let header: Vec<&str> = full.lines().take(8).collect();
    assert_eq!(
        header[1],
        format!("Task ID: {}", exec.task_id),
        "{header:?}"
    );
    assert_eq!(
        header[2],
        format!("Task Instance ID: {}", exec.task_instance_id),
        "{header:?}"
    );
    assert_eq!(header[3], "Attempt: 1", "{header:?}");
    assert!(
        header[6].starts_with("Start Time: ") && header[6].ends_with("+08:00 (Asia/Shanghai)"),
        "{header:?}"
    );
    assert!(full.contains("Exit Code: 0"));
    assert_eq!(
        logs::last_line_number(&tail),
        full.lines().count() as u64,
        "tail and full log agree on line numbers"
    );

    // The API streams the same whole log from the object store.
    let api = Api::start(&env, None).await;
    let instance = env.instances_by_name(run.id).await["talk"].id;
    let answer = api
        .get(&format!("/api/v1/dags/task-instances/{instance}/log"))
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer
            .headers
            .get("x-datajump-log-source")
            .and_then(|v| v.to_str().ok()),
        Some("full")
    );
    assert_eq!(answer.text, full, "the API's log is the stored one");
});

both_dbs!(lines_go_out_live_while_the_task_runs, |env| async move {
    env.apply(
        r#"
name: ticking
tasks:
  - name: tick
    command: for i in 1 2 3 4 5 6; do echo "tick $i"; sleep 0.3; done
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let mut live = env.nats.subscribe("dj.log.*").await.expect("subscribe");
    let key = env.trigger("ticking").await;
    let mut ticks = Vec::new();
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while ticks.len() < 6 {
        let message = tokio::time::timeout_at(deadline, live.next())
            .await
            .expect("live lines arrive")
            .expect("subscription open");
        let line = String::from_utf8_lossy(&message.payload).into_owned();
        if line.starts_with("tick ") {
            let seq: u64 = message
                .headers
                .as_ref()
                .and_then(|h| h.get(logs::SEQ_HEADER))
                .and_then(|v| v.as_str().parse().ok())
                .expect("each live line carries its number");
            let run = env.run_by_key(&key).await.expect("run");
            let still_running =
                env.instances_by_name(run.id).await["tick"].status == TaskStatus::Running;
            ticks.push((line, seq, still_running));
        }
    }
    assert!(
        ticks.iter().take(3).all(|(_, _, running)| *running),
        "the first lines arrive while the task runs: {ticks:?}"
    );
    let seqs: Vec<u64> = ticks.iter().map(|(_, seq, _)| *seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "consecutive numbers: {seqs:?}"
    );
    env.wait_run(&key, TIMEOUT).await;
});

both_dbs!(
    an_unknown_placeholder_fails_fast_without_retries,
    |env| async move {
        env.apply(
            r#"
name: typo
tasks:
  - name: load
    command: echo "loading ${bizdate_typo}"
    retry: { max: 3, interval: 1 }
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let run = env.run_to_end("typo", RunStatus::Failed, TIMEOUT).await;
        let load = env.instances_by_name(run.id).await["load"].clone();
        assert_eq!(load.status, TaskStatus::Failed);
        let reason = load.reason.unwrap_or_default();
        assert!(
            reason.contains("${bizdate_typo}"),
            "the reason names it: {reason}"
        );
        let executions = &env.executions_by_name(run.id).await["load"];
        assert_eq!(executions.len(), 1, "not retried");
        assert_eq!(executions[0].exit_code, None, "nothing ran");
    }
);

both_dbs!(
    logs_follow_prints_lines_while_the_task_runs,
    |env| async move {
        env.apply(
            r#"
name: slow_talk
tasks:
  - name: talk
    command: for i in 1 2 3 4 5 6 7 8; do echo "tick $i"; sleep 0.4; done
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let api = Api::start(&env, None).await;
        let key = env.trigger("slow_talk").await;
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let instance = loop {
            if let Some(run) = env.run_by_key(&key).await
                && let Some(talk) = env.instances_by_name(run.id).await.remove("talk")
            {
                break talk;
            }
            assert!(tokio::time::Instant::now() < deadline, "no instance");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };

        // The user's command, as a separate process: `datajump logs ID
        // --follow`, with the API for the start and the end and NATS for
        // the live lines.
        let mut follow = tokio::process::Command::new(env!("CARGO_BIN_EXE_datajump-under-test"))
            .args(["--api", api.base(), "--nats-url", &env.nats_url()])
            .args(["logs", &instance.id.to_string(), "--follow"])
            .env("DATAJUMP_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start datajump logs --follow");
        let stdout = follow.stdout.take().expect("stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut ticks = Vec::new();
        let mut printed = Vec::new();
        while let Some(line) = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .expect("lines keep coming until the task ends")
            .expect("read stdout")
        {
            if line.starts_with("tick ") {
                let status = env
                    .instances(instance.dag_run_id)
                    .await
                    .into_iter()
                    .find(|i| i.id == instance.id)
                    .expect("instance")
                    .status;
                ticks.push((line.clone(), status));
            }
            printed.push(line);
        }
        let status = tokio::time::timeout_at(deadline, follow.wait())
            .await
            .expect("logs --follow ends with the task")
            .expect("exit status");
        assert!(status.success(), "{status:?}\n{}", printed.join("\n"));
        let expected: Vec<String> = (1..=8).map(|i| format!("tick {i}")).collect();
        let got: Vec<String> = ticks.iter().map(|(line, _)| line.clone()).collect();
        assert_eq!(got, expected, "every line once, in order");
        assert!(
            ticks[..4].iter().all(|(_, s)| *s == TaskStatus::Running),
            "the first lines were printed while the task ran: {ticks:?}"
        );
        assert!(
            printed.iter().any(|l| l.contains("Exit Code: 0")),
            "the footer ends the output: {}",
            printed.join("\n")
        );
        env.wait_run(&key, TIMEOUT).await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn logs_print_a_tasks_control_characters_escaped() {
    // A task's output went to the user's terminal as written: an escape
    // sequence in it retitled the window and cleared the screen, and a
    // carriage return let a line hide what came before it.
    let env = crate::harness::TestEnv::new(crate::harness::Backend::Sqlite).await;
    env.apply(
        r#"
name: noisy
tasks:
  - name: talk
    command: printf 'before\033]0;pwned\007\033[2Jafter\rfaked\tcolumn\nnext line\n'
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let api = Api::start(&env, None).await;
    let run = env.run_to_end("noisy", RunStatus::Success, TIMEOUT).await;
    let instance = env.instances_by_name(run.id).await["talk"].id.to_string();
    let logs = |extra: &'static [&'static str]| {
        let (api, nats, instance) = (api.base().to_owned(), env.nats_url(), instance.clone());
        async move {
            let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_datajump-under-test"))
                .args(["--api", &api, "--nats-url", &nats, "logs", &instance])
                .args(extra)
                .env("DATAJUMP_LOG", "warn")
                .kill_on_drop(true)
                .output()
                .await
                .expect("run datajump logs");
            assert!(output.status.success(), "{output:?}");
            String::from_utf8(output.stdout).expect("UTF-8")
        }
    };
    let escaped = "before\\u{1b}]0;pwned\\u{7}\\u{1b}[2Jafter\\rfaked\tcolumn\nnext line\n";
    for (args, how) in [(&[][..], "logs"), (&["--follow"][..], "logs --follow")] {
        let printed = logs(args).await;
        assert!(
            !printed.contains(['\u{1b}', '\u{7}', '\r']),
            "{how} printed a control character: {printed:?}"
        );
        assert!(printed.contains(escaped), "{how}: {printed:?}");
    }
    let raw = logs(&["--raw"]).await;
    assert!(
        raw.contains("before\u{1b}]0;pwned\u{7}\u{1b}[2Jafter\rfaked\tcolumn\nnext line\n"),
        "--raw prints the log as written: {raw:?}"
    );
}
