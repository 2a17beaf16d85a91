//! The request and response bodies of the audit log route ([`super`]); those
//! several route modules share are in [`crate::dto`].

use chrono::{DateTime, Utc};
use datajump_shared::entities::audit_log;
use serde::{Deserialize, Serialize};

/// One audited change.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditDto {
    /// Id, increasing with time.
    pub id: i64,
    /// When it was answered.
    pub at: DateTime<Utc>,
    /// Who: a token's name, `anonymous` on an API without tokens, or
    /// `os:<user>` for an operator command.
    pub actor: String,
    /// The role it acted with.
    pub role: String,
    /// What: the route (`POST /api/v1/dags/{dagId}/trigger`) or command.
    pub action: String,
    /// On what: the path as requested, or the object's name.
    pub target: String,
    /// The answer's HTTP status (0 for an operator command).
    pub status: i16,
    /// Where from: the client's address, or `cli@<host>`.
    pub origin: String,
}

impl From<audit_log::Model> for AuditDto {
    fn from(row: audit_log::Model) -> AuditDto {
        AuditDto {
            id: row.id,
            at: row.at,
            actor: row.actor,
            role: row.role,
            action: row.action,
            target: row.target,
            status: row.status,
            origin: row.origin,
        }
    }
}
