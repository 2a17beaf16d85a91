//! DAG definitions over HTTP: the YAML file model with camelCase field names.
//!
//! A DAG sent to the API has the shape of a DAG file (`docs/DAG_FORMAT.md`)
//! with camelCase names (`maxActiveRuns`, `dependsOn`, `offsetDay`, …, and
//! `projectId` for the file's `project`). Rather than keeping a second model
//! in step with the file's, a request is renamed key by key — structural keys
//! only, never inside `params` or `content` — into the file's snake_case
//! form and parsed by [`DagFile::parse`] (JSON is YAML), so the API validates
//! exactly as `dag apply` does: unknown fields, cycles (named), unknown
//! dependencies, invalid cron expressions, time zones, queue and event names.
//!
//! The way back ([`load`]) renders a stored DAG as the same file model, so
//! an update can change a few fields and re-apply the whole definition.

use std::borrow::Cow;
use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};
use datajump_shared::content::TaskType;
use datajump_shared::dag_file::{DagFile, DagFileError, DagProblem, TaskFile};
use datajump_shared::entities::{dag, schedule, task, task_dependency};
use datajump_shared::kinds::ScheduleKind;
use futures::TryStreamExt;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, StreamTrait};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

/// Where in a definition an object sits: says which of its keys hold
/// nested definition objects (renamed too) and which hold user data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Dag,
    Schedule,
    Task,
    Retry,
    Map,
    Dependency,
    Alerts,
    Webhook,
}

impl Level {
    /// The level of the values under `key` (snake_case), if they are
    /// definition objects (or arrays of them).
    fn child(self, snake_key: &str) -> Option<Level> {
        match (self, snake_key) {
            (Level::Dag, "schedules") => Some(Level::Schedule),
            (Level::Dag, "tasks") => Some(Level::Task),
            (Level::Task, "retry") => Some(Level::Retry),
            (Level::Task, "map") => Some(Level::Map),
            (Level::Task, "depends_on") => Some(Level::Dependency),
            (Level::Dag, "alerts") => Some(Level::Alerts),
            (Level::Alerts, "webhooks") => Some(Level::Webhook),
            _ => None,
        }
    }
}

/// `maxActiveRuns` → `max_active_runs`.
pub fn camel_to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `max_active_runs` → `maxActiveRuns`.
pub fn snake_to_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Schedule fields the API names as its `/schedules` answers do rather
/// than as the file does: `(API name, file name)`. The file's names are
/// taken in requests too.
const SCHEDULE_NAMES: [(&str, &str); 3] = [
    ("cronExpression", "cron"),
    ("eventName", "event"),
    ("enabled", "active"),
];

/// A schedule's `timeout`: minutes in the API (the product's
/// `ScheduleConfig.timeout`), seconds in the file. A duration string
/// (`"2h"`) means the same in both and is passed through.
const MINUTES_IN_API: (Level, &str) = (Level::Schedule, "timeout");

/// Seconds (file) of a number of minutes (API).
fn minutes_to_seconds(value: &Value) -> Value {
    match value.as_f64() {
        Some(minutes) => json!((minutes * 60.0).round() as i64),
        None => value.clone(),
    }
}

/// Minutes (API) of a number of seconds (file): whole when exact.
pub fn seconds_to_minutes(value: &Value) -> Value {
    match value.as_i64() {
        Some(secs) if secs % 60 == 0 => json!(secs / 60),
        Some(secs) => json!(secs as f64 / 60.0),
        None => value.clone(),
    }
}

/// The file's name of an API key at `level`.
fn file_key(level: Level, api_key: &str) -> String {
    match (level, api_key) {
        (Level::Dag, "projectId") => "project".to_owned(),
        (Level::Schedule, key) => SCHEDULE_NAMES
            .iter()
            .find(|(api, _)| *api == key)
            .map_or_else(|| camel_to_snake(key), |(_, file)| (*file).to_owned()),
        _ => camel_to_snake(api_key),
    }
}

/// The API's name of a file key at `level`.
fn api_key(level: Level, file_key: &str) -> String {
    match (level, file_key) {
        (Level::Dag, "project") => "projectId".to_owned(),
        (Level::Schedule, key) => SCHEDULE_NAMES
            .iter()
            .find(|(_, file)| *file == key)
            .map_or_else(|| snake_to_camel(key), |(api, _)| (*api).to_owned()),
        _ => snake_to_camel(file_key),
    }
}

