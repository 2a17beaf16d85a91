//! The resolver: consumer plumbing that turns fires into runs ([`fires`]),
//! completions into releases ([`dones`]), events into fires ([`events`])
//! and producers' dataset announcements into dataset events ([`datasets`]),
//! and keeps a heartbeat in `dj_resolvers` that says which build it is
//! ([`heartbeat`]).
//!
//! Stateless; any number of replicas share the durable consumers
//! `resolver-fire-p10` … `resolver-fire-p1`, `resolver-done`,
//! `resolver-event` and `resolver-dataset`. Fires are taken from the
//! highest level that has one ready, so in a storm the most urgent DAGs
//! get their runs first (docs/ARCHITECTURE.md "Priorities"). The work is the
//! engine's (`datajump-engine`): each batch is one engine call, whose
//! effects are published after its commit, and every handler is safe to run
//! twice: a repeated fire hits the run's unique `dedup_key`, a repeated
//! completion finds its instance already propagated. A message that cannot be
//! decoded or names ids that cannot exist is terminated (never redelivered),
//! and so is one whose values the database refuses (a data error: a date
//! or a text it cannot store); any other database error NAKs it so nothing
//! is dropped.
//!
//! A runner propagates the ends of its own tasks in the transaction that
//! records them (`datajump_engine::record`), so `dj.done.*`
//! carries only the ends made elsewhere — kills, takeovers of a lost
//! runner's task — and completions republished after a crash; propagating
//! one twice is a no-op.
//!
//! Completions are settled in batches: whatever `dj.done.*` messages are
//! waiting (up to [`DONE_BATCH`]) are propagated in one transaction, so a
//! wide DAG's completions pay one commit (and one turn of the run row's lock)
//! per batch instead of one each; a lone completion is still handled the
//! moment it arrives. Fires are batched the same way. A batch's released
//! work is published, and its messages acknowledged, while the next batch's
//! transaction runs: the database, not the broker's round trips, sets the
//! pace.

mod datasets;
mod dones;
mod events;
mod fires;
mod heartbeat;

use std::time::Duration;

use async_nats::jetstream::{self, AckKind};
use datajump_engine::Effects;
use datajump_nats::{Bus, NatsError, pull_consumer};
use datajump_shared::messages::{Message, MessageError};
use datajump_shared::metrics;
use datajump_shared::subjects::{self, Namespace, Priority, Stream};
use datajump_store::installation::{self, InstallationError};
use futures::StreamExt;
use futures::stream::{BoxStream, PollNext, select_with_strategy};
use sea_orm::{DatabaseConnection, DbErr};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

/// How the resolver runs.
#[derive(Clone)]
pub struct Config {
    /// The database.
    pub db: DatabaseConnection,
    /// The NATS connection.
    pub nats: async_nats::Client,
    /// The names of the installation's subjects, streams and buckets.
    pub names: Namespace,
    /// Copies of each stream and bucket it creates when missing
    /// (`--nats-replicas`).
    pub replicas: datajump_nats::Replicas,
    /// Zone for event schedules whose stored zone cannot be read.
    pub default_timezone: chrono_tz::Tz,
    /// Messages handled at once per consumer.
    pub concurrency: usize,
}

