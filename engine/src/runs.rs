//! Run creation: a batch of fires becomes runs in one transaction.
//!
//! Each fire rechecks what may have changed since it was published (the
//! DAG online, its schedule active), then the DAG's run slots under its
//! overlap policy; a repeated fire meets its run's unique `dedup_key` and
//! creates nothing. A new run keeps its DAG version's plan (once per
//! version), gets one instance per task with its parent counters, and its
//! ready roots start QUEUED.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use datajump_shared::entities::{
    StoredJson, dag, dag_run, dag_version_plan, schedule, task_instance,
};
use datajump_shared::kinds::DepType;
use datajump_shared::kinds::OverlapPolicy;
use datajump_shared::messages::FireMsg;
use datajump_shared::params::params_to_json;
use datajump_shared::plan::{InstanceSpec, Plan};
use datajump_shared::{RunStatus, TaskStatus, TriggerType};
use datajump_store::catalog;
use datajump_store::db::begin_write;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    QueryFilter, QuerySelect, sea_query::OnConflict,
};
use tracing::{debug, info};

use crate::effects::Effects;
use crate::queue::queue_new;
use crate::slots::{RunSlots, free_run_slots, release_roots, run_timeout_at, run_timeout_secs};
use crate::sql::INSERT_CHUNK;
use crate::waits::{awaited_by_running_run, link_external_parents, start_awaited_runs};

/// Why a scheduled fire must not start a run now, if it must not, given
/// whether each schedule of the batch is active (absent: deleted).
fn skip_reason(
    fire: &FireMsg,
    dag: &dag::Model,
    schedules_active: &HashMap<i64, bool>,
) -> Option<&'static str> {
    if !matches!(
        fire.trigger_type,
        TriggerType::Schedule | TriggerType::Event | TriggerType::Dependency | TriggerType::Dataset
    ) {
        return None;
    }
    if !dag.online {
        return Some("DAG is offline");
    }
    match fire.schedule_id.map(|id| schedules_active.get(&id)) {
        None => None,
        Some(None) => Some("schedule was deleted"),
        Some(Some(false)) => Some("schedule is paused"),
        Some(Some(true)) => None,
    }
}

/// What a fire did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FireOutcome {
    /// Its DAG does not exist: the fire is poison.
    UnknownDag(i64),
    /// It must not start a run (offline DAG, paused or deleted schedule,
    /// no plan).
    Ignored,
    /// Its run already existed (a repeated fire).
    Exists,
    /// The DAG was at `max_active_runs` under overlap policy `skip`.
    Skipped,
    /// A new run, RUNNING (roots released), QUEUED (waiting for a slot) or,
    /// with no tasks, SUCCESS.
    Created,
}

/// Creates the runs of `fires` in one transaction, in
/// a fixed number of statements however many fires: the DAGs, schedules
/// and plans of the whole batch are read at once, the DAGs' run slots
/// counted and locked at once, and the runs, new versions' plans and
/// instances inserted in multi-row statements, the roots of running runs
/// already QUEUED. A cron minute's thousand fires are a few batches, so per-fire
/// statements were what held run creation back on PostgreSQL. Returns each
/// fire's outcome, in the order of `fires`, and the work released.
pub async fn create_runs(
    db: &DatabaseConnection,
    fires: &[&FireMsg],
    now: DateTime<Utc>,
) -> Result<(Vec<FireOutcome>, Effects), DbErr> {
    let mut released = Effects::default();
    let mut outcomes = vec![FireOutcome::Ignored; fires.len()];
    if fires.is_empty() {
        return Ok((outcomes, released));
    }
    let indexed: Vec<(usize, &FireMsg)> = fires.iter().copied().enumerate().collect();
    let txn = begin_write(db).await?;
    let (dags, schedules) = read_dags_and_schedules(&txn, &indexed).await?;
    let mut runnable = drop_inactive_fires(&indexed, &dags, &schedules, &mut outcomes);
    // Fires are taken in DAG order, so a batch's runs (and the external
    // parents they lock) come in the same order in every resolver.
    runnable.sort_by_key(|(_, fire, _)| fire.dag_id);
    let plans = catalog::current_plans(&txn, runnable.iter().map(|(_, _, dag)| *dag)).await?;
    // Slots are counted (and the DAG rows locked) before looking for
    // existing runs, so a concurrent resolver's run of the same fire is
    // committed and seen by then.
    let free_slots = lock_run_slots(&txn, &runnable).await?;
    let existing = existing_dedup_keys(&txn, runnable.iter().map(|(_, fire, _)| *fire)).await?;
    let new_runs = admit_fires(
        &txn,
        runnable,
        &plans,
        &schedules,
        free_slots,
        &existing,
        &mut outcomes,
    )
    .await?;
    let run_ids = insert_runs(&txn, &new_runs, now).await?;
    let NewInstances {
        created,
        running,
        queued,
        pending,
    } = build_instances(&new_runs, &run_ids, now, &mut outcomes);
    insert_version_plans(&txn, &created).await?;
    insert_task_instances(&txn, queued, pending, &mut released).await?;
    link_cross_run_parents(&txn, &created, now).await?;
    start_awaited_and_release_roots(&txn, running, now, &mut released).await?;
    txn.commit().await?;
    report_created(created, &mut outcomes);
    Ok((outcomes, released))
}

