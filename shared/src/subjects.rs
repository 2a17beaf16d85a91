//! Every NATS name DataJump uses: subjects, streams, consumers, buckets and
//! message ids. These names are public interface — operators watch them with
//! `nats stream report` — so they are spelled here once and nowhere else.

use crate::{RunId, TaskInstanceId};

/// A work message's or a fire's priority, 1–10, larger first: each level
/// is its own subject and consumer per queue (and of the fire stream), so a
/// runner with a free slot takes the oldest message of the highest level
/// that has one, no runner holds messages it has no slot for, and a
/// resolver turns the most urgent fires into runs first
/// (docs/ARCHITECTURE.md "Priorities"). On the wire it is its number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(from = "i32", into = "i32")]
pub struct Priority(u8);

impl Default for Priority {
    fn default() -> Priority {
        Priority::DEFAULT
    }
}

impl From<i32> for Priority {
    fn from(priority: i32) -> Priority {
        Priority::of(priority)
    }
}

impl From<Priority> for i32 {
    fn from(priority: Priority) -> i32 {
        i32::from(priority.0)
    }
}

impl Priority {
    /// The highest level.
    pub const HIGHEST: Priority = Priority(10);
    /// A task's default level.
    pub const DEFAULT: Priority = Priority(5);
    /// The lowest level.
    pub const LOWEST: Priority = Priority(1);
    /// Every level, in the order a runner tries them: highest first.
    pub const ALL: [Priority; 10] = [
        Priority(10),
        Priority(9),
        Priority(8),
        Priority(7),
        Priority(6),
        Priority(5),
        Priority(4),
        Priority(3),
        Priority(2),
        Priority(1),
    ];

    /// The level of a task priority (validated 1–10 when its DAG was
    /// applied; out-of-range values clamp).
    pub fn of(priority: i32) -> Priority {
        Priority(u8::try_from(priority.clamp(1, 10)).unwrap_or(5))
    }

    /// The subject token: `p10` … `p1`.
    pub fn token(self) -> String {
        format!("p{}", self.0)
    }

    /// The level as a number.
    pub fn level(self) -> u8 {
        self.0
    }

    /// The level of a subject token, `None` for anything else.
    fn parse_token(token: &str) -> Option<Priority> {
        let level: u8 = token.strip_prefix('p')?.parse().ok()?;
        Self::ALL
            .into_iter()
            .find(|p| p.0 == level && p.token() == token)
    }
}

/// One of DataJump's four streams, for code that names a stream without
/// knowing its installation's prefix (metrics labels, the streams a
/// publish counts under).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Cron, manual and backfill fires.
    Fire,
    /// External events (kept for audit).
    Event,
    /// Task work messages.
    Work,
    /// Task completions.
    Done,
    /// Datasets written (kept, like events, for whoever listens).
    Dataset,
}

impl Stream {
    /// Every stream.
    pub const ALL: [Stream; 5] = [
        Stream::Fire,
        Stream::Event,
        Stream::Work,
        Stream::Done,
        Stream::Dataset,
    ];

    /// Its metrics label, the same whatever the prefix, so dashboards
    /// need not know it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Fire => "fire",
            Stream::Event => "event",
            Stream::Work => "work",
            Stream::Done => "done",
            Stream::Dataset => "dataset",
        }
    }
}

/// Durable consumer of one priority level of the fire stream, shared by
/// every resolver.
pub fn resolver_fire_consumer(priority: Priority) -> String {
    format!("resolver-fire-{}", priority.token())
}

/// Durable consumer of the fires of releases before fire priorities
/// (`dj.fire.<dag_id>`, one token after `fire`): never created, but a
/// resolver drains it where an upgraded installation still has it
/// (docs/ARCHITECTURE.md "Priorities").
pub const LEGACY_RESOLVER_FIRE_CONSUMER: &str = "resolver-fire";
/// Durable consumer of the event stream, shared by every resolver.
pub const RESOLVER_EVENT_CONSUMER: &str = "resolver-event";
/// Durable consumer of the dataset stream, shared by every resolver: it
/// records what producers announce there.
pub const RESOLVER_DATASET_CONSUMER: &str = "resolver-dataset";
/// Durable consumer of the completion stream, shared by every resolver.
pub const RESOLVER_DONE_CONSUMER: &str = "resolver-done";

