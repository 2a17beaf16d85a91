//! The route table: every endpoint of the API exactly once, with its
//! handler and what the OpenAPI document says about it. [`super::router`]
//! serves this table and [`super::openapi`] describes it, so a route cannot
//! be served without being documented.

use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter, on};

use datajump_shared::access::Role;
use serde_json::{Map, Value};

use super::canvas::dto::{Canvas, CanvasSave};
use super::dags::dto::{
    ApplyQuery, BackfillRequest, BackfillResponse, DagDetail, DagListItem, DagListQuery,
    DagSummary, DryRunResponse, TriggerRequest, TriggerResponse, ValidateConditionRequest,
    ValidateConditionResponse, ValidateRequest, ValidateResponse,
};
use super::events::dto::EventResponse;
use super::runners::dto::{QueueDto, RunnerDto};
use super::runs::dto::{
    ClearRequest, ExecutionsQuery, InstancesQuery, KillResponse, MarkRequest, RerunRequest,
    RerunResponse, RunDetail, RunDto, RunStatusDto, TaskInstanceDetail, TaskInstanceDto,
    TaskResetResponse,
};
use super::schedules::dto::{
    ScheduleBody, ScheduleDisable, ScheduleEnable, ScheduleUpdate, ValidateCronRequest,
    ValidateCronResponse,
};
use super::stream::dto::{LogEnd, RunChange, TaskChange};
use super::views::dto::{Gantt, Graph, Grid, GridQuery};
use super::{
    alerts, audit, canvas, dags, datasets, events, health, openapi, projects, runners, runs,
    schedules, session, stream, tokens, views,
};
use crate::AppState;
use crate::definition::{DefinitionBody, DefinitionChanges, TaskItem};
use crate::dto::{LogQuery, Page, PageQuery, ScheduleDto};

/// An HTTP method the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// GET.
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
}

impl Verb {
    /// The method's name in an OpenAPI path item (`get`, `post`, …).
    pub fn openapi_name(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Delete => "delete",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Put => MethodFilter::PUT,
            Verb::Delete => MethodFilter::DELETE,
        }
    }
}

/// Whether an endpoint reads a JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// A JSON object that may be left out.
    Optional,
    /// A JSON object.
    Required,
}

/// A type's JSON schema, put among a generator's definitions: how the
/// OpenAPI document learns the fields of a body from the Rust type that
/// reads or writes it, so the two cannot drift apart.
pub type SchemaOf = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

fn schema_of<T: schemars::JsonSchema>(
    generator: &mut schemars::SchemaGenerator,
) -> schemars::Schema {
    generator.subschema_for::<T>()
}

/// A type's own schema (its fields), not a reference to it: what a query
/// string's parameters are made of.
fn fields_of<T: schemars::JsonSchema>(
    generator: &mut schemars::SchemaGenerator,
) -> schemars::Schema {
    T::json_schema(generator)
}

/// What a successful answer carries.
#[derive(Clone, Copy)]
pub enum Answer {
    /// Not said yet: the route table's tests refuse an endpoint left so.
    Undeclared,
    /// Nothing (204).
    Nothing,
    /// JSON of a type.
    Json(SchemaOf),
    /// Plain text (a log).
    Text,
    /// Server-Sent Events: each event's name and the type of its data.
    Events(&'static [(&'static str, SchemaOf)]),
}

/// Who may call an endpoint, ordered from the most open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Anyone, even when tokens are required: the probes.
    Public,
    /// A caller whose role allows this one.
    Role(Role),
}

/// What of which project a route touches: how a token limited to one
/// project ([`Reach::Project`]) is checked before the handler runs.
///
/// [`Endpoint::new`] reads it off the path, so a route on a DAG, a run or
/// a task instance is checked against its project without saying so, and
/// a route with no such placeholder is [`Scope::Installation`], closed to
/// limited tokens, unless it declares otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Nothing of any project: the probes, sign-in, this document, a cron
    /// check, the runners.
    Unscoped,
    /// The DAG of the path's `{dagId}`.
    Dag,
    /// The DAG of the path's `{name}`.
    DagName,
    /// The run of the path's `{instanceId}`.
    Run,
    /// The run of the path's `{runKey}`.
    RunKey,
    /// The task instance of the path's `{taskInstanceId}`.
    TaskInstance,
    /// The handler keeps to the caller's reach itself: it lists only what
    /// is within it, or refuses to create what is not.
    Handler,
    /// Everything at once (the audit log, metrics): only for a token that
    /// reaches every project.
    Installation,
}

