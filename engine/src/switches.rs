//! SWITCH tasks: decided by the engine in the transaction that would have
//! released them (docs/ARCHITECTURE.md, "SWITCH").
//!
//! A SWITCH starts no process, so it needs no runner, queue or retry: where
//! another task would go PENDING → QUEUED, its conditions are evaluated
//! over the values they read, it goes PENDING → SUCCESS (or FAILED, when a
//! condition cannot be evaluated), and the branches it did not choose end
//! SKIPPED by control flow, all in the same transaction, so the decision is
//! made once however many resolvers propagate at once. One execution row
//! (no worker) keeps the decision as its log: each case evaluated, the
//! values it read, and what was chosen.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use datajump_conditions::{Condition, Inputs, TaskValues, first_true};
use datajump_shared::content::SwitchContent;
use datajump_shared::entities::{StoredJson, execution, task_instance};
use datajump_shared::outputs::Outputs;
use datajump_shared::problem::Reason;
use datajump_shared::{TaskStatus, metrics};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect,
};

use crate::effects::Effects;
use crate::propagation::settle_many;
use crate::sql::{Ti, TiCol, stored_problem, update_instance, with_reason};
use crate::transitions::TaskTransition;

/// What a SWITCH decided.
struct Decision {
    /// SUCCESS or FAILED.
    status: TaskStatus,
    /// Why it failed.
    failure: Option<Reason>,
    /// The branches that end SKIPPED.
    not_taken: Vec<String>,
    /// The decision, as its execution's log.
    log: String,
}

