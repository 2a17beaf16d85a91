//! Task types and what each one runs: its `content`, parsed once, when a DAG
//! is applied, into a type per task type.
//!
//! The stored form stays what it was (`task.task_type` the upper-case name,
//! `task.content` a flat JSON object), so nothing is migrated; what changes
//! is that the object is read through [`TaskContent::parse`], which knows
//! every key each type takes and refuses any other. A key the executor would
//! silently ignore (`secretHeader` for `secret_headers`) is the error a user
//! needs at `dag apply`, not a credential found in a log later. Multi-word
//! keys are read in the API's camelCase as well (`secretHeaders`). Executors
//! read the same types back from the spec, so they never look keys up by
//! hand.

use std::collections::BTreeMap;

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::params::{Mode, ScriptLang, SqlDialect};

/// What a task runs as.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
    Default,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "UPPERCASE")]
pub enum TaskType {
    /// A command line or a bash script.
    #[default]
    #[sea_orm(string_value = "SHELL")]
    Shell,
    /// A Python script.
    #[sea_orm(string_value = "PYTHON")]
    Python,
    /// SQL statements against a datasource.
    #[sea_orm(string_value = "SQL")]
    Sql,
    /// One HTTP request.
    #[sea_orm(string_value = "HTTP")]
    Http,
    /// A Spark application (`spark-submit`) or Spark SQL (`spark-sql`).
    #[sea_orm(string_value = "SPARK")]
    Spark,
    /// A Flink job (`flink run`).
    #[sea_orm(string_value = "FLINK")]
    Flink,
    /// Nothing: succeeds at once (for benchmarks and placeholders).
    #[sea_orm(string_value = "NOOP")]
    Noop,
    /// Waits for a condition outside the run (a dataset partition, a row,
    /// a file, an HTTP answer, another DAG's task), holding no runner slot
    /// between checks.
    #[sea_orm(string_value = "SENSOR")]
    Sensor,
    /// Chooses which of its children run, by conditions over the run's
    /// values; the engine decides it, no runner runs it.
    #[sea_orm(string_value = "SWITCH")]
    Switch,
}

impl TaskType {
    /// Every type, in the order help texts list them.
    pub const ALL: [TaskType; 9] = [
        TaskType::Shell,
        TaskType::Python,
        TaskType::Sql,
        TaskType::Http,
        TaskType::Spark,
        TaskType::Flink,
        TaskType::Sensor,
        TaskType::Switch,
        TaskType::Noop,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Shell => "SHELL",
            TaskType::Python => "PYTHON",
            TaskType::Sql => "SQL",
            TaskType::Http => "HTTP",
            TaskType::Spark => "SPARK",
            TaskType::Flink => "FLINK",
            TaskType::Noop => "NOOP",
            TaskType::Sensor => "SENSOR",
            TaskType::Switch => "SWITCH",
        }
    }

    /// Reads a type as a DAG file may write it (any case).
    pub fn parse(name: &str) -> Option<TaskType> {
        TaskType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(name))
    }

    /// The known names, for error messages.
    pub fn names() -> String {
        TaskType::ALL.map(TaskType::as_str).join(", ")
    }
}

/// A SHELL task: a command line, or a script body (one of the two).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellContent {
    /// Command line(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Script body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
}

impl ShellContent {
    /// What runs: the command line if there is one, else the script.
    pub fn body(&self) -> &str {
        self.command
            .as_deref()
            .or(self.script.as_deref())
            .unwrap_or_default()
    }
}

/// A PYTHON task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonContent {
    /// Script body.
    pub script: String,
}

/// A SQL task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlContent {
    /// The statements.
    pub sql: String,
    /// The datasource's name (`datajump datasource add`).
    pub datasource: String,
    /// Run every statement in one transaction: all of them take effect, or
    /// none (`content: { transaction: true }`; default false, each
    /// statement on its own).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transaction: bool,
}

/// An HTTP task (docs/DAG_FORMAT.md, "HTTP").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpContent {
    /// The URL, parameters substituted.
    pub url: String,
    /// The method (default GET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Header names to values; a value may name secrets (`${secret:NAME}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, ScalarText>,
    /// Text, or a JSON object or array sent as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The statuses that mean success (default any 2xx). Also read as
    /// `successCodes`, the API's spelling.
    #[serde(
        default,
        alias = "successCodes",
        skip_serializing_if = "Option::is_none"
    )]
    pub success_codes: Option<Vec<u16>>,
    /// Seconds (default the task's timeout; 0 = none). Also
    /// `requestTimeout`.
    #[serde(
        default,
        alias = "requestTimeout",
        skip_serializing_if = "Option::is_none"
    )]
    pub request_timeout: Option<f64>,
    /// Headers to mask in logs besides the well-known credential headers.
    /// Also `secretHeaders`.
    #[serde(
        default,
        alias = "secretHeaders",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub secret_headers: Vec<String>,
}

/// A value a DAG may write as text, a number or a boolean, used as text
/// (an HTTP header, a Spark or Flink configuration value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, expecting = "text, a number or true/false")]
pub enum ScalarText {
    /// Text (parameters and secrets substituted).
    Text(String),
    /// A number, sent as written.
    Number(serde_json::Number),
    /// A boolean, sent as `true` / `false`.
    Bool(bool),
}

