//! DataJump's JetStream topology and the few NATS operations every role
//! shares: topology and transport only, no database (the engine decides
//! what to publish after its commits).
//!
//! [`ensure_topology`] creates each stream, consumer and bucket of
//! docs/ARCHITECTURE.md "Subjects and streams" that is missing and only
//! *reports* differences in those that exist. It never updates: nats-server
//! 2.9 ignores the create/update action field of stream and consumer
//! requests, so an "update" could silently rewrite an operator's tuning.
//! Every role calls it at start; concurrent callers race only into
//! "already exists", which is treated as success. On a NATS where roles'
//! users may not create streams (`nats/config/roles.conf`), an admin runs
//! `datajump topology apply` first, and [`check_topology`] reports without
//! changing anything.
//! Everything here works on nats-server 2.9.10: no multi-filter consumers,
//! no per-message TTL, and KV buckets are created through their backing
//! stream because `create_key_value` fails on 2.9.

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::jetstream::{
    self, Context,
    consumer::{AckPolicy, DeliverPolicy, pull},
    context::PublishErrorKind,
    kv,
    message::PublishMessage,
    object_store,
    stream::{self, DiscardPolicy, RetentionPolicy, StorageType},
};
use datajump_shared::subjects::{self, Installation, Namespace, Priority, Stream};
use futures::StreamExt;
use thiserror::Error;
use tracing::warn;

/// How long JetStream remembers message ids for deduplication.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(10 * 60);
/// How long a delivered message may go unacknowledged before redelivery;
/// runners send AckProgress well within it.
pub const ACK_WAIT: Duration = Duration::from_secs(30);
/// Unacknowledged messages a consumer allows in flight.
pub const MAX_ACK_PENDING: i64 = 20_000;
/// A runner heartbeat older than this marks the runner dead.
pub const RUNNER_TTL: Duration = Duration::from_secs(15);
/// Events are kept this long for audit.
pub const EVENT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// JetStream's limit on the copies of a stream.
pub const MAX_REPLICAS: u8 = 5;

/// How many copies JetStream keeps of each stream (and so of its
/// consumers, which inherit the stream's count), bucket and object store
/// DataJump creates: `auto` (the default) is 3 on a cluster and 1 on a
/// single server, or an explicit 1–5 (`--nats-replicas`). Three copies
/// keep a stream writable when one node is lost; two would not (a stream
/// needs a majority of its copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Replicas {
    /// `None` for `auto`; else 1..=[`MAX_REPLICAS`].
    fixed: Option<u8>,
}

/// A replica count that is neither `auto` nor 1–5.
#[derive(Debug, Error)]
#[error(
    "{0:?} is not a replica count: give `auto` or a number from 1 to {MAX_REPLICAS} (3 on a cluster of three or more nodes)"
)]
pub struct ReplicasError(String);

impl Replicas {
    /// 3 on a cluster, 1 on a single server.
    pub const AUTO: Replicas = Replicas { fixed: None };

    /// Exactly `count` copies.
    ///
    /// # Errors
    ///
    /// When `count` is not 1–5.
    pub fn exactly(count: u8) -> Result<Replicas, ReplicasError> {
        if (1..=MAX_REPLICAS).contains(&count) {
            Ok(Replicas { fixed: Some(count) })
        } else {
            Err(ReplicasError(count.to_string()))
        }
    }

    /// The count for the server a client is connected to. `auto` does not
    /// count the cluster's nodes: the addresses a node advertises are the
    /// nodes it reaches at that moment, so one down (or not yet gossiped)
    /// when the first role starts would give every stream one copy too few
    /// for good. A cluster of two, which no replica count makes survive a
    /// loss, is given `--nats-replicas 2`; JetStream refuses three copies
    /// there and the error says so.
    pub fn resolve(self, server: &async_nats::ServerInfo) -> usize {
        match self.fixed {
            Some(count) => usize::from(count),
            None if server.cluster.is_some() => 3,
            None => 1,
        }
    }
}

impl std::str::FromStr for Replicas {
    type Err = ReplicasError;

    fn from_str(text: &str) -> Result<Replicas, ReplicasError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            return Ok(Replicas::AUTO);
        }
        text.parse::<u8>()
            .map_err(|_| ReplicasError(text.to_owned()))
            .and_then(Replicas::exactly)
    }
}

impl std::fmt::Display for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.fixed {
            Some(count) => write!(f, "{count}"),
            None => f.write_str("auto"),
        }
    }
}

/// How long a publish keeps trying while no server answers for its stream:
/// on a cluster, a stream whose leader was lost has none until its other
/// copies elect one, which takes a few seconds.
pub const LEADERLESS_RETRY: Duration = Duration::from_secs(10);

