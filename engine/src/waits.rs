//! External waits: parents in another run of the same DAG (`offset_day`) or
//! in another DAG (`other_dag/task`), linked when a run is created and
//! released when the awaited instance propagates, with a wait timeout
//! (docs/ARCHITECTURE.md, "Dependency rules").

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use datajump_shared::biz_date::{BatchRule, latest_batch};
use datajump_shared::entities::{dag, dag_run, dependency_wait, schedule, task, task_instance};
use datajump_shared::kinds::DepType;
use datajump_shared::plan::Plan;
use datajump_shared::{RunStatus, TaskInstanceId, TaskStatus};
use datajump_store::db::begin_write;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};
use tracing::warn;

use crate::effects::Effects;
use crate::propagation::{count_parent, evaluate_all, propagate_all};
use crate::slots::start_awaited_run;
use crate::sql::{IN_LIST_MAX, Ti, TiCol, update_instance, with_reason};
use crate::transitions::TaskTransition;
use datajump_shared::problem::{Awaited, Reason};
use datajump_shared::strategy::ParentResult;

/// What a cross-run dependency points at, resolved by the caller.
#[derive(Debug, Clone)]
pub(crate) struct ExternalParent {
    /// `(dag_id, task_id)` of the awaited task; `None` when it does not
    /// exist, which counts as a parent that did not succeed.
    target: Option<(i64, i64)>,
    /// The awaited run's business date.
    biz_date: chrono::NaiveDate,
    /// STRONG or WEAK.
    dep_type: DepType,
    /// `other_dag/task for 2024-01-14`, for reasons and logs.
    description: String,
}

/// How a parent in another run counts: S when it ended SUCCESS or SKIPPED
/// of any kind, F otherwise. A branch not taken there is that run's control
/// flow, not this one's, so it is never B here.
fn across_runs(succeeded: bool) -> ParentResult {
    if succeeded {
        ParentResult::Succeeded
    } else {
        ParentResult::Failed
    }
}

/// Links a new instance to a parent in another run (docs/ARCHITECTURE.md, "Dependency
/// rules"): counted at once if the awaited instance has already propagated
/// or its run can never exist (its business date is before the awaited
/// DAG's first run), otherwise registered as a wait that the awaited
/// instance's propagation releases; a registered wait arms the waiter's
/// wait timeout. The awaited row is locked so its propagation cannot slip
/// between the check and the registration.
async fn link_external_parent<C: ConnectionTrait>(
    conn: &C,
    waiter: &task_instance::Model,
    parent: &ExternalParent,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let by_id = || Ti::update_many().filter(TiCol::Id.eq(waiter.id));
    let Some((target_dag, target_task)) = parent.target else {
        count_parent(conn, by_id(), parent.dep_type, ParentResult::Failed).await?;
        return Ok(());
    };
    // A mapped task is awaited as its aggregate, not as one of its items.
    let awaited = Ti::find()
        .filter(TiCol::TaskId.eq(target_task))
        .filter(TiCol::BizDate.eq(parent.biz_date))
        .filter(TiCol::MapIndex.eq(task_instance::PLANNED))
        .order_by_desc(TiCol::Id)
        .lock_exclusive()
        .one(conn)
        .await?;
    let settled = match &awaited {
        Some(awaited) if awaited.propagated => Some(awaited.status.counts_as_success()),
        Some(_) => None,
        None => {
            let first_run = dag_run::Entity::find()
                .filter(dag_run::Column::DagId.eq(target_dag))
                .order_by_asc(dag_run::Column::BizDate)
                .one(conn)
                .await?;
            first_run
                .is_some_and(|first| parent.biz_date < first.biz_date)
                .then_some(true)
        }
    };
    if let Some(ok) = settled {
        count_parent(conn, by_id(), parent.dep_type, across_runs(ok)).await?;
        return Ok(());
    }
    dependency_wait::Entity::insert(dependency_wait::ActiveModel {
        waiter_instance_id: Set(waiter.id),
        waiter_run_id: Set(waiter.dag_run_id),
        target_task_id: Set(target_task),
        target_biz_date: Set(parent.biz_date),
        dep_type: Set(parent.dep_type),
        description: Set(parent.description.clone()),
        created_at: Set(now),
        ..Default::default()
    })
    .exec_without_returning(conn)
    .await?;
    let wait_secs = i64::from(waiter.spec.read().map_or(
        datajump_shared::dag_file::DEFAULT_WAIT_TIMEOUT_SECS,
        |spec| spec.task.wait_timeout_secs,
    ));
    Ti::update_many()
        .col_expr(
            TiCol::DeadlineAt,
            Expr::value(now + Duration::seconds(wait_secs)),
        )
        .filter(TiCol::Id.eq(waiter.id))
        .filter(TiCol::DeadlineAt.is_null())
        .exec(conn)
        .await?;
    Ok(())
}

