//! DAGs: list, create, get, update,
//! delete, tasks, online/offline, edge validation and manual triggers.
//!
//! Creating and updating go through [`crate::definition`] and
//! [`super::shared::store`], so a DAG sent over HTTP is validated and stored exactly
//! like a DAG file: tasks and schedules keep their ids across updates, the
//! version is bumped on each change, and tickers are told about schedule
//! changes.

use std::collections::HashMap;

use axum::Json as AxumJson;
use axum::extract::{Extension, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{NaiveDate, Utc};
use datajump_cron::parse_time_zone;
use datajump_engine::{OperatorError, ResetScope};
use datajump_shared::entities::{
    alert, dag, dag_run, dag_version_plan, execution, large_output, schedule, task,
    task_dependency, task_instance,
};
use datajump_shared::kinds::OverlapPolicy;
use datajump_shared::messages::FireMsg;
use datajump_shared::params::Params;
use datajump_shared::subjects::Priority;
use datajump_shared::{RunId, RunStatus};
use datajump_store::backfill::{self, BackfillError, DateRule, Planned};
use datajump_store::catalog::{ApplyReport, Origin};
use futures::TryStreamExt;
use sea_orm::sea_query::Query as SqlQuery;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Map, Value, json};
use tracing::{info, warn};

use self::dto::{
    ApplyQuery, BackfillRequest, BackfillResponse, BackfillRun, BackfillSkip, DagDetail,
    DagListItem, DagListQuery, DagSummary, DryRunResponse, RECENT_RUNS, RecentRun, Reprocess,
    TriggerRequest, TriggerResponse, ValidateConditionRequest, ValidateConditionResponse,
    ValidateRequest, ValidateResponse,
};
use super::shared::{
    CallerOf, find_cycle, find_dag, paging, preview, schedule_dto, schedules_changed, store,
};
use crate::AppState;
use crate::auth::Caller;
use crate::chunked::ChunkedJson;
use crate::definition::{
    self, DefinitionBody, DefinitionChanges, DependenciesByTask, StoredDefinition, TaskItem,
};
use crate::dto::{Page, PageQuery, ScheduleDto};
use crate::error::{Error, Result};
use crate::extract::{Json, JsonOrEmpty, Path, Query};

pub mod dto;

/// A DAG's detail: its headline fields and its whole definition (tasks and
/// schedules in the DAG file's shape, camelCase).
pub async fn detail(state: &AppState, dag: &dag::Model) -> Result<DagDetail> {
    let summary = DagSummary::from(dag);
    let headline = serde_json::to_value(&summary).map_err(|e| Error::Internal(e.to_string()))?;
    let mut definition = StoredDefinition::load(&state.db, dag).await?;
    definition.retain(|key| headline.get(key).is_none());
    Ok(DagDetail {
        dag: summary,
        definition,
        changes: None,
    })
}

/// `GET /api/v1/dags?projectId=&page=&pageSize=`: a project's DAGs by id.
/// The project left out is the caller's own, when its token is limited to
/// one, and the default project otherwise.
pub async fn list(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Query(query): Query<DagListQuery>,
) -> Result<AxumJson<Page<DagListItem>>> {
    let caller = crate::reach::caller(caller)?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let project = query.project_id.unwrap_or_else(|| own_project(&caller));
    caller.may_use_project(project)?;
    let mut select = dag::Entity::find().filter(dag::Column::ProjectId.eq(project));
    if let Some(search) = query
        .search
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        // LIKE's own wildcards in the text match themselves.
        let pattern = format!(
            "%{}%",
            search
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        use sea_orm::sea_query::ExprTrait;
        select = select.filter(
            sea_orm::sea_query::Expr::expr(sea_orm::sea_query::Func::lower(
                sea_orm::sea_query::Expr::col(dag::Column::Name),
            ))
            .like(sea_orm::sea_query::LikeExpr::new(pattern).escape('\\')),
        );
    }
    let paginator = select
        .order_by_asc(dag::Column::Id)
        .paginate(&state.db, page_size);
    let total = paginator.num_items().await?;
    let dags = paginator.fetch_page(page - 1).await?;
    let ids: Vec<i64> = dags.iter().map(|d| d.id).collect();
    let mut recent = recent_runs(&state, &ids).await?;
    let mut schedules: HashMap<i64, Vec<ScheduleDto>> = HashMap::new();
    for row in schedule::Entity::find()
        .filter(schedule::Column::DagId.is_in(ids.iter().copied()))
        .order_by_asc(schedule::Column::Id)
        .all(&state.db)
        .await?
    {
        schedules
            .entry(row.dag_id)
            .or_default()
            .push(schedule_dto(&row));
    }
    let items = dags
        .iter()
        .map(|row| DagListItem {
            dag: DagSummary::from(row),
            recent_runs: recent.remove(&row.id).unwrap_or_default(),
            schedules: schedules.remove(&row.id).unwrap_or_default(),
        })
        .collect();
    Ok(AxumJson(Page {
        items,
        total,
        page,
        page_size,
    }))
}

