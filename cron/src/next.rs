//! Next fire time: a calendar search in local wall time, mapped to instants under the DST
//! rule.
//!
//! Local time is searched month by month and day by day with bitsets, then the time of day
//! is found from the second, minute and hour masks. A found wall time is taken with the UTC
//! offset in force where the search started; if the offset changes before that instant, the
//! search restarts at the change, so fires are always produced in real-time order:
//!
//! * an interval job's wall times inside a spring-forward gap never match (the search
//!   resumes after the gap), and a fall-back overlap is searched once per offset, so both
//!   passes fire;
//! * a fixed-time job whose wall time falls in a gap fires at the end of the gap, and in an
//!   overlap only its first occurrence fires.

use chrono::{
    DateTime, Datelike, MappedLocalTime, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike,
};

use super::{CronExpr, DomSpec, DowSpec, MAX_YEAR};

/// How far apart offset probes are when looking for a DST change: less than half the
/// shortest time between two changes in the time zone database since 1970 (about 7 days).
const PROBE_STEP: i64 = 3 * 86_400;
/// Upper bound on offset changes crossed in one search.
const MAX_SEGMENTS: usize = 4096;
/// The Gregorian calendar repeats every 400 years, so a day pattern that matches no day in
/// 400 years never matches.
const HORIZON_YEARS: i32 = 400;
/// Bits 0, 7, 14, 21 and 28: one weekday's days in a month, shifted to the first one.
const WEEKLY: u64 = 1 | 1 << 7 | 1 << 14 | 1 << 21 | 1 << 28;

impl CronExpr {
    /// The first fire instant (Unix seconds) at or after `start`.
    pub(super) fn next_instant<Tz: TimeZone>(&self, tz: &Tz, start: i64) -> Option<i64> {
        if self.fixed_time && self.is_in_gap_ending_at(tz, start)? {
            return Some(start);
        }
        let mut at = start;
        let mut horizon = None;
        for _ in 0..MAX_SEGMENTS {
            let offset = offset_at(tz, at)?;
            let local = naive(at.checked_add(offset)?)?;
            let horizon = *horizon.get_or_insert_with(|| match self.years {
                Some(_) => MAX_YEAR,
                None => local.year().saturating_add(HORIZON_YEARS),
            });
            let wall = self.first_match(local, horizon)?;
            let wall_secs = wall.and_utc().timestamp();
            let candidate = wall_secs - offset;
            match first_change(tz, at, offset, candidate)? {
                None => {
                    if self.fixed_time && is_second_pass(tz, &wall, wall_secs, candidate) {
                        at = candidate + 1;
                        continue;
                    }
                    return Some(candidate);
                }
                Some(change) => {
                    if self.fixed_time && wall_secs < change + offset_at(tz, change)? {
                        return Some(change);
                    }
                    at = change;
                }
            }
        }
        None
    }

    /// Whether `start` is the end of a spring-forward gap that holds this (fixed-time) job's
    /// wall time. The search below reads wall times in the offset at `start`, which is past
    /// such a gap, while a search that crosses the gap fires at its end (the DST rule), so a
    /// search that begins exactly there would skip that day.
    fn is_in_gap_ending_at<Tz: TimeZone>(&self, tz: &Tz, start: i64) -> Option<bool> {
        let before = offset_at(tz, start.checked_sub(1)?)?;
        let after = offset_at(tz, start)?;
        if after <= before {
            return Some(false);
        }
        let gap_start = naive(start.checked_add(before)?)?;
        let gap_end = start.checked_add(after)?;
        Some(
            self.first_match(gap_start, gap_start.year())
                .is_some_and(|wall| wall.and_utc().timestamp() < gap_end),
        )
    }

