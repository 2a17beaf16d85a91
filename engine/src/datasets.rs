//! Dataset events and data schedules (docs/ARCHITECTURE.md "Datasets"):
//! recording that data was written, and starting the runs of the DAGs
//! whose `on:` condition that completes.
//!
//! An event is recorded in the transaction that decides it: a task's
//! success (with its attempt's end, [`crate::record`]) or an announcement
//! ([`announce`]). The same transaction evaluates every data schedule of
//! the event's project that names its dataset, each under a row lock taken
//! in id order, so two events completing one condition at once are seen
//! together by whichever commits second and the condition fires once. A
//! fire is written down as a `dataset_trigger` row, whose `dedup_key` is
//! its run key, and published after the commit like any other effect; one
//! lost in between is found again by [`crate::owed_trigger_fires`].
//!
//! Data schedules are few next to tasks, so each batch of events reads
//! them all and matches conditions here rather than through an index.
//!
//! A condition is met for a partition when each dataset it needs has an
//! event for that partition, or, for a dataset written without partitions,
//! an event since the schedule last fired (which is what a fire consumes).
//! Under `on_update: ignore` a partition starts one run, ever; under
//! `rerun` every event that leaves the condition met starts another.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use datajump_cron::parse_time_zone;
use datajump_shared::biz_date::biz_date_for;
use datajump_shared::datasets::{Condition, EventSource, OnUpdate, Written, partition_biz_date};
use datajump_shared::entities::{dag, dataset_event, dataset_trigger, schedule};
use datajump_shared::kinds::ScheduleKind;
use datajump_shared::messages::FireMsg;
use datajump_shared::subjects::Priority;
use datajump_store::catalog;
use datajump_store::db::{WriteTxn, begin_write};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

use crate::effects::Effects;

/// Partitions of recent events a new unpartitioned event is checked
/// against: the newest this many.
const CANDIDATE_PARTITIONS: u64 = 100;

/// A dataset written, to record.
#[derive(Debug, Clone)]
pub struct Announcement {
    /// The project whose dataset it is.
    pub project_id: i64,
    /// What was written.
    pub written: Written,
    /// Who announced it.
    pub source: EventSource,
    /// The run whose task wrote it.
    pub dag_run_id: Option<i64>,
    /// The task instance that wrote it.
    pub task_instance_id: Option<i64>,
    /// Small facts about what was written.
    pub metadata: Option<serde_json::Value>,
    /// Where it came from, when a redelivery could bring it again
    /// (`nats:<stream sequence>`): an origin already recorded is skipped.
    pub origin: Option<String>,
}

/// Records announcements from outside a task (the API, a producer on
/// NATS) and starts what they complete, in one transaction; returns the
/// events recorded (none for an origin recorded before).
pub async fn announce(
    db: &DatabaseConnection,
    announcements: Vec<Announcement>,
    now: DateTime<Utc>,
) -> Result<(Vec<dataset_event::Model>, Effects), DbErr> {
    let txn = begin_write(db).await?;
    let mut effects = Effects::default();
    let events = record_written(&txn, announcements, now, &mut effects).await?;
    txn.commit().await?;
    Ok((events, effects))
}

/// Inserts the events, then fires every data schedule they complete:
/// `dataset_trigger` rows in the transaction, fires and event messages in
/// `effects` for after its commit.
pub(crate) async fn record_written(
    txn: &WriteTxn,
    announcements: Vec<Announcement>,
    now: DateTime<Utc>,
    effects: &mut Effects,
) -> Result<Vec<dataset_event::Model>, DbErr> {
    let origins: Vec<String> = announcements
        .iter()
        .filter_map(|a| a.origin.clone())
        .collect();
    let announcements: Vec<Announcement> = if origins.is_empty() {
        announcements
    } else {
        let seen: BTreeSet<String> = dataset_event::Entity::find()
            .filter(dataset_event::Column::Origin.is_in(origins))
            .all(&**txn)
            .await?
            .into_iter()
            .filter_map(|event| event.origin)
            .collect();
        announcements
            .into_iter()
            .filter(|a| {
                a.origin
                    .as_ref()
                    .is_none_or(|origin| !seen.contains(origin))
            })
            .collect()
    };
    if announcements.is_empty() {
        return Ok(Vec::new());
    }
    let mut events = dataset_event::Entity::insert_many(announcements.into_iter().map(|a| {
        dataset_event::ActiveModel {
            project_id: Set(a.project_id),
            dataset: Set(a.written.dataset),
            partition: Set(a.written.partition),
            source: Set(a.source),
            dag_run_id: Set(a.dag_run_id),
            task_instance_id: Set(a.task_instance_id),
            metadata: Set(a.metadata),
            origin: Set(a.origin),
            created_at: Set(now),
            ..Default::default()
        }
    }))
    .exec_with_returning(&**txn)
    .await?;
    events.sort_by_key(|event| event.id);
    for (schedule, condition, priority) in schedules_waiting_for(txn, &events).await? {
        let mine: Vec<&dataset_event::Model> = events
            .iter()
            .filter(|event| condition.datasets().contains(event.dataset.as_str()))
            .collect();
        for trigger in fire_schedule(txn, &schedule, &condition, &mine, now).await? {
            effects
                .fires
                .push(FireMsg::data(&schedule, priority, &trigger));
        }
    }
    effects.dataset_events.extend(events.iter().cloned());
    Ok(events)
}

