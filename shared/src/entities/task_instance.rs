//! `task_instance`: one task in one run.

use sea_orm::entity::prelude::*;

use super::stored_json::StoredJson;
use crate::kinds::DepType;
use crate::outputs::Outputs;
use crate::plan::InstanceSpec;
use crate::{TaskStatus, TriggerType};

/// An instance's children in its run: `(task_id, edge type)`; task ids, as
/// a child instance is found by `(dag_run_id, task_id)`.
pub type Children = Vec<(i64, DepType)>;

/// The `map_index` of the instance a run is created with, one per task of
/// its plan: an ordinary task's instance, or a mapped task's aggregate.
pub const PLANNED: i32 = -1;

/// A task in a run, or one item of a mapped task in a run;
/// `(dag_run_id, task_id, map_index)` is unique.
///
/// Invariants kept by the transitions of `datajump-engine`:
/// - `attempt` counts attempts started; the next (or current) attempt's
///   0-based number is `attempt` before the claim and `attempt - 1` after it.
///   Only the conditional claim increments it.
/// - `pending_parents` counts same-run parents not yet propagated;
///   `strong_ok` / `strong_skipped` / `strong_failed` count propagated
///   STRONG parents that ended S / B / F (docs/DAG_FORMAT.md, "Strategies"). The propagation that decides the strategy moves the
///   instance out of PENDING, exactly once.
/// - `propagated` flips false → true once per terminal state.
/// - A mapped task's planned instance (its aggregate) makes its items when
///   its strategy says it may run, and ends when `map_ended` reaches
///   `map_items`: FAILED if `map_failed` is not zero. Only it counts in its
///   run and for its children; an item counts into it alone
///   (docs/ARCHITECTURE.md, "Map").
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "task_instance")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The run.
    pub dag_run_id: i64,
    /// The DAG.
    pub dag_id: i64,
    /// The task definition it was planned from.
    pub task_id: i64,
    /// Task name (from the plan).
    pub task_name: String,
    /// Business date of the run.
    pub biz_date: Date,
    /// What started the run.
    pub trigger_type: TriggerType,
    /// Status.
    pub status: TaskStatus,
    /// Attempts started (see the type's invariants).
    pub attempt: i32,
    /// Retries used of the task's budget (runner-lost retries are not counted).
    pub retries_used: i32,
    /// Runner that owns the current attempt.
    pub owner: Option<String>,
    /// Queue of its work messages.
    pub queue: String,
    /// 1–10.
    pub priority: i32,
    /// When the ticker must look at it again (retry time, wait or queue timeout).
    pub deadline_at: Option<DateTimeUtc>,
    /// Same-run parents not yet propagated.
    pub pending_parents: i32,
    /// Same-run STRONG parents in the plan.
    pub strong_parents: i32,
    /// Propagated STRONG parents that ended S: SUCCESS, or SKIPPED because
    /// disabled ([`crate::strategy::ParentResult`]).
    pub strong_ok: i32,
    /// Propagated STRONG parents that ended F.
    pub strong_failed: i32,
    /// Propagated STRONG parents that ended B: SKIPPED by control flow.
    pub strong_skipped: i32,
    /// SKIPPED by control flow (its strategy's table said so), not because
    /// it is disabled: B, not S, to its children.
    pub flow_skipped: bool,
    /// Its terminal state has been propagated to children and run.
    pub propagated: bool,
    /// Children in this run: `[[task_id, "STRONG"|"WEAK"], …]`.
    pub children: StoredJson<Children>,
    /// Everything a runner needs: the resolved task spec from the plan.
    pub spec: StoredJson<InstanceSpec>,
    /// Why it failed or was skipped, for people.
    pub reason: Option<String>,
    /// The code and values of `reason`, when it has them
    /// ([`crate::problem::Reason::problem`]).
    pub reason_problem: Option<StoredJson<crate::problem::Problem>>,
    /// Row creation.
    pub created_at: DateTimeUtc,
    /// When it was queued last.
    pub queued_at: Option<DateTimeUtc>,
    /// When its current attempt started.
    pub started_at: Option<DateTimeUtc>,
    /// When it reached its terminal state.
    pub finished_at: Option<DateTimeUtc>,
    /// What its last attempt declared (`crate::outputs`): an object of
    /// strings; `None` until an attempt that declared some ends.
    pub outputs: Option<StoredJson<Outputs>>,
    /// Checks the current attempt of a sensor has made; 0 for any other
    /// task, and for a sensor before its first check ends not ready. A
    /// claim of an instance with checks continues its attempt rather
    /// than starting another.
    pub pokes: i32,
    /// [`PLANNED`], or the 0-based index of the item of its task's list
    /// this instance runs for.
    pub map_index: i32,
    /// A mapped task's aggregate: how many items it made; `None` for every
    /// other instance, and for an aggregate before its list was read.
    pub map_items: Option<i32>,
    /// A mapped task's aggregate: items ended and counted into it.
    pub map_ended: i32,
    /// A mapped task's aggregate: items counted that ended F.
    pub map_failed: i32,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl Model {
    /// How it ended, as its children count it; `None` while it has not.
    pub fn as_parent(&self) -> Option<crate::strategy::ParentResult> {
        use crate::strategy::ParentResult;
        if !self.status.is_terminal() {
            return None;
        }
        Some(match self.status {
            TaskStatus::Skipped if self.flow_skipped => ParentResult::Skipped,
            status if status.counts_as_success() => ParentResult::Succeeded,
            _ => ParentResult::Failed,
        })
    }

    /// Whether it ended in a way that fails its run: F, unless its task
    /// allows its failure (`allow_failure`).
    pub fn fails_its_run(&self) -> bool {
        self.ended_failed() && !self.allows_failure()
    }

    /// Whether it failed and its task allows that: the run does not fail
    /// for it, and lists it.
    pub fn failed_allowed(&self) -> bool {
        self.ended_failed() && self.allows_failure()
    }

    /// Terminal and not S or B: F to its children.
    fn ended_failed(&self) -> bool {
        self.status.is_terminal() && !self.status.counts_as_success()
    }

    /// Its task's `allow_failure`; a spec that does not read allows nothing.
    fn allows_failure(&self) -> bool {
        self.spec.read().is_ok_and(|spec| spec.task.allow_failure)
    }

    /// Its parents' counters, as its strategy reads them.
    pub fn parent_counts(&self) -> crate::strategy::ParentCounts {
        crate::strategy::ParentCounts {
            pending: self.pending_parents,
            strong: self.strong_parents,
            succeeded: self.strong_ok,
            skipped: self.strong_skipped,
            failed: self.strong_failed,
        }
    }
}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// Whether it is one item of a mapped task, not planned with its run.
    pub fn is_map_item(&self) -> bool {
        self.map_index != PLANNED
    }

    /// Whether it is a mapped task's aggregate whose items were made: the
    /// items stand for it wherever instances are listed.
    pub fn is_expanded_map(&self) -> bool {
        !self.is_map_item() && self.map_items.is_some()
    }

    /// Its id, typed.
    pub fn instance_id(&self) -> crate::TaskInstanceId {
        crate::TaskInstanceId(self.id)
    }

    /// Its run's id, typed.
    pub fn run_id(&self) -> crate::RunId {
        crate::RunId(self.dag_run_id)
    }

    /// The 0-based number of the attempt last claimed: the one running, or
    /// the one whose end the row shows (`attempt` counts the claims).
    pub fn last_attempt(&self) -> i32 {
        self.attempt - 1
    }
}
