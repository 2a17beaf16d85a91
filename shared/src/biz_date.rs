//! Business dates (docs/ARCHITECTURE.md, "Business date and cron").
//!
//! A run's `biz_date` is the date of the data it processes: by default the
//! logical time's local date in the schedule's zone minus one day, as
//! DolphinScheduler's `${system.biz.date}` (the data model's example: the 01-15
//! early-morning run processes 01-14).

use chrono::{DateTime, Days, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Deserializer};
use thiserror::Error;

/// Default day offset from the logical date to the business date.
pub const DEFAULT_OFFSET_DAYS: i32 = -1;

/// The first business date DataJump stores: years 0001 to 9999 are the
/// dates both databases keep and give back alike (PostgreSQL's `date`
/// refuses chrono's years beyond ±5,874,897 and before 4713 BC; SQLite keeps
/// the text, which a year of five digits or a sign would not read back as
/// written). docs/SECURITY.md, "Sizes and dates".
pub const FIRST: NaiveDate = match NaiveDate::from_ymd_opt(1, 1, 1) {
    Some(date) => date,
    None => NaiveDate::MIN,
};

/// The last business date DataJump stores (see [`FIRST`]).
pub const LAST: NaiveDate = match NaiveDate::from_ymd_opt(9999, 12, 31) {
    Some(date) => date,
    None => NaiveDate::MAX,
};

/// A date outside [`FIRST`]..=[`LAST`].
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[error("{0} is outside the dates DataJump stores: 0001-01-01 to 9999-12-31")]
pub struct OutOfRange(pub NaiveDate);

/// `date` if DataJump stores it: the one check of every date that comes
/// from outside (a trigger, a backfill, a schedule's start and end, an
/// event, a fire on NATS), so none reaches the database to be refused there.
pub fn check(date: NaiveDate) -> Result<NaiveDate, OutOfRange> {
    if (FIRST..=LAST).contains(&date) {
        Ok(date)
    } else {
        Err(OutOfRange(date))
    }
}

/// Reads a date and [`check`]s it: for `#[serde(deserialize_with)]` on a
/// date field of a request, a DAG file or a message.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<NaiveDate, D::Error> {
    check(NaiveDate::deserialize(deserializer)?).map_err(serde::de::Error::custom)
}

/// [`deserialize`] for an optional date.
pub fn deserialize_optional<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<NaiveDate>, D::Error> {
    Option::<NaiveDate>::deserialize(deserializer)?
        .map(check)
        .transpose()
        .map_err(serde::de::Error::custom)
}

/// The business date of a run whose logical time is `logical`, read in `tz`,
/// shifted by `offset_days`.
pub fn biz_date_for(logical: DateTime<Utc>, tz: Tz, offset_days: i32) -> NaiveDate {
    shift(logical.with_timezone(&tz).date_naive(), offset_days)
}

/// `date` moved by `days` (negative goes back), saturating at [`FIRST`]
/// and [`LAST`]: a schedule's `biz_date_offset` or a dependency's
/// `offset_day` cannot make a date the database would refuse.
pub fn shift(date: NaiveDate, days: i32) -> NaiveDate {
    let magnitude = Days::new(u64::from(days.unsigned_abs()));
    let moved = if days >= 0 {
        date.checked_add_days(magnitude).unwrap_or(LAST)
    } else {
        date.checked_sub_days(magnitude).unwrap_or(FIRST)
    };
    moved.clamp(FIRST, LAST)
}

/// The instant a schedule fires for business date `biz_date`: its first
/// fire on the local day `biz_date − offset_days`, or `None` if it does not
/// fire that day. Backfill uses it so a backfilled run gets the same run
/// key (`sched:<schedule>:<unix>`) a scheduled fire had or would have.
pub fn scheduled_fire_for(
    biz_date: NaiveDate,
    cron: &datajump_cron::CronExpr,
    tz: Tz,
    offset_days: i32,
) -> Option<DateTime<Utc>> {
    use chrono::TimeZone;
    let day = shift(biz_date, offset_days.checked_neg()?);
    let midnight = tz
        .from_local_datetime(&day.and_hms_opt(0, 0, 0)?)
        .earliest()?;
    let fire = cron.next_after(&(midnight - chrono::Duration::seconds(1)))?;
    (fire.date_naive() == day).then(|| fire.with_timezone(&Utc))
}

/// How far back [`latest_batch`] looks for a date a schedule makes: every
/// cron expression fires at least once a year.
pub const BATCH_LOOK_BACK_DAYS: i32 = 400;

/// One schedule's rule for the business dates its fires make: the cron, the
/// zone it is read in and its business-date offset.
#[derive(Debug, Clone, Copy)]
pub struct BatchRule<'a> {
    /// When it fires.
    pub cron: &'a datajump_cron::CronExpr,
    /// The zone the cron is read in.
    pub zone: Tz,
    /// The offset from a fire's local date to its business date.
    pub offset_days: i32,
}

