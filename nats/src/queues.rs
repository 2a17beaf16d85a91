//! What the work queues look like from NATS: the queues live runners
//! serve, and what each work consumer holds.

use std::collections::BTreeSet;

use async_nats::jetstream::Context;
use datajump_shared::subjects::{Namespace, Priority, Stream};
use futures::StreamExt;

use crate::NatsError;
use crate::error::js_err;
use crate::heartbeats::live_runners;

/// The queues live runners serve, read from their heartbeats in
/// `dj_runners` (an expired heartbeat is gone from the bucket). A heartbeat
/// that cannot be read is skipped.
pub async fn served_queues(js: &Context, names: &Namespace) -> Result<BTreeSet<String>, NatsError> {
    Ok(live_runners(js, names)
        .await?
        .into_iter()
        .flat_map(|runner| runner.queues)
        .collect())
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
