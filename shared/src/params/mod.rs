//! Parameter substitution: the text a task runs (shell command, Python script,
//! SQL, URL, headers, body) with `${name}` and `$[date expression]` replaced
//! by the run's values just before the attempt starts.
//!
//! - `${bizdate}`, `${biz_date}`, `${today}`, `${yesterday}`, `${run_id}`,
//!   `${task_name}` are built in; any other `${name}` comes from the merged
//!   DAG, task and trigger [`Params`]. A built-in always wins over a user
//!   param of the same name, so `${bizdate}` means the same in every DAG.
//! - `$[yyyyMMdd-1]`, `$[add_months(yyyyMMdd,-1)]`, … are DolphinScheduler's
//!   date expressions, read relative to the logical time in the run's zone
//!   (see the `dates` submodule and `docs/PARAMETERS.md`).
//! - `$${` and `$$[` write a literal `${` and `$[`; a plain `$HOME` is left
//!   alone, since only `${…}` and `$[…]` are placeholders.
//! - In SQL ([`Mode::Sql`]) a bare `${name}` only takes values that cannot
//!   change the statement; anything else must be quoted with
//!   `${name:literal}` or `${name:ident}`.
//! - **Values not written in the DAG file are untrusted** (trigger and
//!   backfill params, event payloads: [`ParamContext::untrusted`]). In SQL
//!   their bare form takes only numbers and dates; in a SHELL or PYTHON
//!   script ([`Mode::Script`]) they are never pasted as text: the script
//!   reads them from the environment (`$DJ_PARAM_NAME`), or quotes them with
//!   `${name:shell}` (a POSIX shell word) or `${name:python}` (a Python
//!   string literal). Values written in the DAG file are the author's code
//!   and go in as written (in SQL, bare ones must still be plain names,
//!   numbers or dates).
//!
//! The shaping decision: **strict**. An unknown name, a placeholder that does
//! not parse, or a date expression we cannot evaluate fails the attempt before
//! anything runs, because a silently unexpanded `${bizdate}` (or a shell
//! variable that happens to be empty) would process the wrong day's data and
//! report success. The text is read in a single pass: a substituted value is
//! never scanned again, so a value containing `${x}` stays literal.

mod dates;
mod placement;
mod values;

pub use placement::{Misplaced, Place, Unsure, misplaced_forms};
pub use values::{Params, params_from_json, params_to_json};

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Days, NaiveDate, Utc};
use chrono_tz::Tz;

/// Everything a substitution needs to know about one task attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamContext {
    /// The run's business date: `${bizdate}` and `${biz_date}`.
    pub biz_date: NaiveDate,
    /// The run's logical (scheduled) time: `${today}`, `${yesterday}` and
    /// every `$[…]` expression are read from it in [`Self::time_zone`].
    pub logical_time: DateTime<Utc>,
    /// The run's time zone (the schedule's zone).
    pub time_zone: Tz,
    /// The run's id: `${run_id}`.
    pub run_id: i64,
    /// The task's name: `${task_name}`.
    pub task_name: String,
    /// User params, DAG, task and trigger params already merged by the caller.
    /// A name that is also a built-in is shadowed by the built-in.
    pub params: Params,
    /// The names among [`Self::params`] whose values came from outside the
    /// DAG file (a trigger, a backfill, an event): the stricter rules apply.
    pub untrusted: BTreeSet<String>,
}

/// The SQL dialect whose quoting rules `${name:literal}` and `${name:ident}`
/// follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlDialect {
    /// PostgreSQL: `'O''Brien'`, `"my""table"`.
    Postgres,
    /// MySQL and MariaDB: `'O''Brien'` with `\` doubled, `` `my``table` ``.
    MySql,
    /// SQLite: `'O''Brien'`, `"my""table"`.
    Sqlite,
    /// Spark SQL (`spark-sql`): `'O\'Brien'`, `` `my``table` ``. Spark
    /// reads `\` as an escape and `''` as two adjacent literals, so a
    /// quote is escaped with a backslash.
    Spark,
}

/// The language of a script whose text is substituted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptLang {
    /// A SHELL task (bash): `${name:shell}` quotes a word.
    Shell,
    /// A PYTHON task: `${name:python}` quotes a string literal.
    Python,
}

/// What kind of text is being substituted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// URLs, headers, bodies, alert texts: values go in as they are.
    Text,
    /// A script: trusted values go in as they are, untrusted ones only
    /// quoted (`${name:shell}` / `${name:python}`).
    Script(ScriptLang),
    /// SQL for the given dialect: bare values must be plain (untrusted
    /// ones: numbers and dates), others quoted.
    Sql(SqlDialect),
    /// A path or glob a file sensor looks for: trusted values go in as
    /// they are; an untrusted one only as one plain path component (no
    /// `/`, not `.` or `..`, no glob character), so a trigger cannot point
    /// the sensor at another folder or widen its pattern.
    Path,
}

