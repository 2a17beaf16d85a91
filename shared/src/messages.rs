//! The messages on DataJump's subjects: JSON with a version field.
//!
//! Decoding is strict about the version and the shape, so a malformed message
//! is recognised as poison (terminated, never redelivered forever) rather
//! than half-understood.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use thiserror::Error;

use crate::datasets::EventSource;
use crate::entities::{UnreadableJson, dag_run, schedule, task_instance};
use crate::params::Params;
use crate::plan::InstanceSpec;
use crate::subjects::Priority;
use crate::{RunId, TaskInstanceId, TaskStatus, TriggerType};

/// The message format version this build writes and reads.
pub const VERSION: u32 = 1;

/// A message that cannot be understood.
#[derive(Debug, Error)]
pub enum MessageError {
    /// Not JSON of the expected shape.
    #[error("malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
    /// Written by an incompatible version.
    #[error("unsupported message version {0} (this build reads {VERSION})")]
    Version(u32),
}

/// Something published on a DataJump subject.
pub trait Message: Serialize + DeserializeOwned {
    /// The message's version field.
    fn version(&self) -> u32;

    /// Serialises to JSON.
    fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses JSON, rejecting other versions.
    fn decode(bytes: &[u8]) -> Result<Self, MessageError> {
        let message: Self = serde_json::from_slice(bytes)?;
        match message.version() {
            VERSION => Ok(message),
            other => Err(MessageError::Version(other)),
        }
    }
}

/// Run key of a scheduled (or backfilled) fire: backfill reuses it, so a
/// business date that already ran on schedule is not run again.
pub fn scheduled_run_key(schedule_id: i64, fire_unix: i64) -> String {
    format!("sched:{schedule_id}:{fire_unix}")
}

/// The largest event payload: an event carries run parameters, not data.
pub const MAX_EVENT_PAYLOAD: usize = 64 * 1024;

/// Why an event's payload is refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum EventPayloadError {
    /// Over [`MAX_EVENT_PAYLOAD`].
    #[error("an event payload of {0} bytes is over the limit of {MAX_EVENT_PAYLOAD} bytes")]
    TooLarge(usize),
    /// Not a JSON object (of parameters).
    #[error(
        "an event payload must be a JSON object of parameters, such as {{\"table\": \"orders\"}}"
    )]
    NotAnObject,
    /// A business date that is not a date.
    #[error(
        "the event's {EVENT_BIZ_DATE} must be a date written YYYY-MM-DD from 0001-01-01 to 9999-12-31, such as \"2024-01-15\"; got {0}"
    )]
    BizDate(String),
    /// A field whose variable would be a task output's
    /// ([`crate::outputs::looks_like_output`]).
    #[error("an event's fields are run parameters, and {}", crate::outputs::output_like_problem(.0))]
    OutputLike(String),
}

/// The payload key that sets the business date of the runs an event
/// starts (the data model's `biz_date`: the date the data belongs to).
pub const EVENT_BIZ_DATE: &str = "biz_date";

/// What an event's payload asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventPayload {
    /// Run parameters: the payload's other top-level fields.
    pub params: Params,
    /// The business date of the runs, when the payload names one under
    /// [`EVENT_BIZ_DATE`]; otherwise each run's schedule computes it.
    pub biz_date: Option<NaiveDate>,
}

impl EventPayload {
    /// Reads an event's payload: empty, or a JSON object of at most
    /// [`MAX_EVENT_PAYLOAD`] bytes whose `biz_date`, if present, is a date.
    /// The payload comes from outside, so it is checked here once for the
    /// API and the resolver alike, and its values are untrusted params
    /// (`crate::params`).
    pub fn parse(payload: &[u8]) -> Result<EventPayload, EventPayloadError> {
        if payload.len() > MAX_EVENT_PAYLOAD {
            return Err(EventPayloadError::TooLarge(payload.len()));
        }
        if payload.iter().all(u8::is_ascii_whitespace) {
            return Ok(EventPayload::default());
        }
        let Ok(serde_json::Value::Object(mut fields)) =
            serde_json::from_slice::<serde_json::Value>(payload)
        else {
            return Err(EventPayloadError::NotAnObject);
        };
        let biz_date = match fields.remove(EVENT_BIZ_DATE) {
            None => None,
            Some(serde_json::Value::String(text)) => Some(
                NaiveDate::parse_from_str(&text, "%Y-%m-%d")
                    .ok()
                    .filter(|_| text.len() == 10)
                    .and_then(|date| crate::biz_date::check(date).ok())
                    .ok_or(EventPayloadError::BizDate(format!("{text:?}")))?,
            ),
            Some(other) => return Err(EventPayloadError::BizDate(other.to_string())),
        };
        if let Some(name) = fields
            .keys()
            .find(|name| crate::outputs::looks_like_output(name))
        {
            return Err(EventPayloadError::OutputLike(name.clone()));
        }
        Ok(EventPayload {
            params: crate::params::params_from_json(&serde_json::Value::Object(fields)),
            biz_date,
        })
    }
}

