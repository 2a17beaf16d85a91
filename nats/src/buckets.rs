//! The KV buckets and the object store: the streams behind them, creating
//! the object store, and opening and reading them.

use std::time::Duration;

use async_nats::jetstream::{
    self, Context,
    consumer::DeliverPolicy,
    kv, object_store,
    stream::{self, DiscardPolicy, StorageType},
};
use datajump_shared::subjects::Namespace;
use futures::StreamExt;

use crate::NatsError;
use crate::drift::{Drift, missing, replicas_differ};
use crate::error::js_err;
use crate::topology::{Mode, not_created};

pub(crate) fn kv_stream(bucket: &str, max_age: Duration, replicas: usize) -> stream::Config {
    stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        max_age,
        storage: StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: DiscardPolicy::New,
        num_replicas: replicas,
        ..Default::default()
    }
}

/// The stream JetStream keeps an object store's chunks in.
pub(crate) fn object_store_stream(bucket: &str) -> String {
    format!("OBJ_{bucket}")
}

pub(crate) async fn ensure_object_store(
    js: &Context,
    bucket: &str,
    replicas: usize,
    mode: Mode,
) -> Result<Vec<Drift>, NatsError> {
    let stream = object_store_stream(bucket);
    if let Ok(existing) = js.get_stream(&stream).await {
        let have = existing.cached_info().config.num_replicas;
        return Ok(if have == replicas {
            Vec::new()
        } else {
            vec![Drift {
                object: stream,
                detail: format!("num_replicas {}", replicas_differ(have, replicas)),
            }]
        });
    }
    if mode == Mode::Check {
        return Ok(vec![missing(bucket)]);
    }
    let created = js
        .create_object_store(object_store::Config {
            bucket: bucket.to_owned(),
            storage: StorageType::File,
            num_replicas: replicas,
            ..Default::default()
        })
        .await;
    if let Err(e) = created
        && js.get_object_store(bucket).await.is_err()
    {
        return Err(not_created(&format!("object store {bucket}"), e.into()));
    }
    Ok(Vec::new())
}

/// The `dj_logs` object store (created by [`ensure_topology`]).
///
/// [`ensure_topology`]: crate::ensure_topology
pub async fn logs_store(
    js: &Context,
    names: &Namespace,
) -> Result<object_store::ObjectStore, NatsError> {
    let bucket = names.logs_bucket();
    js.get_object_store(&bucket)
        .await
        .map_err(|e| js_err(format!("object store {bucket}"))(e.into()))
}

/// Opens a KV bucket created by [`ensure_topology`].
///
/// [`ensure_topology`]: crate::ensure_topology
pub async fn key_value(js: &Context, bucket: &str) -> Result<kv::Store, NatsError> {
    js.get_key_value(bucket)
        .await
        .map_err(|e| js_err(format!("KV bucket {bucket}"))(e.into()))
}

/// Longest wait for the next message of a [`kv_scan`] before it gives up:
/// the ordered consumer's idle heartbeats come every 5 s, so this silence
/// means the bucket's stream is gone or the server stopped answering.
const SCAN_IDLE: Duration = Duration::from_secs(30);

/// Reads the latest value of every key of a bucket created by
/// [`ensure_topology`] in one pass, calling `each(key, value)` per live key;
/// returns how many keys it saw. Deleted and purged keys are skipped.
///
/// One ordered push consumer on the bucket's stream delivers every stored
/// message — a single streamed read, where `kv.get` per key would cost a
/// round trip per key (a million of them at a ticker's start). Every
/// bucket keeps one message per key (`max_messages_per_subject: 1`), so
/// all of them is the last of each: asking the server for "last per
/// subject" instead made nats-server 2.9 work out that set first, which
/// for a million keys was most of the scan. Values written while it reads
/// may or may not be seen, and a key rewritten meanwhile may be seen
/// twice, its newer value last.
///
/// [`ensure_topology`]: crate::ensure_topology
pub async fn kv_scan(
    js: &Context,
    bucket: &str,
    mut each: impl FnMut(&str, &[u8]),
) -> Result<u64, NatsError> {
    let what = || format!("scan {bucket}");
    let prefix = format!("$KV.{bucket}.");
    let stream = js
        .get_stream(format!("KV_{bucket}"))
        .await
        .map_err(|e| js_err(what())(e.into()))?;
    let consumer = stream
        .create_consumer(jetstream::consumer::push::OrderedConfig {
            deliver_subject: js.client().new_inbox(),
            filter_subject: format!("{prefix}>"),
            deliver_policy: DeliverPolicy::All,
            replay_policy: jetstream::consumer::ReplayPolicy::Instant,
            ..Default::default()
        })
        .await
        .map_err(|e| js_err(what())(e.into()))?;
    // An empty bucket delivers nothing, so "nothing pending" must come
    // from the consumer's info rather than from a last message.
    if consumer.cached_info().num_pending == 0 {
        return Ok(0);
    }
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| js_err(what())(e.into()))?;
    let mut seen = 0;
    loop {
        let message = match tokio::time::timeout(SCAN_IDLE, messages.next()).await {
            Ok(Some(message)) => message.map_err(|e| js_err(what())(e.into()))?,
            Ok(None) => return Err(js_err(what())("the consumer closed".into())),
            Err(_) => return Err(js_err(what())("no message for 30 s".into())),
        };
        // Messages arrive buffered; give the runtime back now and then.
        tokio::task::coop::consume_budget().await;
        let info = message.info().map_err(|e| js_err(what())(e))?;
        let pending = info.pending;
        let removed = message
            .headers
            .as_ref()
            .and_then(|h| h.get("KV-Operation"))
            .is_some_and(|op| matches!(op.as_str(), "DEL" | "PURGE"));
        if !removed && let Some(key) = message.subject.strip_prefix(prefix.as_str()) {
            each(key, &message.payload);
            seen += 1;
        }
        if pending == 0 {
            return Ok(seen);
        }
    }
}
