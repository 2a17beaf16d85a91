//! SQL: statements run one by one against a named datasource.
//!
//! `content` is `{ "sql": "…", "datasource": "name" }`. The datasource row
//! (with its password) is read from the scheduler's database when the attempt
//! starts, so no secret travels in the work message; the password is masked
//! in every message passed on.
//!
//! The shaping decision: **the task's text is split into statements here,
//! and each one runs on its own, in order, on one database session.** Drivers
//! refuse several statements in one prepared query, and running them one by
//! one lets the log say which statement did what (rows affected, a result
//! table) and which one failed. The splitter is a small lexer that knows the
//! quoting of the three dialects — string literals (`''`, and backslash
//! escapes in MySQL and PostgreSQL `E'…'`), quoted identifiers, comments and
//! PostgreSQL dollar-quoting — and keeps `BEGIN … END` bodies of `CREATE
//! TRIGGER/PROCEDURE/FUNCTION/EVENT` whole. The pool has one connection, so
//! `SET`, temporary tables and `BEGIN; …; COMMIT;` carry across statements.
//!
//! Results are streamed: a `SELECT` of millions of rows is counted, not
//! held in memory, and only the first [`MAX_ROWS`] are formatted into the log.
//! On timeout or kill the server-side session is terminated too (PostgreSQL
//! and MySQL; SQLite's statement is interrupted), so an abandoned statement
//! does not keep running and holding locks while a retry starts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use datajump_shared::content::SqlContent;
use datajump_shared::datasources::{self, ConnectionUrl};
use datajump_shared::entities::datasource;
use datajump_shared::kinds::DatasourceKind;
use datajump_shared::params::{Mode, SqlDialect};
use futures::StreamExt;
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, FromQueryResult, JsonValue,
    QueryResult, Statement, StreamTrait,
};

use super::{ExecContext, ExecOutcome, LogSink};

/// Rows of a result shown in the log; the rest are only counted.
pub const MAX_ROWS: usize = 100;
/// A statement is logged up to this many characters.
const STATEMENT_EXCERPT: usize = 200;
/// A cell is shown up to this many characters.
const MAX_CELL: usize = 80;
/// SQLite virtual machine steps between checks for an interrupt.
const SQLITE_PROGRESS_OPS: i32 = 1000;
/// A routine keyword (`CREATE OR REPLACE DEFINER=… PROCEDURE`) must come
/// within this many leading words.
const ROUTINE_WORDS: usize = 12;
/// How long connecting to a datasource may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

fn failed(message: String) -> ExecOutcome {
    ExecOutcome::Failed {
        exit_code: None,
        message,
    }
}

/// Whether `sql` returns a row on the datasource `name` of the task's
/// project (a sensor's check): parameters substituted in the datasource's
/// dialect, one connection, closed after. An error is the outcome to end
/// the attempt with.
pub(super) async fn returns_a_row(
    name: &str,
    sql: &str,
    ctx: &ExecContext,
    log: &LogSink,
) -> Result<bool, ExecOutcome> {
    let project = ctx.project_id;
    let source = match datajump_store::datasources::for_connection(&ctx.db, project, name).await {
        Ok(Some(source)) => source,
        Ok(None) => {
            return Err(ExecOutcome::Invalid(format!(
                "unknown datasource '{name}' in project {project}, the task's project"
            )));
        }
        Err(e) => return Err(failed(format!("cannot read datasource '{name}': {e}"))),
    };
    let url = datasources::connection_url(&source)
        .map_err(|e| ExecOutcome::Invalid(format!("datasource '{name}': {e}")))?;
    let sql = ctx
        .params
        .substitute(sql, Mode::Sql(source.kind.dialect()))
        .map_err(|e| ExecOutcome::Invalid(e.to_string()))?;
    log.line(&format!(
        "[datajump] datasource '{name}' ({}): {url}",
        source.kind
    ));
    let db = connect(&url)
        .await
        .map_err(|e| failed(format!("cannot connect to '{name}': {e}")))?;
    let found = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            sql.clone(),
        ))
        .await
        .map_err(|e| failed(database_message(&e, &sql)));
    let _ = db.close().await;
    Ok(found?.is_some())
}