/// Run key of an event fire.
pub fn event_run_key(schedule_id: i64, stream_sequence: u64) -> String {
    format!("event:{schedule_id}:{stream_sequence}")
}

/// Run key of a manual trigger; the triggering side makes the id, so it
/// knows its run before the resolver creates it.
pub fn manual_run_key(id: uuid::Uuid) -> String {
    format!("manual:{id}")
}

fn default_time_zone() -> String {
    datajump_cron::DEFAULT_TIME_ZONE.to_owned()
}

/// "Start a run of this DAG": on `dj.fire.p<priority>.<dag_id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FireMsg {
    /// Format version.
    pub v: u32,
    /// The DAG.
    pub dag_id: i64,
    /// The DAG's fire priority when the fire was made: the level it is
    /// published on, so the most urgent fires become runs first.
    #[serde(default)]
    pub priority: Priority,
    /// The schedule that fired, for scheduled and event runs.
    pub schedule_id: Option<i64>,
    /// What fired.
    pub trigger_type: TriggerType,
    /// Scheduled instant (or trigger instant).
    pub logical_time: DateTime<Utc>,
    /// Business date of the run: a fire outside the dates DataJump stores
    /// does not decode, so the resolver ends it as poison.
    #[serde(deserialize_with = "crate::biz_date::deserialize")]
    pub biz_date: NaiveDate,
    /// IANA zone the run's dates are read in (`$[…]` date parameters).
    #[serde(default = "default_time_zone")]
    pub time_zone: String,
    /// The run's unique key; a second fire with the same key creates nothing.
    pub dedup_key: String,
    /// Trigger parameters.
    pub params: Params,
    /// The run's own limit of its DAG's active runs, in place of the DAG's
    /// `max_active_runs`: a backfill's `--max-active-runs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_active_runs: Option<i32>,
}

impl FireMsg {
    /// A manual run of `dag_id` (firing at `priority`) at `logical_time`
    /// for `biz_date`, with a fresh run key.
    pub fn manual(
        dag_id: i64,
        priority: Priority,
        logical_time: DateTime<Utc>,
        biz_date: NaiveDate,
        params: Params,
    ) -> FireMsg {
        FireMsg {
            v: VERSION,
            dag_id,
            priority,
            schedule_id: None,
            trigger_type: TriggerType::Manual,
            logical_time,
            biz_date,
            time_zone: default_time_zone(),
            dedup_key: manual_run_key(uuid::Uuid::new_v4()),
            params,
            max_active_runs: None,
        }
    }

    /// The fire a successful run `upstream` owes the dependency schedule
    /// `after` (an `after:` schedule naming `upstream`'s DAG, which fires
    /// at `priority`): a run of `after`'s DAG with `upstream`'s business
    /// date and logical time, keyed by the pair so each upstream run starts
    /// it once however often the fire is sent.
    pub fn after(
        after: &schedule::Model,
        priority: Priority,
        upstream: &dag_run::Model,
    ) -> FireMsg {
        FireMsg {
            v: VERSION,
            dag_id: after.dag_id,
            priority,
            schedule_id: Some(after.id),
            trigger_type: TriggerType::Dependency,
            logical_time: upstream.logical_time,
            biz_date: upstream.biz_date,
            time_zone: after.timezone.clone(),
            dedup_key: format!("after:{}:{}", after.id, upstream.id),
            params: Params::new(),
            max_active_runs: None,
        }
    }
}

