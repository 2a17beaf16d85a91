//! DolphinScheduler-style date expressions: the text inside `$[…]`, read
//! relative to the run's logical time in the run's zone.
//!
//! - `FORMAT` or `FORMAT±OFFSET`: the format is made of `yyyy`, `yy`, `MM`,
//!   `dd`, `HH`, `mm`, `ss` and the separators `-` `/` `:` `_` `.` and space.
//!   The offset is in days, `N`, `N*M…` or `N/D…` (`-1/24` is an hour,
//!   `-1/24/60` a minute). The first `+` or `-` followed by a digit starts
//!   the offset, so `yyyy-MM-dd-1` is the format `yyyy-MM-dd` minus one day.
//!   A whole number of days moves the local date and keeps the wall-clock
//!   time; any other offset moves the instant by that many seconds (so
//!   `-1/24` is the previous real hour across a DST change), and must come to
//!   a whole number of seconds.
//! - Functions, `FORMAT` as above and `N` an integer (`-1`, `12*2`):
//!   `add_months(FORMAT,N)`, `this_day(FORMAT)`, `last_day(FORMAT)` (the day
//!   before, as in DolphinScheduler), `month_first_day(FORMAT,N)`,
//!   `month_last_day(FORMAT,N)`, `week_first_day(FORMAT,N)` (Monday),
//!   `week_last_day(FORMAT,N)` (Sunday), `year_week(FORMAT)` and
//!   `year_week(FORMAT,START)`. Functions keep the time of day.
//! - `year_week` gives the ISO 8601 week-numbering year and week, `2024-14`
//!   (`202414` when FORMAT has no `-`); START (1 = Monday … 7 = Sunday,
//!   default 1) moves the first day of the week, week 1 still being the one
//!   holding 4 January. Unlike DolphinScheduler, whose year is the calendar
//!   year, 2021-01-01 is `2020-53`.
//!
//! Anything else is an error naming the expression: no unknown function,
//! format letter or stray character is passed through.

use chrono::{DateTime, Datelike, Months, NaiveDateTime, Offset, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;

use super::ParamError;

const SECONDS_PER_DAY: i64 = 86_400;

/// Each function and how it is called, for error messages.
const FUNCTIONS: [(&str, &str); 8] = [
    ("add_months", "add_months(format,months)"),
    ("this_day", "this_day(format)"),
    ("last_day", "last_day(format)"),
    ("month_first_day", "month_first_day(format,months)"),
    ("month_last_day", "month_last_day(format,months)"),
    ("week_first_day", "week_first_day(format,weeks)"),
    ("week_last_day", "week_last_day(format,weeks)"),
    (
        "year_week",
        "year_week(format) or year_week(format,first_weekday)",
    ),
];

/// One piece of a format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Year,
    ShortYear,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Literal(char),
}

/// The value of the date expression `expr` (the text between `$[` and `]`).
pub(super) fn evaluate(expr: &str, logical: DateTime<Utc>, tz: Tz) -> Result<String, ParamError> {
    eval(expr, logical, tz).map_err(|reason| ParamError::BadDateExpr {
        expr: expr.to_string(),
        reason,
    })
}

