//! Propagation: exactly-once release of joins (docs/ARCHITECTURE.md,
//! "Propagation").
//!
//! Propagating a terminal instance marks it propagated (a second call is a
//! no-op), counts its result into its children's counters, releases those
//! whose strategy is now decided, counts it off its run and finishes the run
//! at zero. Counters rather than reading the parents' states: under
//! PostgreSQL's READ COMMITTED two parents committed at once would each read
//! the other as still running and neither would release the join. The work
//! is set-based: a batch of completions is counted into its children and
//! runs in a few statements, not a few per completion, because on
//! PostgreSQL every statement is a round trip.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datajump_shared::content::TaskType;
use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::kinds::{DepType, Strategy};
use datajump_shared::metrics::{self, StoredField};
use datajump_shared::strategy::{Decision, ParentResult, decide};
use datajump_shared::{RunId, RunStatus, TaskInstanceId, TaskStatus};
use datajump_store::db::begin_write;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect,
};

use crate::effects::Effects;
use crate::maps::{count_items, expand_all};
use crate::quarantine::quarantine;
use crate::queue::queue_many;
use crate::slots::{lock_dags, pending_roots, start_waiting_run};
use crate::sql::{IN_LIST_MAX, Ti, TiCol, update_chunked, with_reason};
use crate::switches::{decide_all, skip_every_branch};
use crate::transitions::{RunTransition, TaskTransition};
use crate::triggers::owed_fires;
use crate::waits::release_waiters;
use crate::waits::start_awaited_runs;
use datajump_shared::problem::Reason;

/// Propagates terminal instances in one transaction: each is marked
/// propagated (a second call is a no-op), its result counted into its
/// children, which are released when their strategy is decided, and off
/// its run, which finishes at zero. A fixed number of statements per wave
/// however many instances, children and runs it touches: one marks them
/// propagated, one per distinct counter increment counts them into their
/// children and their runs, one per outcome releases the children.
/// Instances a wave settles (SKIPPED, UPSTREAM_FAILED) are the next wave.
pub async fn propagate(
    db: &DatabaseConnection,
    ids: Vec<TaskInstanceId>,
    now: DateTime<Utc>,
) -> Result<Effects, DbErr> {
    let txn = begin_write(db).await?;
    let mut effects = Effects::default();
    let ids = ids.into_iter().map(|id| id.0).collect();
    propagate_all(&txn, ids, now, &mut effects).await?;
    txn.commit().await?;
    Ok(effects)
}

/// A completion message as the resolver received it: a hint to look at its
/// instance, whose terminal row is the truth.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    /// The instance it names.
    pub task_instance_id: TaskInstanceId,
    /// The run it says the instance is in.
    pub dag_run_id: RunId,
}

/// What a completion message turned out to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionCheck {
    /// A real instance of the run it names (propagated now or before).
    Known,
    /// No such instance.
    UnknownInstance,
    /// The instance is in another run than the message says.
    WrongRun,
}

/// Propagates the instances `completions` name, in one transaction, and
/// checks each message against the database. An instance named with the
/// wrong run is still propagated; its message is poison all the same.
pub async fn propagate_completions(
    db: &DatabaseConnection,
    completions: &[Completion],
    now: DateTime<Utc>,
) -> Result<(Vec<CompletionCheck>, Effects), DbErr> {
    let mut effects = Effects::default();
    if completions.is_empty() {
        return Ok((Vec::new(), effects));
    }
    let txn = begin_write(db).await?;
    let ids: Vec<i64> = completions.iter().map(|c| c.task_instance_id.0).collect();
    propagate_all(&txn, ids, now, &mut effects).await?;
    // A completion its propagation counted names a real instance; only the
    // rest (repeats, and ids that may not exist) are looked up, so a batch
    // of fresh completions pays no extra round trip for the check.
    let mut runs: HashMap<i64, i64> = effects.propagated.iter().copied().collect();
    let unseen: Vec<i64> = completions
        .iter()
        .map(|c| c.task_instance_id.0)
        .filter(|id| !runs.contains_key(id))
        .collect();
    if !unseen.is_empty() {
        // Only what the check needs: the rows' specs and children can be large.
        runs.extend(
            Ti::find()
                .select_only()
                .columns([TiCol::Id, TiCol::DagRunId])
                .filter(TiCol::Id.is_in(unseen))
                .into_tuple::<(i64, i64)>()
                .all(&txn)
                .await?,
        );
    }
    txn.commit().await?;
    let checks = completions
        .iter()
        .map(|c| match runs.get(&c.task_instance_id.0) {
            None => CompletionCheck::UnknownInstance,
            Some(run) if *run != c.dag_run_id.0 => CompletionCheck::WrongRun,
            Some(_) => CompletionCheck::Known,
        })
        .collect();
    Ok((checks, effects))
}

