//! The DataJump engine: every change of a task's or a run's state, and what
//! each committed change owes the broker.
//!
//! The shaping decision: **the database is the truth and every state change
//! is a conditional update** (`UPDATE … WHERE id = ? AND status IN (…)`)
//! whose row count says who won. Messages only wake roles up, so any
//! handler may run twice, on any replica, and the second run changes
//! nothing. Each entry point below opens its write transaction, commits it,
//! and only then returns the [`Effects`] its caller publishes with
//! [`Effects::publish`]: the rule "commit, then publish what the commit
//! released" is written once, here, and no role writes a status another
//! role does not expect. A role makes one call per batch:
//!
//! - the resolver: [`create_runs`] for fires, [`propagate_completions`] for
//!   `dj.done.*`;
//! - a runner: [`record`] for its claims and attempt ends (propagating the
//!   ends in the same transaction), [`owed_by_finished`] and [`take_over`]
//!   when a work message's claim is lost;
//! - the ticker: [`retry_due`], [`queued_due`], [`wait_timed_out`] and
//!   [`run_timed_out`] from its deadline scan;
//! - the API: the operator actions [`kill_instance`], [`kill_run`],
//!   [`reset`] and [`mark`], and [`announce`] for datasets written
//!   elsewhere.
//!
//! Every entry point that stamps or compares a time takes `now` from its
//! caller rather than reading the clock, so `engine/tests/` can drive the
//! state machine through hours of retries and timeouts in milliseconds.
//!
//! docs/ARCHITECTURE.md describes the state machine, propagation and the
//! crash cases these functions are built for.

mod claims;
mod datasets;
mod effects;
mod maps;
mod operator;
mod propagation;
mod quarantine;
mod queue;
mod redelivery;
mod runs;
mod slots;
mod sql;
mod switches;
pub mod transitions;
mod triggers;
mod waits;

pub use claims::{AttemptEnd, Claim, Claimed, DeclaredOutputs, End, Ended, Recorded, record};
pub use datasets::{Announcement, announce};
pub use effects::Effects;
pub use operator::{
    OperatorError, ResetScope, kill_instance, kill_run, mark, reset, run_timed_out,
};
pub use propagation::{Completion, CompletionCheck, propagate, propagate_completions};
pub use queue::{REPUBLISH_AFTER, queued_due, retry_due};
pub use redelivery::{MAX_RUNNER_LOST, RUNNER_LOST, owed_by_finished, take_over};
pub use runs::{FireOutcome, create_runs};
pub use triggers::owed_trigger_fires;
pub use waits::wait_timed_out;
