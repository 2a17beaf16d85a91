//! What must hold of the rows after every engine command, as pure
//! functions: each returns the violations it finds, described, so a test
//! prints every broken rule at once.

use std::collections::{BTreeMap, HashMap};

use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::{RunStatus, TaskStatus};

/// Every violation of the rules below in the installation's rows.
pub fn violations(runs: &[dag_run::Model], instances: &[task_instance::Model]) -> Vec<String> {
    let mut found = Vec::new();
    found.extend(counters_match_the_parents(instances));
    found.extend(runs_end_when_nothing_can_change(runs, instances));
    found.extend(ended_instances_are_complete(instances));
    found.extend(maps_count_their_items(instances));
    found
}

/// The instances of one run by task id.
fn by_run(
    instances: &[task_instance::Model],
) -> BTreeMap<i64, HashMap<i64, &task_instance::Model>> {
    let mut runs: BTreeMap<i64, HashMap<i64, &task_instance::Model>> = BTreeMap::new();
    for row in instances.iter().filter(|row| !row.is_map_item()) {
        runs.entry(row.dag_run_id)
            .or_default()
            .insert(row.task_id, row);
    }
    runs
}

/// `(child task id, STRONG?)` of each same-run child of `row`.
fn children(row: &task_instance::Model) -> Vec<(i64, bool)> {
    serde_json::from_value::<Vec<(i64, String)>>(row.children.json().clone())
        .unwrap_or_default()
        .into_iter()
        .map(|(child, dep_type)| (child, dep_type != "WEAK"))
        .collect()
}

/// A child that has not been released counts, in `pending_parents`, the
/// same-run parents not yet propagated, and in `strong_ok`,
/// `strong_skipped` and `strong_failed` the propagated STRONG parents that
/// ended S, B and F: a recount from the parents' rows equals the counters.
pub fn counters_match_the_parents(instances: &[task_instance::Model]) -> Vec<String> {
    use datajump_shared::strategy::ParentResult;
    let mut found = Vec::new();
    for (run, tasks) in by_run(instances) {
        // (pending, S, B, F) recounted per child.
        let mut recount: HashMap<i64, (i32, i32, i32, i32)> = HashMap::new();
        for parent in tasks.values() {
            for (child, strong) in children(parent) {
                let entry = recount.entry(child).or_default();
                if !parent.propagated {
                    entry.0 += 1;
                } else if strong {
                    match parent.as_parent() {
                        Some(ParentResult::Succeeded) => entry.1 += 1,
                        Some(ParentResult::Skipped) => entry.2 += 1,
                        _ => entry.3 += 1,
                    }
                }
            }
        }
        for (task, row) in &tasks {
            // Counters mean nothing once an operator reset or marked the
            // instance's parents by hand; they are checked while it waits.
            if row.status != TaskStatus::Created && row.status != TaskStatus::Pending {
                continue;
            }
            let expected = recount.get(task).copied().unwrap_or_default();
            let kept = (
                row.pending_parents,
                row.strong_ok,
                row.strong_skipped,
                row.strong_failed,
            );
            if kept != expected {
                found.push(format!(
                    "run {run}, task '{}' ({:?}): pending/S/B/F are {kept:?}, its parents say {expected:?}",
                    row.task_name, row.status
                ));
            }
        }
    }
    found
}

/// A run is terminal exactly when every instance of it is terminal and
/// propagated; a RUNNING run has some instance that can still change.
pub fn runs_end_when_nothing_can_change(
    runs: &[dag_run::Model],
    instances: &[task_instance::Model],
) -> Vec<String> {
    let tasks = by_run(instances);
    runs.iter()
        .filter(|run| run.status != RunStatus::Queued)
        .filter_map(|run| {
            let rows = tasks.get(&run.id)?;
            let settled = rows
                .values()
                .all(|row| row.status.is_terminal() && row.propagated);
            (settled != run.status.is_terminal()).then(|| {
                let open: Vec<String> = rows
                    .values()
                    .filter(|row| !(row.status.is_terminal() && row.propagated))
                    .map(|row| format!("{}={:?}", row.task_name, row.status))
                    .collect();
                format!(
                    "run {} is {:?} while its unsettled instances are {open:?}",
                    run.id, run.status
                )
            })
        })
        .collect()
}