pub(crate) async fn propagate_all<C: ConnectionTrait>(
    conn: &C,
    mut work: Vec<i64>,
    now: DateTime<Utc>,
    out: &mut Effects,
) -> Result<(), DbErr> {
    while !work.is_empty() {
        work.sort_unstable();
        work.dedup();
        let parents = update_chunked(conn, &work, |chunk| {
            Ti::update_many()
                .col_expr(TiCol::Propagated, Expr::value(true))
                .filter(TiCol::Id.is_in(chunk.iter().copied()))
                .filter(TiCol::Propagated.eq(false))
                .filter(TiCol::Status.is_in(TaskStatus::TERMINAL))
        })
        .await?;
        let parents: Vec<&task_instance::Model> = parents.iter().collect();
        work = propagate_wave(conn, &parents, now, out).await?;
    }
    Ok(())
}

/// [`propagate_all`] for terminal instances the caller's own statement has
/// just marked propagated — a runner's attempt ends, marked by the update
/// that ended them — so the first wave costs no statement of its own.
pub(crate) async fn propagate_marked<C: ConnectionTrait>(
    conn: &C,
    marked: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
) -> Result<(), DbErr> {
    let next = propagate_wave(conn, marked, now, out).await?;
    propagate_all(conn, next, now, out).await
}

/// Counts one wave of `parents`, already marked propagated, into their
/// children, waiters and runs; returns the instances it settled, the next
/// wave.
async fn propagate_wave<C: ConnectionTrait>(
    conn: &C,
    parents: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
) -> Result<Vec<i64>, DbErr> {
    out.propagated
        .extend(parents.iter().map(|p| (p.id, p.dag_run_id)));
    let mut next = Vec::new();
    // An item of a mapped task counts into its aggregate alone.
    let (items, parents): (Vec<&task_instance::Model>, Vec<&task_instance::Model>) =
        parents.iter().copied().partition(|p| p.is_map_item());
    count_items(conn, &items, now, out, &mut next).await?;
    count_into_children(conn, &parents, now, out, &mut next).await?;
    release_waiters(conn, &parents, now, out, &mut next).await?;
    count_off_runs(conn, &parents, now, out, &mut next).await?;
    Ok(next)
}