/// Queue a task lands on when it names none.
pub const DEFAULT_QUEUE: &str = "default";

/// Durable consumer serving one queue's priority level (consumers live
/// inside their stream, so they need no prefix).
pub fn runner_consumer(queue: &str, priority: Priority) -> String {
    format!("runner-{queue}-{}", priority.token())
}

/// Name of an execution's full log in the logs object store.
pub fn log_object(execution_id: i64) -> String {
    format!("execution-{execution_id}")
}

/// The prefix every subject, stream and bucket of one installation starts
/// with (`--nats-prefix`, default `dj`), so that several installations can
/// share one NATS server deliberately: `dj.work.etl.high` in stream
/// `DJ_WORK`, bucket `dj_ticker`; with prefix `team2`, `team2.work.etl.high`
/// in `TEAM2_WORK`, `team2_ticker`. Roles take it from their configuration
/// and carry it in their bus; nothing else spells a NATS name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Namespace {
    prefix: String,
    /// The prefix in upper case, as stream names carry it.
    upper: String,
}

/// A prefix that cannot name subjects, streams and buckets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "NATS prefix {0:?} must be 1 to 32 lower-case letters, digits and '-', starting with a letter (e.g. dj, team2, etl-prod)"
)]
pub struct InvalidPrefix(pub String);

/// The prefix of an installation that names none.
pub const DEFAULT_PREFIX: &str = "dj";

impl Default for Namespace {
    fn default() -> Namespace {
        Namespace {
            prefix: DEFAULT_PREFIX.to_owned(),
            upper: DEFAULT_PREFIX.to_ascii_uppercase(),
        }
    }
}

impl std::str::FromStr for Namespace {
    type Err = InvalidPrefix;
    fn from_str(prefix: &str) -> Result<Namespace, InvalidPrefix> {
        Namespace::new(prefix)
    }
}

impl std::fmt::Display for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.prefix)
    }
}

