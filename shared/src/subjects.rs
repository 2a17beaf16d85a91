//! Every NATS name DataJump uses: subjects, streams, consumers, buckets and
//! message ids. These names are public interface — operators watch them with
//! `nats stream report` — so they are spelled here once and nowhere else.

use crate::{RunId, TaskInstanceId};

/// Priority band of a work message; a runner always drains higher bands first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Band {
    /// Priority 8–10.
    High,
    /// Priority 4–7.
    Normal,
    /// Priority 1–3.
    Low,
}

impl Band {
    /// Bands in the order a runner tries them.
    pub const ALL: [Band; 3] = [Band::High, Band::Normal, Band::Low];

    /// The band of a task priority (1–10; out-of-range values clamp).
    pub fn of_priority(priority: i32) -> Band {
        match priority {
            i32::MIN..=3 => Band::Low,
            4..=7 => Band::Normal,
            _ => Band::High,
        }
    }

    /// The subject token.
    pub fn as_str(self) -> &'static str {
        match self {
            Band::High => "high",
            Band::Normal => "normal",
            Band::Low => "low",
        }
    }
}

/// Stream of cron, manual and backfill fires.
pub const FIRE_STREAM: &str = "DJ_FIRE";
/// Stream of external events (kept for audit).
pub const EVENT_STREAM: &str = "DJ_EVENT";
/// Stream of task work messages.
pub const WORK_STREAM: &str = "DJ_WORK";
/// Stream of task completions.
pub const DONE_STREAM: &str = "DJ_DONE";

/// Durable consumer of `DJ_FIRE`, shared by every resolver.
pub const RESOLVER_FIRE_CONSUMER: &str = "resolver-fire";
/// Durable consumer of `DJ_EVENT`, shared by every resolver.
pub const RESOLVER_EVENT_CONSUMER: &str = "resolver-event";
/// Durable consumer of `DJ_DONE`, shared by every resolver.
pub const RESOLVER_DONE_CONSUMER: &str = "resolver-done";

/// KV bucket holding the last fire time of each schedule.
pub const TICKER_BUCKET: &str = "dj_ticker";
/// KV bucket of runner heartbeats; its max age is the liveness window.
pub const RUNNERS_BUCKET: &str = "dj_runners";
/// Object store of full task logs.
pub const LOGS_BUCKET: &str = "dj_logs";

/// Queue a task lands on when it names none.
pub const DEFAULT_QUEUE: &str = "default";

/// `dj.fire.<dag_id>`
pub fn fire(dag_id: i64) -> String {
    format!("dj.fire.{dag_id}")
}

/// Filter of every fire subject.
pub const FIRE_ALL: &str = "dj.fire.*";

/// `dj.event.<name>`; the name must have passed [`crate::naming::validate_event`].
pub fn event(name: &str) -> String {
    format!("dj.event.{name}")
}

/// Filter of every event subject.
pub const EVENT_ALL: &str = "dj.event.>";

/// The event name of an event subject, `None` for any other subject.
pub fn parse_event(subject: &str) -> Option<&str> {
    subject.strip_prefix("dj.event.")
}

/// `dj.work.<queue>.<band>`; the queue must have passed [`crate::naming::validate_queue`].
pub fn work(queue: &str, band: Band) -> String {
    format!("dj.work.{queue}.{}", band.as_str())
}

/// The queue and band of a work subject, `None` for any other subject.
pub fn parse_work(subject: &str) -> Option<(&str, Band)> {
    let (queue, band) = subject.strip_prefix("dj.work.")?.split_once('.')?;
    let band = Band::ALL.into_iter().find(|b| b.as_str() == band)?;
    Some((queue, band))
}

/// Filter of every work subject of a queue (a runner's doorbell).
pub fn work_queue_all(queue: &str) -> String {
    format!("dj.work.{queue}.*")
}

/// Filter of every work subject.
pub const WORK_ALL: &str = "dj.work.*.*";

/// Durable consumer serving one queue's band.
pub fn runner_consumer(queue: &str, band: Band) -> String {
    format!("runner-{queue}-{}", band.as_str())
}

/// `dj.done.<dag_run_id>`
pub fn done(dag_run_id: RunId) -> String {
    format!("dj.done.{dag_run_id}")
}

/// Filter of every completion subject.
pub const DONE_ALL: &str = "dj.done.*";

/// Core subject telling runners to kill a task instance.
pub fn kill(task_instance_id: TaskInstanceId) -> String {
    format!("dj.kill.{task_instance_id}")
}

/// Filter of every kill subject.
pub const KILL_ALL: &str = "dj.kill.*";

/// Core subject carrying an execution's live log lines.
pub fn log(execution_id: i64) -> String {
    format!("dj.log.{execution_id}")
}

/// Core request subject a runner answers with an execution's log tail while
/// the attempt runs (the same text as `execution.log_tail`, up to the moment
/// of the request), so `datajump logs --follow` can start with what was
/// written before it subscribed.
pub fn log_tail_request(execution_id: i64) -> String {
    format!("dj.log.{execution_id}.tail")
}

/// Name of an execution's full log in the `dj_logs` object store.
pub fn log_object(execution_id: i64) -> String {
    format!("execution-{execution_id}")
}

/// Core subject announcing that schedules changed, so tickers reload at once.
pub const SCHEDULES_CHANGED: &str = "dj.ctl.schedules";