/// A fire that may start a run: its index in the batch, and its DAG.
type Runnable<'a> = (usize, &'a FireMsg, &'a dag::Model);

/// Each schedule of a batch, by id: whether it is active, and its timeout.
type Schedules = HashMap<i64, (bool, Option<i32>)>;

/// Reads the DAGs and the schedules of a batch of fires, keyed by id.
async fn read_dags_and_schedules(
    txn: &DatabaseTransaction,
    fires: &[(usize, &FireMsg)],
) -> Result<(HashMap<i64, dag::Model>, Schedules), DbErr> {
    let dags: HashMap<i64, dag::Model> = dag::Entity::find()
        .filter(dag::Column::Id.is_in(fires.iter().map(|(_, f)| f.dag_id)))
        .all(txn)
        .await?
        .into_iter()
        .map(|d| (d.id, d))
        .collect();
    let schedule_ids: Vec<i64> = fires.iter().filter_map(|(_, f)| f.schedule_id).collect();
    let schedules: Schedules = if schedule_ids.is_empty() {
        HashMap::new()
    } else {
        schedule::Entity::find()
            .select_only()
            .columns([
                schedule::Column::Id,
                schedule::Column::Active,
                schedule::Column::TimeoutSecs,
            ])
            .filter(schedule::Column::Id.is_in(schedule_ids))
            .into_tuple::<(i64, bool, Option<i32>)>()
            .all(txn)
            .await?
            .into_iter()
            .map(|(id, active, timeout)| (id, (active, timeout)))
            .collect()
    };
    Ok((dags, schedules))
}

/// Keeps the fires that may start a run, marking the others' outcomes.
fn drop_inactive_fires<'a>(
    fires: &[(usize, &'a FireMsg)],
    dags: &'a HashMap<i64, dag::Model>,
    schedules: &Schedules,
    outcomes: &mut [FireOutcome],
) -> Vec<Runnable<'a>> {
    let schedules_active: HashMap<i64, bool> = schedules
        .iter()
        .map(|(id, (active, _))| (*id, *active))
        .collect();
    let mut runnable = Vec::new();
    for (index, fire) in fires {
        match dags.get(&fire.dag_id) {
            None => {
                outcomes[*index] = FireOutcome::UnknownDag(fire.dag_id);
            }
            Some(dag) => match skip_reason(fire, dag, &schedules_active) {
                Some(why) => {
                    info!(dag = %dag.name, dedup_key = %fire.dedup_key, skip = why, "fire ignored");
                    outcomes[*index] = FireOutcome::Ignored;
                }
                None => runnable.push((*index, *fire, dag)),
            },
        }
    }
    runnable
}

/// Locks the rows of the DAGs that limit runs and counts their free slots.
async fn lock_run_slots(
    txn: &DatabaseTransaction,
    runnable: &[Runnable<'_>],
) -> Result<HashMap<i64, RunSlots>, DbErr> {
    let limited: Vec<&dag::Model> = runnable
        .iter()
        .map(|(_, _, dag)| *dag)
        .filter(|dag| dag.overlap_policy != OverlapPolicy::Parallel)
        .collect();
    free_run_slots(txn, &limited).await
}

/// Which of the fires' `dedup_key`s already have a run.
async fn existing_dedup_keys<'a>(
    txn: &DatabaseTransaction,
    fires: impl Iterator<Item = &'a FireMsg>,
) -> Result<HashSet<String>, DbErr> {
    let keys: Vec<&str> = fires.map(|fire| fire.dedup_key.as_str()).collect();
    let mut existing = HashSet::new();
    for chunk in keys.chunks(INSERT_CHUNK) {
        existing.extend(
            dag_run::Entity::find()
                .select_only()
                .column(dag_run::Column::DedupKey)
                .filter(dag_run::Column::DedupKey.is_in(chunk.iter().copied()))
                .into_tuple::<String>()
                .all(txn)
                .await?,
        );
    }
    Ok(existing)
}

