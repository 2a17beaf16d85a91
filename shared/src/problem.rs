//! Words for people with a stable code beside them: a problem the API
//! answers or a [`Reason`] it stores carries its English text for scripts
//! and logs, and a [`Problem`] — a code such as `cron.out_of_range` and the
//! values the words name — from which a UI says it in its user's language
//! (docs/ARCHITECTURE.md, "Two languages"). The API itself does no
//! language negotiation.

use std::collections::BTreeMap;

use datajump_cron::CronError;
use serde::{Deserialize, Serialize};

/// What went wrong, as a code and the values its words name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Problem {
    /// Stable across versions: `cron.out_of_range`, `timezone.unknown`, …
    pub code: String,
    /// The values the words name (`{ "field": "minute", "value": "60",
    /// "min": "0", "max": "59" }`), as text.
    pub params: BTreeMap<String, String>,
}

impl Problem {
    /// `code` with `params`.
    pub fn new<'a>(code: &str, params: impl IntoIterator<Item = (&'a str, String)>) -> Problem {
        Problem {
            code: code.to_owned(),
            params: params
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        }
    }
}

impl From<&CronError> for Problem {
    fn from(error: &CronError) -> Problem {
        Problem::new(error.code(), error.params())
    }
}

/// Why a task instance or an attempt ended as it did, or waits: the English
/// words stored in `reason` (`error_msg` on an attempt) and the [`Problem`]
/// stored beside them. What only a driver can say (a database's error, an
/// HTTP answer) is [`Reason::Said`]: English, with no code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A disabled task skipped.
    Disabled,
    /// Skipped by control flow: its strategy does not run it after how its
    /// STRONG parents ended (docs/DAG_FORMAT.md, "Strategies").
    FlowSkipped {
        /// Its strategy.
        strategy: crate::kinds::Strategy,
    },
    /// A SWITCH it is a branch of chose another branch (docs/DAG_FORMAT.md,
    /// "SWITCH").
    BranchNotTaken {
        /// The SWITCH.
        switch: String,
    },
    /// A SWITCH it is a branch of is disabled: no branch runs.
    SwitchDisabled {
        /// The SWITCH.
        switch: String,
    },
    /// A SWITCH's condition could not say true or false.
    ConditionFailed {
        /// The case, 0-based as the DAG file's `cases[n]`.
        case: usize,
        /// Why.
        error: String,
    },
    /// A parent it needed did not succeed.
    UpstreamFailed,
    /// No runner took it within its queue timeout.
    QueueTimeout {
        /// How long it waited QUEUED, in seconds.
        waited_secs: i64,
        /// Its queue.
        queue: String,
        /// Its queue timeout, in seconds.
        timeout_secs: i64,
    },
    /// A cross-run dependency was not met within its wait timeout.
    WaitTimeout {
        /// What it still waited for.
        awaited: Vec<Awaited>,
    },
    /// Its run was killed.
    RunKilled,
    /// Its run was RUNNING past its timeout.
    RunTimedOut {
        /// The run's timeout, in seconds.
        timeout_secs: i64,
    },
    /// A user marked it.
    Marked {
        /// The status it was marked (`SUCCESS`, `FAILED`, …).
        status: String,
    },
    /// Its stored spec does not read.
    Quarantined {
        /// The instance.
        task_instance_id: i64,
        /// Why it does not read.
        error: String,
    },
    /// The attempt ran past its timeout.
    TimedOut,
    /// The attempt was killed.
    Killed,
    /// The runner's lease lapsed while the attempt ran.
    LeaseLapsed,
    /// The attempt's process exited with `code`.
    ExitCode {
        /// Its exit code (126 and 127 are the shell's own).
        code: i32,
    },
    /// The attempt's process was killed by a signal.
    Signalled,
    /// A sensor's check found its condition does not hold yet.
    SensorWaiting {
        /// The check (1 for the first).
        check: i32,
        /// What is missing.
        missing: String,
        /// When it checks again, `HH:MM:SS UTC`.
        next_check: String,
    },
    /// A sensor waited past its `sensor_timeout`.
    SensorTimedOut {
        /// How long it waited, in seconds.
        waited_secs: i64,
        /// Its `sensor_timeout`, in seconds.
        limit_secs: i64,
        /// The checks it made.
        checks: i32,
        /// What was still missing.
        missing: String,
    },
    /// A user killed it.
    KilledByUser,
    /// Its runner died while the attempt ran.
    RunnerLost,
    /// Its runner died under it `times` times: it is not run again.
    RunnerLostTooOften {
        /// How many times.
        times: u64,
    },
    /// The runner shut down before the attempt ended: it is queued again.
    RequeuedAtShutdown,
    /// The runner renewed no heartbeat in time and stopped the attempt: it
    /// is queued again.
    RequeuedWithoutHeartbeat,
    /// A mapped task's list was empty: no item to run (docs/DAG_FORMAT.md,
    /// "Map").
    MapEmpty {
        /// Where the list came from, as the file writes it.
        over: String,
    },
    /// A mapped task's list could not be read or broke a rule.
    MapList {
        /// Where the list came from, as the file writes it.
        over: String,
        /// What is wrong with it.
        error: String,
    },
    /// Items of a mapped task failed.
    MapItemsFailed {
        /// Items that ended F.
        failed: i32,
        /// Items in all.
        items: i32,
    },
    /// English only: what a driver, a database or a server said.
    Said(String),
}

