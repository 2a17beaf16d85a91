//! The state machine as a table: every change of a task instance's or a
//! run's status the engine makes, from which statuses, to which.
//!
//! The conditional updates take their `WHERE status IN (…)` from
//! [`TaskTransition::from`] and [`RunTransition::from`], so the table is
//! what the engine does, not a description of it; `TaskTransition::iter()`
//! (sea-orm's `Iterable`) lists every row. It is the table
//! docs/ARCHITECTURE.md "State machine" prints.
//!
//! Coverage: with `DATAJUMP_TRANSITION_LOG=<file>` in its environment, every
//! process appends one line per transition it applies, after the name of
//! the program that applied it (`model\ttask Claim QUEUED RUNNING`: the
//! engine's model test; `datajump` or `e2e` for the end-to-end suite), and
//! `scripts/test.sh` runs every test that way and then
//! `transition-coverage` (in `datajump-tests`), which reports the engine
//! tests and the end-to-end suite apart and fails when a `(transition,
//! from, to)` of the table was never applied, or one was applied that the
//! table does not hold. The setting costs one branch per transition when
//! unset; never set it in production.

use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

use datajump_shared::entities::{dag_run, task_instance};
use datajump_shared::{RunStatus, TaskStatus};
use sea_orm::{ColumnTrait, EnumIter};

use RunStatus as R;
use TaskStatus as T;

/// A change of a task instance's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, EnumIter)]
pub enum TaskTransition {
    /// Its strategy says it may run (parents, a new run's roots, a freed slot).
    Release,
    /// Its strategy says it may run, but its task is disabled.
    Skip,
    /// Its strategy says its parents failed it.
    UpstreamFail,
    /// A SWITCH its strategy says may run: the engine evaluated its
    /// conditions (docs/ARCHITECTURE.md, "SWITCH").
    Decide,
    /// A mapped task its strategy says may run: its list was read and its
    /// items made, RUNNING until they end, or its list was unusable
    /// (docs/ARCHITECTURE.md, "Map").
    Expand,
    /// The last item of a mapped task ended: the aggregate ends as its
    /// items did.
    EndMap,
    /// A runner won its work message.
    Claim,
    /// Its attempt ended for good.
    End,
    /// Its attempt failed with retries left.
    EndForRetry,
    /// A sensor's check found its condition not met yet: it waits for the
    /// next check without a slot.
    EndForReschedule,
    /// Its retry time, or a sensor's next check, came (the ticker's
    /// deadline scan).
    RetryDue,
    /// Its runner gave it back at the drain timeout, without a verdict.
    RequeueOnDrain,
    /// Its runner's heartbeat expired; another runner took it over.
    TakeOver,
    /// As [`TaskTransition::TakeOver`], once it has lost its runner too often.
    TakeOverLostTooOften,
    /// An operator killed it, or its run.
    Kill,
    /// Its cross-run dependency wait timed out.
    WaitTimeout,
    /// It waited QUEUED longer than its `queue_timeout` without a runner
    /// taking it.
    QueueTimeout,
    /// Its stored spec does not read: it can be neither decided nor run
    /// (docs/ARCHITECTURE.md "Stored JSON").
    Quarantine,
    /// An operator reran its run or cleared it: back to PENDING.
    Reset,
    /// An operator marked it SUCCESS or FAILED.
    Mark,
}

/// A change of a run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, EnumIter)]
pub enum RunTransition {
    /// A slot freed and the DAG's oldest waiting run took it.
    StartWaiting,
    /// Its last instance was counted off.
    Finish,
    /// An operator killed it.
    Kill,
    /// It was RUNNING past its run timeout: its live instances are killed.
    TimeOut,
    /// An operator reset some of its instances: it runs again.
    Reopen,
    /// As `Reopen`, while the DAG is at `max_active_runs`: it waits for a
    /// slot like a new run, and `StartWaiting` starts it.
    ReopenWaiting,
    /// An operator reset nothing that must run (a mark of a leaf): a
    /// finished run's status is recounted from what was kept.
    Recount,
}

/// What a reset puts back to PENDING: anything finished (a reset applies
/// to finished runs only, whose instances all are).
const RESETTABLE: &[TaskStatus] = &[
    T::Success,
    T::Failed,
    T::Timeout,
    T::Killed,
    T::Skipped,
    T::UpstreamFailed,
];

/// What a mark settles by hand: anything neither QUEUED nor RUNNING.
const MARKABLE: &[TaskStatus] = &[
    T::Success,
    T::Failed,
    T::Timeout,
    T::Killed,
    T::Skipped,
    T::UpstreamFailed,
    T::Pending,
    T::UpForRetry,
    T::UpForReschedule,
];

