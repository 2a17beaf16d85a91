//! English descriptions of parsed expressions, built from the parsed sets rather than the
//! text, so equivalent expressions read the same.

use super::{CronExpr, DomSpec, DowSpec};

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ORDINALS: [&str; 5] = ["first", "second", "third", "fourth", "fifth"];

pub(super) fn describe(expr: &CronExpr) -> String {
    let (mut text, at_times) = time_phrase(expr);
    let months = values(expr.months, 1, 12);
    let mut month_said = months.len() == 12;
    match day_phrase(expr, &months, &mut month_said) {
        Some(day) => {
            text.push_str(", ");
            text.push_str(&day);
        }
        None if at_times => text.push_str(", every day"),
        None => {}
    }
    if !month_said {
        text.push_str(", only in ");
        text.push_str(&circular_list(
            &months,
            &(1..=12).collect::<Vec<_>>(),
            |m| MONTH_NAMES[(m - 1) as usize].to_owned(),
        ));
    }
    if let Some(years) = &expr.years {
        let years: Vec<u32> = years.years().collect();
        text.push_str(", ");
        match progression(&years) {
            Some(step) => text.push_str(&format!(
                "every {step} years from {} to {}",
                years[0],
                years[years.len() - 1]
            )),
            None => {
                text.push_str("only in ");
                text.push_str(&list(&years, |y| y.to_string(), |a, b| format!("{a}-{b}")));
            }
        }
    }
    text
}

/// The time-of-day part, and whether it names clock times (so "every day" reads well after
/// it).
fn time_phrase(expr: &CronExpr) -> (String, bool) {
    let seconds = values(expr.seconds, 0, 59);
    let minutes = values(expr.minutes, 0, 59);
    let hours = values(expr.hours, 0, 23);
    let (all_minutes, all_hours) = (minutes.len() == 60, hours.len() == 24);
    if let [second] = seconds[..]
        && minutes.len() * hours.len() <= 6
        && !all_minutes
        && !all_hours
        && periodic(&hours, 24).is_none()
    {
        let times: Vec<String> = hours
            .iter()
            .flat_map(|&h| minutes.iter().map(move |&m| clock(h, m, second)))
            .collect();
        return (format!("At {}", join(&times)), true);
    }
    let mut pieces: Vec<String> = Vec::new();
    if seconds.len() == 60 {
        pieces.push("every second".to_owned());
    } else if let Some(step) = periodic(&seconds, 60) {
        pieces.push(format!("every {step} seconds"));
    } else if seconds != [0] {
        pieces.push(format!("at {}", counted("second", &seconds)));
    }
    let every_so_far = pieces.first().is_some_and(|p| p.starts_with("every"));
    if all_minutes {
        if !every_so_far {
            pieces.push("every minute".to_owned());
        }
    } else if let Some(step) = periodic(&minutes, 60) {
        pieces.push(format!("every {step} minutes"));
    } else if !(minutes == [0] && pieces.is_empty()) {
        pieces.push(format!("at {}", counted("minute", &minutes)));
    }
    let every_so_far = pieces.iter().any(|p| p.starts_with("every"));
    if all_hours {
        if !every_so_far {
            pieces.push("every hour".to_owned());
        }
    } else if let Some(step) = periodic(&hours, 24) {
        pieces.push(format!("every {step} hours"));
    } else if let [(first, last)] = runs(&hours)[..] {
        if pieces.is_empty() {
            pieces.push(format!(
                "every hour from {first:02}:00 through {last:02}:00"
            ));
        } else {
            pieces.push(format!("between {first:02}:00 and {last:02}:59"));
        }
    } else {
        pieces.push(format!("during {}", counted("hour", &hours)));
    }
    (capitalize(&pieces.join(", ")), false)
}

