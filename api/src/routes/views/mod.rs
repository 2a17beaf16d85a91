//! Answers shaped for the pages that draw a DAG and its history: a DAG's
//! runs × tasks grid (`/api/v1/dags/{dagId}/grid`), its graph of every
//! dependency (`/api/v1/dags/{dagId}/graph`, built in [`graph`]) and a run's
//! Gantt chart (`/api/v1/dags/instances/{instanceId}/gantt`).
//!
//! Each is one request of a few queries whatever the size: the grid reads
//! the page of runs, the DAG's tasks and every instance of those runs in
//! one query, and sends a cell as `[id, status, attempts]` only, so
//! 1,000 runs × 50 tasks stay one answer of a few hundred kilobytes.

use std::collections::{BTreeSet, HashMap};

use axum::extract::State;
use chrono::{DateTime, Utc};
use datajump_shared::TaskStatus;
use datajump_shared::entities::{dag, dag_run, execution, schedule, task_instance};
use futures::TryStreamExt;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use self::dto::{Gantt, GanttBar, Graph, Grid, GridCell, GridMap, GridQuery, GridRun, GridTask};
use super::shared::{find_dag, find_run};
use crate::AppState;
use crate::chunked::ChunkedJson;
use crate::definition;

use crate::error::{Error, Result};
use crate::extract::{Path, Query};

pub mod dto;
pub mod graph;

/// Runs a grid shows when the page asks for no number.
pub const DEFAULT_GRID_RUNS: u64 = 25;
/// Most runs one grid answer holds.
pub const MAX_GRID_RUNS: u64 = 1000;