/// Runs the statements against the datasource.
pub(super) async fn run(content: &SqlContent, ctx: &ExecContext, log: &LogSink) -> ExecOutcome {
    let (sql, name) = (content.sql.as_str(), content.datasource.as_str());
    let project = ctx.project_id;
    let source = match datajump_store::datasources::for_connection(&ctx.db, project, name).await {
        Ok(Some(source)) => source,
        Ok(None) => {
            return ExecOutcome::Invalid(format!(
                "unknown datasource '{name}' in project {project}, the task's project: add it with \
                 `datajump datasource add {name} --project {project} --kind …`"
            ));
        }
        Err(e @ datajump_shared::datasources::DatasourceError::Db(_)) => {
            return failed(format!("cannot read datasource '{name}': {e}"));
        }
        Err(e) => return ExecOutcome::Invalid(e.to_string()),
    };
    let kind = source.kind;
    let url = match datasources::connection_url(&source) {
        Ok(url) => url,
        Err(e) => return ExecOutcome::Invalid(format!("datasource '{name}': {e}")),
    };
    let dialect = kind.dialect();
    let sql = match ctx.params.substitute(sql, Mode::Sql(dialect)) {
        Ok(sql) => sql,
        Err(e) => return ExecOutcome::Invalid(e.to_string()),
    };
    let statements = split(&sql, dialect);
    if statements.is_empty() {
        return ExecOutcome::Invalid("the SQL has no statement to run".to_owned());
    }
    log.line(&format!("[datajump] datasource '{name}' ({kind}): {url}"));

    let session = Session::default();
    let work = run_statements(
        &source,
        kind,
        &url,
        &statements,
        content.transaction,
        &session,
        log,
    );
    tokio::pin!(work);
    let deadline = (!ctx.timeout.is_zero()).then(|| tokio::time::Instant::now() + ctx.timeout);
    let timeout = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        outcome = &mut work => outcome,
        () = timeout => {
            log.line(&format!("[datajump] timed out after {}s", ctx.timeout.as_secs()));
            stop(&source, kind, &url, &session, log).await;
            ExecOutcome::TimedOut
        }
        () = ctx.cancel.cancelled() => {
            log.line("[datajump] stopped");
            stop(&source, kind, &url, &session, log).await;
            ExecOutcome::Cancelled
        }
    }
}

async fn connect(url: &ConnectionUrl) -> Result<DatabaseConnection, sea_orm::DbErr> {
    let mut options = ConnectOptions::new(url.expose().to_owned());
    // One connection, never recycled or silently replaced between
    // statements (no lifetime, idle timeout or ping-and-reconnect): every
    // statement runs in the same session, so temporary tables, `SET` and
    // open transactions carry over, and a lost connection is an error.
    options
        .max_connections(1)
        .min_connections(0)
        .connect_timeout(CONNECT_TIMEOUT)
        .acquire_timeout(CONNECT_TIMEOUT)
        .max_lifetime(None::<Duration>)
        .idle_timeout(None::<Duration>)
        .test_before_acquire(false)
        .sqlx_logging(false);
    Database::connect(options).await
}

/// Connects to `source` (its password opened) as a SQL task would and
/// runs `SELECT 1`: what `datajump datasource add` and `datasource test`
/// check. The error is the driver's reason, passwords redacted.
pub async fn check_datasource(source: &datasource::Model) -> Result<(), String> {
    let url = datasources::connection_url(source).map_err(|e| e.to_string())?;
    let db = match connect(&url).await {
        Ok(db) => db,
        Err(e) => {
            let why = connect_error(source.kind, &url)
                .await
                .unwrap_or_else(|| e.to_string());
            return Err(datasources::redact(source, &why));
        }
    };
    let probe = sea_orm::Statement::from_string(db.get_database_backend(), "SELECT 1");
    let answered = tokio::time::timeout(CONNECT_TIMEOUT, db.query_one_raw(probe)).await;
    let _ = db.close().await;
    match answered {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(datasources::redact(source, &database_message(&e, ""))),
        Err(_) => Err(format!(
            "connected, but `SELECT 1` did not answer within {}s",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

/// Why a connection fails, from one direct attempt: the pool retries a
/// refused connection until its timeout and then reports only that it timed
/// out.
async fn connect_error(kind: DatasourceKind, url: &ConnectionUrl) -> Option<String> {
    use sea_orm::sqlx::{Connection, MySqlConnection, PgConnection, SqliteConnection};
    let attempt = async {
        match kind {
            DatasourceKind::Postgresql => PgConnection::connect(url.expose()).await.map(drop),
            DatasourceKind::Mysql => MySqlConnection::connect(url.expose()).await.map(drop),
            DatasourceKind::Sqlite => SqliteConnection::connect(url.expose()).await.map(drop),
        }
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Err(e)) => Some(e.to_string()),
        Ok(Ok(())) | Err(_) => None,
    }
}

/// How the task's running statement can be stopped from outside its future.
#[derive(Default)]
struct Session {
    /// Known once connected.
    stop: OnceLock<Stop>,
    /// Set to make SQLite's progress handler interrupt the statement.
    interrupt: Arc<AtomicBool>,
}

/// A way to stop a running statement.
enum Stop {
    /// Terminate this server session (PostgreSQL backend pid, MySQL
    /// connection id) from a second connection.
    Server(i64),
    /// Raise [`Session::interrupt`] (SQLite).
    Interrupt,
}

/// Learns how the session of `db` can be stopped: the server's id of it, or
/// (SQLite, an in-process library) a progress handler that aborts the
/// running statement once [`Session::interrupt`] is raised.
async fn prepare_stop(db: &DatabaseConnection, kind: DatasourceKind, session: &Session) {
    let query = match kind {
        DatasourceKind::Postgresql => "SELECT pg_backend_pid()::bigint AS id",
        DatasourceKind::Mysql => "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id",
        DatasourceKind::Sqlite => {
            // The pool's one connection: acquired here, released at once.
            if let Ok(mut connection) = db.get_sqlite_connection_pool().acquire().await
                && let Ok(mut handle) = connection.lock_handle().await
            {
                let interrupt = session.interrupt.clone();
                handle.set_progress_handler(SQLITE_PROGRESS_OPS, move || {
                    !interrupt.load(Ordering::Relaxed)
                });
                let _ = session.stop.set(Stop::Interrupt);
            }
            return;
        }
    };
    if let Ok(Some(row)) = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), query))
        .await
        && let Ok(id) = row.try_get::<i64>("", "id")
    {
        let _ = session.stop.set(Stop::Server(id));
    }
}

