//! Property tests for parameter substitution (`datajump_shared::params`): no text, name or
//! value makes it panic, and what its docs promise holds for generated input: text without
//! `$` is unchanged, escapes and placeholders are replaced in one pass, every quoting form
//! reads back as the value in its language, and a value from outside the DAG file never
//! gets into a script, a SQL statement, a path or an argument in a form that could change
//! what runs.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeDelta, Utc};
use chrono_tz::Tz;
use datajump_shared::params::{
    Mode, ParamContext, ParamError, Params, ScriptLang, SqlDialect, bare_params, leading_params,
    misplaced_forms, secret_names, substitute_secrets,
};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// A failure prints its minimal case; nothing is written into the repository.
fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

const ZONES: [Tz; 5] = [
    chrono_tz::UTC,
    chrono_tz::Asia::Shanghai,
    chrono_tz::Europe::Berlin,
    chrono_tz::America::New_York,
    chrono_tz::Pacific::Kiritimati,
];

const DIALECTS: [SqlDialect; 4] = [
    SqlDialect::Postgres,
    SqlDialect::MySql,
    SqlDialect::Sqlite,
    SqlDialect::Spark,
];

use datajump_shared::params::BUILTINS;

fn every_mode() -> Vec<Mode> {
    let mut modes = vec![
        Mode::Text,
        Mode::Path,
        Mode::Script(ScriptLang::Shell),
        Mode::Script(ScriptLang::Python),
    ];
    modes.extend(DIALECTS.map(Mode::Sql));
    modes
}

/// A placeholder name as the module defines one, `[A-Za-z_][A-Za-z0-9_.]*`.
fn name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.]{0,6}"
}

/// Values with the characters that matter to some language: quotes, backslashes, `$`,
/// braces, line breaks, NUL, a leading `-`, non-ASCII.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        3 => "[-a-z0-9 '\"\\\\$`{}()\\[\\];|&<>*?#!~=.,:/\n\t\r\u{0}é€𝄞]{0,12}",
        1 => "[0-9]{1,8}(\\.[0-9]{1,3})?",
        1 => "[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2})?",
    ]
}

/// An instant from 1900 to 2200.
fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    (-2_208_988_800i64..7_258_118_400)
        .prop_map(|secs| DateTime::from_timestamp(secs, 0).expect("in range"))
}

/// A context with user params (some named like built-ins), some of them untrusted.
fn context() -> impl Strategy<Value = ParamContext> {
    let param = (
        prop_oneof![4 => name(), 1 => prop::sample::select(BUILTINS.to_vec()).prop_map(str::to_owned)],
        value(),
        any::<bool>(),
    );
    (
        prop::collection::vec(param, 0..6),
        instant(),
        prop::sample::select(ZONES.to_vec()),
        any::<i64>(),
        value(),
        -36_000i32..36_000,
    )
        .prop_map(
            |(params, logical_time, time_zone, run_id, task_name, biz_days)| {
                let untrusted = params
                    .iter()
                    .filter(|(_, _, untrusted)| *untrusted)
                    .map(|(name, _, _)| name.clone())
                    .collect();
                ParamContext {
                    biz_date: NaiveDate::from_ymd_opt(2000, 1, 1).expect("valid")
                        + TimeDelta::days(i64::from(biz_days)),
                    logical_time,
                    time_zone,
                    run_id,
                    task_name,
                    params: params.into_iter().map(|(n, v, _)| (n, v)).collect(),
                    untrusted,
                }
            },
        )
}