/// A mapped task's aggregate has made `map_items` items; `map_ended` and
/// `map_failed` count its propagated items and those that ended F; no
/// more than `max_parallel` of them hold a place (QUEUED, RUNNING or
/// waiting for a retry or a check), and none is left PENDING while a
/// place is free; once it ended as its items did, all of them have.
pub fn maps_count_their_items(instances: &[task_instance::Model]) -> Vec<String> {
    use datajump_shared::strategy::ParentResult;
    let mut items: HashMap<(i64, i64), Vec<&task_instance::Model>> = HashMap::new();
    for item in instances.iter().filter(|row| row.is_map_item()) {
        items
            .entry((item.dag_run_id, item.task_id))
            .or_default()
            .push(item);
    }
    let mut found = Vec::new();
    for aggregate in instances.iter().filter(|row| !row.is_map_item()) {
        let mine = items
            .remove(&(aggregate.dag_run_id, aggregate.task_id))
            .unwrap_or_default();
        let Some(made) = aggregate.map_items else {
            if !mine.is_empty() {
                found.push(format!(
                    "'{}' has {} items but made none",
                    aggregate.task_name,
                    mine.len()
                ));
            }
            continue;
        };
        let name = &aggregate.task_name;
        let max_parallel = aggregate
            .spec
            .read()
            .ok()
            .and_then(|spec| spec.task.map.as_ref().map(|map| map.max_parallel))
            .unwrap_or(0);
        let counted: Vec<_> = mine
            .iter()
            .filter(|i| i.status.is_terminal() && i.propagated)
            .collect();
        let failed = counted
            .iter()
            .filter(|i| i.as_parent() == Some(ParentResult::Failed))
            .count();
        let holding = mine
            .iter()
            .filter(|i| {
                matches!(
                    i.status,
                    TaskStatus::Queued
                        | TaskStatus::Running
                        | TaskStatus::UpForRetry
                        | TaskStatus::UpForReschedule
                )
            })
            .count();
        let pending = mine
            .iter()
            .filter(|i| i.status == TaskStatus::Pending)
            .count();
        let kept = (made, aggregate.map_ended, aggregate.map_failed);
        let recount = (mine.len() as i32, counted.len() as i32, failed as i32);
        if kept != recount {
            found.push(format!(
                "'{name}': made/ended/failed are {kept:?}, its items say {recount:?}"
            ));
        }
        if holding > max_parallel as usize {
            found.push(format!(
                "'{name}': {holding} items hold a place, max_parallel is {max_parallel}"
            ));
        }
        if aggregate.status == TaskStatus::Running && pending > 0 && holding < max_parallel as usize
        {
            found.push(format!("'{name}': {pending} items wait PENDING while only {holding} of {max_parallel} places are held"));
        }
        if matches!(aggregate.status, TaskStatus::Success | TaskStatus::Failed)
            && counted.len() != mine.len()
        {
            found.push(format!(
                "'{name}' is {:?} while some of its items are not counted",
                aggregate.status
            ));
        }
    }
    found.extend(items.into_values().flatten().map(|item| {
        format!(
            "item {} of '{}' has no aggregate",
            item.map_index, item.task_name
        )
    }));
    found
}

/// A terminal instance has its end time; a waiting one has none.
pub fn ended_instances_are_complete(instances: &[task_instance::Model]) -> Vec<String> {
    instances
        .iter()
        .filter(|row| {
            row.status.is_terminal()
                && row.status != TaskStatus::Skipped
                && row.status != TaskStatus::UpstreamFailed
                && row.finished_at.is_none()
        })
        .map(|row| {
            format!(
                "'{}' is {:?} without finished_at",
                row.task_name, row.status
            )
        })
        .collect()
}
