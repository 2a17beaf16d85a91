//! A DAG's graph as stored: every dependency of its tasks, of every kind,
//! with a stub node for each thing outside the DAG a task waits for or
//! writes (docs/ARCHITECTURE.md, "The web UI").
//!
//! The canvas draws only what its editor can change (same-run edges); this
//! answer is for reading, so during an incident a task that waits on
//! yesterday's run, another DAG or a dataset shows why. Building it is a
//! pure function of the rows ([`build`]), tested without a database.

use std::collections::{HashMap, HashSet};

use datajump_shared::content::{SensorCheck, TaskContent};
use datajump_shared::datasets::{Condition, OutputDecl};
use datajump_shared::entities::{schedule, task, task_dependency};
use datajump_shared::kinds::{DepType, ScheduleKind};

use super::dto::{EdgeKind, Graph, GraphEdge, GraphNode, NodeKind};

/// What a DAG's graph is built from: its rows as stored.
pub struct Rows<'a> {
    /// The DAG.
    pub dag_id: i64,
    /// Its version.
    pub version: i32,
    /// Its tasks, in id order.
    pub tasks: &'a [task::Model],
    /// Its tasks' dependencies, in id order.
    pub deps: &'a [task_dependency::Model],
    /// Its schedules.
    pub schedules: &'a [schedule::Model],
}

impl Rows<'_> {
    /// The DAGs other than this one that the graph names: those whose ids
    /// the caller looks up in the DAG's project.
    pub fn named_dags(&self) -> HashSet<String> {
        let mut names: HashSet<String> = self
            .deps
            .iter()
            .filter_map(|dep| dep.parent_dag.clone())
            .collect();
        names.extend(self.schedules.iter().filter_map(|s| s.after_dag.clone()));
        names.extend(self.tasks.iter().filter_map(|t| match sensor_check(t)? {
            Checked::DagTask { dag, .. } => Some(dag),
            Checked::Dataset(_) => None,
        }));
        names
    }
}

/// The graph of `rows`; `dag_ids` gives the id of each DAG of the project
/// by name (a stub of a DAG missing from it carries no id).
pub fn build(rows: &Rows<'_>, dag_ids: &HashMap<String, i64>) -> Graph {
    let mut graph = Builder::default();
    for task in rows.tasks {
        graph.add_node(GraphNode {
            id: task.name.clone(),
            kind: NodeKind::Task,
            name: task.name.clone(),
            task_type: Some(task.task_type.as_str().to_owned()),
            position_x: task.position_x,
            position_y: task.position_y,
            dag: None,
            dag_id: None,
        });
    }
    let names: HashMap<i64, &str> = rows.tasks.iter().map(|t| (t.id, t.name.as_str())).collect();
    let mut has_parent: HashSet<&str> = HashSet::new();
    for dep in rows.deps {
        let Some(&child) = names.get(&dep.task_id) else {
            continue;
        };
        let weak = dep.dep_type == DepType::Weak;
        let parent = dep.parent_task.as_str();
        let (source, kind) = match (&dep.parent_dag, dep.previous_run, dep.offset_day) {
            (Some(dag), previous, _) => (
                graph.other_dag_task(dag, parent),
                if previous {
                    EdgeKind::PreviousRun
                } else {
                    EdgeKind::CrossDag
                },
            ),
            (None, true, _) => (
                graph.stub(
                    format!("previous/{parent}"),
                    NodeKind::OtherRun,
                    parent,
                    None,
                ),
                EdgeKind::PreviousRun,
            ),
            (None, false, offset) if offset != 0 => (
                graph.stub(
                    format!("run/{offset}/{parent}"),
                    NodeKind::OtherRun,
                    parent,
                    None,
                ),
                EdgeKind::CrossRun,
            ),
            (None, false, _) => {
                has_parent.insert(child);
                (
                    parent.to_owned(),
                    if weak {
                        EdgeKind::Weak
                    } else {
                        EdgeKind::Strong
                    },
                )
            }
        };
        graph.add_edge(source, child.to_owned(), kind, weak, dep.offset_day);
    }
    for task in rows.tasks {
        match sensor_check(task) {
            Some(Checked::Dataset(name)) => {
                let source = graph.dataset(&name);
                graph.add_edge(source, task.name.clone(), EdgeKind::Reads, false, 0);
            }
            Some(Checked::DagTask {
                dag,
                task: parent,
                offset_day,
            }) => {
                let source = graph.other_dag_task(&dag, &parent);
                graph.add_edge(
                    source,
                    task.name.clone(),
                    EdgeKind::CrossDag,
                    false,
                    offset_day,
                );
            }
            None => {}
        }
    }
    // What starts a run reaches the tasks that start it: those that wait
    // for no task of the same run.
    let roots: Vec<&str> = rows
        .tasks
        .iter()
        .map(|t| t.name.as_str())
        .filter(|name| !has_parent.contains(name))
        .collect();
    for schedule in rows.schedules {
        match schedule.kind {
            ScheduleKind::After => {
                let Some(dag) = &schedule.after_dag else {
                    continue;
                };
                let source = graph.stub(format!("after/{dag}"), NodeKind::Dag, dag, Some(dag));
                for root in &roots {
                    graph.add_edge(
                        source.clone(),
                        (*root).to_owned(),
                        EdgeKind::After,
                        false,
                        0,
                    );
                }
            }
            ScheduleKind::Data => {
                let condition = schedule.condition();
                for name in condition.iter().flat_map(Condition::datasets) {
                    let source = graph.dataset(name);
                    for root in &roots {
                        graph.add_edge(
                            source.clone(),
                            (*root).to_owned(),
                            EdgeKind::Reads,
                            false,
                            0,
                        );
                    }
                }
            }
            ScheduleKind::Cron | ScheduleKind::Event => {}
        }
    }
    for task in rows.tasks {
        for text in &task.declared_datasets() {
            if let Ok(decl) = OutputDecl::parse(text) {
                let target = graph.dataset(decl.dataset);
                graph.add_edge(task.name.clone(), target, EdgeKind::Writes, false, 0);
            }
        }
    }
    for node in &mut graph.nodes {
        node.dag_id = node.dag.as_ref().and_then(|dag| dag_ids.get(dag).copied());
    }
    Graph {
        dag_id: rows.dag_id,
        version: rows.version,
        nodes: graph.nodes,
        edges: graph.edges,
    }
}

