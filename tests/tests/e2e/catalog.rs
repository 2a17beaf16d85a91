//! Invariant 4 for DAG files: a cyclic DAG gets a clear error and changes nothing.

use datajump_shared::entities::{dag, schedule, task, task_dependency};
use sea_orm::{DatabaseConnection, EntityTrait, PaginatorTrait};

const CYCLIC: &str = r#"
name: cyclic
schedules:
  - cron: "0 0 2 * * ?"
tasks:
  - { name: extract, command: "true" }
  - { name: transform, command: "true", depends_on: [extract, publish] }
  - { name: load, command: "true", depends_on: [transform] }
  - { name: publish, command: "true", depends_on: [load] }
"#;

/// Rows in (dag, task, task_dependency, schedule).
async fn counts(db: &DatabaseConnection) -> (u64, u64, u64, u64) {
    (
        dag::Entity::find().count(db).await.expect("count dag"),
        task::Entity::find().count(db).await.expect("count task"),
        task_dependency::Entity::find()
            .count(db)
            .await
            .expect("count task_dependency"),
        schedule::Entity::find()
            .count(db)
            .await
            .expect("count schedule"),
    )
}

fn assert_names_cycle(error: &str) {
    assert!(error.contains("cycle"), "the error says cycle: {error}");
    for name in ["transform", "load", "publish"] {
        assert!(error.contains(name), "the cycle names {name}: {error}");
    }
    assert!(
        !error.contains("-> extract") && !error.contains("extract ->"),
        "extract is not in the cycle: {error}"
    );
}

both_dbs!(cyclic_dag_is_rejected, |env| async move {
    let error = env
        .try_apply(CYCLIC)
        .await
        .expect_err("a cyclic DAG must not apply");
    assert_names_cycle(&error);
    assert_eq!(counts(&env.db).await, (0, 0, 0, 0), "nothing was stored");

    // Updating a stored DAG into a cycle leaves the stored one as it was.
    let acyclic = CYCLIC.replace("depends_on: [extract, publish]", "depends_on: [extract]");
    let report = env.apply(&acyclic).await;
    assert!(report.created);
    let before = counts(&env.db).await;
    assert_eq!(before, (1, 4, 3, 1));
    let stored = dag::Entity::find().all(&env.db).await.expect("query dag");
    let error = env
        .try_apply(CYCLIC)
        .await
        .expect_err("a cyclic update must not apply");
    assert_names_cycle(&error);
    assert_eq!(counts(&env.db).await, before);
    assert_eq!(
        dag::Entity::find().all(&env.db).await.expect("query dag"),
        stored,
        "the DAG row (and its version) is unchanged"
    );
});