impl Namespace {
    /// Checks a prefix: one subject token that is also a valid part of a
    /// stream and bucket name.
    pub fn new(prefix: &str) -> Result<Namespace, InvalidPrefix> {
        let valid = (1..=32).contains(&prefix.len())
            && prefix.starts_with(|c: char| c.is_ascii_lowercase())
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid {
            return Err(InvalidPrefix(prefix.to_owned()));
        }
        Ok(Namespace {
            prefix: prefix.to_owned(),
            upper: prefix.to_ascii_uppercase(),
        })
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `DJ_FIRE`, `DJ_EVENT`, `DJ_WORK` or `DJ_DONE`.
    pub fn stream(&self, stream: Stream) -> String {
        let suffix = match stream {
            Stream::Fire => "FIRE",
            Stream::Event => "EVENT",
            Stream::Work => "WORK",
            Stream::Done => "DONE",
            Stream::Dataset => "DATASET",
        };
        format!("{}_{suffix}", self.upper)
    }

    /// KV bucket holding the last fire time of each schedule: `dj_ticker`.
    pub fn ticker_bucket(&self) -> String {
        format!("{}_ticker", self.prefix)
    }

    /// KV bucket of runner heartbeats; its max age is the liveness window:
    /// `dj_runners`.
    pub fn runners_bucket(&self) -> String {
        format!("{}_runners", self.prefix)
    }

    /// KV bucket of resolver heartbeats, with the same liveness window as
    /// [`Self::runners_bucket`]: `dj_resolvers`.
    pub fn resolvers_bucket(&self) -> String {
        format!("{}_resolvers", self.prefix)
    }

    /// Object store of full task logs: `dj_logs`.
    pub fn logs_bucket(&self) -> String {
        format!("{}_logs", self.prefix)
    }

    /// The filter of every subject of `stream`.
    pub fn stream_subjects(&self, stream: Stream) -> String {
        let p = &self.prefix;
        match stream {
            Stream::Fire => format!("{p}.fire.>"),
            Stream::Event => format!("{p}.event.>"),
            Stream::Work => format!("{p}.work.*.*"),
            Stream::Done => format!("{p}.done.*"),
            Stream::Dataset => format!("{p}.dataset.>"),
        }
    }

    /// `dj.fire.p<priority>.<dag_id>`
    pub fn fire(&self, priority: Priority, dag_id: i64) -> String {
        format!("{}.fire.{}.{dag_id}", self.prefix, priority.token())
    }

    /// Filter of the fires of one priority level.
    pub fn fire_level(&self, priority: Priority) -> String {
        format!("{}.fire.{}.*", self.prefix, priority.token())
    }

    /// Filter of the fires releases before fire priorities published
    /// (`dj.fire.<dag_id>`); it shares no subject with any level's.
    pub fn legacy_fire(&self) -> String {
        format!("{}.fire.*", self.prefix)
    }

    /// `dj.event.<project>.<name>`: event `name` of project `project`. The
    /// project is in the subject so that NATS permissions can give a
    /// producer one project's events (`dj.event.7.>`), and an event starts
    /// only DAGs of its project (docs/SECURITY.md, "Projects"). The name
    /// must have passed [`crate::naming::validate_event`], whose first token
    /// is never a number.
    pub fn event(&self, project: i64, name: &str) -> String {
        format!("{}.event.{project}.{name}", self.prefix)
    }

    /// The project and name of an event subject, `None` for any other
    /// subject. The short form `dj.event.<name>`, whose first token is not
    /// a number, is the default project's.
    pub fn parse_event<'s>(&self, subject: &'s str) -> Option<(i64, &'s str)> {
        let tail = subject
            .strip_prefix(self.prefix.as_str())?
            .strip_prefix(".event.")?;
        let (first, rest) = tail.split_once('.').unwrap_or((tail, ""));
        if !first.bytes().all(|b| b.is_ascii_digit()) {
            return Some((crate::dag_file::DEFAULT_PROJECT, tail));
        }
        let project = first.parse().ok()?;
        (!rest.is_empty()).then_some((project, rest))
    }

    /// `dj.dataset.<name>`; the name must have passed
    /// [`crate::datasets::validate_name`].
    pub fn dataset(&self, name: &str) -> String {
        format!("{}.dataset.{name}", self.prefix)
    }

