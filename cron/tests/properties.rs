//! Property tests for the cron crate: parsing never panics on any text, and for every
//! expression that parses, the next fire time is after the start, nothing is skipped on the
//! way to it, and it is the time an independent model of the expression says (exactly in
//! UTC; under the DST rule in zones that change their offset).
//!
//! The fixed vectors in `cron_vectors.jsonl` say what the right answers are for hand-picked
//! cases; these properties reach the corners nobody picked.

use chrono::{
    DateTime, Datelike, Days, NaiveDate, NaiveDateTime, Offset, TimeDelta, TimeZone, Timelike, Utc,
};
use chrono_tz::Tz;
use datajump_cron::{CronExpr, Dialect, parse_time_zone};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// Few enough cases to keep the whole file within a few seconds of a debug build; a failure
/// prints its minimal case, and nothing is written into the repository.
fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Zones with and without daylight saving, on both sides of UTC.
const ZONES: [&str; 6] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Shanghai",
    "America/Santiago",
];

/// One piece of a field in the cron alphabet.
fn atom() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..100).prop_map(|n| n.to_string()),
        Just("99999999999".to_owned()),
        prop::sample::select(vec![
            "*", "?", "/", "-", ",", "L", "W", "#", "LW", "L-", "JAN", "dec", "MON", "SUN",
            "MONDAY", "FOO", "0", "7",
        ])
        .prop_map(str::to_owned),
    ]
}

/// An expression made of the cron alphabet: mostly the right number of fields, with the
/// characters that mean something in a field, so parsing gets past its first checks.
fn alphabet_expression() -> impl Strategy<Value = String> {
    let field = prop::collection::vec(atom(), 1..5).prop_map(|atoms| atoms.concat());
    prop_oneof![
        8 => prop::collection::vec(field, 5..=7).prop_map(|fields| fields.join(" ")),
        1 => prop::collection::vec(atom(), 0..10).prop_map(|atoms| atoms.join(" ")),
        1 => prop::sample::select(vec![
            "@daily", "@HOURLY", "@weekly", "@monthly", "@yearly", "@annually", "@midnight", "@",
            "@every",
        ])
        .prop_map(str::to_owned),
    ]
}

/// An instant from 1970 to 2100, whole seconds.
fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    (0i64..4_102_444_800).prop_map(|secs| DateTime::from_timestamp(secs, 0).expect("in range"))
}

fn zone() -> impl Strategy<Value = Tz> {
    prop::sample::select(ZONES.to_vec()).prop_map(|name| parse_time_zone(name).expect("known"))
}

/// The values one field of a model allows.
#[derive(Debug, Clone)]
struct Values {
    text: String,
    /// `allowed[v]` for each value `v` of the field.
    allowed: Vec<bool>,
}

/// A field written as a list of `*`, `n`, `a-b` (wrapping when `a > b`) and steps, with the
/// set of values it means, worked out from the rules in docs/CRON.md rather than the crate.
fn values(min: u32, max: u32) -> impl Strategy<Value = Values> {
    let size = max - min + 1;
    let item = (0u32..4, min..=max, min..=max, 1..size).prop_map(move |(shape, a, b, step)| {
        let mut allowed = vec![false; (max + 1) as usize];
        let (text, start, end, step) = match shape {
            0 => ("*".to_owned(), min, max, 1),
            1 => (a.to_string(), a, a, 1),
            2 if b >= a => (format!("{a}-{b}"), a, b, 1),
            2 => (format!("{a}-{b}"), a, b + size, 1),
            _ => (format!("{a}/{step}"), a, max, step),
        };
        let mut v = start;
        while v <= end {
            allowed[((v - min) % size + min) as usize] = true;
            v += step;
        }
        Values { text, allowed }
    });
    prop::collection::vec(item, 1..4).prop_map(|items| Values {
        text: items
            .iter()
            .map(|i| i.text.as_str())
            .collect::<Vec<_>>()
            .join(","),
        allowed: items
            .iter()
            .fold(vec![false; items[0].allowed.len()], |acc, i| {
                acc.iter().zip(&i.allowed).map(|(x, y)| *x || *y).collect()
            }),
    })
}