/// A NATS failure.
#[derive(Debug, Error)]
pub enum NatsError {
    /// Could not connect.
    #[error("cannot connect to NATS at {url}: {source}")]
    Connect {
        /// The URL list tried.
        url: String,
        /// Why.
        source: async_nats::ConnectError,
    },
    /// The server runs without JetStream.
    #[error(
        "the NATS server does not have JetStream enabled, and DataJump keeps its streams there: start nats-server with -js (or a `jetstream {{}}` block in its configuration)"
    )]
    NoJetStream,
    /// A JetStream API call failed.
    #[error("JetStream {what}: {source}")]
    JetStream {
        /// What was being done.
        what: String,
        /// Why.
        source: async_nats::Error,
    },
    /// A credentials or NKey seed file could not be read.
    #[error("NATS credentials {path}: {source}")]
    Credentials {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// How a client proves who it is to NATS, and the TLS it uses. Empty (the
/// default) is an anonymous plain connection, what a local nats-server
/// started by `datajump up` takes.
#[derive(Clone, Default)]
pub struct NatsAuth {
    /// A user and password (`--nats-user`, `DATAJUMP_NATS_PASSWORD`).
    pub user_password: Option<(String, String)>,
    /// A token (`DATAJUMP_NATS_TOKEN`).
    pub token: Option<String>,
    /// A `.creds` file: a user JWT and its NKey seed (`--nats-creds`).
    pub creds_file: Option<std::path::PathBuf>,
    /// A file holding an NKey seed (`--nats-nkey`).
    pub nkey_seed_file: Option<std::path::PathBuf>,
    /// CA certificates to trust (`--nats-tls-ca`).
    pub tls_ca: Option<std::path::PathBuf>,
    /// A client certificate and its key (`--nats-tls-cert`, `--nats-tls-key`).
    pub tls_client: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// Refuse a connection without TLS (`--nats-require-tls`).
    pub require_tls: bool,
}

impl std::fmt::Debug for NatsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsAuth")
            .field("user", &self.user_password.as_ref().map(|(user, _)| user))
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("creds_file", &self.creds_file)
            .field("nkey_seed_file", &self.nkey_seed_file)
            .field("tls_ca", &self.tls_ca)
            .field("tls_client", &self.tls_client)
            .field("require_tls", &self.require_tls)
            .finish()
    }
}