/// The latest business date on or before `date` that a fire of one of
/// `rules` makes: the batch a dependency on `date` means when no schedule
/// fires for `date` itself (a weekday job's "yesterday" on a Monday is
/// Friday's batch). `None` when no rule makes any date in the
/// [`BATCH_LOOK_BACK_DAYS`] before `date`, or there is no rule.
pub fn latest_batch(rules: &[BatchRule<'_>], date: NaiveDate) -> Option<NaiveDate> {
    (0..=BATCH_LOOK_BACK_DAYS)
        .map(|back| shift(date, -back))
        .find(|day| {
            rules.iter().any(|rule| {
                scheduled_fire_for(*day, rule.cron, rule.zone, rule.offset_days).is_some()
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_bounded_to_what_both_databases_store() {
        let far = NaiveDate::from_ymd_opt(-262_143, 1, 1).unwrap();
        let err = check(far).unwrap_err().to_string();
        assert_eq!(
            err,
            "-262143-01-01 is outside the dates DataJump stores: 0001-01-01 to 9999-12-31"
        );
        assert!(check(NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap()).is_err());
        assert!(check(NaiveDate::from_ymd_opt(0, 12, 31).unwrap()).is_err());
        assert_eq!(check(FIRST), Ok(FIRST));
        assert_eq!(check(LAST), Ok(LAST));
        #[derive(Debug, serde::Deserialize)]
        struct Body {
            #[serde(deserialize_with = "deserialize_optional", default)]
            date: Option<NaiveDate>,
        }
        let read = |text: &str| serde_json::from_str::<Body>(text).map(|b| b.date);
        assert_eq!(read(r#"{"date": null}"#).unwrap(), None);
        assert_eq!(
            read(r#"{"date": "2024-01-15"}"#).unwrap(),
            Some(date(2024, 1, 15))
        );
        let refused = read(r#"{"date": "-262143-01-01"}"#)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("0001-01-01 to 9999-12-31"), "{refused}");
        // Offsets saturate at the bounds instead of leaving them.
        assert_eq!(shift(LAST, 1), LAST);
        assert_eq!(shift(FIRST, i32::MIN), FIRST);
        assert_eq!(shift(date(2024, 1, 15), i32::MAX), LAST);
        assert_eq!(shift(date(2024, 1, 15), -1), date(2024, 1, 14));
    }

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn a_weekday_schedule_makes_no_weekend_batches() {
        let cron = datajump_cron::CronExpr::parse("0 30 8 ? * MON-FRI").unwrap();
        let rule = BatchRule {
            cron: &cron,
            zone: chrono_tz::Asia::Shanghai,
            offset_days: DEFAULT_OFFSET_DAYS,
        };
        let day = |d| NaiveDate::from_ymd_opt(2024, 1, d).unwrap();
        // Fires Mon 01-08 … Fri 01-12 make batches Sun 01-07 … Thu 01-11;
        // Monday 01-15's run (batch 01-14) looking back a day (01-13, a
        // Saturday) means Thursday's batch, 01-11.
        assert_eq!(latest_batch(&[rule], day(13)), Some(day(11)));
        assert_eq!(latest_batch(&[rule], day(11)), Some(day(11)));
        assert_eq!(latest_batch(&[rule], day(14)), Some(day(14)));
        assert_eq!(latest_batch(&[], day(14)), None);
    }

    #[test]
    fn early_morning_run_processes_yesterday() {
        // 2024-01-15 02:00 in Shanghai is 2024-01-14 18:00 UTC.
        let logical = "2024-01-14T18:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let date = biz_date_for(logical, chrono_tz::Asia::Shanghai, DEFAULT_OFFSET_DAYS);
        assert_eq!(date, NaiveDate::from_ymd_opt(2024, 1, 14).unwrap());
        let same_day = biz_date_for(logical, chrono_tz::Asia::Shanghai, 0);
        assert_eq!(same_day, NaiveDate::from_ymd_opt(2024, 1, 15).unwrap());
    }

    #[test]
    fn backfill_finds_the_fire_of_a_business_date() {
        let daily = datajump_cron::CronExpr::parse("0 0 2 * * ?").unwrap();
        let tz = chrono_tz::Asia::Shanghai;
        let biz = NaiveDate::from_ymd_opt(2024, 1, 14).unwrap();
        let fire = scheduled_fire_for(biz, &daily, tz, DEFAULT_OFFSET_DAYS).unwrap();
        assert_eq!(fire.to_rfc3339(), "2024-01-14T18:00:00+00:00"); // 01-15 02:00 local
        assert_eq!(biz_date_for(fire, tz, DEFAULT_OFFSET_DAYS), biz);
        let mondays = datajump_cron::CronExpr::parse("0 0 2 ? * MON").unwrap();
        assert!(scheduled_fire_for(biz, &mondays, tz, DEFAULT_OFFSET_DAYS).is_some()); // 01-15 is a Monday
        let tuesday = NaiveDate::from_ymd_opt(2024, 1, 15).unwrap();
        assert!(scheduled_fire_for(tuesday, &mondays, tz, DEFAULT_OFFSET_DAYS).is_none());
    }
}