/// A run a fire is about to create.
struct NewRun<'a> {
    /// The fire's index in the batch.
    index: usize,
    fire: &'a FireMsg,
    dag: &'a dag::Model,
    plan: &'a Plan,
    status: RunStatus,
    /// Its run timeout.
    timeout_secs: Option<i32>,
}

/// Decides each runnable fire: its run exists, it is skipped, or a new run.
async fn admit_fires<'a>(
    txn: &DatabaseTransaction,
    runnable: Vec<Runnable<'a>>,
    plans: &'a BTreeMap<i64, Plan>,
    schedules: &Schedules,
    mut free_slots: HashMap<i64, RunSlots>,
    existing: &HashSet<String>,
    outcomes: &mut [FireOutcome],
) -> Result<Vec<NewRun<'a>>, DbErr> {
    let mut new_runs = Vec::with_capacity(runnable.len());
    let mut keys = HashSet::new();
    for (index, fire, dag) in runnable {
        let Some(plan) = plans.get(&dag.id) else {
            continue;
        };
        if existing.contains(&fire.dedup_key) || !keys.insert(fire.dedup_key.as_str()) {
            debug!(dag = %dag.name, dedup_key = %fire.dedup_key, "run already exists");
            outcomes[index] = FireOutcome::Exists;
            continue;
        }
        let slot_free = dag.overlap_policy == OverlapPolicy::Parallel
            || free_slots
                .get_mut(&dag.id)
                .is_some_and(|slots| slots.take(fire.max_active_runs))
            // A run that an active run of its DAG already waits on starts
            // past the limit: queued, it would wait on its own waiter.
            || (dag.overlap_policy == OverlapPolicy::Wait
                && awaited_by_running_run(
                    txn,
                    dag.id,
                    &plan.tasks.iter().map(|t| t.task_id).collect::<Vec<_>>(),
                    fire.biz_date,
                )
                .await?);
        let status = match (plan.tasks.is_empty(), slot_free) {
            (true, _) => RunStatus::Success,
            (false, true) => RunStatus::Running,
            (false, false) if dag.overlap_policy == OverlapPolicy::Skip => {
                info!(dag = %dag.name, dedup_key = %fire.dedup_key, max_active_runs = dag.max_active_runs, "fire skipped: the DAG is at max_active_runs (overlap: skip)");
                outcomes[index] = FireOutcome::Skipped;
                continue;
            }
            (false, false) => RunStatus::Queued,
        };
        let schedule_timeout = fire
            .schedule_id
            .and_then(|id| schedules.get(&id))
            .and_then(|(_, timeout)| *timeout);
        new_runs.push(NewRun {
            index,
            fire,
            dag,
            plan,
            status,
            timeout_secs: run_timeout_secs(dag, schedule_timeout),
        });
    }
    Ok(new_runs)
}