impl ScalarText {
    /// Whether it is text naming a secret (`${secret:NAME}`).
    pub fn names_a_secret(&self) -> bool {
        matches!(self, ScalarText::Text(text)
            if crate::params::secret_names(text).is_ok_and(|names| !names.is_empty()))
    }
}

impl std::fmt::Display for ScalarText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScalarText::Text(text) => f.write_str(text),
            ScalarText::Number(number) => write!(f, "{number}"),
            ScalarText::Bool(flag) => write!(f, "{flag}"),
        }
    }
}

/// Where a Spark driver runs (`spark-submit --deploy-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SparkDeployMode {
    /// In the `spark-submit` process, on the runner.
    Client,
    /// On the cluster; `spark-submit` waits for it (YARN, Kubernetes).
    Cluster,
}

/// A SPARK task (docs/DAG_FORMAT.md, "SPARK and FLINK"): an application
/// (`jar` or `py_file`) run by `spark-submit`, or `sql` run by
/// `spark-sql`. The same type holds a SQL task with `engine: spark`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparkContent {
    /// The application's jar (a path or URL spark-submit reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jar: Option<String>,
    /// The application's Python file. Also `pyFile`.
    #[serde(default, alias = "pyFile", skip_serializing_if = "Option::is_none")]
    pub py_file: Option<String>,
    /// Statements for `spark-sql` (the SQL task's `sql`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// The jar's main class. Also `mainClass`.
    #[serde(default, alias = "mainClass", skip_serializing_if = "Option::is_none")]
    pub main_class: Option<String>,
    /// `--master`: `yarn`, `local[2]`, `k8s://…`, `spark://…`; absent, the
    /// installation's `spark-defaults.conf` decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master: Option<String>,
    /// `--deploy-mode`. Also `deployMode`.
    #[serde(default, alias = "deployMode", skip_serializing_if = "Option::is_none")]
    pub deploy_mode: Option<SparkDeployMode>,
    /// `--name` (default `<dag>.<task>`). Also `appName`.
    #[serde(default, alias = "appName", skip_serializing_if = "Option::is_none")]
    pub app_name: Option<String>,
    /// The YARN queue (`--queue`), not the runner queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// `--driver-cores`. Also `driverCores`.
    #[serde(
        default,
        alias = "driverCores",
        skip_serializing_if = "Option::is_none"
    )]
    pub driver_cores: Option<u32>,
    /// `--driver-memory` (`512m`, `2g`). Also `driverMemory`.
    #[serde(
        default,
        alias = "driverMemory",
        skip_serializing_if = "Option::is_none"
    )]
    pub driver_memory: Option<String>,
    /// `--num-executors`. Also `numExecutors`.
    #[serde(
        default,
        alias = "numExecutors",
        skip_serializing_if = "Option::is_none"
    )]
    pub num_executors: Option<u32>,
    /// `--executor-cores`. Also `executorCores`.
    #[serde(
        default,
        alias = "executorCores",
        skip_serializing_if = "Option::is_none"
    )]
    pub executor_cores: Option<u32>,
    /// `--executor-memory`. Also `executorMemory`.
    #[serde(
        default,
        alias = "executorMemory",
        skip_serializing_if = "Option::is_none"
    )]
    pub executor_memory: Option<String>,
    /// `--conf key=value`, one each; a credential (a secret-looking key, or
    /// a value naming `${secret:…}`) goes in the attempt's
    /// `spark-defaults.conf` instead, never on the command line.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub conf: BTreeMap<String, ScalarText>,
    /// Arguments after the application, one argument each (never split
    /// by a shell). Also `appArgs`.
    #[serde(default, alias = "appArgs", skip_serializing_if = "Vec::is_empty")]
    pub app_args: Vec<String>,
}

/// Where `flink run` runs a job (`-t`, Flink's `execution.target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlinkRunMode {
    /// A mini-cluster in the `flink` process, on the runner.
    Local,
    /// A running session cluster (`rest.address` in the configuration).
    Remote,
    /// A cluster of its own on YARN, for this job (Flink 1.x).
    YarnPerJob,
    /// A running YARN session.
    YarnSession,
    /// An application cluster on YARN.
    YarnApplication,
    /// A running Kubernetes session.
    KubernetesSession,
    /// An application cluster on Kubernetes.
    KubernetesApplication,
}

impl FlinkRunMode {
    /// The `-t` value.
    pub fn target(self) -> &'static str {
        match self {
            FlinkRunMode::Local => "local",
            FlinkRunMode::Remote => "remote",
            FlinkRunMode::YarnPerJob => "yarn-per-job",
            FlinkRunMode::YarnSession => "yarn-session",
            FlinkRunMode::YarnApplication => "yarn-application",
            FlinkRunMode::KubernetesSession => "kubernetes-session",
            FlinkRunMode::KubernetesApplication => "kubernetes-application",
        }
    }

    /// Whether the job gets a cluster of its own, which `-sae` shuts down
    /// when `flink run` is stopped.
    pub fn owns_its_cluster(self) -> bool {
        matches!(
            self,
            FlinkRunMode::YarnPerJob
                | FlinkRunMode::YarnApplication
                | FlinkRunMode::KubernetesApplication
        )
    }
}

