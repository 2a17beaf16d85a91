//! `alert`: one webhook call for one event (a failed run, a task's final
//! failure, a timeout, an SLA miss, a test), and how its delivery went.

use sea_orm::entity::prelude::*;

use crate::kinds::{AlertKind, AlertState};

/// An alert. `dedup_key` makes noticing an event idempotent; `status` moves
/// PENDING → SENDING → SENT, or back to PENDING for a retry, or FAILED.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "alert")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The DAG whose alert config asked for it.
    pub dag_id: i64,
    /// The run it is about, if any.
    pub dag_run_id: Option<i64>,
    /// The task instance it is about, if any.
    pub task_instance_id: Option<i64>,
    /// What it alerts on.
    pub kind: AlertKind,
    /// `<kind>:<subject id>:<webhook index>`: unique.
    pub dedup_key: String,
    /// The webhook as configured when the event was noticed (URL, headers
    /// with `${secret:…}` placeholders, never secret values).
    pub target: Json,
    /// The JSON body sent.
    pub payload: Json,
    /// Where it is in its delivery.
    pub status: AlertState,
    /// Delivery attempts made.
    pub attempts: i32,
    /// When PENDING: the next attempt; when SENDING: the end of the sender's
    /// lease, after which another ticker may take it over.
    pub next_attempt_at: DateTimeUtc,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// HTTP status of the last answer.
    pub response_status: Option<i32>,
    /// When the event was noticed.
    pub created_at: DateTimeUtc,
    /// When the target accepted it.
    pub sent_at: Option<DateTimeUtc>,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
