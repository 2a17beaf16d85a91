//! Storing DAG definitions: `dag apply` and the lookups around it.
//!
//! [`apply`] writes a validated [`DagFile`] in one transaction, creating or
//! updating by name, and reports what changed so the CLI can print it. Tasks
//! and schedules keep their ids across updates (matched by name), so runs in
//! flight and tickers' last-fire records stay attached to them.

use std::collections::{BTreeMap, HashMap};

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait,
    IntoActiveModel, ModelTrait, QueryFilter, QueryOrder, QuerySelect, sea_query::Expr,
};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use datajump_shared::content::TaskType;
use datajump_shared::dag_file::DagFile;
use datajump_shared::datasets::OnUpdate;
use datajump_shared::entities::{dag, project, schedule, task, task_dependency};
use datajump_shared::kinds::{Catchup, RetryStrategy, ScheduleKind, Strategy};
use datajump_shared::params::params_to_json;
use datajump_shared::plan::Plan;
use datajump_shared::subjects::Priority;

/// Why a DAG could not be stored.
#[derive(Debug, Error)]
pub enum CatalogError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// No DAG has that name.
    #[error("no DAG named '{0}'")]
    UnknownDag(String),
    /// The DAG's project is not a row.
    #[error(
        "no project with id {0} (create one with `datajump project create NAME`; `datajump project list` shows them)"
    )]
    UnknownProject(i64),
    /// A definition edit of a DAG that a file owns.
    #[error(
        "DAG '{dag}' is managed by the file {file}: change the file and apply it (`datajump dag apply -f {file}`); putting it online or offline and pausing or resuming its schedules stay open to operators"
    )]
    FileManaged {
        /// The DAG.
        dag: String,
        /// Its file.
        file: String,
    },
}

/// Where a DAG definition being applied comes from, which decides what of
/// it wins (docs/DAG_FORMAT.md "File-managed DAGs").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin<'a> {
    /// A DAG file at this path (`dag apply -f`, `up`'s folder). It owns
    /// the definition; the operational state (the DAG's `online`, each
    /// schedule's `active`) changes only where the file's own value changed
    /// since it was last applied, so an operator's choice survives a restart
    /// or an unchanged re-apply.
    File(&'a str),
    /// A definition edit through the API (a PUT, the canvas, adding or
    /// changing a schedule): refused for a DAG a file owns.
    Edit,
    /// An operator's change of the operational state alone (online or
    /// offline, a schedule paused or resumed), on any DAG: the caller
    /// changes nothing else of the stored definition.
    Operation,
}

/// The operational flag (`online`, `active`) an apply from `origin` leaves:
/// `stored` is the row's value and `last_from_file` what the file said
/// when it was last applied.
fn operational(
    origin: Origin<'_>,
    wanted: bool,
    stored: bool,
    last_from_file: Option<bool>,
) -> bool {
    match origin {
        Origin::File(_) if last_from_file == Some(wanted) => stored,
        _ => wanted,
    }
}

/// What `apply` changed; the API answers it as `changes` (camelCase), and
/// the CLI prints it with this type's `Display`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyReport {
    /// The DAG's id.
    pub dag_id: i64,
    /// Its version after the change.
    pub version: i32,
    /// True when the DAG did not exist before.
    pub created: bool,
    /// DAG-level fields that changed.
    pub dag_fields: Vec<String>,
    /// Tasks added.
    pub tasks_added: Vec<String>,
    /// Tasks whose definition or dependencies changed.
    pub tasks_changed: Vec<String>,
    /// Tasks removed.
    pub tasks_removed: Vec<String>,
    /// Schedules added.
    pub schedules_added: Vec<String>,
    /// Schedules changed.
    pub schedules_changed: Vec<String>,
    /// Schedules removed.
    pub schedules_removed: Vec<String>,
    /// Notes that are not errors: parameters pasted bare into a script or
    /// SQL, which refuse values from triggers and events
    /// ([`DagFile::untrusted_param_notes`]), and credentials written in a
    /// SPARK or FLINK `conf` ([`DagFile::credential_notes`]).
    pub notes: Vec<String>,
}

impl ApplyReport {
    /// True when nothing changed.
    pub fn is_unchanged(&self) -> bool {
        !self.created
            && self.dag_fields.is_empty()
            && self.tasks_added.is_empty()
            && self.tasks_changed.is_empty()
            && self.tasks_removed.is_empty()
            && self.schedules_added.is_empty()
            && self.schedules_changed.is_empty()
            && self.schedules_removed.is_empty()
    }