/// A FLINK task (docs/DAG_FORMAT.md, "SPARK and FLINK"): a job (`jar` or
/// `py_file`) run by `flink run`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlinkContent {
    /// The job's jar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jar: Option<String>,
    /// The job's Python file. Also `pyFile`.
    #[serde(default, alias = "pyFile", skip_serializing_if = "Option::is_none")]
    pub py_file: Option<String>,
    /// The jar's main class (`-c`). Also `mainClass`.
    #[serde(default, alias = "mainClass", skip_serializing_if = "Option::is_none")]
    pub main_class: Option<String>,
    /// `-t`; absent, the installation's configuration decides. Also
    /// `runMode`.
    #[serde(default, alias = "runMode", skip_serializing_if = "Option::is_none")]
    pub run_mode: Option<FlinkRunMode>,
    /// `-p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<u32>,
    /// `jobmanager.memory.process.size` (`1024m`, `2g`). Also
    /// `jobManagerMemory`.
    #[serde(
        default,
        alias = "jobManagerMemory",
        skip_serializing_if = "Option::is_none"
    )]
    pub job_manager_memory: Option<String>,
    /// `taskmanager.memory.process.size`. Also `taskManagerMemory`.
    #[serde(
        default,
        alias = "taskManagerMemory",
        skip_serializing_if = "Option::is_none"
    )]
    pub task_manager_memory: Option<String>,
    /// `taskmanager.numberOfTaskSlots`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
    /// `yarn.application.name` / `pipeline.name` (default `<dag>.<task>`).
    /// Also `appName`.
    #[serde(default, alias = "appName", skip_serializing_if = "Option::is_none")]
    pub app_name: Option<String>,
    /// The YARN queue (`yarn.application.queue`), not the runner queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// A savepoint to start from (`-s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savepoint: Option<String>,
    /// Start although the savepoint has state no operator takes (`-n`).
    /// Also `allowNonRestoredState`.
    #[serde(
        default,
        alias = "allowNonRestoredState",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub allow_non_restored_state: bool,
    /// `-Dkey=value`, one each; a credential (a secret-looking key, or a
    /// value naming `${secret:…}`) goes in the attempt's Flink
    /// configuration file instead, never on the command line.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub conf: BTreeMap<String, ScalarText>,
    /// Arguments after the job, one argument each. Also `appArgs`.
    #[serde(default, alias = "appArgs", skip_serializing_if = "Vec::is_empty")]
    pub app_args: Vec<String>,
}

/// A SENSOR task (docs/DAG_FORMAT.md "Sensors"): exactly one check, and
/// how often and how long to check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SensorContent {
    /// Ready when the dataset has an event, of this partition if one is
    /// given: `ods.orders/${bizdate}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Ready when this query returns a row (with `datasource`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// The datasource `sql` runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datasource: Option<String>,
    /// Ready when this request is answered with a success status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpContent>,
    /// Ready when a file matches this path or glob (`/data/${bizdate}/*.csv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// With `task`: ready when that DAG's task succeeded for the business
    /// date (DolphinScheduler's dependent node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dag: Option<String>,
    /// The task of `dag`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Days added to the run's business date for `dag`/`task` (-1: the
    /// day before). Also `offsetDay`.
    #[serde(default, alias = "offsetDay", skip_serializing_if = "is_zero")]
    pub offset_day: i32,
    /// For `dag`/`task`: this many days up to that date must all have
    /// succeeded (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<u32>,
    /// Seconds between checks (default 60). Also `pokeInterval`.
    #[serde(
        default,
        alias = "pokeInterval",
        deserialize_with = "crate::duration::optional_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub poke_interval: Option<i32>,
    /// Seconds the sensor waits in all before it ends TIMEOUT (default one
    /// day); a task's `timeout` bounds one check. Also `sensorTimeout`.
    #[serde(
        default,
        alias = "sensorTimeout",
        deserialize_with = "crate::duration::optional_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub sensor_timeout: Option<i32>,
    /// Between checks: `reschedule` (default) holds no runner slot; `poke`
    /// keeps the slot and checks in the same attempt.
    #[serde(default, skip_serializing_if = "SensorMode::is_reschedule")]
    pub mode: SensorMode,
    /// At the sensor timeout end SKIPPED, not TIMEOUT: the tasks after it
    /// run as after a success. Also `softFail`.
    #[serde(
        default,
        alias = "softFail",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub soft_fail: bool,
    /// Double the wait after each check that finds nothing, up to an hour.
    /// Also `exponentialBackoff`.
    #[serde(
        default,
        alias = "exponentialBackoff",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub exponential_backoff: bool,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// What a sensor does between checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SensorMode {
    /// Gives the slot back: the instance waits UP_FOR_RESCHEDULE.
    #[default]
    Reschedule,
    /// Keeps the slot and sleeps in the attempt (for checks seconds apart).
    Poke,
}

