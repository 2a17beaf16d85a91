//! Operator commands fired at live runs in random order cannot corrupt a
//! run (docs/ARCHITECTURE.md "Operator actions"): each is applied to the
//! run's state as it is, or refused, and after every one of them no run has
//! finished while one of its tasks is live, no run waiting for a slot has a
//! task under way, and the DAG never has more RUNNING runs than its
//! `max_active_runs`. At the end every run reaches a final state.
//!
//! The sequence comes from a seed, printed first; `DATAJUMP_TEST_SEED=N`
//! replays one.

use std::time::{Duration, Instant};

use datajump_engine::{OperatorError, ResetScope};
use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::{RunStatus, TaskStatus};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sea_orm::{
    AccessMode, ColumnTrait, DbBackend, EntityTrait, IsolationLevel, QueryFilter, QueryOrder,
    TransactionTrait,
};

use crate::harness::TestEnv;

/// Commands fired per database.
const COMMANDS: usize = 300;

/// Two slots at most; tasks short enough that runs finish while commands
/// arrive, one that fails now and then, and a weak edge.
const DAG: &str = r#"
name: busy
max_active_runs: 2
tasks:
  - { name: extract, command: "sleep 0.2" }
  - { name: transform, command: "sleep 0.3; test $((RANDOM % 4)) -ne 0", depends_on: [extract], retry: { max: 0 } }
  - { name: load, command: "sleep 0.1", depends_on: [transform] }
  - { name: audit, command: "sleep 0.2", depends_on: [{ task: extract, type: WEAK }] }
"#;

const MAX_ACTIVE_RUNS: usize = 2;

/// What the DAG's runs and instances look like now, read in one snapshot
/// (PostgreSQL's REPEATABLE READ; a SQLite transaction reads one): two
/// reads apart could see a run and its tasks at different moments.
async fn snapshot(env: &TestEnv, dag_id: i64) -> (Vec<dag_run::Model>, Vec<task_instance::Model>) {
    let isolation = (env.db.get_database_backend() == DbBackend::Postgres)
        .then_some(IsolationLevel::RepeatableRead);
    let txn = env
        .db
        .begin_with_config(isolation, Some(AccessMode::ReadOnly))
        .await
        .expect("begin a read");
    let runs = dag_run::Entity::find()
        .filter(dag_run::Column::DagId.eq(dag_id))
        .order_by_asc(dag_run::Column::Id)
        .all(&txn)
        .await
        .expect("query runs");
    let instances = task_instance::Entity::find()
        .filter(task_instance::Column::DagRunId.is_in(runs.iter().map(|r| r.id)))
        .order_by_asc(task_instance::Column::Id)
        .all(&txn)
        .await
        .expect("query instances");
    txn.commit().await.expect("end the read");
    (runs, instances)
}

/// The invariants, or what broke them.
fn broken(runs: &[dag_run::Model], instances: &[task_instance::Model]) -> Option<String> {
    let running = runs
        .iter()
        .filter(|r| r.status == RunStatus::Running)
        .count();
    if running > MAX_ACTIVE_RUNS {
        return Some(format!(
            "{running} runs RUNNING under max_active_runs {MAX_ACTIVE_RUNS}"
        ));
    }
    let under_way = |status: TaskStatus| {
        matches!(
            status,
            TaskStatus::Queued | TaskStatus::Running | TaskStatus::UpForRetry
        )
    };
    for run in runs {
        let mine = instances.iter().filter(|i| i.dag_run_id == run.id);
        if run.status.is_terminal()
            && let Some(live) = mine.clone().find(|i| !i.status.is_terminal())
        {
            return Some(format!(
                "run {} is {} while its task {} is {}",
                run.id, run.status, live.task_name, live.status
            ));
        }
        if run.status == RunStatus::Queued
            && let Some(live) = mine.clone().find(|i| under_way(i.status))
        {
            return Some(format!(
                "run {} waits for a slot while its task {} is {}",
                run.id, live.task_name, live.status
            ));
        }
    }
    None
}