/// Why a text could not be substituted. Every variant names the placeholder
/// or expression at fault; none carries a parameter's value, which may be a
/// secret.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// `${name}` is neither a built-in nor a user param.
    #[error(
        "unknown parameter ${{{name}}}: it is not a built-in and not among the DAG, task or \
         trigger params (to pass ${{{name}}} through to the shell write $${{{name}}})"
    )]
    Unknown {
        /// The name inside `${…}`.
        name: String,
    },
    /// A `${` not followed by a valid name and `}` (for example bash's
    /// `${VAR:-x}` or `${#a[@]}`), or a `${` that is never closed.
    #[error(
        "malformed placeholder `{text}`: a parameter is written ${{name}} with a name of \
         letters, digits, `_` and `.` (to pass `{text}` through to the shell write `${text}`)"
    )]
    Malformed {
        /// The placeholder as written, from `${` to its `}` (or an excerpt
        /// when there is no `}`).
        text: String,
    },
    /// `${name:modifier}` with a modifier other than `literal` or `ident`.
    #[error(
        "unknown modifier `:{modifier}` in ${{{name}:{modifier}}}: SQL text accepts \
         ${{{name}:literal}} and ${{{name}:ident}} (to pass it through to the shell write \
         $${{{name}:{modifier}}})"
    )]
    UnknownModifier {
        /// The parameter's name.
        name: String,
        /// The text after the `:`.
        modifier: String,
    },
    /// In SQL, a bare `${name}` whose value is not a plain date, number or
    /// name.
    #[error(
        "parameter ${{{name}}} cannot go bare into SQL: its value is not a plain date, number \
         or name (only letters, digits and `_ . : -`); write ${{{name}:literal}} for a quoted \
         string literal or ${{{name}:ident}} for a quoted identifier"
    )]
    UnsafeSqlValue {
        /// The parameter's name.
        name: String,
    },
    /// In SQL, a bare `${name}` whose value came from a trigger or an event
    /// and is not a number or a date.
    #[error(
        "parameter ${{{name}}} comes from a trigger or an event and cannot go bare into SQL \
         unless it is a number or a date: write ${{{name}:literal}} for a quoted string \
         literal or ${{{name}:ident}} for a quoted identifier"
    )]
    UntrustedSqlValue {
        /// The parameter's name.
        name: String,
    },
    /// In a script, a bare `${name}` whose value came from a trigger or an
    /// event: pasted as text, it would be code.
    #[error(
        "parameter ${{{name}}} comes from a trigger or an event and cannot be pasted into a \
         script as text: read it from the environment (${env}) or quote it with \
         ${{{name}:{quote}}}"
    )]
    UntrustedInScript {
        /// The parameter's name.
        name: String,
        /// Where the script finds it, e.g. `$DJ_PARAM_REGION`.
        env: String,
        /// The modifier that quotes for this script's language.
        quote: &'static str,
    },
    /// A command-line argument of its own (a SPARK or FLINK task's `jar`,
    /// `py_file`, an `app_args` item, …) that a value from outside the DAG
    /// file would begin with `-`: spark-submit, spark-sql and flink would
    /// read it as an option of theirs ([`ParamContext::substitute_argument`]).
    #[error(
        "parameter ${{{name}}} comes from a trigger, an event or a task output, and its value \
         would begin a command-line argument with '-', which spark-submit, spark-sql and flink \
         read as an option: such a value is refused here (if the program takes it as an \
         option's value, let the DAG file's own text begin the argument: --day=${{{name}}})"
    )]
    UntrustedOption {
        /// The parameter's name.
        name: String,
    },
    /// A quoting modifier where it does not apply (`:literal` outside SQL,
    /// `:shell` outside a SHELL script, …).
    #[error(
        "${{{name}:{modifier}}} is not allowed here: :literal and :ident quote for SQL, :shell \
         for SHELL scripts, :python for PYTHON scripts; elsewhere write ${{{name}}}"
    )]
    ModifierNotHere {
        /// The parameter's name.
        name: String,
        /// The modifier.
        modifier: &'static str,
    },
    /// In a script, a quoting form that does not stand alone in the code:
    /// inside a string, a comment, a here-document, … where the quotes it
    /// writes would close the ones around it ([`misplaced_forms`]).
    #[error("{0}")]
    MisplacedQuote(Misplaced),
    /// In a file sensor's path, a value from a trigger or an event that is
    /// not one plain path component.
    #[error(
        "parameter ${{{name}}} comes from a trigger or an event and can only fill one part of a \
         file sensor's path: a value without '/', '..', NUL or glob characters (* ? [ ] {{ }} \\)"
    )]
    UntrustedPathValue {
        /// The parameter's name.
        name: String,
    },
    /// A value to be quoted into SQL contains a NUL character, which no
    /// dialect accepts inside a literal or identifier.
    #[error("parameter ${{{name}}} contains a NUL character, which cannot be quoted into SQL")]
    NulInSqlValue {
        /// The parameter's name.
        name: String,
    },
    /// `${secret:NAME}` outside an HTTP header value or a SPARK or FLINK
    /// `conf` value.
    #[error(
        "${{secret:{name}}} is only allowed in an HTTP task's header values and a SPARK or FLINK \
         task's 'conf' values, where the runner reads the secret when the attempt starts \
         (commands, scripts and SQL could echo it into logs)"
    )]
    SecretMisplaced {
        /// The secret's name.
        name: String,
    },
    /// `${secret:NAME}` naming a secret that does not exist.
    #[error("unknown secret '{name}' (create it with `datajump secret set {name}`)")]
    UnknownSecret {
        /// The secret's name.
        name: String,
    },
    /// A `$[…]` expression that does not parse or cannot be evaluated.
    #[error("bad date expression $[{expr}]: {reason}")]
    BadDateExpr {
        /// The text between `$[` and `]` (an excerpt when there is no `]`).
        expr: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The quoting a `${name:…}` modifier asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    Literal,
    Ident,
    Shell,
    Python,
}

impl Quote {
    fn modifier(self) -> &'static str {
        match self {
            Quote::Literal => "literal",
            Quote::Ident => "ident",
            Quote::Shell => "shell",
            Quote::Python => "python",
        }
    }

    /// Whether this quoting is for text of `mode`.
    fn fits(self, mode: Mode) -> bool {
        match self {
            Quote::Literal | Quote::Ident => matches!(mode, Mode::Sql(_)),
            Quote::Shell => mode == Mode::Script(ScriptLang::Shell),
            Quote::Python => mode == Mode::Script(ScriptLang::Python),
        }
    }
}

impl ParamContext {
    /// `text` with every `${…}` and `$[…]` replaced and every `$${` / `$$[`
    /// unescaped, in one pass: substituted values are not scanned again.
    ///
    /// Fails on the first placeholder that cannot be substituted (see
    /// [`ParamError`]); nothing is partially substituted.
    pub fn substitute(&self, text: &str, mode: Mode) -> Result<String, ParamError> {
        self.substitute_with(text, mode, None)
    }

