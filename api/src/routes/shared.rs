//! The helpers several route modules share: finding a DAG, run or task
//! instance (or 404), checking a page, storing a definition as `dag apply`
//! does, telling tickers of schedule changes, a schedule as the API shows
//! it, cycle search over canvas edges, and the caller the guard found.
//!
//! They live here, not in the route module that first needed them, so that
//! no route module reaches into a sibling's.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{NaiveTime, TimeZone, Utc};
use datajump_cron::{CronExpr, parse_time_zone};
use datajump_shared::dag_file::DagFile;
use datajump_shared::entities::{dag, dag_run, execution, schedule, task_instance};
use datajump_shared::kinds::ScheduleKind;
use datajump_store::catalog::{self, ApplyReport, CatalogError, Origin};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::json;
use tracing::warn;

use crate::AppState;
use crate::auth::Caller;
use crate::dto::{Edge, ScheduleDto};
use crate::error::{Error, Result};

/// Default items per page.
pub const DEFAULT_PAGE_SIZE: u64 = 20;
/// Most items per page.
pub const MAX_PAGE_SIZE: u64 = 500;
/// The highest page number: pages × size must stay a valid SQL offset
/// (a signed 64-bit number), and no table of ours holds more rows.
pub const MAX_PAGE: u64 = 1_000_000_000;

/// The DAG with this id, or 404.
pub async fn find_dag(state: &AppState, dag_id: i64) -> Result<dag::Model> {
    dag::Entity::find_by_id(dag_id)
        .one(&state.db)
        .await?
        .ok_or_else(|| Error::not_found(format!("no DAG with id {dag_id}")))
}

/// `(page, page_size)` checked: 1 ≤ page ≤ [`MAX_PAGE`], 1 ≤ page size ≤
/// [`MAX_PAGE_SIZE`].
pub fn paging(page: Option<u64>, page_size: Option<u64>, size_field: &str) -> Result<(u64, u64)> {
    let page = page.unwrap_or(1);
    if !(1..=MAX_PAGE).contains(&page) {
        return Err(Error::bad_request(format!(
            "invalid field `page`: pages are numbered 1-{MAX_PAGE}, got {page}"
        )));
    }
    let size = page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&size) {
        return Err(Error::bad_request(format!(
            "invalid field `{size_field}`: must be 1-{MAX_PAGE_SIZE}, got {size}"
        )));
    }
    Ok((page, size))
}

/// Stores a validated definition as `dag apply` does, then tells tickers
/// to reload when schedules changed. A definition using a feature some live
/// role does not understand is refused first
/// ([`crate::features::refuse_features_live_roles_lack`]).
pub async fn store(state: &AppState, file: &DagFile, origin: Origin<'_>) -> Result<ApplyReport> {
    crate::features::refuse_features_live_roles_lack(&state.bus, file).await?;
    let report = catalog::apply(&state.db, file, &state.timezone, origin)
        .await
        .map_err(catalog_error)?;
    if report.schedules_touched() {
        schedules_changed(state).await;
    }
    Ok(report)
}

/// What [`store`] would change, storing nothing (`?dryRun=true`); refused
/// as [`store`] would be.
pub async fn preview(state: &AppState, file: &DagFile, origin: Origin<'_>) -> Result<ApplyReport> {
    crate::features::refuse_features_live_roles_lack(&state.bus, file).await?;
    catalog::preview(&state.db, file, &state.timezone, origin)
        .await
        .map_err(catalog_error)
}

/// The answer to a catalog error.
fn catalog_error(e: CatalogError) -> Error {
    match e {
        CatalogError::Db(e) => Error::Db(e),
        CatalogError::UnknownDag(name) => Error::not_found(format!("no DAG named '{name}'")),
        e @ CatalogError::UnknownProject(_) => {
            Error::bad_request(format!("invalid field `projectId`: {e}"))
        }
        e @ CatalogError::FileManaged { .. } => Error::conflict(e.to_string()),
    }
}

/// Tells running tickers to reload schedules now. Best effort: they also
/// reload on a timer, so a failure is logged, not returned.
pub async fn schedules_changed(state: &AppState) {
    if let Err(e) = state
        .nats
        .publish(state.bus.names().schedules_changed(), "".into())
        .await
    {
        warn!(error = %e, "could not announce a schedule change; tickers reload on their timer");
        return;
    }
    if tokio::time::timeout(Duration::from_secs(2), state.nats.flush())
        .await
        .map_or(true, |r| r.is_err())
    {
        warn!("could not flush a schedule change announcement");
    }
}

pub(crate) async fn find_run(state: &AppState, id: i64) -> Result<dag_run::Model> {
    dag_run::Entity::find_by_id(id)
        .one(&state.db)
        .await?
        .ok_or_else(|| Error::not_found(format!("no DAG instance (run) with id {id}")))
}

pub(crate) async fn find_task_instance(state: &AppState, id: i64) -> Result<task_instance::Model> {
    task_instance::Entity::find_by_id(id)
        .one(&state.db)
        .await?
        .ok_or_else(|| Error::not_found(format!("no task instance with id {id}")))
}

/// Attempt `attempt` of `instance` (its latest when `None`), or 404.
pub(crate) async fn attempt_of(
    state: &AppState,
    instance: &task_instance::Model,
    attempt: Option<i32>,
) -> Result<execution::Model> {
    let id = instance.id;
    let mut select = execution::Entity::find().filter(execution::Column::TaskInstanceId.eq(id));
    if let Some(attempt) = attempt {
        select = select.filter(execution::Column::Attempt.eq(attempt));
    }
    select
        .order_by_desc(execution::Column::Attempt)
        .one(&state.db)
        .await?
        .ok_or_else(|| match attempt {
            Some(n) => Error::not_found(format!(
                "task instance {id} ({}) has no attempt {n}",
                instance.task_name
            )),
            None => Error::not_found(format!(
                "task instance {id} ({}) has not started yet (status {})",
                instance.task_name, instance.status
            )),
        })
}