fn rename_request(value: &Value, level: Level, at: &str) -> Result<Value> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| rename_request(item, level, &format!("{at}[{i}]")))
            .collect::<Result<Vec<_>>>()
            .map(Value::Array),
        Value::Object(object) => {
            let mut out = Map::new();
            for (key, item) in object {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                // The API's names are camelCase: a snake_case key is unknown.
                if key.contains('_') || (level == Level::Dag && key == "project") {
                    return Err(Error::bad_request(format!(
                        "unknown field `{path}` (fields are camelCase{})",
                        if key == "project" {
                            "; the project is `projectId`"
                        } else {
                            ""
                        }
                    )));
                }
                let snake = file_key(level, key);
                let item = match level.child(&snake) {
                    Some(child) => rename_request(item, child, &path)?,
                    None if (level, snake.as_str()) == MINUTES_IN_API => minutes_to_seconds(item),
                    None => item.clone(),
                };
                out.insert(snake, item);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

fn rename_response(value: &Value, level: Level) -> Value {
    match value {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| rename_response(item, level))
                .collect(),
        ),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, item)| {
                    let item = match level.child(key) {
                        Some(child) => rename_response(item, child),
                        None if (level, key.as_str()) == MINUTES_IN_API => seconds_to_minutes(item),
                        None => item.clone(),
                    };
                    (api_key(level, key), item)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A DAG definition as a request body: the DAG file's model with the
/// API's names, checked by [`from_request`] and [`parse`]. Its OpenAPI
/// schema is [`DagFile`]'s with every structural key renamed as
/// [`from_request`] renames it back, so the document cannot drift from
/// the file format.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct DefinitionBody(pub Value);

/// The changes of `PUT /api/v1/dags/{dagId}`: any fields of a
/// [`DefinitionBody`], each replacing the stored one.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct DefinitionChanges(pub Value);

impl JsonSchema for DefinitionBody {
    fn schema_name() -> Cow<'static, str> {
        "DagDefinition".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        // A new DAG needs only its name: no tasks is an empty DAG, and the
        // project is the caller's own.
        definition_schema(generator, &Self::schema_name(), &["name"])
    }
}

impl JsonSchema for DefinitionChanges {
    fn schema_name() -> Cow<'static, str> {
        "DagDefinitionChanges".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        definition_schema(generator, &Self::schema_name(), &[])
    }
}

/// The definition fields of a DAG's answer ([`to_response`]), beside its
/// summary: the schema of the fields only, as no value of this type is
/// made.
pub struct DefinitionFields;

impl JsonSchema for DefinitionFields {
    fn schema_name() -> Cow<'static, str> {
        "DagDefinitionFields".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = definition_schema(generator, &Self::schema_name(), &[]).to_value();
        if let Some(object) = schema.as_object_mut() {
            // Flattened beside the summary's fields, so it cannot close
            // the object; `sourceFile` is the summary's.
            object.remove("additionalProperties");
            if let Some(Value::Object(properties)) = object.get_mut("properties") {
                properties.remove("sourceFile");
            }
        }
        Schema::try_from(schema).unwrap_or_default()
    }
}

/// Where a task is and since when, beside its definition in a task's
/// listing ([`TaskItem`]).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskPlacement {
    /// Task id.
    pub id: i64,
    /// Its DAG.
    pub dag_id: i64,
    /// Canvas position, if the canvas saved one.
    pub position_x: Option<i32>,
    /// Canvas position, if the canvas saved one.
    pub position_y: Option<i32>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// A task as the API lists it (`GET /api/v1/dags/{dagId}/tasks`, a canvas)
/// and a canvas save takes it: its definition in the API's names
/// ([`task_to_response`]) with its [`TaskPlacement`] beside, of which a save
/// reads only the position.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskItem(pub Map<String, Value>);

impl TaskItem {
    /// A stored task's item: its definition (with `deps`, dependencies of
    /// its own) and its placement.
    pub fn of(row: &task::Model, deps: &[task_dependency::Model]) -> TaskItem {
        let placement = TaskPlacement {
            id: row.id,
            dag_id: row.dag_id,
            position_x: row.position_x,
            position_y: row.position_y,
            created_at: row.created_at,
            updated_at: row.updated_at,
        };
        let mut item = match serde_json::to_value(placement) {
            Ok(Value::Object(fields)) => fields,
            _ => Map::new(),
        };
        if let Value::Object(fields) = task_to_response(&task_file(row, deps)) {
            item.extend(fields);
        }
        TaskItem(item)
    }
}