/// Inserts the `dag_run` rows of `runs`, a multi-row statement per
/// [`INSERT_CHUNK`], and returns the new run ids by `dedup_key`. A run whose
/// key another resolver inserted meanwhile is left out (`ON CONFLICT DO
/// NOTHING`), not an error.
async fn insert_runs(
    txn: &DatabaseTransaction,
    runs: &[NewRun<'_>],
    now: chrono::DateTime<Utc>,
) -> Result<HashMap<String, i64>, DbErr> {
    let mut ids = HashMap::with_capacity(runs.len());
    for chunk in runs.chunks(INSERT_CHUNK) {
        let rows = chunk.iter().map(|run| {
            let empty = run.plan.tasks.is_empty();
            dag_run::ActiveModel {
                dag_id: Set(run.dag.id),
                dag_version: Set(run.plan.version),
                schedule_id: Set(run.fire.schedule_id),
                dedup_key: Set(run.fire.dedup_key.clone()),
                trigger_type: Set(run.fire.trigger_type),
                biz_date: Set(run.fire.biz_date),
                logical_time: Set(run.fire.logical_time),
                params: Set(params_to_json(&run.fire.params)),
                status: Set(run.status),
                pending_instances: Set(i32::try_from(run.plan.tasks.len()).unwrap_or(i32::MAX)),
                failed_instances: Set(0),
                created_at: Set(now),
                finished_at: Set(empty.then_some(now)),
                max_active_runs: Set(run.fire.max_active_runs.map(|limit| limit.max(1))),
                timeout_secs: Set(run.timeout_secs),
                timeout_at: Set(run_timeout_at(run.status, run.timeout_secs, now)),
                ..Default::default()
            }
        });
        let inserted = dag_run::Entity::insert_many(rows)
            .on_conflict(
                OnConflict::column(dag_run::Column::DedupKey)
                    .do_nothing()
                    .to_owned(),
            )
            .exec_with_returning(txn)
            .await?;
        ids.extend(inserted.into_iter().map(|run| (run.dedup_key, run.id)));
    }
    Ok(ids)
}

/// The runs [`insert_runs`] inserted and the instance rows they get.
struct NewInstances<'r, 'a> {
    /// Each inserted run, with its id.
    created: Vec<(&'r NewRun<'a>, i64)>,
    /// The ids of those that start RUNNING.
    running: Vec<i64>,
    /// The ready roots of the RUNNING runs, to insert QUEUED.
    queued: Vec<task_instance::ActiveModel>,
    /// Every other instance, to insert PENDING.
    pending: Vec<task_instance::ActiveModel>,
}

/// Builds each inserted run's instance rows, a RUNNING run's ready roots QUEUED.
fn build_instances<'r, 'a>(
    new_runs: &'r [NewRun<'a>],
    run_ids: &HashMap<String, i64>,
    now: chrono::DateTime<Utc>,
    outcomes: &mut [FireOutcome],
) -> NewInstances<'r, 'a> {
    let mut running = Vec::new();
    let (mut queued, mut pending) = (Vec::new(), Vec::new());
    let mut created = Vec::with_capacity(new_runs.len());
    for run in new_runs {
        let Some(&run_id) = run_ids.get(run.fire.dedup_key.as_str()) else {
            // Another resolver created it after our look for existing runs.
            outcomes[run.index] = FireOutcome::Exists;
            continue;
        };
        let rows = instance_rows(run.plan, run.fire, run_id, now);
        if run.status == RunStatus::Running {
            running.push(run_id);
            for (mut row, task) in rows.into_iter().zip(&run.plan.tasks) {
                if queue_new(&mut row, task, now) {
                    queued.push(row);
                } else {
                    pending.push(row);
                }
            }
        } else {
            pending.extend(rows);
        }
        created.push((run, run_id));
    }
    NewInstances {
        created,
        running,
        queued,
        pending,
    }
}

/// The new instances of a run: one per task of `plan`, in the plan's order,
/// PENDING, with their parent counters and children.
fn instance_rows(
    plan: &Plan,
    fire: &FireMsg,
    run_id: i64,
    now: chrono::DateTime<Utc>,
) -> Vec<task_instance::ActiveModel> {
    use std::collections::HashMap;
    let id_of: HashMap<&str, i64> = plan
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.task_id))
        .collect();
    let mut children: HashMap<&str, Vec<(i64, DepType)>> = HashMap::new();
    let mut parents: HashMap<&str, (i32, i32)> = HashMap::new();
    for edge in &plan.edges {
        let Some(&child_id) = id_of.get(edge.child.as_str()) else {
            continue;
        };
        // A parent in another run is counted here and linked by
        // `link_external_parents`; a same-run parent lists the child.
        if edge.is_same_run() {
            if !id_of.contains_key(edge.parent.as_str()) {
                continue;
            }
            children
                .entry(edge.parent.as_str())
                .or_default()
                .push((child_id, edge.dep_type));
        }
        let counts = parents.entry(edge.child.as_str()).or_default();
        counts.0 += 1;
        counts.1 += i32::from(edge.dep_type == DepType::Strong);
    }
    plan.tasks
        .iter()
        .map(|task| {
            let mut params = plan.params.clone();
            params.extend(task.params.clone());
            params.extend(fire.params.clone());
            let spec = InstanceSpec {
                dag_name: plan.dag_name.clone(),
                project_id: plan.project_id,
                schedule_id: fire.schedule_id,
                logical_time: fire.logical_time,
                time_zone: fire.time_zone.clone(),
                params,
                untrusted_params: fire.params.keys().cloned().collect(),
                task: task.clone(),
                map_item: None,
            };
            let (pending, strong) = parents.get(task.name.as_str()).copied().unwrap_or_default();
            task_instance::ActiveModel {
                dag_run_id: Set(run_id),
                dag_id: Set(plan.dag_id),
                task_id: Set(task.task_id),
                task_name: Set(task.name.clone()),
                biz_date: Set(fire.biz_date),
                trigger_type: Set(fire.trigger_type),
                status: Set(TaskStatus::Pending),
                attempt: Set(0),
                retries_used: Set(0),
                owner: Set(None),
                queue: Set(task.queue.clone()),
                priority: Set(task.priority),
                deadline_at: Set(None),
                pending_parents: Set(pending),
                strong_parents: Set(strong),
                strong_ok: Set(0),
                strong_failed: Set(0),
                strong_skipped: Set(0),
                flow_skipped: Set(false),
                propagated: Set(false),
                children: Set(StoredJson::new(
                    children
                        .get(task.name.as_str())
                        .cloned()
                        .unwrap_or_default(),
                )),
                spec: Set(StoredJson::new(spec)),
                reason: Set(None),
                created_at: Set(now),
                queued_at: Set(None),
                started_at: Set(None),
                finished_at: Set(None),
                ..Default::default()
            }
        })
        .collect()
}