/// Which days of the month a model allows.
#[derive(Debug, Clone)]
enum DomModel {
    Any,
    Days(Values),
    Last(u32),
    LastWeekday,
    NearestWeekday(u32),
}

/// Which days of the week a model allows, 0 = Sunday.
#[derive(Debug, Clone)]
enum DowModel {
    Any,
    Days(Vec<bool>),
    Last(u32),
    Nth(u32, u32),
}

/// A cron expression and what it means, built side by side.
#[derive(Debug, Clone)]
struct Model {
    text: String,
    seconds: Vec<bool>,
    minutes: Vec<bool>,
    hours: Vec<bool>,
    dom: DomModel,
    months: Vec<bool>,
    dow: DowModel,
    years: Option<(i32, i32)>,
}

const DAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn dom_model() -> impl Strategy<Value = (String, DomModel)> {
    prop_oneof![
        values(1, 31).prop_map(|v| (v.text.clone(), DomModel::Days(v))),
        Just(("L".to_owned(), DomModel::Last(0))),
        (1u32..=30).prop_map(|n| (format!("L-{n}"), DomModel::Last(n))),
        Just(("LW".to_owned(), DomModel::LastWeekday)),
        (1u32..=31).prop_map(|n| (format!("{n}W"), DomModel::NearestWeekday(n))),
    ]
}

/// A day-of-week field in Quartz (`quartz`: 1 = SUN … 7 = SAT) or Unix (0 = SUN) numbering.
fn dow_model(quartz: bool) -> impl Strategy<Value = (String, DowModel)> {
    let first = u32::from(quartz);
    let name_or_number = move |day: u32, name: bool| {
        if name {
            DAY_NAMES[day as usize].to_owned()
        } else {
            (day + first).to_string()
        }
    };
    prop_oneof![
        (values(0, 6), any::<bool>()).prop_map(move |(v, names)| {
            // Written with the dialect's numbers, or with names where single days are.
            let text = if names && !v.text.contains(['-', '/', '*']) {
                v.text
                    .split(',')
                    .map(|d| name_or_number(d.parse().expect("a number"), true))
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                shift_numbers(&v.text, first)
            };
            (text, DowModel::Days(v.allowed))
        }),
        (0u32..7, any::<bool>()).prop_map(move |(d, name)| (
            format!("{}L", name_or_number(d, name)),
            DowModel::Last(d)
        )),
        (0u32..7, 1u32..=5, any::<bool>()).prop_map(move |(d, k, name)| (
            format!("{}#{k}", name_or_number(d, name)),
            DowModel::Nth(d, k)
        )),
    ]
}

/// `text` with every number in it raised by `by` (a day-of-week list from 0-based to 1-based).
fn shift_numbers(text: &str, by: u32) -> String {
    let mut out = String::new();
    let mut number = String::new();
    let flush = |number: &mut String, out: &mut String, by: u32, keep: bool| {
        if !number.is_empty() {
            let n: u32 = number.parse().expect("digits");
            out.push_str(&(if keep { n } else { n + by }).to_string());
            number.clear();
        }
    };
    let mut after_slash = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
        } else {
            // A step is a count, not a day.
            flush(&mut number, &mut out, by, after_slash);
            after_slash = c == '/';
            out.push(c);
        }
    }
    flush(&mut number, &mut out, by, after_slash);
    out
}

