//! Engine rules, each tested by calling the engine directly on a real
//! database (SQLite; PostgreSQL where a server answers): no NATS, no role,
//! no clock but the test's. See `env/mod.rs`.

mod env;

use datajump_engine::AttemptEnd;
use datajump_shared::{RunStatus, TaskStatus};
use env::{EngineEnv, date, failure, status_of, success};

const DIAMOND: &str = r#"
name: diamond
tasks:
  - { name: extract, type: NOOP }
  - { name: clean, type: NOOP, depends_on: [extract] }
  - { name: enrich, type: NOOP, depends_on: [extract] }
  - { name: report, type: NOOP, depends_on: [clean, enrich] }
"#;

/// Every backend a rule is checked on here.
async fn envs() -> Vec<EngineEnv> {
    let mut envs = vec![EngineEnv::sqlite().await];
    envs.extend(EngineEnv::postgres().await);
    envs
}

fn assert_invariants(
    env: &EngineEnv,
    runs: &[datajump_shared::entities::dag_run::Model],
    rows: &[datajump_shared::entities::task_instance::Model],
) {
    let broken = env::invariants::violations(runs, rows);
    assert!(broken.is_empty(), "{:?}: {broken:#?}", env.backend);
}

async fn check_invariants(env: &EngineEnv) {
    let (runs, rows) = (env.all_runs().await, env.all_instances().await);
    assert_invariants(env, &runs, &rows);
}

