//! Backfills: one BACKFILL fire per business date of a range, shared by
//! `datajump backfill` and `POST /api/v1/dags/{dagId}/backfill`.
//!
//! Each date's fire carries the run key a scheduled fire of that date has
//! (`sched:<schedule>:<unix>`, from the DAG's first active cron schedule),
//! so a date that already ran — scheduled or backfilled — is not run twice:
//! callers skip keys that have a run, and the resolver ignores a repeated
//! key anyway. A DAG without a cron schedule gets `backfill:<dag>:<date>` keys.

use chrono::{NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
use thiserror::Error;

use datajump_cron::{CronError, CronExpr, parse_time_zone};
use datajump_shared::TriggerType;
use datajump_shared::biz_date::{scheduled_fire_for, shift};
use datajump_shared::entities::schedule;
use datajump_shared::messages::{FireMsg, scheduled_run_key};
use datajump_shared::plan::Params;

/// Why a backfill could not be planned.
#[derive(Debug, Error)]
pub enum BackfillError {
    /// The database failed.
    #[error("database error: {0}")]
    Db(#[from] DbErr),
    /// The stored schedule's cron expression or zone does not parse.
    #[error("schedule '{schedule}': {source}")]
    Schedule {
        /// The schedule's name.
        schedule: String,
        /// Why.
        source: CronError,
    },
}

/// What a backfill does for one business date.
#[derive(Debug, Clone)]
pub enum Planned {
    /// Publish this fire (unless its run key already has a run).
    Fire(FireMsg),
    /// The schedule does not fire for this business date.
    NoFire {
        /// The business date.
        date: NaiveDate,
        /// The schedule that decides the dates.
        schedule: String,
    },
}

/// The fires of a backfill of DAG `dag_id` over `from..=to`, in date
/// order. The DAG's first active cron schedule decides each date's logical
/// time and run key; without one each date runs at midnight after it in
/// `default_zone`.
///
/// # Errors
///
/// [`BackfillError::Db`]; [`BackfillError::Schedule`] when the stored cron
/// expression or zone does not parse.
pub async fn plan<C: ConnectionTrait>(
    conn: &C,
    dag_id: i64,
    from: NaiveDate,
    to: NaiveDate,
    default_zone: Tz,
) -> Result<Vec<Planned>, BackfillError> {
    let schedule = schedule::Entity::find()
        .filter(schedule::Column::DagId.eq(dag_id))
        .filter(schedule::Column::Kind.eq(datajump_shared::dag_file::ScheduleKind::Cron))
        .filter(schedule::Column::Active.eq(true))
        .order_by_asc(schedule::Column::Id)
        .one(conn)
        .await?;
    let cron = match &schedule {
        Some(s) => {
            let invalid = |source| BackfillError::Schedule {
                schedule: s.name.clone(),
                source,
            };
            let zone = parse_time_zone(&s.timezone).map_err(invalid)?;
            let cron =
                CronExpr::parse(s.cron_expr.as_deref().unwrap_or_default()).map_err(invalid)?;
            Some((s, zone, cron))
        }
        None => None,
    };
    let mut out = Vec::new();
    for date in from.iter_days().take_while(|d| *d <= to) {
        let mut fire = match &cron {
            Some((s, zone, cron)) => {
                let Some(at) = scheduled_fire_for(date, cron, *zone, s.biz_date_offset_days) else {
                    out.push(Planned::NoFire {
                        date,
                        schedule: s.name.clone(),
                    });
                    continue;
                };
                let mut fire = FireMsg::manual(dag_id, at, date, Params::new());
                fire.schedule_id = Some(s.id);
                fire.dedup_key = scheduled_run_key(s.id, at.timestamp());
                fire.time_zone = zone.name().to_owned();
                fire
            }
            None => {
                let midnight = shift(date, 1)
                    .and_hms_opt(0, 0, 0)
                    .and_then(|t| default_zone.from_local_datetime(&t).earliest())
                    .map_or_else(Utc::now, |t| t.with_timezone(&Utc));
                let mut fire = FireMsg::manual(dag_id, midnight, date, Params::new());
                fire.dedup_key = format!("backfill:{dag_id}:{date}");
                fire.time_zone = default_zone.name().to_owned();
                fire
            }
        };
        fire.trigger_type = TriggerType::Backfill;
        out.push(Planned::Fire(fire));
    }
    Ok(out)
}
