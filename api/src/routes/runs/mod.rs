//! Runs and task instances: a DAG's run history, a run with
//! its task instances and its status, a run by key (where a trigger points),
//! a task instance with its attempts and its log, task instances by
//! business date and task (`executions`) — and kills, reruns, clears and
//! marks.
//!
//! The product's API calls a run a "DAG instance"; the paths keep its names.

use chrono::Utc;
use std::collections::BTreeMap;

use axum::Json as AxumJson;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use datajump_engine::{OperatorError, ResetScope};
use datajump_shared::entities::{dag_run, execution, task_instance};
use datajump_shared::logs;
use datajump_shared::{RunId, TaskInstanceId, TaskStatus};
use futures::TryStreamExt;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect};
use tracing::{debug, info};

use self::dto::{
    ClearRequest, ExecutionDto, ExecutionsQuery, InstancesQuery, KillResponse, MappedTaskDto,
    MarkRequest, RerunRequest, RerunResponse, RunDetail, RunDto, RunStatusDto, TaskInstanceDetail,
    TaskInstanceDto, TaskResetResponse,
};
use super::shared::{attempt_of, find_dag, find_run, find_task_instance, paging};
use crate::AppState;
use crate::chunked::ChunkedJson;
use crate::dto::{LogQuery, Page};
use crate::error::{Error, Result};
use crate::extract::{Json, JsonOrEmpty, Path, Query};

pub mod dto;

/// A run with its task instances in task order, a mapped task's items by
/// index in its place: each row becomes its answer as it is read, since a
/// row holds the instance's whole plan (its spec and children, some 10 kB
/// as values) that the answer leaves out.
async fn run_detail(state: &AppState, run: &dag_run::Model) -> Result<RunDetail> {
    let mut detail = RunDetail {
        run: RunDto::from(run),
        task_instances: Vec::new(),
        allowed_failures: Vec::new(),
        mapped_tasks: Vec::new(),
    };
    let mut rows = task_instance::Entity::find()
        .filter(task_instance::Column::DagRunId.eq(run.id))
        .order_by_asc(task_instance::Column::TaskId)
        .order_by_asc(task_instance::Column::MapIndex)
        .stream(&state.db)
        .await?;
    while let Some(row) = rows.try_next().await? {
        if !row.is_map_item() && row.failed_allowed() {
            detail.allowed_failures.push(row.task_name.clone());
        }
        match MappedTaskDto::of(&row) {
            Some(mapped) => detail.mapped_tasks.push(mapped),
            None => detail.task_instances.push(TaskInstanceDto::from(&row)),
        }
    }
    Ok(detail)
}

/// Leaves out mapped tasks whose items were made: their items stand for
/// them ([`task_instance::Model::is_expanded_map`]).
fn without_expanded_maps<S: QueryFilter>(select: S) -> S {
    select.filter(
        sea_orm::Condition::any()
            .add(task_instance::Column::MapIndex.ne(task_instance::PLANNED))
            .add(task_instance::Column::MapItems.is_null()),
    )
}

/// `GET /api/v1/dags/{dagId}/instances?limit=20&page=1`: the DAG's runs,
/// newest first.
pub async fn list(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Query(query): Query<InstancesQuery>,
) -> Result<AxumJson<Page<RunDto>>> {
    find_dag(&state, dag_id).await?;
    let (page, page_size) = paging(query.page, query.limit, "limit")?;
    let paginator = dag_run::Entity::find()
        .filter(dag_run::Column::DagId.eq(dag_id))
        .order_by_desc(dag_run::Column::Id)
        .paginate(&state.db, page_size);
    let total = paginator.num_items().await?;
    let runs = paginator.fetch_page(page - 1).await?;
    Ok(AxumJson(Page {
        items: runs.iter().map(RunDto::from).collect(),
        total,
        page,
        page_size,
    }))
}

