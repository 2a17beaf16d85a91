//! Business dates (DESIGN.md "Business date").
//!
//! A run's `biz_date` is the date of the data it processes: by default the
//! logical time's local date in the schedule's zone minus one day, as
//! DolphinScheduler's `${system.biz.date}` (`000_*` §4.4: the 01-15
//! early-morning run processes 01-14).

use chrono::{DateTime, Days, NaiveDate, Utc};
use chrono_tz::Tz;

/// Default day offset from the logical date to the business date.
pub const DEFAULT_OFFSET_DAYS: i32 = -1;

/// The business date of a run whose logical time is `logical`, read in `tz`,
/// shifted by `offset_days`.
pub fn biz_date_for(logical: DateTime<Utc>, tz: Tz, offset_days: i32) -> NaiveDate {
    shift(logical.with_timezone(&tz).date_naive(), offset_days)
}

/// `date` moved by `days` (negative goes back); saturates at chrono's range.
pub fn shift(date: NaiveDate, days: i32) -> NaiveDate {
    let magnitude = Days::new(u64::from(days.unsigned_abs()));
    let moved = if days >= 0 {
        date.checked_add_days(magnitude)
    } else {
        date.checked_sub_days(magnitude)
    };
    moved.unwrap_or(date)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_morning_run_processes_yesterday() {
        // 2024-01-15 02:00 in Shanghai is 2024-01-14 18:00 UTC.
        let logical = "2024-01-14T18:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let date = biz_date_for(logical, chrono_tz::Asia::Shanghai, DEFAULT_OFFSET_DAYS);
        assert_eq!(date, NaiveDate::from_ymd_opt(2024, 1, 14).unwrap());
        let same_day = biz_date_for(logical, chrono_tz::Asia::Shanghai, 0);
        assert_eq!(same_day, NaiveDate::from_ymd_opt(2024, 1, 15).unwrap());
    }
}
