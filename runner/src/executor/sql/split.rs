//! The statement splitter: a small lexer that knows the quoting of the three
//! dialects, so a task's SQL can run one statement at a time.

use datajump_shared::params::SqlDialect;

/// A routine keyword (`CREATE OR REPLACE DEFINER=… PROCEDURE`) must come
/// within this many leading words.
const ROUTINE_WORDS: usize = 12;

/// One statement of a task's SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlStatement<'a> {
    /// Its text, without the `;` and without leading or trailing comments.
    pub text: &'a str,
    /// How it is run and what its log shows.
    pub kind: StatementKind,
}

/// What running a statement gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    /// Rows: SELECT, WITH … SELECT, SHOW, VALUES, EXPLAIN, DESCRIBE/DESC,
    /// PRAGMA, TABLE, and any statement with RETURNING.
    Rows,
    /// A count of rows changed: INSERT, UPDATE, DELETE, REPLACE, MERGE,
    /// COPY, LOAD, CALL, WITH … INSERT/UPDATE/DELETE.
    Changes,
    /// Nothing worth showing: DDL, SET, transaction control, routines.
    Other,
}

/// What a lexer token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An unquoted word: keyword or identifier.
    Word,
    /// A string literal, quoted identifier or dollar-quoted body.
    Quoted,
    /// A comment.
    Comment,
    /// Whitespace.
    Space,
    /// `;`
    Semicolon,
    /// `(`
    Open,
    /// `)`
    Close,
    /// Anything else: numbers, operators, MySQL `/*! … */`.
    Other,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

fn is_word_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_word_char(b: u8) -> bool {
    is_word_start(b) || b.is_ascii_digit() || b == b'$'
}

