//! Running a prepared attempt: the executor, with AckProgress, a status
//! recheck and a log-tail snapshot every [`PROGRESS_EVERY`] while it runs.

use async_nats::jetstream::AckKind;
use datajump_shared::entities::execution;
use sea_orm::{ActiveModelTrait, ActiveValue::Set};

use super::ClaimedAttempt;
use super::prepare::Runnable;
use crate::executor::{self, ExecOutcome, LogSink};
use crate::stops::still_ours;
use crate::{PROGRESS_EVERY, Runner};

impl Runner {
    /// Runs `runnable` to its end; an attempt that cannot run ends invalid.
    pub(super) async fn execute(
        &self,
        claimed: &ClaimedAttempt<'_>,
        runnable: Runnable,
        log: &LogSink,
    ) -> ExecOutcome {
        let ctx = match runnable {
            Err(why) => return ExecOutcome::Invalid(why),
            Ok(ctx) => ctx,
        };
        let ClaimedAttempt {
            message,
            row,
            exec_row,
            kill,
            ..
        } = *claimed;
        let config = &self.config;
        let run = executor::execute(&ctx, log);
        tokio::pin!(run);
        loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                () = tokio::time::sleep(PROGRESS_EVERY) => {
                    let _ = message.ack_with(AckKind::Progress).await;
                    // A kill message can be lost; the database cannot.
                    if let Ok(false) = still_ours(&config.db, row.id, &config.id).await {
                        kill.cancel();
                    }
                    // So `datajump logs --follow` can start from what is written so far.
                    let _ = execution::ActiveModel {
                        id: Set(exec_row.id),
                        log_tail: Set(Some(log.tail())),
                        ..Default::default()
                    }
                    .update(&config.db)
                    .await;
                }
            }
        }
    }
}
