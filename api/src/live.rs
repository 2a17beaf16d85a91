//! The live stream: what changed in runs and task instances, pushed to
//! every open page (`GET /api/v1/stream`, Server-Sent Events).
//!
//! The decision that shapes it: one watcher per API process reads the
//! database once a second for *all* viewers and fans out what changed,
//! instead of each page polling each widget (the polling storms users of
//! other schedulers' UIs complain about). The watcher reads only the runs
//! in flight and those that ended in the last minute, with their task
//! instances, compares them with what it read last and broadcasts each
//! difference once, serialized once; ten open tabs cost what one costs. It
//! sleeps while nobody listens. The rows are the truth the roles commit, so
//! nothing a role publishes needs to change for the UI, and a viewer never
//! sees a state the database does not hold.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use datajump_shared::access::Reach;
use datajump_shared::entities::{dag, dag_run, task_instance};
use datajump_shared::{RunStatus, TaskStatus};
use sea_orm::sea_query::ExprTrait;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QuerySelect};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::routes::stream::dto::{RunChange, TaskChange};

/// How often the watcher reads the database while someone listens.
const TICK: Duration = Duration::from_secs(1);
/// How long an ended run stays in the watched set: long enough to see its
/// last instances end whatever the clocks of the roles that ended them.
const RECENTLY_ENDED: Duration = Duration::from_secs(60);
/// Changes a slow viewer may fall behind by before it is told to reload.
const BACKLOG: usize = 4096;

/// What one change is about, for streams that follow one thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A task instance, now in this state after this many attempts.
    Task {
        /// Task instance id.
        id: i64,
        /// Its state.
        status: TaskStatus,
        /// Its attempts.
        attempts: i32,
    },
    /// A run.
    Run {
        /// Run id.
        id: i64,
    },
}

/// One change, serialized once for every viewer.
#[derive(Debug)]
pub struct Change {
    /// The project of the DAG it belongs to: viewers limited to another
    /// project are not sent it.
    pub project_id: i64,
    /// What it is about.
    pub subject: Subject,
    /// The SSE event name: `task` or `run`.
    pub event: &'static str,
    /// The event's JSON ([`TaskChange`] or [`RunChange`]).
    pub data: String,
}

impl Change {
    /// Whether a viewer of `reach` may see it.
    pub fn visible_to(&self, reach: Reach) -> bool {
        reach.includes(self.project_id)
    }
}

/// The hub viewers subscribe to; cheap to clone.
#[derive(Clone)]
pub struct Live {
    inner: Arc<Inner>,
}

struct Inner {
    sender: broadcast::Sender<Arc<Change>>,
    db: DatabaseConnection,
    /// Whether the watcher runs (it starts with the first viewer).
    watching: Mutex<bool>,
    /// Stops the watcher and every stream: the API is shutting down.
    shutdown: CancellationToken,
}

impl Live {
    /// A hub reading `db`, whose streams end when `shutdown` is cancelled.
    pub fn new(db: DatabaseConnection, shutdown: CancellationToken) -> Live {
        Live {
            inner: Arc::new(Inner {
                sender: broadcast::channel(BACKLOG).0,
                db,
                watching: Mutex::new(false),
                shutdown,
            }),
        }
    }

    /// Cancelled when the API shuts down: a stream ends with it, so the
    /// server's graceful shutdown does not wait on open pages.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// The changes from now on; starts the watcher if it is not running.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        let receiver = self.inner.sender.subscribe();
        let mut watching = self
            .inner
            .watching
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*watching {
            *watching = true;
            tokio::spawn(watch(Arc::downgrade(&self.inner)));
        }
        receiver
    }
}

/// What the watcher last saw of a task instance or run.
type TaskRow = (
    i64,
    i64,
    i64,
    i64,
    String,
    TaskStatus,
    i32,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    bool,
    i32,
    Option<i32>,
);

#[derive(Default)]
struct Seen {
    runs: HashMap<i64, RunChange>,
    tasks: HashMap<i64, TaskChange>,
    projects: HashMap<i64, i64>,
}

/// Reads, compares and broadcasts once a [`TICK`] while anyone listens;
/// returns when the API shuts down or its state is dropped.
async fn watch(inner: Weak<Inner>) {
    let mut seen = Seen::default();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let Some(shutdown) = inner.upgrade().map(|i| i.shutdown.clone()) else {
            return;
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        if inner.sender.receiver_count() == 0 {
            // Nobody to tell: forget, so the next viewer's first read
            // sends what is in flight rather than nothing.
            seen = Seen::default();
            continue;
        }
        match changes(&inner.db, &mut seen).await {
            Ok(changes) => {
                for change in changes {
                    // No receiver left is not an error: the next tick forgets.
                    let _ = inner.sender.send(Arc::new(change));
                }
            }
            Err(e) => warn!(error = %e, "live stream: could not read runs"),
        }
    }
}