/// The end of a quoted run starting at `start` (on the opening quote):
/// `close` doubled is an escape, and so is a backslash when `backslash`.
fn quoted_end(bytes: &[u8], start: usize, close: u8, backslash: bool) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        let b = bytes[i];
        if backslash && b == b'\\' {
            i += 2;
        } else if b == close {
            if bytes.get(i + 1) == Some(&close) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// The end of a `/* … */` comment starting at `start`; nested in PostgreSQL.
fn block_comment_end(bytes: &[u8], start: usize, nested: bool) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < bytes.len() {
        if bytes[i] == b'/' && bytes[i + 1] == b'*' {
            if depth == 0 || nested {
                depth += 1;
            }
            i += 2;
        } else if bytes[i] == b'*' && bytes[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// A PostgreSQL dollar-quote opening at `start` (`$$` or `$tag$`): its
/// delimiter's length.
fn dollar_tag(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    if i < bytes.len() && is_word_start(bytes[i]) {
        i += 1;
        while i < bytes.len() && (is_word_start(bytes[i]) || bytes[i].is_ascii_digit()) {
            i += 1;
        }
    }
    (bytes.get(i) == Some(&b'$')).then_some(i + 1 - start)
}

fn tokens(sql: &str, dialect: SqlDialect) -> Vec<Token> {
    let bytes = sql.as_bytes();
    let mysql = dialect == SqlDialect::MySql;
    let postgres = dialect == SqlDialect::Postgres;
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        let (kind, end) = if b.is_ascii_whitespace() {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            (Kind::Space, i)
        } else if b == b';' {
            (Kind::Semicolon, i + 1)
        } else if b == b'(' {
            (Kind::Open, i + 1)
        } else if b == b')' {
            (Kind::Close, i + 1)
        } else if (b == b'-'
            && next == Some(b'-')
            // MySQL needs whitespace after `--`: `1--1` is arithmetic there.
            && (!mysql || bytes.get(i + 2).is_none_or(|c| c.is_ascii_whitespace())))
            || (b == b'#' && mysql)
        {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            (Kind::Comment, i)
        } else if b == b'/' && next == Some(b'*') {
            let end = block_comment_end(bytes, i, postgres);
            // MySQL runs `/*! … */` and reads `/*+ … */` as hints.
            let executable = mysql && matches!(bytes.get(i + 2), Some(b'!' | b'+'));
            (
                if executable {
                    Kind::Other
                } else {
                    Kind::Comment
                },
                end,
            )
        } else if b == b'\'' {
            // PostgreSQL's E'…' strings take backslash escapes, as MySQL's all do.
            let escape_string = postgres
                && out.last().is_some_and(|t| {
                    t.kind == Kind::Word
                        && t.end == i
                        && sql[t.start..t.end].eq_ignore_ascii_case("e")
                });
            (
                Kind::Quoted,
                quoted_end(bytes, i, b'\'', mysql || escape_string),
            )
        } else if b == b'"' {
            (Kind::Quoted, quoted_end(bytes, i, b'"', mysql))
        } else if b == b'`' {
            (Kind::Quoted, quoted_end(bytes, i, b'`', false))
        } else if b == b'[' && dialect == SqlDialect::Sqlite {
            let end = sql[i..].find(']').map_or(bytes.len(), |p| i + p + 1);
            (Kind::Quoted, end)
        } else if b == b'$'
            && postgres
            && let Some(len) = dollar_tag(bytes, i)
        {
            let tag = &sql[i..i + len];
            let body = i + len;
            let end = sql[body..]
                .find(tag)
                .map_or(bytes.len(), |p| body + p + len);
            (Kind::Quoted, end)
        } else if is_word_start(b) {
            while i < bytes.len() && is_word_char(bytes[i]) {
                i += 1;
            }
            (Kind::Word, i)
        } else if b.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            (Kind::Other, i)
        } else {
            // One character (a whole one, so slices stay on boundaries).
            let width = sql[i..].chars().next().map_or(1, char::len_utf8);
            (Kind::Other, i + width)
        };
        out.push(Token { kind, start, end });
        i = end;
    }
    out
}

/// The words of `sql` and its quoted runs without their quotes, in order:
/// the names SQLite may read as keywords, identifiers or function names
/// (`"load_extension"(…)` calls the function). Comments are left out.
pub(super) fn names(sql: &str, dialect: SqlDialect) -> Vec<&str> {
    tokens(sql, dialect)
        .into_iter()
        .filter_map(|t| match t.kind {
            Kind::Word => Some(&sql[t.start..t.end]),
            Kind::Quoted => {
                let quoted = &sql[t.start..t.end];
                let inner = quoted.get(1..quoted.len().saturating_sub(1));
                Some(inner.unwrap_or(quoted))
            }
            _ => None,
        })
        .collect()
}

/// Splits SQL text into statements on `;`, honouring the dialect's quoting
/// and comments and keeping routine bodies (`BEGIN … END`) whole.
/// Statements that are only comments are dropped.
pub fn split(sql: &str, dialect: SqlDialect) -> Vec<SqlStatement<'_>> {
    let tokens = tokens(sql, dialect);
    let mut statements = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    let mut depth = 0i32;
    let mut block = false;
    // Whether the statement can still turn out to be a routine: only its
    // first words before any parenthesis say so.
    let mut undecided = true;
    let mut words = 0usize;
    for (index, token) in tokens.iter().enumerate() {
        match token.kind {
            Kind::Space | Kind::Comment => {
                if !current.is_empty() {
                    current.push(*token);
                }
                continue;
            }
            Kind::Semicolon if depth <= 0 => {
                statements.extend(statement(sql, &current, block));
                current.clear();
                depth = 0;
                block = false;
                undecided = true;
                words = 0;
                continue;
            }
            _ => {}
        }
        current.push(*token);
        if token.kind == Kind::Open {
            undecided = false;
        }
        if token.kind != Kind::Word {
            continue;
        }
        words += 1;
        if undecided && words <= ROUTINE_WORDS {
            block = opens_block(sql, &current);
            undecided = !block;
            if block {
                // `BEGIN NOT ATOMIC` opened its block before it was known to be one.
                depth = i32::from(current.iter().any(|t| {
                    t.kind == Kind::Word && sql[t.start..t.end].eq_ignore_ascii_case("BEGIN")
                }));
                continue;
            }
        }
        if block {
            let word = &sql[token.start..token.end];
            if word.eq_ignore_ascii_case("BEGIN") || word.eq_ignore_ascii_case("CASE") {
                // `END CASE` closes a CASE statement: not a new block.
                if !(word.eq_ignore_ascii_case("CASE") && previous_word_is(sql, &current, "END")) {
                    depth += 1;
                }
            } else if word.eq_ignore_ascii_case("END") {
                let closes_other = next_word(sql, &tokens[index + 1..]).is_some_and(|w| {
                    ["IF", "LOOP", "WHILE", "REPEAT", "FOR"]
                        .iter()
                        .any(|k| w.eq_ignore_ascii_case(k))
                });
                if !closes_other {
                    depth -= 1;
                }
            }
        }
    }
    statements.extend(statement(sql, &current, block));
    statements
}

