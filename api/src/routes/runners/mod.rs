//! Runners and queues: `GET /api/v1/runners` lists the live runners from
//! their heartbeats in the `dj_runners` KV bucket (a runner whose heartbeat
//! has expired is gone from the bucket, and from the list);
//! `GET /api/v1/queues` puts beside each queue the runners serving it, its
//! backlog per priority band from the work consumers' own counters, and its
//! QUEUED and RUNNING task instances, so a queue no runner serves shows.
//! Each source is read once per request, whatever the number of queues.

use axum::Json as AxumJson;
use axum::extract::{Extension, State};
use std::collections::{BTreeMap, BTreeSet};

use datajump_shared::TaskStatus;
use datajump_shared::access::Reach;
use datajump_shared::entities::{dag, task, task_instance};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect};

use self::dto::{BandBacklog, QueueDto, RunnerDto};
use super::shared::{CallerOf, paging};
use crate::AppState;
use crate::dto::{Page, PageQuery};
use crate::error::{Error, Result};
use crate::extract::Query as QueryParams;
use crate::metrics::tasks_by_queue;

pub mod dto;

/// `GET /api/v1/runners?page=&pageSize=`: id, queues, slots, running
/// tasks and last heartbeat of each live runner, by id.
pub async fn list(
    State(state): State<AppState>,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<AxumJson<Page<RunnerDto>>> {
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    Ok(AxumJson(Page::of_all(
        live_runners(&state.bus).await?,
        page,
        page_size,
    )))
}

/// `GET /api/v1/queues?page=&pageSize=`: every queue a runner serves, a
/// work consumer exists for, a task instance waits or runs on, or a task of
/// an online DAG names, by name.
///
/// A token limited to a project sees only the queues its project's tasks
/// name or its task instances wait or run on, with its own project's
/// counts, and no backlog: the work streams count every project's
/// messages together (docs/SECURITY.md, "Projects").
pub async fn queues(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    QueryParams(query): QueryParams<PageQuery>,
) -> Result<AxumJson<Page<QueueDto>>> {
    let caller = crate::reach::caller(caller)?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let project = match caller.reach {
        Reach::Everything => None,
        Reach::Project(project) => Some(project),
    };
    let (runners, backlog, tasks, defined) = tokio::try_join!(
        live_runners(&state.bus),
        async {
            match project {
                Some(_) => Ok(Vec::new()),
                None => datajump_nats::work_backlog(state.bus.js(), state.bus.names())
                    .await
                    .map_err(Error::from),
            }
        },
        async {
            match project {
                Some(project) => project_tasks_by_queue(&state.db, project).await,
                None => tasks_by_queue(&state.db).await,
            }
            .map_err(Error::from)
        },
        async {
            queues_of_online_dags(&state.db, project)
                .await
                .map_err(Error::from)
        },
    )?;

    let mut queues: BTreeMap<String, QueueDto> = BTreeMap::new();
    for runner in &runners {
        for queue in &runner.queues {
            let queue = entry(&mut queues, queue);
            queue.runners += 1;
            queue.slots += runner.slots;
            queue.unserved = false;
        }
    }
    for band in backlog {
        if band.pending > 0 || band.ack_pending > 0 {
            entry(&mut queues, &band.queue).backlog.push(BandBacklog {
                priority: band.priority.level(),
                pending: band.pending,
                ack_pending: band.ack_pending,
            });
        } else {
            entry(&mut queues, &band.queue);
        }
    }
    for (status, queue, count) in tasks {
        let queue = entry(&mut queues, &queue);
        let count = u64::try_from(count).unwrap_or(0);
        match status {
            TaskStatus::Queued => queue.queued_tasks += count,
            _ => queue.running_tasks += count,
        }
    }
    for (queue, dags) in defined {
        entry(&mut queues, &queue).dags = u64::try_from(dags).unwrap_or(0);
    }
    if let Some(project) = project {
        let own = project_queues(&state.db, project).await?;
        queues.retain(|queue, _| own.contains(queue));
    }
    let mut items: Vec<QueueDto> = queues.into_values().collect();
    for queue in &mut items {
        queue
            .backlog
            .sort_by_key(|band| std::cmp::Reverse(band.priority));
    }
    Ok(AxumJson(Page::of_all(items, page, page_size)))
}

/// The row of `queue`, added unserved and empty if new.
fn entry<'q>(queues: &'q mut BTreeMap<String, QueueDto>, queue: &str) -> &'q mut QueueDto {
    queues.entry(queue.to_owned()).or_insert_with(|| QueueDto {
        queue: queue.to_owned(),
        runners: 0,
        slots: 0,
        queued_tasks: 0,
        running_tasks: 0,
        backlog: Vec::new(),
        dags: 0,
        unserved: true,
    })
}

