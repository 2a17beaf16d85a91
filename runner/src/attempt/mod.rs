//! One attempt, from its work message to its acknowledgement: claim, then
//! prepare → execute → conclude → record.
//!
//! A task starts only through the engine's conditional claim
//! (`datajump_engine::record`); the attempt's end is committed, and
//! propagated, before what it released is published and its message acked,
//! so a runner dying at any point loses nothing. The slot is given back as
//! soon as the task has stopped: recording the end and publishing the
//! completion use no resource a slot stands for, and holding the slot
//! through them (two round trips and a commit) kept a runner of quick tasks
//! idle for most of each task's turn.

mod conclude;
mod execute;
mod prepare;
mod record;

use std::time::Duration;

use async_nats::jetstream::{self, AckKind};
use datajump_shared::entities::{execution, task_instance};
use datajump_shared::messages::{Message, WorkMsg};
use datajump_shared::metrics;
use datajump_shared::subjects::Stream;
use sea_orm::DbErr;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::Runner;

/// An attempt this runner has claimed.
struct ClaimedAttempt<'a> {
    message: &'a jetstream::Message,
    /// The attempt as the database queued it.
    work: &'a WorkMsg,
    /// Why the stored spec could not be read, if it could not.
    unreadable: Option<String>,
    row: &'a task_instance::Model,
    exec_row: &'a execution::Model,
    /// What the tasks of its run had declared when it was claimed.
    run_outputs: &'a [datajump_engine::DeclaredOutputs],
    /// Pulled by a kill.
    kill: &'a CancellationToken,
}

impl Runner {
    /// Handles one work message in `slot` and acknowledges it.
    pub(crate) async fn handle_work(
        &self,
        message: jetstream::Message,
        slot: OwnedSemaphorePermit,
    ) {
        let work = match WorkMsg::decode(&message.payload) {
            Ok(work) => work,
            Err(e) => {
                let sequence = message
                    .info()
                    .map(|i| i.stream_sequence)
                    .unwrap_or_default();
                warn!(subject = %message.subject, sequence, error = %e, "poison work message terminated");
                // Counted once the server has it terminated, so a scrape
                // that sees the count sees the message out of the backlog.
                match datajump_nats::settle(&message, AckKind::Term).await {
                    Ok(()) => metrics::poison_message(Stream::Work),
                    Err(e) => warn!(error = %e, "could not terminate poison work message"),
                }
                return;
            }
        };
        let span = info_span!("task", dag_run_id = work.dag_run_id.0, task_instance_id = work.task_instance_id.0, attempt = work.attempt, task = %work.spec.task.name);
        async {
            let ack = match self.attempt(&message, &work, slot).await {
                Ok(ack) => ack,
                Err(e) => {
                    warn!(error = %e, "database error; message will be redelivered");
                    AckKind::Nak(Some(Duration::from_secs(1)))
                }
            };
            if let Err(e) = datajump_nats::settle(&message, ack).await {
                warn!(error = %e, "could not acknowledge work message");
            }
        }
        .instrument(span)
        .await
    }

    /// Claims and runs one attempt in `slot`; returns how to acknowledge the
    /// message.
    async fn attempt(
        &self,
        message: &jetstream::Message,
        work: &WorkMsg,
        slot: OwnedSemaphorePermit,
    ) -> Result<AckKind, DbErr> {
        let claim = datajump_engine::Claim {
            task_instance_id: work.task_instance_id,
            attempt: work.attempt,
        };
        let Some(kill) = self.stops.hold(claim) else {
            debug!("another copy of this work message is being handled here");
            return Ok(AckKind::Ack);
        };
        let ack = self.claim_and_run(message, work, claim, slot, &kill).await;
        self.stops.release(claim);
        ack
    }

    /// [`Runner::attempt`] once its kill switch is held.
    async fn claim_and_run(
        &self,
        message: &jetstream::Message,
        work: &WorkMsg,
        claim: datajump_engine::Claim,
        slot: OwnedSemaphorePermit,
        kill: &CancellationToken,
    ) -> Result<AckKind, DbErr> {
        let Some(datajump_engine::Claimed {
            instance: row,
            execution: exec_row,
            run_outputs,
        }) = self.committer.claim(claim).await?
        else {
            return self.not_claimed(work).await;
        };
        // What runs is what the database queued: the message only said which
        // row to claim, and one published by anyone else must not change the
        // command (docs/SECURITY.md).
        let (queued, unreadable) = match WorkMsg::for_claimed(&row, work.attempt) {
            Ok(queued) => (queued, None),
            // Only the message's ids and retry policy are used then: the
            // attempt ends invalid without running anything.
            Err(e) => (
                work.clone(),
                Some(format!("the instance's stored spec cannot be read: {e}")),
            ),
        };
        if unreadable.is_none() && queued != *work {
            warn!(
                "the work message differs from the instance in the database; running what the database holds"
            );
            metrics::poison_message(Stream::Work);
        }
        let work = &queued;
        // A sensor's later check continues an attempt started before it was
        // queued: no dispatch to measure.
        if let Some(queued) = row.queued_at.filter(|_| row.pokes == 0) {
            metrics::task_dispatched(queued, exec_row.start_time);
        }
        info!(runner = %self.config.id, "task started");
        let claimed = ClaimedAttempt {
            message,
            work,
            unreadable,
            row: &row,
            exec_row: &exec_row,
            run_outputs: &run_outputs,
            kill,
        };
        self.run_claimed(&claimed, slot).await
    }

    /// Runs a claimed attempt to its end in `slot`, gives the slot back as
    /// soon as the task has stopped, and records the end.
    async fn run_claimed(
        &self,
        claimed: &ClaimedAttempt<'_>,
        slot: OwnedSemaphorePermit,
    ) -> Result<AckKind, DbErr> {
        let (prepared, runnable) = self.prepare(claimed).await;
        let outcome = self.execute(claimed, runnable, &prepared.log).await;
        let end = chrono::Utc::now();
        drop(slot);
        let ended = self.conclude(claimed, prepared, outcome, end).await;
        self.record(claimed, ended).await
    }
}
