//! SENSOR tasks (docs/DAG_FORMAT.md "Sensors"): one check of a condition
//! outside the run, or, in `mode: poke`, checks until it holds or the
//! sensor's time is up.
//!
//! A check that finds nothing ends the attempt [`ExecOutcome::NotReady`];
//! the runner then commits the instance UP_FOR_RESCHEDULE until its next
//! check, holding no slot, or ends it at its `sensor_timeout`. A check
//! that cannot be made (an unknown datasource, a parameter that does not
//! substitute) fails like any task, and retries by its policy.

use datajump_shared::problem::Reason;
use std::time::Duration;

use chrono::Days;
use datajump_shared::TaskStatus;
use datajump_shared::content::{SensorCheck, SensorContent, SensorMode};
use datajump_shared::datasets::OutputDecl;
use datajump_shared::entities::{dag, dataset_event, task_instance};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};

use datajump_shared::params::Mode;

use super::find::{self, Looked};
use super::task_process::{Access, TaskUser};
use super::{ExecContext, ExecOutcome, LogSink, http, sql};

/// What one check found.
enum Found {
    /// The condition holds: why, for the log.
    Ready(String),
    /// Not yet: what is missing.
    Missing(String),
}

/// Checks once (or, in poke mode, until ready or out of time).
pub(super) async fn run(content: &SensorContent, ctx: &ExecContext, log: &LogSink) -> ExecOutcome {
    let Some(check) = content.check() else {
        return ExecOutcome::Invalid("the sensor names no check".to_owned());
    };
    let poke_until = (content.mode == SensorMode::Poke).then(|| {
        tokio::time::Instant::now()
            + Duration::from_secs(u64::try_from(content.sensor_timeout_secs()).unwrap_or(0))
    });
    let mut checks = 0;
    loop {
        checks += 1;
        let found = tokio::select! {
            found = bounded(check, ctx, log) => found,
            () = ctx.cancel.cancelled() => {
                log.line("[datajump] stopped");
                return ExecOutcome::Cancelled;
            }
        };
        let missing = match found {
            Ok(Found::Ready(why)) => {
                log.line(&format!("[datajump] ready: {why}"));
                return ExecOutcome::Success;
            }
            Ok(Found::Missing(what)) => what,
            Err(outcome) => return outcome,
        };
        log.line(&format!("[datajump] not ready: {missing}"));
        let wait =
            Duration::from_secs(u64::try_from(content.wait_after_secs(checks)).unwrap_or(60));
        match poke_until {
            Some(until) if tokio::time::Instant::now() + wait < until => {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = ctx.cancel.cancelled() => {
                        log.line("[datajump] stopped");
                        return ExecOutcome::Cancelled;
                    }
                }
            }
            _ => return ExecOutcome::NotReady(missing),
        }
    }
}

/// One check, within the task's `timeout` when it has one: a check that
/// takes longer finds nothing this time.
async fn bounded(
    check: SensorCheck<'_>,
    ctx: &ExecContext,
    log: &LogSink,
) -> Result<Found, ExecOutcome> {
    if ctx.timeout.is_zero() {
        return once(check, ctx, log).await;
    }
    match tokio::time::timeout(ctx.timeout, once(check, ctx, log)).await {
        Ok(found) => found,
        Err(_) => Ok(Found::Missing(format!(
            "the check took longer than the task's timeout of {}s",
            ctx.timeout.as_secs()
        ))),
    }
}

