//! Property tests for the statement splitter: no text panics it in any dialect; what it
//! leaves out of the statements is only whitespace, `;` and comments; each statement is
//! trimmed of those; splitting its own output again changes nothing; and a generated script
//! of N statements, with `;` inside strings, quoted names, comments and dollar quotes,
//! splits into exactly those N statements.

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::*;

/// A failure prints its minimal case; nothing is written into the repository.
fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

const ALL_DIALECTS: [SqlDialect; 4] = [
    SqlDialect::Postgres,
    SqlDialect::MySql,
    SqlDialect::Sqlite,
    SqlDialect::Spark,
];

/// The splitter's own alphabet: quotes, comment openers, dollar tags, routine keywords.
const TOKENS: &[&str] = &[
    "'",
    "\"",
    "`",
    "[",
    "]",
    "$$",
    "$a$",
    "$",
    "--",
    "-- ",
    "#",
    "/*",
    "*/",
    "/*!",
    "/*+",
    ";",
    "(",
    ")",
    "BEGIN",
    "END",
    "CASE",
    "IF",
    "LOOP",
    "NOT",
    "ATOMIC",
    "CREATE",
    "PROCEDURE",
    "FUNCTION",
    "TRIGGER",
    "WITH",
    "SELECT",
    "INSERT",
    "RETURNING",
    "E",
    "e",
    "\\",
    "\n",
    " ",
    "\t",
    "é",
    "日本",
    "1",
    "1.5e3",
    "x",
    "a_b",
    "=",
    "-",
    "*",
    "/",
];

fn sql_soup() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.concat()),
        1 => any::<String>(),
    ]
}

