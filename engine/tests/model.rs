//! The seeded model test: random DAGs and random orders of whole engine
//! calls — claims, duplicate claims, ends (success, failure, retry), kills,
//! retries coming due, the deadline scan's look at a QUEUED instance
//! (republish or queue timeout), an operator's marks, run kills, reruns
//! and clears — on one database, with the invariants of
//! `env/invariants.rs` checked after every step and every run required to
//! end. A sequence is decided by its seed alone, so a failure prints the
//! seed and the command that replays it.
//!
//! `DATAJUMP_MODEL_SEQUENCES` (default 2,000) sets how many sequences run;
//! `DATAJUMP_MODEL_SEED` the first seed (default 1), for a replay or a long
//! local run.

mod env;

use std::collections::{BTreeMap, HashSet};

use chrono::Duration;
use datajump_engine::{AttemptEnd, Effects, ResetScope};
use datajump_shared::entities::task_instance;
use datajump_shared::{RunId, TaskStatus};
use env::EngineEnv;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A random DAG of NOOP tasks, same-run dependencies only: its file and
/// each task's retry budget.
fn random_dag(rng: &mut StdRng, name: &str) -> (String, BTreeMap<String, i32>) {
    let tasks = rng.random_range(2..=7);
    let mut yaml = format!("name: {name}\ntasks:\n");
    let mut retries = BTreeMap::new();
    for i in 0..tasks {
        let task = format!("t{i}");
        let strategy = match rng.random_range(0..12) {
            0..=4 => "ALL_SUCCESS",
            5..=6 => "ONE_SUCCESS",
            7 => "NONE_FAILED",
            8 => "ONE_FAILED",
            9 => "ALL_FAILED",
            _ => "ALL_DONE",
        };
        let enabled = rng.random_range(0..10) != 0;
        let max = rng.random_range(0..=2);
        // Two minutes: the deadline scan's second look ends it TIMEOUT.
        let queue_timeout = if rng.random_bool(0.25) { 120 } else { 0 };
        retries.insert(task.clone(), max);
        let mut deps = Vec::new();
        for parent in 0..i {
            if rng.random_bool(0.45) {
                let dep_type = if rng.random_bool(0.3) {
                    "WEAK"
                } else {
                    "STRONG"
                };
                deps.push(format!("{{ task: t{parent}, type: {dep_type} }}"));
            }
        }
        // A failure handler needs a STRONG parent to fail.
        let strategy = match strategy {
            "ONE_FAILED" | "ALL_FAILED" if !deps.iter().any(|d| d.contains("STRONG")) => "ALL_DONE",
            strategy => strategy,
        };
        yaml.push_str(&format!(
            "  - name: {task}\n    type: NOOP\n    strategy: {strategy}\n    enabled: {enabled}\n    queue_timeout: {queue_timeout}\n    retry: {{ max: {max}, interval: 60 }}\n    depends_on: [{}]\n",
            deps.join(", ")
        ));
    }
    (yaml, retries)
}

/// What a sequence may do next to one instance.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A runner claims its next attempt.
    Claim,
    /// Its running attempt ends: success, failure, or a retry.
    End(Outcome),
    /// A second copy of a work message claims a running instance.
    DuplicateClaim,
    /// The retry's time comes.
    RetryDue,
    /// The deadline scan finds it still QUEUED: its work is sent again,
    /// or it ends TIMEOUT once its queue timeout has passed.
    QueuedDue,
    /// An operator kills it (the resolver then propagates the kill).
    Kill,
    /// An operator marks it SUCCESS or FAILED by hand.
    Mark(TaskStatus),
    /// An operator kills its whole run.
    KillRun,
    /// An operator reruns the ended run, or clears this task (with its
    /// downstream or alone).
    Rerun(Rerun),
}

#[derive(Debug, Clone, Copy)]
enum Rerun {
    All,
    FailedOnly,
    Task { downstream: bool },
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Success,
    Failure,
    Retry,
}

/// The steps `row` allows.
fn steps(
    row: &task_instance::Model,
    retries_left: bool,
    operator: bool,
    run_ended: bool,
) -> Vec<Step> {
    let mut steps = if operator {
        operator_steps(row, run_ended)
    } else {
        Vec::new()
    };
    steps.extend(runner_steps(row, retries_left));
    steps
}

