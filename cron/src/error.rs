//! Errors reported while parsing a cron expression or a time zone name.

use std::fmt;

/// Why a cron expression or a time zone name was rejected.
///
/// Every message names the expression as given and, where one field is at fault, that
/// field and the problem, e.g. `invalid cron expression '0 60 * * * ?': minute field:
/// value 60 is out of range 0-59`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CronError {
    /// The expression is empty or only whitespace.
    #[error("invalid cron expression '{expr}': the expression is empty")]
    Empty {
        /// The expression as given.
        expr: String,
    },
    /// The expression does not have 5, 6 or 7 fields.
    #[error(
        "invalid cron expression '{expr}': expected 5, 6 or 7 fields separated by spaces, found {found}"
    )]
    FieldCount {
        /// The expression as given.
        expr: String,
        /// How many fields were found.
        found: usize,
    },
    /// The expression starts with `@` but is not one of the supported macros.
    #[error(
        "invalid cron expression '{expr}': unknown macro (expected one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"
    )]
    UnknownMacro {
        /// The expression as given.
        expr: String,
    },
    /// One field is malformed or out of range.
    #[error("invalid cron expression '{expr}': {field} field: {problem}")]
    Field {
        /// The expression as given.
        expr: String,
        /// The field at fault.
        field: CronField,
        /// What is wrong with it.
        problem: FieldProblem,
    },
    /// Without `?`, both day fields are restricted, which is ambiguous.
    #[error(
        "invalid cron expression '{expr}': day-of-month and day-of-week are both restricted, which is ambiguous; put '*' (or '?') in one of them, or use two schedules"
    )]
    BothDaysRestricted {
        /// The expression as given.
        expr: String,
    },
    /// A Quartz expression has `?` in both day fields.
    #[error(
        "invalid cron expression '{expr}': '?' must appear in exactly one of day-of-month and day-of-week, not both"
    )]
    BothDaysUnspecified {
        /// The expression as given.
        expr: String,
    },
    /// The name is not a known IANA time zone.
    #[error("unknown time zone '{name}': expected an IANA name such as 'Asia/Shanghai' or 'UTC'")]
    UnknownTimeZone {
        /// The name as given.
        name: String,
    },
}

/// A field of a cron expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CronField {
    /// Seconds, 0-59.
    Second,
    /// Minutes, 0-59.
    Minute,
    /// Hours, 0-23.
    Hour,
    /// Day of the month, 1-31.
    DayOfMonth,
    /// Month, 1-12 or JAN-DEC.
    Month,
    /// Day of the week, SUN-SAT (numbers depend on the dialect).
    DayOfWeek,
    /// Year, 1970-2099.
    Year,
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day-of-month",
            Self::Month => "month",
            Self::DayOfWeek => "day-of-week",
            Self::Year => "year",
        })
    }
}

/// What is wrong with one field of a cron expression.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum FieldProblem {
    /// An empty list item, as left by a trailing or doubled comma.
    #[error("empty value (a trailing or doubled comma?)")]
    EmptyItem,
    /// A number is outside the field's range.
    #[error("value {value} is out of range {min}-{max}")]
    OutOfRange {
        /// The value given.
        value: u32,
        /// The smallest value allowed.
        min: u32,
        /// The largest value allowed.
        max: u32,
    },
    /// A token that is neither a number nor a name this field accepts.
    #[error("'{0}' is not a valid value")]
    InvalidValue(String),
    /// A name this field does not know.
    #[error("unknown name '{0}'")]
    UnknownName(String),
    /// A full month or day name where only three-letter names are accepted.
    #[error("full name '{given}' is not accepted, use '{short}'")]
    FullName {
        /// The name given.
        given: String,
        /// The three-letter name to use instead.
        short: &'static str,
    },
    /// A range with more than two ends, such as `1-2-3`.
    #[error("'{0}' is not a valid range (expected start-end)")]
    BadRange(String),
    /// A `/` with nothing after it.
    #[error("'{0}' has no step after '/'")]
    MissingStep(String),
    /// A step of zero.
    #[error("step 0 in '{0}' is not allowed")]
    ZeroStep(String),
    /// A step at least as large as the field's range, so it could never repeat.
    #[error("step {step} is too large, it must be less than {size}")]
    StepTooLarge {
        /// The step given.
        step: u32,
        /// The number of values in the field.
        size: u32,
    },
    /// A year range whose end comes before its start.
    #[error("year range {start}-{end} is descending")]
    DescendingYears {
        /// The first year given.
        start: u32,
        /// The last year given.
        end: u32,
    },
    /// A special character used in a field that does not accept it.
    #[error("'{0}' is not allowed in this field")]
    NotAllowed(char),
    /// `L` combined with other values in a list or range.
    #[error("'L' must stand alone (as in 'L', 'LW', 'L-3' or '5L'), not in a list or range")]
    LastInList,
    /// The `n` of `L-n` is larger than 30.
    #[error("offset {0} in 'L-{0}' is out of range 0-30")]
    LastOffsetOutOfRange(u32),
    /// `L-n` used in the day-of-week field.
    #[error("'L-n' is only allowed in day-of-month")]
    LastOffsetInDayOfWeek,
    /// `W` after a range, a list or a step.
    #[error("'W' must follow a single day (as in '15W'), not a range, list or step")]
    WeekdayAfterRangeOrList,
    /// `#` combined with other values in a list or range.
    #[error("'#' must stand alone (as in 'MON#2'), not in a list or range")]
    NthInList,
    /// The `k` of `day#k` is not 1-5.
    #[error("occurrence {0} in '#{0}' is out of range 1-5")]
    NthOutOfRange(u32),
    /// `?` used in a list, or outside the day fields.
    #[error("'?' must stand alone, and only in day-of-month or day-of-week")]
    MisplacedQuestionMark,
}