/// `GET /api/v1/dags/{dagId}/grid?runs=&before=`: the DAG's tasks × its
/// runs by business date, latest first (or those after run `before` in
/// that order), a cell per task instance. Runs of one date come newest
/// first: a rerun or backfill of an old date is shown with that date.
pub async fn grid(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Query(query): Query<GridQuery>,
) -> Result<ChunkedJson<Grid>> {
    let dag = find_dag(&state, dag_id).await?;
    let limit = query.runs.unwrap_or(DEFAULT_GRID_RUNS);
    if !(1..=MAX_GRID_RUNS).contains(&limit) {
        return Err(Error::bad_request(format!(
            "invalid field `runs`: must be 1-{MAX_GRID_RUNS}, got {limit}"
        )));
    }
    let mut select = dag_run::Entity::find().filter(dag_run::Column::DagId.eq(dag.id));
    if let Some(before) = query.before {
        let after = find_run(&state, before).await?;
        if after.dag_id != dag.id {
            return Err(Error::bad_request(format!(
                "invalid field `before`: run {before} is not a run of this DAG"
            )));
        }
        select = select.filter(
            Condition::any()
                .add(dag_run::Column::BizDate.lt(after.biz_date))
                .add(
                    Condition::all()
                        .add(dag_run::Column::BizDate.eq(after.biz_date))
                        .add(dag_run::Column::Id.lt(after.id)),
                ),
        );
    }
    let mut runs = select
        .order_by_desc(dag_run::Column::BizDate)
        .order_by_desc(dag_run::Column::Id)
        .limit(limit + 1)
        .all(&state.db)
        .await?;
    let has_more = runs.len() as u64 > limit;
    runs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));

    let (task_rows, deps) = definition::tasks_of(&state.db, dag.id).await?;
    let ids: HashMap<i64, &str> = task_rows.iter().map(|t| (t.id, t.name.as_str())).collect();
    let same_run_edges: Vec<(&str, &str)> = deps
        .iter()
        .filter(|d| d.parent_dag.is_none() && d.offset_day == 0 && !d.previous_run)
        .filter_map(|d| Some((d.parent_task.as_str(), *ids.get(&d.task_id)?)))
        .collect();
    let names: Vec<&str> = task_rows.iter().map(|t| t.name.as_str()).collect();
    // Stored definitions have no cycle; should one appear, the grid still
    // shows every task, in stored order.
    let order = datajump_shared::graph::topological_order(&names, same_run_edges.iter().copied())
        .unwrap_or_else(|_| names.iter().map(|n| (*n).to_owned()).collect());
    let by_name: HashMap<&str, &datajump_shared::entities::task::Model> =
        task_rows.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut upstream: HashMap<&str, Vec<String>> = HashMap::new();
    for (parent, child) in &same_run_edges {
        upstream
            .entry(child)
            .or_default()
            .push((*parent).to_owned());
    }
    let mut tasks: Vec<GridTask> = order
        .iter()
        .filter_map(|name| by_name.get(name.as_str()))
        .map(|task| GridTask {
            id: Some(task.id),
            name: task.name.clone(),
            task_type: Some(task.task_type.as_str().to_owned()),
            upstream: upstream.remove(task.name.as_str()).unwrap_or_default(),
        })
        .collect();

    let mut instances: Vec<(i64, i64, String, TaskStatus, i32)> = Vec::new();
    // A mapped task's cell is its map's state, and opens its first item.
    let mut first_items: HashMap<(i64, String), (i32, i64)> = HashMap::new();
    let mut maps: HashMap<(i64, String), (i32, i32)> = HashMap::new();
    // A page holds at most MAX_GRID_RUNS runs: one statement's bound values
    // stay far below every backend's limit.
    let run_ids: Vec<i64> = runs.iter().map(|run| run.id).collect();
    if !run_ids.is_empty() {
        let mut rows = task_instance::Entity::find()
            .select_only()
            .columns([
                task_instance::Column::Id,
                task_instance::Column::DagRunId,
                task_instance::Column::TaskName,
                task_instance::Column::Status,
                task_instance::Column::Attempt,
                task_instance::Column::MapIndex,
                task_instance::Column::MapItems,
                task_instance::Column::MapFailed,
            ])
            .filter(task_instance::Column::DagRunId.is_in(run_ids))
            .into_tuple::<(i64, i64, String, TaskStatus, i32, i32, Option<i32>, i32)>()
            .stream(&state.db)
            .await?;
        while let Some((id, run_id, name, status, attempts, map_index, items, failed)) =
            rows.try_next().await?
        {
            if map_index == task_instance::PLANNED {
                if let Some(items) = items {
                    maps.insert((run_id, name.clone()), (items, failed));
                }
                instances.push((id, run_id, name, status, attempts));
            } else {
                let first = first_items.entry((run_id, name)).or_insert((map_index, id));
                if map_index < first.0 {
                    *first = (map_index, id);
                }
            }
        }
    }
    for (id, run_id, name, _, _) in &mut instances {
        if let Some((_, item)) = first_items.get(&(*run_id, name.clone())) {
            *id = *item;
        }
    }
    let removed: BTreeSet<&str> = instances
        .iter()
        .map(|i| i.2.as_str())
        .filter(|name| !by_name.contains_key(name))
        .collect();
    tasks.extend(removed.into_iter().map(|name| GridTask {
        id: None,
        name: name.to_owned(),
        task_type: None,
        upstream: Vec::new(),
    }));
    let row_of: HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let mut cells: HashMap<i64, Vec<Option<GridCell>>> = runs
        .iter()
        .map(|run| (run.id, vec![None; tasks.len()]))
        .collect();
    for (id, run_id, name, status, attempts) in &instances {
        if let (Some(row), Some(run)) = (row_of.get(name.as_str()), cells.get_mut(run_id)) {
            run[*row] = Some((*id, *status, *attempts));
        }
    }
    let mut maps_of: HashMap<i64, Vec<GridMap>> = HashMap::new();
    for ((run_id, name), (items, failed)) in maps {
        if let Some(&row) = row_of.get(name.as_str()) {
            maps_of
                .entry(run_id)
                .or_default()
                .push(GridMap { row, items, failed });
        }
    }
    let runs = runs
        .into_iter()
        .map(|run| GridRun {
            cells: cells.remove(&run.id).unwrap_or_default(),
            maps: maps_of
                .remove(&run.id)
                .map(|mut maps| {
                    maps.sort_unstable_by_key(|map| map.row);
                    maps
                })
                .unwrap_or_default(),
            id: run.id,
            run_key: run.dedup_key,
            biz_date: run.biz_date,
            status: run.status,
            trigger_type: run.trigger_type.as_str().to_owned(),
            dag_version: run.dag_version,
            start_time: run.created_at,
            end_time: run.finished_at,
        })
        .collect();
    Ok(ChunkedJson(Grid {
        dag_id: dag.id,
        tasks,
        runs,
        has_more,
    }))
}