/// The active data schedules of online DAGs in the events' projects that
/// name one of their datasets, locked in id order, with their conditions
/// and their DAGs' fire priorities.
async fn schedules_waiting_for(
    txn: &WriteTxn,
    events: &[dataset_event::Model],
) -> Result<Vec<(schedule::Model, Condition, Priority)>, DbErr> {
    let candidates = schedule::Entity::find()
        .filter(schedule::Column::Kind.eq(ScheduleKind::Data))
        .filter(schedule::Column::Active.eq(true))
        .all(&**txn)
        .await?;
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let dag_ids: BTreeSet<i64> = candidates.iter().map(|s| s.dag_id).collect();
    let dags: BTreeMap<i64, (i64, Priority)> = dag::Entity::find()
        .filter(dag::Column::Id.is_in(dag_ids))
        .filter(dag::Column::Online.eq(true))
        .all(&**txn)
        .await?
        .into_iter()
        .map(|dag| (dag.id, (dag.project_id, Priority::of(dag.fire_priority))))
        .collect();
    let wanted: Vec<i64> = candidates
        .iter()
        .filter(|schedule| {
            let Some(condition) = schedule.condition() else {
                return false;
            };
            let names = condition.datasets();
            events.iter().any(|event| {
                dags.get(&schedule.dag_id)
                    .is_some_and(|(project, _)| *project == event.project_id)
                    && names.contains(event.dataset.as_str())
            })
        })
        .map(|schedule| schedule.id)
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    // Locked, then read again: what another transaction committed while
    // this one waited is what counts.
    let locked = schedule::Entity::find()
        .filter(schedule::Column::Id.is_in(wanted))
        .order_by_asc(schedule::Column::Id)
        .lock_exclusive()
        .all(&**txn)
        .await?;
    Ok(locked
        .into_iter()
        .filter(|schedule| schedule.active)
        .filter_map(|schedule| {
            let condition = schedule.condition()?;
            let (_, priority) = dags.get(&schedule.dag_id)?;
            Some((schedule, condition, *priority))
        })
        .collect())
}

/// Fires `schedule` for every partition `events` (its project's, of its
/// datasets, oldest first) complete its condition for; returns the
/// triggers written.
async fn fire_schedule(
    txn: &WriteTxn,
    schedule: &schedule::Model,
    condition: &Condition,
    events: &[&dataset_event::Model],
    now: DateTime<Utc>,
) -> Result<Vec<dataset_trigger::Model>, DbErr> {
    let datasets: Vec<String> = condition
        .datasets()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut consumed = consumed_up_to(txn, schedule.id).await?;
    let mut fired = Vec::new();
    for event in events {
        let contexts = match &event.partition {
            Some(partition) => vec![Some(partition.clone())],
            None => {
                let mut contexts = vec![None];
                contexts.extend(
                    recent_partitions(txn, event.project_id, &datasets, consumed)
                        .await?
                        .into_iter()
                        .map(Some),
                );
                contexts
            }
        };
        for partition in contexts {
            let ready = ready_datasets(
                txn,
                event.project_id,
                &datasets,
                partition.as_deref(),
                consumed,
                schedule.created_at,
            )
            .await?;
            if !condition.is_met(&|name| ready.contains(name)) {
                continue;
            }
            let dedup_key = match (&partition, schedule.on_update.unwrap_or_default()) {
                (Some(partition), OnUpdate::Ignore) => format!("data:{}:{partition}", schedule.id),
                (Some(partition), OnUpdate::Rerun) => {
                    format!("data:{}:{partition}:{}", schedule.id, event.id)
                }
                (None, _) => format!("data:{}:{}", schedule.id, event.id),
            };
            let taken = dataset_trigger::Entity::find()
                .filter(dataset_trigger::Column::DedupKey.eq(&dedup_key))
                .one(&**txn)
                .await?
                .is_some();
            if taken {
                continue;
            }
            let zone = parse_time_zone(&schedule.timezone).unwrap_or(chrono_tz::UTC);
            let biz_date = partition
                .as_deref()
                .and_then(partition_biz_date)
                .unwrap_or_else(|| biz_date_for(now, zone, schedule.biz_date_offset_days));
            let trigger = dataset_trigger::Entity::insert(dataset_trigger::ActiveModel {
                schedule_id: Set(schedule.id),
                dedup_key: Set(dedup_key),
                partition: Set(partition),
                event_id: Set(event.id),
                biz_date: Set(biz_date),
                created_at: Set(now),
                ..Default::default()
            })
            .exec_with_returning(&**txn)
            .await?;
            consumed = consumed.max(event.id);
            fired.push(trigger);
        }
    }
    Ok(fired)
}