    /// One argument of a command line built as a list (SPARK, FLINK):
    /// [`Self::substitute`] in text mode, except that a value from outside
    /// the DAG file ([`Self::untrusted`]) may not make the argument begin
    /// with `-`. The argument is never split, so it cannot become two; but
    /// in the place of a jar, a Python file or an argument the submitter
    /// parses, `--conf=…`, `-Dkey=value` or `--python other.py` would be an
    /// option of spark-submit or flink (argument injection,
    /// docs/SECURITY.md "Parameters from outside the DAG file"). An
    /// argument the DAG file's own text begins with `-` is the author's.
    pub fn substitute_argument(&self, text: &str) -> Result<String, ParamError> {
        let out = self.substitute(text, Mode::Text)?;
        if !out.starts_with('-') || text.starts_with('-') {
            return Ok(out);
        }
        // The `-` came from a value: refused if any of the argument's
        // values is untrusted, whichever of them wrote it.
        let untrusted = pieces(text)
            .filter_map(Result::ok)
            .filter_map(|piece| match piece {
                Piece::Param(body) => Some(body.split_once(':').map_or(body, |(name, _)| name)),
                _ => None,
            })
            .find(|name| !BUILTINS.contains(name) && self.untrusted.contains(*name));
        match untrusted {
            Some(name) => Err(ParamError::UntrustedOption {
                name: name.to_owned(),
            }),
            None => Ok(out),
        }
    }

    /// An HTTP header value or a SPARK or FLINK `conf` value:
    /// [`Self::substitute`] in text mode, where `${secret:NAME}` also takes
    /// the value of secret `NAME` from `secrets` (see [`secret_names`] and
    /// [`crate::secrets`]).
    pub fn substitute_with_secrets(
        &self,
        text: &str,
        secrets: &BTreeMap<String, String>,
    ) -> Result<String, ParamError> {
        self.substitute_with(text, Mode::Text, Some(secrets))
    }

    fn substitute_with(
        &self,
        text: &str,
        mode: Mode,
        secrets: Option<&BTreeMap<String, String>>,
    ) -> Result<String, ParamError> {
        let builtins = self.builtins();
        let lang = match mode {
            Mode::Script(lang) => Some(lang),
            Mode::Text | Mode::Sql(_) | Mode::Path => None,
        };
        let mut out = String::with_capacity(text.len());
        // In a script: each quoting form's name, line in `text`, and where
        // it went in `out`, to check that it stands in code once the values
        // of the rest are known.
        let mut forms: Vec<(&str, usize, std::ops::Range<usize>)> = Vec::new();
        let mut line = 1;
        for piece in pieces(text) {
            match piece? {
                Piece::Literal(literal) => {
                    out.push_str(literal);
                    line += literal.matches('\n').count();
                }
                Piece::Param(body) => {
                    let form = lang.and_then(|lang| placement::quoting_form(body, lang));
                    let start = out.len();
                    out.push_str(&self.placeholder(body, mode, &builtins, secrets)?);
                    if let Some(name) = form {
                        forms.push((name, line, start..out.len()));
                    }
                }
                Piece::DateExpr(expr) => {
                    out.push_str(&dates::evaluate(expr, self.logical_time, self.time_zone)?);
                }
            }
        }
        if let Some(lang) = lang
            && !forms.is_empty()
        {
            // The script as it will run, the values of the other
            // placeholders included: a value the DAG file gives (a quote in
            // it, say) is code, and counts (docs/SECURITY.md).
            let mut segments = Vec::with_capacity(2 * forms.len());
            let mut at = 0;
            for (name, line, range) in &forms {
                segments.push(placement::Segment::Code(&out[at..range.start]));
                segments.push(placement::Segment::Form { name, line: *line });
                at = range.end;
            }
            if let Some(misplaced) = placement::judge(&segments, lang, true).into_iter().next() {
                return Err(ParamError::MisplacedQuote(misplaced));
            }
        }
        Ok(out)
    }

    /// The built-in parameters and their values for this run, in a fixed
    /// order: `bizdate`, `biz_date`, `today`, `yesterday`, `run_id`,
    /// `task_name`. They shadow user params of the same name.
    pub fn builtins(&self) -> Vec<(&'static str, String)> {
        let today = self
            .logical_time
            .with_timezone(&self.time_zone)
            .date_naive();
        // chrono's first representable day has no yesterday; keep it rather
        // than fail, no schedule gets there.
        let yesterday = today.checked_sub_days(Days::new(1)).unwrap_or(today);
        let biz_date = iso_date(self.biz_date);
        vec![
            ("bizdate", biz_date.clone()),
            ("biz_date", biz_date),
            ("today", iso_date(today)),
            ("yesterday", iso_date(yesterday)),
            ("run_id", self.run_id.to_string()),
            ("task_name", self.task_name.clone()),
        ]
    }

