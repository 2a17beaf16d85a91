//! DataJump's JetStream topology: the streams and consumers it expects, and
//! creating, checking, scaling and removing them on a server.
//!
//! [`ensure_topology`] creates each stream, consumer and bucket of
//! docs/ARCHITECTURE.md "Subjects and streams" that is missing and only
//! *reports* differences in those that exist. It never updates: nats-server
//! 2.9 ignores the create/update action field of stream and consumer
//! requests, so an "update" could silently rewrite an operator's tuning.
//! The one exception is an upgrade's: the fire stream of a release before
//! fire priorities has its subjects widened to take the levelled fires,
//! the rest of its configuration read back and kept
//! ([`widen_legacy_fire_subjects`]).
//! Every role calls it at start; concurrent callers race only into
//! "already exists", which is treated as success. On a NATS where roles'
//! users may not create streams (`nats/config/roles.conf`), an admin runs
//! `datajump topology apply` first, and [`check_topology`] reports without
//! changing anything.

use std::time::Duration;

use async_nats::jetstream::{
    self, Context,
    consumer::{AckPolicy, DeliverPolicy, pull},
    stream::{self, RetentionPolicy, StorageType},
};
use datajump_shared::subjects::{self, Namespace, Priority, Stream};
use futures::StreamExt;
use tracing::{info, warn};

use crate::buckets::{ensure_object_store, kv_stream, object_store_stream};
use crate::drift::{Drift, consumer_drift, missing, stream_drift};
use crate::error::js_err;
use crate::{NatsError, Replicas};

/// How long JetStream remembers message ids for deduplication.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(10 * 60);
/// How long a delivered message may go unacknowledged before redelivery;
/// runners send AckProgress well within it.
pub const ACK_WAIT: Duration = Duration::from_secs(30);
/// Unacknowledged messages a consumer allows in flight.
pub const MAX_ACK_PENDING: i64 = 20_000;
/// A runner's or resolver's heartbeat older than this marks it dead.
pub const RUNNER_TTL: Duration = Duration::from_secs(15);
/// Events are kept this long for audit.
pub const EVENT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

fn work_queue(name: &str, subject: &str, replicas: usize) -> stream::Config {
    stream::Config {
        name: name.to_owned(),
        subjects: vec![subject.to_owned()],
        retention: RetentionPolicy::WorkQueue,
        storage: StorageType::File,
        duplicate_window: DUPLICATE_WINDOW,
        num_replicas: replicas,
        ..Default::default()
    }
}

/// The streams of docs/ARCHITECTURE.md "Subjects and streams", as DataJump
/// creates them with `replicas` copies.
pub fn stream_configs(names: &Namespace, replicas: usize) -> Vec<stream::Config> {
    let queue = |stream| {
        work_queue(
            &names.stream(stream),
            &names.stream_subjects(stream),
            replicas,
        )
    };
    let kept = |stream| stream::Config {
        name: names.stream(stream),
        subjects: vec![names.stream_subjects(stream)],
        retention: RetentionPolicy::Limits,
        storage: StorageType::File,
        max_age: EVENT_MAX_AGE,
        duplicate_window: DUPLICATE_WINDOW,
        num_replicas: replicas,
        ..Default::default()
    };
    vec![
        queue(Stream::Fire),
        kept(Stream::Event),
        queue(Stream::Work),
        queue(Stream::Done),
        kept(Stream::Dataset),
    ]
}

/// A durable pull consumer as DataJump creates it.
pub fn consumer_config(name: &str, filter: &str, deliver_new: bool) -> pull::Config {
    pull::Config {
        durable_name: Some(name.to_owned()),
        filter_subject: filter.to_owned(),
        ack_policy: AckPolicy::Explicit,
        ack_wait: ACK_WAIT,
        max_deliver: -1,
        max_ack_pending: MAX_ACK_PENDING,
        deliver_policy: if deliver_new {
            DeliverPolicy::New
        } else {
            DeliverPolicy::All
        },
        ..Default::default()
    }
}

/// Whether [`topology`] creates what is missing or only reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Create,
    Check,
}

/// The error for an object that is missing and could not be created: on a
/// locked-down NATS the role's user may not create streams; on a cluster
/// of fewer nodes than copies asked for there is no room for them.
pub(crate) fn not_created(object: &str, source: async_nats::Error) -> NatsError {
    NatsError::JetStream {
        what: format!(
            "{object} is missing and could not be created (if this NATS user may not create streams, run `datajump topology apply` as one that may; if the answer is \"insufficient resources\" on a cluster of fewer than three JetStream nodes, give --nats-replicas the number of nodes)"
        ),
        source,
    }
}