#[tokio::test]
async fn a_join_is_released_once_its_last_parent_succeeds_and_the_run_ends_with_it() {
    for env in envs().await {
        let dag = env.apply(DIAMOND).await;
        let (run, effects) = env.fire(dag, date("2026-01-04")).await;
        let run = run.expect("a run");
        let queued: Vec<&str> = effects
            .queued()
            .iter()
            .map(|r| r.task_name.as_str())
            .collect();
        assert_eq!(
            queued,
            ["extract"],
            "{:?}: only the root is released",
            env.backend
        );

        let effects = env.run_task(run, "extract", success()).await;
        let mut queued: Vec<&str> = effects
            .queued()
            .iter()
            .map(|r| r.task_name.as_str())
            .collect();
        queued.sort_unstable();
        assert_eq!(queued, ["clean", "enrich"], "{:?}", env.backend);
        check_invariants(&env).await;

        let effects = env.run_task(run, "clean", success()).await;
        assert!(
            effects.queued().is_empty(),
            "{:?}: the join waits for enrich",
            env.backend
        );
        assert_eq!(env.instance(run, "report").await.pending_parents, 1);
        check_invariants(&env).await;

        let effects = env.run_task(run, "enrich", success()).await;
        let queued: Vec<&str> = effects
            .queued()
            .iter()
            .map(|r| r.task_name.as_str())
            .collect();
        assert_eq!(queued, ["report"], "{:?}", env.backend);

        let effects = env.run_task(run, "report", success()).await;
        assert_eq!(
            effects.finished_runs(),
            [(run.0, RunStatus::Success)],
            "{:?}",
            env.backend
        );
        assert_eq!(env.run(run).await.status, RunStatus::Success);
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_failed_strong_parent_fails_its_join_upstream_and_the_run() {
    for env in envs().await {
        let run = env.start(DIAMOND).await;
        let _released = env.run_task(run, "extract", success()).await;
        let _released = env.run_task(run, "clean", failure()).await;
        check_invariants(&env).await;
        let effects = env.run_task(run, "enrich", success()).await;
        let settled: Vec<(&str, TaskStatus)> = effects
            .settled()
            .iter()
            .map(|r| (r.task_name.as_str(), r.status))
            .collect();
        assert_eq!(
            settled,
            [("report", TaskStatus::UpstreamFailed)],
            "{:?}",
            env.backend
        );
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "report"), TaskStatus::UpstreamFailed);
        // The reason is stored in words and as a code a UI says in its own.
        let report = env.instance(run, "report").await;
        assert_eq!(
            report.reason.as_deref(),
            Some("an upstream task did not succeed"),
            "{:?}",
            env.backend
        );
        assert_eq!(
            report
                .reason_problem
                .as_ref()
                .and_then(|stored| stored.read().ok())
                .map(|problem| problem.code.as_str()),
            Some("task.upstream_failed"),
            "{:?}",
            env.backend
        );
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_weak_parent_releases_its_child_whatever_its_result() {
    for env in envs().await {
        let run = env
            .start(
                r#"
name: weak
tasks:
  - { name: audit, type: NOOP }
  - name: report
    type: NOOP
    depends_on: [{ task: audit, type: WEAK }]
"#,
            )
            .await;
        let effects = env.run_task(run, "audit", failure()).await;
        let queued: Vec<&str> = effects
            .queued()
            .iter()
            .map(|r| r.task_name.as_str())
            .collect();
        assert_eq!(queued, ["report"], "{:?}", env.backend);
        let _released = env.run_task(run, "report", success()).await;
        // The run's result is its tasks': one failed.
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_retry_is_queued_when_its_time_comes_and_runs_as_the_next_attempt() {
    for mut env in envs().await {
        let run = env
            .start(
                r#"
name: retried
tasks:
  - { name: flaky, type: NOOP, retry: { max: 1, interval: 60 } }
"#,
            )
            .await;
        let retry_at = env.now + chrono::Duration::seconds(60);
        let effects = env
            .run_task(run, "flaky", AttemptEnd::Retry { retry_at })
            .await;
        assert!(effects.queued().is_empty(), "{:?}", env.backend);
        let row = env.instance(run, "flaky").await;
        assert_eq!((row.status, row.retries_used), (TaskStatus::UpForRetry, 1));
        assert_eq!(row.deadline_at, Some(retry_at));
        check_invariants(&env).await;

        env.now = retry_at;
        let effects = datajump_engine::retry_due(&env.db, row.instance_id(), row.status, env.now)
            .await
            .expect("retry_due")
            .expect("it was waiting for its retry");
        assert_eq!(effects.queued().len(), 1, "{:?}", env.backend);
        let row = env.instance(run, "flaky").await;
        assert_eq!((row.status, row.attempt), (TaskStatus::Queued, 1));

        let _released = env.run_task(run, "flaky", success()).await;
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Success,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_sensor_between_checks_keeps_its_attempt_its_execution_and_its_start() {
    for mut env in envs().await {
        let run = env
            .start("name: waits\ntasks:\n  - { name: wait_for_orders, type: NOOP }\n")
            .await;
        let queued = env.instance(run, "wait_for_orders").await;
        let (execution, _) = env.claim(&queued).await;
        let execution = execution.expect("the first check's claim");
        let first_check = env.instance(run, "wait_for_orders").await;
        let started = first_check.started_at;
        assert_eq!(started, Some(env.now), "{:?}", env.backend);

        env.now += chrono::Duration::seconds(1);
        let check_at = env.now + chrono::Duration::seconds(300);
        let released = env
            .end(&first_check, execution, AttemptEnd::Reschedule { check_at })
            .await;
        assert!(released.queued().is_empty(), "{:?}", env.backend);
        env.now = check_at;
        let waiting = env.instance(run, "wait_for_orders").await;
        assert_eq!(waiting.status, TaskStatus::UpForReschedule);
        let requeued = env.retry_due(&waiting).await;
        assert_eq!(requeued.queued().len(), 1, "{:?}", env.backend);
        let queued = env.instance(run, "wait_for_orders").await;
        let (next, _) = env.claim(&queued).await;
        let second_check = env.instance(run, "wait_for_orders").await;
        assert_eq!(
            next,
            Some(execution),
            "{:?}: one execution row",
            env.backend
        );
        assert_eq!(
            (second_check.attempt, second_check.started_at),
            (first_check.attempt, started),
            "{:?}: the same attempt, started when the first check did",
            env.backend
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_claim_is_won_once_and_an_end_counts_only_for_its_own_attempt() {
    for env in envs().await {
        let run = env.start(DIAMOND).await;
        let queued = env.instance(run, "extract").await;
        let (first, _) = env.claim(&queued).await;
        let (second, _) = env.claim(&queued).await;
        assert!(first.is_some(), "{:?}: the first claim wins", env.backend);
        assert!(
            second.is_none(),
            "{:?}: a second copy of the work loses",
            env.backend
        );
        let running = env.instance(run, "extract").await;
        // An end for an attempt that is not the running one changes nothing.
        let mut stale = running.clone();
        stale.attempt += 1;
        let effects = env
            .end(&stale, first.expect("an execution"), success())
            .await;
        assert!(effects.queued().is_empty(), "{:?}", env.backend);
        assert_eq!(
            env.instance(run, "extract").await.status,
            TaskStatus::Running
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_claim_carries_the_outputs_its_run_has_declared() {
    for env in envs().await {
        let run = env.start(DIAMOND).await;
        let extract = env.instance(run, "extract").await;
        let (execution, _) = env.claim(&extract).await;
        let claimed = env.instance(run, "extract").await;
        let outputs = datajump_shared::outputs::Outputs::from([("rows".into(), "42".into())]);
        let _released = env
            .end_declaring(
                &claimed,
                execution.expect("an execution"),
                success(),
                Some(outputs.clone()),
            )
            .await;
        let clean = env.instance(run, "clean").await;
        let claim = datajump_engine::Claim {
            task_instance_id: clean.instance_id(),
            attempt: clean.attempt,
        };
        let (recorded, _released) =
            datajump_engine::record(&env.db, env::RUNNER, &[&claim], &[], env.now)
                .await
                .expect("the claim");
        let won = &recorded.claimed[&clean.instance_id()];
        let declared: Vec<(&str, &datajump_shared::outputs::Outputs)> = won
            .run_outputs
            .iter()
            .map(|d| (d.task_name.as_str(), &d.outputs))
            .collect();
        assert_eq!(declared, [("extract", &outputs)], "{:?}", env.backend);
    }
}

#[tokio::test]
async fn a_failure_fails_its_strong_line_a_weak_child_still_runs_and_a_disabled_task_is_skipped() {
    for env in envs().await {
        let run = env
            .start(
                r#"
name: rules
tasks:
  - { name: root, type: NOOP }
  - { name: broken, type: NOOP, retry: { max: 0 }, depends_on: [root] }
  - { name: strong_child, type: NOOP, depends_on: [broken] }
  - { name: strong_grandchild, type: NOOP, depends_on: [strong_child] }
  - { name: weak_child, type: NOOP, depends_on: [{ task: broken, type: WEAK }] }
  - { name: disabled, type: NOOP, enabled: false, depends_on: [root] }
  - { name: after_disabled, type: NOOP, depends_on: [disabled] }
"#,
            )
            .await;
        let _released = env.run_task(run, "root", success()).await;
        // The disabled task settles SKIPPED without running, which counts
        // as a success for what follows it.
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "disabled"), TaskStatus::Skipped);
        assert_eq!(status_of(&statuses, "after_disabled"), TaskStatus::Queued);
        let _released = env.run_task(run, "broken", failure()).await;
        let _released = env.run_task(run, "weak_child", success()).await;
        let _released = env.run_task(run, "after_disabled", success()).await;
        let rows = env.instances(run).await;
        for (name, want) in [
            ("root", TaskStatus::Success),
            ("broken", TaskStatus::Failed),
            ("strong_child", TaskStatus::UpstreamFailed),
            ("strong_grandchild", TaskStatus::UpstreamFailed),
            ("weak_child", TaskStatus::Success),
            ("disabled", TaskStatus::Skipped),
            ("after_disabled", TaskStatus::Success),
        ] {
            assert_eq!(rows[name].status, want, "{:?}: task {name}", env.backend);
            assert!(
                rows[name].propagated,
                "{:?}: {name} propagated",
                env.backend
            );
        }
        for never_claimed in ["strong_child", "strong_grandchild", "disabled"] {
            assert_eq!(rows[never_claimed].attempt, 0, "{never_claimed} never ran");
        }
        let ended = env.run(run).await;
        assert_eq!(ended.status, RunStatus::Failed, "{:?}", env.backend);
        assert_eq!(ended.pending_instances, 0);
        assert_eq!(
            ended.failed_instances, 3,
            "FAILED and the two UPSTREAM_FAILED"
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn one_success_starts_on_the_first_success_and_none_on_every_end() {
    for env in envs().await {
        let run = env
            .start(
                r#"
name: strategies
tasks:
  - { name: ok, type: NOOP }
  - { name: slow, type: NOOP }
  - { name: bad, type: NOOP, retry: { max: 0 } }
  - { name: first_of, type: NOOP, strategy: ONE_SUCCESS, depends_on: [ok, slow] }
  - { name: none_of, type: NOOP, strategy: NONE, depends_on: [bad, ok] }
  - { name: bad_only, type: NOOP, strategy: ONE_SUCCESS, depends_on: [bad] }
"#,
            )
            .await;
        let effects = env.run_task(run, "ok", success()).await;
        let queued: Vec<&str> = effects
            .queued()
            .iter()
            .map(|r| r.task_name.as_str())
            .collect();
        assert_eq!(
            queued,
            ["first_of"],
            "{:?}: before slow has run",
            env.backend
        );
        assert_eq!(
            status_of(&env.statuses(run).await, "none_of"),
            TaskStatus::Pending,
            "NONE waits for bad to end"
        );
        let effects = env.run_task(run, "bad", failure()).await;
        let mut moved: Vec<(&str, TaskStatus)> = effects
            .queued()
            .iter()
            .chain(effects.settled())
            .map(|r| (r.task_name.as_str(), r.status))
            .collect();
        moved.sort_unstable_by_key(|(name, _)| *name);
        assert_eq!(
            moved,
            [
                ("bad_only", TaskStatus::UpstreamFailed),
                ("none_of", TaskStatus::Queued)
            ],
            "{:?}",
            env.backend
        );
        for task in ["slow", "first_of", "none_of"] {
            let _released = env.run_task(run, task, success()).await;
        }
        let ended = env.run(run).await;
        assert_eq!(ended.status, RunStatus::Failed, "{:?}", env.backend);
        assert_eq!(ended.failed_instances, 2, "bad and bad_only");
        assert_eq!(env.instance(run, "first_of").await.attempt, 1, "ran once");
        check_invariants(&env).await;
    }
}

/// Replaces the stored spec of `row` with one a release that spelled the
/// strategy otherwise could have written.
async fn corrupt_spec(env: &EngineEnv, row: &datajump_shared::entities::task_instance::Model) {
    let mut spec = row.spec.json().clone();
    spec["task"]["strategy"] = serde_json::json!("SOMETIMES");
    env.execute(&format!(
        "UPDATE task_instance SET spec = '{}' WHERE id = {}",
        spec.to_string().replace('\'', "''"),
        row.id
    ))
    .await;
}

#[tokio::test]
async fn a_join_whose_spec_does_not_read_fails_alone_and_its_sibling_still_runs() {
    for env in envs().await {
        let run = env.start(DIAMOND).await;
        let clean = env.instance(run, "clean").await;
        corrupt_spec(&env, &clean).await;

        // The batch that releases clean and enrich goes on without clean.
        let effects = env.run_task(run, "extract", success()).await;
        let queued: Vec<&str> = effects
            .queued()
            .iter()
            .map(|r| r.task_name.as_str())
            .collect();
        assert_eq!(queued, ["enrich"], "{:?}", env.backend);
        let clean = env.instance(run, "clean").await;
        assert_eq!(clean.status, TaskStatus::Failed, "{:?}", env.backend);
        let reason = clean.reason.unwrap_or_default();
        assert!(
            reason.starts_with(&format!(
                "quarantined: the stored spec of task_instance {} does not read (at task.strategy: unknown variant `SOMETIMES`",
                clean.id
            )),
            "{:?}: {reason}",
            env.backend
        );
        check_invariants(&env).await;

        // Its end counts as a failure: the join it fed fails upstream.
        let effects = env.run_task(run, "enrich", success()).await;
        assert_eq!(
            effects.finished_runs(),
            [(run.0, RunStatus::Failed)],
            "{:?}",
            env.backend
        );
        assert_eq!(
            status_of(&env.statuses(run).await, "report"),
            TaskStatus::UpstreamFailed
        );
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_queued_task_whose_spec_does_not_read_is_failed_by_the_deadline_scan() {
    for env in envs().await {
        let run = env.start(DIAMOND).await;
        let extract = env.instance(run, "extract").await;
        assert_eq!(extract.status, TaskStatus::Queued);
        corrupt_spec(&env, &extract).await;
        let extract = env.instance(run, "extract").await;
        assert!(
            datajump_shared::messages::WorkMsg::for_queued(&extract).is_err(),
            "no work message can be built for it"
        );

        let effects = datajump_engine::queued_due(&env.db, &extract, env.now)
            .await
            .expect("queued_due")
            .expect("still QUEUED");
        let mut settled: Vec<(&str, TaskStatus)> = effects
            .settled()
            .iter()
            .map(|r| (r.task_name.as_str(), r.status))
            .collect();
        settled.sort_unstable_by_key(|(name, _)| *name);
        assert_eq!(
            settled,
            [
                ("clean", TaskStatus::UpstreamFailed),
                ("enrich", TaskStatus::UpstreamFailed),
                ("extract", TaskStatus::Failed),
                ("report", TaskStatus::UpstreamFailed),
            ],
            "{:?}",
            env.backend
        );
        assert_eq!(env.run(run).await.status, RunStatus::Failed);
        check_invariants(&env).await;
    }
}

/// The issue's two stories (docs/DAG_FORMAT.md, "Strategies"): a failure
/// handler runs when the load fails and is skipped (B) when it does not; a
/// B skip passes down an ALL_SUCCESS line and stops at a NONE_FAILED or
/// ALL_DONE join; a run with a failure stays FAILED though its cleanup
/// succeeded.
#[tokio::test]
async fn failure_handlers_run_on_a_failure_and_their_skip_passes_down_to_the_next_join() {
    const RECOVERING: &str = r#"
name: recovering
tasks:
  - { name: load, type: NOOP, retry: { max: 0 } }
  - { name: drop_staging, type: NOOP, strategy: ONE_FAILED, depends_on: [load] }
  - { name: page_owner, type: NOOP, depends_on: [drop_staging] }
  - { name: all_broke, type: NOOP, strategy: ALL_FAILED, depends_on: [load, drop_staging] }
  - { name: summary, type: NOOP, strategy: NONE_FAILED, depends_on: [page_owner] }
  - { name: done, type: NOOP, strategy: ALL_DONE, depends_on: [load, page_owner] }
  - { name: report, type: NOOP, depends_on: [load, page_owner] }
"#;
    for env in envs().await {
        // The load succeeds: no cleanup, nobody paged, the summary runs.
        let dag = env.apply(RECOVERING).await;
        let (run, _released) = env.fire(dag, date("2026-01-04")).await;
        let run = run.expect("a run");
        let _released = env.run_task(run, "load", success()).await;
        let statuses = env.statuses(run).await;
        for (task, want) in [
            ("drop_staging", TaskStatus::Skipped),
            ("page_owner", TaskStatus::Skipped),
            ("all_broke", TaskStatus::Skipped),
            ("report", TaskStatus::Skipped),
            ("summary", TaskStatus::Queued),
            ("done", TaskStatus::Queued),
        ] {
            assert_eq!(
                status_of(&statuses, task),
                want,
                "{:?}: {task}",
                env.backend
            );
        }
        let rows = env.instances(run).await;
        assert!(rows["drop_staging"].flow_skipped && rows["report"].flow_skipped);
        assert_eq!(
            rows["drop_staging"].reason.as_deref(),
            Some(
                "skipped by its strategy ONE_FAILED (all terminal, no F; S = succeeded, B = \
                 skipped by control flow, F = failed)"
            ),
            "{:?}",
            env.backend
        );
        assert_eq!(
            rows["drop_staging"]
                .reason_problem
                .as_ref()
                .and_then(|stored| stored.read().ok())
                .map(|problem| problem.code.as_str()),
            Some("task.flow_skipped")
        );
        check_invariants(&env).await;
        let _released = env.run_task(run, "summary", success()).await;
        let _released = env.run_task(run, "done", success()).await;
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Success,
            "{:?}: skipped branches do not fail a run",
            env.backend
        );
        check_invariants(&env).await;

        // The load fails: the cleanup runs, then the owner is paged, and the
        // run stays FAILED though both succeeded.
        let (run, _released) = env.fire(dag, date("2026-01-05")).await;
        let run = run.expect("a second run");
        let _released = env.run_task(run, "load", failure()).await;
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "drop_staging"), TaskStatus::Queued);
        let _released = env.run_task(run, "drop_staging", success()).await;
        let _released = env.run_task(run, "page_owner", success()).await;
        let statuses = env.statuses(run).await;
        for (task, want) in [
            ("all_broke", TaskStatus::Skipped),
            ("report", TaskStatus::UpstreamFailed),
            ("summary", TaskStatus::Queued),
            ("done", TaskStatus::Queued),
        ] {
            assert_eq!(
                status_of(&statuses, task),
                want,
                "{:?}: {task}",
                env.backend
            );
        }
        let _released = env.run_task(run, "summary", success()).await;
        let _released = env.run_task(run, "done", success()).await;
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}: a cleanup does not hide the failure",
            env.backend
        );
        check_invariants(&env).await;
    }
}

/// `allow_failure`: the task's failure does not fail the run, but its
/// children still count it as F: its failure handler runs, and a child
/// that needed it ends UPSTREAM_FAILED, which does fail the run.
#[tokio::test]
async fn an_allowed_failure_runs_its_handler_and_leaves_the_run_green() {
    for env in envs().await {
        let dag = env
            .apply(
                r#"
name: tolerant
tasks:
  - { name: optional_feed, type: NOOP, allow_failure: true, retry: { max: 0 } }
  - { name: note_missing_feed, type: NOOP, strategy: ONE_FAILED, depends_on: [optional_feed] }
  - { name: report, type: NOOP, strategy: ALL_DONE, depends_on: [optional_feed, note_missing_feed] }
"#,
            )
            .await;
        let (run, _released) = env.fire(dag, date("2026-01-04")).await;
        let run = run.expect("a run");
        let _released = env.run_task(run, "optional_feed", failure()).await;
        assert_eq!(
            status_of(&env.statuses(run).await, "note_missing_feed"),
            TaskStatus::Queued
        );
        let _released = env.run_task(run, "note_missing_feed", success()).await;
        let _released = env.run_task(run, "report", success()).await;
        let rows = env.instances(run).await;
        assert!(rows["optional_feed"].failed_allowed(), "{:?}", env.backend);
        assert!(!rows["optional_feed"].fails_its_run());
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Success,
            "{:?}: an allowed failure leaves the run green",
            env.backend
        );
        check_invariants(&env).await;

        // A child that needed it fails upstream, and that is not allowed.
        let strict = env
            .apply(
                r#"
name: strict
tasks:
  - { name: optional_feed, type: NOOP, allow_failure: true, retry: { max: 0 } }
  - { name: use_feed, type: NOOP, depends_on: [optional_feed] }
"#,
            )
            .await;
        let (run, _released) = env.fire(strict, date("2026-01-04")).await;
        let run = run.expect("a run");
        let _released = env.run_task(run, "optional_feed", failure()).await;
        assert_eq!(
            status_of(&env.statuses(run).await, "use_feed"),
            TaskStatus::UpstreamFailed
        );
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}",
            env.backend
        );
        check_invariants(&env).await;
    }
}

const ROUTED: &str = r#"
name: routed
tasks:
  - { name: count_new, type: NOOP }
  - name: route
    type: SWITCH
    depends_on: [count_new]
    cases:
      - when: "int(tasks.count_new.output.rows) > 0"
        then: [load]
    default: [no_data_notice]
  - { name: load, type: NOOP, depends_on: [route] }
  - { name: report, type: NOOP, depends_on: [load] }
  - { name: no_data_notice, type: NOOP, depends_on: [route] }
  - { name: summary, type: NOOP, strategy: NONE_FAILED, depends_on: [report, no_data_notice] }
"#;

fn rows(count: &str) -> Option<datajump_shared::outputs::Outputs> {
    Some(datajump_shared::outputs::Outputs::from([(
        "rows".to_owned(),
        count.to_owned(),
    )]))
}

/// The one execution of a decided SWITCH.
async fn decision(
    env: &EngineEnv,
    row: &datajump_shared::entities::task_instance::Model,
) -> datajump_shared::entities::execution::Model {
    use datajump_shared::entities::execution;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let mut executions = execution::Entity::find()
        .filter(execution::Column::TaskInstanceId.eq(row.id))
        .all(&env.db)
        .await
        .expect("executions");
    assert_eq!(executions.len(), 1, "{:?}: one decision", env.backend);
    executions.remove(0)
}

#[tokio::test]
async fn a_switch_runs_the_first_case_that_holds_and_its_other_branches_pass_their_skip_down() {
    for env in envs().await {
        let dag = env.apply(ROUTED).await;
        // No new rows: the notice runs, the load and its report are
        // skipped, and the summary after a NONE_FAILED join still runs.
        let (run, _) = env.fire(dag, date("2026-02-01")).await;
        let run = run.expect("a run");
        let _released = env
            .run_task_declaring(run, "count_new", success(), rows("0"))
            .await;
        let instances = env.instances(run).await;
        let route = &instances["route"];
        assert_eq!(route.status, TaskStatus::Success, "{:?}", env.backend);
        assert_eq!((route.attempt, route.owner.as_deref()), (1, None));
        for (task, want) in [
            ("load", TaskStatus::Skipped),
            ("report", TaskStatus::Skipped),
            ("no_data_notice", TaskStatus::Queued),
            ("summary", TaskStatus::Pending),
        ] {
            assert_eq!(instances[task].status, want, "{:?}: {task}", env.backend);
        }
        assert!(instances["load"].flow_skipped && instances["report"].flow_skipped);
        assert_eq!(
            instances["load"].reason.as_deref(),
            Some("skipped: SWITCH 'route' chose another branch")
        );
        let decided = decision(&env, route).await;
        assert_eq!((decided.attempt, decided.worker.as_str()), (0, ""));
        assert_eq!(decided.status, TaskStatus::Success);
        assert_eq!(
            decided.log_tail.as_deref(),
            Some(
                "cases[0].when: int(tasks.count_new.output.rows) > 0\n  \
                 tasks.count_new.output.rows = \"0\"\n  → false\n\
                 no case holds: default\nruns: no_data_notice\nskipped: load\n"
            ),
            "{:?}",
            env.backend
        );
        let _released = env.run_task(run, "no_data_notice", success()).await;
        let _released = env.run_task(run, "summary", success()).await;
        assert_eq!(env.run(run).await.status, RunStatus::Success);

        // New rows: the load and the report run, the notice is skipped.
        let (run, _) = env.fire(dag, date("2026-02-02")).await;
        let run = run.expect("a run");
        let _released = env
            .run_task_declaring(run, "count_new", success(), rows("12"))
            .await;
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "load"), TaskStatus::Queued);
        assert_eq!(status_of(&statuses, "no_data_notice"), TaskStatus::Skipped);
        for task in ["load", "report", "summary"] {
            let _released = env.run_task(run, task, success()).await;
        }
        assert_eq!(env.run(run).await.status, RunStatus::Success);

        // No `rows` declared: the condition cannot say, the SWITCH fails
        // naming it, and so do its branches and the run.
        let (run, _) = env.fire(dag, date("2026-02-03")).await;
        let run = run.expect("a run");
        let _released = env.run_task(run, "count_new", success()).await;
        let instances = env.instances(run).await;
        let route = &instances["route"];
        assert_eq!(route.status, TaskStatus::Failed, "{:?}", env.backend);
        assert_eq!(
            route.reason.as_deref(),
            Some(
                "cases[0].when could not be evaluated: reads 'rows', which is not there \
                 (test with has() first if it may be missing)"
            )
        );
        assert_eq!(
            route
                .reason_problem
                .as_ref()
                .and_then(|stored| stored.read().ok())
                .map(|problem| problem.code.as_str()),
            Some("task.condition_failed")
        );
        let decided = decision(&env, route).await;
        assert!(
            decided
                .log_tail
                .as_deref()
                .is_some_and(|log| log.contains("tasks.count_new.output.rows: not there")),
            "{:?}",
            decided.log_tail
        );
        for task in ["load", "no_data_notice", "report", "summary"] {
            assert_eq!(
                instances[task].status,
                TaskStatus::UpstreamFailed,
                "{:?}: {task}",
                env.backend
            );
        }
        assert_eq!(env.run(run).await.status, RunStatus::Failed);
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_conditions_task_routes_on_how_its_parent_ended_and_a_disabled_switch_runs_no_branch() {
    const CONDITIONS: &str = r#"
name: conditions
tasks:
  - { name: load, type: NOOP, retry: { max: 0 } }
  - name: on_load
    type: SWITCH
    strategy: ALL_DONE
    depends_on: [load]
    cases:
      - when: "tasks.load.status == 'SUCCESS'"
        then: [publish]
    default: [page_owner]
  - { name: publish, type: NOOP, depends_on: [on_load] }
  - { name: page_owner, type: NOOP, depends_on: [on_load] }
"#;
    for env in envs().await {
        let dag = env.apply(CONDITIONS).await;
        let (run, _) = env.fire(dag, date("2026-03-01")).await;
        let run = run.expect("a run");
        let _released = env.run_task(run, "load", failure()).await;
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "on_load"), TaskStatus::Success);
        assert_eq!(status_of(&statuses, "page_owner"), TaskStatus::Queued);
        assert_eq!(status_of(&statuses, "publish"), TaskStatus::Skipped);
        let _released = env.run_task(run, "page_owner", success()).await;
        assert_eq!(
            env.run(run).await.status,
            RunStatus::Failed,
            "{:?}: a handled failure still fails the run",
            env.backend
        );

        let disabled = CONDITIONS.replace(
            "    type: SWITCH\n",
            "    type: SWITCH\n    enabled: false\n",
        );
        let dag = env.apply(&disabled).await;
        let (run, _) = env.fire(dag, date("2026-03-02")).await;
        let run = run.expect("a run");
        let _released = env.run_task(run, "load", success()).await;
        let instances = env.instances(run).await;
        assert_eq!(instances["on_load"].status, TaskStatus::Skipped);
        assert!(!instances["on_load"].flow_skipped, "disabled, not B");
        for branch in ["publish", "page_owner"] {
            assert_eq!(instances[branch].status, TaskStatus::Skipped);
            assert!(instances[branch].flow_skipped, "{branch}: B");
            assert_eq!(
                instances[branch].reason.as_deref(),
                Some("skipped: SWITCH 'on_load' is disabled, so none of its branches runs")
            );
        }
        assert_eq!(env.run(run).await.status, RunStatus::Success);
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_switch_without_parents_is_decided_when_its_run_starts() {
    const BY_REGION: &str = r#"
name: by_region
params: { region: eu }
tasks:
  - name: route
    type: SWITCH
    cases:
      - when: "params.region == 'us'"
        then: [us]
      - when: "params.region == 'eu' && biz_date >= '2026-04-01'"
        then: [eu]
  - { name: us, type: NOOP, depends_on: [route] }
  - { name: eu, type: NOOP, depends_on: [route] }
"#;
    for env in envs().await {
        let dag = env.apply(BY_REGION).await;
        let (run, _) = env.fire(dag, date("2026-04-01")).await;
        let run = run.expect("a run");
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "route"), TaskStatus::Success);
        assert_eq!(status_of(&statuses, "eu"), TaskStatus::Queued);
        assert_eq!(status_of(&statuses, "us"), TaskStatus::Skipped);
        let _released = env.run_task(run, "eu", success()).await;
        assert_eq!(env.run(run).await.status, RunStatus::Success);
        // No case holds and there is no default: every branch is skipped
        // and the run succeeds.
        let (run, _) = env.fire(dag, date("2026-03-31")).await;
        let run = run.expect("a run");
        let statuses = env.statuses(run).await;
        assert_eq!(status_of(&statuses, "eu"), TaskStatus::Skipped);
        assert_eq!(status_of(&statuses, "us"), TaskStatus::Skipped);
        assert_eq!(env.run(run).await.status, RunStatus::Success);
        check_invariants(&env).await;
    }
}

#[tokio::test]
async fn a_dag_versions_plan_is_kept_once_for_all_its_runs_and_a_new_version_keeps_its_own() {
    use datajump_shared::entities::dag_version_plan;
    use sea_orm::{EntityTrait, QueryOrder};
    for env in envs().await {
        let dag = env.apply(DIAMOND).await;
        for day in ["2026-01-04", "2026-01-05", "2026-01-06"] {
            env.fire(dag, date(day)).await.0.expect("a run");
        }
        let changed = DIAMOND.replace(
            "  - { name: report, type: NOOP, depends_on: [clean, enrich] }",
            "  - { name: report, type: NOOP, depends_on: [clean, enrich] }\n  - { name: publish, type: NOOP, depends_on: [report] }",
        );
        assert_eq!(env.apply(&changed).await, dag, "the same DAG");
        let run = env.fire(dag, date("2026-01-07")).await.0.expect("a run");
        assert_eq!(
            env.run(run).await.dag_version,
            2,
            "a run of the new version"
        );

        let kept = dag_version_plan::Entity::find()
            .order_by_asc(dag_version_plan::Column::Version)
            .all(&env.db)
            .await
            .expect("plans");
        let kept: Vec<(i64, i32, Vec<String>)> = kept
            .iter()
            .map(|row| {
                let plan = row.plan.read().expect("a plan");
                let tasks = plan.tasks.iter().map(|t| t.name.clone()).collect();
                (row.dag_id, row.version, tasks)
            })
            .collect();
        let tasks = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            kept,
            [
                (dag, 1, tasks(&["extract", "clean", "enrich", "report"])),
                (
                    dag,
                    2,
                    tasks(&["extract", "clean", "enrich", "report", "publish"])
                ),
            ],
            "{:?}: one plan per version, each with that version's tasks",
            env.backend
        );
    }
}
