//! Cron expressions: parsing, validation, next fire times and English descriptions.
//!
//! This is DataJump's own parser and matcher rather than a wrapper around a cron crate, so
//! that which expressions are valid and what they mean follow our rules
//! (`docs/CRON.md`), not a crate's: Unix (5 fields), Spring (6, seconds first) and Quartz
//! (with `?`, optional year) forms, with sloppy syntax that Quartz would accept silently
//! rejected, and daylight-saving transitions handled by the Open Cron Pattern rule (a
//! fixed-time job never skips or repeats a day; an interval job skips the gap and runs in
//! both passes of an overlap).
//!
//! A parsed [`CronExpr`] holds its fields as bitsets, and [`CronExpr::next_after`] skips
//! whole months and days before it looks at the time of day, so one call costs well under a
//! microsecond for ordinary schedules and allocates nothing.

mod describe;
mod error;
mod next;
mod parse;

pub use error::{CronError, CronField, FieldProblem};

use chrono::{DateTime, TimeZone};

/// The time zone schedules use when none is given, by name.
pub const DEFAULT_TIME_ZONE: &str = "Asia/Shanghai";

/// [`DEFAULT_TIME_ZONE`] itself; also what a stored zone that no longer
/// parses falls back to.
pub const DEFAULT_TZ: chrono_tz::Tz = chrono_tz::Asia::Shanghai;

/// Which flavour of cron syntax an expression was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Contains `?`: numeric day of week 1 = SUN … 7 = SAT.
    Quartz,
    /// Six or seven fields without `?`: numeric day of week 0 or 7 = SUN, 1 = MON … 6 = SAT.
    Spring,
    /// Five fields without `?` (minute hour day-of-month month day-of-week), seconds = 0.
    Unix,
    /// One of `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`.
    Macro,
}

/// Which days of the month a schedule allows, before the day of week is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DomSpec {
    /// `*` or `?`.
    Any,
    /// Plain days, bit `d` set for day `d`.
    Days(u32),
    /// `L`, `L-n`, `LW`, `L-nW`: the last day minus `offset`, moved to the nearest weekday
    /// when `weekday` is set.
    Last { offset: u32, weekday: bool },
    /// `nW`: the weekday nearest to day `n`, within the same month.
    NearestWeekday(u32),
}

/// Which days of the week a schedule allows, weekdays numbered 0 = Sunday … 6 = Saturday.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DowSpec {
    /// `*` or `?`.
    Any,
    /// Plain weekdays, bit `w` set for weekday `w`.
    Days(u8),
    /// `wL`: the last such weekday of the month.
    Last(u32),
    /// `w#k`: the `k`-th such weekday of the month.
    Nth { weekday: u32, nth: u32 },
}

/// The first year a year field may name.
const MIN_YEAR: i32 = 1970;
/// The last year a year field may name.
const MAX_YEAR: i32 = 2099;

/// The years of a restricted year field, bit `y - MIN_YEAR` set for year `y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct YearSet([u64; 3]);

impl YearSet {
    /// The first year in the set that is `year` or later.
    fn next_from(&self, year: i32) -> Option<i32> {
        let mut index = usize::try_from(year.max(MIN_YEAR) - MIN_YEAR).ok()?;
        while index < 192 {
            let word = self.0[index / 64] >> (index % 64);
            if word != 0 {
                let found = index + word.trailing_zeros() as usize;
                return i32::try_from(found).ok().map(|i| i + MIN_YEAR);
            }
            index = (index / 64 + 1) * 64;
        }
        None
    }

    /// The years in the set, in order.
    fn years(&self) -> impl Iterator<Item = u32> + '_ {
        (0..192u32)
            .filter(|i| self.0[(i / 64) as usize] >> (i % 64) & 1 == 1)
            .map(|i| i + MIN_YEAR as u32)
    }
}

/// A parsed, validated cron expression.
///
/// Build one with [`CronExpr::parse`]; ask it for fire times with [`CronExpr::next_after`]
/// or [`CronExpr::iter_after`], in any [`chrono::TimeZone`].
#[derive(Debug, Clone, PartialEq)]
pub struct CronExpr {
    source: String,
    dialect: Dialect,
    seconds: u64,
    minutes: u64,
    hours: u64,
    dom: DomSpec,
    months: u64,
    dow: DowSpec,
    years: Option<YearSet>,
    fixed_time: bool,
}

impl CronExpr {
    /// Parses and validates `expr` (surrounding whitespace is ignored).
    ///
    /// # Errors
    ///
    /// A [`CronError`] naming the field and the problem when the expression breaks the rules.
    pub fn parse(expr: &str) -> Result<CronExpr, CronError> {
        parse::parse(expr)
    }

    /// The expression as given, trimmed.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The syntax the expression was written in.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The first fire time strictly after `after` (whole seconds, in `after`'s time zone),
    /// or `None` when the schedule never fires again.
    ///
    /// Across daylight-saving changes a fixed-time job (seconds, minutes and hours each one
    /// plain value) fires once a day: at the end of a spring-forward gap when its wall time
    /// does not exist, and at the first pass of a fall-back overlap. Other jobs skip wall
    /// times inside a gap and fire in both passes of an overlap. Without a year field the
    /// search looks 400 years ahead (a full Gregorian cycle), so an impossible date such as
    /// February 30 returns `None` within microseconds.
    #[must_use]
    pub fn next_after<Tz: TimeZone>(&self, after: &DateTime<Tz>) -> Option<DateTime<Tz>> {
        let tz = after.timezone();
        let start = after.timestamp().checked_add(1)?;
        let fire = self.next_instant(&tz, start)?;
        Some(tz.from_utc_datetime(&DateTime::from_timestamp(fire, 0)?.naive_utc()))
    }