/// What substitution reads: `$`, braces, brackets, modifiers, quotes, date formats and
/// offsets, functions, names (some of them the context's), mixed into text.
fn token_soup(names: Vec<String>) -> impl Strategy<Value = String> {
    let mut tokens: Vec<String> = [
        "$",
        "$$",
        "${",
        "$[",
        "$${",
        "$$[",
        "{",
        "}",
        "[",
        "]",
        ":",
        ":shell",
        ":python",
        ":literal",
        ":ident",
        ":lit",
        "secret:",
        "'",
        "\"",
        "\\",
        "`",
        "\n",
        " ",
        "#",
        "-",
        "+",
        "*",
        "/",
        "yyyy",
        "yy",
        "MM",
        "dd",
        "HH",
        "mm",
        "ss",
        "yyyyMMdd",
        "-1",
        "+7*2",
        "/24",
        "/0",
        "99999999999999999999",
        "add_months(",
        "month_last_day(",
        "year_week(",
        "this_day(",
        "week_first_day(",
        ",",
        ")",
        "(",
        "x",
        "echo ",
        "<<EOF\n",
        "EOF\n",
        "f\"",
        "é",
    ]
    .map(str::to_owned)
    .to_vec();
    tokens.extend(BUILTINS.map(str::to_owned));
    tokens.extend(names);
    prop::collection::vec(prop::sample::select(tokens), 0..24).prop_map(|t| t.concat())
}

fn context_and_soup() -> impl Strategy<Value = (ParamContext, String)> {
    context().prop_flat_map(|ctx| {
        let names: Vec<String> = ctx.params.keys().cloned().collect();
        (Just(ctx), prop_oneof![token_soup(names), any::<String>()])
    })
}

/// Runs every entry point on `text`; only a panic fails.
fn exercise_everything(ctx: &ParamContext, text: &str) {
    for mode in every_mode() {
        let _ = ctx.substitute(text, mode);
    }
    let _ = ctx.substitute_argument(text);
    let secrets: BTreeMap<String, String> = ctx.params.clone();
    let _ = ctx.substitute_with_secrets(text, &secrets);
    let _ = substitute_secrets(text, &secrets);
    let _ = secret_names(text);
    let _ = bare_params(text);
    let _ = leading_params(text);
    let _ = misplaced_forms(text, ScriptLang::Shell);
    let _ = misplaced_forms(text, ScriptLang::Python);
}

/// The value `${name}` stands for: a built-in wins over a user param.
fn value_of(ctx: &ParamContext, name: &str) -> Option<String> {
    ctx.builtins()
        .into_iter()
        .find(|(builtin, _)| *builtin == name)
        .map(|(_, value)| value)
        .or_else(|| ctx.params.get(name).cloned())
}

fn is_untrusted(ctx: &ParamContext, name: &str) -> bool {
    !BUILTINS.contains(&name) && ctx.untrusted.contains(name)
}

/// A POSIX shell word made only of single-quoted runs and `\'`, read back as the shell
/// would; `None` when any character stands outside quotes unescaped.
fn read_shell_word(word: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = word.chars();
    let mut any_quote = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                any_quote = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        inner => out.push(inner),
                    }
                }
            }
            '\\' => out.push(chars.next().filter(|c| *c == '\'')?),
            _ => return None,
        }
    }
    any_quote.then_some(out)
}