/// The latest [`RECENT_RUNS`] runs of each of `dags`, newest first, in one
/// query (a window over each DAG's runs).
async fn recent_runs(state: &AppState, dags: &[i64]) -> Result<HashMap<i64, Vec<RecentRun>>> {
    use sea_orm::ConnectionTrait;
    use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query as Sql};
    if dags.is_empty() {
        return Ok(HashMap::new());
    }
    let ranked = Sql::select()
        .columns([
            dag_run::Column::Id,
            dag_run::Column::DagId,
            dag_run::Column::Status,
            dag_run::Column::BizDate,
        ])
        .expr_as(
            Expr::cust("ROW_NUMBER() OVER (PARTITION BY dag_id ORDER BY id DESC)"),
            Alias::new("recent_rank"),
        )
        .from(dag_run::Entity)
        .and_where(dag_run::Column::DagId.is_in(dags.iter().copied()))
        .to_owned();
    let newest = Sql::select()
        .columns([
            Alias::new("id"),
            Alias::new("dag_id"),
            Alias::new("status"),
            Alias::new("biz_date"),
        ])
        .from_subquery(ranked, Alias::new("ranked"))
        .and_where(Expr::col(Alias::new("recent_rank")).lte(RECENT_RUNS))
        .order_by(Alias::new("id"), sea_orm::Order::Desc)
        .to_owned();
    let mut out: HashMap<i64, Vec<RecentRun>> = HashMap::new();
    for row in state.db.query_all(&newest).await? {
        let dag_id: i64 = row.try_get("", "dag_id")?;
        out.entry(dag_id).or_default().push(RecentRun {
            id: row.try_get("", "id")?,
            status: row.try_get("", "status")?,
            biz_date: row.try_get("", "biz_date")?,
        });
    }
    Ok(out)
}

/// The project a caller means when it names none: its token's, or the
/// default one.
fn own_project(caller: &Caller) -> i64 {
    caller
        .reach
        .project_id()
        .unwrap_or(datajump_store::projects::DEFAULT_PROJECT)
}

/// `POST /api/v1/dags`: creates a DAG (201); 409 if the name is taken.
///
/// The body is a DAG definition: `name` (required), `description`,
/// `projectId` (the caller's own project when left out, if its token is
/// limited to one), and optionally everything a DAG file has (`tasks`,
/// `schedules`, `params`, `maxActiveRuns`, …) in camelCase.
pub async fn create(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Query(query): Query<ApplyQuery>,
    Json(DefinitionBody(body)): Json<DefinitionBody>,
) -> Result<Response> {
    let caller = crate::reach::caller(caller)?;
    let (body, source_file) = take_source_file(body)?;
    let mut file = definition::from_request(&body)?;
    file.entry("tasks").or_insert_with(|| json!([]));
    file.entry("project")
        .or_insert_with(|| json!(own_project(&caller)));
    let parsed = definition::parse(&file)?;
    caller.may_use_project(parsed.project)?;
    if let Some(existing) = dag::Entity::find()
        .filter(dag::Column::Name.eq(&parsed.name))
        .one(&state.db)
        .await?
    {
        // Names are unique across projects; another project's DAG is not
        // pointed to.
        return Err(Error::conflict(
            if caller.reach.includes(existing.project_id) {
                format!(
                    "a DAG named '{}' already exists (id {}); update it with PUT /api/v1/dags/{}",
                    existing.name, existing.id, existing.id
                )
            } else {
                format!(
                    "a DAG named '{}' already exists in another project; DAG names are unique in an installation",
                    existing.name
                )
            },
        ));
    }
    if query.dry_run == Some(true) {
        let changes = preview(&state, &parsed, origin(source_file.as_deref())).await?;
        return Ok(dry_run(parsed.name, changes).into_response());
    }
    let report = store(&state, &parsed, origin(source_file.as_deref())).await?;
    info!(dag = %parsed.name, id = report.dag_id, "DAG created through the API");
    let dag = find_dag(&state, report.dag_id).await?;
    let location = format!("/api/v1/dags/{}", dag.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        AxumJson(with_changes(detail(&state, &dag).await?, report)?),
    )
        .into_response())
}