    /// The fire times strictly after `after`, in order, in `after`'s time zone.
    pub fn iter_after<Tz: TimeZone>(
        &self,
        after: &DateTime<Tz>,
    ) -> impl Iterator<Item = DateTime<Tz>> {
        let mut cursor = Some(after.clone());
        std::iter::from_fn(move || {
            let next = self.next_after(cursor.as_ref()?);
            cursor.clone_from(&next);
            next
        })
    }

    /// A human-readable English description, e.g. "At 08:30, Monday through Friday".
    #[must_use]
    pub fn describe(&self) -> String {
        describe::describe(self)
    }
}

/// Looks up an IANA time zone name such as `Asia/Shanghai` or `UTC`.
///
/// # Errors
///
/// [`CronError::UnknownTimeZone`] when the name is not a known zone.
pub fn parse_time_zone(name: &str) -> Result<chrono_tz::Tz, CronError> {
    name.trim()
        .parse::<chrono_tz::Tz>()
        .map_err(|_| CronError::UnknownTimeZone {
            name: name.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(expr: &str) -> String {
        match CronExpr::parse(expr) {
            Ok(parsed) => panic!("'{expr}' should be rejected, parsed as {parsed:?}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn out_of_range_names_field_and_range() {
        assert_eq!(
            message("0 60 * * * ?"),
            "invalid cron expression '0 60 * * * ?': minute field: value 60 is out of range 0-59"
        );
        assert_eq!(
            message("0 0 0 ? * 0"),
            "invalid cron expression '0 0 0 ? * 0': day-of-week field: value 0 is out of range 1-7"
        );
    }

    #[test]
    fn field_count_and_empty() {
        assert_eq!(
            message("0 0 12 * * ? 2025 foo"),
            "invalid cron expression '0 0 12 * * ? 2025 foo': expected 5, 6 or 7 fields separated by spaces, found 8"
        );
        assert_eq!(
            message("   "),
            "invalid cron expression '': the expression is empty"
        );
        assert!(message("@fortnightly").contains("unknown macro"));
    }

    #[test]
    fn sloppy_syntax_is_rejected_with_a_reason() {
        assert!(
            message("0 0 0 ? * MONDAY").ends_with("full name 'MONDAY' is not accepted, use 'MON'")
        );
        assert!(
            message("0 0 0 1, * ?")
                .ends_with("day-of-month field: empty value (a trailing or doubled comma?)")
        );
        assert!(
            message("0 1-2-3 * * * ?")
                .ends_with("minute field: '1-2-3' is not a valid range (expected start-end)")
        );
        assert!(message("0/0 * * * * ?").ends_with("second field: step 0 in '0/0' is not allowed"));
        assert!(
            message("0 0 0/24 * * ?")
                .ends_with("hour field: step 24 is too large, it must be less than 24")
        );
        assert!(message("0 0 12 1,15W * ?").contains("'W' must follow a single day"));
        assert!(message("0 0 12 ? * L-3").ends_with("'L-n' is only allowed in day-of-month"));
        assert!(message("0 0 L * * ?").ends_with("hour field: 'L' is not allowed in this field"));
        assert!(message("0 0 0 1 1 ? 2025-2020").ends_with("year range 2025-2020 is descending"));
        assert!(message("0 0 0 ? * MON#6").ends_with("occurrence 6 in '#6' is out of range 1-5"));
    }

    #[test]
    fn day_field_conflicts() {
        assert!(message("0 0 12 15 * MON").contains("both restricted"));
        assert!(message("0 0 12 ? * ?").contains("exactly one of day-of-month and day-of-week"));
        assert!(message("? 0 12 * * MON").ends_with(
            "second field: '?' must stand alone, and only in day-of-month or day-of-week"
        ));
    }

    #[test]
    fn time_zones() {
        assert_eq!(parse_time_zone(DEFAULT_TIME_ZONE), Ok(DEFAULT_TZ));
        assert_eq!(parse_time_zone("UTC"), Ok(chrono_tz::Tz::UTC));
        assert_eq!(
            parse_time_zone("Mars/Olympus").map_err(|e| e.to_string()),
            Err("unknown time zone 'Mars/Olympus': expected an IANA name such as 'Asia/Shanghai' or 'UTC'".to_owned())
        );
    }

    #[test]
    fn dialects() {
        let dialect = |e: &str| CronExpr::parse(e).map(|c| c.dialect());
        assert_eq!(dialect("0 0 2 * * ? *"), Ok(Dialect::Quartz));
        assert_eq!(dialect("0 0 2 * * *"), Ok(Dialect::Spring));
        assert_eq!(dialect("0 2 * * *"), Ok(Dialect::Unix));
        assert_eq!(dialect("@daily"), Ok(Dialect::Macro));
        assert_eq!(
            CronExpr::parse("  @daily ").map(|c| c.source().to_owned()),
            Ok("@daily".to_owned())
        );
    }
}