/// Starts, past `max_active_runs`, every QUEUED run of the same DAG that
/// one of `running` waits on, then those runs' own awaited QUEUED runs in
/// turn; returns the runs started, whose roots are the caller's to
/// release. Queued, such a run would wait for the slot its waiter holds
/// while the waiter waits for it (docs/ARCHITECTURE.md "Dependency
/// rules").
pub(crate) async fn start_awaited_runs<C: ConnectionTrait>(
    conn: &C,
    running: &[i64],
    now: DateTime<Utc>,
) -> Result<Vec<i64>, DbErr> {
    let mut started = Vec::new();
    let mut frontier: Vec<i64> = running.to_vec();
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for chunk in frontier.chunks(IN_LIST_MAX) {
            let waits = dependency_wait::Entity::find()
                .filter(dependency_wait::Column::WaiterRunId.is_in(chunk.iter().copied()))
                .all(conn)
                .await?;
            for wait in waits {
                let Some(waiter_run) = dag_run::Entity::find_by_id(wait.waiter_run_id)
                    .one(conn)
                    .await?
                else {
                    continue;
                };
                let awaited_runs: Vec<i64> = Ti::find()
                    .select_only()
                    .column(TiCol::DagRunId)
                    .filter(TiCol::TaskId.eq(wait.target_task_id))
                    .filter(TiCol::BizDate.eq(wait.target_biz_date))
                    .filter(TiCol::MapIndex.eq(task_instance::PLANNED))
                    .filter(TiCol::DagId.eq(waiter_run.dag_id))
                    .into_tuple()
                    .all(conn)
                    .await?;
                for run_id in awaited_runs {
                    if !started.contains(&run_id) && start_awaited_run(conn, run_id, now).await? {
                        started.push(run_id);
                        next.push(run_id);
                    }
                }
            }
        }
        frontier = next;
    }
    Ok(started)
}

/// Whether a RUNNING run of DAG `dag_id` waits on one of `task_ids` for
/// `biz_date`: a new run of that date is then started past
/// `max_active_runs` rather than QUEUED behind its own waiter.
pub(crate) async fn awaited_by_running_run<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
    task_ids: &[i64],
    biz_date: chrono::NaiveDate,
) -> Result<bool, DbErr> {
    if task_ids.is_empty() {
        return Ok(false);
    }
    let running = sea_orm::sea_query::Query::select()
        .column(dag_run::Column::Id)
        .from(dag_run::Entity)
        .and_where(dag_run::Column::DagId.eq(dag_id))
        .and_where(dag_run::Column::Status.eq(RunStatus::Running))
        .to_owned();
    let mut found = false;
    for chunk in task_ids.chunks(IN_LIST_MAX) {
        found |= dependency_wait::Entity::find()
            .filter(dependency_wait::Column::TargetBizDate.eq(biz_date))
            .filter(dependency_wait::Column::TargetTaskId.is_in(chunk.iter().copied()))
            .filter(dependency_wait::Column::WaiterRunId.in_subquery(running.clone()))
            .count(conn)
            .await?
            > 0;
        if found {
            break;
        }
    }
    Ok(found)
}

/// The business date a dependency on `date` of `target_dag`'s task
/// `target_task` means: `date` itself when it has (or may have) a run —
/// an instance exists, or the DAG has an event schedule or none at all —
/// else the latest earlier date one of its active cron schedules makes
/// (docs/ARCHITECTURE.md "Dependency rules"). Returns the date and whether
/// it moved.
async fn awaited_batch<C: ConnectionTrait>(
    conn: &C,
    target_dag: i64,
    target_task: i64,
    date: chrono::NaiveDate,
) -> Result<(chrono::NaiveDate, bool), DbErr> {
    use datajump_shared::kinds::ScheduleKind;
    let exists = Ti::find()
        .filter(TiCol::TaskId.eq(target_task))
        .filter(TiCol::BizDate.eq(date))
        .count(conn)
        .await?
        > 0;
    if exists {
        return Ok((date, false));
    }
    let schedules = schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(target_dag))
        .filter(schedule::Column::Active.eq(true))
        .all(conn)
        .await?;
    // Event and dependency schedules may make a run of any date.
    if schedules.is_empty() || schedules.iter().any(|s| s.kind != ScheduleKind::Cron) {
        return Ok((date, false));
    }
    let parsed: Vec<(datajump_cron::CronExpr, chrono_tz::Tz, i32)> = schedules
        .iter()
        .filter_map(|s| {
            let cron = datajump_cron::CronExpr::parse(s.cron_expr.as_deref()?).ok()?;
            let zone = datajump_cron::parse_time_zone(&s.timezone).ok()?;
            Some((cron, zone, s.biz_date_offset_days))
        })
        .collect();
    let rules: Vec<BatchRule<'_>> = parsed
        .iter()
        .map(|(cron, zone, offset_days)| BatchRule {
            cron,
            zone: *zone,
            offset_days: *offset_days,
        })
        .collect();
    Ok(match latest_batch(&rules, date) {
        Some(batch) if batch != date => (batch, true),
        _ => (date, false),
    })
}