/// `GET /api/v1/dags/{dagId}/executions?bizDate=&task=&status=&page=&pageSize=`:
/// the DAG's task instances, newest business date first, filtered by
/// business date, task name and status (each optional).
pub async fn executions(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Query(query): Query<ExecutionsQuery>,
) -> Result<AxumJson<Page<TaskInstanceDto>>> {
    find_dag(&state, dag_id).await?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let mut select = without_expanded_maps(task_instance::Entity::find())
        .filter(task_instance::Column::DagId.eq(dag_id));
    if let Some(date) = query.biz_date {
        select = select.filter(task_instance::Column::BizDate.eq(date));
    }
    if let Some(task) = &query.task {
        select = select.filter(task_instance::Column::TaskName.eq(task));
    }
    if let Some(status) = query.status {
        select = select.filter(task_instance::Column::Status.eq(status));
    }
    let paginator = select
        .order_by_desc(task_instance::Column::BizDate)
        .order_by_desc(task_instance::Column::Id)
        .paginate(&state.db, page_size);
    let total = paginator.num_items().await?;
    let rows = paginator.fetch_page(page - 1).await?;
    Ok(AxumJson(Page {
        items: rows.iter().map(TaskInstanceDto::from).collect(),
        total,
        page,
        page_size,
    }))
}

/// `GET /api/v1/dags/instances/{instanceId}`: a run and its task instances.
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<ChunkedJson<RunDetail>> {
    let run = find_run(&state, id).await?;
    Ok(ChunkedJson(run_detail(&state, &run).await?))
}

/// `GET /api/v1/dags/instances/by-key/{runKey}`: the run a trigger started;
/// 404 until a resolver has created it.
pub async fn by_key(
    State(state): State<AppState>,
    Path(run_key): Path<String>,
) -> Result<ChunkedJson<RunDetail>> {
    let run = dag_run::Entity::find()
        .filter(dag_run::Column::DedupKey.eq(&run_key))
        .one(&state.db)
        .await?
        .ok_or_else(|| {
            Error::not_found(format!(
                "no run with key '{run_key}' (yet: a resolver creates it when it takes the fire)"
            ))
        })?;
    Ok(ChunkedJson(run_detail(&state, &run).await?))
}

/// `GET /api/v1/dags/instances/{instanceId}/status`: a run's status and its
/// task instances counted by status.
pub async fn status(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<AxumJson<RunStatusDto>> {
    let run = find_run(&state, id).await?;
    // Counted by the database: a poll of a big run's status reads no rows.
    let task_counts: BTreeMap<String, u64> = task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::Status)
        .column_as(task_instance::Column::Id.count(), "instances")
        .filter(task_instance::Column::DagRunId.eq(id))
        .group_by(task_instance::Column::Status)
        .into_tuple::<(TaskStatus, i64)>()
        .all(&state.db)
        .await?
        .into_iter()
        .map(|(status, count)| (status.as_str().to_owned(), count.unsigned_abs()))
        .collect();
    Ok(AxumJson(RunStatusDto {
        id: run.id,
        run_key: run.dedup_key,
        status: run.status,
        finished: run.status.is_terminal(),
        task_counts,
        start_time: run.created_at,
        end_time: run.finished_at,
    }))
}