impl SensorMode {
    fn is_reschedule(&self) -> bool {
        *self == SensorMode::Reschedule
    }
}

/// A sensor's check, read from its content.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SensorCheck<'a> {
    /// A dataset, and a partition template.
    Dataset(&'a str),
    /// A query on a datasource.
    Sql {
        /// The query.
        sql: &'a str,
        /// The datasource.
        datasource: &'a str,
    },
    /// A request.
    Http(&'a HttpContent),
    /// A path or glob.
    File(&'a str),
    /// Another DAG's task.
    DagTask {
        /// The DAG.
        dag: &'a str,
        /// Its task.
        task: &'a str,
        /// Days added to the business date.
        offset_day: i32,
        /// Days up to it that must all have succeeded.
        days: u32,
    },
}

/// The default wait between a sensor's checks.
pub const DEFAULT_POKE_INTERVAL_SECS: i32 = 60;
/// The default total wait of a sensor.
pub const DEFAULT_SENSOR_TIMEOUT_SECS: i32 = 24 * 3600;
/// The longest wait exponential backoff grows to.
pub const MAX_POKE_INTERVAL_SECS: i64 = 3600;
/// The most days a dependent check looks back.
const MAX_DAYS: u32 = 366;

impl SensorContent {
    /// The check it makes.
    pub fn check(&self) -> Option<SensorCheck<'_>> {
        match (
            &self.dataset,
            (&self.sql, &self.datasource),
            &self.http,
            &self.file,
            (&self.dag, &self.task),
        ) {
            (Some(dataset), (None, None), None, None, (None, None)) => {
                Some(SensorCheck::Dataset(dataset))
            }
            (None, (Some(sql), Some(datasource)), None, None, (None, None)) => {
                Some(SensorCheck::Sql { sql, datasource })
            }
            (None, (None, None), Some(http), None, (None, None)) => Some(SensorCheck::Http(http)),
            (None, (None, None), None, Some(file), (None, None)) => Some(SensorCheck::File(file)),
            (None, (None, None), None, None, (Some(dag), Some(task))) => {
                Some(SensorCheck::DagTask {
                    dag,
                    task,
                    offset_day: self.offset_day,
                    days: self.days.unwrap_or(1),
                })
            }
            _ => None,
        }
    }

    /// Seconds between checks.
    pub fn poke_interval_secs(&self) -> i64 {
        i64::from(
            self.poke_interval
                .unwrap_or(DEFAULT_POKE_INTERVAL_SECS)
                .max(1),
        )
    }

    /// Seconds it waits in all.
    pub fn sensor_timeout_secs(&self) -> i64 {
        i64::from(self.sensor_timeout.unwrap_or(DEFAULT_SENSOR_TIMEOUT_SECS))
    }

    /// The wait after the check numbered `pokes` (1 for the first) found
    /// nothing.
    pub fn wait_after_secs(&self, pokes: i32) -> i64 {
        let interval = self.poke_interval_secs();
        if !self.exponential_backoff {
            return interval;
        }
        let doublings = u32::try_from(pokes.saturating_sub(1).clamp(0, 20)).unwrap_or(0);
        interval
            .saturating_mul(1_i64 << doublings)
            .min(MAX_POKE_INTERVAL_SECS.max(interval))
    }

    fn problems(&self) -> Result<(), ContentError> {
        let problem = |text: &str| Err(ContentError(text.to_owned()));
        let Some(check) = self.check() else {
            return problem(
                "a SENSOR checks exactly one of: 'dataset', 'sql' with 'datasource', 'http', 'file', or 'dag' with 'task'",
            );
        };
        if self.poke_interval.is_some_and(|secs| secs < 1) {
            return problem("'poke_interval' must be at least 1 second");
        }
        if self.sensor_timeout.is_some_and(|secs| secs < 1) {
            return problem("'sensor_timeout' must be at least 1 second");
        }
        match check {
            SensorCheck::Dataset(text) => crate::datasets::OutputDecl::parse(text)
                .map(drop)
                .map_err(|e| ContentError(format!("'dataset': {e}"))),
            SensorCheck::DagTask { days, .. } if !(1..=MAX_DAYS).contains(&days) => {
                problem("'days' must be 1-366")
            }
            SensorCheck::Http(http) => TaskContent::Http(http.clone()).check(),
            SensorCheck::File(path) if path.trim().is_empty() => problem("'file' is empty"),
            _ => Ok(()),
        }
    }
}

/// The most cases a SWITCH may have: each is evaluated in the engine.
pub const MAX_SWITCH_CASES: usize = 64;

/// A SWITCH task (docs/DAG_FORMAT.md, "SWITCH"): the first case whose
/// condition holds chooses the children that run; the others end SKIPPED.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchContent {
    /// In order; the first that holds wins.
    #[serde(default)]
    pub cases: Vec<SwitchCase>,
    /// The children that run when no case holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default: Vec<String>,
}