fn model() -> impl Strategy<Value = Model> {
    let quartz = (
        values(0, 59),
        values(0, 59),
        values(0, 23),
        dom_model(),
        values(1, 12),
        dow_model(true),
        any::<bool>(),
        prop::option::of((2000i32..2060, 0i32..20)),
    )
        .prop_map(|(s, m, h, dom, mo, dow, dom_side, years)| {
            // Quartz: exactly one of the day fields is `?`.
            let (dom, dow) = if dom_side {
                (dom, ("?".to_owned(), DowModel::Any))
            } else {
                (("?".to_owned(), DomModel::Any), dow)
            };
            let year_text = years.map_or(String::new(), |(from, len)| {
                format!(" {from}-{}", from + len)
            });
            Model {
                text: format!(
                    "{} {} {} {} {} {}{year_text}",
                    s.text, m.text, h.text, dom.0, mo.text, dow.0
                ),
                seconds: s.allowed,
                minutes: m.allowed,
                hours: h.allowed,
                dom: dom.1,
                months: mo.allowed,
                dow: dow.1,
                years: years.map(|(from, len)| (from, from + len)),
            }
        });
    let unix = (
        values(0, 59),
        values(0, 23),
        values(1, 31),
        values(1, 12),
        values(0, 6),
        0u32..3,
    )
        .prop_map(|(m, h, dom, mo, dow, days)| {
            // Unix: at most one of the day fields is restricted.
            let (dom, dow) = match days {
                0 => (
                    ("*".to_owned(), DomModel::Any),
                    ("*".to_owned(), DowModel::Any),
                ),
                1 => (
                    (dom.text.clone(), DomModel::Days(dom)),
                    ("*".to_owned(), DowModel::Any),
                ),
                _ => (
                    ("*".to_owned(), DomModel::Any),
                    (dow.text, DowModel::Days(dow.allowed)),
                ),
            };
            let mut seconds = vec![false; 60];
            seconds[0] = true;
            Model {
                text: format!("{} {} {} {} {}", m.text, h.text, dom.0, mo.text, dow.0),
                seconds,
                minutes: m.allowed,
                hours: h.allowed,
                dom: dom.1,
                months: mo.allowed,
                dow: dow.1,
                years: None,
            }
        });
    prop_oneof![quartz, unix]
}

fn days_in_month(year: i32, month: u32) -> u32 {
    let first = NaiveDate::from_ymd_opt(year, month, 1).expect("valid month");
    let next = first
        .checked_add_months(chrono::Months::new(1))
        .expect("in range");
    (next - first).num_days() as u32
}

/// The Quartz `W` rule: the weekday nearest `day`, without leaving the month.
fn nearest_weekday(date: NaiveDate) -> u32 {
    let length = days_in_month(date.year(), date.month());
    let day = date.day();
    match date.weekday().num_days_from_sunday() {
        6 if day == 1 => 3,
        6 => day - 1,
        0 if day == length => day - 2,
        0 => day + 1,
        _ => day,
    }
}

impl Model {
    fn date_matches(&self, date: NaiveDate) -> bool {
        if let Some((from, to)) = self.years
            && !(from..=to).contains(&date.year())
        {
            return false;
        }
        if !self.months[date.month() as usize] {
            return false;
        }
        let length = days_in_month(date.year(), date.month());
        let day = date.day();
        let with_day = |d: u32| NaiveDate::from_ymd_opt(date.year(), date.month(), d);
        let dom = match &self.dom {
            DomModel::Any => true,
            DomModel::Days(v) => v.allowed[day as usize],
            DomModel::Last(n) => length.checked_sub(*n) == Some(day),
            DomModel::LastWeekday => with_day(length).map(nearest_weekday) == Some(day),
            DomModel::NearestWeekday(n) => with_day(*n).map(nearest_weekday) == Some(day),
        };
        let weekday = date.weekday().num_days_from_sunday();
        let dow = match &self.dow {
            DowModel::Any => true,
            DowModel::Days(days) => days[weekday as usize],
            DowModel::Last(d) => weekday == *d && day + 7 > length,
            DowModel::Nth(d, k) => weekday == *d && (day - 1) / 7 + 1 == *k,
        };
        dom && dow
    }

    fn matches(&self, wall: NaiveDateTime) -> bool {
        self.date_matches(wall.date())
            && self.hours[wall.hour() as usize]
            && self.minutes[wall.minute() as usize]
            && self.seconds[wall.second() as usize]
    }

    /// Seconds, minutes and hours each one plain value: the DST rule for fixed times.
    fn is_fixed_time(&self) -> bool {
        let one = |v: &[bool]| v.iter().filter(|b| **b).count() == 1;
        one(&self.seconds) && one(&self.minutes) && one(&self.hours)
    }