/// The words of [`Reason::RunnerLost`], by which the attempts that lost
/// their runner are counted.
pub const RUNNER_LOST: &str = "runner lost";

/// A task instance a cross-run dependency still waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaited {
    /// The awaited task, as `dag/task`.
    pub task: String,
    /// The business date of the awaited run.
    pub biz_date: chrono::NaiveDate,
    /// What it waits for in English (`orders/publish for 2024-01-14`, or
    /// `… of the previous run (2024-01-13)`), as stored with the wait.
    pub words: String,
}

impl Reason {
    /// The English words, as stored in `reason` and printed by the CLI.
    pub fn text(&self) -> String {
        use crate::duration::describe;
        match self {
            Reason::Disabled => "task is disabled".to_owned(),
            Reason::FlowSkipped { strategy } => format!(
                "skipped by its strategy {} ({}; S = succeeded, B = skipped by control flow, \
                 F = failed)",
                strategy.as_str(),
                crate::strategy::skipped_when(*strategy)
            ),
            Reason::BranchNotTaken { switch } => {
                format!("skipped: SWITCH '{switch}' chose another branch")
            }
            Reason::SwitchDisabled { switch } => {
                format!("skipped: SWITCH '{switch}' is disabled, so none of its branches runs")
            }
            Reason::ConditionFailed { case, error } => {
                format!("cases[{case}].when could not be evaluated: {error}")
            }
            Reason::UpstreamFailed => "an upstream task did not succeed".to_owned(),
            Reason::QueueTimeout {
                waited_secs,
                queue,
                timeout_secs,
            } => format!(
                "queue timeout: waited {} QUEUED on queue '{queue}' without a runner taking it \
                 (queue_timeout {}); check that a runner serves the queue (datajump runner \
                 --queues {queue}) and has free slots",
                describe(*waited_secs),
                describe(*timeout_secs),
            ),
            Reason::WaitTimeout { awaited } => format!(
                "dependency wait timed out: still waiting for {}",
                awaited
                    .iter()
                    .map(|a| a.words.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Reason::RunKilled => "the run was killed".to_owned(),
            Reason::RunTimedOut { timeout_secs } => format!(
                "the run timed out: it was RUNNING longer than its timeout of {} (the \
                 schedule's timeout, else the DAG's run_timeout)",
                describe(*timeout_secs)
            ),
            Reason::Marked { status } => format!("marked {status} by a user"),
            Reason::Quarantined {
                task_instance_id,
                error,
            } => format!(
                "quarantined: the stored spec of task_instance {task_instance_id} does not read \
                 ({error}); it was written by another release or edited by hand, so it was \
                 neither decided nor run"
            ),
            Reason::TimedOut => "timed out".to_owned(),
            Reason::Killed => "killed".to_owned(),
            Reason::LeaseLapsed => "the runner's lease lapsed".to_owned(),
            Reason::ExitCode { code: 127 } => {
                "exit code 127: command not found (check its spelling and the runner's PATH)"
                    .to_owned()
            }
            Reason::ExitCode { code: 126 } => {
                "exit code 126: the command is not executable".to_owned()
            }
            Reason::ExitCode { code } => format!("exit code {code}"),
            Reason::Signalled => "killed by a signal".to_owned(),
            Reason::SensorWaiting {
                check,
                missing,
                next_check,
            } => format!("check {check}: {missing}; next check at {next_check}"),
            Reason::SensorTimedOut {
                waited_secs,
                limit_secs,
                checks,
                missing,
            } => format!(
                "waited {waited_secs}s, past its sensor_timeout of {limit_secs}s, over {checks} \
                 checks: {missing}"
            ),
            Reason::KilledByUser => "killed by a user".to_owned(),
            Reason::RunnerLost => RUNNER_LOST.to_owned(),
            Reason::RunnerLostTooOften { times } => format!("{RUNNER_LOST} {times} times"),
            Reason::RequeuedAtShutdown => {
                "the runner shut down; the task went back to the queue".to_owned()
            }
            Reason::RequeuedWithoutHeartbeat => "the runner renewed no heartbeat in time and \
                stopped the task; it went back to the queue"
                .to_owned(),
            Reason::MapEmpty { over } => format!("skipped: its map list ({over}) is empty"),
            Reason::MapList { over, error } => format!("its map list ({over}) {error}"),
            Reason::MapItemsFailed { failed, items } => {
                format!("{failed} of its {items} map items failed")
            }
            Reason::Said(text) => text.clone(),
        }
    }

    /// The code and values beside the words; `None` for [`Reason::Said`].
    pub fn problem(&self) -> Option<Problem> {
        use crate::duration::describe;
        Some(match self {
            Reason::Disabled => Problem::new("task.disabled", []),
            Reason::FlowSkipped { strategy } => Problem::new(
                "task.flow_skipped",
                [("strategy", strategy.as_str().to_owned())],
            ),
            Reason::BranchNotTaken { switch } => {
                Problem::new("task.branch_not_taken", [("switch", switch.clone())])
            }
            Reason::SwitchDisabled { switch } => {
                Problem::new("task.switch_disabled", [("switch", switch.clone())])
            }
            Reason::ConditionFailed { case, error } => Problem::new(
                "task.condition_failed",
                [("case", case.to_string()), ("error", error.clone())],
            ),
            Reason::UpstreamFailed => Problem::new("task.upstream_failed", []),
            Reason::MapEmpty { over } => Problem::new("task.map_empty", [("over", over.clone())]),
            Reason::MapList { over, error } => Problem::new(
                "task.map_list",
                [("over", over.clone()), ("error", error.clone())],
            ),
            Reason::MapItemsFailed { failed, items } => Problem::new(
                "task.map_items_failed",
                [("failed", failed.to_string()), ("items", items.to_string())],
            ),
            Reason::QueueTimeout {
                waited_secs,
                queue,
                timeout_secs,
            } => Problem::new(
                "task.queue_timeout",
                [
                    ("waited", describe(*waited_secs)),
                    ("queue", queue.clone()),
                    ("timeout", describe(*timeout_secs)),
                ],
            ),
            // In no language's words: the task and its business date.
            Reason::WaitTimeout { awaited } => Problem::new(
                "task.wait_timeout",
                [(
                    "awaited",
                    awaited
                        .iter()
                        .map(|a| format!("{} ({})", a.task, a.biz_date))
                        .collect::<Vec<_>>()
                        .join(", "),
                )],
            ),
            Reason::RunKilled => Problem::new("task.run_killed", []),
            Reason::RunTimedOut { timeout_secs } => {
                Problem::new("task.run_timed_out", [("timeout", describe(*timeout_secs))])
            }
            Reason::Marked { status } => Problem::new("task.marked", [("status", status.clone())]),
            Reason::Quarantined {
                task_instance_id,
                error,
            } => Problem::new(
                "task.quarantined",
                [
                    ("id", task_instance_id.to_string()),
                    ("error", error.clone()),
                ],
            ),
            Reason::TimedOut => Problem::new("attempt.timed_out", []),
            Reason::Killed => Problem::new("attempt.killed", []),
            Reason::LeaseLapsed => Problem::new("attempt.lease_lapsed", []),
            Reason::ExitCode { code: 127 } => Problem::new("attempt.command_not_found", []),
            Reason::ExitCode { code: 126 } => Problem::new("attempt.not_executable", []),
            Reason::ExitCode { code } => {
                Problem::new("attempt.exit_code", [("code", code.to_string())])
            }
            Reason::Signalled => Problem::new("attempt.signalled", []),
            Reason::SensorWaiting {
                check,
                missing,
                next_check,
            } => Problem::new(
                "sensor.waiting",
                [
                    ("check", check.to_string()),
                    ("missing", missing.clone()),
                    ("next", next_check.clone()),
                ],
            ),
            Reason::SensorTimedOut {
                waited_secs,
                limit_secs,
                checks,
                missing,
            } => Problem::new(
                "sensor.timed_out",
                [
                    ("waited", describe(*waited_secs)),
                    ("limit", describe(*limit_secs)),
                    ("checks", checks.to_string()),
                    ("missing", missing.clone()),
                ],
            ),
            Reason::KilledByUser => Problem::new("task.killed_by_user", []),
            Reason::RunnerLost => Problem::new("attempt.runner_lost", []),
            Reason::RunnerLostTooOften { times } => {
                Problem::new("task.runner_lost_too_often", [("times", times.to_string())])
            }
            Reason::RequeuedAtShutdown => Problem::new("attempt.requeued_at_shutdown", []),
            Reason::RequeuedWithoutHeartbeat => {
                Problem::new("attempt.requeued_without_heartbeat", [])
            }
            Reason::Said(_) => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cron_error_names_its_field_and_values() {
        let Err(error) = datajump_cron::CronExpr::parse("0 60 * * * ?") else {
            panic!("minute 60 parsed");
        };
        let problem = Problem::from(&error);
        assert_eq!(problem.code, "cron.out_of_range");
        let params: Vec<(&str, &str)> = problem
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            params,
            [
                ("expr", "0 60 * * * ?"),
                ("field", "minute"),
                ("max", "59"),
                ("min", "0"),
                ("value", "60"),
            ]
        );
        let zone = datajump_cron::parse_time_zone("Mars/Olympus").expect_err("no such zone");
        assert_eq!(Problem::from(&zone).code, "timezone.unknown");
        assert_eq!(Problem::from(&zone).params["name"], "Mars/Olympus");
    }

    #[test]
    fn a_reason_keeps_its_words_and_names_its_values() {
        let queue = Reason::QueueTimeout {
            waited_secs: 150,
            queue: "etl".to_owned(),
            timeout_secs: 120,
        };
        assert!(queue.text().contains("queue 'etl'"), "{}", queue.text());
        let problem = queue.problem().expect("coded");
        assert_eq!(problem.code, "task.queue_timeout");
        assert_eq!(problem.params["queue"], "etl");
        assert_eq!(problem.params["timeout"], "2m");
        assert_eq!(
            Reason::ExitCode { code: 127 }.problem().map(|p| p.code),
            Some("attempt.command_not_found".to_owned())
        );
        assert_eq!(Reason::ExitCode { code: 3 }.text(), "exit code 3");
        assert_eq!(Reason::Said("ORA-00942".to_owned()).problem(), None);
    }
}