/// Keeps the plan of each version the created runs were made from, once
/// per version: only the versions not yet kept are written, so a version
/// that already has runs costs a lookup of its key, not its plan.
async fn insert_version_plans(
    txn: &DatabaseTransaction,
    created: &[(&NewRun<'_>, i64)],
) -> Result<(), DbErr> {
    let mut plans: BTreeMap<(i64, i32), &Plan> = created
        .iter()
        .map(|(run, _)| ((run.plan.dag_id, run.plan.version), run.plan))
        .collect();
    if plans.is_empty() {
        return Ok(());
    }
    let versions: HashSet<i32> = plans.keys().map(|(_, version)| *version).collect();
    let kept: Vec<(i64, i32)> = dag_version_plan::Entity::find()
        .select_only()
        .columns([
            dag_version_plan::Column::DagId,
            dag_version_plan::Column::Version,
        ])
        .filter(dag_version_plan::Column::DagId.is_in(plans.keys().map(|(dag, _)| *dag)))
        .filter(dag_version_plan::Column::Version.is_in(versions))
        .into_tuple()
        .all(txn)
        .await?;
    for key in kept {
        plans.remove(&key);
    }
    let missing: Vec<&Plan> = plans.into_values().collect();
    for chunk in missing.chunks(INSERT_CHUNK) {
        dag_version_plan::Entity::insert_many(chunk.iter().map(|plan| {
            dag_version_plan::ActiveModel {
                dag_id: Set(plan.dag_id),
                version: Set(plan.version),
                plan: Set(StoredJson::new((*plan).clone())),
            }
        }))
        .on_conflict(
            OnConflict::columns([
                dag_version_plan::Column::DagId,
                dag_version_plan::Column::Version,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
    }
    Ok(())
}

/// Inserts the created runs' instances, the QUEUED ones into `released`.
async fn insert_task_instances(
    txn: &DatabaseTransaction,
    queued: Vec<task_instance::ActiveModel>,
    pending: Vec<task_instance::ActiveModel>,
    released: &mut Effects,
) -> Result<(), DbErr> {
    // Moved into the statements chunk by chunk, not cloned: an instance row
    // carries its spec.
    let mut queued = queued.into_iter();
    while queued.len() > 0 {
        released.queued.extend(
            task_instance::Entity::insert_many(queued.by_ref().take(INSERT_CHUNK))
                .exec_with_returning(txn)
                .await?,
        );
    }
    let mut pending = pending.into_iter();
    while pending.len() > 0 {
        task_instance::Entity::insert_many(pending.by_ref().take(INSERT_CHUNK))
            .exec_without_returning(txn)
            .await?;
    }
    Ok(())
}

/// Links each created run's instances to their parents in other runs.
async fn link_cross_run_parents(
    txn: &DatabaseTransaction,
    created: &[(&NewRun<'_>, i64)],
    now: chrono::DateTime<Utc>,
) -> Result<(), DbErr> {
    for (run, run_id) in created {
        link_external_parents(txn, run.plan, run.dag, *run_id, run.fire.biz_date, now).await?;
    }
    Ok(())
}

/// Starts the QUEUED runs the new ones wait on; releases what may run now.
async fn start_awaited_and_release_roots(
    txn: &DatabaseTransaction,
    mut running: Vec<i64>,
    now: chrono::DateTime<Utc>,
    released: &mut Effects,
) -> Result<(), DbErr> {
    let awaited = start_awaited_runs(txn, &running, now).await?;
    running.extend(awaited);
    // What did not start QUEUED but may run now: disabled roots (settled
    // SKIPPED) and instances whose parents in other runs had already ended.
    release_roots(txn, &running, now, released).await
}

/// Logs each committed run and marks its fire created.
fn report_created(created: Vec<(&NewRun<'_>, i64)>, outcomes: &mut [FireOutcome]) {
    for (run, run_id) in created {
        info!(dag = %run.dag.name, dag_run_id = run_id, status = %run.status, trigger = run.fire.trigger_type.as_str(), biz_date = %run.fire.biz_date, "run created");
        outcomes[run.index] = FireOutcome::Created;
    }
}