/// Why the resolver stopped.
#[derive(Debug, Error)]
pub enum ResolverError {
    /// NATS failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
    /// The database has no installation identity.
    #[error(transparent)]
    Installation(#[from] InstallationError),
}

/// What to do with a message after handling it.
#[derive(Debug)]
enum Settlement {
    Ack,
    /// Transient failure: deliver again later.
    Retry(String),
    /// Poison: never deliver again.
    Poison(String),
}

impl From<DbErr> for Settlement {
    /// A data error (the database refuses a value the message carries:
    /// a date it cannot store, text too long for its column) ends the
    /// message, logged as poison: it would fail the same way at every
    /// redelivery, once a second for ever. Any other error retries
    /// (docs/SECURITY.md, "Sizes and dates").
    fn from(e: DbErr) -> Self {
        if datajump_store::db::is_data_error(&e) {
            Settlement::Poison(format!("the database refuses its data: {e}"))
        } else {
            Settlement::Retry(format!("database: {e}"))
        }
    }
}

impl From<NatsError> for Settlement {
    fn from(e: NatsError) -> Self {
        Settlement::Retry(e.to_string())
    }
}

impl From<MessageError> for Settlement {
    fn from(e: MessageError) -> Self {
        Settlement::Poison(e.to_string())
    }
}

/// Runs the resolver until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), ResolverError> {
    let js = jetstream::new(config.nats.clone());
    datajump_nats::ensure_topology(&js, &config.names, config.replicas).await?;
    let bus = Bus::new(
        js,
        config.names.clone(),
        installation::identity(&config.db).await?,
    );
    let id = datajump_shared::ids::role_process_id();
    info!(installation = %bus.installation(), resolver = %id, "resolver started");
    let beating = shutdown.child_token();
    let heartbeat = tokio::spawn(heartbeat::heartbeat_loop(
        bus.js().clone(),
        config.names.clone(),
        id,
        beating.clone(),
    ));
    let mut fire_consumers: Vec<String> = Priority::ALL
        .into_iter()
        .map(subjects::resolver_fire_consumer)
        .collect();
    if legacy_fires_exist(&bus).await {
        fire_consumers.push(subjects::LEGACY_RESOLVER_FIRE_CONSUMER.to_owned());
    }
    let fires = consume(
        &config,
        &bus,
        Stream::Fire,
        &fire_consumers,
        &shutdown,
        Kind::Fire,
    );
    let dones = consume(
        &config,
        &bus,
        Stream::Done,
        &[subjects::RESOLVER_DONE_CONSUMER],
        &shutdown,
        Kind::Done,
    );
    let events = consume(
        &config,
        &bus,
        Stream::Event,
        &[subjects::RESOLVER_EVENT_CONSUMER],
        &shutdown,
        Kind::Event,
    );
    let datasets = consume(
        &config,
        &bus,
        Stream::Dataset,
        &[subjects::RESOLVER_DATASET_CONSUMER],
        &shutdown,
        Kind::Dataset,
    );
    let (a, b, c, d) = tokio::join!(fires, dones, events, datasets);
    // Its key is removed on the way out, so a stopped resolver leaves
    // `dj_resolvers` at once rather than when the key expires.
    beating.cancel();
    let _ = heartbeat.await;
    a.and(b).and(c).and(d)?;
    info!("resolver stopped");
    Ok(())
}

#[derive(Clone, Copy)]
enum Kind {
    Fire,
    Done,
    Event,
    Dataset,
}

/// Most completions settled in one transaction.
pub const DONE_BATCH: usize = 128;

/// Most fires turned into runs in one transaction.
pub const FIRE_BATCH: usize = 128;

/// Whether an installation upgraded from a release before fire priorities
/// still has the consumer its fires of the old form wait in.
async fn legacy_fires_exist(bus: &Bus) -> bool {
    pull_consumer(
        bus.js(),
        &bus.names().stream(Stream::Fire),
        subjects::LEGACY_RESOLVER_FIRE_CONSUMER,
    )
    .await
    .is_ok()
}

/// Consumes `consumers` of `stream` (several: most urgent first) until
/// `shutdown`.
async fn consume(
    config: &Config,
    bus: &Bus,
    stream: Stream,
    consumers: &[impl AsRef<str>],
    shutdown: &CancellationToken,
    kind: Kind,
) -> Result<(), ResolverError> {
    let mut pulled = Vec::with_capacity(consumers.len());
    for consumer in consumers {
        pulled.push(pull_consumer(bus.js(), &bus.names().stream(stream), consumer.as_ref()).await?);
    }
    'pulling: while !shutdown.is_cancelled() {
        let mut sources = Vec::with_capacity(pulled.len());
        for consumer in &pulled {
            match consumer.messages().await {
                Ok(messages) => sources.push(
                    messages
                        .take_until(shutdown.cancelled())
                        .filter_map(|message| {
                            futures::future::ready(
                                message
                                    .map_err(|e| debug!(error = %e, "pull stream hiccup"))
                                    .ok(),
                            )
                        })
                        .boxed(),
                ),
                Err(e) => {
                    warn!(error = %e, stream = stream.as_str(), "cannot pull; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue 'pulling;
                }
            }
        }
        let messages = most_urgent_first(sources);
        match kind {
            // One transaction at a time: batches of one resolver never wait
            // on each other's row locks, and the next batch is whatever
            // arrived meanwhile. Publishing a batch's work and acknowledging
            // its messages overlaps the next batch's transaction.
            Kind::Done => {
                pipeline(messages, DONE_BATCH, bus, stream, |batch| async move {
                    let committed = dones::commit_dones(config, &batch).await;
                    (batch, committed)
                })
                .await;
            }
            Kind::Fire => {
                pipeline(messages, FIRE_BATCH, bus, stream, |batch| async move {
                    let committed = fires::commit_fires(config, &batch).await;
                    (batch, committed)
                })
                .await;
            }
            Kind::Event => {
                messages
                    .for_each_concurrent(config.concurrency, |message| async move {
                        let settlement = events::handle_event(config, bus, &message).await;
                        settle_message(&message, stream, settlement).await;
                    })
                    .await;
            }
            Kind::Dataset => {
                messages
                    .for_each_concurrent(config.concurrency, |message| async move {
                        let settlement = datasets::handle_dataset(config, bus, &message).await;
                        settle_message(&message, stream, settlement).await;
                    })
                    .await;
            }
        }
    }
    Ok(())
}

