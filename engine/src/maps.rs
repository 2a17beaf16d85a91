//! Mapped tasks: one instance per item of a list, at most `max_parallel`
//! queued or running at once (docs/ARCHITECTURE.md, "Map").
//!
//! A mapped task's planned instance is its items' aggregate. Where another
//! task would be released, its list is read and checked
//! ([`datajump_shared::map::items_of`]), its items are inserted — the first
//! `max_parallel` QUEUED, the rest PENDING — and it goes RUNNING with no
//! runner; an empty list ends it SKIPPED by control flow and an unusable one
//! FAILED, saying why. The conditional PENDING → RUNNING comes first, so two
//! resolvers expand it once.
//!
//! An item's end counts into its aggregate alone, never its run or the
//! task's children, by one atomic counter update. That update also orders
//! the releases: under PostgreSQL's READ COMMITTED a second transaction
//! ending an item of the same map waits on the aggregate's row, then sees
//! what the first released. The transaction that counts an end tops the
//! map's running items back up to `max_parallel`, the next PENDING ones by
//! index; the one that counts the last ends the aggregate SUCCESS, or FAILED
//! if any item ended F, and the aggregate propagates as any task does.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use datajump_shared::entities::{StoredJson, large_output, task_instance};
use datajump_shared::map::{MapItem, MapSource, MapSpec, MapValue, items_of, items_of_text};
use datajump_shared::outputs::Outputs;
use datajump_shared::plan::InstanceSpec;
use datajump_shared::problem::Reason;
use datajump_shared::strategy::ParentResult;
use datajump_shared::{TaskStatus, metrics};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

use crate::effects::Effects;
use crate::propagation::settle_many;
use crate::queue::{queue_many, set_queued};
use crate::sql::{IN_LIST_MAX, INSERT_CHUNK, Ti, TiCol, update_instance, with_reason};
use crate::transitions::TaskTransition;

/// Statuses in which an item holds one of its map's `max_parallel` places.
const HOLDS_A_PLACE: &[TaskStatus] = &[
    TaskStatus::Queued,
    TaskStatus::Running,
    TaskStatus::UpForRetry,
    TaskStatus::UpForReschedule,
];

/// Expands each mapped task of `rows` (PENDING, their strategy says run,
/// their task enabled and mapped). Each that ends at once (an empty or
/// unusable list) is pushed to `settled` for propagation.
pub(crate) async fn expand_all<C: ConnectionTrait>(
    conn: &C,
    rows: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    for row in rows {
        // Read by the caller to decide it; a spec that does not read was
        // quarantined there.
        let Ok(spec) = row.spec.read() else { continue };
        let Some(map) = &spec.task.map else { continue };
        if row.map_items.is_some() {
            resume(conn, row, now, out, settled).await?;
            continue;
        }
        match list(conn, row, map).await? {
            Ok(items) if items.is_empty() => {
                let reason = Reason::MapEmpty {
                    over: map.over.written(),
                };
                let skipped = settle_many(
                    conn,
                    &[row.id],
                    TaskTransition::Skip,
                    TaskStatus::Skipped,
                    &reason,
                    true,
                    now,
                )
                .await?;
                settled.extend(skipped.iter().map(|row| row.id));
                out.settled.extend(skipped);
            }
            Ok(items) => expand(conn, row, spec, map, items, now, out).await?,
            Err(reason) => {
                let failed = update_instance(
                    conn,
                    with_reason(Ti::update_many(), &reason)
                        .col_expr(TiCol::Status, Expr::value(TaskStatus::Failed.as_str()))
                        .col_expr(TiCol::StartedAt, Expr::value(now))
                        .col_expr(TiCol::FinishedAt, Expr::value(now))
                        .filter(TiCol::Id.eq(row.id))
                        .filter(TaskTransition::Expand.applies()),
                )
                .await?;
                if let Some(failed) = failed {
                    TaskTransition::Expand.applied(TaskStatus::Pending, failed.status);
                    tracing::warn!(dag_run_id = failed.dag_run_id, task_instance_id = failed.id, task = %failed.task_name, reason = %reason.text(), "map list unusable");
                    settled.push(failed.id);
                    out.settled.push(failed);
                }
            }
        }
    }
    Ok(())
}