async fn ensure_stream(
    js: &Context,
    want: stream::Config,
    mode: Mode,
) -> Result<Vec<Drift>, NatsError> {
    let name = want.name.clone();
    let existing = match js.get_stream(&name).await {
        Ok(stream) => Some(stream),
        Err(_) if mode == Mode::Check => return Ok(vec![missing(&name)]),
        Err(_) => match create_stream_once_placed(js, &want).await {
            Ok(()) => None,
            // Another process created it between our lookup and our create.
            Err(create) => Some(
                js.get_stream(&name)
                    .await
                    .map_err(|_| not_created(&format!("stream {name}"), create.into()))?,
            ),
        },
    };
    Ok(existing
        .map(|stream| stream_drift(&want, &stream.cached_info().config))
        .unwrap_or_default())
}

/// Creates the stream, asking again while the cluster has no peers to place
/// its copies on, up to [`PLACEMENT_WAIT`]: a cluster that has just started
/// (or lost a node) elects its meta leader before every peer is known to be
/// current, and until then refuses replicated streams with "no suitable
/// peers for placement, peer offline". Any other refusal is returned at
/// once.
async fn create_stream_once_placed(
    js: &Context,
    want: &stream::Config,
) -> Result<(), jetstream::context::CreateStreamError> {
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        let refused = match js.create_stream(want.clone()).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let unplaced = matches!(
            refused.kind(),
            jetstream::context::CreateStreamErrorKind::JetStream(ref e)
                if e.error_code() == jetstream::ErrorCode::CLUSTER_NO_PEERS
        );
        if !unplaced || started.elapsed() + pause > PLACEMENT_WAIT {
            return Err(refused);
        }
        warn!(stream = %want.name, error = %refused, "no peers to place the stream on yet; asking again");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

async fn ensure_consumer(
    js: &Context,
    stream_name: &str,
    want: pull::Config,
    mode: Mode,
) -> Result<Vec<Drift>, NatsError> {
    let name = want.durable_name.clone().unwrap_or_default();
    let stream = match js.get_stream(stream_name).await {
        Ok(stream) => stream,
        Err(_) if mode == Mode::Check => return Ok(vec![missing(&name)]),
        Err(e) => return Err(js_err(format!("stream {stream_name}"))(e.into())),
    };
    if let Ok(mut consumer) = stream.get_consumer::<pull::Config>(&name).await {
        let info = consumer
            .info()
            .await
            .map_err(|e| js_err(format!("consumer {name}"))(e.into()))?;
        return Ok(consumer_drift(stream_name, &want, &info.config));
    }
    if mode == Mode::Check {
        return Ok(vec![missing(&name)]);
    }
    if let Err(create) = stream.create_consumer(want).await
        && stream.get_consumer::<pull::Config>(&name).await.is_err()
    {
        return Err(not_created(&format!("consumer {name}"), create.into()));
    }
    Ok(Vec::new())
}

/// Creates the work consumers (one per priority level) of a queue that are missing.
pub async fn ensure_queue(
    js: &Context,
    names: &Namespace,
    queue: &str,
) -> Result<Vec<Drift>, NatsError> {
    queue_topology(js, names, queue, Mode::Create).await
}

/// The differences of a queue's work consumers, the missing ones included,
/// changing nothing.
pub async fn check_queue(
    js: &Context,
    names: &Namespace,
    queue: &str,
) -> Result<Vec<Drift>, NatsError> {
    queue_topology(js, names, queue, Mode::Check).await
}

async fn queue_topology(
    js: &Context,
    names: &Namespace,
    queue: &str,
    mode: Mode,
) -> Result<Vec<Drift>, NatsError> {
    let mut drift = Vec::new();
    let stream = names.stream(Stream::Work);
    for priority in Priority::ALL {
        let config = consumer_config(
            &subjects::runner_consumer(queue, priority),
            &names.work(queue, priority),
            false,
        );
        drift.extend(ensure_consumer(js, &stream, config, mode).await?);
    }
    Ok(drift)
}

/// Fails with [`NatsError::NoJetStream`] when no JetStream answers: without
/// this, the first stream lookup would fail with a bare "no responders".
/// Other failures of the account query (a user not allowed it) are left
/// for the calls that follow to report.
async fn require_jetstream(js: &Context) -> Result<(), NatsError> {
    match js.query_account().await {
        Err(e) if e.kind() == jetstream::context::AccountErrorKind::JetStreamUnavailable => {
            Err(NatsError::NoJetStream)
        }
        _ => Ok(()),
    }
}

/// Creates every stream, consumer and bucket that is missing, with
/// `replicas` copies, and returns the differences found in those that exist
/// (each also logged as a warning).
pub async fn ensure_topology(
    js: &Context,
    names: &Namespace,
    replicas: Replicas,
) -> Result<Vec<Drift>, NatsError> {
    topology(js, names, replicas, Mode::Create).await
}

/// The names of the streams behind everything [`ensure_topology`] creates:
/// the streams, the buckets' and the object store's.
fn stream_names(names: &Namespace) -> Vec<String> {
    let mut streams: Vec<String> = stream_configs(names, 1)
        .into_iter()
        .map(|c| c.name)
        .collect();
    for bucket in [
        names.ticker_bucket(),
        names.runners_bucket(),
        names.resolvers_bucket(),
    ] {
        streams.push(kv_stream(&bucket, Duration::ZERO, 1).name);
    }
    streams.push(object_store_stream(&names.logs_bucket()));
    streams
}

/// Deletes every stream and bucket [`ensure_topology`] creates (their
/// consumers go with them), for `datajump reset`; returns the names of
/// those that existed.
pub async fn remove_topology(js: &Context, names: &Namespace) -> Result<Vec<String>, NatsError> {
    let mut removed = Vec::new();
    for name in stream_names(names) {
        match js.delete_stream(&name).await {
            Ok(_) => removed.push(name),
            Err(e) if e.to_string().contains("not found") => {}
            Err(e) => return Err(js_err(format!("delete stream {name}"))(e.into())),
        }
    }
    Ok(removed)
}

/// A stream whose copies [`scale_topology`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scaled {
    /// The stream (a bucket's or the object store's included).
    pub stream: String,
    /// Its copies before.
    pub from: usize,
    /// Its copies now.
    pub to: usize,
}