    /// The first matching UTC time after `after`, searching `days` days: a brute force
    /// over the calendar, independent of the crate's bitset search.
    fn next_in_utc(&self, after: NaiveDateTime, days: u64) -> Option<NaiveDateTime> {
        let times: Vec<(u32, u32, u32)> = (0..24)
            .filter(|h| self.hours[*h as usize])
            .flat_map(|h| {
                (0..60)
                    .filter(|m| self.minutes[*m as usize])
                    .map(move |m| (h, m))
            })
            .flat_map(|(h, m)| {
                (0..60)
                    .filter(|s| self.seconds[*s as usize])
                    .map(move |s| (h, m, s))
            })
            .collect();
        (0..days)
            .filter_map(|d| after.date().checked_add_days(Days::new(d)))
            .filter(|date| self.date_matches(*date))
            .find_map(|date| {
                times
                    .iter()
                    .filter_map(|&(h, m, s)| date.and_hms_opt(h, m, s))
                    .find(|t| *t > after)
            })
    }
}

/// Whether the zone's offset changes at `at` (the instant a DST gap ends).
fn offset_changes_at(at: &DateTime<Tz>) -> bool {
    let before = *at - TimeDelta::seconds(1);
    before.offset().fix() != at.offset().fix()
}

/// Checks the properties every parsed expression keeps from `after`, in `after`'s zone:
/// the fire is strictly later, searching again from any instant in between finds the same
/// fire (so nothing was skipped), and the following fires come in order.
fn check_search(expr: &CronExpr, after: &DateTime<Tz>, between: f64) -> Result<(), TestCaseError> {
    let Some(fire) = expr.next_after(after) else {
        return Ok(());
    };
    prop_assert!(
        fire > *after,
        "{} after {after}: fire {fire} is not later",
        expr.source()
    );
    prop_assert_eq!(
        fire.timestamp_subsec_nanos(),
        0,
        "fire {} is not a whole second",
        fire
    );
    let last_second = fire - TimeDelta::seconds(1);
    prop_assert_eq!(
        expr.next_after(&last_second),
        Some(fire),
        "{} from one second before its fire",
        expr.source()
    );
    let gap = (fire.timestamp() - after.timestamp()) as f64;
    let inside = *after + TimeDelta::seconds((gap * between) as i64);
    if inside < fire {
        prop_assert_eq!(
            expr.next_after(&inside),
            Some(fire),
            "{} from {} (between {} and its fire)",
            expr.source(),
            inside,
            after
        );
    }
    let following: Vec<_> = expr.iter_after(&fire).take(3).collect();
    for pair in std::iter::once(&fire)
        .chain(&following)
        .collect::<Vec<_>>()
        .windows(2)
    {
        prop_assert!(
            pair[0] < pair[1],
            "{}: fires out of order {:?}",
            expr.source(),
            pair
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn parse_never_panics_on_any_text(text in any::<String>()) {
        let _ = CronExpr::parse(&text);
    }
}

proptest! {
    // Cheap cases, and most of the alphabet's combinations are errors: many of them.
    #![proptest_config(config(4096))]

    #[test]
    fn parse_search_and_describe_never_panic_on_the_cron_alphabet(
        text in alphabet_expression(),
        after in instant(),
        tz in zone(),
        between in 0.0f64..1.0,
    ) {
        if let Ok(expr) = CronExpr::parse(&text) {
            prop_assert!(!expr.describe().is_empty());
            check_search(&expr, &after.with_timezone(&tz), between)?;
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn generated_expressions_parse_in_their_dialect(model in model()) {
        let expr = CronExpr::parse(&model.text);
        prop_assert!(expr.is_ok(), "{:?}: {:?}", model.text, expr);
        let expr = expr.expect("checked");
        let expected = if model.text.contains('?') {
            Dialect::Quartz
        } else {
            Dialect::Unix
        };
        prop_assert_eq!(expr.dialect(), expected);
        prop_assert!(!expr.describe().is_empty());
    }

    #[test]
    fn next_fire_in_utc_is_the_first_time_the_model_matches(
        model in model(),
        after in instant(),
    ) {
        let expr = CronExpr::parse(&model.text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Eight years covers every pattern here that fires at all, bar a rare weekday on
        // an early day of February 29 or a year range; past it only the crate answers.
        const SEARCH_DAYS: u64 = 8 * 366;
        let expected = model.next_in_utc(after.naive_utc(), SEARCH_DAYS);
        let got = expr.next_after(&after).map(|t| t.naive_utc());
        match expected {
            Some(expected) => prop_assert_eq!(got, Some(expected), "{:?} after {}", model.text, after),
            None => prop_assert!(
                got.is_none_or(|t| t > after.naive_utc() + TimeDelta::days(SEARCH_DAYS as i64 - 1)),
                "{:?} after {}: the crate fires at {:?}, the model finds nothing that soon",
                model.text, after, got
            ),
        }
    }

    #[test]
    fn next_fire_in_any_zone_matches_the_wall_clock_or_ends_a_gap(
        model in model(),
        after in instant(),
        tz in zone(),
        between in 0.0f64..1.0,
    ) {
        let expr = CronExpr::parse(&model.text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let after = after.with_timezone(&tz);
        check_search(&expr, &after, between)?;
        if let Some(fire) = expr.next_after(&after) {
            let wall = fire.naive_local();
            // A fixed-time job whose wall time does not exist that day fires when the
            // gap ends; every other fire is at a wall time the expression names.
            let gap_end = model.is_fixed_time() && offset_changes_at(&fire);
            prop_assert!(
                model.matches(wall) || gap_end,
                "{:?} after {} fired at {} (wall {}), which it does not name",
                model.text, after, fire, wall
            );
        }
    }
}

/// The instants in `year` at which `tz` changes its UTC offset, to the second.
fn offset_changes(tz: Tz, year: i32) -> Vec<i64> {
    let offset = |secs: i64| {
        let utc = DateTime::from_timestamp(secs, 0)
            .expect("in range")
            .naive_utc();
        tz.offset_from_utc_datetime(&utc).fix().local_minus_utc()
    };
    let start = NaiveDate::from_ymd_opt(year, 1, 1)
        .expect("valid")
        .and_hms_opt(0, 0, 0)
        .expect("valid")
        .and_utc()
        .timestamp();
    let mut changes = Vec::new();
    for day in 0..366 {
        let (mut low, mut high) = (start + day * 86_400, start + (day + 1) * 86_400);
        if offset(low) == offset(high) {
            continue;
        }
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if offset(mid) == offset(low) {
                low = mid;
            } else {
                high = mid;
            }
        }
        changes.push(high);
    }
    changes
}

/// A fixed-time job, and a start near one of a zone's offset changes: mostly a wall time
/// inside the change's gap or overlap, where the DST rule decides, searched from the
/// seconds just before and after the change.
fn near_a_change() -> impl Strategy<Value = (String, DateTime<Tz>)> {
    (
        prop::sample::select(vec![
            "Europe/Berlin",
            "America/New_York",
            "Australia/Lord_Howe",
            "America/Santiago",
        ]),
        1975i32..2090,
        any::<prop::sample::Index>(),
        prop_oneof![3 => -3i64..3, 1 => -200_000i64..200_000],
        any::<bool>(),
        0u32..86_400,
        0u32..3_600,
    )
        .prop_filter_map(
            "a zone without changes that year",
            |(zone, year, pick, from, in_change, time, into)| {
                let tz = parse_time_zone(zone).expect("known");
                let changes = offset_changes(tz, year);
                if changes.is_empty() {
                    return None;
                }
                let change = changes[pick.index(changes.len())];
                let wall = |secs: i64| {
                    DateTime::from_timestamp(secs, 0)
                        .expect("in range")
                        .with_timezone(&tz)
                        .naive_local()
                };
                // The wall time just before the change: the gap or the overlap starts there.
                let first = wall(change - 1) + TimeDelta::seconds(1);
                let time = if in_change {
                    first + TimeDelta::seconds(i64::from(into % 1_800))
                } else {
                    first
                        .date()
                        .and_hms_opt(time / 3600, time / 60 % 60, time % 60)
                        .expect("valid")
                };
                let expr = format!("{} {} {} * * ?", time.second(), time.minute(), time.hour());
                let after = DateTime::from_timestamp(change + from, 0)
                    .expect("in range")
                    .with_timezone(&tz);
                Some((expr, after))
            },
        )
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fixed_time_jobs_keep_the_dst_rule_around_offset_changes(
        (expr, after) in near_a_change(),
        between in 0.0f64..1.0,
    ) {
        let parsed = CronExpr::parse(&expr).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_search(&parsed, &after, between)?;
        let fire = parsed.next_after(&after);
        let fire = fire.ok_or_else(|| TestCaseError::fail(format!("{expr} never fires")))?;
        // Once a day: never more than a day and an hour (an offset change) apart.
        prop_assert!(fire - after <= TimeDelta::hours(25) + TimeDelta::minutes(30), "{} after {}: {}", expr, after, fire);
        let wall = fire.naive_local();
        let named = wall.format("%-S %-M %-H * * ?").to_string() == expr;
        prop_assert!(named || offset_changes_at(&fire), "{} after {} fired at {}", expr, after, fire);
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn an_interval_job_fires_every_interval_of_real_time_across_offset_changes(
        zone in prop::sample::select(vec!["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago"]),
        year in 1975i32..2090,
        pick in any::<prop::sample::Index>(),
        minutes in prop::sample::select(vec![1u32, 5, 10, 15, 30]),
    ) {
        // Every offset in these zones is a whole number of half hours, so every
        // `minutes`-th minute of real time is such a minute on the wall too: an interval
        // job skips no real instant in a gap and repeats none in an overlap.
        let tz = parse_time_zone(zone).expect("known");
        let changes = offset_changes(tz, year);
        prop_assume!(!changes.is_empty());
        let change = changes[pick.index(changes.len())];
        let expr = CronExpr::parse(&format!("0 */{minutes} * * * ?")).expect("valid");
        let step = i64::from(minutes) * 60;
        let start = (change - 3 * 3600).div_euclid(step) * step;
        let after = DateTime::from_timestamp(start, 0).expect("in range").with_timezone(&tz);
        let fires: Vec<i64> = expr
            .iter_after(&after)
            .take_while(|fire| fire.timestamp() <= change + 3 * 3600)
            .map(|fire| fire.timestamp())
            .collect();
        let expected: Vec<i64> = (1..).map(|i| start + i * step).take_while(|t| *t <= change + 3 * 3600).collect();
        prop_assert_eq!(fires, expected, "{} every {} minutes around {}", zone, minutes, change);
    }
}

#[test]
fn the_model_agrees_with_hand_checked_dates() {
    // `shift_numbers` and the W/L rules in the model are test code too: pin them.
    assert_eq!(shift_numbers("0-2,5/2", 1), "1-3,6/2");
    let model = Model {
        text: String::new(),
        seconds: vec![true; 60],
        minutes: vec![true; 60],
        hours: vec![true; 24],
        dom: DomModel::NearestWeekday(1),
        months: vec![true; 13],
        dow: DowModel::Any,
        years: None,
    };
    // 2022-10-01 is a Saturday: `1W` is Monday the 3rd, not Friday in September.
    let date = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("valid");
    assert!(model.date_matches(date(2022, 10, 3)));
    assert!(!model.date_matches(date(2022, 10, 1)));
    let last_weekday = Model {
        dom: DomModel::LastWeekday,
        ..model
    };
    // 2024-03-31 is a Sunday: `LW` is Friday the 29th.
    assert!(last_weekday.date_matches(date(2024, 3, 29)));
    assert!(!last_weekday.date_matches(date(2024, 3, 31)));
}

#[test]
fn searches_near_the_end_of_time_do_not_panic() {
    let expr = CronExpr::parse("* * * * * ?").expect("valid");
    for tz in ZONES.map(|name| parse_time_zone(name).expect("known")) {
        for utc in [DateTime::<Utc>::MAX_UTC, DateTime::<Utc>::MIN_UTC] {
            let local = tz.from_utc_datetime(&utc.naive_utc());
            let _ = expr.next_after(&local);
        }
    }
}