impl Scope {
    /// The scope a path's placeholders imply.
    fn of_path(path: &str) -> Scope {
        [
            ("{dagId}", Scope::Dag),
            ("/by-name/{name}", Scope::DagName),
            ("{instanceId}", Scope::Run),
            ("{runKey}", Scope::RunKey),
            ("{taskInstanceId}", Scope::TaskInstance),
        ]
        .into_iter()
        .find(|(placeholder, _)| path.contains(placeholder))
        .map_or(Scope::Installation, |(_, scope)| scope)
    }
}

/// One endpoint: a method on a path.
pub struct Endpoint {
    /// The method.
    pub verb: Verb,
    /// Who may call it: every route says, so none is open by omission.
    pub access: Access,
    /// Which project it touches, for tokens limited to one.
    pub scope: Scope,
    /// The path as served, with `{param}` placeholders.
    pub path: &'static str,
    /// What it does, in a line.
    pub summary: &'static str,
    /// Its JSON body.
    pub body: Body,
    /// The type of its JSON body, when it takes one.
    pub request: Option<SchemaOf>,
    /// What its successful answer carries.
    pub answer: Answer,
    /// The fields of the type its query string is read into, when it
    /// reads one: each field a parameter.
    pub query: Option<SchemaOf>,
    /// The status of a successful answer.
    pub status: u16,
    /// What it answers (200) to `?dryRun=true` ([`ApplyQuery`]), changing
    /// nothing, when it takes one.
    pub dry_run: Option<SchemaOf>,
    /// Its answer grows with a whole DAG (a definition, a canvas, a run
    /// with every task instance): served [`WHOLE_DAG_READS`] at a time, so
    /// that many readers at once queue instead of exhausting memory.
    pub whole_dag: bool,
    /// The handler, answering `verb` only.
    pub handler: MethodRouter<AppState>,
}

/// Answers that grow with a whole DAG built at once: each holds the DAG's
/// rows, the DTOs and their JSON (tens of MB for a DAG of thousands of
/// tasks) while it is built and its JSON until sent, which takes
/// milliseconds on a local link, so a queue of readers costs them little
/// wait and the memory stays that of two.
pub const WHOLE_DAG_READS: usize = 2;

/// How long a whole-DAG answer keeps its permit while its reader takes
/// it: long enough for a 10 MB answer over a slow link, short enough that a
/// reader that stops reading does not keep every other one waiting.
pub const WHOLE_DAG_TURN: std::time::Duration = std::time::Duration::from_secs(30);

impl Endpoint {
    fn new<H, T>(
        verb: Verb,
        access: Access,
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Endpoint
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        Endpoint {
            verb,
            access,
            scope: Scope::of_path(path),
            path,
            summary,
            body: Body::None,
            request: None,
            answer: Answer::Undeclared,
            query: None,
            status: 200,
            dry_run: None,
            whole_dag: false,
            handler: on(verb.filter(), handler),
        }
    }

    /// Takes a JSON body of type `T`, required or not.
    fn takes<T: schemars::JsonSchema>(self, body: Body) -> Endpoint {
        Endpoint {
            body,
            request: Some(schema_of::<T>),
            ..self
        }
    }

    /// Answers JSON of type `T`.
    fn answers<T: schemars::JsonSchema>(self) -> Endpoint {
        Endpoint {
            answer: Answer::Json(schema_of::<T>),
            ..self
        }
    }

    /// Answers with no body.
    fn answers_nothing(self) -> Endpoint {
        Endpoint {
            answer: Answer::Nothing,
            ..self
        }
    }

    /// Answers plain text.
    fn answers_text(self) -> Endpoint {
        Endpoint {
            answer: Answer::Text,
            ..self
        }
    }

