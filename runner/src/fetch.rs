//! Fetching work: which priority level of which queue a free slot asks,
//! and the loop that fills free slots and hands each message to a handler.
//!
//! A free slot takes the oldest message of the highest priority waiting,
//! one fetch per level for all the free slots and no prefetch, so a
//! buffered message can never jump ahead of a later one of higher
//! priority. A core subscription to the queues' work subjects is only a
//! doorbell: it wakes the loop and says which levels to ask.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, Context, consumer::PullConsumer};
use datajump_nats::pull_consumer;
use datajump_shared::subjects::{self, Namespace, Priority, Stream};
use futures::{FutureExt, StreamExt};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::heartbeat::Occupancy;
use crate::{Config, Runner, RunnerError};

/// How long a fetch waits for the server's answer. A fetch asks with
/// `no_wait`, so a live server answers at once, and the client sets no timer
/// of its own: an answer lost with the connection (nats-server restarting)
/// would leave the fetch loop waiting forever while the heartbeat task keeps
/// the runner looking alive.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// How soon a fetch that found nothing right after a doorbell ring looks
/// again.
const RECHECK_AFTER_RING: Duration = Duration::from_millis(5);

/// Most messages one fetch loop turn takes (and slots it fills at once).
const MAX_FETCH: usize = 64;

/// How long a level a fetch found empty is left alone when its doorbell has
/// not rung: work that arrives without a publish (a redelivery after a NAK
/// or an ack timeout) or whose ring was lost waits at most this long.
const RECHECK_QUIET_AFTER: Duration = Duration::from_secs(1);

/// How long before a fetch that found a level empty a ring of that level may
/// still be for a message the stream had not stored yet (see
/// [`RECHECK_AFTER_RING`]): the level is asked again.
const RING_RACE: Duration = Duration::from_millis(50);

/// One priority level of one queue's work.
struct WorkSource {
    queue: String,
    priority: Priority,
    consumer: PullConsumer,
    backlog: LevelBacklog,
}

/// What the runner last learned of a level's backlog. Asking a level that has
/// nothing costs a NATS round trip, and a fetch asking every level in turn
/// while nearly all work sits in one would make most requests come back
/// empty, some of them on every task's way to starting. So a level
/// a fetch found empty is asked again only when its doorbell rings or
/// [`RECHECK_QUIET_AFTER`] has passed.
#[derive(Debug, Default, Clone, Copy)]
struct LevelBacklog {
    /// When a fetch last came back with less than it asked for.
    drained_at: Option<Instant>,
    /// When the doorbell last rang for this level.
    rang_at: Option<Instant>,
}

impl LevelBacklog {
    /// Whether a fetch should ask this level at `now`.
    fn worth_asking(&self, now: Instant) -> bool {
        let Some(drained) = self.drained_at else {
            return true;
        };
        now.duration_since(drained) >= RECHECK_QUIET_AFTER
            || self.rang_at.is_some_and(|rang| rang + RING_RACE >= drained)
    }
}

/// Notes a doorbell ring (the core copy of a work publish) on its level.
fn rung(names: &Namespace, sources: &mut [WorkSource], subject: &str) {
    if let Some((queue, priority)) = names.parse_work(subject)
        && let Some(source) = sources
            .iter_mut()
            .find(|s| s.priority == priority && s.queue == queue)
    {
        source.backlog.rang_at = Some(Instant::now());
    }
}

/// Up to `wanted` messages, taken from the levels worth asking in order
/// (priority 10 first), so a saturated runner always takes higher
/// priorities first.
async fn fetch_batch(sources: &mut [WorkSource], wanted: usize) -> Vec<jetstream::Message> {
    let mut taken = Vec::with_capacity(wanted);
    for source in sources {
        let room = wanted - taken.len();
        if room == 0 {
            break;
        }
        let asked_at = Instant::now();
        if !source.backlog.worth_asking(asked_at) {
            continue;
        }
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, async {
            let mut batch = source
                .consumer
                .fetch()
                .max_messages(room)
                .messages()
                .await?;
            let mut messages = Vec::with_capacity(room);
            while let Some(message) = batch.next().await {
                match message {
                    Ok(message) => messages.push(message),
                    Err(e) => debug!(error = %e, "fetch ended early"),
                }
            }
            Ok::<_, async_nats::jetstream::consumer::pull::BatchError>(messages)
        })
        .await;
        match fetched {
            Ok(Ok(messages)) => {
                source.backlog.drained_at = (messages.len() < room).then_some(asked_at);
                taken.extend(messages);
            }
            Ok(Err(e)) => debug!(error = %e, "fetch failed"),
            Err(_) => warn!("no answer to a fetch within {FETCH_TIMEOUT:?}; asking again"),
        }
    }
    taken
}

