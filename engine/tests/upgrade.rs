//! The upgrade test: each database an earlier build wrote
//! (`tests/fixtures/*.sqlite`, see `tests/fixtures/README.md`) migrates to
//! this build's schema, and every stored JSON value that the
//! code reads into a type reads into it. Much of that code falls back to a
//! default when a value does not read (a `children` list that does not
//! read releases no child), so a change to one of those types that no
//! longer reads what an earlier release stored would otherwise show only
//! as runs that silently stop; here it fails, naming the table, the row
//! and the column.
//!
//! `write_the_fixture` (ignored; run it by name) writes a new fixture.

mod env;

use std::path::{Path, PathBuf};

use datajump_engine::AttemptEnd;
use datajump_shared::alerts::{AlertConfig, Webhook};
use datajump_shared::content::TaskContent;
use datajump_shared::datasets::Condition;
use datajump_shared::entities::{
    StoredJson, alert, dag, dag_run, dag_version_plan, schedule, task, task_instance,
};
use datajump_shared::outputs::Outputs;
use datajump_shared::{RunId, TaskStatus};
use env::EngineEnv;
use sea_orm::{EntityTrait, QueryOrder};
use serde::de::DeserializeOwned;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// Says which row's typed column did not read, if it did not.
fn typed<T: DeserializeOwned>(problems: &mut Vec<String>, at: &str, stored: &StoredJson<T>) {
    if let Err(e) = stored.read() {
        problems.push(format!("{at}: {e}"));
    }
}

/// Reads `value` as a `T`, or says which row's column did not read.
fn read<T: DeserializeOwned>(
    problems: &mut Vec<String>,
    at: &str,
    value: &serde_json::Value,
) -> Option<T> {
    match serde_json::from_value(value.clone()) {
        Ok(read) => Some(read),
        Err(e) => {
            problems.push(format!("{at}: {e}"));
            None
        }
    }
}

#[tokio::test]
async fn databases_earlier_builds_wrote_migrate_and_every_json_column_reads() {
    let mut read = 0;
    for entry in std::fs::read_dir(fixtures()).expect("tests/fixtures") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|ext| ext == "sqlite") {
            upgrade_and_read(&path).await;
            read += 1;
        }
    }
    assert!(read > 0, "no fixture in {}", fixtures().display());
}

/// Migrates a copy of `fixture` and reads every JSON column of it.
async fn upgrade_and_read(fixture: &Path) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let copy = dir.path().join("installation.sqlite");
    std::fs::copy(fixture, &copy).expect("the fixture");
    let env = EngineEnv::sqlite_at(&copy).await;
    let db = &env.db;
    let mut problems = Vec::new();

    let instances = task_instance::Entity::find()
        .order_by_asc(task_instance::Column::Id)
        .all(db)
        .await
        .expect("task instances");
    let mut with_outputs = 0;
    for row in &instances {
        let at = |column: &str| format!("task_instance {} ({}).{column}", row.id, row.task_name);
        typed(&mut problems, &at("spec"), &row.spec);
        typed(&mut problems, &at("children"), &row.children);
        if let Some(outputs) = &row.outputs {
            with_outputs += 1;
            typed(&mut problems, &at("outputs"), outputs);
        }
    }
    let plans = dag_version_plan::Entity::find()
        .all(db)
        .await
        .expect("plans");
    for row in &plans {
        let at = format!("dag_version_plan {} v{}.plan", row.dag_id, row.version);
        typed(&mut problems, &at, &row.plan);
    }
    for run in dag_run::Entity::find().all(db).await.expect("runs") {
        if !plans
            .iter()
            .any(|plan| plan.dag_id == run.dag_id && plan.version == run.dag_version)
        {
            problems.push(format!(
                "dag_run {}: no plan kept for its DAG {} version {}",
                run.id, run.dag_id, run.dag_version
            ));
        }
    }
    for row in dag::Entity::find().all(db).await.expect("DAGs") {
        if let Some(config) = &row.alert_config {
            let at = format!("dag {} ({}).alert_config", row.id, row.name);
            read::<AlertConfig>(&mut problems, &at, config);
        }
    }
    let tasks = task::Entity::find().all(db).await.expect("tasks");
    for row in &tasks {
        let at = |column: &str| format!("task {} ({}).{column}", row.id, row.name);
        if let Err(e) = TaskContent::parse(row.task_type, &row.content) {
            problems.push(format!("{}: {e}", at("content")));
        }
        read::<Vec<i32>>(
            &mut problems,
            &at("retry_on_exit_codes"),
            &row.retry_on_exit_codes,
        );
        if let Some(datasets) = &row.datasets {
            read::<Vec<String>>(&mut problems, &at("datasets"), datasets);
        }
    }
    for row in schedule::Entity::find().all(db).await.expect("schedules") {
        if let Some(condition) = &row.data_condition {
            let at = format!("schedule {} ({}).data_condition", row.id, row.name);
            read::<Condition>(&mut problems, &at, condition);
        }
    }
    for row in alert::Entity::find().all(db).await.expect("alerts") {
        read::<Webhook>(
            &mut problems,
            &format!("alert {}.target", row.id),
            &row.target,
        );
    }
    assert!(problems.is_empty(), "{}: {problems:#?}", fixture.display());

    // A fixture that lost its rows would pass the reads above vacuously.
    assert!(
        instances.len() >= 30 && with_outputs >= 10 && plans.len() >= 10 && tasks.len() >= 15,
        "{} holds too little to test: {} instances ({with_outputs} with outputs), {} version plans, {} tasks",
        fixture.display(),
        instances.len(),
        plans.len(),
        tasks.len()
    );
}