/// Applies the strategy's decision to each PENDING instance of `rows`, a
/// statement per outcome rather than per row: QUEUED if it may run and is
/// enabled (decided if a SWITCH, expanded if mapped), SKIPPED if disabled,
/// UPSTREAM_FAILED if its parents failed it. An item of a mapped task has
/// no strategy: its map releases it ([`crate::maps`]).
/// The ids of instances that became terminal are pushed to `settled` for
/// propagation.
pub(crate) async fn evaluate_all<C: ConnectionTrait>(
    conn: &C,
    rows: &[task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    let (mut run, mut disabled, mut upstream_failed) = (Vec::new(), Vec::new(), Vec::new());
    let (mut switches, mut maps) = (Vec::new(), Vec::new());
    // Skipped by control flow, by strategy: each has its own reason.
    let mut flow_skipped: HashMap<Strategy, Vec<i64>> = HashMap::new();
    for row in rows
        .iter()
        .filter(|r| r.status == TaskStatus::Pending && !r.is_map_item())
    {
        let task = match row.spec.read() {
            Ok(spec) => &spec.task,
            Err(e) => {
                quarantine(conn, row, e, now, out, settled).await?;
                continue;
            }
        };
        match decide(task.strategy, &row.parent_counts()) {
            Decision::Wait => {}
            Decision::Run if task.enabled && task.task_type == TaskType::Switch => {
                switches.push(row);
            }
            Decision::Run if task.enabled && task.map.is_some() => maps.push(row),
            Decision::Run if task.enabled => run.push(row.id),
            Decision::Run => disabled.push(row.id),
            Decision::UpstreamFailed => upstream_failed.push(row.id),
            Decision::Skip => flow_skipped.entry(task.strategy).or_default().push(row.id),
        }
    }
    out.queued
        .extend(queue_many(conn, &run, TaskTransition::Release, now).await?);
    decide_all(conn, &switches, now, out, settled).await?;
    expand_all(conn, &maps, now, out, settled).await?;
    for (ids, transition, to, reason) in [
        (
            disabled,
            TaskTransition::Skip,
            TaskStatus::Skipped,
            Reason::Disabled,
        ),
        (
            upstream_failed,
            TaskTransition::UpstreamFail,
            TaskStatus::UpstreamFailed,
            Reason::UpstreamFailed,
        ),
    ] {
        let terminal = settle_many(conn, &ids, transition, to, &reason, false, now).await?;
        settled.extend(terminal.iter().map(|t| t.id));
        // A disabled SWITCH chooses nothing: none of its branches runs.
        let disabled_switches: Vec<task_instance::Model> = terminal
            .iter()
            .filter(|t| t.status == TaskStatus::Skipped && is_switch(t))
            .cloned()
            .collect();
        skip_every_branch(conn, &disabled_switches, now, out, settled).await?;
        out.settled.extend(terminal);
    }
    for (strategy, ids) in flow_skipped {
        let reason = Reason::FlowSkipped { strategy };
        let terminal = settle_many(
            conn,
            &ids,
            TaskTransition::Skip,
            TaskStatus::Skipped,
            &reason,
            true,
            now,
        )
        .await?;
        settled.extend(terminal.iter().map(|t| t.id));
        out.settled.extend(terminal);
    }
    Ok(())
}

/// Children of an instance in its run: `(task_id, edge type)`. A list
/// that does not read is logged and counted, and read as none: the
/// instance has ended, so there is nothing left to quarantine, and its
/// children wait for the run's timeout or an operator (docs/ARCHITECTURE.md
/// "Stored JSON").
pub(crate) fn children(row: &task_instance::Model) -> &[(i64, DepType)] {
    match row.children.read() {
        Ok(children) => children,
        Err(e) => {
            tracing::error!(
                task_instance_id = row.id,
                dag_run_id = row.dag_run_id,
                error = %e,
                "stored children do not read: none of them is counted"
            );
            metrics::unreadable_stored_json(StoredField::InstanceChildren);
            &[]
        }
    }
}

/// Whether `row` is a SWITCH's instance.
fn is_switch(row: &task_instance::Model) -> bool {
    row.spec
        .read()
        .is_ok_and(|spec| spec.task.task_type == TaskType::Switch)
}

/// PENDING → SKIPPED or UPSTREAM_FAILED: terminal without running;
/// `by_flow` for a SKIPPED its strategy decided (B to its children).
pub(crate) async fn settle_many<C: ConnectionTrait>(
    conn: &C,
    ids: &[i64],
    transition: TaskTransition,
    to: TaskStatus,
    reason: &Reason,
    by_flow: bool,
    now: DateTime<Utc>,
) -> Result<Vec<task_instance::Model>, DbErr> {
    let settled = update_chunked(conn, ids, |chunk| {
        with_reason(Ti::update_many(), reason)
            .col_expr(TiCol::Status, Expr::value(to.as_str()))
            .col_expr(TiCol::FlowSkipped, Expr::value(by_flow))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .filter(TiCol::Id.is_in(chunk.iter().copied()))
            .filter(transition.applies())
    })
    .await?;
    transition.applied_to(&settled);
    Ok(settled)
}

/// RUNNING → SUCCESS (no instance failed) or FAILED for each run of `runs`
/// with no pending instances, one statement per final status; returns the
/// runs finished, each once however many batches race to finish it.
async fn finish_runs<C: ConnectionTrait>(
    conn: &C,
    runs: &[dag_run::Model],
    now: DateTime<Utc>,
) -> Result<Vec<dag_run::Model>, DbErr> {
    let mut finished = Vec::new();
    for status in [RunStatus::Success, RunStatus::Failed] {
        let ids: Vec<i64> = runs
            .iter()
            .filter(|run| run.pending_instances == 0)
            .filter(|run| (run.failed_instances == 0) == (status == RunStatus::Success))
            .map(|run| run.id)
            .collect();
        for chunk in ids.chunks(IN_LIST_MAX) {
            finished.extend(
                dag_run::Entity::update_many()
                    .col_expr(dag_run::Column::Status, Expr::value(status.as_str()))
                    .col_expr(dag_run::Column::FinishedAt, Expr::value(now))
                    .filter(dag_run::Column::Id.is_in(chunk.iter().copied()))
                    .filter(RunTransition::Finish.applies())
                    .exec_with_returning(conn)
                    .await?,
            );
        }
    }
    RunTransition::Finish.applied_to(&finished);
    Ok(finished)
}

/// What one wave's parents add to one child's counters.
#[derive(Debug, Default)]
struct ParentResults {
    ended: i32,
    strong: StrongResults,
    latest_end: Option<DateTime<Utc>>,
}

/// STRONG parents counted by how they ended: S, B, F.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct StrongResults {
    pub(crate) succeeded: i32,
    pub(crate) skipped: i32,
    pub(crate) failed: i32,
}