/// The identity of one installation — one database — that every message
/// id and `dj_ticker` key carries (docs/ARCHITECTURE.md "Message ids").
///
/// Ids must repeat where deduplication needs them (two tickers publish the
/// same fire), yet a database started afresh restarts its ids at 1: without
/// the identity its first work message would be dropped as a duplicate of
/// an earlier database's for the whole of the duplicate window. The
/// migration that creates the database writes the identity; roles read it
/// once at start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Installation(String);

/// An installation identity that is not 8–32 lower-case letters and digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("installation identity {0:?} is not 8 to 32 lower-case letters and digits")]
pub struct InvalidInstallation(pub String);

impl Installation {
    /// Checks an identity read from the `installation` table.
    pub fn parse(identity: &str) -> Result<Installation, InvalidInstallation> {
        let valid = (8..=32).contains(&identity.len())
            && identity
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
        if valid {
            Ok(Installation(identity.to_owned()))
        } else {
            Err(InvalidInstallation(identity.to_owned()))
        }
    }

    /// The identity.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `Nats-Msg-Id` of a cron fire: two tickers publish the same id.
    pub fn fire_msg_id(&self, schedule_id: i64, fire_unix: i64) -> String {
        format!("{}:fire:{schedule_id}:{fire_unix}", self.0)
    }

    /// `Nats-Msg-Id` of any other fire (a trigger, a backfill, an event),
    /// from its run's `dedup_key`.
    pub fn dedup_msg_id(&self, dedup_key: &str) -> String {
        format!("{}:{dedup_key}", self.0)
    }

    /// `Nats-Msg-Id` of a work message.
    pub fn work_msg_id(&self, task_instance_id: TaskInstanceId, attempt: i32) -> String {
        format!("{}:work:{task_instance_id}:{attempt}", self.0)
    }

    /// `Nats-Msg-Id` of a completion.
    pub fn done_msg_id(&self, task_instance_id: TaskInstanceId, attempt: i32) -> String {
        format!("{}:done:{task_instance_id}:{attempt}", self.0)
    }

    /// Key of a schedule's last fire in the `dj_ticker` bucket.
    pub fn ticker_key(&self, schedule_id: i64) -> String {
        format!("sched.{}.{schedule_id}", self.0)
    }

    /// The schedule id of one of this installation's `dj_ticker` keys
    /// ([`Installation::ticker_key`]'s inverse); `None` for other keys,
    /// other installations' included.
    pub fn ticker_key_schedule(&self, key: &str) -> Option<i64> {
        key.strip_prefix("sched.")?
            .strip_prefix(self.0.as_str())?
            .strip_prefix('.')?
            .parse()
            .ok()
    }
}

impl std::fmt::Display for Installation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A `Nats-Msg-Id` that no earlier message had, for republishing one that
/// JetStream dropped as a duplicate or that may have been lost: `msg_id`
/// with a random suffix, so no one can publish it first.
pub fn fresh_msg_id(msg_id: &str) -> String {
    format!("{msg_id}:{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_follow_design_table() {
        assert_eq!(Band::of_priority(10), Band::High);
        assert_eq!(Band::of_priority(8), Band::High);
        assert_eq!(Band::of_priority(7), Band::Normal);
        assert_eq!(Band::of_priority(4), Band::Normal);
        assert_eq!(Band::of_priority(3), Band::Low);
        assert_eq!(Band::of_priority(1), Band::Low);
    }

    #[test]
    fn names() {
        assert_eq!(work("etl", Band::High), "dj.work.etl.high");
        assert_eq!(
            parse_work(&work("ml-gpu", Band::Low)),
            Some(("ml-gpu", Band::Low))
        );
        assert_eq!(parse_work("dj.work.etl.urgent"), None);
        assert_eq!(parse_work("dj.done.7"), None);
        assert_eq!(runner_consumer("etl", Band::Low), "runner-etl-low");
    }

    #[test]
    fn ids_carry_the_installation() -> Result<(), InvalidInstallation> {
        let here = Installation::parse("0a1b2c3d4e5f6a7b")?;
        let there = Installation::parse("ffffffffffffffff")?;
        assert_eq!(
            here.fire_msg_id(7, 1700000000),
            "0a1b2c3d4e5f6a7b:fire:7:1700000000"
        );
        assert_ne!(
            here.work_msg_id(TaskInstanceId(1), 0),
            there.work_msg_id(TaskInstanceId(1), 0)
        );
        assert_eq!(here.ticker_key_schedule(&here.ticker_key(42)), Some(42));
        assert_eq!(here.ticker_key_schedule(&there.ticker_key(42)), None);
        assert_eq!(here.ticker_key_schedule("sched.42"), None);
        assert_eq!(here.ticker_key_schedule("sched.0a1b2c3d4e5f6a7b.x"), None);
        let fresh = fresh_msg_id(&here.work_msg_id(TaskInstanceId(1), 0));
        assert!(fresh.starts_with("0a1b2c3d4e5f6a7b:work:1:0:"));
        assert_ne!(fresh, fresh_msg_id(&here.work_msg_id(TaskInstanceId(1), 0)));
        Ok(())
    }

    #[test]
    fn identities_are_checked() {
        assert!(Installation::parse("0a1b2c3d").is_ok());
        for bad in ["", "short", "UPPERCASE1", "has.dot.in.it", &"a".repeat(33)] {
            assert!(Installation::parse(bad).is_err(), "{bad}");
        }
    }
}