impl JsonSchema for TaskItem {
    fn schema_name() -> Cow<'static, str> {
        "TaskItem".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        // Read and written under one name, so one shape: the request's,
        // in which a field with a default may be left out.
        let settings = generator.settings().clone().for_deserialize();
        let (mut schema, mut inline) = in_api_names::<TaskFile>(settings, Level::Task);
        let placement = inline.subschema_for::<TaskPlacement>().to_value();
        if let Some(object) = schema.as_object_mut() {
            // A save sends the placement too, and the same shape is read
            // and written: only a name is always there.
            object.remove("additionalProperties");
            object.insert("required".to_owned(), json!(["name"]));
            object.insert("title".to_owned(), json!(Self::schema_name()));
            if let (Some(Value::Object(properties)), Some(Value::Object(beside))) =
                (object.get_mut("properties"), placement.get("properties"))
            {
                properties.extend(beside.clone());
            }
        }
        Schema::try_from(schema).unwrap_or_default()
    }
}

/// The schema of a file-form type `T` at `level`, with every subschema in
/// place (so it can be renamed as a whole) and its names the API's; with
/// the generator that made it, for schemas to put beside it.
fn in_api_names<T: JsonSchema>(
    settings: schemars::generate::SchemaSettings,
    level: Level,
) -> (Value, SchemaGenerator) {
    let mut inline = settings
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = inline.subschema_for::<T>().to_value();
    rename_schema(&mut schema, level, &mut inline);
    (schema, inline)
}

/// [`DagFile`]'s schema in the API's names, with only `required` fields
/// required, and `sourceFile`, which the API takes beside a definition.
fn definition_schema(generator: &mut SchemaGenerator, title: &str, required: &[&str]) -> Schema {
    let (mut schema, mut inline) =
        in_api_names::<DagFile>(generator.settings().clone(), Level::Dag);
    if let Some(object) = schema.as_object_mut() {
        object.insert("required".to_owned(), json!(required));
        object.insert("title".to_owned(), json!(title));
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            let mut source_file = inline.subschema_for::<Option<String>>().to_value();
            if let Some(field) = source_file.as_object_mut() {
                field.insert(
                    "description".to_owned(),
                    json!("The path of the file this DAG is applied from (`datajump dag apply`): the DAG becomes file-managed"),
                );
            }
            properties.insert("sourceFile".to_owned(), source_file);
        }
    }
    Schema::try_from(schema).unwrap_or_default()
}

/// Renames a file-form schema's property names at `level` (and below, as
/// [`Level::child`] says) to the API's, as [`rename_response`] renames
/// values; user data (`params`, `content`) is left as it is.
fn rename_schema(schema: &mut Value, level: Level, generator: &mut SchemaGenerator) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(default) = object.get_mut("default") {
        *default = rename_response(default, level);
    }
    if let Some(Value::Object(properties)) = object.remove("properties") {
        let renamed = properties
            .into_iter()
            .map(|(key, mut item)| {
                match level.child(&key) {
                    Some(child) => rename_schema(&mut item, child, generator),
                    None if (level, key.as_str()) == MINUTES_IN_API => {
                        item = minutes_schema(&item, generator);
                    }
                    None => {}
                }
                (api_key(level, &key), item)
            })
            .collect();
        object.insert("properties".to_owned(), Value::Object(renamed));
    }
    if let Some(Value::Array(names)) = object.get_mut("required") {
        for name in names.iter_mut() {
            if let Some(key) = name.as_str() {
                *name = json!(api_key(level, key));
            }
        }
    }
    if let Some(items) = object.get_mut("items") {
        rename_schema(items, level, generator);
    }
    for alternatives in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(schemas)) = object.get_mut(alternatives) {
            for alternative in schemas {
                rename_schema(alternative, level, generator);
            }
        }
    }
}

/// The schema of a field the API counts in minutes where the file counts
/// seconds ([`MINUTES_IN_API`]): any number, or a duration string.
fn minutes_schema(file_schema: &Value, generator: &mut SchemaGenerator) -> Value {
    let mut schema = generator.subschema_for::<Option<Value>>().to_value();
    let description = file_schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .replace("Seconds", "Minutes");
    if let Some(object) = schema.as_object_mut() {
        object.insert("description".to_owned(), json!(description));
    } else {
        schema = json!({ "description": description });
    }
    schema
}

