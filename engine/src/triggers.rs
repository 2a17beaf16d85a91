//! Dependency triggers: a run that ends SUCCESS starts a run of each DAG
//! with an active `after:` schedule naming its DAG, with its business date
//! (docs/ARCHITECTURE.md "Dependency triggers").
//!
//! The fires are found in the transaction that finishes the run and
//! published after its commit, like any other effect; a fire lost between
//! the two is found again by [`owed_dependency_fires`], which the ticker
//! asks every few seconds. Each fire's `dedup_key` names the schedule and
//! the upstream run, so however often it is sent, one run is created.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_shared::RunStatus;
use datajump_shared::entities::{dag, dag_run, schedule};
use datajump_shared::kinds::ScheduleKind;
use datajump_shared::messages::FireMsg;
use datajump_shared::subjects::Priority;
use sea_orm::sea_query::Query;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect,
};

use crate::sql::IN_LIST_MAX;

/// The active `after:` schedules naming one of `dag_ids`' DAGs, with the
/// id of the DAG each names and the fire priority of its own. A schedule names only a DAG of its own DAG's
/// project: another project's DAG of that name is, to it, a DAG that does
/// not exist (docs/SECURITY.md, "Projects").
async fn schedules_after<C: ConnectionTrait>(
    conn: &C,
    dag_ids: &[i64],
) -> Result<Vec<(i64, schedule::Model, Priority)>, DbErr> {
    let mut found = Vec::new();
    for chunk in dag_ids.chunks(IN_LIST_MAX) {
        let names_query = Query::select()
            .column(dag::Column::Name)
            .from(dag::Entity)
            .and_where(dag::Column::Id.is_in(chunk.iter().copied()))
            .to_owned();
        let schedules = schedule::Entity::find()
            .filter(schedule::Column::Kind.eq(ScheduleKind::After))
            .filter(schedule::Column::Active.eq(true))
            .filter(schedule::Column::AfterDag.in_subquery(names_query))
            .all(conn)
            .await?;
        if schedules.is_empty() {
            continue;
        }
        let upstream: Vec<(i64, String, i64)> = dag::Entity::find()
            .filter(dag::Column::Id.is_in(chunk.iter().copied()))
            .all(conn)
            .await?
            .into_iter()
            .map(|d| (d.id, d.name, d.project_id))
            .collect();
        let downstream: HashMap<i64, (i64, i32)> = dag::Entity::find()
            .select_only()
            .columns([
                dag::Column::Id,
                dag::Column::ProjectId,
                dag::Column::FirePriority,
            ])
            .filter(dag::Column::Id.is_in(schedules.iter().map(|s| s.dag_id)))
            .into_tuple::<(i64, i64, i32)>()
            .all(conn)
            .await?
            .into_iter()
            .map(|(id, project, priority)| (id, (project, priority)))
            .collect();
        for after in schedules {
            let Some(&(project, priority)) = downstream.get(&after.dag_id) else {
                continue;
            };
            if let Some((id, _, _)) = upstream.iter().find(|(_, name, upstream_project)| {
                after.after_dag.as_deref() == Some(name.as_str()) && project == *upstream_project
            }) {
                found.push((*id, after, Priority::of(priority)));
            }
        }
    }
    Ok(found)
}

/// The fires the runs `finished` owe: one per SUCCESS run and `after:`
/// schedule naming its DAG. One query when none of their DAGs has
/// dependants, which is the common case. Called in the transaction that
/// finishes the runs: a schedule active then was active when they ended.
pub(crate) async fn owed_fires<C: ConnectionTrait>(
    conn: &C,
    finished: &[dag_run::Model],
) -> Result<Vec<FireMsg>, DbErr> {
    fires_of(conn, finished, Ended::Now).await
}

/// When the runs a fire is owed for ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// In the transaction asking: every active schedule counts them.
    Now,
    /// Earlier: only schedules active since before they ended count them
    /// ([`schedule::Model::counts_from`]), so a schedule made, resumed or
    /// put online later does not fire for them.
    Before,
}

async fn fires_of<C: ConnectionTrait>(
    conn: &C,
    finished: &[dag_run::Model],
    ended: Ended,
) -> Result<Vec<FireMsg>, DbErr> {
    let mut dag_ids: Vec<i64> = finished
        .iter()
        .filter(|run| run.status == RunStatus::Success)
        .map(|run| run.dag_id)
        .collect();
    if dag_ids.is_empty() {
        return Ok(Vec::new());
    }
    dag_ids.sort_unstable();
    dag_ids.dedup();
    let schedules = schedules_after(conn, &dag_ids).await?;
    Ok(finished
        .iter()
        .filter(|run| run.status == RunStatus::Success)
        .flat_map(|run| {
            schedules
                .iter()
                .filter(move |(upstream, _, _)| *upstream == run.dag_id)
                .filter(move |(_, after, _)| match ended {
                    Ended::Now => true,
                    Ended::Before => run.finished_at.is_some_and(|at| at >= after.counts_from()),
                })
                .map(move |(_, after, priority)| FireMsg::after(after, *priority, run))
        })
        .collect())
}

/// Fires decided between `since` and `before` whose runs do not exist:
/// those of runs that ended SUCCESS (`after:` schedules) and of data
/// schedules met ([`crate::datasets`]), lost between a commit and its
/// publish, or owed by a run an operator's mark ended; none for a run
/// that ended, or a condition met, before its schedule last began to fire
/// (made, resumed or put online: docs/DAG_FORMAT.md "Dependency
/// triggers"), which the resolver may have skipped as paused. The window should
/// lie inside the fire stream's duplicate window, so a fire sent before is
/// dropped again by its id rather than acted on twice (it would create
/// nothing either way: its run key is taken).
pub async fn owed_trigger_fires(
    db: &DatabaseConnection,
    since: DateTime<Utc>,
    before: DateTime<Utc>,
) -> Result<Vec<FireMsg>, DbErr> {
    let upstream_names = Query::select()
        .column(schedule::Column::AfterDag)
        .from(schedule::Entity)
        .and_where(schedule::Column::Kind.eq(ScheduleKind::After))
        .and_where(schedule::Column::Active.eq(true))
        .to_owned();
    let upstream_dags = Query::select()
        .column(dag::Column::Id)
        .from(dag::Entity)
        .and_where(dag::Column::Name.in_subquery(upstream_names))
        .to_owned();
    let finished = dag_run::Entity::find()
        .filter(dag_run::Column::Status.eq(RunStatus::Success))
        .filter(dag_run::Column::FinishedAt.gte(since))
        .filter(dag_run::Column::FinishedAt.lt(before))
        .filter(dag_run::Column::DagId.in_subquery(upstream_dags))
        .all(db)
        .await?;
    let mut fires = fires_of(db, &finished, Ended::Before).await?;
    fires.extend(crate::datasets::owed_data_fires(db, since, before).await?);
    let mut missing = Vec::with_capacity(fires.len());
    for chunk in fires.chunks(IN_LIST_MAX) {
        let existing: std::collections::HashSet<String> = dag_run::Entity::find()
            .filter(dag_run::Column::DedupKey.is_in(chunk.iter().map(|f| f.dedup_key.clone())))
            .all(db)
            .await?
            .into_iter()
            .map(|run| run.dedup_key)
            .collect();
        missing.extend(
            chunk
                .iter()
                .filter(|fire| !existing.contains(&fire.dedup_key))
                .cloned(),
        );
    }
    Ok(missing)
}