/// One case of a SWITCH.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchCase {
    /// A CEL condition (`datajump_conditions`).
    pub when: String,
    /// The children that run when it is the first that holds.
    pub then: Vec<String>,
}

impl SwitchContent {
    /// The children its cases and default name, each once, in the order
    /// first written.
    pub fn branches(&self) -> Vec<&str> {
        let mut named: Vec<&str> = Vec::new();
        for name in self
            .cases
            .iter()
            .flat_map(|case| &case.then)
            .chain(&self.default)
        {
            if !named.contains(&name.as_str()) {
                named.push(name);
            }
        }
        named
    }

    /// The conditions, in case order.
    pub fn conditions(&self) -> Vec<&str> {
        self.cases.iter().map(|case| case.when.as_str()).collect()
    }

    fn problems(&self) -> Result<(), ContentError> {
        if self.cases.is_empty() && self.default.is_empty() {
            return Err(ContentError(
                "a SWITCH needs 'cases' (each a 'when' and a 'then'), a 'default', or both"
                    .to_owned(),
            ));
        }
        if self.cases.len() > MAX_SWITCH_CASES {
            return Err(ContentError(format!(
                "a SWITCH may have at most {MAX_SWITCH_CASES} cases, got {}",
                self.cases.len()
            )));
        }
        for (i, case) in self.cases.iter().enumerate() {
            if let Err(e) = datajump_conditions::Condition::parse(&case.when) {
                return Err(ContentError(format!("cases[{i}].when {e}")));
            }
        }
        Ok(())
    }
}

/// A NOOP task takes no content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NoopContent {}

/// What a task runs, by type.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskContent {
    /// SHELL.
    Shell(ShellContent),
    /// PYTHON.
    Python(PythonContent),
    /// SQL.
    Sql(SqlContent),
    /// HTTP.
    Http(HttpContent),
    /// SPARK: an application or `sql`.
    Spark(SparkContent),
    /// SQL with `engine: spark`: `sql` through `spark-sql`, with the Spark
    /// settings a SPARK task takes.
    SparkSql(SparkContent),
    /// FLINK.
    Flink(FlinkContent),
    /// NOOP.
    Noop(NoopContent),
    /// SENSOR.
    Sensor(SensorContent),
    /// SWITCH.
    Switch(SwitchContent),
}

/// Why a task's content does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ContentError(String);

impl TaskContent {
    /// The text this task runs as code once parameters are substituted (a
    /// script or SQL) and the substitution mode it takes; `None` for a type
    /// whose texts are data (HTTP) or that has none (NOOP). SQL reports
    /// PostgreSQL's dialect: the bare rule, the one that differs between
    /// trusted and untrusted values, is the same in every dialect.
    pub fn code(&self) -> Option<(&str, Mode)> {
        match self {
            TaskContent::Shell(shell) => Some((shell.body(), Mode::Script(ScriptLang::Shell))),
            TaskContent::Python(python) => {
                Some((python.script.as_str(), Mode::Script(ScriptLang::Python)))
            }
            TaskContent::Sql(sql) => Some((sql.sql.as_str(), Mode::Sql(SqlDialect::Postgres))),
            TaskContent::Spark(spark) | TaskContent::SparkSql(spark) => spark
                .sql
                .as_deref()
                .map(|sql| (sql, Mode::Sql(SqlDialect::Spark))),
            TaskContent::Sensor(sensor) => sensor
                .sql
                .as_deref()
                .map(|sql| (sql, Mode::Sql(SqlDialect::Postgres))),
            TaskContent::Http(_)
            | TaskContent::Flink(_)
            | TaskContent::Noop(_)
            | TaskContent::Switch(_) => None,
        }
    }

    /// A SPARK or FLINK task's configuration properties (`conf`).
    pub fn conf(&self) -> Option<&BTreeMap<String, ScalarText>> {
        match self {
            TaskContent::Spark(spark) | TaskContent::SparkSql(spark) => Some(&spark.conf),
            TaskContent::Flink(flink) => Some(&flink.conf),
            _ => None,
        }
    }

    /// The texts a SPARK or FLINK task puts on its command line as
    /// arguments of their own, each with its field: where a value from
    /// outside the DAG file may not put a leading `-`
    /// ([`crate::params::ParamContext::substitute_argument`]). Values
    /// inside `key=value` (`conf`, and Flink's name and queue, which are
    /// `-D` properties) cannot begin an argument, and are not listed.
    pub fn arguments(&self) -> Vec<(String, &str)> {
        let (fields, app_args): (Vec<(&str, &Option<String>)>, &Vec<String>) = match self {
            TaskContent::Spark(spark) | TaskContent::SparkSql(spark) => (
                vec![
                    ("master", &spark.master),
                    ("app_name", &spark.app_name),
                    ("main_class", &spark.main_class),
                    ("queue", &spark.queue),
                    ("jar", &spark.jar),
                    ("py_file", &spark.py_file),
                ],
                &spark.app_args,
            ),
            TaskContent::Flink(flink) => (
                vec![
                    ("savepoint", &flink.savepoint),
                    ("main_class", &flink.main_class),
                    ("jar", &flink.jar),
                    ("py_file", &flink.py_file),
                ],
                &flink.app_args,
            ),
            _ => return Vec::new(),
        };
        fields
            .into_iter()
            .filter_map(|(field, value)| Some((field.to_owned(), value.as_deref()?)))
            .chain(
                app_args
                    .iter()
                    .enumerate()
                    .map(|(i, arg)| (format!("app_args[{i}]"), arg.as_str())),
            )
            .collect()
    }