/// A DAG definition from a request body (camelCase) in the file's form.
///
/// # Errors
///
/// 400 when the body is not an object or has a snake_case key.
pub fn from_request(body: &Value) -> Result<Map<String, Value>> {
    if !body.is_object() {
        return Err(Error::bad_request(
            "invalid request body: expected a JSON object",
        ));
    }
    match rename_request(body, Level::Dag, "")? {
        Value::Object(map) => Ok(map),
        _ => Err(Error::bad_request(
            "invalid request body: expected a JSON object",
        )),
    }
}

/// A definition in the file's form rendered with the API's names.
pub fn to_response(file: &Map<String, Value>) -> Map<String, Value> {
    match rename_response(&Value::Object(file.clone()), Level::Dag) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// One task (file form) rendered with the API's names.
pub fn task_to_response(task: &Value) -> Value {
    rename_response(task, Level::Task)
}

/// One schedule (file form) rendered with the API's names.
pub fn schedule_to_response(schedule: &Value) -> Value {
    rename_response(schedule, Level::Schedule)
}

/// Field names of the file format that messages use bare (not in backticks).
const FILE_FIELDS: [&str; 15] = [
    "max_active_runs",
    "max_interval",
    "on_timeout",
    "start_date",
    "end_date",
    "catchup_limit",
    "misfire_grace",
    "biz_date_offset",
    "depends_on",
    "offset_day",
    "previous_run",
    "on_exit_codes",
    "wait_timeout",
    "queue_timeout",
    "run_timeout",
];

/// Rewrites a validation message from the file's names to the API's: every
/// `backticked` name, and the known bare field names outside 'quoted' user
/// names.
fn api_names_in(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for (i, part) in message.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            // A schedule's `cron` and `event` are `cronExpression` and
            // `eventName` in the API.
            let schedule_key = SCHEDULE_NAMES.iter().find(|(_, file)| *file == part);
            out.push_str(&match schedule_key {
                _ if part == "project" => "projectId".to_owned(),
                Some((api, _)) => (*api).to_owned(),
                None => snake_to_camel(part),
            });
            continue;
        }
        for (j, piece) in part.split('\'').enumerate() {
            if j > 0 {
                out.push('\'');
            }
            if j % 2 == 1 {
                out.push_str(piece);
            } else {
                let mut piece = piece.to_owned();
                for field in FILE_FIELDS {
                    piece = piece.replace(field, &snake_to_camel(field));
                }
                out.push_str(&piece);
            }
        }
    }
    out
}

/// Removes a YAML error's " at line L column C" (meaningless for JSON).
fn strip_location(message: &str) -> &str {
    match message.find(" at line ") {
        Some(at) => &message[..at],
        None => message,
    }
}

/// Validates a definition in the file's form exactly as `dag apply` does.
///
/// # Errors
///
/// 400 naming the field (unknown or mistyped) or listing every rule broken.
pub fn parse(file: &Map<String, Value>) -> Result<DagFile> {
    let text = serde_json::to_string(file).map_err(|e| Error::Internal(e.to_string()))?;
    DagFile::parse(&text).map_err(|e| match e {
        DagFileError::Syntax(e) => Error::bad_request(format!(
            "invalid DAG: {}",
            api_names_in(strip_location(&e.to_string()))
        )),
        DagFileError::Invalid { dag, problems } => {
            let details: Vec<String> = problems
                .iter()
                .map(|p| api_names_in(&p.to_string()))
                .collect();
            Error::BadRequest {
                message: format!("DAG '{dag}' is invalid: {}", details.join("; ")),
                details,
                detail_problems: problems.iter().map(DagProblem::problem).collect(),
                problem: None,
            }
        }
    })
}

fn date(value: Option<NaiveDate>) -> Value {
    value.map_or(Value::Null, |d| Value::String(d.to_string()))
}