fn eval(expr: &str, logical: DateTime<Utc>, tz: Tz) -> Result<String, String> {
    if expr.is_empty() {
        return Err("empty expression".to_string());
    }
    let local = local_time(logical, tz)?;
    let Some((function, args)) = expr.split_once('(') else {
        return with_offset(expr, logical, tz, local);
    };
    let args = args
        .strip_suffix(')')
        .ok_or_else(|| format!("`{function}(` must end with `)`"))?;
    let args: Vec<&str> = args.split(',').map(str::trim).collect();
    match (function, args.as_slice()) {
        ("add_months", [format, months]) => render(format, shift_months(local, integer(months)?)?),
        ("this_day", [format]) => render(format, local),
        ("last_day", [format]) => render(format, shift_days(local, -1)?),
        ("month_first_day", [format, months]) => {
            render(format, shift_months(month_start(local)?, integer(months)?)?)
        }
        ("month_last_day", [format, months]) => {
            let next = integer(months)?.checked_add(1).ok_or_else(out_of_range)?;
            let first_of_next = shift_months(month_start(local)?, next)?;
            render(format, shift_days(first_of_next, -1)?)
        }
        ("week_first_day", [format, weeks]) => render(format, week_day(local, integer(weeks)?, 0)?),
        ("week_last_day", [format, weeks]) => render(format, week_day(local, integer(weeks)?, 6)?),
        ("year_week", [format]) => year_week(format, local, 1),
        ("year_week", [format, start]) => year_week(format, local, integer(start)?),
        _ => match FUNCTIONS.iter().find(|(name, _)| *name == function) {
            Some((_, usage)) => Err(format!("wrong arguments: write {usage}")),
            None => Err(format!(
                "unknown function `{function}`: known are {}",
                FUNCTIONS.map(|(name, _)| name).join(", ")
            )),
        },
    }
}

/// `FORMAT` or `FORMAT±OFFSET`.
fn with_offset(
    expr: &str,
    logical: DateTime<Utc>,
    tz: Tz,
    local: NaiveDateTime,
) -> Result<String, String> {
    let split = expr.char_indices().find(|&(at, c)| {
        matches!(c, '+' | '-') && expr[at + 1..].starts_with(|d: char| d.is_ascii_digit())
    });
    let Some((at, _)) = split else {
        return render(expr, local);
    };
    let (format, offset) = expr.split_at(at);
    let fields = parse_format(format)?;
    let (days, divisor) = ratio(offset)?;
    let time = if days % divisor == 0 {
        shift_days(local, days / divisor)?
    } else {
        let seconds = days.checked_mul(SECONDS_PER_DAY).ok_or_else(out_of_range)?;
        if seconds % divisor != 0 {
            return Err(format!("`{offset}` days is not a whole number of seconds"));
        }
        let instant = TimeDelta::try_seconds(seconds / divisor)
            .and_then(|delta| logical.checked_add_signed(delta))
            .ok_or_else(out_of_range)?;
        local_time(instant, tz)?
    };
    Ok(format_fields(&fields, time))
}

/// `[+-]N` followed by any `*M` and `/D`, as (numerator, denominator).
fn ratio(text: &str) -> Result<(i64, i64), String> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(body) => (true, body),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mut numerator, mut denominator) = (1_i64, 1_i64);
    let mut divide = false;
    let mut rest = body;
    loop {
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if end == 0 {
            return Err(format!("expected a number in `{text}`"));
        }
        let n: i64 = rest[..end].parse().map_err(|_| out_of_range())?;
        if divide {
            if n == 0 {
                return Err(format!("division by zero in `{text}`"));
            }
            denominator = denominator.checked_mul(n).ok_or_else(out_of_range)?;
        } else {
            numerator = numerator.checked_mul(n).ok_or_else(out_of_range)?;
        }
        let mut after = rest[end..].chars();
        match after.next() {
            None => break,
            Some(op @ ('*' | '/')) => {
                divide = op == '/';
                rest = after.as_str();
            }
            Some(c) => {
                return Err(format!(
                    "unexpected `{c}` in `{text}`: write a number such as 1, 7*2 or 1/24"
                ));
            }
        }
    }
    Ok((if negative { -numerator } else { numerator }, denominator))
}

/// A function's integer argument: `N`, `-N`, `12*N`.
fn integer(text: &str) -> Result<i64, String> {
    let (numerator, denominator) = ratio(text)?;
    if numerator % denominator != 0 {
        return Err(format!("`{text}` is not a whole number"));
    }
    Ok(numerator / denominator)
}