async fn run_statements(
    source: &datasource::Model,
    kind: DatasourceKind,
    url: &ConnectionUrl,
    statements: &[SqlStatement<'_>],
    transaction: bool,
    session: &Session,
    log: &LogSink,
) -> ExecOutcome {
    let db = match connect(url).await {
        Ok(db) => db,
        Err(e) => {
            let why = match connect_error(kind, url).await {
                Some(why) => why,
                None => e.to_string(),
            };
            return failed(format!(
                "cannot connect to datasource '{}': {}",
                source.name,
                datasources::redact(source, &why)
            ));
        }
    };
    prepare_stop(&db, kind, session).await;
    // On the task's one connection, so the statements that follow are in
    // it; a stopped session is rolled back by the server.
    if transaction {
        if let Err(e) = db.execute_unprepared("BEGIN").await {
            let _ = db.close().await;
            return failed(format!(
                "cannot begin a transaction: {}",
                datasources::redact(source, &database_message(&e, ""))
            ));
        }
        log.line("[datajump] one transaction: every statement takes effect, or none");
    }
    let total = statements.len();
    let mut outcome = ExecOutcome::Success;
    for (index, statement) in statements.iter().enumerate() {
        let number = index + 1;
        log.line(&format!(
            "[datajump] statement {number}/{total}: {}",
            excerpt(statement.text)
        ));
        let result = match statement.kind {
            StatementKind::Rows => query(&db, statement.text, log).await,
            StatementKind::Changes => db.execute_unprepared(statement.text).await.map(|done| {
                let n = done.rows_affected();
                log.line(&format!(
                    "{} row{} affected",
                    thousands(n),
                    if n == 1 { "" } else { "s" }
                ));
            }),
            // Drivers report the previous statement's count for DDL (SQLite)
            // or 0: neither is worth a line.
            StatementKind::Other => db
                .execute_unprepared(statement.text)
                .await
                .map(|_| log.line("done")),
        };
        if let Err(e) = result {
            let message = format!(
                "statement {number} of {total} failed: {}",
                datasources::redact(source, &database_message(&e, statement.text))
            );
            log.line(&format!("[datajump] {message}"));
            outcome = failed(message);
            break;
        }
    }
    if transaction {
        let end = if matches!(outcome, ExecOutcome::Success) {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        match db.execute_unprepared(end).await {
            Ok(_) if end == "COMMIT" => log.line("[datajump] committed"),
            Ok(_) => log.line("[datajump] rolled back: no statement of this attempt took effect"),
            Err(e) => {
                let message = format!(
                    "{end} failed: {}",
                    datasources::redact(source, &database_message(&e, ""))
                );
                log.line(&format!("[datajump] {message}"));
                outcome = failed(message);
            }
        }
    }
    let _ = db.close().await;
    outcome
}

/// The database's own words for an error, without SeaORM's wrapping; a
/// PostgreSQL error says where in `statement` it is (the line and column,
/// not the server's own source line its display ends with), its SQLSTATE,
/// and its detail and hint.
fn database_message(error: &sea_orm::DbErr, statement: &str) -> String {
    if let Some(pg) = postgres_error(error) {
        return postgres_message(pg, statement);
    }
    let text = error.to_string();
    for prefix in [
        "Execution Error: error returned from database: ",
        "Query Error: error returned from database: ",
        "Execution Error: ",
        "Query Error: ",
    ] {
        if let Some(rest) = text.strip_prefix(prefix) {
            return rest.to_owned();
        }
    }
    text
}

/// The PostgreSQL error inside a SeaORM error, if that is what it is.
fn postgres_error(error: &sea_orm::DbErr) -> Option<&sea_orm::sqlx::postgres::PgDatabaseError> {
    use sea_orm::{DbErr, RuntimeErr};
    let (DbErr::Exec(RuntimeErr::SqlxError(sqlx)) | DbErr::Query(RuntimeErr::SqlxError(sqlx))) =
        error
    else {
        return None;
    };
    match sqlx.as_ref() {
        sea_orm::sqlx::Error::Database(db) => db.try_downcast_ref(),
        _ => None,
    }
}

fn postgres_message(pg: &sea_orm::sqlx::postgres::PgDatabaseError, statement: &str) -> String {
    use sea_orm::sqlx::postgres::PgErrorPosition;
    let mut text = format!("{} (SQLSTATE {})", pg.message(), pg.code());
    if let Some(PgErrorPosition::Original(position)) = pg.position() {
        // A 1-based position in characters.
        let before: String = statement.chars().take(position.saturating_sub(1)).collect();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let near: String = statement
            .chars()
            .skip(position.saturating_sub(1))
            .take(30)
            .take_while(|c| *c != '\n')
            .collect();
        text.push_str(&format!(
            " at line {line}, column {column} of the statement, near \"{near}\""
        ));
    }
    if let Some(detail) = pg.detail() {
        text.push_str(&format!("; detail: {detail}"));
    }
    if let Some(hint) = pg.hint() {
        text.push_str(&format!("; hint: {hint}"));
    }
    text
}

/// Runs a row-returning statement: logs the first [`MAX_ROWS`] rows as a
/// table and counts the rest.
async fn query(db: &DatabaseConnection, sql: &str, log: &LogSink) -> Result<(), sea_orm::DbErr> {
    let mut stream = db
        .stream_raw(Statement::from_string(db.get_database_backend(), sql))
        .await?;
    let mut table = Table::default();
    let mut count: u64 = 0;
    while let Some(row) = stream.next().await {
        let row = row?;
        count += 1;
        if table.rows.len() < MAX_ROWS {
            table.push(&row)?;
        }
    }
    drop(stream);
    for line in table.render() {
        log.line(&line);
    }
    log.line(&match count {
        1 => "(1 row)".to_owned(),
        n if n as usize <= MAX_ROWS => format!("({} rows)", thousands(n)),
        n => format!("({MAX_ROWS} of {} rows shown)", thousands(n)),
    });
    Ok(())
}

/// A result's first rows, as text.
#[derive(Default)]
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn push(&mut self, row: &QueryResult) -> Result<(), sea_orm::DbErr> {
        if self.columns.is_empty() {
            self.columns = row.column_names();
        }
        let json = JsonValue::from_query_result(row, "")?;
        let mut cells = Vec::with_capacity(self.columns.len());
        for (index, column) in self.columns.iter().enumerate() {
            // JSON objects have one value per name: a repeated name (`a.id`,
            // `b.id`) is read by position instead.
            let repeated = self.columns.iter().filter(|c| *c == column).count() > 1;
            let value = if repeated {
                by_index(row, index)
            } else {
                json.get(column).cloned().or_else(|| by_index(row, index))
            };
            cells.push(match value {
                Some(value) => cell(&value),
                None => format!("<{}>", type_name(row, index)),
            });
        }
        self.rows.push(cells);
        Ok(())
    }

    /// Header, rule and rows, each column as wide as its widest cell.
    fn render(&self) -> Vec<String> {
        if self.columns.is_empty() {
            return Vec::new();
        }
        let header: Vec<String> = self.columns.iter().map(|c| clip(c)).collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            padded.join(" | ").trim_end().to_owned()
        };
        let mut lines = vec![line(&header)];
        lines.push(
            widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("-+-"),
        );
        lines.extend(self.rows.iter().map(|row| line(row)));
        lines
    }
}