async fn fire_commands(env: TestEnv) {
    let seed: u64 = std::env::var("DATAJUMP_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("operator_sequences seed: {seed} (replay with DATAJUMP_TEST_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    env.apply(DAG).await;
    let dag_id = env.dag_id("busy").await;
    let _resolver = env.spawn_resolver().await;
    let _ticker = env.spawn_ticker().await;
    let _runner = env.spawn_runner("r1", &["default"], 8).await;

    let mut accepted: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for step in 0..COMMANDS {
        let (runs, instances) = snapshot(&env, dag_id).await;
        let pick = rng.random_range(0..100);
        // Kills mostly aim at running runs, reruns, clears and marks mostly
        // at finished ones, and any of them sometimes at any run: a command
        // sent to the wrong state must be refused, not misapplied.
        let wanted: Vec<&dag_run::Model> = match pick {
            12..45 => runs
                .iter()
                .filter(|r| r.status == RunStatus::Running)
                .collect(),
            _ => runs.iter().filter(|r| r.status.is_terminal()).collect(),
        };
        let pool: Vec<&dag_run::Model> = if wanted.is_empty() || rng.random_bool(0.2) {
            runs.iter().collect()
        } else {
            wanted
        };
        let run = (!pool.is_empty()).then(|| pool[rng.random_range(0..pool.len())].clone());
        let instance = run.as_ref().and_then(|run| {
            let mine: Vec<&task_instance::Model> = instances
                .iter()
                .filter(|i| i.dag_run_id == run.id)
                .collect();
            (!mine.is_empty()).then(|| mine[rng.random_range(0..mine.len())].clone())
        });
        let refused = |result: Result<Vec<task_instance::Model>, OperatorError>| match result {
            Ok(_) => false,
            Err(
                OperatorError::Live(..) | OperatorError::RunLive(..) | OperatorError::RunWaiting(_),
            ) => true,
            Err(e) => panic!("step {step} (seed {seed}): {e}"),
        };
        let (command, ok) = match (pick, &run, &instance) {
            (0..12, _, _) | (_, None, _) | (_, _, None) => {
                env.trigger("busy").await;
                ("trigger", true)
            }
            (12..22, Some(run), _) => {
                let killed = env.kill_run(run.id).await.expect("kill run");
                ("kill run", killed.is_some())
            }
            (22..45, _, Some(instance)) => {
                let ok = match env.kill_instance(instance.id).await {
                    Ok(killed) => killed.is_some(),
                    Err(OperatorError::RunWaiting(_)) => false,
                    Err(e) => panic!("step {step} (seed {seed}): {e}"),
                };
                ("kill task", ok)
            }
            (45..60, Some(run), _) => ("rerun", !refused(env.reset(run.id, ResetScope::All).await)),
            (60..70, Some(run), _) => (
                "rerun failed-only",
                !refused(env.reset(run.id, ResetScope::FailedOnly).await),
            ),
            (70..85, Some(run), Some(instance)) => {
                let scope = ResetScope::Task {
                    task_id: instance.task_id,
                    downstream: rng.random_bool(0.5),
                };
                ("clear", !refused(env.reset(run.id, scope).await))
            }
            (_, _, Some(instance)) => {
                let to = if rng.random_bool(0.5) {
                    TaskStatus::Success
                } else {
                    TaskStatus::Failed
                };
                ("mark", !refused(env.mark(instance.id, to).await))
            }
        };
        let tally = accepted.entry(command).or_default();
        tally.0 += usize::from(ok);
        tally.1 += 1;
        let (runs, instances) = snapshot(&env, dag_id).await;
        if let Some(problem) = broken(&runs, &instances) {
            panic!("after step {step}, {command} (seed {seed}): {problem}");
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..60))).await;
    }

    // Every run ends, and the invariants hold throughout.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        env.check_roles();
        let (runs, instances) = snapshot(&env, dag_id).await;
        if let Some(problem) = broken(&runs, &instances) {
            panic!("after the commands (seed {seed}): {problem}");
        }
        if runs.iter().all(|r| r.status.is_terminal()) {
            assert!(
                instances.iter().all(|i| i.status.is_terminal()),
                "seed {seed}: a finished run kept a live task"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: runs never finished: {:?}",
            runs.iter()
                .filter(|r| !r.status.is_terminal())
                .map(|r| (r.id, r.status))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("seed {seed}: accepted / sent per command: {accepted:?}");
    let (ok, sent) = accepted
        .iter()
        .filter(|(command, _)| **command != "trigger")
        .fold((0, 0), |(ok, sent), (_, (a, s))| (ok + a, sent + s));
    assert!(sent >= COMMANDS / 2, "seed {seed}: {accepted:?}");
    assert!(
        ok * 10 >= sent * 3,
        "seed {seed}: only {ok} of {sent} operator commands were accepted: {accepted:?}"
    );
    for command in ["rerun", "clear", "mark", "kill task", "kill run"] {
        assert!(
            accepted.get(command).is_some_and(|(ok, _)| *ok > 0),
            "seed {seed}: no {command} was ever accepted: {accepted:?}"
        );
    }
    // A rerun while the DAG is at its limit waits for a slot, then runs.
    let finished = snapshot(&env, dag_id).await.0[0].clone();
    let busy = [env.trigger("busy").await, env.trigger("busy").await];
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut running = 0;
        for key in &busy {
            running += usize::from(
                env.run_by_key(key).await.map(|r| r.status) == Some(RunStatus::Running),
            );
        }
        if running == MAX_ACTIVE_RUNS {
            break;
        }
        assert!(Instant::now() < deadline, "the two new runs never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    env.reset(finished.id, ResetScope::All)
        .await
        .expect("rerun a finished run");
    assert_eq!(
        env.run_by_key(&finished.dedup_key).await.map(|r| r.status),
        Some(RunStatus::Queued),
        "seed {seed}: a rerun at max_active_runs waits for a slot"
    );
    let rerun = env
        .wait_run(&finished.dedup_key, Duration::from_secs(60))
        .await;
    assert!(rerun.status.is_terminal());
    let (runs, instances) = snapshot(&env, dag_id).await;
    assert_eq!(broken(&runs, &instances), None, "seed {seed}");
}

both_dbs!(
    random_operator_commands_never_corrupt_a_run,
    |env| async move {
        fire_commands(env).await;
    }
);