/// The list `row`'s map runs over, read now: from the file, a parameter of
/// the run, or an output of a task before it in the run. `Err` is the
/// reason the task fails with.
async fn list<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    map: &MapSpec,
) -> Result<Result<Vec<MapValue>, Reason>, DbErr> {
    let over = map.over.written();
    let unusable = |error: String| Reason::MapList {
        over: over.clone(),
        error,
    };
    let text = match &map.over {
        MapSource::Literal { items } => {
            let written = serde_json::to_value(items).unwrap_or_default();
            return Ok(items_of(&written, map.max_items).map_err(|e| unusable(e.to_string())));
        }
        MapSource::Param { name } => match row.spec.read().ok().and_then(|s| s.params.get(name)) {
            Some(value) => value.clone(),
            None => {
                return Ok(Err(unusable(format!(
                    "names parameter '{name}', which the run does not have"
                ))));
            }
        },
        MapSource::Output { task, name } => match output(conn, row, task, name).await? {
            Some(value) => value,
            None => {
                return Ok(Err(unusable(format!(
                    "was not declared: task '{task}' ended without output '{name}' \
                     (##dj-output, $DJ_OUTPUT or $DJ_OUTPUT_JSON/{name}.json)"
                ))));
            }
        },
    };
    Ok(items_of_text(&text, map.max_items).map_err(|e| unusable(e.to_string())))
}

/// Output `name` of `task` in `row`'s run: a small output it declared, or
/// else its large output of that name (`$DJ_OUTPUT_JSON/<name>.json`).
async fn output<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    task: &str,
    name: &str,
) -> Result<Option<String>, DbErr> {
    let declared: Option<(i64, Option<StoredJson<Outputs>>)> = Ti::find()
        .select_only()
        .columns([TiCol::Id, TiCol::Outputs])
        .filter(TiCol::DagRunId.eq(row.dag_run_id))
        .filter(TiCol::TaskName.eq(task))
        .filter(TiCol::MapIndex.eq(task_instance::PLANNED))
        .into_tuple()
        .one(conn)
        .await?;
    let Some((id, outputs)) = declared else {
        return Ok(None);
    };
    if let Some(value) =
        outputs.and_then(|outputs| outputs.read().ok().and_then(|o| o.get(name).cloned()))
    {
        return Ok(Some(value));
    }
    large_output::Entity::find()
        .select_only()
        .column(large_output::Column::Value)
        .filter(large_output::Column::TaskInstanceId.eq(id))
        .filter(large_output::Column::Name.eq(name))
        .into_tuple()
        .one(conn)
        .await
}