impl FireMsg {
    /// The fire of a data schedule (of a DAG firing at `priority`) whose
    /// condition `trigger` recorded as met: dated as the trigger says,
    /// logically timed when it was met, and given the partition as
    /// `${dataset_partition}` (an event's partition comes from whoever
    /// announced it: untrusted, like any fire's params).
    pub fn data(
        schedule: &schedule::Model,
        priority: Priority,
        trigger: &crate::entities::dataset_trigger::Model,
    ) -> FireMsg {
        FireMsg {
            v: VERSION,
            dag_id: schedule.dag_id,
            priority,
            schedule_id: Some(schedule.id),
            trigger_type: TriggerType::Dataset,
            logical_time: trigger.created_at,
            biz_date: trigger.biz_date,
            time_zone: schedule.timezone.clone(),
            dedup_key: trigger.dedup_key.clone(),
            params: trigger
                .partition
                .iter()
                .map(|partition| (DATASET_PARTITION_PARAM.to_owned(), partition.clone()))
                .collect(),
            max_active_runs: None,
        }
    }
}

/// The parameter a run started by a partitioned dataset reads its
/// partition from.
pub const DATASET_PARTITION_PARAM: &str = "dataset_partition";

impl Message for FireMsg {
    fn version(&self) -> u32 {
        self.v
    }
}

/// "Run this attempt": on `dj.work.<queue>.<band>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkMsg {
    /// Format version.
    pub v: u32,
    /// The instance.
    pub task_instance_id: TaskInstanceId,
    /// Its run.
    pub dag_run_id: RunId,
    /// 0-based number of the attempt to start.
    pub attempt: i32,
    /// Business date.
    pub biz_date: NaiveDate,
    /// What started the run.
    pub trigger_type: TriggerType,
    /// Everything needed to run it (no secrets).
    pub spec: InstanceSpec,
}

impl WorkMsg {
    /// The work message of a QUEUED instance: its next attempt, from its
    /// spec; none when the stored spec does not read.
    pub fn for_queued(row: &task_instance::Model) -> Result<WorkMsg, UnreadableJson> {
        Ok(WorkMsg {
            v: VERSION,
            task_instance_id: row.instance_id(),
            dag_run_id: row.run_id(),
            attempt: row.attempt,
            biz_date: row.biz_date,
            trigger_type: row.trigger_type,
            spec: row.spec.read().map_err(UnreadableJson::clone)?.clone(),
        })
    }
}

impl WorkMsg {
    /// The attempt `attempt` (0-based) of an instance just claimed (its row
    /// now counts the attempt), built from the row: what a runner runs.
    pub fn for_claimed(
        row: &task_instance::Model,
        attempt: i32,
    ) -> Result<WorkMsg, UnreadableJson> {
        Ok(WorkMsg {
            attempt,
            ..WorkMsg::for_queued(row)?
        })
    }
}

impl Message for WorkMsg {
    fn version(&self) -> u32 {
        self.v
    }
}

/// "This attempt ended": on `dj.done.<dag_run_id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoneMsg {
    /// Format version.
    pub v: u32,
    /// The run.
    pub dag_run_id: RunId,
    /// The instance.
    pub task_instance_id: TaskInstanceId,
    /// The attempt that ended (stale attempts are ignored).
    pub attempt: i32,
    /// How it ended.
    pub status: TaskStatus,
}

impl Message for DoneMsg {
    fn version(&self) -> u32 {
        self.v
    }
}

/// A recorded dataset event, as published on `dj.dataset.<name>` once its
/// transaction commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetEventMsg {
    /// Format version.
    pub v: u32,
    /// The `dataset_event` row.
    pub id: i64,
    /// The project whose dataset it is.
    pub project_id: i64,
    /// The dataset.
    pub dataset: String,
    /// The partition, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Who announced it.
    pub source: EventSource,
    /// The run whose task wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dag_run_id: Option<i64>,
    /// The task instance that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_instance_id: Option<i64>,
    /// Small facts about what was written (row counts, paths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

impl DatasetEventMsg {
    /// Reads a message on `dj.dataset.<name>` that announces a recorded
    /// event (one DataJump published), `None` for anything else (a
    /// producer's announcement).
    pub fn recorded(payload: &[u8]) -> Option<DatasetEventMsg> {
        <DatasetEventMsg as Message>::decode(payload).ok()
    }
}

impl Message for DatasetEventMsg {
    fn version(&self) -> u32 {
        self.v
    }
}