/// How far a schedule has consumed unpartitioned events: the event that
/// completed its latest fire.
async fn consumed_up_to<C: ConnectionTrait>(conn: &C, schedule_id: i64) -> Result<i64, DbErr> {
    Ok(dataset_trigger::Entity::find()
        .filter(dataset_trigger::Column::ScheduleId.eq(schedule_id))
        .order_by_desc(dataset_trigger::Column::EventId)
        .one(conn)
        .await?
        .map_or(0, |trigger| trigger.event_id))
}

/// The partitions of the newest events of `datasets` after `consumed`: the
/// partitions an unpartitioned event may complete a condition for.
async fn recent_partitions<C: ConnectionTrait>(
    conn: &C,
    project_id: i64,
    datasets: &[String],
    consumed: i64,
) -> Result<Vec<String>, DbErr> {
    let partitions: Vec<Option<String>> = dataset_event::Entity::find()
        .select_only()
        .column(dataset_event::Column::Partition)
        .filter(dataset_event::Column::ProjectId.eq(project_id))
        .filter(dataset_event::Column::Dataset.is_in(datasets.iter().cloned()))
        .filter(dataset_event::Column::Partition.is_not_null())
        .filter(dataset_event::Column::Id.gt(consumed))
        .order_by_desc(dataset_event::Column::Id)
        .limit(CANDIDATE_PARTITIONS)
        .into_tuple()
        .all(conn)
        .await?;
    let mut seen = BTreeSet::new();
    Ok(partitions
        .into_iter()
        .flatten()
        .filter(|partition| seen.insert(partition.clone()))
        .collect())
}

/// Which of `datasets` are ready for `partition`: written for it, or
/// written without a partition after `consumed` (and after the schedule
/// was made, so history from before it does not count).
async fn ready_datasets<C: ConnectionTrait>(
    conn: &C,
    project_id: i64,
    datasets: &[String],
    partition: Option<&str>,
    consumed: i64,
    since: DateTime<Utc>,
) -> Result<BTreeSet<String>, DbErr> {
    let unpartitioned = sea_orm::Condition::all()
        .add(dataset_event::Column::Partition.is_null())
        .add(dataset_event::Column::Id.gt(consumed))
        .add(dataset_event::Column::CreatedAt.gte(since));
    let written = match partition {
        Some(partition) => sea_orm::Condition::any()
            .add(dataset_event::Column::Partition.eq(partition))
            .add(unpartitioned),
        None => unpartitioned,
    };
    let ready: Vec<String> = dataset_event::Entity::find()
        .select_only()
        .column(dataset_event::Column::Dataset)
        .distinct()
        .filter(dataset_event::Column::ProjectId.eq(project_id))
        .filter(dataset_event::Column::Dataset.is_in(datasets.iter().cloned()))
        .filter(written)
        .into_tuple()
        .all(conn)
        .await?;
    Ok(ready.into_iter().collect())
}

/// Fires of data schedules met between `since` and `before` whose runs do
/// not exist: lost between a commit and its publish.
pub(crate) async fn owed_data_fires(
    db: &DatabaseConnection,
    since: DateTime<Utc>,
    before: DateTime<Utc>,
) -> Result<Vec<FireMsg>, DbErr> {
    let triggers = dataset_trigger::Entity::find()
        .filter(dataset_trigger::Column::CreatedAt.gte(since))
        .filter(dataset_trigger::Column::CreatedAt.lt(before))
        .all(db)
        .await?;
    if triggers.is_empty() {
        return Ok(Vec::new());
    }
    let schedules: BTreeMap<i64, schedule::Model> = schedule::Entity::find()
        .filter(
            schedule::Column::Id.is_in(
                triggers
                    .iter()
                    .map(|t| t.schedule_id)
                    .collect::<BTreeSet<_>>(),
            ),
        )
        .all(db)
        .await?
        .into_iter()
        .map(|schedule| (schedule.id, schedule))
        .collect();
    let priorities = catalog::fire_priorities(db, schedules.values().map(|s| s.dag_id)).await?;
    // A trigger recorded before its schedule last began to fire was
    // recorded while it fired before a pause (docs/DAG_FORMAT.md
    // "Datasets and data schedules"): its run may have been skipped as
    // paused, and a resume does not replay it.
    Ok(triggers
        .iter()
        .filter_map(|trigger| {
            let schedule = schedules.get(&trigger.schedule_id)?;
            let priority = *priorities.get(&schedule.dag_id)?;
            (trigger.created_at >= schedule.counts_from())
                .then(|| FireMsg::data(schedule, priority, trigger))
        })
        .collect())
}