/// Satisfies the cross-run dependencies waiting for `parents`' tasks and
/// business dates (one query finds them all): each wait row is deleted by
/// exactly one propagation (row count 1), which counts the result into the
/// waiter and evaluates it if its run is running.
pub(crate) async fn release_waiters<C: ConnectionTrait>(
    conn: &C,
    parents: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    let ended: HashMap<(i64, chrono::NaiveDate), bool> = parents
        .iter()
        .map(|p| ((p.task_id, p.biz_date), p.status.counts_as_success()))
        .collect();
    let mut tasks: Vec<i64> = parents.iter().map(|p| p.task_id).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let mut waits = Vec::new();
    for chunk in tasks.chunks(IN_LIST_MAX) {
        waits.extend(
            dependency_wait::Entity::find()
                .filter(dependency_wait::Column::TargetTaskId.is_in(chunk.iter().copied()))
                .all(conn)
                .await?,
        );
    }
    for wait in waits {
        let Some(&ok) = ended.get(&(wait.target_task_id, wait.target_biz_date)) else {
            continue;
        };
        let deleted = dependency_wait::Entity::delete_many()
            .filter(dependency_wait::Column::Id.eq(wait.id))
            .exec(conn)
            .await?;
        if deleted.rows_affected != 1 {
            continue;
        }
        let Some(waiter) = count_parent(
            conn,
            Ti::update_many().filter(TiCol::Id.eq(wait.waiter_instance_id)),
            wait.dep_type,
            across_runs(ok),
        )
        .await?
        else {
            continue;
        };
        let still_waiting = dependency_wait::Entity::find()
            .filter(dependency_wait::Column::WaiterInstanceId.eq(waiter.id))
            .count(conn)
            .await?
            > 0;
        if !still_waiting && waiter.status == TaskStatus::Pending {
            Ti::update_many()
                .col_expr(
                    TiCol::DeadlineAt,
                    Expr::value(Option::<DateTime<Utc>>::None),
                )
                .filter(TiCol::Id.eq(waiter.id))
                .filter(TiCol::Status.eq(TaskStatus::Pending))
                .exec(conn)
                .await?;
        }
        let run_running = dag_run::Entity::find_by_id(waiter.dag_run_id)
            .one(conn)
            .await?
            .is_some_and(|run| run.status == RunStatus::Running);
        if run_running {
            evaluate_all(conn, std::slice::from_ref(&waiter), now, out, settled).await?;
        }
    }
    Ok(())
}

/// A PENDING instance whose cross-run wait timed out → TIMEOUT, with a
/// reason naming what it waited for, then propagated. Does nothing for an
/// instance with no open waits (the ticker's deadline scan).
pub async fn wait_timed_out(
    db: &DatabaseConnection,
    id: TaskInstanceId,
    now: DateTime<Utc>,
) -> Result<Effects, DbErr> {
    let txn = begin_write(db).await?;
    let effects = end_timed_out_wait(&txn, id.0, now).await?;
    txn.commit().await?;
    Ok(effects)
}

/// What `waits` still wait for, each named by its DAG and task: a UI says
/// that in no language's words, beside the stored English.
async fn awaited<C: ConnectionTrait>(
    conn: &C,
    waits: Vec<dependency_wait::Model>,
) -> Result<Vec<Awaited>, DbErr> {
    let tasks: HashMap<i64, task::Model> = task::Entity::find()
        .filter(task::Column::Id.is_in(waits.iter().map(|w| w.target_task_id)))
        .all(conn)
        .await?
        .into_iter()
        .map(|row| (row.id, row))
        .collect();
    let dags: HashMap<i64, String> = dag::Entity::find()
        .filter(dag::Column::Id.is_in(tasks.values().map(|t| t.dag_id)))
        .all(conn)
        .await?
        .into_iter()
        .map(|row| (row.id, row.name))
        .collect();
    Ok(waits
        .into_iter()
        .map(|wait| {
            let task = tasks.get(&wait.target_task_id).map_or_else(
                || format!("task {}", wait.target_task_id),
                |task| match dags.get(&task.dag_id) {
                    Some(dag) => format!("{dag}/{}", task.name),
                    None => task.name.clone(),
                },
            );
            Awaited {
                task,
                biz_date: wait.target_biz_date,
                words: wait.description,
            }
        })
        .collect())
}