/// `GET /api/v1/dags/task-instances/{taskInstanceId}`: a task instance and
/// its executions (one per attempt).
pub async fn task_instance(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<AxumJson<TaskInstanceDetail>> {
    let instance = find_task_instance(&state, id).await?;
    let executions = execution::Entity::find()
        .filter(execution::Column::TaskInstanceId.eq(id))
        .order_by_asc(execution::Column::Attempt)
        .all(&state.db)
        .await?;
    Ok(AxumJson(TaskInstanceDetail {
        instance: TaskInstanceDto::from(&instance),
        executions: executions.iter().map(ExecutionDto::from).collect(),
    }))
}

/// The full log of an execution from the object store, if it is there, to
/// be streamed: a log of hundreds of megabytes is never held in memory.
async fn stored_log(
    state: &AppState,
    name: &str,
) -> Option<async_nats::jetstream::object_store::Object> {
    let store = state
        .bus
        .js()
        .get_object_store(state.bus.names().logs_bucket())
        .await
        .map_err(|e| debug!(error = %e, "no log object store"))
        .ok()?;
    store
        .get(name)
        .await
        .map_err(|e| debug!(error = %e, object = name, "log object not found"))
        .ok()
}

/// `GET /api/v1/dags/task-instances/{taskInstanceId}/log?attempt=N`: the
/// log of the latest attempt, or of attempt `N` (0-based), as text/plain —
/// the whole log once the attempt has ended (from the object store, or the
/// database's tail when that holds it all), the tail while it runs.
/// Headers `X-DataJump-Attempt` and `X-DataJump-Log-Source` (`full` or
/// `tail`) say which.
pub async fn log(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(query): Query<LogQuery>,
) -> Result<Response> {
    let instance = find_task_instance(&state, id).await?;
    let exec = attempt_of(&state, &instance, query.attempt).await?;
    let tail = exec.log_tail.clone().unwrap_or_default();
    let (source, text) = match (&exec.log_path, exec.end_time) {
        (Some(name), Some(_)) => match stored_log(&state, name).await {
            Some(full) => (
                "full",
                axum::body::Body::from_stream(tokio_util::io::ReaderStream::new(full)),
            ),
            None => ("tail", axum::body::Body::from(tail)),
        },
        // The runner stores no copy of a log its tail holds whole.
        (None, Some(_)) if logs::dropped_lines(&tail) == 0 => {
            ("full", axum::body::Body::from(tail))
        }
        _ => ("tail", axum::body::Body::from(tail)),
    };
    Ok((
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_owned()),
            // A task writes the log: a browser must not sniff it into HTML
            // or script (docs/SECURITY.md, "The API and browsers").
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (
                header::HeaderName::from_static("x-datajump-attempt"),
                exec.attempt.to_string(),
            ),
            (
                header::HeaderName::from_static("x-datajump-log-source"),
                source.to_owned(),
            ),
        ],
        text,
    )
        .into_response())
}