/// A column's value read by position, for the types SeaORM can read.
fn by_index(row: &QueryResult, index: usize) -> Option<JsonValue> {
    macro_rules! try_type {
        ($($t:ty),*) => {
            $(
                if let Ok(value) = row.try_get_by_index::<Option<$t>>(index) {
                    return Some(serde_json::json!(value));
                }
            )*
        };
    }
    try_type!(
        i64,
        u64,
        i32,
        i16,
        f64,
        f32,
        sea_orm::prelude::Decimal,
        bool,
        String,
        chrono::NaiveDate,
        chrono::NaiveTime,
        chrono::NaiveDateTime,
        chrono::DateTime<chrono::Utc>,
        serde_json::Value,
        sea_orm::prelude::Uuid,
        Vec<u8>
    );
    None
}

/// The database's name for a column's type, for values that cannot be shown.
fn type_name(row: &QueryResult, index: usize) -> String {
    use sea_orm::sqlx::{Column, Row, TypeInfo};
    let name = if let Some(row) = row.try_as_pg_row() {
        row.columns()
            .get(index)
            .map(|c| c.type_info().name().to_owned())
    } else if let Some(row) = row.try_as_mysql_row() {
        row.columns()
            .get(index)
            .map(|c| c.type_info().name().to_owned())
    } else if let Some(row) = row.try_as_sqlite_row() {
        row.columns()
            .get(index)
            .map(|c| c.type_info().name().to_owned())
    } else {
        None
    };
    name.unwrap_or_else(|| "?".to_owned())
}