    /// True when what the tickers load changed (schedules, whether the DAG
    /// is online, the priority its fires go out by), so they should reload.
    pub fn schedules_touched(&self) -> bool {
        self.created
            || !self.schedules_added.is_empty()
            || !self.schedules_changed.is_empty()
            || !self.schedules_removed.is_empty()
            || self
                .dag_fields
                .iter()
                .any(|f| f == "online" || f == "priority")
    }
}

impl std::fmt::Display for ApplyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_unchanged() {
            write!(f, "unchanged (version {})", self.version)?;
        } else {
            let verb = if self.created { "created" } else { "updated" };
            write!(f, "{verb} (version {})", self.version)?;
        }
        let lists = [
            ("fields changed", &self.dag_fields),
            ("tasks added", &self.tasks_added),
            ("tasks changed", &self.tasks_changed),
            ("tasks removed", &self.tasks_removed),
            ("schedules added", &self.schedules_added),
            ("schedules changed", &self.schedules_changed),
            ("schedules removed", &self.schedules_removed),
        ];
        for (label, names) in lists {
            if !names.is_empty() {
                write!(f, "\n  {label}: {}", names.join(", "))?;
            }
        }
        for note in &self.notes {
            write!(f, "\n  note: {note}")?;
        }
        Ok(())
    }
}