impl StrongResults {
    /// One parent's result if it is STRONG, nothing if WEAK.
    pub(crate) fn of(dep_type: DepType, result: ParentResult) -> StrongResults {
        let mut counted = StrongResults::default();
        if dep_type == DepType::Strong {
            counted.add(result);
        }
        counted
    }

    pub(crate) fn add(&mut self, result: ParentResult) {
        match result {
            ParentResult::Succeeded => self.succeeded += 1,
            ParentResult::Skipped => self.skipped += 1,
            ParentResult::Failed => self.failed += 1,
        }
    }
}

/// Counts `parents` into their children, one UPDATE per distinct increment
/// (almost always one: each child has one parent ending, a strong success),
/// and releases the children whose strategy is now decided.
async fn count_into_children<C: ConnectionTrait>(
    conn: &C,
    parents: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    use std::collections::BTreeMap;
    let mut counted: BTreeMap<(i64, i64), ParentResults> = BTreeMap::new();
    for parent in parents {
        // Propagated parents are terminal; a row that is not counts as F.
        let result = parent.as_parent().unwrap_or(ParentResult::Failed);
        for &(child_task_id, dep_type) in children(parent) {
            let child = counted
                .entry((parent.dag_run_id, child_task_id))
                .or_default();
            child.ended += 1;
            if dep_type == DepType::Strong {
                child.strong.add(result);
            }
            child.latest_end = Ord::max(child.latest_end, parent.finished_at);
        }
    }
    let mut by_increment: BTreeMap<(i32, StrongResults), Vec<(i64, i64)>> = BTreeMap::new();
    for (key, results) in &counted {
        by_increment
            .entry((results.ended, results.strong))
            .or_default()
            .push(*key);
    }
    let mut rows = Vec::new();
    for ((ended, strong), keys) in by_increment {
        for chunk in keys.chunks(IN_LIST_MAX) {
            let mut by_run: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for (run, task) in chunk {
                by_run.entry(*run).or_default().push(*task);
            }
            let selected =
                by_run
                    .into_iter()
                    .fold(sea_orm::Condition::any(), |any, (run, tasks)| {
                        any.add(TiCol::DagRunId.eq(run).and(TiCol::TaskId.is_in(tasks)))
                    });
            let planned = Ti::update_many()
                .filter(selected)
                .filter(TiCol::MapIndex.eq(task_instance::PLANNED));
            rows.extend(count_parents(conn, planned, ended, strong).await?);
        }
    }
    let first_queued = out.queued.len();
    evaluate_all(conn, &rows, now, out, settled).await?;
    for child in &out.queued[first_queued..] {
        let parent_end = counted
            .get(&(child.dag_run_id, child.task_id))
            .and_then(|c| c.latest_end);
        if let (Some(ended), Some(queued)) = (parent_end, child.queued_at) {
            out.edges.push((ended, queued));
        }
    }
    Ok(())
}