/// The next fire of a cron schedule after now, within its start and end
/// dates, as RFC 3339 in its zone.
fn next_fire(row: &schedule::Model, cron: &CronExpr) -> Option<String> {
    let zone = parse_time_zone(&row.timezone).ok()?;
    let now = Utc::now().with_timezone(&zone);
    let after = match row.start_date {
        Some(start) => {
            let start = zone
                .from_local_datetime(&start.and_time(NaiveTime::MIN))
                .earliest()?;
            // One second earlier, so a fire at the very start counts.
            let start = start - chrono::Duration::seconds(1);
            if start > now { start } else { now }
        }
        None => now,
    };
    let next = cron.next_after(&after)?;
    if let Some(end) = row.end_date
        && next.date_naive() > end
    {
        return None;
    }
    Some(next.to_rfc3339())
}

/// A stored schedule as the API shows it.
pub(crate) fn schedule_dto(row: &schedule::Model) -> ScheduleDto {
    let cron = row
        .cron_expr
        .as_deref()
        .filter(|_| row.kind != ScheduleKind::Event)
        .and_then(|c| CronExpr::parse(c).ok());
    ScheduleDto {
        dag_id: row.dag_id,
        schedule_id: row.id,
        name: row.name.clone(),
        kind: row.kind,
        cron_expression: row.cron_expr.clone(),
        cron_description: cron.as_ref().map(CronExpr::describe),
        event_name: row.event_name.clone(),
        after: row.after_dag.clone(),
        on: row
            .data_condition
            .as_ref()
            .and_then(|value| serde_json::from_value(value.clone()).ok()),
        on_update: row.on_update,
        enabled: row.active,
        next_fire_time: cron
            .as_ref()
            .filter(|_| row.active)
            .and_then(|c| next_fire(row, c)),
        timezone: row.timezone.clone(),
        start_date: row.start_date,
        end_date: row.end_date,
        catchup: row.catchup.as_str().to_owned(),
        catchup_limit: row.catchup_limit,
        misfire_grace: row.misfire_grace_secs,
        biz_date_offset: row.biz_date_offset_days,
        timeout: row
            .timeout_secs
            .map(|secs| crate::definition::seconds_to_minutes(&json!(secs))),
    }
}

/// A cycle in the graph of `edges` (source → target), found by depth-first
/// search: its nodes in order, the first repeated at the end.
pub fn find_cycle(edges: &[Edge]) -> Option<Vec<String>> {
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for edge in edges {
        children
            .entry(edge.source.as_str())
            .or_default()
            .push(edge.target.as_str());
        children.entry(edge.target.as_str()).or_default();
    }
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut marks: HashMap<&str, Mark> = children.keys().map(|&n| (n, Mark::New)).collect();
    let nodes: Vec<&str> = children.keys().copied().collect();
    for start in nodes {
        if marks.get(start) != Some(&Mark::New) {
            continue;
        }
        // Iterative DFS: the path and, per node on it, the next child to visit.
        let mut path: Vec<(&str, usize)> = vec![(start, 0)];
        marks.insert(start, Mark::OnPath);
        while let Some((node, next)) = path.last().copied() {
            let kids = children.get(node).map(Vec::as_slice).unwrap_or_default();
            match kids.get(next) {
                None => {
                    marks.insert(node, Mark::Done);
                    path.pop();
                }
                Some(&child) => {
                    if let Some(top) = path.last_mut() {
                        top.1 += 1;
                    }
                    match marks.get(child).copied().unwrap_or(Mark::New) {
                        Mark::New => {
                            marks.insert(child, Mark::OnPath);
                            path.push((child, 0));
                        }
                        Mark::OnPath => {
                            let from = path.iter().position(|(n, _)| *n == child).unwrap_or(0);
                            let mut cycle: Vec<String> =
                                path[from..].iter().map(|(n, _)| (*n).to_owned()).collect();
                            cycle.push(child.to_owned());
                            return Some(cycle);
                        }
                        Mark::Done => {}
                    }
                }
            }
        }
    }
    None
}

/// The caller found by the guard, if any.
#[derive(Debug, Clone)]
pub struct CallerOf(pub Option<Caller>);

/// The project a request means (`?project=`, else the token's, else the
/// default one), refused (403) beyond the caller's reach.
pub fn project_of(caller: &Caller, asked: Option<i64>) -> Result<i64> {
    let project = asked
        .or(caller.reach.project_id())
        .unwrap_or(datajump_store::projects::DEFAULT_PROJECT);
    caller.may_use_project(project)?;
    Ok(project)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(pairs: &[(&str, &str)]) -> Vec<Edge> {
        pairs
            .iter()
            .map(|(s, t)| Edge {
                source: (*s).to_owned(),
                target: (*t).to_owned(),
                dep_type: None,
            })
            .collect()
    }

    #[test]
    fn cycles_are_found_and_named() {
        assert_eq!(
            find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])),
            None
        );
        assert_eq!(
            find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "b")])),
            Some(vec!["b".to_owned(), "c".to_owned(), "b".to_owned()])
        );
        assert_eq!(
            find_cycle(&edges(&[("x", "x")])),
            Some(vec!["x".to_owned(), "x".to_owned()])
        );
        assert_eq!(find_cycle(&[]), None);
    }
}
