//! The [`Bus`] a role publishes through: every message carries a
//! `Nats-Msg-Id` naming this installation, so JetStream drops repeats.

use std::time::Duration;

use async_nats::jetstream::{Context, context::PublishErrorKind, message::PublishMessage};
use datajump_shared::subjects::{self, Installation, Namespace, Stream};
use tracing::warn;

use crate::NatsError;
use crate::error::js_err;

/// How long a publish keeps trying while no server answers for its stream:
/// on a cluster, a stream whose leader was lost has none until its other
/// copies elect one, which takes a few seconds.
pub const LEADERLESS_RETRY: Duration = Duration::from_secs(10);

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
        self.send(stream, subject, msg_id, payload.into())
            .await
            .await
    }

    /// Hands `payload` to the connection and returns the wait for its ack,
    /// which [`Bus::publish`] awaits at once. Messages one task sends one
    /// after another are stored in that order even when their acks are
    /// awaited together; publishes started together are not, since each
    /// may yield to the runtime before its message is queued.
    pub async fn send<'a>(
        &'a self,
        stream: Stream,
        subject: String,
        msg_id: &str,
        payload: bytes::Bytes,
    ) -> impl Future<Output = Result<bool, NatsError>> + use<'a> {
        let message = move |payload: bytes::Bytes, msg_id: &str| {
            PublishMessage::build().payload(payload).message_id(msg_id)
        };
        let sent = self
            .js
            .send_publish(subject.clone(), message(payload.clone(), msg_id))
            .await;
        let msg_id = msg_id.to_owned();
        async move {
            let deadline = tokio::time::Instant::now() + LEADERLESS_RETRY;
            let mut pause = Duration::from_millis(100);
            let mut sent = sent;
            let ack = loop {
                let acked = match sent {
                    Ok(ack) => ack.await,
                    Err(e) => Err(e),
                };
                match acked {
                    Ok(ack) => break ack,
                    // No responders: nothing stored, so trying again cannot
                    // store the message twice.
                    Err(e)
                        if e.kind() == PublishErrorKind::StreamNotFound
                            && tokio::time::Instant::now() + pause < deadline =>
                    {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(1));
                        sent = self
                            .js
                            .send_publish(subject.clone(), message(payload.clone(), &msg_id))
                            .await;
                    }
                    Err(e) => return Err(js_err(format!("publish to {subject}"))(e.into())),
                }
            };
            if ack.duplicate {
                datajump_shared::metrics::duplicate_publish(stream);
            }
            Ok(ack.duplicate)
        }
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
        self.send_fire_as(fire, msg_id).await.await
    }

    /// Hands a fire to the connection under the id [`Bus::publish_fire`]
    /// uses and returns the wait for its ack (see [`Bus::send`]): fires
    /// sent one after another reach their level in that order.
    pub async fn send_fire<'a>(
        &'a self,
        fire: &datajump_shared::messages::FireMsg,
    ) -> impl Future<Output = Result<bool, NatsError>> + use<'a> {
        self.send_fire_as(fire, &self.fire_msg_id(fire)).await
    }

    /// [`Bus::send`] of a fire on its level's subject under `msg_id`.
    async fn send_fire_as<'a>(
        &'a self,
        fire: &datajump_shared::messages::FireMsg,
        msg_id: &str,
    ) -> impl Future<Output = Result<bool, NatsError>> + use<'a> {
        use datajump_shared::messages::Message;
        self.send(
            Stream::Fire,
            self.names.fire(fire.priority, fire.dag_id),
            msg_id,
            fire.encode().into(),
        )
        .await
    }
}