/// What an operator may do to `row`: mark anything but a RUNNING instance,
/// kill its run while it is live, rerun or clear once it has ended.
fn operator_steps(row: &task_instance::Model, run_ended: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if row.status != TaskStatus::Running {
        steps.push(Step::Mark(TaskStatus::Success));
        steps.push(Step::Mark(TaskStatus::Failed));
    }
    if !row.status.is_terminal() {
        steps.push(Step::KillRun);
    }
    if run_ended {
        steps.extend([
            Step::Rerun(Rerun::All),
            Step::Rerun(Rerun::FailedOnly),
            Step::Rerun(Rerun::Task { downstream: true }),
            Step::Rerun(Rerun::Task { downstream: false }),
        ]);
    }
    steps
}

/// What runners and the deadline scan may do to `row`.
fn runner_steps(row: &task_instance::Model, retries_left: bool) -> Vec<Step> {
    match row.status {
        TaskStatus::Queued => vec![Step::Claim, Step::Kill, Step::QueuedDue],
        TaskStatus::Running => {
            let mut steps = vec![
                Step::End(Outcome::Success),
                Step::End(Outcome::Failure),
                Step::DuplicateClaim,
                Step::Kill,
            ];
            if retries_left {
                steps.push(Step::End(Outcome::Retry));
            }
            steps
        }
        TaskStatus::UpForRetry => vec![Step::RetryDue, Step::Kill],
        _ => Vec::new(),
    }
}

/// Records the instances `effects` queued, by attempt: one queued twice
/// for the same attempt is an error.
fn note(
    queued_once: &mut HashSet<(i64, i32)>,
    effects: &Effects,
    trail: &[String],
) -> Result<(), String> {
    for row in effects.queued() {
        if !queued_once.insert((row.id, row.attempt)) {
            return Err(format!(
                "'{}' queued twice for attempt {} after {trail:?}",
                row.task_name, row.attempt
            ));
        }
    }
    Ok(())
}

/// Runs the sequence of `seed` in `env`; what went wrong, if anything.
async fn sequence(env: &mut EngineEnv, seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (yaml, retries) = random_dag(&mut rng, &format!("model_{seed}"));
    let dag = env.apply(&yaml).await;
    let (run, effects) = env.fire(dag, env::date("2026-01-04")).await;
    let run = run.ok_or("the fire created no run")?;
    let mut queued_once = HashSet::new();
    let mut trail = Vec::new();
    // An operator acts a few times at most, so every sequence can end.
    let mut operator_acts = rng.random_range(0..=6);
    note(&mut queued_once, &effects, &trail)?;
    for _ in 0..200 {
        let rows = env.instances(run).await;
        let run_ended = env.run(run).await.status.is_terminal();
        let mut choices = Vec::new();
        for row in rows.values() {
            let left = row.retries_used < retries[&row.task_name];
            for step in steps(row, left, operator_acts > 0, run_ended) {
                choices.push((row.clone(), step));
            }
        }
        if choices.is_empty() {
            break;
        }
        let (row, step) = choices[rng.random_range(0..choices.len())].clone();
        trail.push(format!("{step:?} {}", row.task_name));
        if matches!(step, Step::Mark(_) | Step::KillRun | Step::Rerun(_)) {
            operator_acts -= 1;
        }
        let effects = apply(env, run, &row, step).await?;
        // A mark, rerun or clear puts tasks back to be run again: each is
        // queued at most once per such reset.
        if matches!(step, Step::Mark(_) | Step::Rerun(_)) {
            queued_once.clear();
        }
        note(&mut queued_once, &effects, &trail)?;
        let runs = [env.run(run).await];
        let instances: Vec<_> = env.instances(run).await.into_values().collect();
        let broken = env::invariants::violations(&runs, &instances);
        if !broken.is_empty() {
            return Err(format!("after {trail:?}:\n{broken:#?}\n{yaml}"));
        }
    }
    let ended = env.run(run).await;
    if !ended.status.is_terminal() {
        let statuses = env.statuses(run).await;
        return Err(format!(
            "nothing is left to do but run {} is {:?}: {statuses:?} after {trail:?}\n{yaml}",
            run.0, ended.status
        ));
    }
    Ok(())
}