/// The statement made of `tokens` (which start with a significant token).
fn statement<'a>(sql: &'a str, tokens: &[Token], block: bool) -> Option<SqlStatement<'a>> {
    let last = tokens
        .iter()
        .rev()
        .find(|t| !matches!(t.kind, Kind::Space | Kind::Comment))?;
    let first = tokens.first()?;
    let words: Vec<&str> = tokens
        .iter()
        .filter(|t| t.kind == Kind::Word)
        .map(|t| &sql[t.start..t.end])
        .collect();
    Some(SqlStatement {
        text: &sql[first.start..last.end],
        kind: if block {
            StatementKind::Other
        } else {
            classify(sql, tokens, &words)
        },
    })
}

fn is_any(word: &str, keywords: &[&str]) -> bool {
    keywords.iter().any(|k| word.eq_ignore_ascii_case(k))
}

const CHANGES: [&str; 5] = ["INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE"];

fn classify(sql: &str, tokens: &[Token], words: &[&str]) -> StatementKind {
    if words.iter().any(|w| w.eq_ignore_ascii_case("RETURNING")) {
        return StatementKind::Rows;
    }
    // The first word, past any opening parentheses: `(SELECT …) UNION …`.
    let Some(first) = tokens
        .iter()
        .find(|t| !matches!(t.kind, Kind::Space | Kind::Comment | Kind::Open))
        .filter(|t| t.kind == Kind::Word)
        .map(|t| &sql[t.start..t.end])
    else {
        return StatementKind::Other;
    };
    if first.eq_ignore_ascii_case("WITH") {
        // `WITH … SELECT` returns rows, `WITH … INSERT/UPDATE/DELETE` does not:
        // the first such keyword outside the CTEs' parentheses decides.
        let mut depth = 0i32;
        for token in tokens {
            match token.kind {
                Kind::Open => depth += 1,
                Kind::Close => depth -= 1,
                Kind::Word if depth == 0 => {
                    let word = &sql[token.start..token.end];
                    if is_any(word, &["SELECT", "VALUES", "TABLE"]) {
                        return StatementKind::Rows;
                    }
                    if is_any(word, &CHANGES) {
                        return StatementKind::Changes;
                    }
                }
                _ => {}
            }
        }
        return StatementKind::Rows;
    }
    if is_any(
        first,
        &[
            "SELECT", "SHOW", "VALUES", "EXPLAIN", "DESCRIBE", "DESC", "PRAGMA", "TABLE",
        ],
    ) {
        StatementKind::Rows
    } else if is_any(first, &CHANGES) || is_any(first, &["COPY", "LOAD", "CALL"]) {
        StatementKind::Changes
    } else {
        StatementKind::Other
    }
}

/// True when the statement so far is a routine definition (`CREATE …
/// TRIGGER|PROCEDURE|FUNCTION|EVENT` before any parenthesis) or a MariaDB
/// `BEGIN NOT ATOMIC` block, whose body has its own `;`s.
fn opens_block(sql: &str, tokens: &[Token]) -> bool {
    let mut words = tokens
        .iter()
        .take_while(|t| t.kind != Kind::Open)
        .filter(|t| t.kind == Kind::Word)
        .map(|t| &sql[t.start..t.end]);
    match words.next() {
        Some(w) if w.eq_ignore_ascii_case("CREATE") => {
            words.any(|w| is_any(w, &["TRIGGER", "PROCEDURE", "FUNCTION", "EVENT"]))
        }
        Some(w) if w.eq_ignore_ascii_case("BEGIN") => {
            words.next().is_some_and(|w| w.eq_ignore_ascii_case("NOT"))
        }
        _ => false,
    }
}

/// True when the word before the last token is `word`.
fn previous_word_is(sql: &str, tokens: &[Token], word: &str) -> bool {
    tokens
        .iter()
        .rev()
        .skip(1)
        .find(|t| !matches!(t.kind, Kind::Space | Kind::Comment))
        .is_some_and(|t| t.kind == Kind::Word && sql[t.start..t.end].eq_ignore_ascii_case(word))
}

/// The next significant token's text if it is a word.
fn next_word<'a>(sql: &'a str, tokens: &[Token]) -> Option<&'a str> {
    tokens
        .iter()
        .find(|t| !matches!(t.kind, Kind::Space | Kind::Comment))
        .filter(|t| t.kind == Kind::Word)
        .map(|t| &sql[t.start..t.end])
}