async fn end_timed_out_wait<C: ConnectionTrait>(
    conn: &C,
    id: i64,
    now: DateTime<Utc>,
) -> Result<Effects, DbErr> {
    let mut out = Effects::default();
    let waits = dependency_wait::Entity::find()
        .filter(dependency_wait::Column::WaiterInstanceId.eq(id))
        .all(conn)
        .await?;
    if waits.is_empty() {
        return Ok(out);
    }
    let reason = Reason::WaitTimeout {
        awaited: awaited(conn, waits).await?,
    };
    let failed = update_instance(
        conn,
        with_reason(Ti::update_many(), &reason)
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Timeout.as_str()))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .col_expr(
                TiCol::DeadlineAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(TiCol::Id.eq(id))
            .filter(TaskTransition::WaitTimeout.applies()),
    )
    .await?;
    if let Some(failed) = failed {
        TaskTransition::WaitTimeout.applied_to(std::slice::from_ref(&failed));
        dependency_wait::Entity::delete_many()
            .filter(dependency_wait::Column::WaiterInstanceId.eq(id))
            .exec(conn)
            .await?;
        out.settled.push(failed);
        propagate_all(conn, vec![id], now, &mut out).await?;
    }
    Ok(out)
}

/// Resolves each `offset_day` / `other_dag/task` edge of a new run to the
/// awaited task and batch ([`awaited_batch`]) and links it (see
/// [`link_external_parent`]).
pub(crate) async fn link_external_parents<C: ConnectionTrait>(
    txn: &C,
    plan: &Plan,
    dag: &dag::Model,
    run_id: i64,
    biz_date: chrono::NaiveDate,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let external: Vec<_> = plan.edges.iter().filter(|e| !e.is_same_run()).collect();
    if external.is_empty() {
        return Ok(());
    }
    let instances: std::collections::HashMap<String, task_instance::Model> = Ti::find()
        .filter(TiCol::DagRunId.eq(run_id))
        .all(txn)
        .await?
        .into_iter()
        .map(|i| (i.task_name.clone(), i))
        .collect();
    for edge in external {
        let Some(waiter) = instances.get(&edge.child) else {
            continue;
        };
        let target_dag = match &edge.parent_dag {
            None => Some(dag.clone()),
            // Another project's DAG of that name is, to this one, a DAG
            // that does not exist (docs/SECURITY.md, "Projects").
            Some(name) => {
                dag::Entity::find()
                    .filter(dag::Column::Name.eq(name.as_str()))
                    .filter(dag::Column::ProjectId.eq(dag.project_id))
                    .one(txn)
                    .await?
            }
        };
        let target = match target_dag {
            None => None,
            Some(target_dag) => task::Entity::find()
                .filter(task::Column::DagId.eq(target_dag.id))
                .filter(task::Column::Name.eq(edge.parent.as_str()))
                .one(txn)
                .await?
                .map(|task| (target_dag.id, task.id)),
        };
        let awaited_dag = edge.parent_dag.as_deref().unwrap_or(&dag.name);
        let (awaited_date, description) = match target {
            Some((target_dag, _)) if edge.previous_run => {
                // The latest earlier run; with none, the day before this
                // one, which is before the DAG's first run: counted as met.
                let previous = dag_run::Entity::find()
                    .filter(dag_run::Column::DagId.eq(target_dag))
                    .filter(dag_run::Column::BizDate.lt(biz_date))
                    .order_by_desc(dag_run::Column::BizDate)
                    .one(txn)
                    .await?;
                let date = previous.map_or_else(
                    || datajump_shared::biz_date::shift(biz_date, -1),
                    |run| run.biz_date,
                );
                (
                    date,
                    format!("{awaited_dag}/{} of the previous run ({date})", edge.parent),
                )
            }
            Some((target_dag, target_task)) => {
                let asked = datajump_shared::biz_date::shift(biz_date, edge.offset_day);
                let (date, moved) = awaited_batch(txn, target_dag, target_task, asked).await?;
                let mut description = format!("{awaited_dag}/{} for {date}", edge.parent);
                if moved {
                    description.push_str(&format!(
                        " (the latest batch: no schedule of {awaited_dag} fires for {asked})"
                    ));
                }
                (date, description)
            }
            None => {
                let date = datajump_shared::biz_date::shift(biz_date, edge.offset_day);
                (date, format!("{awaited_dag}/{} for {date}", edge.parent))
            }
        };
        let parent = ExternalParent {
            target,
            biz_date: awaited_date,
            dep_type: edge.dep_type,
            description,
        };
        if target.is_none() {
            warn!(dag_run_id = run_id, awaited = %parent.description, "awaited task does not exist: counted as not succeeded");
        }
        link_external_parent(txn, waiter, &parent, now).await?;
    }
    Ok(())
}