/// The day part, or `None` for every day. Sets `month_said` when it names the month.
fn day_phrase(expr: &CronExpr, months: &[u32], month_said: &mut bool) -> Option<String> {
    let day_name = |w: u32| DAY_NAMES[w as usize];
    let before_last = |offset: u32| match offset {
        1 => "1 day before the last day of the month".to_owned(),
        n => format!("{n} days before the last day of the month"),
    };
    match (expr.dom, expr.dow) {
        (DomSpec::Any, DowSpec::Any) => None,
        (_, DowSpec::Days(days)) => {
            let days = values(u64::from(days), 0, 6);
            if days.len() == 7 {
                return None;
            }
            let text = circular_list(&days, &[1, 2, 3, 4, 5, 6, 0], |w| day_name(w).to_owned());
            Some(match circular_runs(&days, &[1, 2, 3, 4, 5, 6, 0])[..] {
                [(_, _, length)] if length >= 3 => text,
                _ => format!("on {text}"),
            })
        }
        (_, DowSpec::Last(w)) => Some(format!("on the last {} of the month", day_name(w))),
        (_, DowSpec::Nth { weekday, nth }) => Some(format!(
            "on the {} {} of the month",
            ORDINALS[(nth - 1) as usize],
            day_name(weekday)
        )),
        (DomSpec::Days(days), DowSpec::Any) => {
            let days = values(u64::from(days), 1, 31);
            match (&days[..], months) {
                (_, _) if days.len() == 31 => None,
                ([day], [month]) => {
                    *month_said = true;
                    Some(format!("on {} {day}", MONTH_NAMES[(month - 1) as usize]))
                }
                _ => Some(format!("on {} of the month", counted("day", &days))),
            }
        }
        (
            DomSpec::Last {
                offset: 0,
                weekday: false,
            },
            DowSpec::Any,
        ) => Some("on the last day of the month".to_owned()),
        (
            DomSpec::Last {
                offset: 0,
                weekday: true,
            },
            DowSpec::Any,
        ) => Some("on the last weekday of the month".to_owned()),
        (
            DomSpec::Last {
                offset,
                weekday: false,
            },
            DowSpec::Any,
        ) => Some(before_last(offset)),
        (
            DomSpec::Last {
                offset,
                weekday: true,
            },
            DowSpec::Any,
        ) => Some(format!("on the weekday nearest to {}", before_last(offset))),
        (DomSpec::NearestWeekday(day), DowSpec::Any) => {
            Some(format!("on the weekday nearest to day {day} of the month"))
        }
    }
}

/// The set bits of `mask` between `low` and `high`, in order.
fn values(mask: u64, low: u32, high: u32) -> Vec<u32> {
    (low..=high).filter(|v| mask >> v & 1 == 1).collect()
}

/// The step when `values` is every `step`-th value of a field of `size` values starting at
/// 0, evenly (`*/15` in minutes, not `*/7`).
fn periodic(values: &[u32], size: u32) -> Option<u32> {
    let step = progression(values)?;
    (values[0] == 0 && size.is_multiple_of(step) && values.len() as u32 == size / step)
        .then_some(step)
}

/// The common difference when `values` has at least three values, evenly spaced by two or
/// more.
fn progression(values: &[u32]) -> Option<u32> {
    let step = values.get(1)? - values.first()?;
    (values.len() >= 3 && step >= 2 && values.windows(2).all(|w| w[1] - w[0] == step))
        .then_some(step)
}

/// Runs of consecutive values, as (first, last).
fn runs(values: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &v in values {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == v => *last = v,
            _ => out.push((v, v)),
        }
    }
    out
}

/// "a", "a and b", "a, b and c".
fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Values as a list, runs of three or more shortened with `run`.
fn list(values: &[u32], one: impl Fn(u32) -> String, run: impl Fn(u32, u32) -> String) -> String {
    let mut items = Vec::new();
    for (first, last) in runs(values) {
        if last - first >= 2 {
            items.push(run(first, last));
        } else {
            items.extend((first..=last).map(&one));
        }
    }
    join(&items)
}

/// "second 5", "seconds 5, 10 and 20", "hours 1 through 3, 22 and 23".
fn counted(unit: &str, values: &[u32]) -> String {
    let plural = if values.len() == 1 { "" } else { "s" };
    let text = list(values, |v| v.to_string(), |a, b| format!("{a} through {b}"));
    format!("{unit}{plural} {text}")
}

/// Runs of a cyclic set (weekdays, months) in the given cyclic order, as (first, last,
/// length), starting after a value not in the set.
fn circular_runs(values: &[u32], order: &[u32]) -> Vec<(u32, u32, usize)> {
    let n = order.len();
    let start = (0..n)
        .find(|&i| values.contains(&order[i]) && !values.contains(&order[(i + n - 1) % n]))
        .unwrap_or(0);
    let mut out: Vec<(u32, u32, usize)> = Vec::new();
    let mut previous_in = false;
    for k in 0..n {
        let v = order[(start + k) % n];
        let inside = values.contains(&v);
        match out.last_mut() {
            Some((_, last, length)) if inside && previous_in => {
                *last = v;
                *length += 1;
            }
            _ if inside => out.push((v, v, 1)),
            _ => {}
        }
        previous_in = inside;
    }
    out
}

/// A cyclic set as a list, runs of three or more written "X through Y".
fn circular_list(values: &[u32], order: &[u32], name: impl Fn(u32) -> String) -> String {
    let mut items = Vec::new();
    for (first, last, length) in circular_runs(values, order) {
        if length >= 3 {
            items.push(format!("{} through {}", name(first), name(last)));
        } else {
            let position = order.iter().position(|&v| v == first).unwrap_or(0);
            items.extend((0..length).map(|k| name(order[(position + k) % order.len()])));
        }
    }
    join(&items)
}

fn clock(hour: u32, minute: u32, second: u32) -> String {
    if second == 0 {
        format!("{hour:02}:{minute:02}")
    } else {
        format!("{hour:02}:{minute:02}:{second:02}")
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
