//! Task executors: one module per task type, dispatched by [`execute`] on
//! the task's typed content.
//!
//! An executor gets everything it needs in an [`ExecContext`] and writes its
//! output through a [`LogSink`]; the runner owns claiming, state and
//! messages. The content was parsed (and refused if wrong) before the
//! attempt, so an executor reads typed fields, never JSON keys. Adding a type
//! means a `TaskContent` variant, a module here and one arm in [`execute`].

mod cgroup;
mod find;
mod http;
mod process;
mod python;
mod sensor;
mod shell;
mod sql;
mod submit;
pub mod task_process;

use datajump_shared::problem::Reason;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use datajump_shared::content::{ScalarText, TaskContent};
use datajump_shared::params::{Mode, ParamContext, ParamError, ScriptLang};
use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

pub use crate::log::{DEFAULT_MAX_LOG_BYTES, LogSink};
pub use cgroup::{Cgroups, CgroupsUnavailable, kill as kill_cgroup};
pub use process::run_bare_script;
pub use sql::{DATASOURCES_FOLDER, check_datasource};
pub use task_process::{TaskProcess, TaskProcessError, TaskUser, protect_runner};

/// What an executor knows about the attempt it runs.
pub struct ExecContext {
    /// What the task runs, before parameter substitution.
    pub content: TaskContent,
    /// Parameters and built-ins for `${…}` and `$[…]`.
    pub params: ParamContext,
    /// The attempt's own environment variables (`DJ_*`, parameters), set
    /// over what [`ExecContext::process`] inherits.
    pub env: BTreeMap<String, String>,
    /// What task processes inherit from the runner, and as whom they run.
    pub process: Arc<TaskProcess>,
    /// Where HTTP tasks may connect.
    pub network: Arc<datajump_shared::network::NetworkPolicy>,
    /// DataJump's data folder (`--data-dir`), whose files no SQLite
    /// datasource may open; `None` where the runner has none.
    pub data_folder: Option<Arc<Path>>,
    /// The runner's lease: a task's process group is registered with it,
    /// to be killed if the lease lapses (see [`crate::lease`]).
    pub lease: Arc<crate::lease::Lease>,
    /// Where each attempt's processes get a control group of their own,
    /// killed whole when the attempt ends; `None` where the runner may not
    /// create them (see [`Cgroups`]).
    pub cgroups: Option<Arc<Cgroups>>,
    /// The scheduler's database, for secrets the task needs (datasource
    /// passwords, credential headers): they never travel in messages.
    pub db: DatabaseConnection,
    /// The task's project: the only one whose secrets and datasources it
    /// may use.
    pub project_id: i64,
    /// Zero means none.
    pub timeout: Duration,
    /// Cancelled when the attempt must stop (kill, runner shutdown).
    pub cancel: CancellationToken,
}

impl ExecContext {
    /// The secrets `values` name with `${secret:NAME}`, read from the
    /// task's project when the attempt starts: one that does not parse, or
    /// is not in the project, makes the attempt invalid.
    pub(crate) async fn secrets<'a>(
        &self,
        values: impl IntoIterator<Item = &'a ScalarText>,
    ) -> Result<BTreeMap<String, String>, ExecOutcome> {
        let mut names = std::collections::BTreeSet::new();
        for value in values {
            if let ScalarText::Text(value) = value {
                names.extend(
                    datajump_shared::params::secret_names(value)
                        .map_err(|e| ExecOutcome::Invalid(e.to_string()))?,
                );
            }
        }
        datajump_store::secrets::values(&self.db, self.project_id, &names)
            .await
            .map_err(|e| match e {
                datajump_shared::secrets::SecretError::Db(_) => ExecOutcome::Failed {
                    exit_code: None,
                    reason: Reason::Said(format!("cannot read the task's secrets: {e}")),
                },
                other => ExecOutcome::Invalid(other.to_string()),
            })
    }

    /// `text` with its parameters substituted (plain text rules: URLs,
    /// headers, bodies).
    pub fn text(&self, text: &str) -> Result<String, ParamError> {
        self.params.substitute(text, Mode::Text)
    }

    /// A script in `lang` with its parameters substituted: untrusted values
    /// only quoted.
    pub fn script(&self, text: &str, lang: ScriptLang) -> Result<String, ParamError> {
        self.params.substitute(text, Mode::Script(lang))
    }
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecOutcome {
    /// Exit code 0 (or the type's success).
    Success,
    /// A failure that may be retried; the exit code when there was a process.
    Failed {
        /// Process exit code.
        exit_code: Option<i32>,
        /// Why.
        reason: Reason,
    },
    /// The task cannot run as configured (unknown parameter, missing
    /// script): failed before anything ran, and retrying cannot help.
    Invalid(String),
    /// Ran past its timeout and was stopped.
    TimedOut,
    /// Stopped because its cancel token fired.
    Cancelled,
    /// Its processes were killed because the runner's lease lapsed
    /// ([`crate::lease`]): the runner's fault, not the task's, so the task
    /// goes back to the queue.
    Fenced,
    /// A sensor's condition does not hold yet: what is missing.
    NotReady(String),
}

impl ExecOutcome {
    /// The process exit code, if any.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            ExecOutcome::Success => Some(0),
            ExecOutcome::Failed { exit_code, .. } => *exit_code,
            ExecOutcome::Invalid(_)
            | ExecOutcome::TimedOut
            | ExecOutcome::Cancelled
            | ExecOutcome::Fenced
            | ExecOutcome::NotReady(_) => None,
        }
    }
}

/// Runs one attempt with the executor of its content's type, streaming
/// output to `log`. NOOP succeeds at once, in process: it measures the
/// engine itself without a process's cost.
pub async fn execute(ctx: &ExecContext, log: &LogSink) -> ExecOutcome {
    match &ctx.content {
        TaskContent::Shell(content) => shell::run(content, ctx, log).await,
        TaskContent::Python(content) => python::run(content, ctx, log).await,
        TaskContent::Sql(content) => sql::run(content, ctx, log).await,
        TaskContent::Http(content) => http::run(content, ctx, log).await,
        TaskContent::Spark(content) | TaskContent::SparkSql(content) => {
            submit::run_spark(content, ctx, log).await
        }
        TaskContent::Flink(content) => submit::run_flink(content, ctx, log).await,
        TaskContent::Sensor(content) => sensor::run(content, ctx, log).await,
        TaskContent::Noop(_) => ExecOutcome::Success,
        // The engine decides a SWITCH when it would be released; a work
        // message for one was not sent by it.
        TaskContent::Switch(_) => ExecOutcome::Invalid(
            "a SWITCH is decided by the engine and never runs on a runner".to_owned(),
        ),
    }
}