/// `GET /api/v1/dags/{dagId}/graph`: the DAG's tasks and every dependency
/// between them, with stubs for other runs, other DAGs and datasets.
pub async fn graph(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
) -> Result<ChunkedJson<Graph>> {
    let dag = find_dag(&state, dag_id).await?;
    let (tasks, deps) = definition::tasks_of(&state.db, dag.id).await?;
    let schedules = schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag.id))
        .order_by_asc(schedule::Column::Id)
        .all(&state.db)
        .await?;
    let rows = graph::Rows {
        dag_id: dag.id,
        version: dag.version,
        tasks: &tasks,
        deps: &deps,
        schedules: &schedules,
    };
    let named: Vec<String> = rows.named_dags().into_iter().collect();
    let mut dag_ids = HashMap::new();
    // A DAG of another project is named as one that does not exist.
    for chunk in named.chunks(1000) {
        dag_ids.extend(
            dag::Entity::find()
                .select_only()
                .columns([dag::Column::Name, dag::Column::Id])
                .filter(dag::Column::ProjectId.eq(dag.project_id))
                .filter(dag::Column::Name.is_in(chunk.iter().cloned()))
                .into_tuple::<(String, i64)>()
                .all(&state.db)
                .await?,
        );
    }
    Ok(ChunkedJson(graph::build(&rows, &dag_ids)))
}

/// `GET /api/v1/dags/instances/{instanceId}/gantt`: every attempt of the
/// run's task instances, a bar each, by start.
pub async fn gantt(
    State(state): State<AppState>,
    Path(run_id): Path<i64>,
) -> Result<ChunkedJson<Gantt>> {
    let run = find_run(&state, run_id).await?;
    let names: HashMap<i64, String> = task_instance::Entity::find()
        .select_only()
        .columns([task_instance::Column::Id, task_instance::Column::TaskName])
        .filter(task_instance::Column::DagRunId.eq(run.id))
        .into_tuple::<(i64, String)>()
        .all(&state.db)
        .await?
        .into_iter()
        .collect();
    let mut attempts = Vec::new();
    let ids: Vec<i64> = names.keys().copied().collect();
    for chunk in ids.chunks(1000) {
        attempts.extend(
            execution::Entity::find()
                .select_only()
                .columns([
                    execution::Column::TaskInstanceId,
                    execution::Column::Attempt,
                    execution::Column::Status,
                    execution::Column::Worker,
                    execution::Column::StartTime,
                    execution::Column::EndTime,
                ])
                .filter(execution::Column::TaskInstanceId.is_in(chunk.iter().copied()))
                .into_tuple::<(
                    i64,
                    i32,
                    TaskStatus,
                    String,
                    DateTime<Utc>,
                    Option<DateTime<Utc>>,
                )>()
                .all(&state.db)
                .await?
                .into_iter()
                .map(|(id, attempt, status, worker, start, end)| GanttBar {
                    task_instance_id: id,
                    task_name: names.get(&id).cloned().unwrap_or_default(),
                    attempt,
                    status,
                    worker_id: worker,
                    start_time: start,
                    end_time: end,
                }),
        );
    }
    attempts.sort_by_key(|bar| (bar.start_time, bar.task_instance_id, bar.attempt));
    Ok(ChunkedJson(Gantt {
        run_id: run.id,
        start_time: run.created_at,
        end_time: run.finished_at,
        attempts,
    }))
}