/// PENDING → RUNNING for the aggregate `row`, and its items inserted, the
/// first `max_parallel` QUEUED (into `out`); nothing if another
/// transaction expanded it first.
async fn expand<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    spec: &InstanceSpec,
    map: &MapSpec,
    items: Vec<MapValue>,
    now: DateTime<Utc>,
    out: &mut Effects,
) -> Result<(), DbErr> {
    let count = i32::try_from(items.len()).unwrap_or(i32::MAX);
    let expanded = update_instance(
        conn,
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Running.as_str()))
            .col_expr(TiCol::StartedAt, Expr::value(now))
            .col_expr(TiCol::MapItems, Expr::value(Some(count)))
            .filter(TiCol::Id.eq(row.id))
            .filter(TaskTransition::Expand.applies()),
    )
    .await?;
    let Some(aggregate) = expanded else {
        return Ok(());
    };
    TaskTransition::Expand.applied(TaskStatus::Pending, TaskStatus::Running);
    tracing::info!(dag_run_id = aggregate.dag_run_id, task_instance_id = aggregate.id, task = %aggregate.task_name, items = count, max_parallel = map.max_parallel, "map expanded");
    let places = usize::try_from(map.max_parallel).unwrap_or(usize::MAX);
    let mut queued = Vec::with_capacity(places.min(items.len()));
    let mut pending = Vec::with_capacity(items.len().saturating_sub(places));
    for (index, value) in items.into_iter().enumerate() {
        let index = i32::try_from(index).unwrap_or(i32::MAX);
        let mut item = item_row(&aggregate, spec, MapItem { index, value }, now);
        if queued.len() < places {
            set_queued(&mut item, &spec.task, now);
            queued.push(item);
        } else {
            pending.push(item);
        }
    }
    let mut queued = queued.into_iter();
    while queued.len() > 0 {
        let rows = Ti::insert_many(queued.by_ref().take(INSERT_CHUNK))
            .exec_with_returning(conn)
            .await?;
        for _ in &rows {
            TaskTransition::Release.applied(TaskStatus::Pending, TaskStatus::Queued);
        }
        out.queued.extend(rows);
    }
    let mut pending = pending.into_iter();
    while pending.len() > 0 {
        Ti::insert_many(pending.by_ref().take(INSERT_CHUNK))
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

/// PENDING → RUNNING for an aggregate that kept its items when it was
/// reset (`rerun --failed-only`: its F items are PENDING again), and its
/// places filled by index; nothing if another transaction resumed it first.
async fn resume<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    let resumed = update_instance(
        conn,
        Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(TaskStatus::Running.as_str()))
            .col_expr(TiCol::StartedAt, Expr::value(now))
            .filter(TiCol::Id.eq(row.id))
            .filter(TaskTransition::Expand.applies()),
    )
    .await?;
    let Some(aggregate) = resumed else {
        return Ok(());
    };
    TaskTransition::Expand.applied(TaskStatus::Pending, TaskStatus::Running);
    if aggregate.map_ended >= aggregate.map_items.unwrap_or(0) {
        end_aggregate(conn, &aggregate, now, out, settled).await
    } else {
        release_next(conn, &aggregate, now, out).await
    }
}

/// The row of one item of `aggregate`: PENDING, with no parents or
/// children of its own, its spec the aggregate's with the item.
fn item_row(
    aggregate: &task_instance::Model,
    spec: &InstanceSpec,
    item: MapItem,
    now: DateTime<Utc>,
) -> task_instance::ActiveModel {
    let index = item.index;
    let spec = InstanceSpec {
        map_item: Some(item),
        ..spec.clone()
    };
    task_instance::ActiveModel {
        dag_run_id: Set(aggregate.dag_run_id),
        dag_id: Set(aggregate.dag_id),
        task_id: Set(aggregate.task_id),
        task_name: Set(aggregate.task_name.clone()),
        biz_date: Set(aggregate.biz_date),
        trigger_type: Set(aggregate.trigger_type),
        status: Set(TaskStatus::Pending),
        attempt: Set(0),
        retries_used: Set(0),
        owner: Set(None),
        queue: Set(aggregate.queue.clone()),
        priority: Set(aggregate.priority),
        deadline_at: Set(None),
        pending_parents: Set(0),
        strong_parents: Set(0),
        strong_ok: Set(0),
        strong_failed: Set(0),
        strong_skipped: Set(0),
        flow_skipped: Set(false),
        propagated: Set(false),
        children: Set(StoredJson::new(Vec::new())),
        spec: Set(StoredJson::new(spec)),
        reason: Set(None),
        created_at: Set(now),
        queued_at: Set(None),
        started_at: Set(None),
        finished_at: Set(None),
        map_index: Set(index),
        ..Default::default()
    }
}