    /// The replacement for one `${body}` (`body` is the text between the
    /// braces).
    fn placeholder(
        &self,
        body: &str,
        mode: Mode,
        builtins: &[(&'static str, String)],
        secrets: Option<&BTreeMap<String, String>>,
    ) -> Result<String, ParamError> {
        let malformed = || ParamError::Malformed {
            text: format!("${{{body}}}"),
        };
        let (name, modifier) = match body.split_once(':') {
            Some((name, modifier)) => (name, Some(modifier)),
            None => (body, None),
        };
        if !is_name(name) {
            return Err(malformed());
        }
        if let Some(secret) = secret_name(name, modifier, secrets.is_some()) {
            if !is_name(secret) {
                return Err(malformed());
            }
            return match secrets {
                Some(secrets) => {
                    secrets
                        .get(secret)
                        .cloned()
                        .ok_or_else(|| ParamError::UnknownSecret {
                            name: secret.to_owned(),
                        })
                }
                None => Err(ParamError::SecretMisplaced {
                    name: secret.to_owned(),
                }),
            };
        }
        let quote = match modifier {
            None => None,
            Some("literal") => Some(Quote::Literal),
            Some("ident") => Some(Quote::Ident),
            Some("shell") => Some(Quote::Shell),
            Some("python") => Some(Quote::Python),
            Some(other) if is_name(other) => {
                return Err(ParamError::UnknownModifier {
                    name: name.to_string(),
                    modifier: other.to_string(),
                });
            }
            Some(_) => return Err(malformed()),
        };
        if let Some(quote) = quote
            && !quote.fits(mode)
        {
            return Err(ParamError::ModifierNotHere {
                name: name.to_string(),
                modifier: quote.modifier(),
            });
        }
        let (value, untrusted): (&str, bool) =
            match builtins.iter().find(|(builtin, _)| *builtin == name) {
                Some((_, value)) => (value, false),
                None => match self.params.get(name) {
                    Some(value) => (value, self.untrusted.contains(name)),
                    None => {
                        return Err(ParamError::Unknown {
                            name: name.to_string(),
                        });
                    }
                },
            };
        match (mode, quote) {
            (Mode::Text, _) => Ok(value.to_string()),
            (Mode::Path, _) if untrusted && !is_path_component(value) => {
                Err(ParamError::UntrustedPathValue {
                    name: name.to_string(),
                })
            }
            (Mode::Path, _) => Ok(value.to_string()),
            (Mode::Script(lang), None) if untrusted => Err(ParamError::UntrustedInScript {
                name: name.to_string(),
                env: format!("${}", env_name(name)),
                quote: match lang {
                    ScriptLang::Shell => "shell",
                    ScriptLang::Python => "python",
                },
            }),
            (Mode::Script(_), None) => Ok(value.to_string()),
            (Mode::Script(_), Some(Quote::Python)) => Ok(python_literal(value)),
            (Mode::Script(_), Some(_)) => Ok(shell_word(value)),
            (Mode::Sql(_), None) if untrusted && !is_number_or_date(value) => {
                Err(ParamError::UntrustedSqlValue {
                    name: name.to_string(),
                })
            }
            (Mode::Sql(_), None) if is_plain(value) => Ok(value.to_string()),
            (Mode::Sql(_), None) => Err(ParamError::UnsafeSqlValue {
                name: name.to_string(),
            }),
            (Mode::Sql(_), Some(_)) if value.contains('\0') => Err(ParamError::NulInSqlValue {
                name: name.to_string(),
            }),
            (Mode::Sql(dialect), Some(Quote::Ident)) => Ok(sql_ident(dialect, value)),
            (Mode::Sql(dialect), Some(_)) => Ok(sql_literal(dialect, value)),
        }
    }
}

/// The secret a `${name:modifier}` placeholder names, if it is one:
/// `${secret:NAME}`. In a header every such placeholder is a secret; elsewhere
/// `${secret:literal}` and `${secret:ident}` still quote a parameter that
/// happens to be called `secret`.
fn secret_name<'a>(name: &str, modifier: Option<&'a str>, in_header: bool) -> Option<&'a str> {
    match modifier {
        Some(secret) if name == "secret" => {
            (in_header || !matches!(secret, "literal" | "ident")).then_some(secret)
        }
        _ => None,
    }
}

/// The names of the built-in parameters ([`ParamContext::builtins`]).
pub const BUILTINS: [&str; 6] = [
    "bizdate",
    "biz_date",
    "today",
    "yesterday",
    "run_id",
    "task_name",
];

/// The user parameters `text` substitutes bare (`${name}`, no modifier,
/// not a built-in); what does not parse is left to [`ParamContext::substitute`]
/// to report.
pub fn bare_params(text: &str) -> BTreeSet<String> {
    pieces(text)
        .map_while(Result::ok)
        .filter_map(|piece| match piece {
            Piece::Param(name) if is_name(name) && !BUILTINS.contains(&name) => {
                Some(name.to_owned())
            }
            _ => None,
        })
        .collect()
}

/// The user parameters `text` begins with: those before its first literal
/// text or date expression, whose values could begin it with a `-` (a
/// command-line argument, [`ParamContext::substitute_argument`]).
pub fn leading_params(text: &str) -> Vec<String> {
    pieces(text)
        .map_while(Result::ok)
        .take_while(|piece| matches!(piece, Piece::Param(_) | Piece::Literal("")))
        .filter_map(|piece| match piece {
            Piece::Param(body) => {
                let name = body.split_once(':').map_or(body, |(name, _)| name);
                (is_name(name) && !BUILTINS.contains(&name) && name != "secret")
                    .then(|| name.to_owned())
            }
            _ => None,
        })
        .collect()
}

/// The secrets a header or `conf` value names with `${secret:NAME}`, for the
/// runner to read before substituting it with
/// [`ParamContext::substitute_with_secrets`].
pub fn secret_names(text: &str) -> Result<BTreeSet<String>, ParamError> {
    let mut names = BTreeSet::new();
    for piece in pieces(text) {
        if let Piece::Param(body) = piece?
            && let Some((name, modifier)) = body.split_once(':')
            && let Some(secret) = secret_name(name, Some(modifier), true)
        {
            names.insert(secret.to_owned());
        }
    }
    Ok(names)
}

/// A header value outside any task (an alert webhook's): only
/// `${secret:NAME}` is substituted, from `secrets`; any other `${…}` or
/// `$[…]` is an error, since there is no run to take its value from.
pub fn substitute_secrets(
    text: &str,
    secrets: &BTreeMap<String, String>,
) -> Result<String, ParamError> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        match piece? {
            Piece::Literal(literal) => out.push_str(literal),
            Piece::Param(body) => {
                let (name, modifier) = body.split_once(':').unwrap_or((body, ""));
                match secret_name(name, Some(modifier), true) {
                    Some(secret) => out.push_str(secrets.get(secret).ok_or_else(|| {
                        ParamError::UnknownSecret {
                            name: secret.to_owned(),
                        }
                    })?),
                    None => {
                        return Err(ParamError::Unknown {
                            name: body.to_owned(),
                        });
                    }
                }
            }
            Piece::DateExpr(expr) => {
                return Err(ParamError::BadDateExpr {
                    expr: expr.to_owned(),
                    reason: "a webhook header has no run to take a date from".to_owned(),
                });
            }
        }
    }
    Ok(out)
}