/// The levels this runner fetches from, in the order it asks them
/// (priority 10 first), and the doorbell that says which have new work.
pub(crate) struct WorkSources {
    levels: Vec<WorkSource>,
    doorbell: futures::stream::SelectAll<async_nats::Subscriber>,
}

impl WorkSources {
    /// Creates each queue's consumers where missing and subscribes to its
    /// doorbell.
    pub(crate) async fn open(config: &Config, js: &Context) -> Result<WorkSources, RunnerError> {
        let names = &config.names;
        let mut levels: Vec<WorkSource> = Vec::new();
        let mut doorbell = futures::stream::SelectAll::new();
        for queue in &config.queues {
            datajump_nats::ensure_queue(js, names, queue).await?;
            let subject = names.work_queue_all(queue);
            let subscription = config
                .nats
                .subscribe(subject.clone())
                .await
                .map_err(|source| RunnerError::Subscribe { subject, source })?;
            doorbell.push(subscription);
        }
        let work_stream = names.stream(Stream::Work);
        for priority in Priority::ALL {
            for queue in &config.queues {
                let name = subjects::runner_consumer(queue, priority);
                levels.push(WorkSource {
                    queue: queue.clone(),
                    priority,
                    consumer: pull_consumer(js, &work_stream, &name).await?,
                    backlog: LevelBacklog::default(),
                });
            }
        }
        Ok(WorkSources { levels, doorbell })
    }
}

/// Fills free slots with work until `shutdown`, spawning a handler per
/// message into `running`.
pub(crate) async fn fetch_loop(
    runner: &Arc<Runner>,
    sources: &mut WorkSources,
    occupancy: &Occupancy,
    running: &mut JoinSet<()>,
    shutdown: &CancellationToken,
) {
    let names = &runner.config.names;
    let slots = &occupancy.slots;
    let fetching = &occupancy.fetching;
    let WorkSources { levels, doorbell } = sources;
    'fetching: while !shutdown.is_cancelled() {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let mut permits = vec![permit];
        let mut rang = false;
        loop {
            // Every free slot is filled from one fetch per level rather than
            // one fetch per task: under load that was most of a task's NATS
            // round trips.
            while permits.len() < MAX_FETCH
                && let Ok(more) = slots.clone().try_acquire_owned()
            {
                permits.push(more);
            }
            while let Some(Some(ring)) = doorbell.next().now_or_never() {
                rung(names, levels, &ring.subject);
            }
            fetching.store(permits.len(), std::sync::atomic::Ordering::Relaxed);
            let messages = fetch_batch(levels, permits.len()).await;
            if !messages.is_empty() {
                fetching.store(0, std::sync::atomic::Ordering::Relaxed);
                for (message, permit) in messages.into_iter().zip(permits.drain(..)) {
                    let runner = runner.clone();
                    running.spawn(async move {
                        runner.handle_work(message, permit).await;
                    });
                }
                break;
            }
            // Idle: hold one slot only, so the heartbeat counts the others free.
            permits.truncate(1);
            fetching.store(permits.len(), std::sync::atomic::Ordering::Relaxed);
            // The doorbell (a core copy of the publish) can arrive before
            // the stream has stored the message, so a fetch right after a
            // ring may find nothing: look again shortly rather than at the
            // next one-second poll.
            let idle = if std::mem::take(&mut rang) {
                RECHECK_AFTER_RING
            } else {
                Duration::from_secs(1)
            };
            tokio::select! {
                ring = doorbell.next() => {
                    if let Some(ring) = ring {
                        rung(names, levels, &ring.subject);
                    }
                    rang = true;
                }
                () = tokio::time::sleep(idle) => {},
                () = shutdown.cancelled() => break 'fetching,
            }
        }
        while running.try_join_next().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_level_is_asked_again_after_a_ring_or_a_quiet_second() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let unknown = LevelBacklog::default();
        assert!(unknown.worth_asking(at(0)), "never asked: ask");

        let drained = LevelBacklog {
            drained_at: Some(at(100)),
            rang_at: None,
        };
        assert!(!drained.worth_asking(at(101)), "found empty, no ring since");
        assert!(!drained.worth_asking(at(1_099)));
        assert!(
            drained.worth_asking(at(1_100)),
            "a quiet second: redeliveries"
        );

        let rang_after = LevelBacklog {
            rang_at: Some(at(150)),
            ..drained
        };
        assert!(
            rang_after.worth_asking(at(151)),
            "rang since it was found empty"
        );

        let rang_just_before = LevelBacklog {
            rang_at: Some(at(70)),
            ..drained
        };
        assert!(
            rang_just_before.worth_asking(at(105)),
            "the ring may have beaten the stream's store: ask again"
        );

        let rang_long_before = LevelBacklog {
            rang_at: Some(at(10)),
            ..drained
        };
        assert!(!rang_long_before.worth_asking(at(105)));
    }
}
