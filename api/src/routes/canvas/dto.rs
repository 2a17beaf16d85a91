//! The request and response bodies of the canvas routes ([`super`]); those
//! several route modules share are in [`crate::dto`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dto::Edge;

/// `POST /api/v1/dags/{dagId}/canvas` body: the canvas positions the product's editor saves.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CanvasSave {
    /// The task nodes: tasks as in a DAG definition (camelCase) with
    /// `positionX` and `positionY`; an `id` as loaded is ignored.
    #[schemars(with = "Vec<crate::definition::TaskItem>")]
    pub tasks: Vec<Map<String, Value>>,
    /// The edges between them; missing or empty means none.
    #[serde(default)]
    pub edges: Option<Vec<Edge>>,
}

/// A DAG's canvas: its tasks with their positions, and the edges between them.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Canvas {
    /// The DAG.
    pub dag_id: i64,
    /// The DAG's version.
    pub version: i32,
    /// The tasks, in id order, as `GET /api/v1/dags/{dagId}/tasks` lists
    /// them; their `dependsOn` keeps what an edge cannot say (other DAGs,
    /// other days, the previous run).
    #[schemars(with = "Vec<crate::definition::TaskItem>")]
    pub tasks: crate::definition::Tasks,
    /// Same-run dependencies, parent to child (`type: WEAK` for WEAK ones).
    pub edges: Vec<Edge>,
}