impl TaskTransition {
    /// The statuses this transition leaves: its update's `status IN (…)`.
    pub const fn from(self) -> &'static [TaskStatus] {
        match self {
            Self::Release
            | Self::Skip
            | Self::UpstreamFail
            | Self::Decide
            | Self::Expand
            | Self::WaitTimeout => &[T::Pending],
            Self::Claim | Self::QueueTimeout => &[T::Queued],
            Self::End
            | Self::EndForRetry
            | Self::RequeueOnDrain
            | Self::TakeOver
            | Self::EndForReschedule
            | Self::TakeOverLostTooOften
            | Self::EndMap => &[T::Running],
            Self::RetryDue => &[T::UpForRetry, T::UpForReschedule],
            Self::Kill => &[
                T::Pending,
                T::Queued,
                T::Running,
                T::UpForRetry,
                T::UpForReschedule,
            ],
            Self::Reset => RESETTABLE,
            Self::Mark => MARKABLE,
            Self::Quarantine => &[T::Pending, T::Queued],
        }
    }

    /// The statuses this transition reaches.
    pub const fn to(self) -> &'static [TaskStatus] {
        match self {
            Self::Release | Self::RetryDue | Self::RequeueOnDrain | Self::TakeOver => &[T::Queued],
            Self::Skip => &[T::Skipped],
            Self::UpstreamFail => &[T::UpstreamFailed],
            Self::Claim => &[T::Running],
            // SKIPPED: a sensor with `soft_fail` out of time.
            Self::End => &[T::Success, T::Failed, T::Timeout, T::Skipped],
            Self::EndForRetry => &[T::UpForRetry],
            Self::EndForReschedule => &[T::UpForReschedule],
            Self::TakeOverLostTooOften | Self::Quarantine => &[T::Failed],
            Self::WaitTimeout | Self::QueueTimeout => &[T::Timeout],
            Self::Kill => &[T::Killed],
            Self::Reset => &[T::Pending],
            Self::Mark | Self::Decide | Self::EndMap => &[T::Success, T::Failed],
            Self::Expand => &[T::Running, T::Failed],
        }
    }

    /// The condition an update making this transition must hold: `status
    /// = …` when it leaves one status (the form the planners pick the
    /// primary-key lookup for), `status IN (…)` otherwise.
    pub(crate) fn applies(self) -> sea_orm::sea_query::SimpleExpr {
        match self.from() {
            [one] => task_instance::Column::Status.eq(*one),
            many => task_instance::Column::Status.is_in(many.iter().copied()),
        }
    }

    /// Records that it moved an instance `from` → `to` (see the module's
    /// coverage note).
    pub(crate) fn applied(self, from: TaskStatus, to: TaskStatus) {
        record(|| format!("task {self:?} {from} {to}"));
    }

    /// Records it for each row an update returned, when it leaves one
    /// status only (so the row's status before is known).
    pub(crate) fn applied_to(self, rows: &[task_instance::Model]) {
        if let [from] = self.from() {
            for row in rows {
                self.applied(*from, row.status);
            }
        }
    }
}

impl RunTransition {
    /// The statuses this transition leaves: its update's `status IN (…)`.
    pub const fn from(self) -> &'static [RunStatus] {
        match self {
            Self::StartWaiting => &[R::Queued],
            Self::Finish | Self::TimeOut => &[R::Running],
            Self::Kill => &[R::Queued, R::Running],
            Self::Reopen | Self::ReopenWaiting => &[R::Success, R::Failed, R::Killed, R::Timeout],
            // A killed run stays KILLED when a mark changes nothing else.
            Self::Recount => &[R::Success, R::Failed],
        }
    }

    /// The statuses this transition reaches.
    pub const fn to(self) -> &'static [RunStatus] {
        match self {
            Self::StartWaiting | Self::Reopen => &[R::Running],
            Self::Finish | Self::Recount => &[R::Success, R::Failed],
            Self::Kill => &[R::Killed],
            Self::TimeOut => &[R::Timeout],
            Self::ReopenWaiting => &[R::Queued],
        }
    }

    /// The condition an update making this transition must hold (as
    /// [`TaskTransition::applies`]).
    pub(crate) fn applies(self) -> sea_orm::sea_query::SimpleExpr {
        match self.from() {
            [one] => dag_run::Column::Status.eq(*one),
            many => dag_run::Column::Status.is_in(many.iter().copied()),
        }
    }

    /// Records that it moved a run `from` → `to`.
    pub(crate) fn applied(self, from: RunStatus, to: RunStatus) {
        record(|| format!("run {self:?} {from} {to}"));
    }

    /// Records it for each run an update returned, when it leaves one
    /// status only.
    pub(crate) fn applied_to(self, runs: &[dag_run::Model]) {
        if let [from] = self.from() {
            for run in runs {
                self.applied(*from, run.status);
            }
        }
    }
}

/// The coverage log, opened once if `DATAJUMP_TRANSITION_LOG` names one.
fn log() -> Option<&'static Mutex<std::fs::File>> {
    static LOG: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let path = std::env::var_os("DATAJUMP_TRANSITION_LOG")?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
            .map(Mutex::new)
    })
    .as_ref()
}

/// The program this process runs, as the coverage log names it: its
/// file's name without the `-<hash>` cargo gives test binaries.
fn program() -> &'static str {
    static PROGRAM: OnceLock<String> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let exe = std::env::current_exe().unwrap_or_default();
        let name = exe
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.rsplit_once('-') {
            Some((program, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => {
                program.to_owned()
            }
            _ => name,
        }
    })
}

/// Appends one line; each line is one `write` on a file opened for
/// appending, so the lines of concurrent processes do not interleave.
fn record(line: impl FnOnce() -> String) {
    if let Some(log) = log()
        && let Ok(mut file) = log.lock()
    {
        let _ = file.write_all(format!("{}\t{}\n", program(), line()).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::Iterable;

    #[test]
    fn no_transition_leaves_or_reaches_nothing() {
        for t in TaskTransition::iter() {
            assert!(!t.from().is_empty() && !t.to().is_empty(), "{t:?}");
        }
        for t in RunTransition::iter() {
            assert!(!t.from().is_empty() && !t.to().is_empty(), "{t:?}");
        }
    }
}
