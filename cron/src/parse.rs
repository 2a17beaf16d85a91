//! Turns the text of an expression into the bitsets of a [`CronExpr`].

use super::{
    CronError, CronExpr, CronField, Dialect, DomSpec, DowSpec, FieldProblem, MAX_YEAR, MIN_YEAR,
    YearSet,
};

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const MONTHS_FULL: [&str; 12] = [
    "JANUARY",
    "FEBRUARY",
    "MARCH",
    "APRIL",
    "MAY",
    "JUNE",
    "JULY",
    "AUGUST",
    "SEPTEMBER",
    "OCTOBER",
    "NOVEMBER",
    "DECEMBER",
];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
const DAYS_FULL: [&str; 7] = [
    "SUNDAY",
    "MONDAY",
    "TUESDAY",
    "WEDNESDAY",
    "THURSDAY",
    "FRIDAY",
    "SATURDAY",
];

/// Names a field accepts: `short[i]` means the value `first + i`.
struct Names {
    short: &'static [&'static str],
    full: &'static [&'static str],
    first: u32,
}

/// The numeric space of one field.
struct Space {
    field: CronField,
    /// The smallest value that may be written.
    min: u32,
    /// The largest value that may be written.
    max: u32,
    /// The largest value `*` stands for (below `max` only for Spring's day 7 = day 0).
    top: u32,
    names: Option<Names>,
}

impl Space {
    /// How many distinct values the field has; ranges wrap and steps are bounded by it.
    fn size(&self) -> u32 {
        self.top - self.min + 1
    }

    /// The bit index of a value, folding wrapped values back into the field.
    fn index(&self, value: u32) -> u32 {
        let value = if value > self.top {
            value - self.size()
        } else {
            value
        };
        value - self.min
    }
}

const fn plain(field: CronField, min: u32, max: u32) -> Space {
    Space {
        field,
        min,
        max,
        top: max,
        names: None,
    }
}

const SECOND: Space = plain(CronField::Second, 0, 59);
const MINUTE: Space = plain(CronField::Minute, 0, 59);
const HOUR: Space = plain(CronField::Hour, 0, 23);
const DAY_OF_MONTH: Space = plain(CronField::DayOfMonth, 1, 31);
const YEAR: Space = plain(CronField::Year, MIN_YEAR as u32, MAX_YEAR as u32);
const MONTH: Space = Space {
    names: Some(Names {
        short: &MONTHS,
        full: &MONTHS_FULL,
        first: 1,
    }),
    ..plain(CronField::Month, 1, 12)
};
const DAY_OF_WEEK_QUARTZ: Space = Space {
    names: Some(Names {
        short: &DAYS,
        full: &DAYS_FULL,
        first: 1,
    }),
    ..plain(CronField::DayOfWeek, 1, 7)
};
const DAY_OF_WEEK_SPRING: Space = Space {
    top: 6,
    names: Some(Names {
        short: &DAYS,
        full: &DAYS_FULL,
        first: 0,
    }),
    ..plain(CronField::DayOfWeek, 0, 7)
};

/// A set of field values, bit `value - min` set for each.
type Bits = [u64; 3];

fn set(bits: &mut Bits, index: u32) {
    bits[(index / 64) as usize] |= 1 << (index % 64);
}

pub(super) fn parse(expr: &str) -> Result<CronExpr, CronError> {
    let source = expr.trim();
    if source.is_empty() {
        return Err(CronError::Empty {
            expr: source.to_owned(),
        });
    }
    let upper = source.to_ascii_uppercase();
    if upper.starts_with('@') {
        let expansion = match upper.as_str() {
            "@YEARLY" | "@ANNUALLY" => ["0", "0", "0", "1", "1", "*"],
            "@MONTHLY" => ["0", "0", "0", "1", "*", "*"],
            "@WEEKLY" => ["0", "0", "0", "*", "*", "0"],
            "@DAILY" | "@MIDNIGHT" => ["0", "0", "0", "*", "*", "*"],
            "@HOURLY" => ["0", "0", "*", "*", "*", "*"],
            _ => {
                return Err(CronError::UnknownMacro {
                    expr: source.to_owned(),
                });
            }
        };
        return build(source, Dialect::Macro, expansion, None);
    }
    let fields: Vec<&str> = upper.split_whitespace().collect();
    let dialect = if upper.contains('?') {
        Dialect::Quartz
    } else if fields.len() == 5 {
        Dialect::Unix
    } else {
        Dialect::Spring
    };
    match fields[..] {
        [min, hour, dom, month, dow] => {
            build(source, dialect, ["0", min, hour, dom, month, dow], None)
        }
        [sec, min, hour, dom, month, dow] => {
            build(source, dialect, [sec, min, hour, dom, month, dow], None)
        }
        [sec, min, hour, dom, month, dow, year] => build(
            source,
            dialect,
            [sec, min, hour, dom, month, dow],
            Some(year),
        ),
        _ => Err(CronError::FieldCount {
            expr: source.to_owned(),
            found: fields.len(),
        }),
    }
}