/// The comparable definition of a task row: what `apply` writes.
#[derive(Debug, PartialEq)]
struct TaskDefinition {
    description: String,
    task_type: TaskType,
    content: serde_json::Value,
    params: serde_json::Value,
    priority: i32,
    retry_max: i32,
    retry_interval_secs: i32,
    retry_strategy: RetryStrategy,
    retry_on_exit_codes: serde_json::Value,
    retry_on_timeout: bool,
    retry_max_interval_secs: i32,
    retry_jitter_pct: i32,
    timeout_secs: i32,
    wait_timeout_secs: i32,
    queue_timeout_secs: Option<i32>,
    queue: String,
    strategy: Strategy,
    allow_failure: bool,
    enabled: bool,
    dependencies: Vec<(Option<String>, String, &'static str, i32, bool)>,
    datasets: Option<serde_json::Value>,
    map: Option<serde_json::Value>,
}

/// The comparable definition of a schedule row.
#[derive(Debug, PartialEq)]
struct ScheduleDefinition {
    kind: ScheduleKind,
    cron_expr: Option<String>,
    event_name: Option<String>,
    after_dag: Option<String>,
    data_condition: Option<serde_json::Value>,
    on_update: Option<OnUpdate>,
    timezone: String,
    start_date: Option<chrono::NaiveDate>,
    end_date: Option<chrono::NaiveDate>,
    active: bool,
    catchup: Catchup,
    catchup_limit: i32,
    misfire_grace_secs: i32,
    biz_date_offset_days: i32,
    timeout_secs: Option<i32>,
}

fn task_definition_of_file(file: &datajump_shared::dag_file::TaskFile) -> TaskDefinition {
    let mut dependencies: Vec<_> = file
        .depends_on
        .iter()
        .map(|d| {
            let parts = d.parts();
            (
                parts.dag.map(str::to_owned),
                parts.task.to_owned(),
                parts.dep_type.as_str(),
                parts.offset_day,
                parts.previous_run,
            )
        })
        .collect();
    dependencies.sort();
    TaskDefinition {
        description: file.description.clone(),
        task_type: file.task_type().unwrap_or_default(),
        content: file.content_json(),
        params: params_to_json(&file.params),
        priority: file.priority,
        // The engine decides a SWITCH: nothing runs that could be retried.
        retry_max: if file.task_type() == Some(TaskType::Switch) {
            0
        } else {
            file.retry.max
        },
        retry_interval_secs: file.retry.interval,
        retry_strategy: file.retry.strategy,
        retry_on_exit_codes: serde_json::json!(file.retry.on_exit_codes),
        retry_on_timeout: file.retry.on_timeout,
        retry_max_interval_secs: file.retry.max_interval_secs(),
        retry_jitter_pct: file.retry.jitter_pct(),
        timeout_secs: file.timeout,
        wait_timeout_secs: file.wait_timeout,
        queue_timeout_secs: file.queue_timeout,
        queue: file.queue.clone(),
        strategy: file.strategy,
        allow_failure: file.allow_failure,
        enabled: file.enabled,
        dependencies,
        datasets: (!file.outputs.is_empty()).then(|| serde_json::json!(file.outputs)),
        // Validated with the file: a map that does not read was refused.
        map: file
            .map
            .as_ref()
            .and_then(|map| map.spec().ok())
            .map(|spec| serde_json::json!(spec)),
    }
}

fn task_definition_of_row(row: &task::Model, deps: &[task_dependency::Model]) -> TaskDefinition {
    let mut dependencies: Vec<_> = deps
        .iter()
        .filter(|d| d.task_id == row.id)
        .map(|d| {
            (
                d.parent_dag.clone(),
                d.parent_task.clone(),
                d.dep_type.as_str(),
                d.offset_day,
                d.previous_run,
            )
        })
        .collect();
    dependencies.sort();
    TaskDefinition {
        description: row.description.clone(),
        task_type: row.task_type,
        content: row.content.clone(),
        params: row.params.clone(),
        priority: row.priority,
        retry_max: row.retry_max,
        retry_interval_secs: row.retry_interval_secs,
        retry_strategy: row.retry_strategy,
        retry_on_exit_codes: row.retry_on_exit_codes.clone(),
        retry_on_timeout: row.retry_on_timeout,
        retry_max_interval_secs: row.retry_max_interval_secs,
        retry_jitter_pct: row.retry_jitter_pct,
        timeout_secs: row.timeout_secs,
        wait_timeout_secs: row.wait_timeout_secs,
        queue_timeout_secs: row.queue_timeout_secs,
        queue: row.queue.clone(),
        strategy: row.strategy,
        allow_failure: row.allow_failure,
        enabled: row.enabled,
        dependencies,
        datasets: row.datasets.clone(),
        map: row.map.clone(),
    }
}

fn schedule_definition_of_file(
    file: &datajump_shared::dag_file::ScheduleFile,
    default_timezone: &str,
) -> ScheduleDefinition {
    ScheduleDefinition {
        kind: match (&file.event, &file.after, &file.on) {
            (Some(_), _, _) => ScheduleKind::Event,
            (None, Some(_), _) => ScheduleKind::After,
            (None, None, Some(_)) => ScheduleKind::Data,
            (None, None, None) => ScheduleKind::Cron,
        },
        cron_expr: file.cron.as_ref().map(|c| c.trim().to_owned()),
        event_name: file.event.clone(),
        after_dag: file.after.clone(),
        data_condition: file.on.as_ref().map(|on| serde_json::json!(on)),
        on_update: file.on.as_ref().map(|_| file.on_update),
        timezone: file
            .timezone
            .clone()
            .unwrap_or_else(|| default_timezone.to_owned()),
        start_date: file.start_date,
        end_date: file.end_date,
        active: file.active,
        catchup: file.catchup,
        catchup_limit: file.catchup_limit,
        misfire_grace_secs: file.misfire_grace,
        biz_date_offset_days: file.biz_date_offset,
        timeout_secs: file.timeout,
    }
}

fn schedule_definition_of_row(row: &schedule::Model) -> ScheduleDefinition {
    ScheduleDefinition {
        kind: row.kind,
        cron_expr: row.cron_expr.clone(),
        event_name: row.event_name.clone(),
        after_dag: row.after_dag.clone(),
        data_condition: row.data_condition.clone(),
        on_update: row.on_update,
        timezone: row.timezone.clone(),
        start_date: row.start_date,
        end_date: row.end_date,
        active: row.active,
        catchup: row.catchup,
        catchup_limit: row.catchup_limit,
        misfire_grace_secs: row.misfire_grace_secs,
        biz_date_offset_days: row.biz_date_offset_days,
        timeout_secs: row.timeout_secs,
    }
}

/// Creates or updates the DAG named in `file` (already validated by
/// [`DagFile::parse`]) in one transaction. Schedules without a time zone get
/// `default_timezone`.
pub async fn apply(
    db: &DatabaseConnection,
    file: &DagFile,
    default_timezone: &str,
    origin: Origin<'_>,
) -> Result<ApplyReport, CatalogError> {
    write(db, file, default_timezone, origin, Outcome::Commit).await
}

/// What [`apply`] would change, and the errors it would meet, without
/// changing anything (`dag apply --dry-run`): the same writes in a
/// transaction that is rolled back, so the preview cannot drift from what
/// an apply does. The report's `dag_id` and `version` are those the DAG
/// would have (a new DAG's id is not kept).
pub async fn preview(
    db: &DatabaseConnection,
    file: &DagFile,
    default_timezone: &str,
    origin: Origin<'_>,
) -> Result<ApplyReport, CatalogError> {
    write(db, file, default_timezone, origin, Outcome::RollBack).await
}

/// What becomes of [`write`]'s transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Commit,
    RollBack,
}