    /// Reads the content of a task of `task_type`, refusing keys the type
    /// does not take and values of the wrong shape, and checking what serde
    /// cannot (a SHELL task has a command or a script, an HTTP method is a
    /// method, success codes are HTTP statuses).
    pub fn parse(task_type: TaskType, content: &Value) -> Result<TaskContent, ContentError> {
        let parsed = match task_type {
            TaskType::Shell => TaskContent::Shell(read(content)?),
            TaskType::Python => TaskContent::Python(read(content)?),
            TaskType::Sql => match content.get(SQL_ENGINE) {
                None => TaskContent::Sql(read(content)?),
                Some(Value::String(engine)) if engine == SPARK_ENGINE => {
                    let mut spark = content.clone();
                    if let Value::Object(fields) = &mut spark {
                        fields.remove(SQL_ENGINE);
                        if fields.contains_key("datasource") {
                            return Err(ContentError(
                                "a SQL task with engine: spark runs through spark-sql and takes no 'datasource'".to_owned(),
                            ));
                        }
                    }
                    TaskContent::SparkSql(read(&spark)?)
                }
                Some(other) => {
                    return Err(ContentError(format!(
                        "'{SQL_ENGINE}': {other} is not an engine: leave it out to run on the datasource, or write \"{SPARK_ENGINE}\" to run through spark-sql"
                    )));
                }
            },
            TaskType::Http => TaskContent::Http(read(content)?),
            TaskType::Spark => TaskContent::Spark(read(content)?),
            TaskType::Flink => TaskContent::Flink(read(content)?),
            TaskType::Noop => TaskContent::Noop(read(content)?),
            TaskType::Sensor => TaskContent::Sensor(read(content)?),
            TaskType::Switch => TaskContent::Switch(read(content)?),
        };
        parsed.check()?;
        Ok(parsed)
    }

    /// The task type this content is for.
    pub fn task_type(&self) -> TaskType {
        match self {
            TaskContent::Shell(_) => TaskType::Shell,
            TaskContent::Python(_) => TaskType::Python,
            TaskContent::Sql(_) | TaskContent::SparkSql(_) => TaskType::Sql,
            TaskContent::Http(_) => TaskType::Http,
            TaskContent::Spark(_) => TaskType::Spark,
            TaskContent::Flink(_) => TaskType::Flink,
            TaskContent::Noop(_) => TaskType::Noop,
            TaskContent::Sensor(_) => TaskType::Sensor,
            TaskContent::Switch(_) => TaskType::Switch,
        }
    }

    /// The stored form: the flat JSON object.
    pub fn to_json(&self) -> Value {
        let value = match self {
            TaskContent::Shell(c) => serde_json::to_value(c),
            TaskContent::Python(c) => serde_json::to_value(c),
            TaskContent::Sql(c) => serde_json::to_value(c),
            TaskContent::Http(c) => serde_json::to_value(c),
            TaskContent::Spark(c) => serde_json::to_value(c),
            TaskContent::SparkSql(c) => serde_json::to_value(c).map(|mut value| {
                if let Value::Object(fields) = &mut value {
                    fields.insert(SQL_ENGINE.to_owned(), SPARK_ENGINE.into());
                }
                value
            }),
            TaskContent::Flink(c) => serde_json::to_value(c),
            TaskContent::Noop(c) => serde_json::to_value(c),
            TaskContent::Sensor(c) => serde_json::to_value(c),
            TaskContent::Switch(c) => serde_json::to_value(c),
        };
        value.unwrap_or_else(|_| Value::Object(serde_json::Map::new()))
    }