impl NatsAuth {
    /// `options` with these credentials and TLS settings.
    async fn apply(
        &self,
        mut options: async_nats::ConnectOptions,
    ) -> Result<async_nats::ConnectOptions, NatsError> {
        if let Some((user, password)) = &self.user_password {
            options = options.user_and_password(user.clone(), password.clone());
        }
        if let Some(token) = &self.token {
            options = options.token(token.clone());
        }
        if let Some(path) = &self.creds_file {
            options =
                options
                    .credentials_file(path)
                    .await
                    .map_err(|source| NatsError::Credentials {
                        path: path.clone(),
                        source,
                    })?;
        }
        if let Some(path) = &self.nkey_seed_file {
            let seed = std::fs::read_to_string(path).map_err(|source| NatsError::Credentials {
                path: path.clone(),
                source,
            })?;
            options = options.nkey(seed.trim().to_owned());
        }
        if let Some(ca) = &self.tls_ca {
            options = options.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &self.tls_client {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        Ok(options.require_tls(self.require_tls))
    }
}

fn js_err(what: impl Into<String>) -> impl FnOnce(async_nats::Error) -> NatsError {
    let what = what.into();
    move |source| NatsError::JetStream { what, source }
}

/// Connects anonymously to a comma-separated list of NATS URLs, retrying
/// until it answers.
pub async fn connect(urls: &str, name: &str) -> Result<async_nats::Client, NatsError> {
    connect_with(urls, name, &NatsAuth::default()).await
}

/// Connects to a comma-separated list of NATS URLs with `auth`, retrying
/// until it answers.
pub async fn connect_with(
    urls: &str,
    name: &str,
    auth: &NatsAuth,
) -> Result<async_nats::Client, NatsError> {
    let addrs: Vec<async_nats::ServerAddr> = urls
        .split(',')
        .map(|u| u.trim().parse())
        .collect::<Result<_, _>>()
        .map_err(|e: std::io::Error| NatsError::Connect {
            url: urls.to_owned(),
            source: async_nats::ConnectError::with_source(
                async_nats::ConnectErrorKind::ServerParse,
                e,
            ),
        })?;
    auth.apply(async_nats::ConnectOptions::new())
        .await?
        .name(name)
        .retry_on_initial_connect()
        .connect(addrs)
        .await
        .map_err(|source| NatsError::Connect {
            url: urls.to_owned(),
            source,
        })
}

/// What a role publishes through: the JetStream context, the namespace
/// its subjects, streams and buckets are named in ([`Namespace`]), and the
/// installation whose identity every message id it sends carries
/// ([`Installation`]). Each role makes one at start, from its configured
/// prefix and the identity in its database.
#[derive(Clone)]
pub struct Bus {
    js: Context,
    names: Namespace,
    installation: Installation,
}

impl Bus {
    /// A bus over `js` naming things in `names`, for `installation`.
    pub fn new(js: Context, names: Namespace, installation: Installation) -> Bus {
        Bus {
            js,
            names,
            installation,
        }
    }

    /// The names of this installation's subjects, streams and buckets.
    pub fn names(&self) -> &Namespace {
        &self.names
    }

    /// The JetStream context, for consumers, buckets and the object store.
    pub fn js(&self) -> &Context {
        &self.js
    }

    /// The installation the message ids name.
    pub fn installation(&self) -> &Installation {
        &self.installation
    }

    /// Publishes `payload` with the `Nats-Msg-Id` `msg_id` and waits for
    /// JetStream's ack. Returns true when JetStream dropped it as a
    /// duplicate, which is counted by `stream`.
    pub async fn publish(
        &self,
        stream: Stream,
        subject: String,
        msg_id: &str,
        payload: impl Into<bytes::Bytes>,
    ) -> Result<bool, NatsError> {
        let payload = payload.into();
        let deadline = tokio::time::Instant::now() + LEADERLESS_RETRY;
        let mut pause = Duration::from_millis(100);
        let ack = loop {
            let sent = async {
                self.js
                    .send_publish(
                        subject.clone(),
                        PublishMessage::build()
                            .payload(payload.clone())
                            .message_id(msg_id),
                    )
                    .await?
                    .await
            };
            match sent.await {
                Ok(ack) => break ack,
                // No responders: nothing stored, so trying again cannot
                // store the message twice.
                Err(e)
                    if e.kind() == PublishErrorKind::StreamNotFound
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(js_err(format!("publish to {subject}"))(e.into())),
            }
        };
        if ack.duplicate {
            datajump_shared::metrics::duplicate_publish(stream);
        }
        Ok(ack.duplicate)
    }

    /// Publishes a message that must arrive: with `msg_id`, and if
    /// JetStream drops it as a duplicate, which nothing of this
    /// installation should have caused (another publisher used the id
    /// first, or one of ours whose ack was lost), at once again under a
    /// fresh id ([`subjects::fresh_msg_id`]). Receivers treat every message
    /// as a wake-up checked against the database, so a second copy is
    /// harmless and a suppressed one would stall a task.
    pub async fn publish_unsuppressed(
        &self,
        stream: Stream,
        subject: String,
        msg_id: &str,
        payload: Vec<u8>,
    ) -> Result<(), NatsError> {
        // Shared, so keeping it for a republish copies nothing.
        let payload = bytes::Bytes::from(payload);
        if self
            .publish(stream, subject.clone(), msg_id, payload.clone())
            .await?
        {
            warn!(%subject, msg_id, "JetStream dropped a publish as a duplicate of an earlier message with its id; publishing it again under a fresh id");
            self.publish(stream, subject, &subjects::fresh_msg_id(msg_id), payload)
                .await?;
        }
        Ok(())
    }

    /// Publishes a fire under the id that makes a repeat of it a duplicate:
    /// a cron fire's `(schedule, time)`, so two tickers publish one fire,
    /// or any other fire's `dedup_key`. Returns true when JetStream dropped
    /// it as one.
    pub async fn publish_fire(
        &self,
        fire: &datajump_shared::messages::FireMsg,
    ) -> Result<bool, NatsError> {
        self.publish_fire_as(fire, &self.fire_msg_id(fire)).await
    }

    /// The id [`Bus::publish_fire`] publishes `fire` under.
    pub fn fire_msg_id(&self, fire: &datajump_shared::messages::FireMsg) -> String {
        match (fire.schedule_id, fire.trigger_type) {
            (Some(schedule_id), datajump_shared::TriggerType::Schedule) => self
                .installation
                .fire_msg_id(schedule_id, fire.logical_time.timestamp()),
            _ => self.installation.dedup_msg_id(&fire.dedup_key),
        }
    }

    /// Publishes a fire under `msg_id`; true when it was dropped as a
    /// duplicate.
    pub async fn publish_fire_as(
        &self,
        fire: &datajump_shared::messages::FireMsg,
        msg_id: &str,
    ) -> Result<bool, NatsError> {
        use datajump_shared::messages::Message;
        self.publish(
            Stream::Fire,
            self.names.fire(fire.dag_id),
            msg_id,
            fire.encode(),
        )
        .await
    }
}

/// A difference between what exists on the server and what DataJump expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Stream, consumer or bucket name.
    pub object: String,
    /// What differs.
    pub detail: String,
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.object, self.detail)
    }
}

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

