//! Values between tasks (`shared/src/outputs.rs`): a task declares outputs
//! on stdout, they are stored on its instance and shown by the API, and a
//! task after it reads them as untrusted parameters.

use std::time::Duration;

use datajump_shared::{RunStatus, TaskStatus};
use serde_json::json;

use crate::api::Api;
use crate::harness::TestEnv;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The log tail of the last attempt of `task` in run `run_id`.
async fn log_of(env: &TestEnv, run_id: i64, task: &str) -> String {
    let executions = env.executions_by_name(run_id).await;
    executions[task]
        .last()
        .and_then(|e| e.log_tail.clone())
        .unwrap_or_default()
}

both_dbs!(
    a_task_reads_the_outputs_of_the_tasks_before_it,
    |env| async move {
        let secret = env.path("runner-only");
        std::fs::write(&secret, "password=hunter2\n").expect("write the runner's file");
        env.apply(&format!(
            r###"
name: handoff
tasks:
  - name: extract
    command: |
      echo "##dj-output rows=42"
      echo '##dj-output path=/data/orders/$(touch /tmp/pwned)'
      echo "##dj-output 9bad=1"
      echo "count=7" >> "$DJ_OUTPUT"
  - name: sneaky
    command: ln -s {secret} "$DJ_OUTPUT"
  - name: load
    depends_on: [extract, sneaky]
    command: |
      echo rows: ${{extract.output.rows:shell}} count: ${{extract.output.count:shell}}
      echo "path: $DJ_PARAM_EXTRACT_OUTPUT_PATH"
  - name: report
    type: PYTHON
    depends_on: [load]
    script: |
      print("rows again", ${{extract.output.rows:python}})
"###,
            secret = secret.display()
        ))
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let run = env.run_to_end("handoff", RunStatus::Success, TIMEOUT).await;

        let extract = log_of(&env, run.id, "extract").await;
        assert!(
            extract.contains("[datajump] output not kept: output name \"9bad\""),
            "{extract}"
        );
        let load = log_of(&env, run.id, "load").await;
        assert!(load.contains("rows: 42 count: 7"), "{load}");
        assert!(
            load.contains("path: /data/orders/$(touch /tmp/pwned)"),
            "the value is data, never run: {load}"
        );
        let report = log_of(&env, run.id, "report").await;
        assert!(report.contains("rows again 42"), "{report}");

        let api = Api::start(&env, None).await;
        let id = env.instances_by_name(run.id).await["extract"].id;
        let shown = api
            .get(&format!("/api/v1/dags/task-instances/{id}"))
            .await
            .expect(200);
        assert_eq!(shown["outputs"]["rows"], "42", "{shown}");
        assert_eq!(
            shown["outputs"]["path"], "/data/orders/$(touch /tmp/pwned)",
            "{shown}"
        );
        assert!(shown["outputs"].get("9bad").is_none(), "{shown}");
        assert_eq!(
            shown["outputs"]["count"], "7",
            "written to $DJ_OUTPUT: {shown}"
        );

        // A link in place of the file is not followed: the runner does not
        // read, for a task, what only the runner may read.
        let sneaky = &env.instances_by_name(run.id).await["sneaky"];
        assert!(sneaky.outputs.is_none(), "{:?}", sneaky.outputs);
        let sneaky_log = log_of(&env, run.id, "sneaky").await;
        assert!(sneaky_log.contains("$DJ_OUTPUT: not read"), "{sneaky_log}");
    }
);