/// What a sensor task waits for that the graph draws.
enum Checked {
    /// A dataset, by name.
    Dataset(String),
    /// Another DAG's task.
    DagTask {
        dag: String,
        task: String,
        offset_day: i32,
    },
}

/// What `task` waits for, if it is a sensor whose check the graph draws.
fn sensor_check(task: &task::Model) -> Option<Checked> {
    let Ok(TaskContent::Sensor(sensor)) = TaskContent::parse(task.task_type, &task.content) else {
        return None;
    };
    match sensor.check()? {
        SensorCheck::Dataset(text) => Some(Checked::Dataset(
            OutputDecl::parse(text).ok()?.dataset.to_owned(),
        )),
        SensorCheck::DagTask {
            dag,
            task,
            offset_day,
            ..
        } => Some(Checked::DagTask {
            dag: dag.to_owned(),
            task: task.to_owned(),
            offset_day,
        }),
        SensorCheck::Sql { .. } | SensorCheck::Http(_) | SensorCheck::File(_) => None,
    }
}

/// Nodes and edges as they are found: each stub once, each edge once.
#[derive(Default)]
struct Builder {
    nodes: Vec<GraphNode>,
    node_ids: HashSet<String>,
    edges: Vec<GraphEdge>,
    edge_keys: HashSet<(String, String, EdgeKind, i32)>,
}

impl Builder {
    fn add_node(&mut self, node: GraphNode) {
        if self.node_ids.insert(node.id.clone()) {
            self.nodes.push(node);
        }
    }

    /// The id of the stub `id`, added the first time it is named.
    fn stub(&mut self, id: String, kind: NodeKind, name: &str, dag: Option<&str>) -> String {
        self.add_node(GraphNode {
            id: id.clone(),
            kind,
            name: name.to_owned(),
            task_type: None,
            position_x: None,
            position_y: None,
            dag: dag.map(str::to_owned),
            dag_id: None,
        });
        id
    }

    fn other_dag_task(&mut self, dag: &str, task: &str) -> String {
        self.stub(
            format!("dag/{dag}/{task}"),
            NodeKind::DagTask,
            task,
            Some(dag),
        )
    }

    fn dataset(&mut self, name: &str) -> String {
        self.stub(format!("dataset/{name}"), NodeKind::Dataset, name, None)
    }

    fn add_edge(
        &mut self,
        source: String,
        target: String,
        kind: EdgeKind,
        weak: bool,
        offset_day: i32,
    ) {
        if self
            .edge_keys
            .insert((source.clone(), target.clone(), kind, offset_day))
        {
            self.edges.push(GraphEdge {
                source,
                target,
                kind,
                weak,
                offset_day,
            });
        }
    }
}