/// The live runners, by id.
pub(crate) async fn live_runners(bus: &datajump_nats::Bus) -> Result<Vec<RunnerDto>> {
    Ok(datajump_nats::live_runners(bus.js(), bus.names())
        .await?
        .into_iter()
        .map(|beat| RunnerDto {
            id: beat.id,
            queues: beat.queues,
            slots: beat.slots,
            running: beat.running,
            last_seen: Some(beat.at),
            version: beat.version,
            feature_level: beat.features.get(),
        })
        .collect())
}

/// `(queue, online DAGs with a task on it)`, of `project`'s DAGs only
/// when given.
async fn queues_of_online_dags(
    db: &DatabaseConnection,
    project: Option<i64>,
) -> Result<Vec<(String, i64)>, DbErr> {
    let mut online = Query::select()
        .column(dag::Column::Id)
        .from(dag::Entity)
        .and_where(dag::Column::Online.eq(true))
        .to_owned();
    if let Some(project) = project {
        online.and_where(dag::Column::ProjectId.eq(project));
    }
    task::Entity::find()
        .select_only()
        .column(task::Column::Queue)
        .column_as(Expr::col(task::Column::DagId).count_distinct(), "dags")
        .filter(task::Column::DagId.in_subquery(online))
        .group_by(task::Column::Queue)
        .into_tuple()
        .all(db)
        .await
}

/// The ids of `project`'s DAGs, as a subquery.
fn dags_of(project: i64) -> sea_orm::sea_query::SelectStatement {
    Query::select()
        .column(dag::Column::Id)
        .from(dag::Entity)
        .and_where(dag::Column::ProjectId.eq(project))
        .to_owned()
}

/// `(status, queue, count)` of `project`'s QUEUED and RUNNING task
/// instances, as [`tasks_by_queue`] counts every project's.
async fn project_tasks_by_queue(
    db: &DatabaseConnection,
    project: i64,
) -> Result<Vec<(TaskStatus, String, i64)>, DbErr> {
    task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::Status)
        .column(task_instance::Column::Queue)
        .column_as(Expr::col(task_instance::Column::Id).count(), "tasks")
        .filter(task_instance::Column::Status.is_in([TaskStatus::Queued, TaskStatus::Running]))
        .filter(task_instance::Column::DagId.in_subquery(dags_of(project)))
        .group_by(task_instance::Column::Status)
        .group_by(task_instance::Column::Queue)
        .into_tuple()
        .all(db)
        .await
}

/// The queues `project` uses: named by a task of its DAGs, or by one of
/// its task instances still QUEUED or RUNNING (a task since moved to
/// another queue).
async fn project_queues(db: &DatabaseConnection, project: i64) -> Result<BTreeSet<String>, DbErr> {
    let named: Vec<String> = task::Entity::find()
        .select_only()
        .column(task::Column::Queue)
        .distinct()
        .filter(task::Column::DagId.in_subquery(dags_of(project)))
        .into_tuple()
        .all(db)
        .await?;
    let used = project_tasks_by_queue(db, project).await?;
    Ok(named
        .into_iter()
        .chain(used.into_iter().map(|(_, queue, _)| queue))
        .collect())
}
