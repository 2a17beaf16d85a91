//! The request and response bodies of the project route ([`super`]); those
//! several route modules share are in [`crate::dto`].

use chrono::{DateTime, Utc};
use datajump_shared::entities::project;
use serde::{Deserialize, Serialize};

/// A project.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectDto {
    /// Its id: a DAG's `projectId`.
    pub id: i64,
    /// Its unique name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

impl From<project::Model> for ProjectDto {
    fn from(row: project::Model) -> ProjectDto {
        ProjectDto {
            id: row.id,
            name: row.name,
            description: row.description,
            created_at: row.created_at,
        }
    }
}