/// A stored schedule in the file's form.
pub fn schedule_file(row: &schedule::Model) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(row.name));
    match (row.kind, &row.cron_expr, &row.event_name) {
        (ScheduleKind::Event, _, Some(event)) => out.insert("event".into(), json!(event)),
        (ScheduleKind::After, _, _) => out.insert("after".into(), json!(row.after_dag)),
        (ScheduleKind::Data, _, _) => {
            if let Some(on_update) = row.on_update.filter(|u| !u.is_ignore()) {
                out.insert("on_update".into(), json!(on_update));
            }
            out.insert("on".into(), json!(row.data_condition))
        }
        (_, cron, _) => out.insert("cron".into(), json!(cron)),
    };
    out.insert("timezone".into(), json!(row.timezone));
    if row.start_date.is_some() {
        out.insert("start_date".into(), date(row.start_date));
    }
    if row.end_date.is_some() {
        out.insert("end_date".into(), date(row.end_date));
    }
    out.insert("active".into(), json!(row.active));
    out.insert("catchup".into(), json!(row.catchup.as_str()));
    out.insert("catchup_limit".into(), json!(row.catchup_limit));
    out.insert("misfire_grace".into(), json!(row.misfire_grace_secs));
    out.insert("biz_date_offset".into(), json!(row.biz_date_offset_days));
    if let Some(secs) = row.timeout_secs {
        out.insert("timeout".into(), json!(secs));
    }
    Value::Object(out)
}

/// A stored task and `deps`, its own dependencies, in the file's form.
pub fn task_file(row: &task::Model, deps: &[task_dependency::Model]) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(row.name));
    out.insert("description".into(), json!(row.description));
    out.insert("type".into(), json!(row.task_type));
    // `apply` folds the shorthand fields into `content`: unfold them.
    let mut content = row.content.as_object().cloned().unwrap_or_default();
    for key in ["command", "script", "sql", "datasource"] {
        if let Some(Value::String(text)) = content.get(key) {
            out.insert(key.into(), json!(text));
            content.remove(key);
        }
    }
    if row.task_type == TaskType::Switch {
        for key in ["cases", "default"] {
            if let Some(branches) = content.remove(key) {
                out.insert(key.into(), branches);
            }
        }
    }
    if !content.is_empty() {
        out.insert("content".into(), Value::Object(content));
    }
    out.insert("params".into(), row.params.clone());
    out.insert("priority".into(), json!(row.priority));
    out.insert(
        "retry".into(),
        json!({
            "max": row.retry_max,
            "interval": row.retry_interval_secs,
            "strategy": row.retry_strategy,
            "on_exit_codes": row.retry_on_exit_codes,
            "on_timeout": row.retry_on_timeout,
            "max_interval": row.retry_max_interval_secs,
            "jitter": f64::from(row.retry_jitter_pct) / 100.0,
        }),
    );
    out.insert("timeout".into(), json!(row.timeout_secs));
    out.insert("wait_timeout".into(), json!(row.wait_timeout_secs));
    if let Some(secs) = row.queue_timeout_secs {
        out.insert("queue_timeout".into(), json!(secs));
    }
    out.insert("queue".into(), json!(row.queue));
    out.insert("strategy".into(), json!(row.strategy));
    if row.allow_failure {
        out.insert("allow_failure".into(), json!(true));
    }
    out.insert("enabled".into(), json!(row.enabled));
    let depends_on: Vec<Value> = deps
        .iter()
        .map(|d| {
            let reference = match &d.parent_dag {
                Some(dag) => format!("{dag}/{}", d.parent_task),
                None => d.parent_task.clone(),
            };
            let mut dependency =
                json!({ "task": reference, "type": d.dep_type, "offset_day": d.offset_day });
            if d.previous_run {
                dependency["previous_run"] = json!(true);
            }
            dependency
        })
        .collect();
    out.insert("depends_on".into(), Value::Array(depends_on));
    if let Some(datasets) = &row.datasets {
        out.insert("outputs".into(), datasets.clone());
    }
    if let Some(map) = row.map_spec() {
        out.insert("map".into(), json!(map.file()));
    }
    Value::Object(out)
}

/// A stored DAG's schedules, in id order.
pub async fn schedules_of<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
) -> Result<Vec<schedule::Model>> {
    Ok(schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag_id))
        .order_by_asc(schedule::Column::Id)
        .all(conn)
        .await?)
}