async fn once(
    check: SensorCheck<'_>,
    ctx: &ExecContext,
    log: &LogSink,
) -> Result<Found, ExecOutcome> {
    let invalid = |e: datajump_shared::params::ParamError| ExecOutcome::Invalid(e.to_string());
    let db_failed = |e: sea_orm::DbErr| ExecOutcome::Failed {
        exit_code: None,
        reason: Reason::Said(format!("cannot read DataJump's database: {e}")),
    };
    match check {
        SensorCheck::Dataset(text) => {
            let decl = OutputDecl::parse(text).map_err(|e| ExecOutcome::Invalid(e.to_string()))?;
            let partition = decl
                .partition
                .map(|p| ctx.text(p))
                .transpose()
                .map_err(invalid)?;
            let mut query = dataset_event::Entity::find()
                .filter(dataset_event::Column::ProjectId.eq(ctx.project_id))
                .filter(dataset_event::Column::Dataset.eq(decl.dataset));
            if let Some(partition) = &partition {
                query = query.filter(dataset_event::Column::Partition.eq(partition.as_str()));
            }
            let named = match &partition {
                Some(partition) => format!("{}/{partition}", decl.dataset),
                None => decl.dataset.to_owned(),
            };
            Ok(
                match query
                    .order_by_desc(dataset_event::Column::Id)
                    .one(&ctx.db)
                    .await
                    .map_err(db_failed)?
                {
                    Some(event) => Found::Ready(format!(
                        "{named} was written at {} (event {}, {})",
                        event.created_at.format("%Y-%m-%d %H:%M:%S UTC"),
                        event.id,
                        event.source
                    )),
                    None => Found::Missing(format!("{named} has not been written")),
                },
            )
        }
        SensorCheck::Sql { sql, datasource } => {
            Ok(if sql::returns_a_row(datasource, sql, ctx, log).await? {
                Found::Ready(format!("the query on '{datasource}' returned a row"))
            } else {
                Found::Missing(format!("the query on '{datasource}' returned no row"))
            })
        }
        SensorCheck::Http(content) => match http::run(content, ctx, log).await {
            ExecOutcome::Success => Ok(Found::Ready("the request succeeded".to_owned())),
            ExecOutcome::Failed { reason, .. } => Ok(Found::Missing(reason.text())),
            ExecOutcome::TimedOut => Ok(Found::Missing("the request timed out".to_owned())),
            other => Err(other),
        },
        SensorCheck::File(pattern) => {
            let pattern = ctx
                .params
                .substitute(pattern, Mode::Path)
                .map_err(invalid)?;
            let user = ctx.process.user();
            let looked = find::first_match(&pattern, user).await.map_err(|e| {
                ExecOutcome::Invalid(format!("'file': '{pattern}' is not a path or glob: {e}"))
            })?;
            Ok(match looked {
                // The walk read mode bits; the kernel, as the task user, has
                // the last word (ACLs, other mounts).
                Looked::Found(path)
                    if !ctx
                        .process
                        .user_may(Access::Exists, &path)
                        .await
                        .unwrap_or(false) =>
                {
                    Found::Missing(format!(
                        "nothing the task user '{}' can see matches {pattern}",
                        user.map_or("?", TaskUser::name)
                    ))
                }
                Looked::Found(path) => Found::Ready(format!("{} exists", path.display())),
                Looked::Nothing => Found::Missing(format!("nothing matches {pattern}")),
                Looked::GaveUp(entries) => Found::Missing(format!(
                    "nothing matches {pattern} in the first {entries} entries looked at \
                     (a check looks at most at {} entries for {}s, and follows no link to a directory)",
                    find::MAX_ENTRIES,
                    find::MAX_TIME.as_secs()
                )),
            })
        }
        SensorCheck::DagTask {
            dag: dag_name,
            task,
            offset_day,
            days,
        } => {
            let last = datajump_shared::biz_date::shift(ctx.params.biz_date, offset_day);
            let first = last
                .checked_sub_days(Days::new(u64::from(days.saturating_sub(1))))
                .unwrap_or(last);
            let Some(awaited) = dag::Entity::find()
                .filter(dag::Column::Name.eq(dag_name))
                // Another project's DAGs are not the sensor's to look at.
                .filter(dag::Column::ProjectId.eq(ctx.project_id))
                .one(&ctx.db)
                .await
                .map_err(db_failed)?
            else {
                return Ok(Found::Missing(format!(
                    "there is no DAG '{dag_name}' in project {}",
                    ctx.project_id
                )));
            };
            let succeeded = task_instance::Entity::find()
                .filter(task_instance::Column::DagId.eq(awaited.id))
                .filter(task_instance::Column::TaskName.eq(task))
                // A mapped task is its aggregate, not its items.
                .filter(task_instance::Column::MapIndex.eq(task_instance::PLANNED))
                .filter(task_instance::Column::BizDate.gte(first))
                .filter(task_instance::Column::BizDate.lte(last))
                .filter(task_instance::Column::Status.eq(TaskStatus::Success))
                .all(&ctx.db)
                .await
                .map_err(db_failed)?;
            let mut dates: Vec<_> = succeeded.iter().map(|row| row.biz_date).collect();
            dates.sort_unstable();
            dates.dedup();
            let span = if days == 1 {
                last.to_string()
            } else {
                format!("{first} to {last}")
            };
            Ok(if dates.len() as u64 >= u64::from(days) {
                Found::Ready(format!("{dag_name}/{task} succeeded for {span}"))
            } else {
                let runs = task_instance::Entity::find()
                    .filter(task_instance::Column::DagId.eq(awaited.id))
                    .filter(task_instance::Column::TaskName.eq(task))
                    .filter(task_instance::Column::MapIndex.eq(task_instance::PLANNED))
                    .filter(task_instance::Column::BizDate.gte(first))
                    .filter(task_instance::Column::BizDate.lte(last))
                    .count(&ctx.db)
                    .await
                    .map_err(db_failed)?;
                Found::Missing(format!(
                    "{dag_name}/{task} succeeded for {} of {days} days ({span}; {runs} instances exist)",
                    dates.len()
                ))
            })
        }
    }
}