fn parse_format(format: &str) -> Result<Vec<Field>, String> {
    let mut fields = Vec::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if matches!(c, '-' | '/' | ':' | ' ' | '_' | '.') {
            fields.push(Field::Literal(c));
            continue;
        }
        let mut run = 1;
        while chars.next_if_eq(&c).is_some() {
            run += 1;
        }
        fields.push(match (c, run) {
            ('y', 4) => Field::Year,
            ('y', 2) => Field::ShortYear,
            ('M', 2) => Field::Month,
            ('d', 2) => Field::Day,
            ('H', 2) => Field::Hour,
            ('m', 2) => Field::Minute,
            ('s', 2) => Field::Second,
            _ => {
                return Err(format!(
                    "unexpected `{}`: a format is made of yyyy, yy, MM, dd, HH, mm, ss and the \
                     separators - / : _ . and space, optionally followed by an offset such as \
                     -1, +7*2 or -1/24",
                    c.to_string().repeat(run)
                ));
            }
        });
    }
    if fields
        .iter()
        .all(|field| matches!(field, Field::Literal(_)))
    {
        return Err("the format has no date or time field".to_string());
    }
    Ok(fields)
}

fn format_fields(fields: &[Field], time: NaiveDateTime) -> String {
    use chrono::Timelike;
    fields
        .iter()
        .map(|field| match *field {
            Field::Year => format!("{:04}", time.year()),
            Field::ShortYear => format!("{:02}", time.year().rem_euclid(100)),
            Field::Month => format!("{:02}", time.month()),
            Field::Day => format!("{:02}", time.day()),
            Field::Hour => format!("{:02}", time.hour()),
            Field::Minute => format!("{:02}", time.minute()),
            Field::Second => format!("{:02}", time.second()),
            Field::Literal(c) => c.to_string(),
        })
        .collect()
}

fn render(format: &str, time: NaiveDateTime) -> Result<String, String> {
    Ok(format_fields(&parse_format(format)?, time))
}

/// Week `first_weekday` of `time`'s week, with its week-numbering year.
fn year_week(format: &str, time: NaiveDateTime, first_weekday: i64) -> Result<String, String> {
    parse_format(format)?;
    let first = u32::try_from(first_weekday)
        .ok()
        .filter(|day| (1..=7).contains(day))
        .ok_or_else(|| {
            format!("the first day of the week is 1 (Monday) to 7 (Sunday), not {first_weekday}")
        })?;
    let back = (time.weekday().number_from_monday() + 7 - first) % 7;
    let week_start = shift_days(time, -i64::from(back))?;
    // Week 1 is the week holding 4 January, so a week belongs to the year of
    // its fourth day.
    let fourth = shift_days(week_start, 3)?;
    let week = fourth.ordinal0() / 7 + 1;
    let separator = if format.contains('-') { "-" } else { "" };
    Ok(format!("{:04}{separator}{week:02}", fourth.year()))
}

/// The `offset`-th day (0 = Monday) of the week `weeks` weeks from `time`'s.
fn week_day(time: NaiveDateTime, weeks: i64, offset: i64) -> Result<NaiveDateTime, String> {
    let days = weeks
        .checked_mul(7)
        .and_then(|days| days.checked_add(offset))
        .and_then(|days| days.checked_sub(i64::from(time.weekday().num_days_from_monday())))
        .ok_or_else(out_of_range)?;
    shift_days(time, days)
}

fn month_start(time: NaiveDateTime) -> Result<NaiveDateTime, String> {
    time.with_day(1).ok_or_else(out_of_range)
}

/// `time` moved by whole days, keeping the wall-clock time.
fn shift_days(time: NaiveDateTime, days: i64) -> Result<NaiveDateTime, String> {
    TimeDelta::try_days(days)
        .and_then(|delta| time.checked_add_signed(delta))
        .ok_or_else(out_of_range)
}

/// `time` moved by whole months; the 31st becomes the month's last day.
fn shift_months(time: NaiveDateTime, months: i64) -> Result<NaiveDateTime, String> {
    u32::try_from(months.unsigned_abs())
        .ok()
        .map(Months::new)
        .and_then(|magnitude| {
            if months >= 0 {
                time.checked_add_months(magnitude)
            } else {
                time.checked_sub_months(magnitude)
            }
        })
        .ok_or_else(out_of_range)
}