/// Widens the subjects of a fire stream made by a release before fire
/// priorities, which took only `dj.fire.<dag_id>`, to take the levelled
/// fires (`dj.fire.p5.<dag_id>`) as well; everything else of its
/// configuration is read back and kept. The fires of the old form still in
/// it are drained by the old consumer
/// ([`subjects::LEGACY_RESOLVER_FIRE_CONSUMER`]), whose filter matches no
/// levelled fire.
async fn widen_legacy_fire_subjects(js: &Context, names: &Namespace) -> Result<(), NatsError> {
    let name = names.stream(Stream::Fire);
    let Ok(stream) = js.get_stream(&name).await else {
        return Ok(());
    };
    let mut config = stream.cached_info().config.clone();
    if config.subjects != [names.legacy_fire()] {
        return Ok(());
    }
    config.subjects = vec![names.stream_subjects(Stream::Fire)];
    js.update_stream(&config).await.map_err(|e| {
        js_err(format!(
            "widen the subjects of stream {name} to {:?} for fire priorities (if this NATS user may not update streams, run `datajump topology apply` as one that may)",
            config.subjects
        ))(e.into())
    })?;
    info!(stream = %name, subjects = ?config.subjects, "fire stream upgraded to take fires by priority level");
    Ok(())
}

/// Sets the copies of every existing stream, bucket and object store of
/// the topology to `replicas` (their consumers follow their stream), for
/// `datajump topology apply --replicas N`: besides an old fire stream's
/// subjects ([`widen_legacy_fire_subjects`]), the one place DataJump updates
/// a stream it did not just create, and only when told to, since an update
/// rewrites the whole configuration. Streams already at `replicas` are left
/// alone; JetStream moves the data while the streams stay in use.
pub async fn scale_topology(
    js: &Context,
    names: &Namespace,
    replicas: Replicas,
) -> Result<Vec<Scaled>, NatsError> {
    require_jetstream(js).await?;
    let count = replicas.resolve(&js.client().server_info());
    let mut scaled = Vec::new();
    for name in stream_names(names) {
        let Ok(mut stream) = js.get_stream(&name).await else {
            continue;
        };
        let mut config = stream.cached_info().config.clone();
        if config.num_replicas == count {
            continue;
        }
        let from = config.num_replicas;
        config.num_replicas = count;
        js.update_stream(&config).await.map_err(|e| {
            js_err(format!(
                "scale stream {name} from {from} to {count} replicas"
            ))(e.into())
        })?;
        // A consumer may not have more copies than its stream has placed,
        // and the answer to an update comes before they are.
        let to = placed(&mut stream, count).await;
        scale_consumers(&stream, count).await?;
        scaled.push(Scaled {
            stream: name,
            from,
            to,
        });
    }
    Ok(scaled)
}