/// Byte ranges of `sql` that `statements` cover.
fn ranges(sql: &str, statements: &[SqlStatement<'_>]) -> Vec<std::ops::Range<usize>> {
    statements
        .iter()
        .map(|s| {
            let start = s.text.as_ptr() as usize - sql.as_ptr() as usize;
            start..start + s.text.len()
        })
        .collect()
}

/// Checks what `split`'s doc promises of any input.
fn check_any(sql: &str, dialect: SqlDialect) -> Result<(), TestCaseError> {
    let statements = split(sql, dialect);
    let covered = ranges(sql, &statements);
    for (range, statement) in covered.iter().zip(&statements) {
        prop_assert!(range.end <= sql.len(), "a statement outside the text");
        prop_assert!(!statement.text.is_empty());
    }
    for pair in covered.windows(2) {
        prop_assert!(
            pair[0].end <= pair[1].start,
            "statements overlap or are out of order"
        );
    }
    // Everything the statements leave out is whitespace, `;` or a comment, and no
    // statement starts or ends with those.
    let toks = tokens(sql, dialect);
    for token in &toks {
        let inside = covered
            .iter()
            .any(|r| r.start <= token.start && token.end <= r.end);
        let ignorable = matches!(token.kind, Kind::Space | Kind::Comment | Kind::Semicolon);
        prop_assert!(
            inside || ignorable,
            "{:?} {:?} at {} is in no statement ({:?})",
            token.kind,
            &sql[token.start..token.end],
            token.start,
            dialect
        );
        for range in &covered {
            if token.start == range.start || token.end == range.end {
                prop_assert!(
                    !matches!(token.kind, Kind::Space | Kind::Comment | Kind::Semicolon),
                    "a statement starts or ends with {:?} {:?}",
                    token.kind,
                    &sql[token.start..token.end]
                );
            }
        }
    }
    // The statements, joined again, split into themselves. Except in MySQL after a `-`:
    // there `--` is a comment only before whitespace or the end, so the `--` of `1---- c`
    // is code until its trailing comment is trimmed, and a comment after.
    let texts: Vec<&str> = statements.iter().map(|s| s.text).collect();
    if dialect == SqlDialect::MySql && texts.iter().any(|t| t.ends_with('-')) {
        return Ok(());
    }
    let joined = texts.join(";\n");
    let again: Vec<&str> = split(&joined, dialect)
        .into_iter()
        .map(|s| s.text)
        .collect();
    prop_assert_eq!(again, texts, "splitting {:?} again ({:?})", joined, dialect);
    Ok(())
}

/// A piece of a statement that holds a `;` the splitter must not split on, written for
/// `dialect`.
fn tricky_piece(dialect: SqlDialect) -> BoxedStrategy<String> {
    let plain_string = "[a-z ;\"#*/-]{0,8}".prop_map(|s| format!("'{s}'"));
    let doubled_quote = ("[a-z ;]{0,4}", "[a-z ;]{0,4}").prop_map(|(a, b)| format!("'{a}'';{b}'"));
    let block_comment = "[a-z ;'\"]{0,8}".prop_map(|s| format!("/* {s} */"));
    let line_comment = "[a-z ;'\"]{0,8}".prop_map(|s| format!("-- {s}\n"));
    let mut pieces: Vec<BoxedStrategy<String>> = vec![
        plain_string.boxed(),
        doubled_quote.boxed(),
        block_comment.boxed(),
        line_comment.boxed(),
        // Prefixed, so that no generated name is a keyword (`RETURNING` makes rows).
        "[a-z_]{1,7}".prop_map(|s| format!("c{s}")).boxed(),
        "[0-9]{1,4}".boxed(),
        prop::sample::select(vec!["+", "=", "(1)", "(a, 'b;')", ","])
            .prop_map(str::to_owned)
            .boxed(),
    ];
    match dialect {
        SqlDialect::Postgres => {
            pieces.push(
                (
                    prop::sample::select(vec!["$$", "$body$", "$_1$"]),
                    "[a-z ;'\"\n-]{0,12}",
                )
                    .prop_map(|(tag, body)| format!("{tag}{body}{tag}"))
                    .boxed(),
            );
            pieces.push("[a-z ;]{0,6}".prop_map(|s| format!("\"{s}\"")).boxed());
            pieces.push("[a-z ;\\\\]{0,6}".prop_map(|s| format!("'{s}'")).boxed());
            pieces.push(
                "[a-z ;]{0,4}"
                    .prop_map(|s| format!("/* outer /* inner; */ {s} */"))
                    .boxed(),
            );
        }
        SqlDialect::MySql => {
            pieces.push("[a-z ;]{0,6}".prop_map(|s| format!("`{s}`")).boxed());
            pieces.push(
                ("[a-z ;]{0,4}", "[a-z ;]{0,4}")
                    .prop_map(|(a, b)| format!(r"'{a}\'{b}\\'"))
                    .boxed(),
            );
            pieces.push("[a-z ;']{0,6}".prop_map(|s| format!("# {s}\n")).boxed());
        }
        SqlDialect::Sqlite | SqlDialect::Spark => {
            pieces.push("[a-z ;]{0,6}".prop_map(|s| format!("[{s}]")).boxed());
            pieces.push("[a-z ;]{0,6}".prop_map(|s| format!("\"{s}\"")).boxed());
            pieces.push("[a-z ;\\\\]{0,6}".prop_map(|s| format!("'{s}'")).boxed());
        }
    }
    prop::strategy::Union::new(pieces).boxed()
}

/// One statement: a leading keyword that never opens a routine, then pieces; it ends on a
/// piece that is code, since the splitter trims trailing comments.
fn statement_text(dialect: SqlDialect) -> impl Strategy<Value = (String, StatementKind)> {
    (
        prop::sample::select(vec![
            ("SELECT", StatementKind::Rows),
            ("INSERT INTO t VALUES", StatementKind::Changes),
            ("UPDATE t SET", StatementKind::Changes),
            ("DROP TABLE", StatementKind::Other),
        ]),
        prop::collection::vec(tricky_piece(dialect), 0..6),
        "[a-z_]{1,7}".prop_map(|s| format!("c{s}")),
    )
        .prop_map(|((keyword, kind), pieces, last)| {
            let mut text = keyword.to_owned();
            for piece in pieces {
                text.push(' ');
                text.push_str(&piece);
            }
            text.push(' ');
            text.push_str(&last);
            (text, kind)
        })
}

/// What goes between two statements: the `;` with whitespace and comments around it.
fn separator(dialect: SqlDialect) -> impl Strategy<Value = String> {
    let comment = if dialect == SqlDialect::MySql {
        "(# [a-z;']{0,6}\n|-- [a-z;']{0,6}\n|/\\* [a-z;']{0,6} \\*/)?"
    } else {
        "(-- [a-z;']{0,6}\n|/\\* [a-z;']{0,6} \\*/)?"
    };
    (" {0,2}", comment, "[ \n]{0,2}").prop_map(|(a, c, b)| format!("{a};{b}{c}"))
}

fn script() -> impl Strategy<Value = (SqlDialect, Vec<(String, StatementKind)>, Vec<String>)> {
    prop::sample::select(vec![
        SqlDialect::Postgres,
        SqlDialect::MySql,
        SqlDialect::Sqlite,
    ])
    .prop_flat_map(|dialect| {
        (
            Just(dialect),
            prop::collection::vec(statement_text(dialect), 1..6),
            prop::collection::vec(separator(dialect), 6),
        )
    })
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn any_text_splits_into_its_code_without_panicking(sql in sql_soup()) {
        for dialect in ALL_DIALECTS {
            check_any(&sql, dialect)?;
            let _ = names(&sql, dialect);
        }
    }

    #[test]
    fn a_script_of_n_statements_splits_into_those_n(
        (dialect, statements, separators) in script(),
        trailing_separator in any::<bool>(),
    ) {
        let mut sql = String::new();
        for (i, (text, _)) in statements.iter().enumerate() {
            if i > 0 {
                sql.push_str(&separators[i]);
            }
            sql.push_str(text);
        }
        if trailing_separator {
            sql.push_str(&separators[0]);
        }
        let got = split(&sql, dialect);
        let texts: Vec<&str> = got.iter().map(|s| s.text).collect();
        let expected: Vec<&str> = statements.iter().map(|(text, _)| text.as_str()).collect();
        prop_assert_eq!(texts, expected, "{:?} in {:?}", sql, dialect);
        let kinds: Vec<StatementKind> = got.iter().map(|s| s.kind).collect();
        let expected: Vec<StatementKind> = statements.iter().map(|(_, kind)| *kind).collect();
        prop_assert_eq!(kinds, expected);
        check_any(&sql, dialect)?;
    }
}