async fn write(
    db: &DatabaseConnection,
    file: &DagFile,
    default_timezone: &str,
    origin: Origin<'_>,
    outcome: Outcome,
) -> Result<ApplyReport, CatalogError> {
    let txn = crate::db::begin_write(db).await?;
    let now = Utc::now();
    let mut report = ApplyReport::default();

    if project::Entity::find_by_id(file.project)
        .one(&txn)
        .await?
        .is_none()
    {
        return Err(CatalogError::UnknownProject(file.project));
    }
    let existing = dag::Entity::find()
        .filter(dag::Column::Name.eq(&file.name))
        .one(&txn)
        .await?;
    let params = params_to_json(&file.params);
    let alert_config = file
        .alerts
        .as_ref()
        .and_then(|alerts| serde_json::to_value(alerts).ok());
    if let (Some(row), Origin::Edit) = (&existing, origin)
        && let Some(path) = &row.source_file
    {
        return Err(CatalogError::FileManaged {
            dag: row.name.clone(),
            file: path.clone(),
        });
    }
    let from_file = match origin {
        Origin::File(path) => Some(path.to_owned()),
        _ => None,
    };
    // What the schedules fired under before this apply: a schedule that
    // begins to fire now (its DAG put online, or moved to another project
    // whose DAGs its `after:` names) counts what happens from now on only.
    let was_firing_in = existing
        .as_ref()
        .filter(|row| row.online)
        .map(|row| row.project_id);
    let dag_row = match existing {
        None => {
            report.created = true;
            dag::ActiveModel {
                name: Set(file.name.clone()),
                description: Set(file.description.clone()),
                project_id: Set(file.project),
                owner: Set(file.owner.clone()),
                online: Set(file.online),
                version: Set(1),
                params: Set(params),
                max_active_runs: Set(file.max_active_runs),
                overlap_policy: Set(file.overlap),
                priority: Set(file.priority),
                fire_priority: Set(file.fire_priority()),
                queue_timeout_secs: Set(file.queue_timeout),
                run_timeout_secs: Set(file.run_timeout),
                alert_config: Set(alert_config.clone()),
                created_at: Set(now),
                updated_at: Set(now),
                file_online: Set(from_file.is_some().then_some(file.online)),
                source_file: Set(from_file),
                ..Default::default()
            }
            .insert(&txn)
            .await?
        }
        Some(row) => {
            let online = operational(origin, file.online, row.online, row.file_online);
            let fields = [
                ("description", row.description != file.description),
                ("project", row.project_id != file.project),
                ("owner", row.owner != file.owner),
                ("online", row.online != online),
                ("file", from_file.is_some() && row.source_file != from_file),
                ("params", row.params != params),
                (
                    "max_active_runs",
                    row.max_active_runs != file.max_active_runs,
                ),
                ("overlap", row.overlap_policy != file.overlap),
                (
                    "priority",
                    row.priority != file.priority || row.fire_priority != file.fire_priority(),
                ),
                (
                    "queue_timeout",
                    row.queue_timeout_secs != file.queue_timeout,
                ),
                ("run_timeout", row.run_timeout_secs != file.run_timeout),
                ("alerts", row.alert_config != alert_config),
            ];
            report.dag_fields = fields
                .iter()
                .filter(|(_, changed)| *changed)
                .map(|(name, _)| (*name).to_owned())
                .collect();
            let mut active = row.into_active_model();
            active.description = Set(file.description.clone());
            active.project_id = Set(file.project);
            active.owner = Set(file.owner.clone());
            active.online = Set(online);
            if from_file.is_some() {
                active.file_online = Set(Some(file.online));
                active.source_file = Set(from_file);
            }
            active.params = Set(params);
            active.max_active_runs = Set(file.max_active_runs);
            active.overlap_policy = Set(file.overlap);
            active.priority = Set(file.priority);
            active.fire_priority = Set(file.fire_priority());
            active.queue_timeout_secs = Set(file.queue_timeout);
            active.run_timeout_secs = Set(file.run_timeout);
            active.alert_config = Set(alert_config);
            active.update(&txn).await?
        }
    };

    apply_tasks(&txn, &dag_row, file, now, &mut report).await?;
    apply_schedules(
        &txn,
        &dag_row,
        file,
        default_timezone,
        origin,
        now,
        &mut report,
    )
    .await?;
    if dag_row.online && was_firing_in != Some(dag_row.project_id) {
        restart_schedules(&txn, dag_row.id, now).await?;
    }

    let mut dag_row = dag_row;
    if !report.created && !report.is_unchanged() {
        let mut active = dag_row.into_active_model();
        active.version = Set(active.version.as_ref() + 1);
        active.updated_at = Set(now);
        dag_row = active.update(&txn).await?;
    }
    report.dag_id = dag_row.id;
    report.version = dag_row.version;
    report.notes = file.untrusted_param_notes();
    report.notes.extend(file.credential_notes());
    report.notes.extend(file.switch_notes());
    report
        .notes
        .extend(missing_upstream_notes(&*txn, file).await?);
    match outcome {
        Outcome::Commit => txn.commit().await?,
        Outcome::RollBack => txn.rollback().await?,
    }
    Ok(report)
}

