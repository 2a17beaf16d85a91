//! Task executors: one module per task type, registered in [`for_type`].
//!
//! An executor gets everything it needs in an [`ExecContext`] and writes its
//! output through a [`LogSink`]; the runner owns claiming, state and messages.
//! Adding a type means adding a module and one line in [`for_type`].

mod shell;

use std::collections::BTreeMap;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use crate::log::LogSink;

/// What an executor knows about the attempt it runs.
#[derive(Debug, Clone)]
pub struct ExecContext {
    /// Task type-specific configuration.
    pub content: serde_json::Value,
    /// Environment variables to set for processes.
    pub env: BTreeMap<String, String>,
    /// Zero means none.
    pub timeout: Duration,
    /// Cancelled when the attempt must stop (kill, runner shutdown).
    pub cancel: CancellationToken,
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecOutcome {
    /// Exit code 0 (or the type's success).
    Success,
    /// A failure; the exit code when there was a process.
    Failed {
        /// Process exit code.
        exit_code: Option<i32>,
        /// Why, for people.
        message: String,
    },
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
            ExecOutcome::TimedOut | ExecOutcome::Cancelled => None,
        }
    }
}

/// Runs one attempt of a task type.
pub trait Executor: Send + Sync {
    /// Executes, streaming output to `log`.
    fn execute<'a>(
        &'a self,
        ctx: &'a ExecContext,
        log: &'a mut LogSink,
    ) -> futures::future::BoxFuture<'a, ExecOutcome>;
}

/// The executor of a task type, or `None` if this build cannot run it.
pub fn for_type(task_type: &str) -> Option<&'static dyn Executor> {
    match task_type {
        "SHELL" => Some(&shell::Shell),
        _ => None,
    }
}