/// A stored DAG's tasks (in id order) and dependencies (in id order).
///
/// The rows are streamed into models: reading them all first (`all`)
/// holds every row as the driver decoded it, about 1.7 kB a dependency,
/// until the last is turned into a model — some 250 MB for a 3,000-task
/// DAG of 50 dependencies each, against 25 MB of models.
pub async fn tasks_of<C: ConnectionTrait + StreamTrait>(
    conn: &C,
    dag_id: i64,
) -> Result<(Vec<task::Model>, Vec<task_dependency::Model>)> {
    let tasks = task::Entity::find()
        .filter(task::Column::DagId.eq(dag_id))
        .order_by_asc(task::Column::Id)
        .stream(conn)
        .await?
        .try_collect()
        .await?;
    let deps = task_dependency::Entity::find()
        .filter(task_dependency::Column::DagId.eq(dag_id))
        .order_by_asc(task_dependency::Column::Id)
        .stream(conn)
        .await?
        .try_collect()
        .await?;
    Ok((tasks, deps))
}

/// A DAG's dependencies, each task's own in id order: looked up per task,
/// where filtering them all for each task costs a 3,000-task DAG of 50
/// dependencies each 450 million comparisons.
#[derive(Debug, Default)]
pub struct DependenciesByTask(HashMap<i64, Vec<task_dependency::Model>>);

impl DependenciesByTask {
    /// `deps` (in id order) by the task that waits.
    pub fn new(deps: impl IntoIterator<Item = task_dependency::Model>) -> DependenciesByTask {
        let mut by_task: HashMap<i64, Vec<task_dependency::Model>> = HashMap::new();
        for dep in deps {
            by_task.entry(dep.task_id).or_default().push(dep);
        }
        DependenciesByTask(by_task)
    }

    /// The dependencies of `task`.
    pub fn of(&self, task: &task::Model) -> &[task_dependency::Model] {
        self.0.get(&task.id).map_or(&[], Vec::as_slice)
    }
}

/// A stored DAG's fields in the file's form, but for its tasks.
fn dag_file(dag: &dag::Model, schedules: &[schedule::Model]) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("name".into(), json!(dag.name));
    out.insert("description".into(), json!(dag.description));
    out.insert("project".into(), json!(dag.project_id));
    out.insert("owner".into(), json!(dag.owner));
    out.insert("online".into(), json!(dag.online));
    out.insert("params".into(), dag.params.clone());
    out.insert("max_active_runs".into(), json!(dag.max_active_runs));
    out.insert("overlap".into(), json!(dag.overlap_policy));
    if let Some(priority) = dag.priority {
        out.insert("priority".into(), json!(priority));
    }
    for (key, secs) in [
        ("queue_timeout", dag.queue_timeout_secs),
        ("run_timeout", dag.run_timeout_secs),
    ] {
        if let Some(secs) = secs {
            out.insert(key.into(), json!(secs));
        }
    }
    if let Some(alerts) = &dag.alert_config {
        out.insert("alerts".into(), alerts.clone());
    }
    out.insert(
        "schedules".into(),
        Value::Array(schedules.iter().map(schedule_file).collect()),
    );
    out
}

/// A stored DAG rendered in the file's form: applying it back changes nothing.
pub async fn load<C: ConnectionTrait + StreamTrait>(
    conn: &C,
    dag: &dag::Model,
) -> Result<Map<String, Value>> {
    let (tasks, deps) = tasks_of(conn, dag.id).await?;
    let deps = DependenciesByTask::new(deps);
    let mut out = dag_file(dag, &schedules_of(conn, dag.id).await?);
    out.insert(
        "tasks".into(),
        Value::Array(tasks.iter().map(|t| task_file(t, deps.of(t))).collect()),
    );
    Ok(out)
}

/// How an answer renders each of a DAG's tasks.
#[derive(Debug, Clone, Copy)]
enum TaskForm {
    /// Its definition in the API's names ([`task_to_response`]).
    Definition,
    /// Its definition and placement ([`TaskItem`]).
    Item,
}

/// Stored tasks as an answer lists them, each rendered only as the answer
/// is written: a read holds the rows and the answer's bytes, never all
/// the tasks at once as trees of values (for a 3,000-task DAG of 50
/// dependencies each, several hundred MB).
#[derive(Debug)]
pub struct Tasks {
    rows: Vec<task::Model>,
    deps: DependenciesByTask,
    form: TaskForm,
}

impl Tasks {
    /// `rows` as their definitions in the API's names, with `deps`.
    pub fn definitions(rows: Vec<task::Model>, deps: DependenciesByTask) -> Tasks {
        Tasks {
            rows,
            deps,
            form: TaskForm::Definition,
        }
    }

