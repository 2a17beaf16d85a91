//! What the work queues look like from NATS: the queues live runners
//! serve, and what each work consumer holds.

use std::collections::BTreeSet;

use async_nats::jetstream::Context;
use datajump_shared::subjects::{Namespace, Priority, Stream};
use futures::StreamExt;
use tracing::warn;

use crate::NatsError;
use crate::buckets::key_value;
use crate::error::js_err;

/// The queues live runners serve, read from their heartbeats in
/// `dj_runners` (an expired heartbeat is gone from the bucket). A heartbeat
/// that cannot be read is skipped.
pub async fn served_queues(js: &Context, names: &Namespace) -> Result<BTreeSet<String>, NatsError> {
    /// The part of a runner's heartbeat this needs.
    #[derive(serde::Deserialize)]
    struct Beat {
        #[serde(default)]
        queues: Vec<String>,
    }
    let bucket = names.runners_bucket();
    let kv = key_value(js, &bucket).await?;
    let mut keys = kv
        .keys()
        .await
        .map_err(|e| js_err(format!("list {bucket}"))(e.into()))?;
    let mut served = BTreeSet::new();
    while let Some(key) = keys.next().await {
        let key = key.map_err(|e| js_err(format!("list {bucket}"))(e.into()))?;
        let value = kv
            .get(&key)
            .await
            .map_err(|e| js_err(format!("read {bucket}/{key}"))(e.into()))?;
        match value.map(|v| serde_json::from_slice::<Beat>(&v)) {
            Some(Ok(beat)) => served.extend(beat.queues),
            Some(Err(e)) => warn!(runner = %key, error = %e, "unreadable heartbeat skipped"),
            None => {}
        }
    }
    Ok(served)
}

/// What one work consumer (`runner-<queue>-p<priority>`) holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueBacklog {
    /// The queue.
    pub queue: String,
    /// The priority level.
    pub priority: Priority,
    /// Messages not yet delivered to a runner.
    pub pending: u64,
    /// Messages delivered and not yet acknowledged (running, or in flight).
    pub ack_pending: u64,
}

/// The backlog of every work consumer, from the consumers' own counters: one
/// JetStream API request per 256 consumers, whatever the number of messages.
/// Consumers are recognised by their filter subject `dj.work.<queue>.p<priority>`
/// rather than their name, because queue names may contain `-`.
pub async fn work_backlog(js: &Context, names: &Namespace) -> Result<Vec<QueueBacklog>, NatsError> {
    let stream = names.stream(Stream::Work);
    let mut consumers = js
        .get_stream(&stream)
        .await
        .map_err(|e| js_err(format!("stream {stream}"))(e.into()))?
        .consumers();
    let mut backlog = Vec::new();
    while let Some(info) = consumers.next().await {
        let info = info.map_err(|e| js_err(format!("list consumers of {stream}"))(e.into()))?;
        if let Some((queue, priority)) = names.parse_work(&info.config.filter_subject) {
            backlog.push(QueueBacklog {
                queue: queue.to_owned(),
                priority,
                pending: info.num_pending,
                ack_pending: u64::try_from(info.num_ack_pending).unwrap_or(u64::MAX),
            });
        }
    }
    Ok(backlog)
}
