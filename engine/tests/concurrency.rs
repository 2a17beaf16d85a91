//! True concurrency, which the seeded model test does not have: two
//! runners call the engine at once on PostgreSQL, each on its own pooled
//! connection, claiming and ending the instances of three runs of a wide
//! fan-in — the same instances raced for, the same join counted into from
//! both sides at once. Interleavings come from the database, not a seed,
//! so this test is not replayed from one; it checks the invariants of
//! `env/invariants.rs` at the end, that each instance was queued once per
//! attempt (a join released once), and that every run ended as its tasks
//! did.

mod env;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use datajump_engine::{AttemptEnd, Effects};
use datajump_shared::entities::task_instance;
use datajump_shared::{RunId, RunStatus, TaskStatus};
use env::EngineEnv;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

/// Middle tasks between the root and the join.
const WIDTH: usize = 24;

fn fan_in() -> String {
    let mut yaml = String::from(
        "name: fan_in\ntasks:\n  - { name: root, type: NOOP, retry: { max: 1, interval: 0 } }\n",
    );
    for i in 0..WIDTH {
        yaml.push_str(&format!(
            "  - {{ name: m{i}, type: NOOP, depends_on: [root], retry: {{ max: 1, interval: 0 }} }}\n"
        ));
    }
    let mids: Vec<String> = (0..WIDTH).map(|i| format!("m{i}")).collect();
    yaml.push_str(&format!(
        "  - {{ name: join, type: NOOP, depends_on: [{}], retry: {{ max: 1, interval: 0 }} }}\n",
        mids.join(", ")
    ));
    yaml.push_str("  - { name: tail, type: NOOP, depends_on: [{ task: join, type: WEAK }], retry: { max: 1, interval: 0 } }\n");
    yaml
}

/// Each QUEUED `(instance, attempt)` the engine released, with how often.
#[derive(Default)]
struct Released(Mutex<HashMap<(i64, i32), u32>>);

impl Released {
    fn note(&self, effects: &Effects) {
        let mut seen = self.0.lock().expect("not poisoned");
        for row in effects.queued() {
            *seen.entry((row.id, row.attempt)).or_default() += 1;
        }
    }

    fn twice(&self) -> Vec<(i64, i32)> {
        let seen = self.0.lock().expect("not poisoned");
        seen.iter()
            .filter(|(_, count)| **count > 1)
            .map(|(key, _)| *key)
            .collect()
    }
}

/// One runner: claims a random QUEUED instance of `runs` and ends it
/// (success mostly, a failure now and then, retried once), until every
/// run has ended. Returns the claims it won.
async fn runner(env: &EngineEnv, runs: &[RunId], seed: u64, released: &Released) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let ids: Vec<i64> = runs.iter().map(|run| run.0).collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut won = 0;
    loop {
        assert!(
            Instant::now() < deadline,
            "the runs did not end in 2 minutes"
        );
        let queued = task_instance::Entity::find()
            .filter(task_instance::Column::DagRunId.is_in(ids.clone()))
            .filter(task_instance::Column::Status.eq(TaskStatus::Queued))
            .all(&env.db)
            .await
            .expect("queued instances");
        if queued.is_empty() {
            let mut ended = true;
            for run in runs {
                ended &= env.run(*run).await.status.is_terminal();
            }
            if ended {
                return won;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        }
        let row = &queued[rng.random_range(0..queued.len())];
        let (execution, effects) = env.claim(row).await;
        released.note(&effects);
        let Some(execution) = execution else {
            continue; // the other runner won it
        };
        won += 1;
        let claimed = env.instance_by_id(row.id).await;
        let end = if rng.random_bool(0.1) && claimed.retries_used == 0 {
            AttemptEnd::Retry { retry_at: env.now }
        } else {
            AttemptEnd::Terminal(TaskStatus::Success)
        };
        let retried = matches!(end, AttemptEnd::Retry { .. });
        released.note(&env.end(&claimed, execution, end).await);
        if retried {
            let waiting = env.instance_by_id(claimed.id).await;
            released.note(&env.retry_due(&waiting).await);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runners_racing_on_postgres_keep_the_invariants() {
    let Some(env) = EngineEnv::postgres().await else {
        return;
    };
    let released = Released::default();
    let dag = env.apply(&fan_in()).await;
    let mut runs = Vec::new();
    for date in ["2026-01-04", "2026-01-05", "2026-01-06"] {
        let (run, effects) = env.fire(dag, env::date(date)).await;
        released.note(&effects);
        runs.push(run.expect("a run"));
    }

    let (first, second) = tokio::join!(
        runner(&env, &runs, 1, &released),
        runner(&env, &runs, 2, &released)
    );
    assert!(
        first > 0 && second > 0,
        "both runners must have run tasks for this to test a race: {first} and {second}"
    );

    assert_eq!(released.twice(), [], "(instance, attempt) queued twice");
    let broken = env::invariants::violations(&env.all_runs().await, &env.all_instances().await);
    assert!(broken.is_empty(), "{broken:#?}");
    for run in &runs {
        assert_eq!(env.run(*run).await.status, RunStatus::Success);
        let statuses = env.statuses(*run).await;
        assert!(
            statuses
                .values()
                .all(|status| *status == TaskStatus::Success),
            "{statuses:?}"
        );
    }
}