/// A value as a table cell: NULL for null, strings without quotes, one line.
fn cell(value: &JsonValue) -> String {
    let text = match value {
        JsonValue::Null => return "NULL".to_owned(),
        JsonValue::String(s) => s.clone(),
        other => other.to_string(),
    };
    clip(&text)
}

/// One line of at most [`MAX_CELL`] characters.
fn clip(text: &str) -> String {
    let one_line = text
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t");
    if one_line.chars().count() <= MAX_CELL {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(MAX_CELL - 1).collect();
    cut.push('…');
    cut
}

/// A statement on one line, cut to [`STATEMENT_EXCERPT`] characters.
fn excerpt(statement: &str) -> String {
    let one_line = statement.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= STATEMENT_EXCERPT {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(STATEMENT_EXCERPT).collect();
    cut.push('…');
    cut
}

/// `2345` as `2,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// Stops the statement a timeout or kill abandons, so it does not go on
/// running (and holding locks) on its own: terminates the server session
/// (PostgreSQL, MySQL) from a second connection, or interrupts SQLite.
async fn stop(
    source: &datasource::Model,
    kind: DatasourceKind,
    url: &ConnectionUrl,
    session: &Session,
    log: &LogSink,
) {
    let id = match session.stop.get() {
        None => return,
        Some(Stop::Interrupt) => {
            session.interrupt.store(true, Ordering::Relaxed);
            log.line("[datajump] SQLite statement interrupted");
            return;
        }
        Some(Stop::Server(id)) => *id,
    };
    let sql = match kind {
        DatasourceKind::Postgresql => format!("SELECT pg_terminate_backend({id})"),
        DatasourceKind::Mysql => format!("KILL {id}"),
        DatasourceKind::Sqlite => return,
    };
    let stopped = async {
        let db = connect(url).await?;
        let done = db.execute_unprepared(&sql).await;
        let _ = db.close().await;
        done
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, stopped).await {
        Ok(Ok(_)) => log.line(&format!("[datajump] server session {id} terminated")),
        Ok(Err(e)) => log.line(&format!(
            "[datajump] could not terminate server session {id}: {}",
            datasources::redact(source, &database_message(&e, ""))
        )),
        Err(_) => log.line(&format!(
            "[datajump] could not terminate server session {id}: no answer within {}s",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

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

    #[test]
    fn tables_show_null_and_cut_long_cells() {
        let table = Table {
            columns: vec!["id".to_owned(), "name".to_owned()],
            rows: vec![
                vec!["1".to_owned(), cell(&JsonValue::Null)],
                vec!["22".to_owned(), cell(&serde_json::json!("a\nb"))],
            ],
        };
        assert_eq!(
            table.render(),
            ["id | name", "---+-----", "1  | NULL", "22 | a\\nb"]
        );
        let long = cell(&serde_json::json!("x".repeat(200)));
        assert_eq!(long.chars().count(), MAX_CELL);
        assert!(long.ends_with('…'));
        assert!(Table::default().render().is_empty());
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2345), "2,345");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn statements_are_logged_on_one_line_and_cut() {
        assert_eq!(excerpt("select\n  1,\n\t2"), "select 1, 2");
        let long = excerpt(&format!("select '{}'", "y".repeat(500)));
        assert_eq!(long.chars().count(), STATEMENT_EXCERPT + 1);
    }
}