    /// Answers a stream of Server-Sent Events, named with the type of
    /// their data.
    fn answers_events(self, events: &'static [(&'static str, SchemaOf)]) -> Endpoint {
        Endpoint {
            answer: Answer::Events(events),
            ..self
        }
    }

    /// Reads its query string into `Q` (the handler's `Query<Q>`).
    fn query<Q: schemars::JsonSchema>(self) -> Endpoint {
        Endpoint {
            query: Some(fields_of::<Q>),
            ..self
        }
    }

    /// Takes `?dryRun=true` ([`ApplyQuery`]), and then answers 200 with a
    /// `T` saying what it would do, doing nothing.
    fn dry_run<T: schemars::JsonSchema>(self) -> Endpoint {
        Endpoint {
            dry_run: Some(schema_of::<T>),
            ..self.query::<ApplyQuery>()
        }
    }

    fn status(self, status: u16) -> Endpoint {
        Endpoint { status, ..self }
    }

    fn scope(self, scope: Scope) -> Endpoint {
        Endpoint { scope, ..self }
    }

    fn whole_dag(self) -> Endpoint {
        Endpoint {
            whole_dag: true,
            ..self
        }
    }
}

/// Every endpoint of the API.
pub fn endpoints() -> Vec<Endpoint> {
    use Body::{Optional, Required};
    use Scope::{Handler, Unscoped};
    use Verb::{Delete, Get, Post, Put};
    const PUBLIC: Access = Access::Public;
    const VIEWER: Access = Access::Role(Role::Viewer);
    const OPERATOR: Access = Access::Role(Role::Operator);
    const ADMIN: Access = Access::Role(Role::Admin);
    vec![
        Endpoint::new(Get, PUBLIC, "/healthz", "Liveness", health::healthz)
            .scope(Unscoped)
            .answers::<health::dto::Health>(),
        Endpoint::new(
            Get,
            PUBLIC,
            "/readyz",
            "Readiness: the database and NATS answer",
            health::readyz,
        )
        .scope(Unscoped)
        .answers::<health::dto::Health>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/openapi.json",
            "This document",
            openapi::document,
        )
        .scope(Unscoped)
        .answers::<Map<String, Value>>(),
        Endpoint::new(Get, VIEWER, "/api/v1/dags", "A project's DAGs", dags::list)
            .query::<DagListQuery>()
            .scope(Handler)
            .answers::<Page<DagListItem>>(),
        Endpoint::new(Post, ADMIN, "/api/v1/dags", "Create a DAG", dags::create)
            .takes::<DefinitionBody>(Required)
            .dry_run::<DryRunResponse>()
            .status(201)
            .scope(Handler)
            .answers::<DagDetail>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}",
            "A DAG with its definition",
            dags::get,
        )
        .whole_dag()
        .answers::<DagDetail>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/by-name/{name}",
            "A DAG by name with its definition",
            dags::by_name,
        )
        .whole_dag()
        .answers::<DagDetail>(),
        Endpoint::new(
            Put,
            ADMIN,
            "/api/v1/dags/{dagId}",
            "Change a DAG's fields",
            dags::update,
        )
        .takes::<DefinitionChanges>(Required)
        .dry_run::<DryRunResponse>()
        .answers::<DagDetail>(),
        Endpoint::new(
            Delete,
            ADMIN,
            "/api/v1/dags/{dagId}",
            "Delete a DAG",
            dags::delete,
        )
        .status(204)
        .answers_nothing(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/tasks",
            "A DAG's tasks",
            dags::tasks,
        )
        .query::<PageQuery>()
        .answers::<Page<TaskItem>>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/online",
            "Let schedules fire the DAG",
            dags::online,
        )
        .answers::<DagSummary>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/offline",
            "Stop schedules firing the DAG",
            dags::offline,
        )
        .answers::<DagSummary>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/canvas",
            "The DAG's canvas",
            canvas::get,
        )
        .whole_dag()
        .answers::<Canvas>(),
        Endpoint::new(
            Post,
            ADMIN,
            "/api/v1/dags/{dagId}/canvas",
            "Save the DAG's canvas",
            canvas::save,
        )
        .takes::<CanvasSave>(Required)
        .answers::<Canvas>(),
        Endpoint::new(
            Post,
            VIEWER,
            "/api/v1/dags/{dagId}/validate",
            "Check canvas edges for a cycle",
            dags::validate,
        )
        .takes::<ValidateRequest>(Optional)
        .answers::<ValidateResponse>(),
        Endpoint::new(
            Post,
            VIEWER,
            "/api/v1/dags/validate-condition",
            "Check a SWITCH condition",
            dags::validate_condition,
        )
        .takes::<ValidateConditionRequest>(Required)
        .scope(Unscoped)
        .answers::<ValidateConditionResponse>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/trigger",
            "Start a MANUAL run",
            dags::trigger,
        )
        .takes::<TriggerRequest>(Optional)
        .status(202)
        .answers::<TriggerResponse>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/backfill",
            "Start a run per business date (or, with dryRun, say which would run)",
            dags::backfill,
        )
        .takes::<BackfillRequest>(Required)
        .dry_run::<BackfillResponse>()
        .status(202)
        .answers::<BackfillResponse>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/instances",
            "A DAG's runs, newest first",
            runs::list,
        )
        .query::<InstancesQuery>()
        .answers::<Page<RunDto>>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/grid",
            "A DAG's tasks × its latest runs, a cell per task instance",
            views::grid,
        )
        .query::<GridQuery>()
        .whole_dag()
        .answers::<Grid>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/graph",
            "A DAG's tasks and every dependency: other runs, other DAGs, after: schedules and datasets as stub nodes",
            views::graph,
        )
        .whole_dag()
        .answers::<Graph>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/stream",
            "Live changes of runs and task instances (Server-Sent Events)",
            stream::changes,
        )
        .scope(Handler)
        .answers_events(&[
            ("ready", schema_of::<Map<String, Value>>),
            ("task", schema_of::<TaskChange>),
            ("run", schema_of::<RunChange>),
            ("resync", schema_of::<String>),
        ]),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/executions",
            "Task instances by business date and task",
            runs::executions,
        )
        .query::<ExecutionsQuery>()
        .answers::<Page<TaskInstanceDto>>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/instances/{instanceId}",
            "A run with its task instances",
            runs::get,
        )
        .whole_dag()
        .answers::<RunDetail>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/instances/{instanceId}/status",
            "A run's status",
            runs::status,
        )
        .answers::<RunStatusDto>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/instances/{instanceId}/gantt",
            "Every attempt of a run's task instances, for a Gantt chart",
            views::gantt,
        )
        .whole_dag()
        .answers::<Gantt>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/instances/{instanceId}/kill",
            "Kill a run",
            runs::kill,
        )
        .answers::<KillResponse>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/instances/{instanceId}/rerun",
            "Run a finished run again",
            runs::rerun,
        )
        .takes::<RerunRequest>(Optional)
        .answers::<RerunResponse>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/instances/by-key/{runKey}",
            "The run a trigger started",
            runs::by_key,
        )
        .whole_dag()
        .answers::<RunDetail>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/task-instances/{taskInstanceId}",
            "A task instance with its attempts",
            runs::task_instance,
        )
        .answers::<TaskInstanceDetail>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/task-instances/{taskInstanceId}/log",
            "A task instance's log (text)",
            runs::log,
        )
        .query::<LogQuery>()
        .answers_text(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/task-instances/{taskInstanceId}/log/stream",
            "A running attempt's log lines as they are written (Server-Sent Events)",
            stream::log,
        )
        .query::<LogQuery>()
        .answers_events(&[
            ("line", schema_of::<String>),
            ("end", schema_of::<LogEnd>),
            ("resync", schema_of::<Map<String, Value>>),
        ]),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/task-instances/{taskInstanceId}/kill",
            "Kill a task instance",
            runs::kill_task,
        )
        .answers::<KillResponse>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/task-instances/{taskInstanceId}/clear",
            "Put a finished task instance back to PENDING",
            runs::clear_task,
        )
        .takes::<ClearRequest>(Optional)
        .answers::<TaskResetResponse>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/task-instances/{taskInstanceId}/mark",
            "Mark a task instance SUCCESS or FAILED",
            runs::mark_task,
        )
        .takes::<MarkRequest>(Required)
        .answers::<TaskResetResponse>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/schedule",
            "The DAG's only schedule",
            schedules::get,
        )
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Put,
            ADMIN,
            "/api/v1/dags/{dagId}/schedule",
            "Set the DAG's only schedule",
            schedules::put,
        )
        .takes::<ScheduleUpdate>(Required)
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/schedule/enable",
            "Resume the DAG's only schedule",
            schedules::enable,
        )
        .takes::<ScheduleEnable>(Optional)
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/schedule/disable",
            "Pause the DAG's only schedule",
            schedules::disable,
        )
        .takes::<ScheduleDisable>(Optional)
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/schedules",
            "A DAG's schedules",
            schedules::list,
        )
        .query::<PageQuery>()
        .answers::<Page<ScheduleDto>>(),
        Endpoint::new(
            Post,
            ADMIN,
            "/api/v1/dags/{dagId}/schedules",
            "Add a schedule",
            schedules::create,
        )
        .takes::<ScheduleBody>(Required)
        .status(201)
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/schedules/{scheduleId}",
            "A schedule",
            schedules::get_one,
        )
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Put,
            ADMIN,
            "/api/v1/dags/{dagId}/schedules/{scheduleId}",
            "Change a schedule's fields",
            schedules::update,
        )
        .takes::<ScheduleBody>(Required)
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Delete,
            ADMIN,
            "/api/v1/dags/{dagId}/schedules/{scheduleId}",
            "Remove a schedule",
            schedules::delete_one,
        )
        .status(204)
        .answers_nothing(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/schedules/{scheduleId}/enable",
            "Resume a schedule",
            schedules::enable_one,
        )
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/dags/{dagId}/schedules/{scheduleId}/disable",
            "Pause a schedule",
            schedules::disable_one,
        )
        .answers::<ScheduleDto>(),
        Endpoint::new(
            Post,
            VIEWER,
            "/api/v1/dags/schedule/validate-cron",
            "Check a cron expression",
            schedules::validate_cron,
        )
        .takes::<ValidateCronRequest>(Required)
        .scope(Unscoped)
        .answers::<ValidateCronResponse>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/events/{name}",
            "Publish an external event",
            events::publish,
        )
        .query::<events::dto::EventQuery>()
        .takes::<Map<String, Value>>(Optional)
        .scope(Handler)
        .status(202)
        .answers::<EventResponse>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/datasets",
            "A project's datasets: the tasks that write each, the data schedules that wait for it, its latest event",
            datasets::list,
        )
        .query::<datasets::dto::DatasetQuery>()
        .scope(Handler)
        .answers::<Page<datasets::dto::DatasetDto>>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/datasets/{name}",
            "One dataset and its lineage",
            datasets::show,
        )
        .query::<datasets::dto::DatasetQuery>()
        .scope(Handler)
        .answers::<datasets::dto::DatasetDto>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/datasets/{name}/events",
            "A dataset's events, newest first",
            datasets::events,
        )
        .query::<datasets::dto::DatasetEventQuery>()
        .scope(Handler)
        .answers::<Page<datasets::dto::DatasetEventDto>>(),
        Endpoint::new(
            Post,
            OPERATOR,
            "/api/v1/datasets/{name}/events",
            "Announce a dataset (or a partition) written outside DataJump; starts the data schedules it completes",
            datasets::announce,
        )
        .takes::<datajump_shared::datasets::Announced>(Optional)
        .status(201)
        .scope(Handler)
        .answers::<datasets::dto::AnnouncedDto>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/dags/{dagId}/alerts",
            "A DAG's alerts and their delivery, newest first",
            alerts::list,
        )
        .query::<PageQuery>()
        .answers::<Page<alerts::dto::AlertDto>>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/runners",
            "Live runners",
            runners::list,
        )
        .query::<PageQuery>()
        .scope(Unscoped)
        .answers::<Page<RunnerDto>>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/queues",
            "Queues: runners serving each, backlog per priority band, QUEUED and RUNNING tasks",
            runners::queues,
        )
        .query::<PageQuery>()
        .scope(Handler)
        .answers::<Page<QueueDto>>(),
        Endpoint::new(
            Post,
            PUBLIC,
            "/api/v1/session",
            "Sign a browser in: exchange a token for an HttpOnly session cookie",
            session::create,
        )
        .takes::<session::dto::SignIn>(Required)
        .status(201)
        .scope(Unscoped)
        .answers::<session::dto::SessionDto>(),
        Endpoint::new(
            Get,
            PUBLIC,
            "/api/v1/session",
            "Who the caller is: name, role, project, whether tokens are required",
            session::show,
        )
        .scope(Unscoped)
        .answers::<session::dto::SessionDto>(),
        Endpoint::new(
            Delete,
            PUBLIC,
            "/api/v1/session",
            "Sign out: end the session and clear its cookie",
            session::delete,
        )
        .status(204)
        .scope(Unscoped)
        .answers_nothing(),
        Endpoint::new(
            Get,
            ADMIN,
            "/api/v1/audit",
            "Every change made, newest first: who, what, when, from where",
            audit::list,
        )
        .query::<PageQuery>()
        .answers::<Page<audit::dto::AuditDto>>(),
        Endpoint::new(
            Get,
            VIEWER,
            "/api/v1/projects",
            "The projects within the caller's reach",
            projects::list,
        )
        .query::<PageQuery>()
        .scope(Handler)
        .answers::<Page<projects::dto::ProjectDto>>(),
        Endpoint::new(
            Get,
            ADMIN,
            "/api/v1/tokens",
            "The API tokens within the caller's reach (never the tokens themselves)",
            tokens::list,
        )
        .query::<PageQuery>()
        .scope(Handler)
        .answers::<Page<tokens::dto::TokenDto>>(),
        Endpoint::new(
            Post,
            ADMIN,
            "/api/v1/tokens",
            "Create a token no wider than the caller's own; shown once",
            tokens::create,
        )
        .takes::<tokens::dto::NewToken>(Required)
        .status(201)
        .scope(Handler)
        .answers::<tokens::dto::CreatedToken>(),
        Endpoint::new(
            Delete,
            ADMIN,
            "/api/v1/tokens/{name}",
            "Revoke a token, ending its browser sessions",
            tokens::revoke,
        )
        .status(204)
        .scope(Handler)
        .answers_nothing(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The role table's rules, so a route added with a careless access
    /// fails here: only the probes are public, reads are a viewer's (the
    /// audit log and the token list an admin's), and every change needs an operator at least,
    /// except the two validations, which change nothing.
    #[test]
    fn every_route_declares_the_role_its_kind_needs() {
        for endpoint in endpoints() {
            let route = format!("{:?} {}", endpoint.verb, endpoint.path);
            let expected = match (endpoint.verb, endpoint.path) {
                (_, "/healthz" | "/readyz" | "/api/v1/session") => Access::Public,
                (Verb::Get, "/api/v1/audit" | "/api/v1/tokens") => Access::Role(Role::Admin),
                (Verb::Get, _) => Access::Role(Role::Viewer),
                (_, path)
                    if path.ends_with("/validate")
                        || path.ends_with("/validate-cron")
                        || path.ends_with("/validate-condition") =>
                {
                    Access::Role(Role::Viewer)
                }
                _ => {
                    assert!(
                        endpoint.access >= Access::Role(Role::Operator),
                        "{route} is a change open to {:?}",
                        endpoint.access
                    );
                    continue;
                }
            };
            assert_eq!(endpoint.access, expected, "{route}");
        }
    }

    /// A route on a DAG, a run or a task instance is checked against its
    /// project; of the rest, only these are open to a token limited to a
    /// project, each keeping to its reach in its handler or touching no
    /// project's data. A new route without a placeholder is closed to
    /// limited tokens until it is listed here.
    #[test]
    fn every_route_keeps_limited_tokens_to_their_project() {
        const HANDLER: [&str; 13] = [
            "Get /api/v1/dags",
            "Post /api/v1/events/{name}",
            "Get /api/v1/datasets",
            "Get /api/v1/datasets/{name}",
            "Get /api/v1/datasets/{name}/events",
            "Post /api/v1/datasets/{name}/events",
            "Get /api/v1/stream",
            "Post /api/v1/dags",
            "Get /api/v1/projects",
            "Get /api/v1/tokens",
            "Post /api/v1/tokens",
            "Delete /api/v1/tokens/{name}",
            "Get /api/v1/queues",
        ];
        const UNSCOPED: [&str; 9] = [
            "Get /healthz",
            "Get /readyz",
            "Get /api/v1/openapi.json",
            "Post /api/v1/dags/schedule/validate-cron",
            "Post /api/v1/dags/validate-condition",
            "Get /api/v1/runners",
            "Post /api/v1/session",
            "Get /api/v1/session",
            "Delete /api/v1/session",
        ];
        for endpoint in endpoints() {
            let route = format!("{:?} {}", endpoint.verb, endpoint.path);
            let expected = if route.ends_with("/by-name/{name}") {
                Scope::DagName
            } else if endpoint.path.contains("{dagId}") {
                Scope::Dag
            } else if endpoint.path.contains("{instanceId}") {
                Scope::Run
            } else if endpoint.path.contains("{runKey}") {
                Scope::RunKey
            } else if endpoint.path.contains("{taskInstanceId}") {
                Scope::TaskInstance
            } else if HANDLER.contains(&route.as_str()) {
                Scope::Handler
            } else if UNSCOPED.contains(&route.as_str()) {
                Scope::Unscoped
            } else {
                Scope::Installation
            };
            assert_eq!(endpoint.scope, expected, "{route}");
        }
    }
}
