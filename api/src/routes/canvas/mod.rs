//! The canvas: a DAG's tasks with their positions and the
//! edges between them, as a drawing UI loads and saves them.
//!
//! An edge is a same-run dependency (`dependsOn: [source]` on its target,
//! `type: WEAK` for a WEAK one); what an edge cannot say — another DAG's
//! task, another day, the previous run — stays in the task's `dependsOn`. Saving replaces the DAG's tasks
//! through [`super::shared::store`] like `PUT /api/v1/dags/{dagId}`: validated as a
//! DAG file, the version bumped when the definition changes, and runs in
//! flight untouched, since each runs on the plan of the version it was
//! created from. Positions are layout, not definition: moving a node alone keeps
//! the version.

use datajump_store::catalog::Origin;
use std::collections::{BTreeSet, HashMap};

use axum::Json as AxumJson;
use axum::extract::State;
use datajump_shared::entities::{task, task_dependency};
use datajump_shared::kinds::DepType;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Map, Value, json};

use self::dto::{Canvas, CanvasSave};
use super::shared::{find_cycle, find_dag, store};
use crate::AppState;
use crate::chunked::ChunkedJson;
use crate::definition::{self, DependenciesByTask, Tasks};
use crate::dto::Edge;
use crate::error::{Error, Result};
use crate::extract::{Json, Path};

pub mod dto;

/// Whether a stored dependency is drawn as an edge.
fn is_edge(dep: &task_dependency::Model) -> bool {
    dep.parent_dag.is_none() && dep.offset_day == 0 && !dep.previous_run
}

/// The canvas of DAG `dag_id` as stored.
async fn load(state: &AppState, dag_id: i64) -> Result<Canvas> {
    let dag = find_dag(state, dag_id).await?;
    let (tasks, deps) = definition::tasks_of(&state.db, dag_id).await?;
    let names: HashMap<i64, &str> = tasks.iter().map(|t| (t.id, t.name.as_str())).collect();
    let edges = deps
        .iter()
        .filter(|dep| is_edge(dep))
        .filter_map(|dep| {
            Some(Edge {
                source: dep.parent_task.clone(),
                target: (*names.get(&dep.task_id)?).to_owned(),
                dep_type: (dep.dep_type == DepType::Weak).then_some(DepType::Weak),
            })
        })
        .collect();
    // Most dependencies are edges: the few others are moved out, rather
    // than all of them into two new lists.
    let other_deps = DependenciesByTask::new(deps.into_iter().filter(|dep| !is_edge(dep)));
    Ok(Canvas {
        dag_id,
        version: dag.version,
        tasks: Tasks::items(tasks, other_deps),
        edges,
    })
}

/// `GET /api/v1/dags/{dagId}/canvas`: the DAG's tasks with their positions
/// and the edges between them.
pub async fn get(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
) -> Result<ChunkedJson<Canvas>> {
    Ok(ChunkedJson(load(&state, dag_id).await?))
}

/// A node's position field, if given: an integer or null.
fn position(node: &Map<String, Value>, i: usize, field: &str) -> Result<Option<i32>> {
    match node.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                Error::bad_request(format!(
                    "invalid field `tasks[{i}].{field}`: must be an integer"
                ))
            }),
    }
}

/// `POST /api/v1/dags/{dagId}/canvas` `{ tasks, edges }`: replaces the
/// DAG's tasks and dependencies with the canvas and stores the positions;
/// answers the canvas as stored. A cycle among the edges, an edge to a task
/// not on the canvas, or an invalid task is a 400 and changes nothing.
pub async fn save(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Json(body): Json<CanvasSave>,
) -> Result<AxumJson<Canvas>> {
    let dag = find_dag(&state, dag_id).await?;
    let mut edges = body.edges.unwrap_or_default();
    let mut names = BTreeSet::new();
    // Canvas libraries draw edges between node ids: a node's `id` as
    // loaded (its task id) stands for its task's name.
    let mut by_id = HashMap::new();
    let mut nodes = Vec::with_capacity(body.tasks.len());
    let mut positions = Vec::with_capacity(body.tasks.len());
    for (i, mut node) in body.tasks.into_iter().enumerate() {
        let x = position(&node, i, "positionX")?;
        let y = position(&node, i, "positionY")?;
        let id = match node.get("id") {
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        for key in [
            "id",
            "dagId",
            "positionX",
            "positionY",
            "createdAt",
            "updatedAt",
        ] {
            node.remove(key);
        }
        let name = node
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::bad_request(format!("missing field `tasks[{i}].name`")))?
            .to_owned();
        if let Some(id) = id {
            by_id.insert(id, name.clone());
        }
        names.insert(name.clone());
        positions.push((name, x, y));
        nodes.push(node);
    }
    for edge in &mut edges {
        for end in [&mut edge.source, &mut edge.target] {
            if !names.contains(end.as_str())
                && let Some(name) = by_id.get(end.as_str())
            {
                end.clone_from(name);
            }
        }
    }
    for (i, edge) in edges.iter().enumerate() {
        for (field, value) in [("source", &edge.source), ("target", &edge.target)] {
            if !names.contains(value) {
                return Err(Error::bad_request(format!(
                    "invalid field `edges[{i}].{field}`: no task '{value}' on the canvas"
                )));
            }
        }
    }
    if let Some(cycle) = find_cycle(&edges) {
        return Err(Error::bad_request(format!(
            "invalid field `edges`: cycle detected: {}",
            cycle.join(" -> ")
        )));
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        let name = node.get("name").cloned().unwrap_or(Value::Null);
        let mut depends_on = match node.remove("dependsOn") {
            Some(Value::Array(items)) => items,
            None | Some(Value::Null) => Vec::new(),
            Some(_) => {
                return Err(Error::bad_request(format!(
                    "invalid field `tasks[{i}].dependsOn`: must be a list"
                )));
            }
        };
        depends_on.extend(edges.iter().filter(|e| name == e.target.as_str()).map(|e| {
            match e.dep_type {
                Some(DepType::Weak) => json!({ "task": e.source, "type": DepType::Weak }),
                Some(DepType::Strong) | None => json!(e.source),
            }
        }));
        node.insert("dependsOn".into(), Value::Array(depends_on));
    }
    let tasks = definition::from_request(&json!({ "tasks": nodes }))?
        .remove("tasks")
        .unwrap_or_else(|| json!([]));
    let mut file = definition::load(&state.db, &dag).await?;
    file.insert("tasks".into(), tasks);
    let parsed = definition::parse(&file)?;
    store(&state, &parsed, Origin::Edit).await?;
    for (name, x, y) in positions {
        task::Entity::update_many()
            .col_expr(task::Column::PositionX, Expr::value(x))
            .col_expr(task::Column::PositionY, Expr::value(y))
            .filter(task::Column::DagId.eq(dag_id))
            .filter(task::Column::Name.eq(name))
            .exec(&state.db)
            .await?;
    }
    Ok(AxumJson(load(&state, dag_id).await?))
}