impl From<&crate::entities::dataset_event::Model> for DatasetEventMsg {
    fn from(row: &crate::entities::dataset_event::Model) -> Self {
        DatasetEventMsg {
            v: VERSION,
            id: row.id,
            project_id: row.project_id,
            dataset: row.dataset.clone(),
            partition: row.partition.clone(),
            source: row.source,
            dag_run_id: row.dag_run_id,
            task_instance_id: row.task_instance_id,
            metadata: row.metadata.clone(),
            created_at: row.created_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_payloads_are_objects_of_bounded_size() {
        let parse = EventPayload::parse;
        assert_eq!(parse(b"").unwrap(), EventPayload::default());
        assert_eq!(parse(br#"{"t":"x","n":3}"#).unwrap().params["n"], "3");
        for bad in [&b"\xff\x00 not json {"[..], b"[1,2]", b"\"x\""] {
            assert_eq!(parse(bad), Err(EventPayloadError::NotAnObject));
        }
        assert_eq!(
            parse(br#"{"t":"x","extract_output_rows":"999"}"#),
            Err(EventPayloadError::OutputLike(
                "extract_output_rows".to_owned()
            )),
            "a field may not fill a task output's variable"
        );
        let big = format!("{{\"x\":\"{}\"}}", "y".repeat(MAX_EVENT_PAYLOAD));
        assert!(matches!(
            parse(big.as_bytes()),
            Err(EventPayloadError::TooLarge(_))
        ));
    }

    #[test]
    fn an_event_may_name_its_business_date() {
        let event = EventPayload::parse(br#"{"biz_date":"2024-01-15","table":"orders"}"#).unwrap();
        assert_eq!(event.biz_date, NaiveDate::from_ymd_opt(2024, 1, 15));
        assert_eq!(event.params.len(), 1, "the date is not a parameter too");
        for bad in [
            &br#"{"biz_date":"2024-1-5"}"#[..],
            br#"{"biz_date":"20240115"}"#,
            br#"{"biz_date":"2024-02-30"}"#,
            br#"{"biz_date":"2024-01-15; rm -rf /"}"#,
            br#"{"biz_date":20240115}"#,
            br#"{"biz_date":null}"#,
            br#"{"biz_date":"0000-06-01"}"#,
        ] {
            assert!(
                matches!(EventPayload::parse(bad), Err(EventPayloadError::BizDate(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_fire_from_before_priorities_fires_at_the_default_and_levels_clamp() {
        let fire = FireMsg::manual(
            1,
            Priority::HIGHEST,
            Utc::now(),
            NaiveDate::from_ymd_opt(2024, 1, 15).unwrap(),
            Params::new(),
        );
        let mut json: serde_json::Value = serde_json::from_slice(&fire.encode()).unwrap();
        assert_eq!(json["priority"], 10, "sent as its number");
        json.as_object_mut().unwrap().remove("priority");
        let old = FireMsg::decode(&serde_json::to_vec(&json).unwrap()).unwrap();
        assert_eq!(old.priority, Priority::DEFAULT);
        json["priority"] = 99.into();
        let loud = FireMsg::decode(&serde_json::to_vec(&json).unwrap()).unwrap();
        assert_eq!(loud.priority, Priority::HIGHEST);
    }

    #[test]
    fn a_fire_dated_outside_the_stored_dates_does_not_decode() {
        let mut fire = FireMsg::manual(
            1,
            Priority::DEFAULT,
            Utc::now(),
            NaiveDate::from_ymd_opt(2024, 1, 15).unwrap(),
            Params::new(),
        );
        assert!(FireMsg::decode(&fire.encode()).is_ok());
        fire.biz_date = NaiveDate::from_ymd_opt(-262_143, 1, 1).unwrap();
        let err = FireMsg::decode(&fire.encode()).unwrap_err().to_string();
        assert!(err.contains("0001-01-01 to 9999-12-31"), "{err}");
    }

    #[test]
    fn round_trip_and_reject_other_versions() {
        let done = DoneMsg {
            v: VERSION,
            dag_run_id: RunId(1),
            task_instance_id: TaskInstanceId(2),
            attempt: 0,
            status: TaskStatus::Success,
        };
        assert_eq!(DoneMsg::decode(&done.encode()).unwrap(), done);
        let future = DoneMsg { v: 9, ..done };
        assert!(matches!(
            DoneMsg::decode(&future.encode()),
            Err(MessageError::Version(9))
        ));
        assert!(DoneMsg::decode(b"not json").is_err());
        assert!(DoneMsg::decode(br#"{"v":1}"#).is_err());
    }
}
