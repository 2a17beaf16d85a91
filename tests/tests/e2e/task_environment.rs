//! A task tries to read the runner's credentials, as a curious or hostile
//! DAG author would: `env` in its own process, and the runner's environment
//! through `/proc`. The runner is a real `datajump runner` process holding
//! an API token and the database URL; the task sees neither, and still gets
//! what it needs (PATH, its `DJ_*` variables, an operator's `--task-env`).

use std::time::Duration;

use datajump_shared::RunStatus;

use crate::harness::process::{start_resolver, start_runner};

const TIMEOUT: Duration = Duration::from_secs(60);
const CANARY: &str = "canary-token-3f9a1c";

both_dbs!(
    a_task_cannot_read_the_runners_credentials,
    |env| async move {
        let _resolver = start_resolver(&env, "resolver").await;
        // Root may read any process's memory, so a root runner hands its tasks
        // to an unprivileged user, as docs/SECURITY.md tells operators to.
        let as_root = nix::unistd::geteuid().is_root();
        let mut runner_env = vec![
            ("DATAJUMP_API_TOKEN", CANARY),
            ("DATAJUMP_TASK_ENV", "JAVA_HOME"),
            ("JAVA_HOME", "/opt/java-for-tasks"),
            ("UNLISTED_SETTING", "not-for-tasks"),
        ];
        if as_root {
            runner_env.push(("DATAJUMP_TASK_USER", "nobody"));
        }
        let runner = start_runner(&env, "runner", 2, &runner_env).await;
        env.apply(&format!(
        r#"
name: nosy
tasks:
  - name: look
    retry: {{ max: 0 }}
    command: |
      env | sort
      if cat /proc/{pid}/environ > /dev/null 2>&1; then echo "runner environ: READABLE"; else echo "runner environ: closed"; fi
      if tr '\0' '\n' < /proc/{pid}/environ 2>/dev/null | grep -q DATAJUMP_; then echo "runner secrets: LEAKED"; fi
      echo "whoami: $(id -un)"
"#,
        pid = runner.pid()
    ))
    .await;
        let run = env.run_to_end("nosy", RunStatus::Success, TIMEOUT).await;
        let executions = env.executions_by_name(run.id).await;
        let log = executions["look"][0].log_tail.clone().expect("log");

        assert!(
            !log.contains(CANARY),
            "the API token reached the task:\n{log}"
        );
        assert!(
            !log.contains("DATAJUMP_"),
            "a DATAJUMP_ variable reached the task:\n{log}"
        );
        assert!(
            !log.contains(&env.db_url),
            "the database URL reached the task:\n{log}"
        );
        assert!(!log.contains("UNLISTED_SETTING"), "{log}");
        assert!(log.contains("runner environ: closed"), "{log}");
        assert!(!log.contains("LEAKED"), "{log}");
        // What a task needs is still there.
        assert!(log.contains("\nPATH=/"), "{log}");
        assert!(log.contains("JAVA_HOME=/opt/java-for-tasks"), "{log}");
        assert!(log.contains(&format!("DJ_DAG_RUN_ID={}", run.id)), "{log}");
        if as_root {
            assert!(log.contains("whoami: nobody"), "{log}");
            assert!(
                log.contains("HOME=/nonexistent") || log.contains("USER=nobody"),
                "{log}"
            );
        }
        drop(runner);
    }
);