/// How long a stream waits for its copies to be placed: a new stream for
/// peers to place them on, a scaled one before [`scale_topology`] scales
/// its consumers anyway.
const PLACEMENT_WAIT: Duration = Duration::from_secs(30);

/// Waits until a scaled stream has `count` copies placed (its leader and
/// at least `count - 1` other peers) or [`PLACEMENT_WAIT`] passes; returns
/// the copies its configuration now says.
async fn placed(stream: &mut stream::Stream, count: usize) -> usize {
    let deadline = tokio::time::Instant::now() + PLACEMENT_WAIT;
    loop {
        let (configured, peers) = stream.info().await.map_or((0, 0), |info| {
            let peers = info.cluster.as_ref().map_or(1, |c| c.replicas.len() + 1);
            (info.config.num_replicas, peers)
        });
        if peers >= count || tokio::time::Instant::now() >= deadline {
            return configured;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Gives a scaled stream's durable consumers its copies too: a consumer
/// created on a one-copy stream keeps one copy when the stream grows, and
/// would lose its position with its node.
async fn scale_consumers(stream: &stream::Stream, count: usize) -> Result<(), NatsError> {
    let mut consumers = stream.consumers();
    while let Some(info) = consumers.next().await {
        let info = info.map_err(|e| {
            js_err(format!("consumers of {}", stream.cached_info().config.name))(e.into())
        })?;
        if info.config.num_replicas == count || info.config.durable_name.is_none() {
            continue;
        }
        let mut config = info.config.clone();
        config.num_replicas = count;
        stream.create_consumer(config).await.map_err(|e| {
            js_err(format!("scale consumer {} to {count} replicas", info.name))(e.into())
        })?;
    }
    Ok(())
}

/// The differences between the server and DataJump's topology, the missing
/// objects included, changing nothing (`datajump topology check`).
pub async fn check_topology(
    js: &Context,
    names: &Namespace,
    replicas: Replicas,
) -> Result<Vec<Drift>, NatsError> {
    topology(js, names, replicas, Mode::Check).await
}

async fn topology(
    js: &Context,
    names: &Namespace,
    replicas: Replicas,
    mode: Mode,
) -> Result<Vec<Drift>, NatsError> {
    require_jetstream(js).await?;
    let replicas = replicas.resolve(&js.client().server_info());
    if mode == Mode::Create {
        widen_legacy_fire_subjects(js, names).await?;
    }
    let mut drift = Vec::new();
    for config in stream_configs(names, replicas) {
        drift.extend(ensure_stream(js, config, mode).await?);
    }
    for priority in Priority::ALL {
        let config = consumer_config(
            &subjects::resolver_fire_consumer(priority),
            &names.fire_level(priority),
            false,
        );
        drift.extend(ensure_consumer(js, &names.stream(Stream::Fire), config, mode).await?);
    }
    for (stream, consumer, deliver_new) in [
        (Stream::Event, subjects::RESOLVER_EVENT_CONSUMER, true),
        (Stream::Dataset, subjects::RESOLVER_DATASET_CONSUMER, true),
        (Stream::Done, subjects::RESOLVER_DONE_CONSUMER, false),
    ] {
        let config = consumer_config(consumer, &names.stream_subjects(stream), deliver_new);
        drift.extend(ensure_consumer(js, &names.stream(stream), config, mode).await?);
    }
    drift.extend(queue_topology(js, names, subjects::DEFAULT_QUEUE, mode).await?);
    for (bucket, max_age) in [
        (names.ticker_bucket(), Duration::ZERO),
        (names.runners_bucket(), RUNNER_TTL),
        (names.resolvers_bucket(), RUNNER_TTL),
    ] {
        drift.extend(ensure_stream(js, kv_stream(&bucket, max_age, replicas), mode).await?);
    }
    drift.extend(ensure_object_store(js, &names.logs_bucket(), replicas, mode).await?);
    if mode == Mode::Create {
        for d in &drift {
            warn!(object = %d.object, detail = %d.detail, "JetStream topology differs from DataJump's; left unchanged");
        }
    }
    Ok(drift)
}
