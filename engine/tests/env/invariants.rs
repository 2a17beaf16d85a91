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
    found
}

/// The instances of one run by task id.
fn by_run(
    instances: &[task_instance::Model],
) -> BTreeMap<i64, HashMap<i64, &task_instance::Model>> {
    let mut runs: BTreeMap<i64, HashMap<i64, &task_instance::Model>> = BTreeMap::new();
    for row in instances {
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
