//! What a consuming role needs: binding to its durable pull consumer, and
//! settling each delivery with an acknowledgement the server confirms.

use std::time::Duration;

use async_nats::jetstream::{self, Context};
use tracing::warn;

use crate::NatsError;
use crate::error::js_err;

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
///
/// [`ACK_WAIT`]: crate::ACK_WAIT
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
///
/// [`ensure_topology`]: crate::ensure_topology
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
