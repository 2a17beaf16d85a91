//! After an attempt has stopped: its outputs collected, its log closed and
//! stored, and its end decided ([`crate::verdict`]) as the engine's
//! [`datajump_engine::End`].

use chrono::{DateTime, Utc};
use datajump_shared::TaskStatus;
use datajump_shared::content::TaskContent;
use datajump_shared::problem::Reason;

use super::ClaimedAttempt;
use super::prepare::Prepared;
use crate::Runner;
use crate::executor::{ExecOutcome, TaskUser};
use crate::log::store_full_log;
use crate::verdict::{SensorWait, judge};

impl Runner {
    /// The end of an attempt that stopped at `end` with `outcome`.
    pub(super) async fn conclude(
        &self,
        claimed: &ClaimedAttempt<'_>,
        prepared: Prepared,
        outcome: ExecOutcome,
        end: DateTime<Utc>,
    ) -> datajump_engine::End {
        let ClaimedAttempt {
            work,
            row,
            exec_row,
            ..
        } = *claimed;
        let Prepared {
            log,
            output_file,
            written,
            large_output,
        } = prepared;
        let task = &work.spec.task;
        let uid = self.config.task_process.user().map(TaskUser::uid);
        output_file.collect(&log, uid).await;
        let large_output = match large_output {
            Some(folder) => folder.collect(&log, uid).await,
            None => None,
        };
        let duration_ms = (end - exec_row.start_time).num_milliseconds();
        if let ExecOutcome::Invalid(why) = &outcome {
            log.line(&format!("[datajump] {why}"));
        }
        log.footer(outcome.exit_code(), duration_ms);
        let finished_log = log.finish();
        let log_path = store_full_log(&self.logs, exec_row.id, finished_log.full).await;
        let drained = outcome == ExecOutcome::Cancelled && self.stops.drain.is_cancelled();
        let abandoned = drained || outcome == ExecOutcome::Fenced;

        let sensor_content = match TaskContent::parse(task.task_type, &task.content) {
            Ok(TaskContent::Sensor(content)) => Some(content),
            _ => None,
        };
        let sensor = sensor_content.as_ref().map(|content| SensorWait {
            content,
            first_check: exec_row.start_time,
            check: row.pokes + 1,
        });
        let verdict = judge(
            &outcome,
            &task.retry,
            row.retries_used,
            end,
            sensor.as_ref(),
        );
        let (status, reason) = if abandoned {
            let why = if drained {
                Reason::RequeuedAtShutdown
            } else {
                Reason::RequeuedWithoutHeartbeat
            };
            (TaskStatus::Failed, Some(why))
        } else {
            (verdict.attempt_status, verdict.reason)
        };
        datajump_engine::End {
            task_instance_id: row.instance_id(),
            // The execution's: a sensor's later check continues the attempt its
            // first check started.
            attempt: exec_row.attempt,
            execution_id: exec_row.id,
            abandoned,
            instance_end: verdict.end,
            status,
            reason,
            end,
            duration_ms,
            exit_code: outcome.exit_code(),
            log_tail: finished_log.tail,
            log_path,
            outputs: (!finished_log.outputs.is_empty()).then_some(finished_log.outputs),
            large_output,
            written,
        }
    }
}