/// What a batch's transaction decided: a settlement per message (`None`:
/// handled, ack it) and what its commit owes.
struct Committed {
    settlements: Vec<Option<Settlement>>,
    effects: Effects,
}

/// Batches whose work is being published and messages acknowledged while
/// the next batch's transaction runs.
const BATCHES_SETTLING: usize = 4;

/// Commits batches of up to `batch` messages one after another, and
/// publishes what each released and settles its messages concurrently with
/// the following batches: a message is acknowledged only after its
/// transaction committed and its released work was published.
async fn pipeline<S, F, Fut>(messages: S, batch: usize, bus: &Bus, stream: Stream, commit: F)
where
    S: futures::Stream<Item = jetstream::Message>,
    F: FnMut(Vec<jetstream::Message>) -> Fut,
    Fut: std::future::Future<Output = (Vec<jetstream::Message>, Committed)>,
{
    messages
        .ready_chunks(batch)
        .then(commit)
        .for_each_concurrent(BATCHES_SETTLING, |(messages, committed)| async move {
            // A failed publish is logged; the deadline scan republishes.
            let _ = committed.effects.publish(bus).await;
            settle_batch(&messages, stream, committed.settlements).await;
        })
        .await;
}

/// One stream of the messages of `sources`, each taken from the first
/// source (in order) that has one ready: a resolver with fires of several
/// levels waiting turns those of the highest into runs first, as a runner
/// takes work. Messages a lower level has buffered wait meanwhile; one kept
/// past its consumer's ack wait is delivered again, which a fire's run key
/// makes harmless. It ends when any source ends, so that the caller pulls
/// them all again.
fn most_urgent_first(
    sources: Vec<BoxStream<'_, jetstream::Message>>,
) -> impl futures::Stream<Item = jetstream::Message> + '_ {
    fn higher_first(_: &mut ()) -> PollNext {
        PollNext::Left
    }
    sources
        .into_iter()
        .map(|source| {
            source
                .map(Some)
                .chain(futures::stream::once(futures::future::ready(None)))
                .boxed()
        })
        .rev()
        .reduce(|lower, higher| select_with_strategy(higher, lower, higher_first).boxed())
        .unwrap_or_else(|| futures::stream::empty().boxed())
        .take_while(|message| futures::future::ready(message.is_some()))
        .filter_map(futures::future::ready)
}

async fn settle_message(message: &jetstream::Message, stream: Stream, settlement: Settlement) {
    let (sequence, subject) = (
        message
            .info()
            .map(|i| i.stream_sequence)
            .unwrap_or_default(),
        message.subject.as_str(),
    );
    let kind = match settlement {
        Settlement::Ack => AckKind::Ack,
        Settlement::Retry(why) => {
            warn!(subject, sequence, why, "will retry message");
            AckKind::Nak(Some(Duration::from_secs(1)))
        }
        Settlement::Poison(why) => {
            error!(subject, sequence, why, "poison message terminated");
            AckKind::Term
        }
    };
    let poison = matches!(kind, AckKind::Term);
    match datajump_nats::settle(message, kind).await {
        // Counted once the server has it terminated, so a scrape that
        // sees the count sees the message gone from its consumer's backlog.
        Ok(()) if poison => metrics::poison_message(stream),
        Ok(()) => {}
        Err(e) => warn!(error = %e, subject, sequence, "could not acknowledge message"),
    }
}

/// Decodes a batch of messages: each decodable one with its index, and a
/// settlement slot per message, already Poison for those that do not decode.
fn decode_batch<M: Message>(
    messages: &[jetstream::Message],
) -> (Vec<Option<Settlement>>, Vec<(usize, M)>) {
    let mut settlements: Vec<Option<Settlement>> = messages.iter().map(|_| None).collect();
    let mut decoded = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        match M::decode(&message.payload) {
            Ok(body) => decoded.push((index, body)),
            Err(e) => settlements[index] = Some(e.into()),
        }
    }
    (settlements, decoded)
}

/// Settles each message of a batch by its settlement; one left without a
/// settlement was handled and is acked.
async fn settle_batch(
    messages: &[jetstream::Message],
    stream: Stream,
    settlements: Vec<Option<Settlement>>,
) {
    // Concurrently: each confirmation is a round trip to the server.
    futures::future::join_all(
        messages
            .iter()
            .zip(settlements)
            .map(|(message, settlement)| {
                settle_message(message, stream, settlement.unwrap_or(Settlement::Ack))
            }),
    )
    .await;
}