    /// The first matching wall time at or after `start`, in a year no later than `horizon`.
    fn first_match(&self, start: NaiveDateTime, horizon: i32) -> Option<NaiveDateTime> {
        let (mut year, mut month, mut day) = (start.year(), start.month(), start.day());
        let mut time = (start.hour(), start.minute(), start.second());
        loop {
            if let Some(years) = &self.years {
                let next = years.next_from(year)?;
                if next != year {
                    (year, month, day, time) = (next, 1, 1, (0, 0, 0));
                }
            }
            if year > horizon {
                return None;
            }
            let Some(next) = next_bit(self.months, month) else {
                (year, month, day, time) = (year + 1, 1, 1, (0, 0, 0));
                continue;
            };
            if next != month {
                (month, day, time) = (next, 1, (0, 0, 0));
            }
            let Some(next) = next_bit(self.day_mask(year, month), day) else {
                (month, day, time) = (month + 1, 1, (0, 0, 0));
                continue;
            };
            if next != day {
                (day, time) = (next, (0, 0, 0));
            }
            if let Some((hour, minute, second)) = self.next_time(time) {
                return NaiveDate::from_ymd_opt(year, month, day)?
                    .and_hms_opt(hour, minute, second);
            }
            (day, time) = (day + 1, (0, 0, 0));
        }
    }

    /// The first matching time of day at or after `(hour, minute, second)`.
    fn next_time(&self, (hour, minute, second): (u32, u32, u32)) -> Option<(u32, u32, u32)> {
        let mut h = next_bit(self.hours, hour)?;
        let (mut m, mut s) = if h == hour { (minute, second) } else { (0, 0) };
        loop {
            match next_bit(self.minutes, m) {
                Some(found) => {
                    let from = if found == m { s } else { 0 };
                    if let Some(sec) = next_bit(self.seconds, from) {
                        return Some((h, found, sec));
                    }
                    (m, s) = (found + 1, 0);
                }
                None => {
                    h = next_bit(self.hours, h + 1)?;
                    (m, s) = (0, 0);
                }
            }
        }
    }

    /// The days of `month` that match, bit `d` set for day `d`.
    fn day_mask(&self, year: i32, month: u32) -> u64 {
        let length = days_in_month(year, month);
        let all = ((1u64 << length) - 1) << 1;
        let first = || weekday(year, month, 1);
        let by_month = match self.dom {
            DomSpec::Any => all,
            DomSpec::Days(days) => u64::from(days) & all,
            DomSpec::Last { offset, weekday } => match length.checked_sub(offset) {
                Some(day) if day >= 1 && weekday => 1 << nearest_weekday(day, length, first()),
                Some(day) if day >= 1 => 1 << day,
                _ => 0,
            },
            DomSpec::NearestWeekday(day) if day <= length => {
                1 << nearest_weekday(day, length, first())
            }
            DomSpec::NearestWeekday(_) => 0,
        };
        let by_week = match self.dow {
            DowSpec::Any => all,
            DowSpec::Days(days) => {
                let first = first();
                (0..7)
                    .filter(|w| days >> w & 1 == 1)
                    .fold(0, |acc, w| acc | WEEKLY << ((w + 7 - first) % 7 + 1))
                    & all
            }
            DowSpec::Last(target) => {
                let last = (first() + length - 1) % 7;
                1 << (length - (last + 7 - target) % 7)
            }
            DowSpec::Nth { weekday, nth } => {
                let day = (weekday + 7 - first()) % 7 + 1 + 7 * (nth - 1);
                if day <= length { 1 << day } else { 0 }
            }
        };
        by_month & by_week
    }
}

/// The lowest set bit of `mask` at index `from` or above.
fn next_bit(mask: u64, from: u32) -> Option<u32> {
    let rest = mask.checked_shr(from)?.checked_shl(from)?;
    (rest != 0).then(|| rest.trailing_zeros())
}

fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Day of the week, 0 = Sunday, in the proleptic Gregorian calendar (Sakamoto's method).
fn weekday(year: i32, month: u32, day: u32) -> u32 {
    const SHIFT: [i64; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let y = i64::from(year) - i64::from(month < 3);
    let w = y + y.div_euclid(4) - y.div_euclid(100)
        + y.div_euclid(400)
        + SHIFT[(month - 1) as usize]
        + i64::from(day);
    w.rem_euclid(7) as u32
}

/// Quartz's `W`: the weekday nearest to `day`, never leaving the month.
fn nearest_weekday(day: u32, length: u32, first: u32) -> u32 {
    match (first + day - 1) % 7 {
        6 if day == 1 => 3,
        6 => day - 1,
        0 if day == length => day - 2,
        0 => day + 1,
        _ => day,
    }
}

fn naive(secs: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp(secs, 0).map(|utc| utc.naive_utc())
}

/// The zone's UTC offset, in seconds, at the instant `secs`.
fn offset_at<Tz: TimeZone>(tz: &Tz, secs: i64) -> Option<i64> {
    let utc = naive(secs)?;
    Some(i64::from(
        tz.offset_from_utc_datetime(&utc).fix().local_minus_utc(),
    ))
}

/// The first instant in `(from, to]` whose offset differs from `offset` (the offset at
/// `from`); `Some(None)` when there is none, `None` when an instant is out of range.
fn first_change<Tz: TimeZone>(tz: &Tz, from: i64, offset: i64, to: i64) -> Option<Option<i64>> {
    let mut low = from;
    while low < to {
        let mut high = low.saturating_add(PROBE_STEP).min(to);
        if offset_at(tz, high)? != offset {
            while high - low > 1 {
                let mid = low + (high - low) / 2;
                if offset_at(tz, mid)? == offset {
                    low = mid;
                } else {
                    high = mid;
                }
            }
            return Some(Some(high));
        }
        low = high;
    }
    Some(None)
}

/// Whether `candidate`, the instant of the wall time `wall`, is the second of two instants
/// with that wall time (a fall-back overlap).
fn is_second_pass<Tz: TimeZone>(
    tz: &Tz,
    wall: &NaiveDateTime,
    wall_secs: i64,
    candidate: i64,
) -> bool {
    match tz.offset_from_local_datetime(wall) {
        MappedLocalTime::Ambiguous(a, b) => {
            let first = (wall_secs - i64::from(a.fix().local_minus_utc()))
                .min(wall_secs - i64::from(b.fix().local_minus_utc()));
            candidate > first
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use crate::{CronExpr, parse_time_zone};

    fn next(expr: &str, zone: &str, after: &str) -> Option<String> {
        let tz = parse_time_zone(zone).ok()?;
        let after = after.parse::<DateTime<Utc>>().ok()?.with_timezone(&tz);
        let fire = CronExpr::parse(expr).ok()?.next_after(&after)?;
        Some(fire.to_rfc3339())
    }

    #[test]
    fn a_search_from_the_last_second_before_a_gap_fires_at_its_end() {
        // Found by tests/properties.rs: from 01:59:59 EST on 2024-03-10 the 02:30 job
        // skipped that day, though from 01:59:58 it fired at 03:00 EDT.
        for after in ["2024-03-10T06:59:58Z", "2024-03-10T06:59:59Z"] {
            assert_eq!(
                next("0 30 2 * * ?", "America/New_York", after).as_deref(),
                Some("2024-03-10T03:00:00-04:00"),
                "after {after}"
            );
        }
        assert_eq!(
            next("0 30 2 * * ?", "Europe/Berlin", "2024-03-31T00:59:59Z").as_deref(),
            Some("2024-03-31T03:00:00+02:00")
        );
        // Santiago's clocks went from 00:00 to 01:00 on Sunday 1978-10-15.
        assert_eq!(
            next("@weekly", "America/Santiago", "1978-10-15T03:59:59Z").as_deref(),
            Some("1978-10-15T01:00:00-03:00")
        );
        // A job whose time is not in the gap still waits for its time.
        assert_eq!(
            next("0 30 4 * * ?", "America/New_York", "2024-03-10T06:59:59Z").as_deref(),
            Some("2024-03-10T04:30:00-04:00")
        );
        // An interval job skips the gap's wall times (the DST rule).
        assert_eq!(
            next("0 30 2,5 * * ?", "America/New_York", "2024-03-10T06:59:59Z").as_deref(),
            Some("2024-03-10T05:30:00-04:00")
        );
    }
}
