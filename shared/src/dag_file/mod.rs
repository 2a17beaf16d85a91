//! The DAG file format (YAML) and its validation.
//!
//! A file is parsed into [`DagFile`] and fully validated by [`DagFile::parse`]
//! before anything is stored: unknown fields, duplicate task names, unknown
//! dependencies, cycles (named), invalid cron expressions, time zones, queue
//! and event names, and unknown task types are all reported together, each
//! naming where it is. The format is documented in `docs/DAG_FORMAT.md`.
//!
//! One job per part: [`DagFile`] and the types of its parts as serde reads
//! and writes them (`types`), what a field left out means (`defaults`),
//! parsing that reports every unknown field at once with the nearest
//! allowed name (`parse`), the rules a parsed file must keep
//! (`validate`), and how a broken one is said (`problem`).

mod defaults;
mod parse;
mod problem;
mod types;
mod validate;

pub use defaults::{
    DEFAULT_PROJECT, DEFAULT_RETRY_MAX_INTERVAL_SECS, DEFAULT_WAIT_TIMEOUT_SECS, default_project,
};
pub use problem::{DagProblem, Place, Rule};
pub use types::{DagFile, DependencyFile, DependencyParts, RetryFile, ScheduleFile, TaskFile};

use thiserror::Error;

/// A DAG file that cannot be applied.
#[derive(Debug, Error)]
pub enum DagFileError {
    /// Not YAML of the expected shape (the parser's words, with Rust type
    /// names said plainly).
    #[error("{0}")]
    Syntax(String),
    /// Parsed, but breaks rules; every problem is listed.
    #[error("DAG '{}' is invalid:\n{}", crate::naming::printable(dag), .problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// The DAG's name as written.
        dag: String,
        /// What is wrong, each with where.
        problems: Vec<DagProblem>,
    },
}