/// `GET /api/v1/dags/{dagId}`: the DAG with its definition.
pub async fn get(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
) -> Result<ChunkedJson<DagDetail>> {
    let dag = find_dag(&state, dag_id).await?;
    Ok(ChunkedJson(detail(&state, &dag).await?))
}

/// `GET /api/v1/dags/by-name/{name}`: the DAG with this name (names are
/// unique across projects) with its definition, as `GET /api/v1/dags/{dagId}`
/// answers; how a client that knows DAGs by name (the CLI) finds the id.
pub async fn by_name(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<ChunkedJson<DagDetail>> {
    let dag = dag::Entity::find()
        .filter(dag::Column::Name.eq(&name))
        .one(&state.db)
        .await?
        .ok_or_else(|| Error::not_found(format!("no DAG named '{name}'")))?;
    Ok(ChunkedJson(detail(&state, &dag).await?))
}

/// `PUT /api/v1/dags/{dagId}`: changes the fields given, keeps the others
/// (leaving out `tasks` keeps the tasks, and so on); the name cannot change.
pub async fn update(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
    Path(dag_id): Path<i64>,
    Query(query): Query<ApplyQuery>,
    Json(DefinitionChanges(body)): Json<DefinitionChanges>,
) -> Result<Response> {
    let caller = crate::reach::caller(caller)?;
    let dag = find_dag(&state, dag_id).await?;
    let (body, source_file) = take_source_file(body)?;
    let changes = definition::from_request(&body)?;
    if let Some(name) = changes.get("name")
        && name.as_str() != Some(dag.name.as_str())
    {
        return Err(Error::bad_request(format!(
            "invalid field `name`: a DAG cannot be renamed (it is '{}'); create a new DAG instead",
            dag.name
        )));
    }
    let mut file = definition::load(&state.db, &dag).await?;
    file.extend(changes);
    let parsed = definition::parse(&file)?;
    caller.may_use_project(parsed.project)?;
    if query.dry_run == Some(true) {
        let changes = preview(&state, &parsed, origin(source_file.as_deref())).await?;
        return Ok(dry_run(parsed.name, changes).into_response());
    }
    let report = store(&state, &parsed, origin(source_file.as_deref())).await?;
    let dag = find_dag(&state, dag_id).await?;
    Ok(AxumJson(with_changes(detail(&state, &dag).await?, report)?).into_response())
}

/// A stored DAG's detail with what its apply changed as `changes`: the
/// tasks and schedules added, changed and removed, and the notes
/// (parameters pasted bare into a script or SQL, which triggers and
/// events cannot set), so a client applying over HTTP hears what `dag
/// apply` prints.
fn with_changes(detail: DagDetail, report: ApplyReport) -> Result<DagDetail> {
    Ok(DagDetail {
        changes: Some(report),
        ..detail
    })
}

/// The answer to a dry run.
fn dry_run(name: String, changes: ApplyReport) -> AxumJson<DryRunResponse> {
    AxumJson(DryRunResponse {
        dry_run: true,
        name,
        changes,
    })
}

/// `DELETE /api/v1/dags/{dagId}`: removes the DAG with its tasks,
/// schedules and run history (204); 409 while it has RUNNING or QUEUED runs
/// or other DAGs' tasks depend on it.
pub async fn delete(State(state): State<AppState>, Path(dag_id): Path<i64>) -> Result<StatusCode> {
    let dag = find_dag(&state, dag_id).await?;
    let txn = datajump_store::db::begin_write(&state.db).await?;
    let dependants =
        datajump_store::catalog::dependants_of(&*txn, &dag.name, dag.project_id).await?;
    if !dependants.is_empty() {
        return Err(Error::conflict(format!(
            "DAG '{}' is depended on by {}: remove those dependencies first (they would count as not succeeded)",
            dag.name,
            dependants.join(", ")
        )));
    }
    let live: Vec<i64> = dag_run::Entity::find()
        .filter(dag_run::Column::DagId.eq(dag_id))
        .filter(dag_run::Column::Status.is_in([RunStatus::Running, RunStatus::Queued]))
        .order_by_asc(dag_run::Column::Id)
        .all(&txn)
        .await?
        .iter()
        .map(|r| r.id)
        .collect();
    if !live.is_empty() {
        return Err(Error::conflict(format!(
            "DAG '{}' has {} running or queued run(s) ({}): kill them first (POST /api/v1/dags/instances/{{id}}/kill) or wait",
            dag.name,
            live.len(),
            live.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let schedule_ids: Vec<i64> = definition::schedules_of(&txn, dag_id)
        .await?
        .iter()
        .map(|s| s.id)
        .collect();
    let runs_of_dag = SqlQuery::select()
        .column(dag_run::Column::Id)
        .from(dag_run::Entity)
        .and_where(dag_run::Column::DagId.eq(dag_id))
        .to_owned();
    execution::Entity::delete_many()
        .filter(execution::Column::DagRunId.in_subquery(runs_of_dag.clone()))
        .exec(&txn)
        .await?;
    large_output::Entity::delete_many()
        .filter(large_output::Column::DagRunId.in_subquery(runs_of_dag))
        .exec(&txn)
        .await?;
    task_instance::Entity::delete_many()
        .filter(task_instance::Column::DagId.eq(dag_id))
        .exec(&txn)
        .await?;
    dag_run::Entity::delete_many()
        .filter(dag_run::Column::DagId.eq(dag_id))
        .exec(&txn)
        .await?;
    task_dependency::Entity::delete_many()
        .filter(task_dependency::Column::DagId.eq(dag_id))
        .exec(&txn)
        .await?;
    task::Entity::delete_many()
        .filter(task::Column::DagId.eq(dag_id))
        .exec(&txn)
        .await?;
    schedule::Entity::delete_many()
        .filter(schedule::Column::DagId.eq(dag_id))
        .exec(&txn)
        .await?;
    // Its alerts go with it: one still due would be retried for a DAG that
    // is gone, and a DAG given its id later (SQLite reuses ids) would list
    // them and lend them its project's secrets (docs/SECURITY.md "HTTP
    // destinations"; a ticker also ends any it finds without a DAG).
    alert::Entity::delete_many()
        .filter(alert::Column::DagId.eq(dag_id))
        .exec(&txn)
        .await?;
    // Its versions' plans too: a DAG given its id later starts again at
    // version 1 and keeps its own.
    dag_version_plan::Entity::delete_many()
        .filter(dag_version_plan::Column::DagId.eq(dag_id))
        .exec(&txn)
        .await?;
    dag::Entity::delete_by_id(dag_id).exec(&txn).await?;
    txn.commit().await?;
    // Ids may be reused (SQLite): forget the deleted schedules' last fires.
    if !schedule_ids.is_empty() {
        match datajump_nats::key_value(state.bus.js(), &state.bus.names().ticker_bucket()).await {
            Ok(kv) => {
                for id in &schedule_ids {
                    if let Err(e) = kv.purge(state.bus.installation().ticker_key(*id)).await {
                        warn!(schedule = id, error = %e, "could not forget a deleted schedule's last fire");
                    }
                }
            }
            Err(e) => warn!(error = %e, "could not open the ticker bucket"),
        }
        schedules_changed(&state).await;
    }
    info!(dag = %dag.name, id = dag_id, "DAG deleted through the API");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/dags/{dagId}/tasks?page=&pageSize=`: the DAG's tasks
/// (with ids) in id order.
pub async fn tasks(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Query(query): Query<PageQuery>,
) -> Result<AxumJson<Page<TaskItem>>> {
    find_dag(&state, dag_id).await?;
    let (page, page_size) = paging(query.page, query.page_size, "pageSize")?;
    let paginator = task::Entity::find()
        .filter(task::Column::DagId.eq(dag_id))
        .order_by_asc(task::Column::Id)
        .paginate(&state.db, page_size);
    let total = paginator.num_items().await?;
    let rows = paginator.fetch_page(page - 1).await?;
    let deps = DependenciesByTask::new(
        task_dependency::Entity::find()
            .filter(task_dependency::Column::TaskId.is_in(rows.iter().map(|row| row.id)))
            .order_by_asc(task_dependency::Column::Id)
            .stream(&state.db)
            .await?
            .try_collect::<Vec<_>>()
            .await?,
    );
    Ok(AxumJson(Page {
        items: rows
            .iter()
            .map(|row| TaskItem::of(row, deps.of(row)))
            .collect(),
        total,
        page,
        page_size,
    }))
}

async fn set_online(state: &AppState, dag_id: i64, online: bool) -> Result<AxumJson<DagSummary>> {
    let dag = find_dag(state, dag_id).await?;
    let mut file = definition::load(&state.db, &dag).await?;
    file.insert("online".into(), json!(online));
    let parsed = definition::parse(&file)?;
    store(state, &parsed, Origin::Operation).await?;
    let dag = find_dag(state, dag_id).await?;
    Ok(AxumJson(DagSummary::from(&dag)))
}

/// Splits `sourceFile` off a DAG body: the path of the file `dag apply -f`
/// read the definition from, which makes the file its owner.
fn take_source_file(mut body: Value) -> Result<(Value, Option<String>)> {
    let source = match body.as_object_mut().and_then(|o| o.remove("sourceFile")) {
        None | Some(Value::Null) => None,
        Some(Value::String(path)) if !path.trim().is_empty() => Some(path),
        Some(other) => {
            return Err(Error::bad_request(format!(
                "invalid field `sourceFile`: expected the path of the DAG's file, got {other}"
            )));
        }
    };
    Ok((body, source))
}

/// How a body with (or without) a `sourceFile` is applied.
fn origin(source_file: Option<&str>) -> Origin<'_> {
    source_file.map_or(Origin::Edit, Origin::File)
}

/// `POST /api/v1/dags/{dagId}/online`: schedules fire it again.
pub async fn online(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
) -> Result<AxumJson<DagSummary>> {
    set_online(&state, dag_id, true).await
}

/// `POST /api/v1/dags/{dagId}/offline`: schedules stop firing it (manual
/// triggers still run it).
pub async fn offline(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
) -> Result<AxumJson<DagSummary>> {
    set_online(&state, dag_id, false).await
}

/// `POST /api/v1/dags/{dagId}/validate`: checks canvas edges for a cycle
/// (the edges of the DAG definition); missing or empty edges are valid.
pub async fn validate(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    JsonOrEmpty(body): JsonOrEmpty<ValidateRequest>,
) -> Result<AxumJson<ValidateResponse>> {
    find_dag(&state, dag_id).await?;
    let edges = body.edges.unwrap_or_default();
    if edges.is_empty() {
        return Ok(AxumJson(ValidateResponse {
            valid: true,
            message: "no edges: valid".to_owned(),
            cycle: None,
        }));
    }
    for (i, edge) in edges.iter().enumerate() {
        for (field, value) in [("source", &edge.source), ("target", &edge.target)] {
            if value.trim().is_empty() {
                return Err(Error::bad_request(format!(
                    "invalid field `edges[{i}].{field}`: must not be empty"
                )));
            }
        }
    }
    Ok(AxumJson(match find_cycle(&edges) {
        Some(cycle) => ValidateResponse {
            valid: false,
            message: format!("cycle detected: {}", cycle.join(" -> ")),
            cycle: Some(cycle),
        },
        None => ValidateResponse {
            valid: true,
            message: format!("valid: {} edges, no cycle", edges.len()),
            cycle: None,
        },
    }))
}

/// `POST /api/v1/dags/validate-condition` `{ condition }`: whether a SWITCH
/// condition compiles and reads only what a condition may, and what it
/// reads; the editor asks as a case is typed. Checked on a thread of its
/// own, as at apply (`datajump_conditions`).
pub async fn validate_condition(
    Json(body): Json<ValidateConditionRequest>,
) -> Result<AxumJson<ValidateConditionResponse>> {
    let checked =
        tokio::task::spawn_blocking(move || datajump_conditions::Condition::parse(&body.condition))
            .await
            .map_err(|e| Error::Internal(format!("checking the condition: {e}")))?;
    Ok(AxumJson(match checked {
        Ok(condition) => ValidateConditionResponse {
            valid: true,
            reads: condition.reads().paths(),
            error: None,
        },
        Err(e) => ValidateConditionResponse {
            valid: false,
            reads: Vec::new(),
            error: Some(format!("the condition {e}")),
        },
    }))
}

/// A 400 when `params` (a trigger's) would be refused by a task of the
/// DAG: pasted into a script as text, or bare into SQL without being a
/// number or a date. Better now than as a failed run.
async fn refuse_untrusted_problems(
    state: &AppState,
    dag: &dag::Model,
    params: &Params,
) -> Result<()> {
    if params.is_empty() {
        return Ok(());
    }
    let plans = datajump_store::catalog::current_plans(&state.db, [dag]).await?;
    let problems = plans
        .get(&dag.id)
        .map(|plan| plan.untrusted_param_problems(params))
        .unwrap_or_default();
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::BadRequest {
        message: format!(
            "the trigger's params would be refused by {} task(s) of '{}': trigger params are \
             untrusted, so scripts read them from the environment or quote them \
             (${{name:shell}}, ${{name:python}}, each standing alone outside strings, comments \
             and here-documents), SQL takes them bare only as numbers or dates (otherwise \
             ${{name:literal}} or ${{name:ident}}), and none may begin a SPARK or FLINK \
             command-line argument with '-'",
            problems.len(),
            dag.name
        ),
        details: problems,
        detail_problems: Vec::new(),
        problem: None,
    })
}

/// Reads trigger parameters: strings, or numbers and booleans as text.
/// A NUL is refused: PostgreSQL cannot store one, and no script wants one.
fn trigger_params(params: Option<Map<String, Value>>) -> Result<Params> {
    let mut out = Params::new();
    for (name, value) in params.unwrap_or_default() {
        if name.contains('\0') || value.as_str().is_some_and(|v| v.contains('\0')) {
            return Err(Error::bad_request(format!(
                "invalid field `params.{}`: NUL characters are not allowed",
                name.escape_debug()
            )));
        }
        // A trigger's param must not fill a task output's variable
        // (docs/SECURITY.md, "Values between tasks").
        if datajump_shared::outputs::looks_like_output(&name) {
            return Err(Error::bad_request(format!(
                "invalid field `params.{}`: {}",
                name.escape_debug(),
                datajump_shared::outputs::output_like_problem(&name)
            )));
        }
        let text = match value {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(Error::bad_request(format!(
                    "invalid field `params.{name}`: must be a string, number or boolean"
                )));
            }
        };
        out.insert(name, text);
    }
    Ok(out)
}

/// `POST /api/v1/dags/{dagId}/trigger`: starts a MANUAL run (202).
///
/// Answers at once with the run's key: the run itself is created by a
/// resolver when it takes the fire, so its id is not known yet; follow it at
/// `statusUrl` (`GET /api/v1/dags/instances/by-key/{runKey}`).
pub async fn trigger(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    JsonOrEmpty(body): JsonOrEmpty<TriggerRequest>,
) -> Result<Response> {
    let dag = find_dag(&state, dag_id).await?;
    let params = trigger_params(body.params)?;
    refuse_untrusted_problems(&state, &dag, &params).await?;
    let zone = parse_time_zone(&state.timezone).map_err(|e| Error::Internal(e.to_string()))?;
    let rule = DateRule::of_dag(&state.db, dag.id, zone)
        .await
        .map_err(backfill_error)?;
    let biz_date = body.biz_date.unwrap_or_else(|| rule.date_at(Utc::now()));
    // The date's logical time, not the trigger's moment: a manual run of a
    // date sees the dates its scheduled run and a backfill of it see.
    let logical = rule.logical_time(biz_date);
    let mut fire = FireMsg::manual(
        dag.id,
        Priority::of(dag.fire_priority),
        logical.at(),
        biz_date,
        params,
    );
    fire.time_zone = logical.zone().name().to_owned();
    state.bus.publish_fire(&fire).await?;
    info!(dag = %dag.name, run_key = %fire.dedup_key, "DAG triggered through the API");
    let status_url = format!("/api/v1/dags/instances/by-key/{}", fire.dedup_key);
    let instance_id = run_created_soon(&state, &fire.dedup_key).await?;
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, status_url.clone())],
        AxumJson(TriggerResponse {
            run_key: fire.dedup_key,
            dag_id: dag.id,
            biz_date,
            status_url,
            instance_id,
        }),
    )
        .into_response())
}

/// How long a trigger waits for the resolver to create its run, to answer
/// its id.
const RUN_ID_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The id of the run with `dedup_key` once it exists, looking for
/// [`RUN_ID_WAIT`] at most.
async fn run_created_soon(state: &AppState, dedup_key: &str) -> Result<Option<i64>> {
    let deadline = tokio::time::Instant::now() + RUN_ID_WAIT;
    loop {
        let found = dag_run::Entity::find()
            .filter(dag_run::Column::DedupKey.eq(dedup_key))
            .one(&state.db)
            .await?;
        if let Some(run) = found {
            return Ok(Some(run.id));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The API error of a [`BackfillError`].
fn backfill_error(e: BackfillError) -> Error {
    match e {
        BackfillError::Db(e) => Error::Db(e),
        e @ BackfillError::Schedule { .. } => Error::Internal(e.to_string()),
    }
}

/// Most business dates one backfill may cover.
pub const MAX_BACKFILL_DATES: i64 = 1000;

/// `POST /api/v1/dags/{dagId}/backfill` `{ from, to }`: starts one BACKFILL
/// run per business date of the range (202), with the run key a scheduled
/// fire of that date has ([`datajump_store::backfill`]), skipping dates
/// that already have a run. Like a trigger it answers at once with the run
/// keys; how many run at a time is the DAG's `maxActiveRuns`, or the
/// body's own `maxActiveRuns` for these runs (the others wait their turn
/// under `overlap: wait`), so a `skip` DAG refuses a backfill that would
/// drop dates (409).
pub async fn backfill(
    State(state): State<AppState>,
    Path(dag_id): Path<i64>,
    Query(query): Query<ApplyQuery>,
    Json(body): Json<BackfillRequest>,
) -> Result<Response> {
    let dag = find_dag(&state, dag_id).await?;
    if body.to < body.from {
        return Err(Error::bad_request(format!(
            "invalid field `to`: {} is before `from` ({})",
            body.to, body.from
        )));
    }
    if let Some(limit) = body.max_active_runs
        && !(1..=MAX_BACKFILL_DATES).contains(&i64::from(limit))
    {
        return Err(Error::bad_request(format!(
            "invalid field `maxActiveRuns`: {limit}; it is 1 to {MAX_BACKFILL_DATES}"
        )));
    }
    let days = (body.to - body.from).num_days() + 1;
    if days > MAX_BACKFILL_DATES {
        return Err(Error::bad_request(format!(
            "invalid field `to`: {days} business dates; a backfill covers at most {MAX_BACKFILL_DATES}"
        )));
    }
    let zone = parse_time_zone(&state.timezone).map_err(|e| Error::Internal(e.to_string()))?;
    let planned = backfill::plan(&state.db, &dag, body.from, body.to, zone)
        .await
        .map_err(backfill_error)?;
    // A date that has a run, whatever started it (manual, scheduled or
    // backfilled), already ran: its latest run decides.
    let dates: Vec<NaiveDate> = planned
        .iter()
        .filter_map(|p| match p {
            Planned::Fire(fire) => Some(fire.biz_date),
            Planned::NoFire { .. } => None,
        })
        .collect();
    let mut latest: HashMap<NaiveDate, dag_run::Model> = HashMap::new();
    for run in dag_run::Entity::find()
        .filter(dag_run::Column::DagId.eq(dag.id))
        .filter(dag_run::Column::BizDate.is_in(dates))
        .order_by_asc(dag_run::Column::Id)
        .all(&state.db)
        .await?
    {
        latest.insert(run.biz_date, run);
    }
    let mut fires = Vec::new();
    let mut again = Vec::new();
    let mut skipped = Vec::new();
    for item in planned {
        match item {
            Planned::Fire(fire) => match latest.remove(&fire.biz_date) {
                Some(run) => {
                    let failed = run.status.is_unsuccessful();
                    let scope = match (body.reprocess, run.status) {
                        (_, RunStatus::Queued | RunStatus::Running) => None,
                        (Reprocess::All, _) => Some(ResetScope::All),
                        (Reprocess::Failed, _) if failed => Some(ResetScope::FailedOnly),
                        _ => None,
                    };
                    match scope {
                        Some(scope) => again.push((run, scope)),
                        None => skipped.push(BackfillSkip {
                            biz_date: fire.biz_date,
                            reason: format!(
                                "already has run {} ({}){}",
                                run.id,
                                run.status,
                                if failed && body.reprocess == Reprocess::None {
                                    "; reprocess failed runs it again"
                                } else {
                                    ""
                                }
                            ),
                            run_id: Some(run.id),
                        }),
                    }
                }
                None => fires.push(FireMsg {
                    max_active_runs: body.max_active_runs,
                    ..fire
                }),
            },
            Planned::NoFire { date, schedule } => skipped.push(BackfillSkip {
                biz_date: date,
                reason: format!("schedule '{schedule}' does not fire for this business date"),
                run_id: None,
            }),
        }
    }
    let limit = body.max_active_runs.unwrap_or(dag.max_active_runs);
    if dag.overlap_policy == OverlapPolicy::Skip
        && fires.len() + again.len() > usize::try_from(limit).unwrap_or(0)
    {
        return Err(Error::conflict(format!(
            "DAG '{}' has overlap skip and maxActiveRuns {limit}: a backfill of {} dates would drop those beyond it; set overlap to wait, or backfill fewer dates at a time",
            dag.name,
            fires.len() + again.len()
        )));
    }
    if query.dry_run == Some(true) {
        let mut runs: Vec<BackfillRun> = again
            .iter()
            .map(|(run, _)| BackfillRun {
                biz_date: run.biz_date,
                status_url: format!("/api/v1/dags/instances/by-key/{}", run.dedup_key),
                run_key: run.dedup_key.clone(),
                schedule_time: run.logical_time,
                reprocessed: true,
            })
            .chain(fires.iter().map(|fire| BackfillRun {
                biz_date: fire.biz_date,
                status_url: format!("/api/v1/dags/instances/by-key/{}", fire.dedup_key),
                run_key: fire.dedup_key.clone(),
                schedule_time: fire.logical_time,
                reprocessed: false,
            }))
            .collect();
        runs.sort_by_key(|run| run.biz_date);
        skipped.sort_by_key(|skip| skip.biz_date);
        return Ok(AxumJson(BackfillResponse {
            dag_id: dag.id,
            dry_run: true,
            runs,
            skipped,
        })
        .into_response());
    }
    let mut runs = Vec::with_capacity(fires.len() + again.len());
    for (run, scope) in again {
        match datajump_engine::reset(&state.db, RunId(run.id), scope, Utc::now()).await {
            Ok(effects) => {
                effects.publish(&state.bus).await?;
                runs.push(BackfillRun {
                    biz_date: run.biz_date,
                    status_url: format!("/api/v1/dags/instances/by-key/{}", run.dedup_key),
                    run_key: run.dedup_key,
                    schedule_time: run.logical_time,
                    reprocessed: true,
                });
            }
            Err(OperatorError::Db(e)) => return Err(Error::Db(e)),
            Err(e) => skipped.push(BackfillSkip {
                biz_date: run.biz_date,
                reason: format!("run {} cannot run again now: {e}", run.id),
                run_id: Some(run.id),
            }),
        }
    }
    for fire in fires {
        state.bus.publish_fire(&fire).await?;
        runs.push(BackfillRun {
            biz_date: fire.biz_date,
            status_url: format!("/api/v1/dags/instances/by-key/{}", fire.dedup_key),
            run_key: fire.dedup_key,
            schedule_time: fire.logical_time,
            reprocessed: false,
        });
    }
    runs.sort_by_key(|run| run.biz_date);
    info!(dag = %dag.name, runs = runs.len(), skipped = skipped.len(), "backfill through the API");
    Ok((
        StatusCode::ACCEPTED,
        AxumJson(BackfillResponse {
            dag_id: dag.id,
            dry_run: false,
            runs,
            skipped,
        }),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_scalars() {
        let mut map = Map::new();
        map.insert("n".into(), json!(3));
        map.insert("s".into(), json!("x"));
        let params = trigger_params(Some(map)).unwrap();
        assert_eq!(params.get("n").map(String::as_str), Some("3"));
        let mut bad = Map::new();
        bad.insert("o".into(), json!({}));
        assert!(
            trigger_params(Some(bad))
                .unwrap_err()
                .to_string()
                .contains("params.o")
        );
    }
}