    /// `rows` as [`TaskItem`]s, with `deps`.
    pub fn items(rows: Vec<task::Model>, deps: DependenciesByTask) -> Tasks {
        Tasks {
            rows,
            deps,
            form: TaskForm::Item,
        }
    }
}

impl Serialize for Tasks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.rows.iter().map(|row| {
            let deps = self.deps.of(row);
            match self.form {
                TaskForm::Definition => task_to_response(&task_file(row, deps)),
                TaskForm::Item => Value::Object(TaskItem::of(row, deps).0),
            }
        }))
    }
}

/// A stored DAG's definition in the API's names, as a DAG's answer holds
/// it ([`DefinitionFields`]); its tasks are written one at a time
/// ([`Tasks`]).
#[derive(Debug)]
pub struct StoredDefinition {
    /// The DAG's fields in the API's names, in the order written; `tasks`
    /// is a placeholder that keeps the tasks' place among them.
    fields: Map<String, Value>,
    tasks: Tasks,
}

impl StoredDefinition {
    /// The definition of `dag` as stored.
    pub async fn load<C: ConnectionTrait + StreamTrait>(
        conn: &C,
        dag: &dag::Model,
    ) -> Result<StoredDefinition> {
        let (rows, deps) = tasks_of(conn, dag.id).await?;
        let mut file = dag_file(dag, &schedules_of(conn, dag.id).await?);
        file.insert("tasks".into(), Value::Null);
        Ok(StoredDefinition {
            fields: to_response(&file),
            tasks: Tasks::definitions(rows, DependenciesByTask::new(deps)),
        })
    }

    /// Leaves out the fields `keep` refuses (by their API name).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.fields.retain(|key, _| keep(key));
    }
}