async fn apply_tasks(
    txn: &sea_orm::DatabaseTransaction,
    dag_row: &dag::Model,
    file: &DagFile,
    now: chrono::DateTime<Utc>,
    report: &mut ApplyReport,
) -> Result<(), DbErr> {
    let old_tasks = task::Entity::find()
        .filter(task::Column::DagId.eq(dag_row.id))
        .all(txn)
        .await?;
    let old_deps = task_dependency::Entity::find()
        .filter(task_dependency::Column::DagId.eq(dag_row.id))
        .all(txn)
        .await?;
    let mut old_by_name: BTreeMap<String, task::Model> =
        old_tasks.into_iter().map(|t| (t.name.clone(), t)).collect();
    let mut ids: BTreeMap<String, i64> = BTreeMap::new();

    for task_file in &file.tasks {
        let wanted = task_definition_of_file(task_file);
        let active = task::ActiveModel {
            dag_id: Set(dag_row.id),
            name: Set(task_file.name.clone()),
            description: Set(wanted.description.clone()),
            task_type: Set(wanted.task_type),
            content: Set(wanted.content.clone()),
            params: Set(wanted.params.clone()),
            priority: Set(wanted.priority),
            retry_max: Set(wanted.retry_max),
            retry_interval_secs: Set(wanted.retry_interval_secs),
            retry_strategy: Set(wanted.retry_strategy),
            retry_on_exit_codes: Set(wanted.retry_on_exit_codes.clone()),
            retry_on_timeout: Set(wanted.retry_on_timeout),
            retry_max_interval_secs: Set(wanted.retry_max_interval_secs),
            retry_jitter_pct: Set(wanted.retry_jitter_pct),
            timeout_secs: Set(wanted.timeout_secs),
            wait_timeout_secs: Set(wanted.wait_timeout_secs),
            queue_timeout_secs: Set(wanted.queue_timeout_secs),
            queue: Set(wanted.queue.clone()),
            strategy: Set(wanted.strategy),
            allow_failure: Set(wanted.allow_failure),
            enabled: Set(wanted.enabled),
            datasets: Set(wanted.datasets.clone()),
            map: Set(wanted.map.clone()),
            updated_at: Set(now),
            ..Default::default()
        };
        let id = match old_by_name.remove(&task_file.name) {
            None => {
                report.tasks_added.push(task_file.name.clone());
                task::ActiveModel {
                    created_at: Set(now),
                    position_x: Set(None),
                    position_y: Set(None),
                    ..active
                }
                .insert(txn)
                .await?
                .id
            }
            Some(old) => {
                if task_definition_of_row(&old, &old_deps) != wanted {
                    report.tasks_changed.push(task_file.name.clone());
                    task::ActiveModel {
                        id: Set(old.id),
                        ..active
                    }
                    .update(txn)
                    .await?;
                }
                old.id
            }
        };
        ids.insert(task_file.name.clone(), id);
    }
    for (name, old) in old_by_name {
        report.tasks_removed.push(name);
        old.delete(txn).await?;
    }

    task_dependency::Entity::delete_many()
        .filter(task_dependency::Column::DagId.eq(dag_row.id))
        .exec(txn)
        .await?;
    let mut deps = Vec::new();
    for task_file in &file.tasks {
        let child = ids[&task_file.name];
        for dep in &task_file.depends_on {
            let parts = dep.parts();
            deps.push(task_dependency::ActiveModel {
                dag_id: Set(dag_row.id),
                task_id: Set(child),
                parent_task_id: Set(parts.dag.is_none().then(|| ids[parts.task])),
                parent_dag: Set(parts.dag.map(str::to_owned)),
                parent_task: Set(parts.task.to_owned()),
                dep_type: Set(parts.dep_type),
                offset_day: Set(parts.offset_day),
                previous_run: Set(parts.previous_run),
                created_at: Set(now),
                ..Default::default()
            });
        }
    }
    for chunk in deps.chunks(500) {
        task_dependency::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(txn)
            .await?;
    }
    Ok(())
}

