//! The request and response bodies several route modules share (camelCase
//! JSON, the product's API field names): a page of a list and its query,
//! the log query, canvas edges and a schedule. A body of one route module
//! is in that module's `dto` (such as [`crate::routes::dags::dto`]), beside
//! the handlers that read and write it.
//!
//! Requests reject unknown fields. Answers derive `Deserialize` too: the
//! `datajump` CLI reads them with these very types, so the two cannot
//! drift. DAG definitions themselves are not here: they have the DAG
//! file's shape and go through [`crate::definition`].

use chrono::NaiveDate;
use datajump_shared::kinds::{DepType, ScheduleKind};
use serde::{Deserialize, Serialize};

/// One page of a list.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PageOf{T}")]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Items in the whole list.
    pub total: u64,
    /// 1-based page number.
    pub page: u64,
    /// Items per page.
    pub page_size: u64,
}

impl<T> Page<T> {
    /// Page `page` (1-based) of a list read whole (a list small by nature,
    /// such as the live runners).
    pub fn of_all(all: Vec<T>, page: u64, page_size: u64) -> Page<T> {
        let total = all.len() as u64;
        let skip = usize::try_from((page - 1).saturating_mul(page_size)).unwrap_or(usize::MAX);
        let take = usize::try_from(page_size).unwrap_or(usize::MAX);
        Page {
            items: all.into_iter().skip(skip).take(take).collect(),
            total,
            page,
            page_size,
        }
    }
}

/// The query of a list with nothing to filter: `page` and `pageSize`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageQuery {
    /// 1-based page (default 1).
    pub page: Option<u64>,
    /// Items per page (default 20, at most 500).
    pub page_size: Option<u64>,
}

/// `GET /api/v1/dags/task-instances/{id}/log` query.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogQuery {
    /// 0-based attempt (default the latest).
    pub attempt: Option<i32>,
}

/// A canvas edge: its target depends on its source.
///
/// Node ids may be strings or integers, as canvas libraries send them, and
/// the other fields those libraries put on an edge (`id`, handles, labels)
/// are ignored: a misspelt `source` or `target` is still an error, as a
/// missing field. `type` is `WEAK` for a WEAK dependency; a library's
/// drawing type there (`smoothstep`, …) reads as STRONG.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    /// Source node (the parent).
    #[serde(deserialize_with = "node_id")]
    pub source: String,
    /// Target node (the child).
    #[serde(deserialize_with = "node_id")]
    pub target: String,
    /// `WEAK` when the child waits only for the parent to end; missing,
    /// `STRONG` or a drawing type when the parent's result matters.
    #[serde(
        default,
        rename = "type",
        deserialize_with = "dependency_type",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub dep_type: Option<DepType>,
}

/// An edge's `type`: `WEAK` or `STRONG` (any case) say the dependency's;
/// anything else is a canvas library's drawing type and says nothing.
fn dependency_type<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<DepType>, D::Error> {
    let given = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(match given.as_ref().and_then(serde_json::Value::as_str) {
        Some(text) if text.eq_ignore_ascii_case("WEAK") => Some(DepType::Weak),
        Some(text) if text.eq_ignore_ascii_case("STRONG") => Some(DepType::Strong),
        _ => None,
    })
}

/// A node id: a string, or an integer taken as its decimal text.
fn node_id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NodeId {
        Text(String),
        Number(i64),
    }
    Ok(
        match NodeId::deserialize(deserializer)
            .map_err(|_| serde::de::Error::custom("a node id is a string or an integer"))?
        {
            NodeId::Text(text) => text,
            NodeId::Number(n) => n.to_string(),
        },
    )
}

/// A DAG's schedule.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleDto {
    /// The DAG.
    pub dag_id: i64,
    /// The schedule.
    pub schedule_id: i64,
    /// Its name within the DAG.
    pub name: String,
    /// `CRON` or `EVENT`.
    pub kind: ScheduleKind,
    /// Cron expression (CRON schedules).
    pub cron_expression: Option<String>,
    /// The expression in words.
    pub cron_description: Option<String>,
    /// Event name (EVENT schedules).
    pub event_name: Option<String>,
    /// The DAG whose successful runs fire it (AFTER schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The datasets whose events fire it (DATA schedules): a dataset name,
    /// `{ "all": [...] }` or `{ "any": [...] }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<datajump_shared::datasets::Condition>,
    /// What a restated partition does (DATA schedules): `ignore` or `rerun`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_update: Option<datajump_shared::datasets::OnUpdate>,
    /// False when paused.
    pub enabled: bool,
    /// The next fire (RFC 3339 in the schedule's zone), when enabled.
    pub next_fire_time: Option<String>,
    /// IANA zone the cron is read in.
    pub timezone: String,
    /// First day it may fire.
    pub start_date: Option<NaiveDate>,
    /// Last day it may fire.
    pub end_date: Option<NaiveDate>,
    /// Missed-fire policy: `none`, `latest` or `all`.
    pub catchup: String,
    /// Most missed fires `catchup: all` makes up.
    pub catchup_limit: i32,
    /// Seconds after which a fire counts as missed.
    pub misfire_grace: i32,
    /// Business date = local fire date + this many days.
    pub biz_date_offset: i32,
    /// Minutes a run it fires may be RUNNING before it is killed and ends
    /// TIMEOUT (the product's `ScheduleConfig.timeout`, in minutes; stored
    /// in seconds, so a file's `timeout: 90` reads 1.5); 0: no limit;
    /// absent: the DAG's `runTimeout` (seconds) applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<serde_json::Value>,
}