impl Serialize for StoredDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, value) in &self.fields {
            if key == "tasks" {
                map.serialize_entry(key, &self.tasks)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property name of a schema, at any depth.
    fn property_names(schema: &Value, names: &mut Vec<String>) {
        match schema {
            Value::Object(object) => {
                if let Some(Value::Object(properties)) = object.get("properties") {
                    names.extend(properties.keys().cloned());
                }
                object
                    .values()
                    .for_each(|value| property_names(value, names));
            }
            Value::Array(items) => items.iter().for_each(|item| property_names(item, names)),
            _ => {}
        }
    }

    #[test]
    fn the_schema_names_fields_as_requests_do() {
        let mut generator = schemars::generate::SchemaSettings::openapi3()
            .for_deserialize()
            .into_generator();
        let schema = DefinitionBody::json_schema(&mut generator).to_value();
        assert_eq!(schema["required"], json!(["name"]), "{schema}");
        let dag = &schema["properties"];
        let task = &dag["tasks"]["items"]["properties"];
        let schedule = &dag["schedules"]["items"]["properties"];
        for (level, fields) in [
            (
                dag,
                &["projectId", "maxActiveRuns", "runTimeout", "sourceFile"][..],
            ),
            (
                task,
                &["dependsOn", "waitTimeout", "queueTimeout", "type"][..],
            ),
            (
                schedule,
                &["cronExpression", "eventName", "enabled", "bizDateOffset"][..],
            ),
            (
                &task["retry"]["properties"],
                &["onExitCodes", "maxInterval"][..],
            ),
        ] {
            for field in fields {
                assert!(level.get(field).is_some(), "no `{field}` in {level}");
            }
        }
        assert!(
            schedule["timeout"]["description"]
                .as_str()
                .is_some_and(|text| text.starts_with("Minutes")),
            "{}",
            schedule["timeout"]
        );
        assert_eq!(task["retry"]["default"]["onExitCodes"], json!([]));
        let mut names = Vec::new();
        property_names(&schema, &mut names);
        let file_names: Vec<&String> = names.iter().filter(|n| n.contains('_')).collect();
        assert!(
            file_names.is_empty(),
            "file names in the schema: {file_names:?}"
        );
        let body: Map<String, Value> = names.iter().map(|name| (name.clone(), json!(1))).collect();
        assert!(from_request(&Value::Object(body)).is_ok());
        let changes = DefinitionChanges::json_schema(&mut generator).to_value();
        assert_eq!(changes["required"], json!([]), "{changes}");
    }

    #[test]
    fn names_convert_both_ways() {
        assert_eq!(camel_to_snake("maxActiveRuns"), "max_active_runs");
        assert_eq!(snake_to_camel("max_active_runs"), "maxActiveRuns");
        assert_eq!(camel_to_snake("name"), "name");
    }

    #[test]
    fn requests_are_renamed_structurally() {
        let body = json!({
            "name": "d",
            "projectId": 2,
            "maxActiveRuns": 2,
            "params": { "someKey": "v" },
            "schedules": [{ "cron": "@daily", "bizDateOffset": 0 }],
            "tasks": [{
                "name": "a",
                "command": "true",
                "content": { "keepMe": 1 },
                "retry": { "onExitCodes": [1] },
                "dependsOn": ["b", { "task": "c", "offsetDay": -1 }],
            }],
        });
        let file = Value::Object(from_request(&body).unwrap());
        assert_eq!(file["project"], 2);
        assert_eq!(file["max_active_runs"], 2);
        assert_eq!(file["params"]["someKey"], "v");
        assert_eq!(file["schedules"][0]["biz_date_offset"], 0);
        let task = &file["tasks"][0];
        assert_eq!(task["content"]["keepMe"], 1);
        assert_eq!(task["retry"]["on_exit_codes"], json!([1]));
        assert_eq!(task["depends_on"][1]["offset_day"], -1);
        assert_eq!(task["depends_on"][0], "b");
        let back = Value::Object(to_response(file.as_object().unwrap()));
        assert_eq!(back["projectId"], 2);
        assert_eq!(back["tasks"][0]["dependsOn"][1]["offsetDay"], -1);
        assert_eq!(back["params"]["someKey"], "v");
    }

    #[test]
    fn alerts_are_renamed_but_header_names_are_kept() {
        let body = json!({
            "name": "d",
            "alerts": {
                "webhooks": [{
                    "url": "http://hooks.local/x",
                    "headers": { "X-Token": "${secret:t}", "x_raw": "1" },
                    "secretHeaders": ["X-Token"],
                }],
                "sla": 60,
            },
        });
        let file = Value::Object(from_request(&body).unwrap());
        let hook = &file["alerts"]["webhooks"][0];
        assert_eq!(hook["secret_headers"], json!(["X-Token"]));
        assert_eq!(hook["headers"]["x_raw"], "1");
        let back = Value::Object(to_response(file.as_object().unwrap()));
        assert_eq!(
            back["alerts"]["webhooks"][0]["secretHeaders"],
            json!(["X-Token"])
        );
        assert_eq!(
            back["alerts"]["webhooks"][0]["headers"]["X-Token"],
            "${secret:t}"
        );
    }

    #[test]
    fn snake_case_keys_are_unknown() {
        let err = from_request(&json!({ "name": "d", "max_active_runs": 2 })).unwrap_err();
        assert!(err.to_string().contains("`max_active_runs`"), "{err}");
        let err =
            from_request(&json!({ "name": "d", "tasks": [{ "depends_on": [] }] })).unwrap_err();
        assert!(err.to_string().contains("`tasks[0].depends_on`"), "{err}");
    }

    #[test]
    fn validation_speaks_the_apis_names() {
        let file = from_request(&json!({
            "name": "d",
            "maxActiveRuns": 0,
            "tasks": [
                { "name": "a", "command": "true", "dependsOn": ["b"] },
                { "name": "b", "command": "true", "dependsOn": ["a"] },
            ],
        }))
        .unwrap();
        let err = parse(&file).unwrap_err().to_string();
        assert!(err.contains("maxActiveRuns"), "{err}");
        assert!(err.contains("cycle: "), "{err}");
        let file = from_request(&json!({ "name": "d", "tasks": [{ "name": "a", "comand": "x" }] }))
            .unwrap();
        let err = parse(&file).unwrap_err().to_string();
        assert!(
            err.contains("unknown field `comand`: did you mean `command`?"),
            "{err}"
        );
        assert!(!err.contains("line 1"), "{err}");
        let file =
            from_request(&json!({ "name": "d", "tasks": [{ "name": "a", "zzzz": "x" }] })).unwrap();
        let err = parse(&file).unwrap_err().to_string();
        assert!(err.contains("unknown field `zzzz` (allowed: "), "{err}");
        assert!(err.contains("dependsOn"), "the API's names: {err}");
    }
}
