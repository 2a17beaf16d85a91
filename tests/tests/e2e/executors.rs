//! SHELL and PYTHON tasks end to end: what a script sees (the `DJ_*`
//! variables, the seed's `bizdate` / `task_id` / `task_name`, parameters as
//! `DJ_PARAM_*`), stdout and stderr kept in order in the log, the exit code
//! recorded, UTF-8 in and out, and the temporary script file removed.

use std::time::Duration;

use datajump_shared::{RunStatus, TaskStatus};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The path a script printed as `script=PATH`.
fn script_path(log: &str) -> std::path::PathBuf {
    log.lines()
        .find_map(|line| line.strip_prefix("script="))
        .unwrap_or_else(|| panic!("no script= line in\n{log}"))
        .into()
}

both_dbs!(shell_and_python_tasks_see_their_run, |env| async move {
    env.apply(
        r#"
name: scripts
params: { region: eu-west }
tasks:
  - name: sh
    params: { owner: "O'Brien" }
    retry: { max: 0 }
    command: |
      echo "script=$0"
      echo "biz=$DJ_BIZ_DATE/$bizdate name=$DJ_TASK_NAME/$task_name id=$DJ_TASK_ID/$task_id"
      echo "region=$DJ_PARAM_REGION owner=$DJ_PARAM_OWNER inline=${region} attempt=$DJ_ATTEMPT"
      echo out1; echo err1 >&2; echo out2; echo err2 >&2
      exit 3
  - name: py
    type: PYTHON
    script: |
      import os, sys
      print("script=" + __file__)
      print("héllo 世界 " + os.environ["DJ_BIZ_DATE"] + " " + os.environ["DJ_PARAM_REGION"])
      print("to stderr", file=sys.stderr)
      print("é" * 3)
"#,
    )
    .await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let run = env.run_to_end("scripts", RunStatus::Failed, TIMEOUT).await;
    let instances = env.instances_by_name(run.id).await;
    let executions = env.executions_by_name(run.id).await;

    let sh = &executions["sh"];
    assert_eq!(sh.len(), 1, "retry max 0: one attempt");
    assert_eq!(instances["sh"].status, TaskStatus::Failed);
    assert_eq!(sh[0].exit_code, Some(3));
    let log = sh[0].log_tail.clone().expect("log");
    let biz = run.biz_date.to_string();
    let task_id = instances["sh"].task_id;
    assert!(
        log.contains(&format!(
            "biz={biz}/{biz} name=sh/sh id={task_id}/{task_id}"
        )),
        "{log}"
    );
    assert!(
        log.contains("region=eu-west owner=O'Brien inline=eu-west attempt=0"),
        "{log}"
    );
    assert!(
        log.contains("out1\nerr1\nout2\nerr2\n"),
        "stdout and stderr in order: {log}"
    );
    assert!(log.contains("Exit Code: 3"), "{log}");
    let script = script_path(&log);
    assert!(
        !script.exists(),
        "the script file {} is removed",
        script.display()
    );

    let py = &executions["py"];
    assert_eq!(instances["py"].status, TaskStatus::Success);
    assert_eq!(py[0].exit_code, Some(0));
    let log = py[0].log_tail.clone().expect("log");
    assert!(log.contains(&format!("héllo 世界 {biz} eu-west")), "{log}");
    assert!(log.contains("to stderr\nééé\n"), "UTF-8 both ways: {log}");
    let script = script_path(&log);
    assert!(!script.exists(), "{} is removed", script.display());
});