    fn check(&self) -> Result<(), ContentError> {
        let problem = |text: String| Err(ContentError(text));
        match self {
            TaskContent::Shell(c) if c.command.is_none() && c.script.is_none() => {
                problem("a SHELL task needs 'command' or 'script'".to_owned())
            }
            TaskContent::Http(c) => {
                if let Some(method) = &c.method
                    && (method.is_empty()
                        || !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-'))
                {
                    return problem(format!("invalid method '{method}'"));
                }
                match &c.success_codes {
                    Some(codes) if codes.is_empty() => problem(
                        "'success_codes' is empty: list the statuses that mean success, or leave it out for any 2xx".to_owned(),
                    ),
                    Some(codes) => match codes.iter().find(|c| !(100..=599).contains(*c)) {
                        Some(code) => problem(format!(
                            "'success_codes': {code} is not an HTTP status (100-599)"
                        )),
                        None => Ok(()),
                    },
                    None => Ok(()),
                }?;
                match c.request_timeout {
                    Some(secs) if !(secs.is_finite() && secs >= 0.0) => {
                        problem("'request_timeout' must be a number of seconds".to_owned())
                    }
                    _ => Ok(()),
                }
            }
            TaskContent::Spark(c) => c.check(false),
            TaskContent::SparkSql(c) => c.check(true),
            TaskContent::Flink(c) => c.check(),
            TaskContent::Sensor(c) => c.problems(),
            TaskContent::Switch(c) => c.problems(),
            _ => Ok(()),
        }
    }
}

/// The SQL content key that chooses where the statements run.
const SQL_ENGINE: &str = "engine";
/// The [`SQL_ENGINE`] that runs them through `spark-sql`.
const SPARK_ENGINE: &str = "spark";

/// Whether `size` reads as a JVM memory size (`512m`, `2g`, `1024`).
fn is_memory_size(size: &str) -> bool {
    let digits = size.trim_end_matches(|c: char| "kKmMgGtT".contains(c));
    size.len() - digits.len() <= 1
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Problems every `conf` map shares: a key must be a property name, and a
/// value may name a secret only where no command line shows it
/// ([`crate::secrets::conf_value_problem`]).
fn conf_problem(conf: &BTreeMap<String, ScalarText>) -> Option<String> {
    conf.iter().find_map(|(key, value)| {
        if key.is_empty() || key.contains(['=', ' ']) {
            return Some(format!(
                "'conf': '{key}' is not a property name (no spaces or '=')"
            ));
        }
        match value {
            ScalarText::Text(text) => crate::secrets::conf_value_problem(key, text),
            ScalarText::Number(_) | ScalarText::Bool(_) => None,
        }
    })
}

impl SparkContent {
    /// Exactly one of `jar`, `py_file`, `sql` (only `sql` for the SQL
    /// type), and sizes that read as sizes.
    fn check(&self, sql_type: bool) -> Result<(), ContentError> {
        let problem = |text: String| Err(ContentError(text));
        let given = [
            self.jar.is_some(),
            self.py_file.is_some(),
            self.sql.is_some(),
        ]
        .into_iter()
        .filter(|given| *given)
        .count();
        if sql_type {
            if self.sql.is_none() {
                return problem("a SQL task needs 'sql'".to_owned());
            }
            if self.jar.is_some() || self.py_file.is_some() || self.main_class.is_some() {
                return problem(
                    "a SQL task with engine: spark runs 'sql'; 'jar', 'py_file' and 'main_class' belong to a SPARK task".to_owned(),
                );
            }
        } else if given != 1 {
            return problem(
                "a SPARK task needs exactly one of 'jar', 'py_file' or 'sql'".to_owned(),
            );
        }
        if self.main_class.is_some() && self.jar.is_none() {
            return problem("'main_class' goes with 'jar'".to_owned());
        }
        if self.sql.is_some() && self.deploy_mode == Some(SparkDeployMode::Cluster) {
            return problem(
                "spark-sql cannot run in cluster deploy mode: leave 'deploy_mode' out or write client".to_owned(),
            );
        }
        for (key, size) in [
            ("driver_memory", &self.driver_memory),
            ("executor_memory", &self.executor_memory),
        ] {
            if let Some(size) = size
                && !is_memory_size(size)
            {
                return problem(format!(
                    "'{key}': '{size}' is not a memory size (write 512m, 2g)"
                ));
            }
        }
        match conf_problem(&self.conf) {
            Some(conf) => problem(conf),
            None => Ok(()),
        }
    }
}

impl FlinkContent {
    /// Exactly one of `jar`, `py_file`, and sizes that read as sizes.
    fn check(&self) -> Result<(), ContentError> {
        let problem = |text: String| Err(ContentError(text));
        if self.jar.is_some() == self.py_file.is_some() {
            return problem("a FLINK task needs exactly one of 'jar' or 'py_file'".to_owned());
        }
        if self.main_class.is_some() && self.jar.is_none() {
            return problem("'main_class' goes with 'jar'".to_owned());
        }
        if self.allow_non_restored_state && self.savepoint.is_none() {
            return problem("'allow_non_restored_state' goes with 'savepoint'".to_owned());
        }
        for (key, size) in [
            ("job_manager_memory", &self.job_manager_memory),
            ("task_manager_memory", &self.task_manager_memory),
        ] {
            if let Some(size) = size
                && !is_memory_size(size)
            {
                return problem(format!(
                    "'{key}': '{size}' is not a memory size (write 1024m, 2g)"
                ));
            }
        }
        match conf_problem(&self.conf) {
            Some(conf) => problem(conf),
            None => Ok(()),
        }
    }
}

/// Deserializes one type's content, naming the key at fault.
fn read<T: serde::de::DeserializeOwned>(content: &Value) -> Result<T, ContentError> {
    let content = match content {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other.clone(),
    };
    serde_path_to_error::deserialize(content).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        ContentError(if path == "." {
            inner
        } else {
            format!("'{path}': {inner}")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_are_errors() {
        let e = TaskContent::parse(
            TaskType::Http,
            &json!({ "url": "http://x", "secretHeader": ["X-Key"] }),
        )
        .expect_err("misspelt key");
        assert!(e.to_string().contains("secretHeader"), "{e}");
        assert!(
            e.to_string().contains("secret_headers"),
            "names what it takes: {e}"
        );
        let camel = TaskContent::parse(
            TaskType::Http,
            &json!({ "url": "http://x", "secretHeaders": ["X-Key"], "successCodes": [204] }),
        )
        .expect("camelCase keys");
        let TaskContent::Http(http) = camel else {
            panic!("an HTTP content")
        };
        assert_eq!(http.secret_headers, ["X-Key"]);
        assert_eq!(http.success_codes, Some(vec![204]));
        assert!(TaskContent::parse(TaskType::Noop, &json!({ "x": 1 })).is_err());
    }

    #[test]
    fn sensor_keys_may_be_camel_case_as_the_api_names_them() {
        let camel = TaskContent::parse(
            TaskType::Sensor,
            &json!({ "dag": "up", "task": "t", "offsetDay": -1, "pokeInterval": 30,
                     "sensorTimeout": 600, "softFail": true, "exponentialBackoff": true }),
        )
        .expect("camelCase sensor keys");
        let TaskContent::Sensor(sensor) = camel else {
            panic!("a SENSOR content")
        };
        assert_eq!(
            (
                sensor.offset_day,
                sensor.poke_interval,
                sensor.sensor_timeout
            ),
            (-1, Some(30), Some(600))
        );
        assert!(sensor.soft_fail && sensor.exponential_backoff);
        let e = TaskContent::parse(
            TaskType::Sensor,
            &json!({ "file": "/x", "pokeIntervall": 3 }),
        )
        .expect_err("a misspelt key");
        assert!(e.to_string().contains("pokeIntervall"), "{e}");
    }

    #[test]
    fn each_type_reads_its_content_and_writes_it_back() {
        for (task_type, content) in [
            (TaskType::Shell, json!({ "command": "true" })),
            (TaskType::Python, json!({ "script": "print(1)" })),
            (
                TaskType::Sql,
                json!({ "sql": "select 1", "datasource": "dw" }),
            ),
            (
                TaskType::Http,
                json!({ "url": "http://x", "method": "post", "headers": { "X-N": 1, "X-T": "a" },
                        "body": { "a": 1 }, "success_codes": [200], "request_timeout": 2.5,
                        "secret_headers": ["X-T"] }),
            ),
            (TaskType::Noop, json!({})),
        ] {
            let parsed = TaskContent::parse(task_type, &content).expect("reads");
            assert_eq!(parsed.task_type(), task_type);
            assert_eq!(parsed.to_json(), content, "{task_type}");
        }
    }

    #[test]
    fn shapes_serde_cannot_check() {
        for (task_type, content, expected) in [
            (TaskType::Shell, json!({}), "needs 'command' or 'script'"),
            (TaskType::Sql, json!({ "sql": "x" }), "datasource"),
            (
                TaskType::Http,
                json!({ "url": "u", "success_codes": [] }),
                "is empty",
            ),
            (
                TaskType::Http,
                json!({ "url": "u", "success_codes": [42] }),
                "not an HTTP status",
            ),
            (
                TaskType::Http,
                json!({ "url": "u", "method": "GE T" }),
                "invalid method",
            ),
            (
                TaskType::Http,
                json!({ "url": "u", "headers": { "h": [1] } }),
                "headers",
            ),
        ] {
            let e = TaskContent::parse(task_type, &content).expect_err("refused");
            assert!(e.to_string().contains(expected), "{e}");
        }
    }

    #[test]
    fn types_read_in_any_case() {
        assert_eq!(TaskType::parse("Flink"), Some(TaskType::Flink));
        assert_eq!(TaskType::parse("shell"), Some(TaskType::Shell));
        assert_eq!(TaskType::parse("Http"), Some(TaskType::Http));
        assert_eq!(TaskType::parse("spark"), Some(TaskType::Spark));
        assert_eq!(TaskType::parse("HIVE"), None);
    }

    #[test]
    fn a_sql_task_on_spark_keeps_its_engine_through_storage() {
        let written = json!({ "sql": "select 1", "engine": "spark", "queue": "root.etl" });
        let content = TaskContent::parse(TaskType::Sql, &written).unwrap();
        let TaskContent::SparkSql(spark) = &content else {
            panic!("{content:?}");
        };
        assert_eq!(spark.queue.as_deref(), Some("root.etl"));
        assert_eq!(content.task_type(), TaskType::Sql);
        assert_eq!(content.to_json(), written);
        assert_eq!(
            TaskContent::parse(TaskType::Sql, &content.to_json()),
            Ok(content)
        );
        let plain = TaskContent::parse(TaskType::Sql, &json!({ "sql": "x", "datasource": "dw" }));
        assert!(matches!(plain, Ok(TaskContent::Sql(_))), "{plain:?}");
    }

    #[test]
    fn memory_sizes() {
        for size in ["512m", "2g", "2G", "1024", "64k"] {
            assert!(is_memory_size(size), "{size}");
        }
        for size in ["", "m", "2gb", "-1g", "1.5g", "lots"] {
            assert!(!is_memory_size(size), "{size}");
        }
    }
}
