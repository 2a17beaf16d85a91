//! Runners: `GET /api/v1/runners` lists the live runners from their
//! heartbeats in the `dj_runners` KV bucket (a runner whose heartbeat has
//! expired is gone from the bucket, and from the list).

use axum::Json as AxumJson;
use axum::extract::State;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::Deserialize;
use tracing::warn;

use super::paging;
use crate::AppState;
use crate::dto::{Page, PageQuery, RunnerDto};
use crate::error::{Error, Result};
use crate::extract::Query;

/// A heartbeat as the runner writes it.
#[derive(Debug, Deserialize)]
struct Heartbeat {
    id: String,
    #[serde(default)]
    queues: Vec<String>,
    #[serde(default)]
    slots: u64,
    #[serde(default)]
    running: u64,
    #[serde(default)]
    at: Option<DateTime<Utc>>,
}

/// `GET /api/v1/runners?page=&pageSize=`: id, queues, slots, running
/// tasks and last heartbeat of each live runner, by id.
pub async fn list(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
) -> Result<AxumJson<Page<RunnerDto>>> {
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let bucket = state.bus.names().runners_bucket();
    let kv = datajump_nats::key_value(state.bus.js(), &bucket).await?;
    let mut keys = kv
        .keys()
        .await
        .map_err(|e| Error::Nats(format!("list {bucket}: {e}")))?;
    let mut items = Vec::new();
    while let Some(key) = keys.next().await {
        let key = key.map_err(|e| Error::Nats(format!("list {bucket}: {e}")))?;
        let Some(value) = kv
            .get(&key)
            .await
            .map_err(|e| Error::Nats(format!("read {bucket}/{key}: {e}")))?
        else {
            continue;
        };
        match serde_json::from_slice::<Heartbeat>(&value) {
            Ok(beat) => items.push(RunnerDto {
                id: beat.id,
                queues: beat.queues,
                slots: beat.slots,
                running: beat.running,
                last_seen: beat.at,
            }),
            Err(e) => warn!(runner = %key, error = %e, "unreadable heartbeat skipped"),
        }
    }
    items.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(AxumJson(Page::of_all(items, page, page_size)))
}
