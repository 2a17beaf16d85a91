//! How an attempt ends, decided from its outcome alone: pure functions, so
//! the retry and sensor rules are tested without a process or a database.

use chrono::{DateTime, Utc};
use datajump_engine::AttemptEnd;
use datajump_shared::TaskStatus;
use datajump_shared::content::SensorContent;
use datajump_shared::plan::RetryPolicy;
use datajump_shared::problem::Reason;

use crate::executor::ExecOutcome;

#[derive(Debug, PartialEq)]
pub(crate) struct AttemptVerdict {
    /// What becomes of the instance.
    pub(crate) end: AttemptEnd,
    /// The attempt's own status (its execution row): a retried attempt
    /// still says how it ended.
    pub(crate) attempt_status: TaskStatus,
    /// Why, when it did not succeed.
    pub(crate) reason: Option<Reason>,
}

/// A sensor's attempt so far: what the runner needs to decide what a check
/// that found nothing means.
pub(crate) struct SensorWait<'a> {
    pub(crate) content: &'a SensorContent,
    /// When its attempt's first check started.
    pub(crate) first_check: DateTime<Utc>,
    /// The number of the check that just ended (1 for the first).
    pub(crate) check: i32,
}

/// What a sensor's check that found nothing means: another check later,
/// without a slot, or, once its `sensor_timeout` has passed, TIMEOUT
/// (SKIPPED with `soft_fail`).
fn judge_not_ready(missing: &str, sensor: &SensorWait<'_>, now: DateTime<Utc>) -> AttemptVerdict {
    let waited = (now - sensor.first_check).num_seconds();
    let limit = sensor.content.sensor_timeout_secs();
    if waited >= limit {
        let status = if sensor.content.soft_fail {
            TaskStatus::Skipped
        } else {
            TaskStatus::Timeout
        };
        return AttemptVerdict {
            end: AttemptEnd::Terminal(status),
            attempt_status: status,
            reason: Some(Reason::SensorTimedOut {
                waited_secs: waited,
                limit_secs: limit,
                checks: sensor.check,
                missing: missing.to_owned(),
            }),
        };
    }
    let check_at = now + chrono::Duration::seconds(sensor.content.wait_after_secs(sensor.check));
    AttemptVerdict {
        end: AttemptEnd::Reschedule { check_at },
        attempt_status: TaskStatus::UpForReschedule,
        reason: Some(Reason::SensorWaiting {
            check: sensor.check,
            missing: missing.to_owned(),
            next_check: check_at.format("%H:%M:%S UTC").to_string(),
        }),
    }
}