/// Counts ended parents into the instances `update` selects: `ended` fewer
/// pending, and `strong` more STRONG results of each kind.
async fn count_parents<C: ConnectionTrait>(
    conn: &C,
    update: sea_orm::UpdateMany<Ti>,
    ended: i32,
    strong: StrongResults,
) -> Result<Vec<task_instance::Model>, DbErr> {
    update
        .col_expr(
            TiCol::PendingParents,
            Expr::col(TiCol::PendingParents).sub(ended),
        )
        .col_expr(
            TiCol::StrongOk,
            Expr::col(TiCol::StrongOk).add(strong.succeeded),
        )
        .col_expr(
            TiCol::StrongSkipped,
            Expr::col(TiCol::StrongSkipped).add(strong.skipped),
        )
        .col_expr(
            TiCol::StrongFailed,
            Expr::col(TiCol::StrongFailed).add(strong.failed),
        )
        .exec_with_returning(conn)
        .await
}

/// Counts one parent's result into the instance `update` selects.
pub(crate) async fn count_parent<C: ConnectionTrait>(
    conn: &C,
    update: sea_orm::UpdateMany<Ti>,
    dep_type: DepType,
    result: ParentResult,
) -> Result<Option<task_instance::Model>, DbErr> {
    let rows = count_parents(conn, update, 1, StrongResults::of(dep_type, result)).await?;
    Ok(rows.into_iter().next())
}

/// Counts `parents` off their runs, one UPDATE per distinct decrement, and
/// finishes each run whose count reaches zero; a finished run's slot goes
/// to the DAG's oldest waiting run, whose roots are released.
async fn count_off_runs<C: ConnectionTrait>(
    conn: &C,
    parents: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    use std::collections::BTreeMap;
    let mut per_run: BTreeMap<i64, (i32, i32)> = BTreeMap::new();
    for parent in parents {
        let counts = per_run.entry(parent.dag_run_id).or_default();
        counts.0 += 1;
        counts.1 += i32::from(parent.fails_its_run());
    }
    let mut by_decrement: BTreeMap<(i32, i32), Vec<i64>> = BTreeMap::new();
    for (run, counts) in per_run {
        by_decrement.entry(counts).or_default().push(run);
    }
    let mut runs = Vec::new();
    for ((ended, failed), run_ids) in by_decrement {
        for chunk in run_ids.chunks(IN_LIST_MAX) {
            runs.extend(
                dag_run::Entity::update_many()
                    .col_expr(
                        dag_run::Column::PendingInstances,
                        Expr::col(dag_run::Column::PendingInstances).sub(ended),
                    )
                    .col_expr(
                        dag_run::Column::FailedInstances,
                        Expr::col(dag_run::Column::FailedInstances).add(failed),
                    )
                    .filter(dag_run::Column::Id.is_in(chunk.iter().copied()))
                    .exec_with_returning(conn)
                    .await?,
            );
        }
    }
    let finished = finish_runs(conn, &runs, now).await?;
    out.finished_runs
        .extend(finished.iter().map(|run| (run.id, run.status)));
    out.fires.extend(owed_fires(conn, &finished).await?);
    // A finished run frees a slot of its DAG; most DAGs have no run waiting
    // for one, so they are found in one query rather than asked one by one.
    // Locked first: a run created QUEUED concurrently is then either seen
    // here or created after this commit, seeing these runs finished.
    let mut dags: Vec<i64> = finished.iter().map(|run| run.dag_id).collect();
    dags.sort_unstable();
    dags.dedup();
    lock_dags(conn, &dags).await?;
    let mut waiting = std::collections::HashSet::new();
    for chunk in dags.chunks(IN_LIST_MAX) {
        waiting.extend(
            dag_run::Entity::find()
                .select_only()
                .column(dag_run::Column::DagId)
                .distinct()
                .filter(dag_run::Column::DagId.is_in(chunk.iter().copied()))
                .filter(dag_run::Column::Status.eq(RunStatus::Queued))
                .into_tuple::<i64>()
                .all(conn)
                .await?,
        );
    }
    for run in finished.iter().filter(|run| waiting.contains(&run.dag_id)) {
        if let Some(started) = start_waiting_run(conn, run.dag_id, now).await? {
            let mut runs = vec![started];
            runs.extend(start_awaited_runs(conn, &runs, now).await?);
            out.started_runs.extend(&runs);
            let roots = pending_roots(conn, &runs).await?;
            evaluate_all(conn, &roots, now, out, settled).await?;
        }
    }
    Ok(())
}