impl CronError {
    /// A stable name of what is wrong, for a UI that says it in its own
    /// words ([`CronError::params`] are the values those words name): `cron.out_of_range`,
    /// `cron.field_count`, `timezone.unknown`, …
    pub fn code(&self) -> &'static str {
        match self {
            Self::Empty { .. } => "cron.empty",
            Self::FieldCount { .. } => "cron.field_count",
            Self::UnknownMacro { .. } => "cron.unknown_macro",
            Self::Field { problem, .. } => problem.code(),
            Self::BothDaysRestricted { .. } => "cron.both_days_restricted",
            Self::BothDaysUnspecified { .. } => "cron.both_days_unspecified",
            Self::UnknownTimeZone { .. } => "timezone.unknown",
        }
    }

    /// The values [`CronError::code`]'s words name, by name: the expression
    /// (`expr`) or zone (`name`) as given, the `field` at fault
    /// ([`CronField::key`]) and the problem's own values.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::Empty { expr }
            | Self::UnknownMacro { expr }
            | Self::BothDaysRestricted { expr }
            | Self::BothDaysUnspecified { expr } => vec![("expr", expr.clone())],
            Self::FieldCount { expr, found } => {
                vec![("expr", expr.clone()), ("found", found.to_string())]
            }
            Self::Field {
                expr,
                field,
                problem,
            } => {
                let mut params = vec![("expr", expr.clone()), ("field", field.key().to_owned())];
                params.extend(problem.params());
                params
            }
            Self::UnknownTimeZone { name } => vec![("name", name.clone())],
        }
    }
}

impl CronField {
    /// The field's stable name in a [`CronError::params`]: `second`,
    /// `minute`, `hour`, `day_of_month`, `month`, `day_of_week`, `year`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day_of_month",
            Self::Month => "month",
            Self::DayOfWeek => "day_of_week",
            Self::Year => "year",
        }
    }
}

impl FieldProblem {
    fn code(&self) -> &'static str {
        match self {
            Self::EmptyItem => "cron.empty_item",
            Self::OutOfRange { .. } => "cron.out_of_range",
            Self::InvalidValue(_) => "cron.invalid_value",
            Self::UnknownName(_) => "cron.unknown_name",
            Self::FullName { .. } => "cron.full_name",
            Self::BadRange(_) => "cron.bad_range",
            Self::MissingStep(_) => "cron.missing_step",
            Self::ZeroStep(_) => "cron.zero_step",
            Self::StepTooLarge { .. } => "cron.step_too_large",
            Self::DescendingYears { .. } => "cron.descending_years",
            Self::NotAllowed(_) => "cron.not_allowed",
            Self::LastInList => "cron.last_in_list",
            Self::LastOffsetOutOfRange(_) => "cron.last_offset_out_of_range",
            Self::LastOffsetInDayOfWeek => "cron.last_offset_in_day_of_week",
            Self::WeekdayAfterRangeOrList => "cron.weekday_after_range",
            Self::NthInList => "cron.nth_in_list",
            Self::NthOutOfRange(_) => "cron.nth_out_of_range",
            Self::MisplacedQuestionMark => "cron.misplaced_question_mark",
        }
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::OutOfRange { value, min, max } => vec![
                ("value", value.to_string()),
                ("min", min.to_string()),
                ("max", max.to_string()),
            ],
            Self::InvalidValue(value)
            | Self::UnknownName(value)
            | Self::BadRange(value)
            | Self::MissingStep(value)
            | Self::ZeroStep(value) => vec![("value", value.clone())],
            Self::FullName { given, short } => {
                vec![("value", given.clone()), ("short", (*short).to_owned())]
            }
            Self::StepTooLarge { step, size } => {
                vec![("step", step.to_string()), ("size", size.to_string())]
            }
            Self::DescendingYears { start, end } => {
                vec![("start", start.to_string()), ("end", end.to_string())]
            }
            Self::NotAllowed(c) => vec![("value", c.to_string())],
            Self::LastOffsetOutOfRange(n) | Self::NthOutOfRange(n) => {
                vec![("value", n.to_string())]
            }
            Self::EmptyItem
            | Self::LastInList
            | Self::LastOffsetInDayOfWeek
            | Self::WeekdayAfterRangeOrList
            | Self::NthInList
            | Self::MisplacedQuestionMark => Vec::new(),
        }
    }
}