/// Counts ended `items`, already marked propagated, into their aggregates,
/// one UPDATE per distinct increment; then, for each aggregate still
/// RUNNING, ends it if that was its last item (pushed to `settled`) or
/// releases its next items into `out`.
pub(crate) async fn count_items<C: ConnectionTrait>(
    conn: &C,
    items: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    if items.is_empty() {
        return Ok(());
    }
    let mut per_map: BTreeMap<(i64, i64), (i32, i32)> = BTreeMap::new();
    for item in items {
        let counts = per_map.entry((item.dag_run_id, item.task_id)).or_default();
        counts.0 += 1;
        // Propagated items are terminal; a row that is not counts as F.
        counts.1 +=
            i32::from(item.as_parent().unwrap_or(ParentResult::Failed) == ParentResult::Failed);
    }
    let mut by_increment: BTreeMap<(i32, i32), Vec<(i64, i64)>> = BTreeMap::new();
    for (key, counts) in per_map {
        by_increment.entry(counts).or_default().push(key);
    }
    let mut aggregates = Vec::new();
    for ((ended, failed), keys) in by_increment {
        for chunk in keys.chunks(IN_LIST_MAX) {
            let selected = chunk.iter().fold(Condition::any(), |any, (run, task)| {
                any.add(TiCol::DagRunId.eq(*run).and(TiCol::TaskId.eq(*task)))
            });
            aggregates.extend(
                Ti::update_many()
                    .col_expr(TiCol::MapEnded, Expr::col(TiCol::MapEnded).add(ended))
                    .col_expr(TiCol::MapFailed, Expr::col(TiCol::MapFailed).add(failed))
                    .filter(selected)
                    .filter(TiCol::MapIndex.eq(task_instance::PLANNED))
                    .exec_with_returning(conn)
                    .await?,
            );
        }
    }
    // A killed or marked aggregate keeps counting, and releases nothing.
    for aggregate in aggregates
        .iter()
        .filter(|a| a.status == TaskStatus::Running)
    {
        if aggregate.map_ended >= aggregate.map_items.unwrap_or(0) {
            end_aggregate(conn, aggregate, now, out, settled).await?;
        } else {
            release_next(conn, aggregate, now, out).await?;
        }
    }
    Ok(())
}

/// RUNNING → SUCCESS, or FAILED when an item ended F, for an aggregate
/// whose last item was counted; pushed to `settled` for propagation.
async fn end_aggregate<C: ConnectionTrait>(
    conn: &C,
    aggregate: &task_instance::Model,
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    let failed = aggregate.map_failed > 0;
    let status = if failed {
        TaskStatus::Failed
    } else {
        TaskStatus::Success
    };
    let mut update = Ti::update_many()
        .col_expr(TiCol::Status, Expr::value(status.as_str()))
        .col_expr(TiCol::FinishedAt, Expr::value(now))
        .filter(TiCol::Id.eq(aggregate.id))
        .filter(TaskTransition::EndMap.applies());
    if failed {
        let reason = Reason::MapItemsFailed {
            failed: aggregate.map_failed,
            items: aggregate.map_items.unwrap_or(0),
        };
        update = with_reason(update, &reason);
    }
    if let Some(ended) = update_instance(conn, update).await? {
        TaskTransition::EndMap.applied(TaskStatus::Running, ended.status);
        metrics::attempt_ended(ended.status);
        settled.push(ended.id);
        out.settled.push(ended);
    }
    Ok(())
}

/// Releases the next PENDING items of `aggregate`, by index, until as many
/// hold a place as its `max_parallel` allows.
async fn release_next<C: ConnectionTrait>(
    conn: &C,
    aggregate: &task_instance::Model,
    now: DateTime<Utc>,
    out: &mut Effects,
) -> Result<(), DbErr> {
    let max_parallel = aggregate
        .spec
        .read()
        .ok()
        .and_then(|spec| spec.task.map.as_ref().map(|map| map.max_parallel))
        .unwrap_or(1);
    let items = || {
        Ti::find()
            .filter(TiCol::DagRunId.eq(aggregate.dag_run_id))
            .filter(TiCol::TaskId.eq(aggregate.task_id))
            .filter(TiCol::MapIndex.gte(0))
    };
    let holding = items()
        .filter(TiCol::Status.is_in(HOLDS_A_PLACE.iter().copied()))
        .count(conn)
        .await?;
    let free = u64::from(max_parallel).saturating_sub(holding);
    if free == 0 {
        return Ok(());
    }
    let next: Vec<i64> = items()
        .select_only()
        .column(TiCol::Id)
        .filter(TiCol::Status.eq(TaskStatus::Pending))
        .order_by_asc(TiCol::MapIndex)
        .limit(free)
        .into_tuple()
        .all(conn)
        .await?;
    out.queued
        .extend(queue_many(conn, &next, TaskTransition::Release, now).await?);
    Ok(())
}
