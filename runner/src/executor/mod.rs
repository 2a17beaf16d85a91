//! Task executors: one module per task type, registered in [`for_type`].
//!
//! An executor gets everything it needs in an [`ExecContext`] and writes its
//! output through a [`LogSink`]; the runner owns claiming, state and
//! messages. Adding a type means adding a module and one line in
//! [`for_type`], nothing else.

mod http;
mod noop;
mod process;
mod python;
mod shell;
mod sql;

use std::collections::BTreeMap;
use std::time::Duration;

use datajump_shared::params::{Mode, ParamContext, ParamError};
use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

pub use crate::log::LogSink;

/// What an executor knows about the attempt it runs.
pub struct ExecContext {
    /// Task type-specific configuration, before parameter substitution.
    pub content: serde_json::Value,
    /// Parameters and built-ins for `${…}` and `$[…]`.
    pub params: ParamContext,
    /// Environment variables for processes.
    pub env: BTreeMap<String, String>,
    /// The scheduler's database, for secrets the task needs (datasource
    /// passwords, credential headers): they never travel in messages.
    pub db: DatabaseConnection,
    /// Zero means none.
    pub timeout: Duration,
    /// Cancelled when the attempt must stop (kill, runner shutdown).
    pub cancel: CancellationToken,
}

impl ExecContext {
    /// `text` with its parameters substituted (plain text rules).
    pub fn text(&self, text: &str) -> Result<String, ParamError> {
        self.params.substitute(text, Mode::Text)
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
        /// Why, for people.
        message: String,
    },
    /// The task cannot run as configured (unknown parameter, missing
    /// script): failed before anything ran, and retrying cannot help.
    Invalid(String),
    /// Ran past its timeout and was stopped.
    TimedOut,
    /// Stopped because its cancel token fired.
    Cancelled,
}

impl ExecOutcome {
    /// The process exit code, if any.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            ExecOutcome::Success => Some(0),
            ExecOutcome::Failed { exit_code, .. } => *exit_code,
            ExecOutcome::Invalid(_) | ExecOutcome::TimedOut | ExecOutcome::Cancelled => None,
        }
    }
}

/// Runs one attempt of a task type.
pub trait Executor: Send + Sync {
    /// Executes, streaming output to `log`.
    fn execute<'a>(
        &'a self,
        ctx: &'a ExecContext,
        log: &'a LogSink,
    ) -> futures::future::BoxFuture<'a, ExecOutcome>;
}

/// The executor of a task type, or `None` if this build cannot run it.
pub fn for_type(task_type: &str) -> Option<&'static dyn Executor> {
    match task_type {
        "SHELL" => Some(&shell::Shell),
        "PYTHON" => Some(&python::Python),
        "NOOP" => Some(&noop::Noop),
        "SQL" => Some(&sql::Sql),
        "HTTP" => Some(&http::Http),
        _ => None,
    }
}
