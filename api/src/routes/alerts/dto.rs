//! The request and response bodies of the alert route ([`super`]); those
//! several route modules share are in [`crate::dto`].

use chrono::{DateTime, Utc};
use datajump_shared::entities::alert;
use datajump_shared::kinds::{AlertKind, AlertState};
use serde::Serialize;

/// One alert.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlertDto {
    /// Id.
    pub id: i64,
    /// `run_failed`, `task_failed`, `timeout`, `sla_miss` or `test`.
    pub kind: AlertKind,
    /// The run it is about.
    pub run_id: Option<i64>,
    /// The task instance it is about.
    pub task_instance_id: Option<i64>,
    /// The webhook's URL.
    pub webhook: String,
    /// `PENDING`, `SENDING`, `SENT` or `FAILED`.
    pub status: AlertState,
    /// Delivery attempts so far.
    pub attempts: i32,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// HTTP status of the last answer.
    pub response_status: Option<i32>,
    /// The JSON body sent.
    pub payload: serde_json::Value,
    /// When it was noticed.
    pub created_at: DateTime<Utc>,
    /// When the webhook accepted it.
    pub sent_at: Option<DateTime<Utc>>,
}

impl From<alert::Model> for AlertDto {
    fn from(row: alert::Model) -> AlertDto {
        AlertDto {
            webhook: row.target["url"].as_str().unwrap_or_default().to_owned(),
            id: row.id,
            kind: row.kind,
            run_id: row.dag_run_id,
            task_instance_id: row.task_instance_id,
            status: row.status,
            attempts: row.attempts,
            last_error: row.last_error,
            response_status: row.response_status,
            payload: row.payload,
            created_at: row.created_at,
            sent_at: row.sent_at,
        }
    }
}