/// Applies one step to `row`.
async fn apply(
    env: &mut EngineEnv,
    run: RunId,
    row: &task_instance::Model,
    step: Step,
) -> Result<Effects, String> {
    let effects = match step {
        Step::Claim => {
            let (won, effects) = env.claim(row).await;
            if won.is_none() {
                return Err(format!("the only claim of '{}' lost", row.task_name));
            }
            effects
        }
        Step::End(outcome) => {
            let end = match outcome {
                Outcome::Success => AttemptEnd::Terminal(TaskStatus::Success),
                Outcome::Failure => AttemptEnd::Terminal(TaskStatus::Failed),
                Outcome::Retry => AttemptEnd::Retry {
                    retry_at: env.now + Duration::seconds(60),
                },
            };
            let execution = env.open_execution(row).await;
            env.end(row, execution, end).await
        }
        Step::DuplicateClaim => {
            let mut copy = row.clone();
            copy.attempt -= 1;
            copy.status = TaskStatus::Queued;
            let (won, effects) = env.claim(&copy).await;
            if won.is_some() {
                return Err(format!("a second claim of running '{}' won", row.task_name));
            }
            effects
        }
        Step::RetryDue => {
            env.now = row.deadline_at.unwrap_or(env.now).max(env.now);
            datajump_engine::retry_due(&env.db, row.instance_id(), row.status, env.now)
                .await
                .map_err(|e| e.to_string())?
                .unwrap_or_default()
        }
        Step::QueuedDue => {
            env.now = row.deadline_at.unwrap_or(env.now).max(env.now);
            datajump_engine::queued_due(&env.db, row, env.now)
                .await
                .map_err(|e| e.to_string())?
                .unwrap_or_default()
        }
        // A rerun or clear of what is still live is refused with a reason,
        // and nothing changes.
        Step::Rerun(rerun) => {
            let scope = match rerun {
                Rerun::All => ResetScope::All,
                Rerun::FailedOnly => ResetScope::FailedOnly,
                Rerun::Task { downstream } => ResetScope::Task {
                    task_id: row.task_id,
                    downstream,
                },
            };
            datajump_engine::reset(&env.db, run, scope, env.now)
                .await
                .unwrap_or_default()
        }
        // An instance a mark may not settle (QUEUED, waiting on another
        // run) is refused with a reason, and nothing changes.
        Step::Mark(to) => datajump_engine::mark(&env.db, row.instance_id(), to, env.now)
            .await
            .unwrap_or_default(),
        // The killed instances' completions are the resolver's to
        // propagate, as for one kill.
        Step::KillRun => {
            let mut effects = Effects::default();
            if let Some((killed, kill_effects)) = datajump_engine::kill_run(&env.db, run, env.now)
                .await
                .map_err(|e| e.to_string())?
            {
                effects.merge(kill_effects);
                let ids = killed
                    .iter()
                    .map(task_instance::Model::instance_id)
                    .collect();
                effects.merge(
                    datajump_engine::propagate(&env.db, ids, env.now)
                        .await
                        .map_err(|e| e.to_string())?,
                );
            }
            effects
        }
        Step::Kill => {
            let running = (row.status == TaskStatus::Running).then_some(row);
            let execution = match running {
                Some(row) => Some(env.open_execution(row).await),
                None => None,
            };
            let killed = datajump_engine::kill_instance(&env.db, row.instance_id(), env.now)
                .await
                .map_err(|e| e.to_string())?;
            let mut effects = Effects::default();
            if let Some((killed, kill_effects)) = killed {
                effects.merge(kill_effects);
                effects.merge(
                    datajump_engine::propagate(&env.db, vec![killed.instance_id()], env.now)
                        .await
                        .map_err(|e| e.to_string())?,
                );
            }
            // The runner of a killed attempt stops it and still records its
            // end, which must change nothing now.
            if let (Some(row), Some(execution)) = (running, execution) {
                effects.merge(env.end(row, execution, env::failure()).await);
            }
            effects
        }
    };
    Ok(effects)
}

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn random_dags_and_call_orders_keep_the_invariants() {
    let first = knob("DATAJUMP_MODEL_SEED", 1);
    let count = knob("DATAJUMP_MODEL_SEQUENCES", 2000);
    let mut env = EngineEnv::sqlite().await;
    for seed in first..first + count {
        if let Err(e) = sequence(&mut env, seed).await {
            panic!(
                "seed {seed}: {e}\nreplay: DATAJUMP_MODEL_SEED={seed} DATAJUMP_MODEL_SEQUENCES=1 \
                 cargo nextest run -p datajump-engine --test model"
            );
        }
    }
}