/// Writes `tests/fixtures/installation.sqlite` anew: the example DAGs of
/// `dags/` applied, a run of each, and their tasks run by the engine —
/// successes with outputs, failures, a retry — as a runner would.
#[tokio::test]
#[ignore = "writes the fixture: run by name when a release changes what is stored"]
async fn write_the_fixture() {
    let target = fixtures().join("installation.sqlite");
    let _ = std::fs::remove_file(&target);
    let env = EngineEnv::sqlite_at(&target).await;
    let dags = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dags");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dags)
        .expect("dags/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    let mut runs = Vec::new();
    // The examples declare no alerts.
    let alerting = "name: fixture_alerts\nalerts:\n  webhooks: [{ url: 'http://127.0.0.1:9/hook' }]\ntasks: [{ name: a, command: 'true' }]\n";
    let texts = files
        .iter()
        .map(|file| std::fs::read_to_string(file).expect("a DAG file"))
        .chain([alerting.to_owned()]);
    for yaml in texts {
        let dag = env.apply(&yaml).await;
        for date in ["2026-01-04", "2026-01-05"] {
            let (run, _) = env.fire(dag, env::date(date)).await;
            runs.extend(run);
        }
    }
    for (turn, run) in runs.iter().enumerate() {
        run_to_the_end(&env, *run, turn).await;
    }
    // One file, without its write-ahead log.
    env.execute("PRAGMA wal_checkpoint(TRUNCATE)").await;
    env.db.clone().close().await.expect("closed");
}

/// Runs every task of `run` a runner may take: the first task of every
/// third run fails once and is retried, of every fourth fails for good,
/// and every other task declares outputs.
async fn run_to_the_end(env: &EngineEnv, run: RunId, turn: usize) {
    for step in 0..200_u32 {
        let queued: Vec<task_instance::Model> = env
            .instances(run)
            .await
            .into_values()
            .filter(|row| row.status == TaskStatus::Queued)
            .collect();
        let Some(row) = queued.first() else {
            return;
        };
        let (execution, _) = env.claim(row).await;
        let execution = execution.expect("the only claim wins");
        let claimed = env.instance(run, &row.task_name).await;
        let retried = step == 0 && turn.is_multiple_of(3);
        let end = if retried {
            AttemptEnd::Retry { retry_at: env.now }
        } else if step == 0 && turn % 4 == 1 {
            env::failure()
        } else {
            env::success()
        };
        let outputs = step
            .is_multiple_of(2)
            .then(|| Outputs::from([("rows".to_owned(), format!("{step}"))]));
        let _ = env.end_declaring(&claimed, execution, end, outputs).await;
        if retried {
            let waiting = env.instance(run, &row.task_name).await;
            let _ = env.retry_due(&waiting).await;
        }
    }
}