    /// The dataset name of a dataset subject, `None` for any other subject.
    pub fn parse_dataset<'s>(&self, subject: &'s str) -> Option<&'s str> {
        subject
            .strip_prefix(self.prefix.as_str())?
            .strip_prefix(".dataset.")
    }

    /// `dj.work.<queue>.p<priority>`; the queue must have passed [`crate::naming::validate_queue`].
    pub fn work(&self, queue: &str, priority: Priority) -> String {
        format!("{}.work.{queue}.{}", self.prefix, priority.token())
    }

    /// The queue and priority of a work subject, `None` for any other subject.
    pub fn parse_work<'s>(&self, subject: &'s str) -> Option<(&'s str, Priority)> {
        let (queue, token) = subject
            .strip_prefix(self.prefix.as_str())?
            .strip_prefix(".work.")?
            .split_once('.')?;
        Some((queue, Priority::parse_token(token)?))
    }

    /// Filter of every work subject of a queue (a runner's doorbell).
    pub fn work_queue_all(&self, queue: &str) -> String {
        format!("{}.work.{queue}.*", self.prefix)
    }

    /// `dj.done.<dag_run_id>`
    pub fn done(&self, dag_run_id: RunId) -> String {
        format!("{}.done.{dag_run_id}", self.prefix)
    }

    /// Core subject telling runners to kill a task instance.
    pub fn kill(&self, task_instance_id: TaskInstanceId) -> String {
        format!("{}.kill.{task_instance_id}", self.prefix)
    }

    /// Filter of every kill subject.
    pub fn kill_all(&self) -> String {
        format!("{}.kill.*", self.prefix)
    }

    /// Core subject carrying an execution's live log lines.
    pub fn log(&self, execution_id: i64) -> String {
        format!("{}.log.{execution_id}", self.prefix)
    }

    /// Core request subject a runner answers with an execution's log tail
    /// while the attempt runs (the same text as `execution.log_tail`, up to
    /// the moment of the request), so `datajump logs --follow` can start
    /// with what was written before it subscribed.
    pub fn log_tail_request(&self, execution_id: i64) -> String {
        format!("{}.log.{execution_id}.tail", self.prefix)
    }

    /// Core subject announcing that schedules changed, so tickers reload at once.
    pub fn schedules_changed(&self) -> String {
        format!("{}.ctl.schedules", self.prefix)
    }
}

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

    /// `Nats-Msg-Id` of a dataset event.
    pub fn dataset_msg_id(&self, event_id: i64) -> String {
        format!("{}:dataset:{event_id}", self.0)
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
    fn every_priority_is_its_own_level() {
        assert_eq!(Priority::of(10), Priority::HIGHEST);
        assert_eq!(Priority::of(5), Priority::DEFAULT);
        assert_eq!(Priority::of(1), Priority::LOWEST);
        assert_eq!(Priority::of(42), Priority::HIGHEST, "clamped");
        assert_eq!(Priority::of(-3), Priority::LOWEST, "clamped");
        assert!(Priority::ALL.windows(2).all(|pair| pair[0] > pair[1]));
        assert_eq!(Priority::of(9).token(), "p9");
        assert_eq!(Priority::parse_token("p10"), Some(Priority::HIGHEST));
        for bad in ["p0", "p11", "p05", "high", "p", "9"] {
            assert_eq!(Priority::parse_token(bad), None, "{bad}");
        }
    }

    #[test]
    fn names() -> Result<(), InvalidPrefix> {
        let dj = Namespace::default();
        assert_eq!(dj.work("etl", Priority::HIGHEST), "dj.work.etl.p10");
        assert_eq!(
            dj.parse_work(&dj.work("ml-gpu", Priority::LOWEST)),
            Some(("ml-gpu", Priority::LOWEST))
        );
        assert_eq!(dj.parse_work("dj.work.etl.urgent"), None);
        assert_eq!(
            dj.parse_work("dj.work.etl.high"),
            None,
            "the old bands are gone"
        );
        assert_eq!(dj.parse_work("dj.done.7"), None);
        assert_eq!(dj.stream(Stream::Work), "DJ_WORK");
        assert_eq!(dj.ticker_bucket(), "dj_ticker");
        assert_eq!(runner_consumer("etl", Priority::LOWEST), "runner-etl-p1");
        let other = Namespace::new("team-2")?;
        assert_eq!(other.stream(Stream::Fire), "TEAM-2_FIRE");
        assert_eq!(other.stream_subjects(Stream::Event), "team-2.event.>");
        assert_eq!(other.parse_work(&dj.work("etl", Priority::LOWEST)), None);
        assert_eq!(dj.parse_event(&other.event(1, "orders")), None);
        assert_eq!(
            other.event(7, "orders.ready"),
            "team-2.event.7.orders.ready"
        );
        assert_eq!(
            other.parse_event(&other.event(7, "orders.ready")),
            Some((7, "orders.ready"))
        );
        assert_eq!(
            dj.parse_event("dj.event.orders.ready"),
            Some((crate::dag_file::DEFAULT_PROJECT, "orders.ready")),
            "the short form is the default project's"
        );
        assert_eq!(
            dj.parse_event("dj.event.7"),
            None,
            "a project without a name"
        );
        assert_eq!(dj.parse_event("dj.event.99999999999999999999.x"), None);
        Ok(())
    }

    #[test]
    fn prefixes_are_checked() {
        for bad in [
            "",
            "DJ",
            "1dj",
            "d.j",
            "d*",
            "d>",
            "d j",
            "d_j",
            &"a".repeat(33),
        ] {
            assert!(Namespace::new(bad).is_err(), "{bad}");
        }
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