both_dbs!(
    a_fifo_in_place_of_the_output_file_does_not_freeze_the_runner,
    |env| async move {
        // Opening a FIFO for reading blocks until a writer comes: a runner
        // that opened `$DJ_OUTPUT` that way hung on it for ever, and with it
        // every task and role on its runtime.
        env.apply(
            r#"
name: fifo
tasks:
  - name: trap
    command: mkfifo "$DJ_OUTPUT"
  - name: after
    depends_on: [trap]
    command: echo after ran
"#,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 2).await;
        let run = env.run_to_end("fifo", RunStatus::Success, TIMEOUT).await;
        let trap = log_of(&env, run.id, "trap").await;
        assert!(trap.contains("$DJ_OUTPUT: not read"), "{trap}");
        assert!(
            env.instances_by_name(run.id).await["trap"]
                .outputs
                .is_none()
        );
        let after = log_of(&env, run.id, "after").await;
        assert!(after.contains("after ran"), "{after}");
    }
);

both_dbs!(
    outputs_are_untrusted_and_read_only_after_their_task,
    |env| async move {
        // Pasted bare into a script, a value made at run time is refused
        // when the DAG is applied, with the forms that take any value.
        let refused = env
            .try_apply(
                r###"
name: bare
tasks:
  - { name: extract, command: 'echo "##dj-output rows=1; rm -rf ~"' }
  - { name: load, depends_on: [extract], command: 'echo ${extract.output.rows}' }
"###,
            )
            .await
            .expect_err("a bare output in a script");
        assert!(
            refused.contains("${extract.output.rows} is a task output")
                && refused.contains("$DJ_PARAM_EXTRACT_OUTPUT_ROWS")
                && refused.contains("${extract.output.rows:shell}"),
            "{refused}"
        );

        // Reading a task that does not run before it is refused at apply.
        let refused = env
            .try_apply(
                r###"
name: racy
tasks:
  - { name: extract, command: 'echo "##dj-output rows=1"' }
  - { name: load, command: 'echo ${extract.output.rows:shell}' }
"###,
            )
            .await
            .expect_err("load does not run after extract");
        assert!(
            refused.contains("reads the output of 'extract' but does not run after it"),
            "{refused}"
        );
    }
);

both_dbs!(
    every_output_before_a_task_is_in_its_environment_and_no_param_can_fill_one,
    |env| async move {
        // docs/PARAMETERS.md's example: `check` reads the output from the
        // environment only, and `report` through `check`. A runner that
        // exported only the outputs the text names as `${…}` left the
        // variable empty, and `test "" -gt 0` failed the run (#38).
        env.apply(
            r###"
name: handoff_env
tasks:
  - name: extract
    command: echo "##dj-output rows=42"
  - name: check
    depends_on: [extract]
    command: test "$DJ_PARAM_EXTRACT_OUTPUT_ROWS" -gt 0
  - name: report
    depends_on: [check]
    command: echo "report rows=[$DJ_PARAM_EXTRACT_OUTPUT_ROWS]"
  - name: beside
    command: echo "beside rows=[$DJ_PARAM_EXTRACT_OUTPUT_ROWS]"
"###,
        )
        .await;
        let _resolver = env.spawn_resolver().await;
        let _runner = env.spawn_runner("r1", &["default"], 4).await;
        let run = env
            .run_to_end("handoff_env", RunStatus::Success, TIMEOUT)
            .await;
        let report = log_of(&env, run.id, "report").await;
        assert!(report.contains("report rows=[42]"), "{report}");
        // A task that does not run after `extract` may have started before
        // it ended: it gets none of its outputs, whatever the timing.
        let beside = log_of(&env, run.id, "beside").await;
        assert!(beside.contains("beside rows=[]"), "{beside}");

        // A parameter whose variable is an output's is refused wherever it
        // comes from: it would stand for a value `extract` never wrote.
        let api = Api::start(&env, None).await;
        let dag_id = env.dag_id("handoff_env").await;
        for name in [
            "extract_output_rows",
            "extract.output.rows",
            "EXTRACT-OUTPUT-ROWS",
        ] {
            let refused = api
                .post(
                    &format!("/api/v1/dags/{dag_id}/trigger"),
                    json!({ "params": { name: "999" } }),
                )
                .await;
            assert_eq!(refused.status, 400, "{name}: {}", refused.text);
            assert!(
                refused.text.contains("$DJ_PARAM_EXTRACT_OUTPUT_ROWS")
                    && refused.text.contains("has the form of a task output's"),
                "{name}: {}",
                refused.text
            );
            let refused = api
                .post("/api/v1/events/rows.ready", json!({ name: "999" }))
                .await;
            assert_eq!(refused.status, 400, "{name}: {}", refused.text);
            assert!(
                refused.text.contains("has the form of a task output's"),
                "{name}: {}",
                refused.text
            );
        }
        let refused = env
            .try_apply(
                "name: sneaky\nparams: { extract_output_rows: '1' }\ntasks:\n  - { name: t, command: 'true', params: { a.Output.b: '2' } }\n",
            )
            .await
            .expect_err("output-like params apply");
        assert!(
            refused.contains("params: parameter 'extract_output_rows' is reserved")
                && refused.contains("task 't': params: parameter 'a.Output.b' is reserved"),
            "{refused}"
        );

        // Straight onto NATS, past the API: the runner refuses each attempt
        // before anything runs, so `check` cannot pass on a forged count.
        let mut fire = env.manual_fire("handoff_env").await;
        fire.params
            .insert("extract_output_rows".to_owned(), "999".to_owned());
        env.bus.publish_fire(&fire).await.expect("publish fire");
        let run = env.wait_run(&fire.dedup_key, TIMEOUT).await;
        assert_eq!(run.status, RunStatus::Failed);
        let instances = env.instances_by_name(run.id).await;
        let executions = env.executions_by_name(run.id).await;
        let reason = instances["extract"].reason.clone().unwrap_or_default();
        assert!(
            reason.contains("parameter 'extract_output_rows' is reserved"),
            "{reason}"
        );
        assert_eq!(executions["extract"].len(), 1, "refused, not retried");
        assert_ne!(instances["check"].status, TaskStatus::Success);
        env.check_roles();
    }
);