fn build(
    source: &str,
    dialect: Dialect,
    [sec, min, hour, dom, month, dow]: [&str; 6],
    year: Option<&str>,
) -> Result<CronExpr, CronError> {
    let fail = |field: CronField| {
        move |problem: FieldProblem| CronError::Field {
            expr: source.to_owned(),
            field,
            problem,
        }
    };
    let seconds = parse_list(sec, &SECOND).map_err(fail(CronField::Second))?[0];
    let minutes = parse_list(min, &MINUTE).map_err(fail(CronField::Minute))?[0];
    let hours = parse_list(hour, &HOUR).map_err(fail(CronField::Hour))?[0];
    let dom_spec = parse_dom(dom).map_err(fail(CronField::DayOfMonth))?;
    let months = parse_list(month, &MONTH).map_err(fail(CronField::Month))?[0] << 1;
    let dow_space = if dialect == Dialect::Quartz {
        &DAY_OF_WEEK_QUARTZ
    } else {
        &DAY_OF_WEEK_SPRING
    };
    let dow_spec = parse_dow(dow, dow_space).map_err(fail(CronField::DayOfWeek))?;
    let years = match year {
        None | Some("*") => None,
        Some(text) => Some(YearSet(
            parse_list(text, &YEAR).map_err(fail(CronField::Year))?,
        )),
    };
    if dialect == Dialect::Quartz {
        if dom == "?" && dow == "?" {
            return Err(CronError::BothDaysUnspecified {
                expr: source.to_owned(),
            });
        }
    } else if dom != "*" && dow != "*" {
        return Err(CronError::BothDaysRestricted {
            expr: source.to_owned(),
        });
    }
    let is_number = |text: &str| text.bytes().all(|b| b.is_ascii_digit());
    Ok(CronExpr {
        source: source.to_owned(),
        dialect,
        seconds,
        minutes,
        hours,
        dom: dom_spec,
        months,
        dow: dow_spec,
        years,
        fixed_time: is_number(sec) && is_number(min) && is_number(hour),
    })
}

/// Parses a comma-separated list of values, ranges and steps.
fn parse_list(text: &str, space: &Space) -> Result<Bits, FieldProblem> {
    let mut bits = [0; 3];
    for item in text.split(',') {
        parse_item(item, space, &mut bits)?;
    }
    Ok(bits)
}

fn parse_item(item: &str, space: &Space, bits: &mut Bits) -> Result<(), FieldProblem> {
    if item.is_empty() {
        return Err(FieldProblem::EmptyItem);
    }
    let (base, step) = match item.split_once('/') {
        None => (item, None),
        Some((base, step)) => {
            if step.is_empty() {
                return Err(FieldProblem::MissingStep(item.to_owned()));
            }
            let step = number(step).ok_or_else(|| FieldProblem::InvalidValue(step.to_owned()))?;
            if step == 0 {
                return Err(FieldProblem::ZeroStep(item.to_owned()));
            }
            if step >= space.size() {
                return Err(FieldProblem::StepTooLarge {
                    step,
                    size: space.size(),
                });
            }
            (base, Some(step))
        }
    };
    let (start, end) = if base == "*" {
        (space.min, space.top)
    } else if let Some((first, last)) = base.split_once('-') {
        if last.contains('-') {
            return Err(FieldProblem::BadRange(item.to_owned()));
        }
        if first.is_empty() || last.is_empty() {
            return Err(FieldProblem::InvalidValue(item.to_owned()));
        }
        let first = value(first, space)?;
        let last = value(last, space)?;
        if last < first {
            if space.field == CronField::Year {
                return Err(FieldProblem::DescendingYears {
                    start: first,
                    end: last,
                });
            }
            (first, last + space.size())
        } else {
            (first, last)
        }
    } else {
        let first = value(base, space)?;
        match step {
            Some(_) => (first, first.max(space.top)),
            None => (first, first),
        }
    };
    let step = step.unwrap_or(1);
    let mut current = start;
    while current <= end {
        set(bits, space.index(current));
        current += step;
    }
    Ok(())
}

fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Parses one value: a number in range or a three-letter name.
fn value(token: &str, space: &Space) -> Result<u32, FieldProblem> {
    if token.bytes().all(|b| b.is_ascii_digit()) {
        let value = number(token).ok_or_else(|| FieldProblem::InvalidValue(token.to_owned()))?;
        if value < space.min || value > space.max {
            return Err(FieldProblem::OutOfRange {
                value,
                min: space.min,
                max: space.max,
            });
        }
        return Ok(value);
    }
    if let Some(names) = &space.names {
        if let Some(i) = names.short.iter().position(|name| *name == token) {
            return Ok(names.first + i as u32);
        }
        if let Some(i) = names.full.iter().position(|name| *name == token) {
            return Err(FieldProblem::FullName {
                given: token.to_owned(),
                short: names.short[i],
            });
        }
    }
    if token.contains('?') {
        return Err(FieldProblem::MisplacedQuestionMark);
    }
    if let Some(special) = token.chars().find(|c| matches!(c, 'L' | 'W' | '#')) {
        return Err(FieldProblem::NotAllowed(special));
    }
    if space.names.is_some() && token.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(FieldProblem::UnknownName(token.to_owned()));
    }
    Err(FieldProblem::InvalidValue(token.to_owned()))
}

fn parse_dom(text: &str) -> Result<DomSpec, FieldProblem> {
    match text {
        "*" | "?" => return Ok(DomSpec::Any),
        "L" => {
            return Ok(DomSpec::Last {
                offset: 0,
                weekday: false,
            });
        }
        "LW" => {
            return Ok(DomSpec::Last {
                offset: 0,
                weekday: true,
            });
        }
        _ => {}
    }
    if let Some(rest) = text.strip_prefix("L-") {
        let (digits, weekday) = match rest.strip_suffix('W') {
            Some(digits) => (digits, true),
            None => (rest, false),
        };
        let offset = number(digits).ok_or_else(|| FieldProblem::InvalidValue(text.to_owned()))?;
        if offset > 30 {
            return Err(FieldProblem::LastOffsetOutOfRange(offset));
        }
        return Ok(DomSpec::Last { offset, weekday });
    }
    if text.contains('L') {
        return Err(FieldProblem::LastInList);
    }
    if let Some(base) = text.strip_suffix('W') {
        if base.contains([',', '-', '/', '*', 'W']) {
            return Err(FieldProblem::WeekdayAfterRangeOrList);
        }
        return Ok(DomSpec::NearestWeekday(value(base, &DAY_OF_MONTH)?));
    }
    if text.contains('W') {
        return Err(FieldProblem::WeekdayAfterRangeOrList);
    }
    let days = parse_list(text, &DAY_OF_MONTH)?[0] << 1;
    Ok(DomSpec::Days(days as u32))
}

fn parse_dow(text: &str, space: &Space) -> Result<DowSpec, FieldProblem> {
    let weekday = |token: &str| value(token, space).map(|v| space.index(v));
    match text {
        "*" | "?" => return Ok(DowSpec::Any),
        "L" => return Ok(DowSpec::Days(1 << 6)),
        _ => {}
    }
    if text.contains("L-") {
        return Err(FieldProblem::LastOffsetInDayOfWeek);
    }
    if let Some((day, nth)) = text.split_once('#') {
        if text.contains([',', '-', '/', '*']) {
            return Err(FieldProblem::NthInList);
        }
        let weekday = weekday(day)?;
        let nth = number(nth).ok_or_else(|| FieldProblem::InvalidValue(text.to_owned()))?;
        if !(1..=5).contains(&nth) {
            return Err(FieldProblem::NthOutOfRange(nth));
        }
        return Ok(DowSpec::Nth { weekday, nth });
    }
    if let Some(base) = text.strip_suffix('L') {
        if base.contains([',', '-', '/', '*', 'L']) {
            return Err(FieldProblem::LastInList);
        }
        return Ok(DowSpec::Last(weekday(base)?));
    }
    if text.contains('L') {
        return Err(FieldProblem::LastInList);
    }
    let days = parse_list(text, space)?[0];
    Ok(DowSpec::Days(days as u8))
}