/// `instant`'s wall-clock time in `tz`. chrono's `naive_local` panics where
/// the instant is representable but its local time is not (the last hours of
/// its range east of Greenwich), and an offset such as `+2280154157/24` gets
/// there.
fn local_time(instant: DateTime<Utc>, tz: Tz) -> Result<NaiveDateTime, String> {
    instant
        .naive_utc()
        .checked_add_offset(tz.offset_from_utc_datetime(&instant.naive_utc()).fix())
        .ok_or_else(out_of_range)
}

fn out_of_range() -> String {
    "the result is out of the supported date range".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `expr` evaluated at `utc` in `tz`.
    fn at(utc: &str, tz: Tz, expr: &str) -> Result<String, ParamError> {
        evaluate(expr, utc.parse().unwrap(), tz)
    }

    /// The module's fixture: 2024-04-01 02:30:00 (a Monday) in Shanghai.
    fn shanghai(expr: &str) -> String {
        at("2024-03-31T18:30:00Z", chrono_tz::Asia::Shanghai, expr).unwrap()
    }

    /// 2024-03-31 18:30:00 (a Sunday) in UTC: month-end edges.
    fn month_end(expr: &str) -> String {
        at("2024-03-31T18:30:00Z", chrono_tz::UTC, expr).unwrap()
    }

    /// 2022-08-26 10:00:00 (a Friday) in UTC: DolphinScheduler's doc examples.
    fn dolphin(expr: &str) -> String {
        at("2022-08-26T10:00:00Z", chrono_tz::UTC, expr).unwrap()
    }

    fn reason(expr: &str) -> String {
        match at("2024-03-31T18:30:00Z", chrono_tz::Asia::Shanghai, expr) {
            Err(ParamError::BadDateExpr {
                expr: named,
                reason,
            }) => {
                assert_eq!(named, expr);
                reason
            }
            other => panic!("{expr}: expected BadDateExpr, got {other:?}"),
        }
    }

    #[test]
    fn formats() {
        assert_eq!(shanghai("yyyyMMdd"), "20240401");
        assert_eq!(shanghai("yyyy-MM-dd"), "2024-04-01");
        assert_eq!(shanghai("yyyyMMddHHmmss"), "20240401023000");
        assert_eq!(shanghai("HHmmss"), "023000");
        assert_eq!(shanghai("yy/MM/dd HH:mm:ss"), "24/04/01 02:30:00");
        assert_eq!(shanghai("yyyy_MM.dd"), "2024_04.01");
    }

    #[test]
    fn day_offsets() {
        assert_eq!(shanghai("yyyy-MM-dd-1"), "2024-03-31");
        assert_eq!(shanghai("yyyyMMdd-1"), "20240331");
        assert_eq!(shanghai("yyyyMMdd+7"), "20240408");
        assert_eq!(shanghai("yyyyMMdd+7*1"), "20240408");
        assert_eq!(shanghai("yyyyMMdd-7*2"), "20240318");
        assert_eq!(shanghai("yyyyMMdd+0"), "20240401");
        assert_eq!(shanghai("yyyyMMddHHmmss-1"), "20240331023000");
        assert_eq!(shanghai("yyyyMMdd-48/24"), "20240330");
    }

    #[test]
    fn hour_and_minute_offsets() {
        assert_eq!(shanghai("yyyyMMddHHmmss-1/24"), "20240401013000");
        assert_eq!(shanghai("yyyyMMddHHmmss-3/24"), "20240331233000");
        assert_eq!(shanghai("HHmmss-1/24/60"), "022900");
        assert_eq!(shanghai("HHmmss+90/24/60"), "040000");
        assert_eq!(shanghai("HHmmss-1/24/60/60"), "022959");
    }

    #[test]
    fn sub_day_offsets_move_the_instant_across_dst() {
        // 2024-03-10 03:30 EDT, just after New York skipped 02:00-03:00.
        let ny = |expr| at("2024-03-10T07:30:00Z", chrono_tz::America::New_York, expr).unwrap();
        assert_eq!(ny("yyyyMMddHHmmss"), "20240310033000");
        assert_eq!(ny("yyyyMMddHHmmss-1/24"), "20240310013000");
        // Whole days keep the wall-clock time.
        assert_eq!(ny("yyyyMMddHHmmss-1"), "20240309033000");
    }

    #[test]
    fn add_months() {
        assert_eq!(shanghai("add_months(yyyyMMdd,-1)"), "20240301");
        assert_eq!(shanghai("add_months(yyyyMMdd,12*1)"), "20250401");
        assert_eq!(
            shanghai("add_months(yyyy-MM-dd HH:mm, -12*2)"),
            "2022-04-01 02:30"
        );
        // The 31st has no February counterpart: the month's last day.
        assert_eq!(month_end("add_months(yyyy-MM-dd,-1)"), "2024-02-29");
        assert_eq!(month_end("add_months(yyyyMMdd,-13)"), "20230228");
        assert_eq!(month_end("add_months(yyyyMMdd,1)"), "20240430");
    }

    #[test]
    fn this_day_and_last_day() {
        assert_eq!(shanghai("this_day(yyyy-MM-dd)"), "2024-04-01");
        assert_eq!(shanghai("last_day(yyyy-MM-dd)"), "2024-03-31");
        assert_eq!(shanghai("last_day(yyyyMMddHHmmss)"), "20240331023000");
        assert_eq!(dolphin("this_day(yyyy-MM-dd)"), "2022-08-26");
        assert_eq!(dolphin("last_day(yyyy-MM-dd)"), "2022-08-25");
    }

    #[test]
    fn month_first_and_last_day() {
        assert_eq!(shanghai("month_first_day(yyyyMMdd,-1)"), "20240301");
        assert_eq!(shanghai("month_first_day(yyyy-MM-dd,0)"), "2024-04-01");
        assert_eq!(shanghai("month_last_day(yyyyMMdd,-1)"), "20240331");
        assert_eq!(shanghai("month_last_day(yyyy-MM-dd,0)"), "2024-04-30");
        assert_eq!(shanghai("month_last_day(yyyyMMdd,-2)"), "20240229");
        assert_eq!(month_end("month_first_day(yyyyMMdd,-1)"), "20240201");
        assert_eq!(month_end("month_last_day(yyyyMMdd,-1)"), "20240229");
        assert_eq!(month_end("month_last_day(yyyyMMdd,0)"), "20240331");
        assert_eq!(dolphin("month_first_day(yyyy-MM-dd,-1)"), "2022-07-01");
        assert_eq!(
            at(
                "2022-08-28T10:00:00Z",
                chrono_tz::UTC,
                "month_last_day(yyyy-MM-dd,-1)"
            )
            .unwrap(),
            "2022-07-31"
        );
    }

    #[test]
    fn week_first_and_last_day() {
        // The fixture is a Monday; `month_end` is a Sunday.
        assert_eq!(shanghai("week_first_day(yyyy-MM-dd,0)"), "2024-04-01");
        assert_eq!(shanghai("week_last_day(yyyy-MM-dd,0)"), "2024-04-07");
        assert_eq!(shanghai("week_first_day(yyyy-MM-dd,-1)"), "2024-03-25");
        assert_eq!(shanghai("week_last_day(yyyy-MM-dd,-1)"), "2024-03-31");
        assert_eq!(month_end("week_first_day(yyyy-MM-dd,0)"), "2024-03-25");
        assert_eq!(month_end("week_last_day(yyyy-MM-dd,0)"), "2024-03-31");
        assert_eq!(month_end("week_first_day(yyyyMMdd,1)"), "20240401");
        assert_eq!(dolphin("week_first_day(yyyy-MM-dd,-1)"), "2022-08-15");
        assert_eq!(dolphin("week_last_day(yyyy-MM-dd,-1)"), "2022-08-21");
    }

    #[test]
    fn year_week() {
        assert_eq!(shanghai("year_week(yyyy-MM-dd)"), "2024-14");
        assert_eq!(shanghai("year_week(yyyyMMdd)"), "202414");
        assert_eq!(month_end("year_week(yyyy-MM-dd)"), "2024-13");
        assert_eq!(dolphin("year_week(yyyy-MM-dd)"), "2022-34");
        assert_eq!(dolphin("year_week(yyyy-MM-dd,5)"), "2022-35");
        assert_eq!(dolphin("year_week(yyyy-MM-dd,1)"), "2022-34");
        // ISO week-numbering years at the edges.
        let utc = |time, expr| at(time, chrono_tz::UTC, expr).unwrap();
        assert_eq!(
            utc("2021-01-01T00:00:00Z", "year_week(yyyy-MM-dd)"),
            "2020-53"
        );
        assert_eq!(
            utc("2024-12-30T00:00:00Z", "year_week(yyyy-MM-dd)"),
            "2025-01"
        );
        assert_eq!(utc("2024-01-07T00:00:00Z", "year_week(yyyyMMdd)"), "202401");
        // Sunday-first weeks: Sunday 2024-01-07 starts week 2.
        assert_eq!(
            utc("2024-01-07T00:00:00Z", "year_week(yyyyMMdd,7)"),
            "202402"
        );
    }

    #[test]
    fn errors_name_the_expression() {
        assert!(reason("").contains("empty"));
        assert!(reason("foo(yyyyMMdd)").contains("unknown function `foo`"));
        assert!(reason("add_months(yyyyMMdd)").contains("add_months(format,months)"));
        assert!(reason("this_day(yyyyMMdd,1)").contains("this_day(format)"));
        assert!(reason("week_first_day(yyyy-MM-dd)").contains("week_first_day(format,weeks)"));
        assert!(reason("add_months(yyyyMMdd,-1").contains("must end with `)`"));
        assert!(reason("add_months(yyyyMMdd,x)").contains("expected a number"));
        assert!(reason("add_months(yyyyMMdd,1/2)").contains("not a whole number"));
        assert!(reason("add_months(yyyyMMdd,99999999999)").contains("out of the supported"));
        assert!(reason("yyyMMdd").contains("`yyy`"));
        assert!(reason("YYYYMMDD").contains("`YYYY`"));
        assert!(reason("yyyyMMddTHH").contains("`T`"));
        assert!(reason("yyyyMMdd+").contains("`+`"));
        assert!(reason("yyyyMMdd-1x").contains("unexpected `x`"));
        assert!(reason("yyyyMMdd-1/0").contains("division by zero"));
        assert!(reason("yyyyMMdd-1/7").contains("whole number of seconds"));
        assert!(reason("yyyyMMdd+99999999999999").contains("out of the supported"));
        assert!(reason("--").contains("no date or time field"));
        assert!(reason("year_week(yyyy-MM-dd,8)").contains("1 (Monday) to 7 (Sunday)"));
        assert!(reason("year_week(yyyy-MM-xx)").contains("`xx`"));
        let message = evaluate("bogus(x)", Utc::now(), chrono_tz::UTC)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("bad date expression $[bogus(x)]: unknown function"),
            "{message}"
        );
    }

    #[test]
    fn an_offset_past_the_last_local_time_is_an_error() {
        // Found by tests/param_properties.rs: 2_280_154_157 hours after the
        // fixture is within chrono's UTC range, but 8 hours later in Shanghai
        // is not; chrono's `naive_local` panicked there.
        for hours in 2_280_154_150_i64..2_280_154_170 {
            let expr = format!("yyyyMMddHH+{hours}/24");
            match at("2024-03-31T18:30:00Z", chrono_tz::Asia::Shanghai, &expr) {
                Ok(_) => {}
                Err(err) => assert!(err.to_string().contains("out of the supported date range")),
            }
        }
        assert!(
            at(
                "2024-03-31T18:30:00Z",
                chrono_tz::Asia::Shanghai,
                "yyyyMMddHH+2280154157/24"
            )
            .is_err()
        );
    }
}