/// One piece of a text being substituted.
enum Piece<'a> {
    /// Text that stays as it is (an escaped `$${` already unescaped).
    Literal(&'a str),
    /// The text between `${` and `}`.
    Param(&'a str),
    /// The text between `$[` and `]`.
    DateExpr(&'a str),
}

/// `text` cut into [`Piece`]s; an unclosed `${` or `$[` is an error.
fn pieces(text: &str) -> impl Iterator<Item = Result<Piece<'_>, ParamError>> {
    let mut rest = text;
    let mut failed = false;
    std::iter::from_fn(move || {
        if rest.is_empty() || failed {
            return None;
        }
        let Some(pos) = rest.find('$') else {
            return Some(Ok(Piece::Literal(std::mem::take(&mut rest))));
        };
        if pos > 0 {
            let (literal, tail) = rest.split_at(pos);
            rest = tail;
            return Some(Ok(Piece::Literal(literal)));
        }
        let piece = if rest.starts_with("$${") || rest.starts_with("$$[") {
            let (escaped, after) = rest[1..].split_at(2);
            rest = after;
            Ok(Piece::Literal(escaped))
        } else if let Some(after) = rest.strip_prefix("${") {
            match line(after).find('}') {
                Some(end) => {
                    rest = &after[end + 1..];
                    Ok(Piece::Param(&after[..end]))
                }
                None => Err(ParamError::Malformed {
                    text: format!("${{{}", excerpt(after)),
                }),
            }
        } else if let Some(after) = rest.strip_prefix("$[") {
            match line(after).find(']') {
                Some(end) => {
                    rest = &after[end + 1..];
                    Ok(Piece::DateExpr(&after[..end]))
                }
                None => Err(ParamError::BadDateExpr {
                    expr: excerpt(after).to_string(),
                    reason: "no closing `]`".to_string(),
                }),
            }
        } else {
            let (dollar, after) = rest.split_at(1);
            rest = after;
            Ok(Piece::Literal(dollar))
        };
        failed = piece.is_err();
        Some(piece)
    })
}

/// What every parameter's environment variable starts with.
pub const ENV_PREFIX: &str = "DJ_PARAM_";

/// The environment variable a runner exports a parameter as:
/// `DJ_PARAM_<NAME>`, the name upper-cased and every character other than an
/// ASCII letter or digit turned into `_` (`a.b-c` → `DJ_PARAM_A_B_C`).
pub fn env_name(param: &str) -> String {
    let mut name = String::with_capacity(ENV_PREFIX.len() + param.len());
    name.push_str(ENV_PREFIX);
    name.extend(param.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// `YYYY-MM-DD`.
fn iso_date(date: NaiveDate) -> String {
    date.format("%Y-%m-%d").to_string()
}

/// A placeholder name: `[A-Za-z_][A-Za-z0-9_.]*`.
pub(crate) fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A value safe to put bare into SQL: `[A-Za-z0-9_.:-]*`.
fn is_plain(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// A value that stays one component of a path and matches only itself in a
/// glob: not empty, not `.` or `..`, and without `/`, NUL or a glob
/// character.
fn is_path_component(value: &str) -> bool {
    !value.is_empty()
        && value != "."
        && value != ".."
        && !value
            .chars()
            .any(|c| matches!(c, '/' | '\0' | '*' | '?' | '[' | ']' | '{' | '}' | '\\'))
}

/// A value that cannot change a statement it is pasted into: a number
/// (`42`, `3.14`) or a date or time (`2024-03-31`, `20240331`,
/// `2024-03-31 08:30:00`, `08:30`). It starts with a digit, so it cannot
/// continue a `-` into a comment, and holds no quote, `/`, `*` or letter.
fn is_number_or_date(value: &str) -> bool {
    let number = {
        let mut parts = value.splitn(2, '.');
        let whole = parts.next().unwrap_or_default();
        !whole.is_empty()
            && whole.bytes().all(|b| b.is_ascii_digit())
            && parts
                .next()
                .is_none_or(|frac| !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()))
    };
    let date_time = value.starts_with(|c: char| c.is_ascii_digit())
        && !value.contains("--")
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b':' | b' ' | b'T' | b'.'))
        && !value.ends_with(['-', ' ']);
    number || date_time
}

/// `value` as one POSIX shell word: single-quoted, with each `'` written
/// as `'\''`.
fn shell_word(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// `value` as a Python string literal (a JSON string is one).
fn python_literal(value: &str) -> String {
    serde_json::Value::String(value.to_owned()).to_string()
}

/// `value` as a quoted SQL string literal. Every dialect but Spark doubles
/// `'`; MySQL and Spark also double `\`, which they read as an escape
/// character in literals, and Spark escapes `'` with it.
fn sql_literal(dialect: SqlDialect, value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' if dialect == SqlDialect::Spark => out.push_str("\\'"),
            '\'' => out.push_str("''"),
            '\\' if matches!(dialect, SqlDialect::MySql | SqlDialect::Spark) => {
                out.push_str("\\\\")
            }
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `value` as a quoted SQL identifier: `"…"` with `"` doubled, or for MySQL
/// and Spark `` `…` `` with `` ` `` doubled.
fn sql_ident(dialect: SqlDialect, value: &str) -> String {
    let quote = match dialect {
        SqlDialect::Postgres | SqlDialect::Sqlite => '"',
        SqlDialect::MySql | SqlDialect::Spark => '`',
    };
    let mut out = String::with_capacity(value.len() + 2);
    out.push(quote);
    for c in value.chars() {
        out.push(c);
        if c == quote {
            out.push(c);
        }
    }
    out.push(quote);
    out
}

/// `text` up to its first line break: a placeholder never spans lines.
fn line(text: &str) -> &str {
    text.find('\n').map_or(text, |end| &text[..end])
}

/// The start of an unclosed placeholder, for an error message: up to the end
/// of the line, at most 40 characters.
fn excerpt(text: &str) -> &str {
    let line = line(text);
    match line.char_indices().nth(40) {
        Some((cut, _)) => &line[..cut],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-03-31T18:30:00Z is 2024-04-01 02:30 (a Monday) in Shanghai.
    fn ctx() -> ParamContext {
        let mut params = Params::new();
        params.insert("region".into(), "eu-west".into());
        params.insert("a.b".into(), "dotted".into());
        params.insert("owner".into(), "O'Brien".into());
        params.insert("path".into(), r"C:\tmp\it's".into());
        params.insert("table".into(), r#"my"ta`ble"#.into());
        params.insert("bizdate".into(), "1999-01-01".into());
        params.insert("nested".into(), "${bizdate} $[yyyyMMdd]".into());
        params.insert("empty".into(), String::new());
        params.insert("nul".into(), "a\0b".into());
        ParamContext {
            biz_date: NaiveDate::from_ymd_opt(2024, 3, 31).unwrap(),
            logical_time: "2024-03-31T18:30:00Z".parse().unwrap(),
            time_zone: chrono_tz::Asia::Shanghai,
            run_id: 42,
            task_name: "load_orders".into(),
            params,
            untrusted: BTreeSet::new(),
        }
    }

    fn text(input: &str) -> Result<String, ParamError> {
        ctx().substitute(input, Mode::Text)
    }

    fn sql(dialect: SqlDialect, input: &str) -> Result<String, ParamError> {
        ctx().substitute(input, Mode::Sql(dialect))
    }

    #[test]
    fn every_builtin() {
        assert_eq!(
            text("${bizdate} ${biz_date} ${today} ${yesterday} ${run_id} ${task_name}").unwrap(),
            "2024-03-31 2024-03-31 2024-04-01 2024-03-31 42 load_orders"
        );
        let names: Vec<_> = ctx().builtins().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "bizdate",
                "biz_date",
                "today",
                "yesterday",
                "run_id",
                "task_name"
            ]
        );
    }

    #[test]
    fn today_is_read_in_the_run_zone() {
        let mut c = ctx();
        c.time_zone = chrono_tz::UTC;
        assert_eq!(
            c.substitute("${today} ${yesterday}", Mode::Text).unwrap(),
            "2024-03-31 2024-03-30"
        );
    }

    #[test]
    fn builtins_win_over_user_params() {
        // `params` holds bizdate = 1999-01-01.
        assert_eq!(text("${bizdate}").unwrap(), "2024-03-31");
    }

    #[test]
    fn user_params() {
        assert_eq!(
            text("s3://b/${region}/${a.b}/x${empty}y").unwrap(),
            "s3://b/eu-west/dotted/xy"
        );
    }

    #[test]
    fn values_are_not_substituted_again() {
        assert_eq!(text("${nested}").unwrap(), "${bizdate} $[yyyyMMdd]");
    }

    #[test]
    fn escapes_and_plain_dollars() {
        assert_eq!(
            text("echo $${HOME} $$[1+2] $HOME $$ $5 cost$ $").unwrap(),
            "echo ${HOME} $[1+2] $HOME $$ $5 cost$ $"
        );
        // `$$` (the shell's pid) followed by an escape.
        assert_eq!(text("$$${x}").unwrap(), "$${x}");
        assert_eq!(text("日本 ${today} ü$").unwrap(), "日本 2024-04-01 ü$");
    }

    #[test]
    fn unknown_name_fails_with_a_hint() {
        let err = text("echo ${HOME}").unwrap_err();
        assert_eq!(
            err,
            ParamError::Unknown {
                name: "HOME".into()
            }
        );
        let message = err.to_string();
        assert!(message.contains("unknown parameter ${HOME}"), "{message}");
        assert!(
            message.contains("to pass ${HOME} through to the shell write $${HOME}"),
            "{message}"
        );
    }

    #[test]
    fn shell_syntax_is_malformed() {
        for (input, placeholder) in [
            ("echo ${VAR:-x}", "${VAR:-x}"),
            ("n=${#a[@]}", "${#a[@]}"),
            ("${}", "${}"),
            ("${1abc}", "${1abc}"),
            ("${a b}", "${a b}"),
            ("${VAR:2}", "${VAR:2}"),
        ] {
            let err = text(input).unwrap_err();
            assert_eq!(
                err,
                ParamError::Malformed {
                    text: placeholder.into()
                },
                "{input}"
            );
            let hint =
                format!("to pass `{placeholder}` through to the shell write `${placeholder}`");
            assert!(err.to_string().contains(&hint), "{err}");
        }
        assert_eq!(
            text("x ${abc\ny}").unwrap_err(),
            ParamError::Malformed {
                text: "${abc".into()
            }
        );
    }

    #[test]
    fn unknown_modifier() {
        let err = sql(SqlDialect::Postgres, "${owner:lit}").unwrap_err();
        assert_eq!(
            err,
            ParamError::UnknownModifier {
                name: "owner".into(),
                modifier: "lit".into()
            }
        );
        assert!(err.to_string().contains("${owner:literal}"), "{err}");
    }

    #[test]
    fn modifiers_only_where_they_quote() {
        for (input, mode) in [
            ("${owner:literal}", Mode::Text),
            ("${owner:ident}", Mode::Script(ScriptLang::Shell)),
            ("${owner:shell}", Mode::Sql(SqlDialect::Postgres)),
            ("${owner:python}", Mode::Script(ScriptLang::Shell)),
            ("${owner:shell}", Mode::Text),
        ] {
            let err = ctx().substitute(input, mode).unwrap_err();
            assert!(
                matches!(&err, ParamError::ModifierNotHere { name, .. } if name == "owner"),
                "{input} in {mode:?}: {err}"
            );
            assert!(err.to_string().contains("not allowed here"), "{err}");
        }
    }

    /// A context whose `owner`, `id` and `day` came from a trigger.
    fn triggered() -> ParamContext {
        let mut ctx = ctx();
        ctx.params.insert("id".into(), "id--".into());
        ctx.params.insert("day".into(), "2024-03-31".into());
        ctx.params.insert("n".into(), "42".into());
        ctx.untrusted = ["owner", "id", "day", "n"].map(String::from).into();
        ctx
    }

    #[test]
    fn untrusted_values_never_become_sql() {
        let pg = Mode::Sql(SqlDialect::Postgres);
        let ctx = triggered();
        // The attack of the security issue: `id--` comments out the rest.
        let err = ctx
            .substitute("delete from t where id = ${id} and v = 'x'", pg)
            .unwrap_err();
        assert_eq!(err, ParamError::UntrustedSqlValue { name: "id".into() });
        assert!(err.to_string().contains("${id:literal}"), "{err}");
        for attack in ["1--", "1/*", "1 or 1=1", "-1", "1;drop table t", "id"] {
            let mut ctx = triggered();
            ctx.params.insert("id".into(), attack.into());
            assert!(
                ctx.substitute("where id = ${id}", pg).is_err(),
                "{attack} went bare into SQL"
            );
        }
        assert_eq!(
            ctx.substitute(
                "where d = '${day}' and n = ${n} and o = ${owner:literal}",
                pg
            )
            .unwrap(),
            "where d = '2024-03-31' and n = 42 and o = 'O''Brien'"
        );
        // Written in the DAG file, a plain name still goes bare.
        assert_eq!(
            ctx.substitute("select * from t_${region}", pg).unwrap(),
            "select * from t_eu-west"
        );
    }

    #[test]
    fn untrusted_values_fill_one_path_component_only() {
        let mut ctx = triggered();
        for attack in [
            "../../etc",
            "/etc/passwd",
            "..",
            ".",
            "*",
            "a?c",
            "[ab]",
            "{a,b}",
            "a\\*",
            "",
            "x\0y",
        ] {
            ctx.params.insert("id".into(), attack.into());
            assert_eq!(
                ctx.substitute("/data/in/${id}/_SUCCESS", Mode::Path),
                Err(ParamError::UntrustedPathValue { name: "id".into() }),
                "{attack:?} went into the path"
            );
        }
        assert_eq!(
            ctx.substitute("/data/${day}/part-${n}.csv", Mode::Path)
                .unwrap(),
            "/data/2024-03-31/part-42.csv"
        );
        // Written in the DAG file, a value may hold a path.
        ctx.params.insert("root".into(), "/data/in/*".into());
        assert_eq!(
            ctx.substitute("${root}/_SUCCESS", Mode::Path).unwrap(),
            "/data/in/*/_SUCCESS"
        );
    }

    #[test]
    fn untrusted_values_never_begin_a_command_line_argument_with_a_dash() {
        let mut ctx = ctx();
        for (name, value) in [
            ("jar", "--conf=spark.jars=evil.jar"),
            ("empty", ""),
            ("ok", "x"),
        ] {
            ctx.params.insert(name.into(), value.into());
            ctx.untrusted.insert(name.into());
        }
        ctx.params.insert("dash".into(), "-".into());
        let refused = |text: &str| match ctx.substitute_argument(text) {
            Err(ParamError::UntrustedOption { name }) => name,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(refused("${jar}"), "jar");
        assert_eq!(
            refused("${empty}--verbose"),
            "empty",
            "an empty value leads"
        );
        assert_eq!(
            refused("${dash}${ok}"),
            "ok",
            "a trusted dash, an untrusted option"
        );
        let err = ctx.substitute_argument("${jar}").unwrap_err().to_string();
        assert!(
            err.contains("--day=${jar}") && !err.contains("evil"),
            "{err}"
        );
        for (text, out) in [
            ("--day=${jar}", "--day=--conf=spark.jars=evil.jar"),
            ("/jobs/${ok}.jar", "/jobs/x.jar"),
            ("${ok}-${jar}", "x---conf=spark.jars=evil.jar"),
            ("${dash}x", "-x"),
            ("${bizdate}", "2024-03-31"),
        ] {
            assert_eq!(ctx.substitute_argument(text).unwrap(), out, "{text}");
        }
        assert_eq!(leading_params("${jar}${ok}/x${empty}"), ["jar", "ok"]);
        assert!(leading_params("/x/${jar}").is_empty());
        assert!(leading_params("${bizdate}").is_empty());
    }

    #[test]
    fn untrusted_values_never_become_script_text() {
        let shell = Mode::Script(ScriptLang::Shell);
        let python = Mode::Script(ScriptLang::Python);
        let mut ctx = triggered();
        ctx.params
            .insert("cmd".into(), "x'; rm -rf / #\n$(id)".into());
        ctx.untrusted.insert("cmd".into());
        let err = ctx.substitute("echo ${cmd}", shell).unwrap_err();
        assert!(err.to_string().contains("$DJ_PARAM_CMD"), "{err}");
        assert!(err.to_string().contains("${cmd:shell}"), "{err}");
        assert!(
            ctx.substitute("print(${cmd})", python)
                .unwrap_err()
                .to_string()
                .contains("${cmd:python}")
        );
        assert_eq!(
            ctx.substitute("echo ${cmd:shell}", shell).unwrap(),
            "echo 'x'\\''; rm -rf / #\n$(id)'"
        );
        assert_eq!(
            ctx.substitute("print(${cmd:python})", python).unwrap(),
            r#"print("x'; rm -rf / #\n$(id)")"#
        );
        // Built-ins and the DAG file's own values are the author's code.
        assert_eq!(
            ctx.substitute("echo ${bizdate} ${region}", shell).unwrap(),
            "echo 2024-03-31 eu-west"
        );
        // Text that is not code (URLs, bodies) takes values as they are.
        assert_eq!(
            ctx.substitute("?q=${cmd}", Mode::Text).unwrap(),
            "?q=x'; rm -rf / #\n$(id)"
        );
    }

    #[test]
    fn quoting_forms_inside_strings_fail_before_anything_runs() {
        let shell = Mode::Script(ScriptLang::Shell);
        let python = Mode::Script(ScriptLang::Python);
        let mut ctx = triggered();
        let attack = "x\"; touch /tmp/PWNED; echo \"";
        ctx.params.insert("p".into(), attack.into());
        ctx.untrusted.insert("p".into());
        // The attack of issue #38: the quotes of the form close the string.
        let err = ctx
            .substitute("echo \"value=[${p:shell}]\"", shell)
            .unwrap_err();
        assert!(
            matches!(&err, ParamError::MisplacedQuote(m) if m.name == "p" && m.place == Place::DoubleQuoted),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(
            message.starts_with("${p:shell} stands inside a double-quoted string"),
            "{message}"
        );
        assert!(!message.contains("PWNED"), "the value stays out: {message}");
        let err = ctx
            .substitute("x = 1\nprint('v=${p:python}')", python)
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("${p:python} stands inside a string literal (line 2)"),
            "{err}"
        );
        // Standing alone, the same value is one word or literal.
        assert_eq!(
            ctx.substitute("echo \"value=[\"${p:shell}\"]\"", shell)
                .unwrap(),
            "echo \"value=[\"'x\"; touch /tmp/PWNED; echo \"'\"]\""
        );
        assert_eq!(
            ctx.substitute("print('v=' + ${p:python})", python).unwrap(),
            r#"print('v=' + "x\"; touch /tmp/PWNED; echo \"")"#
        );
        // At run time the script is judged as it will run: a value from the
        // DAG file that opens a quote puts the form inside it.
        ctx.params.insert("q".into(), "it's".into());
        assert!(matches!(
            ctx.substitute("echo ${q} ${p:shell} '", shell),
            Err(ParamError::MisplacedQuote(m)) if m.place == Place::SingleQuoted
        ));
        // Other text is not a script: the forms do not apply there.
        assert!(matches!(
            ctx.substitute("'${p:shell}'", Mode::Text),
            Err(ParamError::ModifierNotHere { .. })
        ));
    }

    #[test]
    fn sql_bare_values_must_be_plain() {
        let err = sql(SqlDialect::Postgres, "WHERE owner = ${owner}").unwrap_err();
        assert_eq!(
            err,
            ParamError::UnsafeSqlValue {
                name: "owner".into()
            }
        );
        let message = err.to_string();
        assert!(message.contains("${owner:literal}"), "{message}");
        assert!(message.contains("${owner:ident}"), "{message}");
        assert!(
            !message.contains("O'Brien"),
            "the value stays out: {message}"
        );
        assert_eq!(
            sql(
                SqlDialect::MySql,
                "SELECT * FROM t_${region} WHERE dt = '${bizdate}' AND run = ${run_id} \
                 AND d = $[yyyyMMdd-1] AND x = '${empty}'"
            )
            .unwrap(),
            "SELECT * FROM t_eu-west WHERE dt = '2024-03-31' AND run = 42 \
             AND d = 20240331 AND x = ''"
        );
    }

    #[test]
    fn sql_literals_per_dialect() {
        assert_eq!(
            sql(SqlDialect::Postgres, "owner = ${owner:literal}").unwrap(),
            "owner = 'O''Brien'"
        );
        assert_eq!(
            sql(SqlDialect::Sqlite, "${owner:literal}").unwrap(),
            "'O''Brien'"
        );
        assert_eq!(
            sql(SqlDialect::Postgres, "${path:literal}").unwrap(),
            r"'C:\tmp\it''s'"
        );
        assert_eq!(
            sql(SqlDialect::MySql, "${path:literal}").unwrap(),
            r"'C:\\tmp\\it''s'"
        );
        assert_eq!(
            sql(SqlDialect::Spark, "${path:literal}").unwrap(),
            r"'C:\\tmp\\it\'s'"
        );
        assert_eq!(
            sql(SqlDialect::MySql, "${bizdate:literal}").unwrap(),
            "'2024-03-31'"
        );
    }

    #[test]
    fn sql_identifiers_per_dialect() {
        assert_eq!(
            sql(SqlDialect::Postgres, "FROM ${table:ident}").unwrap(),
            r#"FROM "my""ta`ble""#
        );
        assert_eq!(
            sql(SqlDialect::Sqlite, "${table:ident}").unwrap(),
            r#""my""ta`ble""#
        );
        assert_eq!(
            sql(SqlDialect::MySql, "${table:ident}").unwrap(),
            r#"`my"ta``ble`"#
        );
    }

    #[test]
    fn sql_example_from_the_docs() {
        let mut c = ctx();
        c.params.insert("target".into(), "sales 2024".into());
        assert_eq!(
            c.substitute(
                "INSERT INTO ${target:ident} SELECT * FROM orders\n\
                 WHERE dt = '${bizdate}' AND owner = ${owner:literal};",
                Mode::Sql(SqlDialect::Postgres)
            )
            .unwrap(),
            "INSERT INTO \"sales 2024\" SELECT * FROM orders\n\
             WHERE dt = '2024-03-31' AND owner = 'O''Brien';"
        );
    }

    #[test]
    fn sql_rejects_nul() {
        assert_eq!(
            sql(SqlDialect::Postgres, "${nul:literal}").unwrap_err(),
            ParamError::NulInSqlValue { name: "nul".into() }
        );
    }

    #[test]
    fn sql_unknown_name() {
        assert_eq!(
            sql(SqlDialect::Sqlite, "${nope:literal}").unwrap_err(),
            ParamError::Unknown {
                name: "nope".into()
            }
        );
    }

    #[test]
    fn date_expressions_in_text() {
        assert_eq!(
            text("dt=$[yyyyMMdd-1] h=$[HH] at $[yyyy-MM-dd HH:mm:ss]").unwrap(),
            "dt=20240331 h=02 at 2024-04-01 02:30:00"
        );
        let err = text("$[yyyyMMdd").unwrap_err();
        assert_eq!(
            err,
            ParamError::BadDateExpr {
                expr: "yyyyMMdd".into(),
                reason: "no closing `]`".into()
            }
        );
        assert!(
            err.to_string()
                .starts_with("bad date expression $[yyyyMMdd]")
        );
    }

    #[test]
    fn env_names() {
        assert_eq!(env_name("bizdate"), "DJ_PARAM_BIZDATE");
        assert_eq!(env_name("a.b-c"), "DJ_PARAM_A_B_C");
        assert_eq!(env_name("héllo"), "DJ_PARAM_H_LLO");
    }

    #[test]
    fn secrets_only_where_substituted_with_them() {
        let secrets: BTreeMap<String, String> =
            [("api_token".to_owned(), "t0k'en".to_owned())].into();
        assert_eq!(
            ctx()
                .substitute_with_secrets("Bearer ${secret:api_token} for ${region}", &secrets)
                .unwrap(),
            "Bearer t0k'en for eu-west"
        );
        assert_eq!(
            ctx().substitute_with_secrets("${secret:nope}", &secrets),
            Err(ParamError::UnknownSecret {
                name: "nope".into()
            })
        );
        assert_eq!(
            text("curl -H ${secret:api_token}"),
            Err(ParamError::SecretMisplaced {
                name: "api_token".into()
            })
        );
        assert_eq!(
            sql(SqlDialect::Postgres, "SELECT ${secret:api_token}"),
            Err(ParamError::SecretMisplaced {
                name: "api_token".into()
            })
        );
        assert!(matches!(
            ctx().substitute_with_secrets("${secret:a-b}", &secrets),
            Err(ParamError::Malformed { .. })
        ));
    }

    #[test]
    fn secret_names_are_found_outside_escapes() {
        let names =
            secret_names("${secret:a} $${secret:b} ${secret:c.d} ${region} ${secret:a}").unwrap();
        assert_eq!(names, ["a".to_owned(), "c.d".to_owned()].into());
        assert!(secret_names("${secret:a").is_err());
    }

    #[test]
    fn a_param_called_secret_can_still_be_quoted_in_sql() {
        let mut ctx = ctx();
        ctx.params.insert("secret".into(), "x'y".into());
        assert_eq!(
            ctx.substitute("SELECT ${secret:literal}", Mode::Sql(SqlDialect::Postgres))
                .unwrap(),
            "SELECT 'x''y'"
        );
    }
}