#[cfg(test)]
#[path = "split_properties.rs"]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;

    use SqlDialect::{MySql, Postgres, Sqlite};

    fn texts(sql: &str, dialect: SqlDialect) -> Vec<&str> {
        split(sql, dialect).into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn splits_on_semicolons_and_trims() {
        for dialect in [Postgres, MySql, Sqlite] {
            assert_eq!(
                texts(
                    "  select 1;\n\n insert into t values (2) ;select 3",
                    dialect
                ),
                ["select 1", "insert into t values (2)", "select 3"]
            );
            assert!(texts(" ; ;\n", dialect).is_empty());
        }
    }

    #[test]
    fn semicolons_in_string_literals_stay() {
        for dialect in [Postgres, MySql, Sqlite] {
            assert_eq!(
                texts(
                    "insert into t values ('a;b', 'it''s; fine'); select 1",
                    dialect
                ),
                ["insert into t values ('a;b', 'it''s; fine')", "select 1"]
            );
        }
    }

    #[test]
    fn mysql_backslash_escapes() {
        assert_eq!(
            texts(r"insert into t values ('it\'s; \\'); select 'x'", MySql),
            [r"insert into t values ('it\'s; \\')", "select 'x'"]
        );
        assert_eq!(
            texts(r#"select "a\";b"; select 2"#, MySql),
            [r#"select "a\";b""#, "select 2"]
        );
    }

    #[test]
    fn backslash_is_plain_in_standard_strings_but_escapes_in_postgres_e_strings() {
        // In PostgreSQL and SQLite 'a\' is a complete literal.
        assert_eq!(
            texts(r"select 'a\'; select 2", Postgres),
            [r"select 'a\'", "select 2"]
        );
        assert_eq!(
            texts(r"select 'a\'; select 2", Sqlite),
            [r"select 'a\'", "select 2"]
        );
        assert_eq!(
            texts(r"select E'it\'s; ok'; select 2", Postgres),
            [r"select E'it\'s; ok'", "select 2"]
        );
        // A word ending in e is not an E prefix.
        assert_eq!(
            texts(r"select some'a\'; select 2", Postgres),
            [r"select some'a\'", "select 2"]
        );
    }

    #[test]
    fn quoted_identifiers() {
        assert_eq!(
            texts(r#"select "a;""b" from t; select 2"#, Postgres),
            [r#"select "a;""b" from t"#, "select 2"]
        );
        assert_eq!(
            texts("select `a;``b` from t; select 2", MySql),
            ["select `a;``b` from t", "select 2"]
        );
        assert_eq!(
            texts("select [a;b] from t; select 2", Sqlite),
            ["select [a;b] from t", "select 2"]
        );
    }

    #[test]
    fn comments() {
        let sql = "-- first; not a split\nselect 1; /* a; b */ select 2 -- trailing; x\n; # mysql;\nselect 3";
        assert_eq!(texts(sql, MySql), ["select 1", "select 2", "select 3"]);
        assert_eq!(
            texts(
                "select 1 /* c1 /* nested; */ still; */ ; select 2",
                Postgres
            ),
            ["select 1", "select 2"]
        );
        // Not nested in SQLite: the first */ ends it.
        assert_eq!(
            texts("select 1 /* a /* b */ ; select 2", Sqlite),
            ["select 1", "select 2"]
        );
        // `#` is an operator in PostgreSQL, not a comment.
        assert_eq!(
            texts("select 1 # 2; select 3", Postgres),
            ["select 1 # 2", "select 3"]
        );
        // A comment-only script has no statements.
        assert!(texts("-- nothing\n/* at all; */", Postgres).is_empty());
    }

    #[test]
    fn mysql_double_dash_needs_a_space() {
        assert_eq!(
            texts("select 1--1; select 2", MySql),
            ["select 1--1", "select 2"]
        );
        assert_eq!(
            texts("select 1 -- ;\n; select 2", MySql),
            ["select 1", "select 2"]
        );
        assert_eq!(texts("select 1 --;", MySql), ["select 1 --"]);
    }

    #[test]
    fn mysql_executable_comments_are_statements() {
        let sql = "/*!40101 SET NAMES utf8 */;\nselect /*+ MAX_EXECUTION_TIME(1) */ 1;";
        assert_eq!(
            texts(sql, MySql),
            [
                "/*!40101 SET NAMES utf8 */",
                "select /*+ MAX_EXECUTION_TIME(1) */ 1"
            ]
        );
    }

    #[test]
    fn postgres_dollar_quoting() {
        let sql = "create function f() returns int as $$ begin perform 1; return 2; end $$ language plpgsql;\n\
                   create function g() returns text as $body$ select 'a;$$;b' $body$ language sql; select f()";
        assert_eq!(
            texts(sql, Postgres),
            [
                "create function f() returns int as $$ begin perform 1; return 2; end $$ language plpgsql",
                "create function g() returns text as $body$ select 'a;$$;b' $body$ language sql",
                "select f()"
            ]
        );
        // Positional parameters and identifiers with $ are not quotes.
        assert_eq!(
            texts("select $1; select a$b$ from t; select 2", Postgres),
            ["select $1", "select a$b$ from t", "select 2"]
        );
        // Do blocks.
        assert_eq!(
            texts(
                "DO $do$ BEGIN RAISE NOTICE 'x;'; END $do$; SELECT 1",
                Postgres
            ),
            ["DO $do$ BEGIN RAISE NOTICE 'x;'; END $do$", "SELECT 1"]
        );
    }

    #[test]
    fn routine_bodies_stay_whole() {
        let trigger = "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  UPDATE b SET n = n + 1;\n  INSERT INTO c VALUES (CASE WHEN 1 THEN 'x' END);\nEND";
        assert_eq!(
            texts(&format!("{trigger};\nSELECT 1"), Sqlite),
            [trigger, "SELECT 1"]
        );
        let procedure = "CREATE DEFINER=`root`@`%` PROCEDURE p()\nBEGIN\n  DECLARE i INT DEFAULT 0;\n  \
                         l: LOOP SET i = i + 1; IF i > 3 THEN LEAVE l; END IF; END LOOP l;\n  \
                         WHILE i > 0 DO SET i = i - 1; END WHILE;\n  \
                         CASE i WHEN 0 THEN SELECT 1; ELSE BEGIN SELECT 2; END; END CASE;\nEND";
        assert_eq!(
            texts(&format!("{procedure};\nCALL p()"), MySql),
            [procedure, "CALL p()"]
        );
        let block = "BEGIN NOT ATOMIC DECLARE x INT; SET x = 1; END";
        assert_eq!(
            texts(&format!("{block}; SELECT 2"), MySql),
            [block, "SELECT 2"]
        );
        // A transaction BEGIN is a statement of its own.
        assert_eq!(
            texts("BEGIN; UPDATE t SET a = 1; COMMIT;", Postgres),
            ["BEGIN", "UPDATE t SET a = 1", "COMMIT"]
        );
        // Words inside a CREATE TABLE do not open a block.
        assert_eq!(
            texts(
                "CREATE TABLE t (begin_at int, trigger_name text); SELECT 1",
                Postgres
            ),
            [
                "CREATE TABLE t (begin_at int, trigger_name text)",
                "SELECT 1"
            ]
        );
    }

    #[test]
    fn unterminated_quotes_keep_the_rest_as_one_statement() {
        assert_eq!(
            texts("select 'abc; select 2", Postgres),
            ["select 'abc; select 2"]
        );
        assert_eq!(
            texts("select $$abc; select 2", Postgres),
            ["select $$abc; select 2"]
        );
        assert_eq!(texts("select 1 /* abc; select 2", Postgres), ["select 1"]);
    }

    #[test]
    fn non_ascii_text_is_kept_intact() {
        assert_eq!(
            texts("select 'héllo;世界' as 名前; select '€'", Postgres),
            ["select 'héllo;世界' as 名前", "select '€'"]
        );
    }

    fn kinds(sql: &str, dialect: SqlDialect) -> Vec<StatementKind> {
        split(sql, dialect).into_iter().map(|s| s.kind).collect()
    }

    #[test]
    fn statement_kinds() {
        use StatementKind::{Changes, Other, Rows};
        let sql = "SELECT 1; select 2; (SELECT 1) UNION (SELECT 2); WITH x AS (SELECT 1) SELECT * FROM x; \
                   SHOW TABLES; VALUES (1); EXPLAIN SELECT 1; DESCRIBE t; DESC t; PRAGMA table_info(t); TABLE t; \
                   INSERT INTO t VALUES (1) RETURNING id; DELETE FROM t RETURNING *; \
                   WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r";
        assert_eq!(kinds(sql, Postgres), [Rows; 14]);
        let sql = "INSERT INTO t VALUES (1); update t SET a = 1; DELETE FROM t; REPLACE INTO t VALUES (1); \
                   WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x; MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE; \
                   COPY t FROM '/tmp/x'; CALL p(); INSERT INTO t VALUES ('SELECT')";
        assert_eq!(kinds(sql, Postgres), [Changes; 9]);
        let sql = "CREATE TABLE s (a int); SET search_path = a; BEGIN; COMMIT; \
                   -- select in a comment\nDROP TABLE s; CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql";
        assert_eq!(kinds(sql, Postgres), [Other; 6]);
        // A routine whose body returns rows is not itself row-returning.
        assert_eq!(
            kinds(
                "CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END",
                Sqlite
            ),
            [Other]
        );
    }
}
