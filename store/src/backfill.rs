//! Business dates as runs: the logical time a run of a business date has
//! however it is started ([`DateRule`]), and backfills, one BACKFILL fire
//! per business date of a range, shared by `datajump backfill` and
//! `POST /api/v1/dags/{dagId}/backfill`.
//!
//! Each date's fire carries the run key a scheduled fire of that date has
//! (`sched:<schedule>:<unix>`, from the DAG's first active cron schedule),
//! so a date that already ran — scheduled or backfilled — is not run twice:
//! callers skip keys that have a run, and the resolver ignores a repeated
//! key anyway. A DAG without a cron schedule gets `backfill:<dag>:<date>` keys.

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
use thiserror::Error;

use datajump_cron::{CronError, CronExpr, parse_time_zone};
use datajump_shared::TriggerType;
use datajump_shared::biz_date::{DEFAULT_OFFSET_DAYS, biz_date_for, scheduled_fire_for, shift};
use datajump_shared::entities::{dag, schedule};
use datajump_shared::messages::{FireMsg, scheduled_run_key};
use datajump_shared::params::Params;
use datajump_shared::subjects::Priority;

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

/// How a DAG's business dates map to logical times, the instants its date
/// parameters (`${today}`, `$[yyyyMMdd-1]`, …) are read from
/// (docs/PARAMETERS.md): the fire its first active cron schedule has for
/// the date, or, for a DAG without one or a date that schedule does not
/// fire for, midnight after the date (the default business-date offset,
/// −1, read backwards). A manual run, a backfill and the scheduled run of
/// one date therefore see the same dates.
#[derive(Debug, Clone)]
pub struct DateRule {
    schedule: Option<(schedule::Model, Tz, CronExpr)>,
    default_zone: Tz,
}

/// The logical time of one business date under a [`DateRule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogicalTime {
    /// The schedule's fire for the date, with its schedule and zone.
    Scheduled {
        /// The schedule.
        schedule_id: i64,
        /// When it fires.
        at: DateTime<Utc>,
        /// The zone it is read in.
        zone: Tz,
    },
    /// Midnight after the date in `zone`: the DAG has no active cron
    /// schedule, or it does not fire for the date.
    Midnight {
        /// Midnight after the date.
        at: DateTime<Utc>,
        /// The zone.
        zone: Tz,
    },
}

impl LogicalTime {
    /// The instant.
    pub fn at(self) -> DateTime<Utc> {
        match self {
            LogicalTime::Scheduled { at, .. } | LogicalTime::Midnight { at, .. } => at,
        }
    }

    /// The zone the run's dates are read in.
    pub fn zone(self) -> Tz {
        match self {
            LogicalTime::Scheduled { zone, .. } | LogicalTime::Midnight { zone, .. } => zone,
        }
    }
}

impl DateRule {
    /// The rule of DAG `dag_id`; `default_zone` is the zone of a DAG with
    /// no active cron schedule.
    ///
    /// # Errors
    ///
    /// [`BackfillError::Db`]; [`BackfillError::Schedule`] when the stored
    /// cron expression or zone does not parse.
    pub async fn of_dag<C: ConnectionTrait>(
        conn: &C,
        dag_id: i64,
        default_zone: Tz,
    ) -> Result<DateRule, BackfillError> {
        let schedule = schedule::Entity::find()
            .filter(schedule::Column::DagId.eq(dag_id))
            .filter(schedule::Column::Kind.eq(datajump_shared::kinds::ScheduleKind::Cron))
            .filter(schedule::Column::Active.eq(true))
            .order_by_asc(schedule::Column::Id)
            .one(conn)
            .await?;
        let schedule = match schedule {
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
        Ok(DateRule {
            schedule,
            default_zone,
        })
    }

    /// The logical time of business date `date`.
    pub fn logical_time(&self, date: NaiveDate) -> LogicalTime {
        if let Some((s, zone, cron)) = &self.schedule
            && let Some(at) = scheduled_fire_for(date, cron, *zone, s.biz_date_offset_days)
        {
            return LogicalTime::Scheduled {
                schedule_id: s.id,
                at,
                zone: *zone,
            };
        }
        let zone = self
            .schedule
            .as_ref()
            .map_or(self.default_zone, |(_, zone, _)| *zone);
        let at = shift(date, 1)
            .and_hms_opt(0, 0, 0)
            .and_then(|t| zone.from_local_datetime(&t).earliest())
            .map_or_else(Utc::now, |t| t.with_timezone(&Utc));
        LogicalTime::Midnight { at, zone }
    }

    /// The business date a fire at `at` has: under the schedule's zone and
    /// offset, or the default ones.
    pub fn date_at(&self, at: DateTime<Utc>) -> NaiveDate {
        match &self.schedule {
            Some((s, zone, _)) => biz_date_for(at, *zone, s.biz_date_offset_days),
            None => biz_date_for(at, self.default_zone, DEFAULT_OFFSET_DAYS),
        }
    }

    /// The name of the schedule that decides the dates, if any.
    fn schedule_name(&self) -> Option<&str> {
        self.schedule.as_ref().map(|(s, _, _)| s.name.as_str())
    }
}

/// The fires of a backfill of DAG `dag` over `from..=to`, in date
/// order, each at its date's logical time ([`DateRule`]) and its DAG's
/// fire priority. A date the DAG's
/// schedule does not fire for is [`Planned::NoFire`]; with no schedule,
/// each date runs at midnight after it in `default_zone`.
///
/// # Errors
///
/// [`BackfillError::Db`]; [`BackfillError::Schedule`] when the stored cron
/// expression or zone does not parse.
pub async fn plan<C: ConnectionTrait>(
    conn: &C,
    dag: &dag::Model,
    from: NaiveDate,
    to: NaiveDate,
    default_zone: Tz,
) -> Result<Vec<Planned>, BackfillError> {
    let rule = DateRule::of_dag(conn, dag.id, default_zone).await?;
    let priority = Priority::of(dag.fire_priority);
    let mut out = Vec::new();
    for date in from.iter_days().take_while(|d| *d <= to) {
        let logical = rule.logical_time(date);
        let mut fire = FireMsg::manual(dag.id, priority, logical.at(), date, Params::new());
        fire.time_zone = logical.zone().name().to_owned();
        match (logical, rule.schedule_name()) {
            (
                LogicalTime::Scheduled {
                    schedule_id, at, ..
                },
                _,
            ) => {
                fire.schedule_id = Some(schedule_id);
                fire.dedup_key = scheduled_run_key(schedule_id, at.timestamp());
            }
            (LogicalTime::Midnight { .. }, Some(schedule)) => {
                out.push(Planned::NoFire {
                    date,
                    schedule: schedule.to_owned(),
                });
                continue;
            }
            (LogicalTime::Midnight { .. }, None) => {
                fire.dedup_key = format!("backfill:{}:{date}", dag.id);
            }
        }
        fire.trigger_type = TriggerType::Backfill;
        out.push(Planned::Fire(fire));
    }
    Ok(out)
}
