//! Datasets as people look at them: which DAGs write each one (tasks'
//! `outputs`), which wait for it (data schedules' `on:`), and the events
//! recorded for it. Recording events and firing schedules is the engine's
//! (`datajump_engine::announce`).

use std::collections::BTreeMap;

use datajump_shared::datasets::{Condition, OutputDecl};
use datajump_shared::entities::{dag, dataset_event, schedule, task};
use datajump_shared::kinds::ScheduleKind;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

/// A task that writes a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Producer {
    /// Its DAG.
    pub dag: String,
    /// The task.
    pub task: String,
    /// Its partition template, if it writes partitions.
    pub partition: Option<String>,
}

/// A data schedule that waits for a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    /// Its DAG.
    pub dag: String,
    /// The schedule.
    pub schedule: String,
    /// Whether it fires (it and its DAG are on).
    pub active: bool,
}

/// One dataset of a project: who writes it, who waits for it, its latest
/// event and how many it has.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// Its name.
    pub name: String,
    /// The tasks that write it.
    pub producers: Vec<Producer>,
    /// The data schedules that wait for it.
    pub consumers: Vec<Consumer>,
    /// Its newest event.
    pub last_event: Option<dataset_event::Model>,
    /// Events recorded for it.
    pub events: u64,
}

/// Every dataset of `project_id` that a task writes, a schedule waits for
/// or an event names, by name.
pub async fn list<C: ConnectionTrait>(conn: &C, project_id: i64) -> Result<Vec<Dataset>, DbErr> {
    let dags: BTreeMap<i64, dag::Model> = dag::Entity::find()
        .filter(dag::Column::ProjectId.eq(project_id))
        .all(conn)
        .await?
        .into_iter()
        .map(|dag| (dag.id, dag))
        .collect();
    let mut found: BTreeMap<String, Dataset> = BTreeMap::new();
    let writers = task::Entity::find()
        .filter(task::Column::Datasets.is_not_null())
        .order_by_asc(task::Column::Id)
        .all(conn)
        .await?;
    for row in writers {
        let Some(dag) = dags.get(&row.dag_id) else {
            continue;
        };
        for text in &row.declared_datasets() {
            if let Ok(decl) = OutputDecl::parse(text) {
                dataset(&mut found, decl.dataset).producers.push(Producer {
                    dag: dag.name.clone(),
                    task: row.name.clone(),
                    partition: decl.partition.map(str::to_owned),
                });
            }
        }
    }
    let waiting = schedule::Entity::find()
        .filter(schedule::Column::Kind.eq(ScheduleKind::Data))
        .order_by_asc(schedule::Column::Id)
        .all(conn)
        .await?;
    for row in waiting {
        let Some(dag) = dags.get(&row.dag_id) else {
            continue;
        };
        let condition = row.condition();
        for name in condition.iter().flat_map(Condition::datasets) {
            dataset(&mut found, name).consumers.push(Consumer {
                dag: dag.name.clone(),
                schedule: row.name.clone(),
                active: row.active && dag.online,
            });
        }
    }
    let counted: Vec<(String, i64, i64)> = dataset_event::Entity::find()
        .select_only()
        .column(dataset_event::Column::Dataset)
        .column_as(Expr::col(dataset_event::Column::Id).count(), "events")
        .column_as(Expr::col(dataset_event::Column::Id).max(), "last")
        .filter(dataset_event::Column::ProjectId.eq(project_id))
        .group_by(dataset_event::Column::Dataset)
        .into_tuple()
        .all(conn)
        .await?;
    let last_ids: Vec<i64> = counted.iter().map(|(_, _, last)| *last).collect();
    let mut last_events: BTreeMap<i64, dataset_event::Model> = BTreeMap::new();
    // Bound values per statement stay far below every backend's limit.
    for chunk in last_ids.chunks(1000) {
        last_events.extend(
            dataset_event::Entity::find()
                .filter(dataset_event::Column::Id.is_in(chunk.iter().copied()))
                .all(conn)
                .await?
                .into_iter()
                .map(|event| (event.id, event)),
        );
    }
    for (name, events, last) in counted {
        let entry = dataset(&mut found, &name);
        entry.events = u64::try_from(events).unwrap_or_default();
        entry.last_event = last_events.remove(&last);
    }
    Ok(found.into_values().collect())
}

fn dataset<'a>(found: &'a mut BTreeMap<String, Dataset>, name: &str) -> &'a mut Dataset {
    found.entry(name.to_owned()).or_insert_with(|| Dataset {
        name: name.to_owned(),
        ..Dataset::default()
    })
}

/// One dataset of `project_id`, if anything writes it, waits for it or
/// announced it.
pub async fn show<C: ConnectionTrait>(
    conn: &C,
    project_id: i64,
    name: &str,
) -> Result<Option<Dataset>, DbErr> {
    Ok(list(conn, project_id)
        .await?
        .into_iter()
        .find(|dataset| dataset.name == name))
}

/// Page `page` (1-based) of a dataset's events, newest first, optionally
/// of one partition; with the number of events in all.
pub async fn events<C: ConnectionTrait>(
    conn: &C,
    project_id: i64,
    name: &str,
    partition: Option<&str>,
    page: u64,
    page_size: u64,
) -> Result<(Vec<dataset_event::Model>, u64), DbErr> {
    let mut query = dataset_event::Entity::find()
        .filter(dataset_event::Column::ProjectId.eq(project_id))
        .filter(dataset_event::Column::Dataset.eq(name));
    if let Some(partition) = partition {
        query = query.filter(dataset_event::Column::Partition.eq(partition));
    }
    let paginator = query
        .order_by_desc(dataset_event::Column::Id)
        .paginate(conn, page_size);
    let total = paginator.num_items().await?;
    let items = paginator.fetch_page(page.saturating_sub(1)).await?;
    Ok((items, total))
}