/// What changed since `seen`, which is brought up to date.
async fn changes(db: &DatabaseConnection, seen: &mut Seen) -> Result<Vec<Change>, sea_orm::DbErr> {
    let since = Utc::now()
        - chrono::Duration::from_std(RECENTLY_ENDED).unwrap_or_else(|_| chrono::Duration::zero());
    let runs = dag_run::Entity::find()
        .select_only()
        .columns([
            dag_run::Column::Id,
            dag_run::Column::DagId,
            dag_run::Column::DagVersion,
            dag_run::Column::Status,
            dag_run::Column::BizDate,
            dag_run::Column::DedupKey,
            dag_run::Column::TriggerType,
            dag_run::Column::CreatedAt,
            dag_run::Column::FinishedAt,
        ])
        .filter(
            dag_run::Column::Status
                .is_in([RunStatus::Queued, RunStatus::Running])
                .or(dag_run::Column::FinishedAt.gte(since)),
        )
        .into_tuple::<(
            i64,
            i64,
            i32,
            RunStatus,
            chrono::NaiveDate,
            String,
            datajump_shared::TriggerType,
            DateTime<Utc>,
            Option<DateTime<Utc>>,
        )>()
        .all(db)
        .await?;
    let run_ids: Vec<i64> = runs.iter().map(|r| r.0).collect();
    let mut tasks: Vec<TaskRow> = Vec::new();
    // Bounded lists keep every database's limit on bound values.
    for chunk in run_ids.chunks(1000) {
        tasks.extend(
            task_instance::Entity::find()
                .select_only()
                .columns([
                    task_instance::Column::Id,
                    task_instance::Column::DagRunId,
                    task_instance::Column::DagId,
                    task_instance::Column::TaskId,
                    task_instance::Column::TaskName,
                    task_instance::Column::Status,
                    task_instance::Column::Attempt,
                    task_instance::Column::StartedAt,
                    task_instance::Column::FinishedAt,
                    task_instance::Column::FlowSkipped,
                    task_instance::Column::MapIndex,
                    task_instance::Column::MapItems,
                ])
                .filter(task_instance::Column::DagRunId.is_in(chunk.iter().copied()))
                .into_tuple::<TaskRow>()
                .all(db)
                .await?,
        );
    }
    let unknown: Vec<i64> = runs
        .iter()
        .map(|r| r.1)
        .filter(|dag| !seen.projects.contains_key(dag))
        .collect();
    if !unknown.is_empty() {
        let found = dag::Entity::find()
            .select_only()
            .columns([dag::Column::Id, dag::Column::ProjectId])
            .filter(dag::Column::Id.is_in(unknown))
            .into_tuple::<(i64, i64)>()
            .all(db)
            .await?;
        seen.projects.extend(found);
    }

    let mut out = Vec::new();
    let mut runs_now = HashMap::with_capacity(runs.len());
    for (id, dag_id, dag_version, status, biz_date, run_key, trigger, created, finished) in runs {
        let change = RunChange {
            id,
            dag_id,
            dag_version,
            status,
            biz_date,
            run_key,
            trigger_type: trigger.as_str().to_owned(),
            start_time: created,
            end_time: finished,
        };
        if seen.runs.get(&id) != Some(&change)
            && let Some(change) = serialized(seen, dag_id, Subject::Run { id }, "run", &change)
        {
            out.push(change);
        }
        runs_now.insert(id, change);
    }
    let mut tasks_now = HashMap::with_capacity(tasks.len());
    for (
        id,
        run_id,
        dag_id,
        task_id,
        task_name,
        status,
        attempts,
        started,
        finished,
        flow_skipped,
        map_index,
        map_items,
    ) in tasks
    {
        let item = map_index != task_instance::PLANNED;
        let change = TaskChange {
            id,
            run_id,
            dag_id,
            task_id,
            task_name,
            status,
            attempts,
            start_time: started,
            end_time: finished,
            flow_skipped: status == TaskStatus::Skipped && flow_skipped,
            map_index: item.then_some(map_index),
            mapped: !item && map_items.is_some(),
        };
        let subject = Subject::Task {
            id,
            status,
            attempts,
        };
        if seen.tasks.get(&id) != Some(&change)
            && let Some(change) = serialized(seen, dag_id, subject, "task", &change)
        {
            out.push(change);
        }
        tasks_now.insert(id, change);
    }
    seen.runs = runs_now;
    seen.tasks = tasks_now;
    // Tasks first within a tick: a page seeing its run end already shows
    // the instance that ended it.
    out.sort_by_key(|c| matches!(c.subject, Subject::Run { .. }));
    Ok(out)
}

fn serialized(
    seen: &Seen,
    dag_id: i64,
    subject: Subject,
    event: &'static str,
    value: &impl serde::Serialize,
) -> Option<Change> {
    // A DAG deleted since its run was read has no project to check
    // viewers against: nobody is sent it.
    let project_id = *seen.projects.get(&dag_id)?;
    let data = serde_json::to_string(value).ok()?;
    Some(Change {
        project_id,
        subject,
        event,
        data,
    })
}