fn kv_stream(bucket: &str, max_age: Duration, replicas: usize) -> stream::Config {
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

fn stream_drift(want: &stream::Config, have: &stream::Config) -> Vec<Drift> {
    let mut drift = Vec::new();
    let mut check = |field: &str, differs: bool, detail: String| {
        if differs {
            drift.push(Drift {
                object: want.name.clone(),
                detail: format!("{field} {detail}"),
            });
        }
    };
    check(
        "subjects",
        want.subjects != have.subjects,
        format!("is {:?}, expected {:?}", have.subjects, want.subjects),
    );
    check(
        "retention",
        want.retention != have.retention,
        format!("is {:?}, expected {:?}", have.retention, want.retention),
    );
    check(
        "duplicate_window",
        want.duplicate_window != Duration::ZERO && have.duplicate_window < want.duplicate_window,
        format!(
            "is {:?}, expected at least {:?}",
            have.duplicate_window, want.duplicate_window
        ),
    );
    check(
        "max_age",
        want.max_age != have.max_age,
        format!("is {:?}, expected {:?}", have.max_age, want.max_age),
    );
    check(
        "num_replicas",
        want.num_replicas != have.num_replicas,
        replicas_differ(have.num_replicas, want.num_replicas),
    );
    drift
}

/// How a stream's copies differ from DataJump's, and the command that
/// scales them (never done on its own: see [`scale_topology`]).
fn replicas_differ(have: usize, want: usize) -> String {
    format!(
        "is {have}, expected {want} (scale it with `datajump topology apply --replicas {want}`)"
    )
}

fn consumer_drift(
    stream: &str,
    want: &pull::Config,
    have: &jetstream::consumer::Config,
) -> Vec<Drift> {
    let object = format!("{stream}/{}", want.durable_name.as_deref().unwrap_or(""));
    let mut drift = Vec::new();
    let mut check = |differs: bool, detail: String| {
        if differs {
            drift.push(Drift {
                object: object.clone(),
                detail,
            });
        }
    };
    check(
        want.filter_subject != have.filter_subject,
        format!(
            "filter_subject is {:?}, expected {:?}",
            have.filter_subject, want.filter_subject
        ),
    );
    check(
        want.ack_policy != have.ack_policy,
        format!(
            "ack_policy is {:?}, expected {:?}",
            have.ack_policy, want.ack_policy
        ),
    );
    check(
        have.max_deliver > 0,
        format!(
            "max_deliver is {}, expected unlimited: messages could be dropped",
            have.max_deliver
        ),
    );
    check(
        !have.backoff.is_empty(),
        "has a backoff list, which overrides ack_wait".to_owned(),
    );
    drift
}

/// Whether [`topology`] creates what is missing or only reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Create,
    Check,
}

/// A drift entry for an object that does not exist.
fn missing(object: &str) -> Drift {
    Drift {
        object: object.to_owned(),
        detail: "missing".to_owned(),
    }
}

/// The error for an object that is missing and could not be created: on a
/// locked-down NATS the role's user may not create streams; on a cluster
/// of fewer nodes than copies asked for there is no room for them.
fn not_created(object: &str, source: async_nats::Error) -> NatsError {
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
    for bucket in [names.ticker_bucket(), names.runners_bucket()] {
        streams.push(kv_stream(&bucket, Duration::ZERO, 1).name);
    }
    streams.push(object_store_stream(&names.logs_bucket()));
    streams
}