/// A quoted SQL literal or identifier read back by the dialect's rules; `None` when it does
/// not start and end with `quote` or a quote inside is not escaped (the value would end it).
fn read_sql_quoted(text: &str, quote: char, backslash_escapes: bool) -> Option<String> {
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if backslash_escapes && c == '\\' {
            out.push(chars.next()?);
        } else if c == quote {
            chars.next_if_eq(&quote)?;
            out.push(quote);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// One part of a text whose substitution in text mode the test works out itself.
#[derive(Debug, Clone)]
enum Part {
    /// Text without `$`.
    Literal(String),
    /// `$${` or `$$[`, which write `${` and `$[`.
    Escape(&'static str),
    /// A `$` that starts no placeholder: `$HOME`, `$$ `, `$5`.
    Dollar(&'static str),
    /// `${name}`.
    Param(String),
}

fn part(names: Vec<String>) -> impl Strategy<Value = Part> {
    let mut names = names;
    names.extend(BUILTINS.map(str::to_owned));
    prop_oneof![
        "[^$]{0,8}".prop_map(Part::Literal),
        prop::sample::select(vec!["$${", "$$["]).prop_map(Part::Escape),
        prop::sample::select(vec!["$HOME", "$$ ", "$5", "$ ", "$)"]).prop_map(Part::Dollar),
        prop::sample::select(names).prop_map(Part::Param),
    ]
}

fn context_and_parts() -> impl Strategy<Value = (ParamContext, Vec<Part>)> {
    context().prop_flat_map(|ctx| {
        let names: Vec<String> = ctx.params.keys().cloned().collect();
        (Just(ctx), prop::collection::vec(part(names), 0..8))
    })
}

fn render(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Literal(text) => text.clone(),
            Part::Escape(text) | Part::Dollar(text) => (*text).to_owned(),
            Part::Param(name) => format!("${{{name}}}"),
        })
        .collect()
}

proptest! {
    #![proptest_config(config(384))]

    #[test]
    fn nothing_panics_on_any_text_name_or_value((ctx, text) in context_and_soup()) {
        exercise_everything(&ctx, &text);
    }

    #[test]
    fn date_expressions_never_panic(
        ctx in context(),
        format in "(yyyy|yy|MM|dd|HH|mm|ss|[-/:_. ]|y|M|Q){0,6}",
        sign in prop::sample::select(vec!["", "+", "-"]),
        numbers in prop::collection::vec((0u64..=u64::MAX, prop::sample::select(vec!["*", "/"])), 0..4),
        function in prop::sample::select(vec![
            "", "add_months", "this_day", "last_day", "month_first_day", "month_last_day",
            "week_first_day", "week_last_day", "year_week", "nope",
        ]),
    ) {
        let mut offset = sign.to_owned();
        for (i, (n, op)) in numbers.iter().enumerate() {
            if i > 0 {
                offset.push_str(op);
            }
            // Small numbers mostly, with some near the limits of i64.
            offset.push_str(&(if n % 3 == 0 { *n } else { n % 1000 }).to_string());
        }
        let expr = if function.is_empty() {
            format!("$[{format}{offset}]")
        } else {
            format!("$[{function}({format},{offset})]")
        };
        exercise_everything(&ctx, &expr);
    }

    #[test]
    fn text_without_a_dollar_comes_back_unchanged(ctx in context(), text in "[^$]{0,40}") {
        for mode in every_mode() {
            prop_assert_eq!(ctx.substitute(&text, mode), Ok(text.clone()), "{:?}", mode);
        }
        prop_assert_eq!(ctx.substitute_argument(&text), Ok(text.clone()));
    }

    #[test]
    fn text_mode_replaces_each_placeholder_once_and_unescapes(
        (ctx, parts) in context_and_parts(),
    ) {
        let text = render(&parts);
        let expected: String = parts
            .iter()
            .map(|p| match p {
                Part::Literal(text) => text.clone(),
                Part::Escape(text) => text[1..].to_owned(),
                Part::Dollar(text) => (*text).to_owned(),
                Part::Param(name) => value_of(&ctx, name).expect("a known name"),
            })
            .collect();
        prop_assert_eq!(ctx.substitute(&text, Mode::Text), Ok(expected), "{:?}", text);
    }

    #[test]
    fn a_shell_word_reads_back_as_the_value(value in value(), untrusted in any::<bool>()) {
        let ctx = with_param("p", &value, untrusted);
        let out = ctx.substitute("printf '%s' ${p:shell}", Mode::Script(ScriptLang::Shell));
        let out = out.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let word = out.strip_prefix("printf '%s' ").expect("the code around stays");
        prop_assert_eq!(read_shell_word(word), Some(value.clone()), "{:?}", word);
    }

    #[test]
    fn a_python_literal_reads_back_as_the_value(value in value(), untrusted in any::<bool>()) {
        let ctx = with_param("p", &value, untrusted);
        let out = ctx.substitute("print(${p:python})", Mode::Script(ScriptLang::Python));
        let out = out.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let literal = out
            .strip_prefix("print(")
            .and_then(|rest| rest.strip_suffix(')'))
            .expect("the code around stays");
        // A JSON string's escapes mean the same in Python; a raw line break would end the
        // literal's line.
        prop_assert!(!literal.contains(['\n', '\r']), "{:?}", literal);
        prop_assert!(literal.starts_with('"') && literal.ends_with('"'));
        let back: Result<String, _> = serde_json::from_str(literal);
        prop_assert_eq!(back.ok(), Some(value));
    }

    #[test]
    fn sql_literals_and_identifiers_read_back_as_the_value(
        value in value(),
        untrusted in any::<bool>(),
    ) {
        let ctx = with_param("p", &value, untrusted);
        for dialect in DIALECTS {
            let literal = ctx.substitute("${p:literal}", Mode::Sql(dialect));
            let ident = ctx.substitute("${p:ident}", Mode::Sql(dialect));
            if value.contains('\0') {
                prop_assert!(matches!(literal, Err(ParamError::NulInSqlValue { .. })), "{:?}", literal);
                prop_assert!(matches!(ident, Err(ParamError::NulInSqlValue { .. })), "{:?}", ident);
                continue;
            }
            let literal = literal.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let ident = ident.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (backslash, ident_quote) = match dialect {
                SqlDialect::Postgres | SqlDialect::Sqlite => (false, '"'),
                SqlDialect::MySql | SqlDialect::Spark => (true, '`'),
            };
            prop_assert_eq!(
                read_sql_quoted(&literal, '\'', backslash),
                Some(value.clone()),
                "{:?} literal {:?}", dialect, literal
            );
            prop_assert_eq!(
                read_sql_quoted(&ident, ident_quote, false),
                Some(value.clone()),
                "{:?} identifier {:?}", dialect, ident
            );
        }
    }

    #[test]
    fn an_untrusted_value_never_goes_bare_into_code(value in value()) {
        let ctx = with_param("p", &value, true);
        for lang in [ScriptLang::Shell, ScriptLang::Python] {
            prop_assert!(
                matches!(ctx.substitute("x = ${p}", Mode::Script(lang)), Err(ParamError::UntrustedInScript { .. })),
                "{:?}", lang
            );
        }
        for dialect in DIALECTS {
            if let Ok(out) = ctx.substitute("SELECT ${p}", Mode::Sql(dialect)) {
                // Only a number or a date: it starts with a digit, cannot start a comment,
                // and holds no quote, letter (bar a date's T) or operator but `-`, `:`, `.`.
                let pasted = &out["SELECT ".len()..];
                prop_assert_eq!(pasted, value.as_str());
                prop_assert!(pasted.starts_with(|c: char| c.is_ascii_digit()), "{:?}", pasted);
                prop_assert!(!pasted.contains("--"), "{:?}", pasted);
                prop_assert!(
                    pasted.chars().all(|c| c.is_ascii_digit() || "-: T.".contains(c)),
                    "{:?}", pasted
                );
            }
        }
        if let Ok(out) = ctx.substitute("/data/${p}/x", Mode::Path) {
            // One plain path component, matching only itself as a glob.
            prop_assert_eq!(out, format!("/data/{value}/x"));
            prop_assert!(!value.is_empty() && value != "." && value != "..");
            prop_assert!(!value.contains(['/', '\0', '*', '?', '[', ']', '{', '}', '\\']), "{:?}", value);
        }
    }

    #[test]
    fn an_untrusted_value_never_makes_an_argument_an_option(
        (ctx, parts) in context_and_parts(),
    ) {
        let text = render(&parts);
        let Ok(plain) = ctx.substitute(&text, Mode::Text) else {
            return Ok(());
        };
        let untrusted_used = parts
            .iter()
            .any(|p| matches!(p, Part::Param(name) if is_untrusted(&ctx, name)));
        let refused = matches!(
            ctx.substitute_argument(&text),
            Err(ParamError::UntrustedOption { .. })
        );
        let from_a_value = plain.starts_with('-') && !text.starts_with('-');
        prop_assert_eq!(
            refused,
            from_a_value && untrusted_used,
            "{:?} gives {:?}", text, plain
        );
    }

    #[test]
    fn a_quoting_form_inside_a_string_or_comment_is_refused(
        value in value(),
        inside in "[a-z =]{0,6}",
        place in 0usize..4,
    ) {
        let ctx = with_param("p", &value, true);
        let shell = [
            format!("echo \"{inside}${{p:shell}}\""),
            format!("echo '{inside}${{p:shell}}'"),
            format!("echo ok # {inside}${{p:shell}}"),
            format!("cat <<EOF\n{inside}${{p:shell}}\nEOF\n"),
        ];
        let python = [
            format!("print(\"{inside}${{p:python}}\")"),
            format!("print('{inside}${{p:python}}')"),
            format!("x = 1  # {inside}${{p:python}}"),
            format!("print(\"\"\"{inside}\n${{p:python}}\"\"\")"),
        ];
        for (lang, script) in [(ScriptLang::Shell, &shell[place]), (ScriptLang::Python, &python[place])] {
            let result = ctx.substitute(script, Mode::Script(lang));
            prop_assert!(
                matches!(result, Err(ParamError::MisplacedQuote(_))),
                "{:?} gave {:?}", script, result
            );
            prop_assert_eq!(misplaced_forms(script, lang).len(), 1, "{:?}", script);
        }
    }
}

fn with_param(name: &str, value: &str, untrusted: bool) -> ParamContext {
    let params: Params = [(name.to_owned(), value.to_owned())].into();
    ParamContext {
        biz_date: NaiveDate::from_ymd_opt(2024, 3, 31).expect("valid"),
        logical_time: "2024-03-31T18:30:00Z".parse().expect("valid"),
        time_zone: chrono_tz::Asia::Shanghai,
        run_id: 42,
        task_name: "t".to_owned(),
        params,
        untrusted: if untrusted {
            BTreeSet::from([name.to_owned()])
        } else {
            BTreeSet::new()
        },
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn whole_day_offsets_move_the_local_date(
        logical in instant(),
        tz in prop::sample::select(ZONES.to_vec()),
        days in -100_000i64..100_000,
    ) {
        let ctx = ParamContext { logical_time: logical, time_zone: tz, ..with_param("p", "", false) };
        let local = logical.with_timezone(&tz).naive_local();
        let expected = if days >= 0 {
            local.checked_add_days(Days::new(days.unsigned_abs()))
        } else {
            local.checked_sub_days(Days::new(days.unsigned_abs()))
        }
        .expect("in range")
        .format("%Y-%m-%d %H:%M:%S")
        .to_string();
        prop_assert_eq!(
            ctx.substitute(&format!("$[yyyy-MM-dd HH:mm:ss{days:+}]"), Mode::Text),
            Ok(expected)
        );
    }

    #[test]
    fn hour_offsets_move_the_instant(
        logical in instant(),
        tz in prop::sample::select(ZONES.to_vec()),
        hours in -1_000_000i64..1_000_000,
    ) {
        let ctx = ParamContext { logical_time: logical, time_zone: tz, ..with_param("p", "", false) };
        // A whole number of days keeps the wall-clock time instead (the previous test).
        prop_assume!(hours % 24 != 0);
        let expected = (logical + TimeDelta::hours(hours))
            .with_timezone(&tz)
            .format("%Y%m%d%H%M%S")
            .to_string();
        prop_assert_eq!(
            ctx.substitute(&format!("$[yyyyMMddHHmmss{hours:+}/24]"), Mode::Text),
            Ok(expected)
        );
    }

    #[test]
    fn add_months_and_year_week_agree_with_chrono(
        logical in instant(),
        tz in prop::sample::select(ZONES.to_vec()),
        months in -2_000i64..2_000,
    ) {
        let ctx = ParamContext { logical_time: logical, time_zone: tz, ..with_param("p", "", false) };
        let local = logical.with_timezone(&tz).naive_local();
        let magnitude = Months::new(u32::try_from(months.unsigned_abs()).expect("small"));
        let moved = if months >= 0 {
            local.checked_add_months(magnitude)
        } else {
            local.checked_sub_months(magnitude)
        }
        .expect("in range");
        prop_assert_eq!(
            ctx.substitute(&format!("$[add_months(yyyyMMdd,{months})]"), Mode::Text),
            Ok(moved.format("%Y%m%d").to_string())
        );
        let week = local.iso_week();
        prop_assert_eq!(
            ctx.substitute("$[year_week(yyyy-MM-dd)]", Mode::Text),
            Ok(format!("{:04}-{:02}", week.year(), week.week()))
        );
    }
}