/// When a schedule counts from after this apply (docs/DAG_FORMAT.md
/// "Dependency triggers"): from `now` when it begins to fire (new and
/// active, or resumed) or waits for something else (another kind,
/// upstream DAG or condition); otherwise from when it did before. A DAG
/// put online restarts all its schedules ([`restart_schedules`]).
fn active_since(
    old: Option<&schedule::Model>,
    wanted: &ScheduleDefinition,
    now: chrono::DateTime<Utc>,
) -> chrono::DateTime<Utc> {
    let Some(old) = old else {
        return now;
    };
    let same_wait = old.kind == wanted.kind
        && old.after_dag == wanted.after_dag
        && old.data_condition == wanted.data_condition;
    if wanted.active && !(old.active && same_wait) {
        now
    } else {
        old.counts_from()
    }
}

/// A DAG put online, or moved to another project (whose DAGs and datasets
/// its schedules then name): its active schedules count from `now`, so
/// none fires for an upstream run that ended, or an event recorded, while
/// it was offline or elsewhere (docs/DAG_FORMAT.md "Dependency triggers").
async fn restart_schedules(
    txn: &sea_orm::DatabaseTransaction,
    dag_id: i64,
    now: chrono::DateTime<Utc>,
) -> Result<(), DbErr> {
    schedule::Entity::update_many()
        .col_expr(schedule::Column::ActiveSince, Expr::value(now))
        .filter(schedule::Column::DagId.eq(dag_id))
        .filter(schedule::Column::Active.eq(true))
        .exec(txn)
        .await?;
    Ok(())
}

async fn apply_schedules(
    txn: &sea_orm::DatabaseTransaction,
    dag_row: &dag::Model,
    file: &DagFile,
    default_timezone: &str,
    origin: Origin<'_>,
    now: chrono::DateTime<Utc>,
    report: &mut ApplyReport,
) -> Result<(), DbErr> {
    let mut old_by_name: BTreeMap<String, schedule::Model> = schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag_row.id))
        .all(txn)
        .await?
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    let from_file = matches!(origin, Origin::File(_));
    for (schedule_file, name) in file.schedules.iter().zip(file.schedule_names()) {
        let mut wanted = schedule_definition_of_file(schedule_file, default_timezone);
        let old = old_by_name.remove(&name);
        if let Some(old) = &old {
            wanted.active = operational(origin, wanted.active, old.active, old.file_active);
        }
        let file_active = if from_file {
            Some(schedule_file.active)
        } else {
            old.as_ref().and_then(|o| o.file_active)
        };
        let since = active_since(old.as_ref(), &wanted, now);
        let active = schedule::ActiveModel {
            dag_id: Set(dag_row.id),
            name: Set(name.clone()),
            kind: Set(wanted.kind),
            cron_expr: Set(wanted.cron_expr.clone()),
            event_name: Set(wanted.event_name.clone()),
            after_dag: Set(wanted.after_dag.clone()),
            data_condition: Set(wanted.data_condition.clone()),
            on_update: Set(wanted.on_update),
            timezone: Set(wanted.timezone.clone()),
            start_date: Set(wanted.start_date),
            end_date: Set(wanted.end_date),
            active: Set(wanted.active),
            catchup: Set(wanted.catchup),
            catchup_limit: Set(wanted.catchup_limit),
            misfire_grace_secs: Set(wanted.misfire_grace_secs),
            timeout_secs: Set(wanted.timeout_secs),
            biz_date_offset_days: Set(wanted.biz_date_offset_days),
            file_active: Set(file_active),
            updated_at: Set(now),
            active_since: Set(Some(since)),
            ..Default::default()
        };
        match old {
            None => {
                report.schedules_added.push(name);
                schedule::ActiveModel {
                    created_at: Set(now),
                    ..active
                }
                .insert(txn)
                .await?;
            }
            Some(old) if schedule_definition_of_row(&old) != wanted => {
                report.schedules_changed.push(name);
                schedule::ActiveModel {
                    id: Set(old.id),
                    ..active
                }
                .update(txn)
                .await?;
            }
            Some(old) if old.file_active != file_active || old.active_since != Some(since) => {
                schedule::ActiveModel {
                    id: Set(old.id),
                    ..active
                }
                .update(txn)
                .await?;
            }
            Some(_) => {}
        }
    }
    for (name, old) in old_by_name {
        report.schedules_removed.push(name);
        old.delete(txn).await?;
    }
    Ok(())
}