/// `POST /api/v1/task-instances/{id}/kill`: kills a task instance (its
/// process if it runs); 409 if it had already ended.
pub async fn kill_task(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<AxumJson<KillResponse>> {
    let instance = find_task_instance(&state, id).await?;
    let killed = datajump_engine::kill_instance(&state.db, TaskInstanceId(id), Utc::now())
        .await
        .map_err(|e| reset_failed(e, "cannot kill this task"))?;
    match killed {
        Some((row, effects)) => {
            effects.publish(&state.bus).await?;
            info!(task_instance = id, "task instance killed through the API");
            Ok(AxumJson(KillResponse {
                id,
                status: row.status.as_str().to_owned(),
                killed_task_instances: vec![row.id],
            }))
        }
        None => {
            let now = find_task_instance(&state, id).await.unwrap_or(instance);
            Err(Error::conflict(format!(
                "task instance {id} ({}) has already ended: {}",
                now.task_name, now.status
            )))
        }
    }
}

/// `POST /api/v1/dags/instances/{instanceId}/kill`: kills a run and every
/// live task instance in it; 409 if it had already ended.
pub async fn kill(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<AxumJson<KillResponse>> {
    find_run(&state, id).await?;
    match datajump_engine::kill_run(&state.db, RunId(id), Utc::now()).await? {
        Some((killed, effects)) => {
            effects.publish(&state.bus).await?;
            info!(run = id, "run killed through the API");
            Ok(AxumJson(KillResponse {
                id,
                status: datajump_shared::RunStatus::Killed.as_str().to_owned(),
                killed_task_instances: killed.iter().map(|r| r.id).collect(),
            }))
        }
        None => {
            let run = find_run(&state, id).await?;
            Err(Error::conflict(format!(
                "run {id} has already ended: {}",
                run.status
            )))
        }
    }
}

/// `POST /api/v1/dags/instances/{instanceId}/rerun` `{ failedOnly? }`:
/// runs a finished run again in place (same id, same business date), every
/// task or with `failedOnly` only the failed ones and their downstream, as
/// `datajump rerun`; 409 while a task to rerun is still live.
pub async fn rerun(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    JsonOrEmpty(body): JsonOrEmpty<RerunRequest>,
) -> Result<AxumJson<RerunResponse>> {
    find_run(&state, id).await?;
    let scope = if body.failed_only {
        ResetScope::FailedOnly
    } else {
        ResetScope::All
    };
    let effects = datajump_engine::reset(&state.db, RunId(id), scope, Utc::now())
        .await
        .map_err(|e| reset_failed(e, &format!("run {id} cannot be rerun now")))?;
    let queued = effects.queued().to_vec();
    effects.publish(&state.bus).await?;
    let run = find_run(&state, id).await?;
    info!(
        run = id,
        failed_only = body.failed_only,
        "run rerun through the API"
    );
    Ok(AxumJson(RerunResponse {
        id,
        status: run.status,
        failed_only: body.failed_only,
        queued_task_instances: queued.iter().map(TaskInstanceDto::from).collect(),
    }))
}

/// The answer to a refused or failed rerun, clear or mark; `refused` says
/// what could not be done when something in the way is still live.
fn reset_failed(e: OperatorError, refused: &str) -> Error {
    match e {
        OperatorError::Db(e) => Error::Db(e),
        e @ (OperatorError::UnknownRun(_) | OperatorError::UnknownInstance(_)) => {
            Error::not_found(e.to_string())
        }
        e @ (OperatorError::Live(..)
        | OperatorError::RunLive(..)
        | OperatorError::RunWaiting(_)
        | OperatorError::EndedMapItem { .. }) => Error::conflict(format!("{refused}: {e}")),
        e @ OperatorError::NotAMark(_) => Error::bad_request(e.to_string()),
    }
}

/// A clear's or a mark's answer: the instance as it is now and what was
/// queued at once.
async fn reset_answer(
    state: &AppState,
    id: i64,
    queued: &[task_instance::Model],
) -> Result<AxumJson<TaskResetResponse>> {
    let instance = find_task_instance(state, id).await?;
    Ok(AxumJson(TaskResetResponse {
        id,
        dag_instance_id: instance.dag_run_id,
        status: instance.status,
        queued_task_instances: queued.iter().map(TaskInstanceDto::from).collect(),
    }))
}

/// `POST /api/v1/task-instances/{taskInstanceId}/clear` `{ downstream? }`:
/// puts a finished task instance (and with `downstream` everything below
/// it) back to PENDING in its run, as `datajump task clear`; 409 while one
/// of them is still live.
pub async fn clear_task(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    JsonOrEmpty(body): JsonOrEmpty<ClearRequest>,
) -> Result<AxumJson<TaskResetResponse>> {
    let instance = find_task_instance(&state, id).await?;
    let scope = ResetScope::Task {
        task_id: instance.task_id,
        downstream: body.downstream,
    };
    let effects = datajump_engine::reset(&state.db, instance.run_id(), scope, Utc::now())
        .await
        .map_err(|e| reset_failed(e, &format!("task instance {id} cannot be cleared now")))?;
    let queued = effects.queued().to_vec();
    effects.publish(&state.bus).await?;
    info!(
        task_instance = id,
        downstream = body.downstream,
        "task instance cleared through the API"
    );
    reset_answer(&state, id, &queued).await
}

/// `POST /api/v1/task-instances/{taskInstanceId}/mark` `{ status }`: marks
/// a task instance `SUCCESS` or `FAILED` by hand, as `datajump task
/// mark-success|mark-failed`; its downstream follows the new result. 409
/// while it is queued or running.
pub async fn mark_task(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Json(body): Json<MarkRequest>,
) -> Result<AxumJson<TaskResetResponse>> {
    if !matches!(body.status, TaskStatus::Success | TaskStatus::Failed) {
        return Err(Error::bad_request(format!(
            "invalid field `status`: must be SUCCESS or FAILED, got {}",
            body.status
        )));
    }
    find_task_instance(&state, id).await?;
    let effects = datajump_engine::mark(&state.db, TaskInstanceId(id), body.status, Utc::now())
        .await
        .map_err(|e| reset_failed(e, &format!("task instance {id} cannot be marked now")))?;
    let queued = effects.queued().to_vec();
    effects.publish(&state.bus).await?;
    info!(task_instance = id, status = %body.status, "task instance marked through the API");
    reset_answer(&state, id, &queued).await
}