/// The stream JetStream keeps an object store's chunks in.
fn object_store_stream(bucket: &str) -> String {
    format!("OBJ_{bucket}")
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

/// Sets the copies of every existing stream, bucket and object store of
/// the topology to `replicas` (their consumers follow their stream), for
/// `datajump topology apply --replicas N`: the one place DataJump updates
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
    let mut drift = Vec::new();
    for config in stream_configs(names, replicas) {
        drift.extend(ensure_stream(js, config, mode).await?);
    }
    for (stream, consumer, deliver_new) in [
        (Stream::Fire, subjects::RESOLVER_FIRE_CONSUMER, false),
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

async fn ensure_object_store(
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
pub struct Backlog {
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
pub async fn work_backlog(js: &Context, names: &Namespace) -> Result<Vec<Backlog>, NatsError> {
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
            backlog.push(Backlog {
                queue: queue.to_owned(),
                priority,
                pending: info.num_pending,
                ack_pending: u64::try_from(info.num_ack_pending).unwrap_or(u64::MAX),
            });
        }
    }
    Ok(backlog)
}

/// How long one confirmed acknowledgement waits for the server's answer.
const ACK_CONFIRM_TIMEOUT: Duration = Duration::from_secs(2);
/// Tries of a confirmed acknowledgement before [`settle`] gives up.
const ACK_TRIES: u32 = 3;

/// Ends the delivery of `message` with `kind` (an ack, a nak or a term) and
/// waits until the consumer's leader answers that it processed it
/// (JetStream's "double ack"), sending it again when no answer comes: a
/// consumer whose leader was just lost drops acknowledgements until its
/// copies elect another, and nats-server 2.9/2.10 clusters have redelivered
/// acknowledged messages after a node reboot. A fire-and-forget ack lost
/// that way is a redelivery after [`ACK_WAIT`]. Every handler is safe to
/// run twice (the database guards each step), so a lost ack costs a
/// redelivery, never a second execution; confirming makes it rare and
/// visible in the log. Progress acks stay fire-and-forget.
///
/// A request rather than async-nats's `double_ack_with`: that one takes any
/// answer as a confirmation, the server's "no responders" (no consumer
/// listens any more) included, and subscribes a fresh inbox per ack where
/// a request shares the client's.
///
/// # Errors
///
/// [`NatsError::JetStream`] when no answer came after [`ACK_TRIES`] tries
/// or the message has no reply subject (not a JetStream delivery).
pub async fn settle(
    message: &jetstream::Message,
    kind: jetstream::AckKind,
) -> Result<(), NatsError> {
    let Some(reply) = message.reply.clone() else {
        return Err(js_err("acknowledgement")(
            "not a JetStream delivery (no reply subject)".into(),
        ));
    };
    let payload: bytes::Bytes = kind.into();
    let client = message.context.client();
    let mut tries = 0;
    loop {
        tries += 1;
        let answer = tokio::time::timeout(
            ACK_CONFIRM_TIMEOUT,
            client.request(reply.clone(), payload.clone()),
        )
        .await;
        let failure: async_nats::Error = match answer {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.into(),
            Err(elapsed) => elapsed.into(),
        };
        if tries == ACK_TRIES {
            return Err(js_err(format!(
                "acknowledgement not confirmed after {tries} tries"
            ))(failure));
        }
        warn!(error = %failure, tries, "acknowledgement not confirmed; sending it again");
        tokio::time::sleep(Duration::from_millis(200) * tries).await;
    }
}

/// Binds to a durable pull consumer created by [`ensure_topology`].
pub async fn pull_consumer(
    js: &Context,
    stream: &str,
    consumer: &str,
) -> Result<jetstream::consumer::PullConsumer, NatsError> {
    js.get_stream(stream)
        .await
        .map_err(|e| js_err(format!("stream {stream}"))(e.into()))?
        .get_consumer(consumer)
        .await
        .map_err(|e| js_err(format!("consumer {consumer}"))(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(cluster: Option<&str>, nodes: usize) -> async_nats::ServerInfo {
        async_nats::ServerInfo {
            cluster: cluster.map(str::to_owned),
            connect_urls: (0..nodes)
                .map(|i| format!("127.0.0.1:{}", 4222 + i))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn auto_is_three_on_a_cluster_whatever_it_reaches_and_one_alone() {
        assert_eq!(Replicas::AUTO.resolve(&server(None, 0)), 1);
        assert_eq!(Replicas::AUTO.resolve(&server(Some("c"), 2)), 3);
        assert_eq!(Replicas::AUTO.resolve(&server(Some("c"), 5)), 3);
        let two: Replicas = "2".parse().expect("a count");
        assert_eq!(two.resolve(&server(Some("c"), 3)), 2);
        assert_eq!(two.resolve(&server(None, 0)), 2);
    }

    #[test]
    fn counts_are_auto_or_one_to_five() {
        assert_eq!("auto".parse::<Replicas>().expect("auto"), Replicas::AUTO);
        assert_eq!(" AUTO ".parse::<Replicas>().expect("auto"), Replicas::AUTO);
        assert_eq!("5".parse::<Replicas>().expect("5").to_string(), "5");
        for bad in ["0", "6", "three", "-1", ""] {
            let error = bad.parse::<Replicas>().expect_err(bad).to_string();
            assert!(error.contains("from 1 to 5"), "{bad}: {error}");
        }
    }
}