/// Finds a DAG by name.
pub async fn dag_by_name(db: &DatabaseConnection, name: &str) -> Result<dag::Model, CatalogError> {
    dag::Entity::find()
        .filter(dag::Column::Name.eq(name))
        .one(db)
        .await?
        .ok_or_else(|| CatalogError::UnknownDag(name.to_owned()))
}

/// Loads the current plans of `dags`, keyed by DAG id, in two queries
/// whatever their number: the resolver turns a batch of fires into runs at
/// once.
pub async fn current_plans<'a, C: sea_orm::ConnectionTrait>(
    conn: &C,
    dags: impl IntoIterator<Item = &'a dag::Model>,
) -> Result<BTreeMap<i64, Plan>, DbErr> {
    let dags: BTreeMap<i64, &dag::Model> = dags.into_iter().map(|d| (d.id, d)).collect();
    if dags.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut tasks: BTreeMap<i64, Vec<task::Model>> = BTreeMap::new();
    for row in task::Entity::find()
        .filter(task::Column::DagId.is_in(dags.keys().copied()))
        .order_by_asc(task::Column::Id)
        .all(conn)
        .await?
    {
        tasks.entry(row.dag_id).or_default().push(row);
    }
    let mut deps: BTreeMap<i64, Vec<task_dependency::Model>> = BTreeMap::new();
    for row in task_dependency::Entity::find()
        .filter(task_dependency::Column::DagId.is_in(dags.keys().copied()))
        .all(conn)
        .await?
    {
        deps.entry(row.dag_id).or_default().push(row);
    }
    Ok(dags
        .into_iter()
        .map(|(id, dag)| {
            let tasks = tasks.get(&id).map(Vec::as_slice).unwrap_or_default();
            let deps = deps.get(&id).map(Vec::as_slice).unwrap_or_default();
            (id, Plan::from_rows(dag, tasks, deps))
        })
        .collect())
}

/// The active event schedules of project `project`'s DAGs bound to the
/// event `name`: what a resolver fires when the event arrives (each run
/// then needs its DAG online), and what `POST /api/v1/events/{name}` says
/// it will start. An event never reaches another project's DAGs
/// (docs/SECURITY.md, "Projects"). Each comes with its DAG's fire
/// priority, the level its fires are published on.
pub async fn event_schedules(
    db: &impl sea_orm::ConnectionTrait,
    project: i64,
    name: &str,
) -> Result<Vec<(schedule::Model, Priority)>, DbErr> {
    let project_dags = sea_orm::sea_query::Query::select()
        .column(dag::Column::Id)
        .from(dag::Entity)
        .and_where(dag::Column::ProjectId.eq(project))
        .to_owned();
    let schedules = schedule::Entity::find()
        .filter(schedule::Column::Kind.eq(ScheduleKind::Event))
        .filter(schedule::Column::EventName.eq(name))
        .filter(schedule::Column::Active.eq(true))
        .filter(schedule::Column::DagId.in_subquery(project_dags))
        .order_by_asc(schedule::Column::Id)
        .all(db)
        .await?;
    if schedules.is_empty() {
        return Ok(Vec::new());
    }
    let priorities = fire_priorities(db, schedules.iter().map(|s| s.dag_id)).await?;
    Ok(schedules
        .into_iter()
        .filter_map(|schedule| {
            let priority = *priorities.get(&schedule.dag_id)?;
            Some((schedule, priority))
        })
        .collect())
}