/// Decides how an attempt ends: terminal, or a retry when the policy allows.
/// A failure retries if its exit code is listed (or none are); a timeout
/// only when the policy says `on_timeout`; both draw on the same budget. A
/// sensor's check that found nothing is [`judge_not_ready`]'s.
pub(crate) fn judge(
    outcome: &ExecOutcome,
    retry: &RetryPolicy,
    retries_used: i32,
    now: DateTime<Utc>,
    sensor: Option<&SensorWait<'_>>,
) -> AttemptVerdict {
    let (attempt_status, reason, retryable) = match outcome {
        ExecOutcome::NotReady(missing) => match sensor {
            Some(sensor) => return judge_not_ready(missing, sensor, now),
            None => (
                TaskStatus::Failed,
                Some(Reason::Said(missing.clone())),
                false,
            ),
        },
        ExecOutcome::Success => (TaskStatus::Success, None, false),
        ExecOutcome::TimedOut => (
            TaskStatus::Timeout,
            Some(Reason::TimedOut),
            retry.on_timeout,
        ),
        ExecOutcome::Cancelled => (TaskStatus::Killed, Some(Reason::Killed), false),
        // Abandoned (requeued) before it is judged; judged alone, a
        // failure the task did not cause, retried as such.
        ExecOutcome::Fenced => (TaskStatus::Failed, Some(Reason::LeaseLapsed), true),
        ExecOutcome::Invalid(message) => (
            TaskStatus::Failed,
            Some(Reason::Said(message.clone())),
            false,
        ),
        ExecOutcome::Failed { exit_code, reason } => {
            let code_retries = retry.on_exit_codes.is_empty()
                || exit_code.is_some_and(|c| retry.on_exit_codes.contains(&c));
            (TaskStatus::Failed, Some(reason.clone()), code_retries)
        }
    };
    let end = if retryable && retries_used < retry.max {
        let delay = retry.random_delay_secs(retries_used + 1);
        AttemptEnd::Retry {
            retry_at: now + chrono::Duration::seconds(delay),
        }
    } else {
        AttemptEnd::Terminal(attempt_status)
    };
    AttemptVerdict {
        end,
        attempt_status,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datajump_shared::kinds::RetryStrategy;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max: 3,
            interval_secs: 10,
            strategy: RetryStrategy::Fixed,
            on_exit_codes: vec![],
            on_timeout: false,
            max_interval_secs: 3600,
            jitter_pct: 0,
        }
    }

    fn retries(verdict: &AttemptVerdict) -> bool {
        matches!(verdict.end, AttemptEnd::Retry { .. })
    }

    #[test]
    fn retries_only_listed_exit_codes() {
        let mut retry = policy();
        retry.on_exit_codes = vec![75];
        let now = Utc::now();
        let fail = |code| ExecOutcome::Failed {
            exit_code: Some(code),
            reason: Reason::ExitCode { code },
        };
        let verdict = judge(&fail(75), &retry, 0, now, None);
        assert!(retries(&verdict));
        assert_eq!(verdict.attempt_status, TaskStatus::Failed);
        assert_eq!(
            verdict.end,
            AttemptEnd::Retry {
                retry_at: now + chrono::Duration::seconds(10)
            }
        );
        assert_eq!(
            judge(&fail(1), &retry, 0, now, None).end,
            AttemptEnd::Terminal(TaskStatus::Failed)
        );
        assert_eq!(
            judge(&fail(75), &retry, 3, now, None).end,
            AttemptEnd::Terminal(TaskStatus::Failed)
        );
    }

    #[test]
    fn timeouts_retry_only_when_asked() {
        let now = Utc::now();
        let mut retry = policy();
        // The exit-code filter is about failures, not timeouts.
        retry.on_exit_codes = vec![75];
        let verdict = judge(&ExecOutcome::TimedOut, &retry, 0, now, None);
        assert_eq!(verdict.end, AttemptEnd::Terminal(TaskStatus::Timeout));
        retry.on_timeout = true;
        let verdict = judge(&ExecOutcome::TimedOut, &retry, 0, now, None);
        assert!(retries(&verdict), "{verdict:?}");
        assert_eq!(verdict.attempt_status, TaskStatus::Timeout);
        assert_eq!(
            judge(&ExecOutcome::TimedOut, &retry, 3, now, None).end,
            AttemptEnd::Terminal(TaskStatus::Timeout),
            "the same budget as failures"
        );
        assert!(!retries(&judge(
            &ExecOutcome::Cancelled,
            &retry,
            0,
            now,
            None
        )));
    }

    #[test]
    fn a_sensor_waits_without_a_slot_then_times_out_or_is_skipped() {
        let now = Utc::now();
        let mut content: SensorContent = serde_json::from_value(serde_json::json!({
            "dataset": "ods.orders", "poke_interval": 10, "sensor_timeout": 60,
            "exponential_backoff": true,
        }))
        .expect("content");
        let not_ready = ExecOutcome::NotReady("ods.orders has not been written".into());
        let waiting = |first: i64, check: i32, content: &SensorContent| {
            let sensor = SensorWait {
                content,
                first_check: now - chrono::Duration::seconds(first),
                check,
            };
            judge(&not_ready, &policy(), 0, now, Some(&sensor))
        };
        let third = waiting(30, 3, &content);
        assert_eq!(
            third.end,
            AttemptEnd::Reschedule {
                check_at: now + chrono::Duration::seconds(40)
            },
            "10 s doubled twice"
        );
        assert_eq!(third.attempt_status, TaskStatus::UpForReschedule);
        assert_eq!(
            waiting(60, 5, &content).end,
            AttemptEnd::Terminal(TaskStatus::Timeout)
        );
        content.soft_fail = true;
        assert_eq!(
            waiting(61, 5, &content).end,
            AttemptEnd::Terminal(TaskStatus::Skipped)
        );
    }
}
