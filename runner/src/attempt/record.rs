//! Recording an attempt's end: committed (and propagated) before its work
//! message is acknowledged, retried until the database takes it.

use std::time::Duration;

use async_nats::jetstream::AckKind;
use datajump_shared::metrics;
use sea_orm::DbErr;
use tracing::{info, warn};

use super::ClaimedAttempt;
use crate::Runner;

impl Runner {
    /// Commits `ended` and says how to acknowledge the work message.
    pub(super) async fn record(
        &self,
        claimed: &ClaimedAttempt<'_>,
        ended: datajump_engine::End,
    ) -> Result<AckKind, DbErr> {
        let message = claimed.message;
        let duration_ms = ended.duration_ms;
        // Until it is committed, the attempt's result exists only in this
        // process: a failed commit (database down or restarting) is retried, with
        // AckProgress so the work message stays ours. NAKing instead would hand a
        // copy to runners that find the instance RUNNING under this live runner
        // and wait for it forever.
        let mut retry_in = Duration::from_millis(200);
        let mut retried = false;
        let datajump_engine::Ended { finished, requeued } = loop {
            match self.committer.end(ended.clone()).await {
                Ok(recorded) => break recorded,
                Err(e) if self.stops.drain.is_cancelled() => return Err(e),
                Err(e) => {
                    warn!(error = %e, ?retry_in, "cannot record the attempt's end; retrying");
                    let _ = message.ack_with(AckKind::Progress).await;
                    tokio::time::sleep(retry_in).await;
                    retry_in = (retry_in * 2).min(Duration::from_secs(5));
                    retried = true;
                }
            }
        };
        if requeued.is_some() {
            // Its work went out with the commit's effects.
            info!("task returned to the queue (runner shutting down, or its lease lapsed)");
            return Ok(AckKind::Ack);
        }
        match finished {
            Some(row) => {
                // Its end was propagated in the same transaction, and the work
                // that released is published: nothing is left for a resolver.
                metrics::attempt_ended(row.status);
                info!(status = %row.status, duration_ms, "task finished");
            }
            None if retried => {
                // A failed commit may have reached the database before the
                // connection broke: a redelivered copy republishes the work it
                // released if the instance is finished.
                info!("attempt's end recorded after a retry; redelivering to check its completion");
                return Ok(AckKind::Nak(Some(Duration::from_secs(1))));
            }
            None => {
                info!(
                    "attempt ended after the instance was changed elsewhere (killed or taken over)"
                )
            }
        }
        Ok(AckKind::Ack)
    }
}