/// The fire priority of each of `dag_ids`' DAGs that exists: the level
/// its fires are published on (docs/ARCHITECTURE.md, "Priorities").
pub async fn fire_priorities(
    db: &impl sea_orm::ConnectionTrait,
    dag_ids: impl IntoIterator<Item = i64>,
) -> Result<HashMap<i64, Priority>, DbErr> {
    let rows: Vec<(i64, i32)> = dag::Entity::find()
        .select_only()
        .columns([dag::Column::Id, dag::Column::FirePriority])
        .filter(dag::Column::Id.is_in(dag_ids))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, level)| (id, Priority::of(level)))
        .collect())
}

/// Notes on dependencies naming a DAG that does not exist (yet): such a
/// dependency counts as not succeeded until the DAG is applied, which is
/// rarely what the file means, so `apply` says so rather than failing later
/// with a generic reason.
async fn missing_upstream_notes(
    db: &impl sea_orm::ConnectionTrait,
    file: &DagFile,
) -> Result<Vec<String>, DbErr> {
    let mut named: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for task in &file.tasks {
        for dep in &task.depends_on {
            let parts = dep.parts();
            if let Some(dag) = parts.dag.filter(|dag| *dag != file.name) {
                named
                    .entry(dag)
                    .or_default()
                    .push(format!("task '{}': {dag}/{}", task.name, parts.task));
            }
        }
    }
    for (schedule, name) in file.schedules.iter().zip(file.schedule_names()) {
        if let Some(upstream) = &schedule.after {
            named
                .entry(upstream)
                .or_default()
                .push(format!("schedule '{name}': after {upstream}"));
        }
    }
    let mut notes = Vec::new();
    for (dag, uses) in named {
        // Another project's DAG of that name is, to this one, a DAG that
        // does not exist: nothing of it is waited on or started after.
        let exists = dag::Entity::find()
            .filter(dag::Column::Name.eq(dag))
            .filter(dag::Column::ProjectId.eq(file.project))
            .one(db)
            .await?
            .is_some();
        if !exists {
            notes.push(format!(
                "{} depends on the DAG '{dag}', which does not exist (yet): until it is applied, \
                 the dependency counts as not succeeded",
                uses.join(", ")
            ));
        }
    }
    Ok(notes)
}

/// The tasks of other DAGs that depend on a task of the DAG `name` of
/// `project`, as `dag/task`, and the DAGs whose `after:` schedules name it:
/// what deleting it would break. Only DAGs of the same project: another
/// project's DAG naming it never saw it (docs/SECURITY.md, "Projects"),
/// so it loses nothing, and is not named to whoever deletes it.
pub async fn dependants_of(
    db: &impl sea_orm::ConnectionTrait,
    name: &str,
    project: i64,
) -> Result<Vec<String>, DbErr> {
    let edges = task_dependency::Entity::find()
        .filter(task_dependency::Column::ParentDag.eq(name))
        .all(db)
        .await?;
    let mut out = Vec::new();
    for edge in edges {
        let child = task::Entity::find_by_id(edge.task_id).one(db).await?;
        let owner = dag::Entity::find_by_id(edge.dag_id).one(db).await?;
        if let (Some(child), Some(owner)) = (child, owner)
            && owner.name != name
            && owner.project_id == project
        {
            out.push(format!("{}/{}", owner.name, child.name));
        }
    }
    let triggered = schedule::Entity::find()
        .filter(schedule::Column::Kind.eq(ScheduleKind::After))
        .filter(schedule::Column::AfterDag.eq(name))
        .all(db)
        .await?;
    for after in triggered {
        if let Some(owner) = dag::Entity::find_by_id(after.dag_id).one(db).await?
            && owner.project_id == project
        {
            out.push(format!(
                "{} (its schedule '{}' runs after {name})",
                owner.name, after.name
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}