/// Decides each SWITCH of `rows` (PENDING, their strategy says run, their
/// task enabled). Each decided SWITCH and each branch it skipped is pushed
/// to `settled` for propagation.
pub(crate) async fn decide_all<C: ConnectionTrait>(
    conn: &C,
    rows: &[&task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    for row in rows {
        let decision = decide(conn, row).await?;
        let mut update = Ti::update_many()
            .col_expr(TiCol::Status, Expr::value(decision.status.as_str()))
            .col_expr(TiCol::Attempt, Expr::col(TiCol::Attempt).add(1))
            .col_expr(TiCol::StartedAt, Expr::value(now))
            .col_expr(TiCol::FinishedAt, Expr::value(now))
            .filter(TiCol::Id.eq(row.id))
            .filter(TaskTransition::Decide.applies());
        if let Some(reason) = &decision.failure {
            update = with_reason(update, reason);
        }
        // Another transaction decided it first: it wrote the decision.
        let Some(decided) = update_instance(conn, update).await? else {
            continue;
        };
        TaskTransition::Decide.applied(TaskStatus::Pending, decided.status);
        metrics::attempt_ended(decided.status);
        execution::Entity::insert(execution::ActiveModel {
            task_instance_id: Set(decided.id),
            dag_run_id: Set(decided.dag_run_id),
            task_id: Set(decided.task_id),
            schedule_id: Set(decided.spec.read().ok().and_then(|spec| spec.schedule_id)),
            biz_date: Set(decided.biz_date),
            status: Set(decided.status),
            attempt: Set(decided.last_attempt()),
            trigger_type: Set(decided.trigger_type),
            worker: Set(String::new()),
            start_time: Set(now),
            end_time: Set(Some(now)),
            duration_ms: Set(Some(0)),
            log_tail: Set(Some(decision.log)),
            error_msg: Set(decision.failure.as_ref().map(Reason::text)),
            error_problem: Set(decision.failure.as_ref().and_then(stored_problem)),
            created_at: Set(now),
            ..Default::default()
        })
        .exec(conn)
        .await?;
        let reason = Reason::BranchNotTaken {
            switch: decided.task_name.clone(),
        };
        skip_branches(
            conn,
            &decided,
            &decision.not_taken,
            &reason,
            now,
            out,
            settled,
        )
        .await?;
        settled.push(decided.id);
        out.settled.push(decided);
    }
    Ok(())
}

/// Ends the branches of a disabled SWITCH: none of them runs.
pub(crate) async fn skip_every_branch<C: ConnectionTrait>(
    conn: &C,
    switches: &[task_instance::Model],
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    for switch in switches {
        let branches: Vec<String> = content(switch)
            .map(|content| content.branches().into_iter().map(str::to_owned).collect())
            .unwrap_or_default();
        let reason = Reason::SwitchDisabled {
            switch: switch.task_name.clone(),
        };
        skip_branches(conn, switch, &branches, &reason, now, out, settled).await?;
    }
    Ok(())
}

/// PENDING → SKIPPED (B) for the instances of `branches` in `switch`'s run.
async fn skip_branches<C: ConnectionTrait>(
    conn: &C,
    switch: &task_instance::Model,
    branches: &[String],
    reason: &Reason,
    now: DateTime<Utc>,
    out: &mut Effects,
    settled: &mut Vec<i64>,
) -> Result<(), DbErr> {
    if branches.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = Ti::find()
        .select_only()
        .column(TiCol::Id)
        .filter(TiCol::DagRunId.eq(switch.dag_run_id))
        .filter(TiCol::TaskName.is_in(branches.iter().cloned()))
        .filter(TiCol::Status.eq(TaskStatus::Pending))
        .into_tuple()
        .all(conn)
        .await?;
    let skipped = settle_many(
        conn,
        &ids,
        TaskTransition::Skip,
        TaskStatus::Skipped,
        reason,
        true,
        now,
    )
    .await?;
    settled.extend(skipped.iter().map(|t| t.id));
    out.settled.extend(skipped);
    Ok(())
}

/// The SWITCH's content; one that does not read decides nothing.
fn content(row: &task_instance::Model) -> Result<SwitchContent, String> {
    let spec = row.spec.read().map_err(|e| e.to_string())?;
    serde_json::from_value(spec.task.content.clone())
        .map_err(|e| format!("its cases do not read: {e}"))
}

/// Evaluates a SWITCH's conditions over the values they read.
async fn decide<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
) -> Result<Decision, DbErr> {
    let failed = |error: String, log: String| Decision {
        status: TaskStatus::Failed,
        failure: Some(Reason::ConditionFailed { case: 0, error }),
        not_taken: Vec::new(),
        log,
    };
    let switch = match content(row) {
        Ok(switch) => switch,
        Err(e) => return Ok(failed(e.clone(), format!("{e}\n"))),
    };
    let texts = switch.conditions();
    let parsed: Vec<Condition> = match Condition::parse_all(&texts)
        .into_iter()
        .enumerate()
        .map(|(case, parsed)| parsed.map_err(|e| (case, e)))
        .collect()
    {
        Ok(parsed) => parsed,
        Err((case, e)) => {
            let mut decision = failed(e.to_string(), String::new());
            decision.failure = Some(Reason::ConditionFailed {
                case,
                error: e.to_string(),
            });
            decision.log = format!("cases[{case}].when: {}\n  {e}\n", texts[case]);
            return Ok(decision);
        }
    };
    let inputs = inputs(conn, row, &parsed).await?;
    let outcomes = first_true(&texts, &inputs);
    let mut log = String::new();
    let mut chosen: Option<&[String]> = None;
    for (case, outcome) in outcomes.iter().enumerate() {
        let _ = writeln!(log, "cases[{case}].when: {}", texts[case]);
        for (path, value) in parsed[case].reads().values(&inputs) {
            match value {
                Some(value) => {
                    let _ = writeln!(log, "  {path} = {value:?}");
                }
                None => {
                    let _ = writeln!(log, "  {path}: not there");
                }
            }
        }
        match outcome {
            Ok(verdict) => {
                let _ = writeln!(log, "  → {verdict}");
                if *verdict {
                    chosen = Some(&switch.cases[case].then);
                }
            }
            Err(e) => {
                let _ = writeln!(log, "  → could not be evaluated: {e}");
                return Ok(Decision {
                    status: TaskStatus::Failed,
                    failure: Some(Reason::ConditionFailed {
                        case,
                        error: e.to_string(),
                    }),
                    not_taken: Vec::new(),
                    log,
                });
            }
        }
    }
    let chosen: &[String] = match chosen {
        Some(then) => then,
        None => {
            let _ = writeln!(log, "no case holds: default");
            &switch.default
        }
    };
    let not_taken: Vec<String> = switch
        .branches()
        .into_iter()
        .filter(|branch| !chosen.iter().any(|c| c == branch))
        .map(str::to_owned)
        .collect();
    let list = |names: &[String]| {
        if names.is_empty() {
            "nothing".to_owned()
        } else {
            names.join(", ")
        }
    };
    let _ = writeln!(log, "runs: {}", list(chosen));
    let _ = writeln!(log, "skipped: {}", list(&not_taken));
    Ok(Decision {
        status: TaskStatus::Success,
        failure: None,
        not_taken,
        log,
    })
}

/// The values `conditions` read, from `row`'s spec and its run's
/// instances: one query, for the tasks read.
async fn inputs<C: ConnectionTrait>(
    conn: &C,
    row: &task_instance::Model,
    conditions: &[Condition],
) -> Result<Inputs, DbErr> {
    let spec = row.spec.read().ok();
    let mut names: Vec<&str> = conditions
        .iter()
        .flat_map(|c| c.reads().tasks.keys().map(String::as_str))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut tasks = BTreeMap::new();
    if !names.is_empty() {
        let found: Vec<(String, TaskStatus, Option<StoredJson<Outputs>>)> = Ti::find()
            .select_only()
            .columns([TiCol::TaskName, TiCol::Status, TiCol::Outputs])
            .filter(TiCol::DagRunId.eq(row.dag_run_id))
            .filter(TiCol::TaskName.is_in(names))
            .filter(TiCol::MapIndex.eq(task_instance::PLANNED))
            .into_tuple()
            .all(conn)
            .await?;
        for (name, status, outputs) in found {
            let outputs = outputs
                .and_then(|stored| stored.read().ok().cloned())
                .unwrap_or_default();
            tasks.insert(
                name,
                TaskValues {
                    status: status.as_str().to_owned(),
                    outputs,
                },
            );
        }
    }
    Ok(Inputs {
        params: spec
            .map(|spec| spec.params.clone().into_iter().collect())
            .unwrap_or_default(),
        biz_date: row.biz_date.to_string(),
        tasks,
    })
}
