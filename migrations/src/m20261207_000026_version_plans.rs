//! A run's plan is kept once per DAG version (`dag_version_plan`), not
//! copied into every run (`dag_run_plan`): every run of a version has the
//! same plan, and writing it again with each run was a large part of what
//! creating a run cost under load (issue 49). Each version that has runs
//! keeps the snapshot of its earliest run.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DagVersionPlan {
    Table,
    DagId,
    Version,
    Plan,
}

#[derive(DeriveIden)]
enum DagRunPlan {
    Table,
    DagRunId,
    Plan,
}

/// One snapshot per (DAG, version): its earliest run's.
const CARRY_OVER: &str = "INSERT INTO dag_version_plan (dag_id, version, plan)
    SELECT r.dag_id, r.dag_version, p.plan
    FROM dag_run_plan p JOIN dag_run r ON r.id = p.dag_run_id
    WHERE p.dag_run_id IN (
        SELECT MIN(p2.dag_run_id)
        FROM dag_run_plan p2 JOIN dag_run r2 ON r2.id = p2.dag_run_id
        GROUP BY r2.dag_id, r2.dag_version)";

/// Back: every run gets its version's plan.
const CARRY_BACK: &str = "INSERT INTO dag_run_plan (dag_run_id, plan)
    SELECT r.id, v.plan
    FROM dag_run r JOIN dag_version_plan v
      ON v.dag_id = r.dag_id AND v.version = r.dag_version";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DagVersionPlan::Table)
                    .if_not_exists()
                    .col(big_integer(DagVersionPlan::DagId))
                    .col(integer(DagVersionPlan::Version))
                    .col(json(DagVersionPlan::Plan))
                    .primary_key(
                        Index::create()
                            .col(DagVersionPlan::DagId)
                            .col(DagVersionPlan::Version),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(CARRY_OVER)
            .await?;
        manager
            .drop_table(Table::drop().table(DagRunPlan::Table).to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DagRunPlan::Table)
                    .if_not_exists()
                    .col(big_integer(DagRunPlan::DagRunId).primary_key())
                    .col(json(DagRunPlan::Plan))
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(CARRY_BACK)
            .await?;
        manager
            .drop_table(Table::drop().table(DagVersionPlan::Table).to_owned())
            .await
    }
}
