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
//! held in memory, and only the first [`results::MAX_ROWS`] are formatted into the log.
//! On timeout or kill the server-side session is terminated too (PostgreSQL
//! and MySQL; SQLite's statement is interrupted), so an abandoned statement
//! does not keep running and holding locks while a retry starts.

mod results;
mod split;
mod sqlite;

use datajump_shared::problem::Reason;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use datajump_shared::content::SqlContent;
use datajump_shared::datasources::{self, ConnectionUrl};
use datajump_shared::entities::datasource;
use datajump_shared::kinds::DatasourceKind;
use datajump_shared::params::Mode;
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, Statement};

use super::{ExecContext, ExecOutcome, LogSink};
pub use sqlite::DATASOURCES_FOLDER;

use results::{query, thousands};
use split::{SqlStatement, StatementKind, split};

/// A statement is logged up to this many characters.
const STATEMENT_EXCERPT: usize = 200;
/// SQLite virtual machine steps between checks for an interrupt.
const SQLITE_PROGRESS_OPS: i32 = 1000;
/// How long connecting to a datasource may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

fn failed(message: String) -> ExecOutcome {
    ExecOutcome::Failed {
        exit_code: None,
        reason: Reason::Said(message),
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
    let dialect = source.kind.dialect();
    let sql = ctx
        .params
        .substitute(sql, Mode::Sql(dialect))
        .map_err(|e| ExecOutcome::Invalid(e.to_string()))?;
    let (source, checked) = sqlite_checked(source, &split(&sql, dialect), ctx).await?;
    let url = datasources::connection_url(&source)
        .map_err(|e| ExecOutcome::Invalid(format!("datasource '{name}': {e}")))?;
    log.line(&format!(
        "[datajump] datasource '{name}' ({}): {url}",
        source.kind
    ));
    let db = connect(&url)
        .await
        .map_err(|e| failed(format!("cannot connect to '{name}': {e}")))?;
    if let Some(refused) = opened_refusal(name, checked.as_ref()) {
        let _ = db.close().await;
        return Err(refused);
    }
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
    let dialect = kind.dialect();
    let sql = match ctx.params.substitute(sql, Mode::Sql(dialect)) {
        Ok(sql) => sql,
        Err(e) => return ExecOutcome::Invalid(e.to_string()),
    };
    let statements = split(&sql, dialect);
    if statements.is_empty() {
        return ExecOutcome::Invalid("the SQL has no statement to run".to_owned());
    }
    let (source, checked) = match sqlite_checked(source, &statements, ctx).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    let url = match datasources::connection_url(&source) {
        Ok(url) => url,
        Err(e) => return ExecOutcome::Invalid(format!("datasource '{name}': {e}")),
    };
    log.line(&format!("[datajump] datasource '{name}' ({kind}): {url}"));

    let session = Session::default();
    let work = run_statements(
        &source,
        checked.as_ref(),
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

/// What [`sqlite`] refuses of `statements` on `source`, as the attempt's
/// outcome, or the datasource to connect to: for SQLite, with its file
/// pinned to the checked path, and that file to check again once opened.
async fn sqlite_checked(
    source: datasource::Model,
    statements: &[SqlStatement<'_>],
    ctx: &ExecContext,
) -> Result<(datasource::Model, Option<sqlite::CheckedFile>), ExecOutcome> {
    if source.kind != DatasourceKind::Sqlite {
        return Ok((source, None));
    }
    let total = statements.len();
    for (index, statement) in statements.iter().enumerate() {
        if let Some(why) = sqlite::refusal(statement.text) {
            return Err(ExecOutcome::Invalid(format!(
                "statement {} of {total}: {why}",
                index + 1
            )));
        }
    }
    let guard = sqlite::Guard::new(&ctx.db, ctx.data_folder.as_deref()).await;
    let checked = sqlite::check_file(&source, guard, &ctx.process)
        .await
        .map_err(ExecOutcome::Invalid)?;
    let pinned = checked.pin(&source).map_err(ExecOutcome::Invalid)?;
    Ok((pinned, Some(checked)))
}

/// Why the SQLite file just opened may not be used, as the outcome: see
/// [`sqlite::CheckedFile::opened_problem`].
fn opened_refusal(name: &str, checked: Option<&sqlite::CheckedFile>) -> Option<ExecOutcome> {
    checked?.opened_problem(name).map(ExecOutcome::Invalid)
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
/// check. One direct connection, not a pool: a pool retries a refused
/// connection until its timeout, so a mistyped port would take 15 s to
/// report. The error is the driver's reason, passwords redacted.
pub async fn check_datasource(source: &datasource::Model) -> Result<(), String> {
    use sea_orm::sqlx::{Connection, Executor, MySqlConnection, PgConnection, SqliteConnection};
    let url = datasources::connection_url(source).map_err(|e| e.to_string())?;
    let probe = async {
        match source.kind {
            DatasourceKind::Postgresql => {
                let mut connection = PgConnection::connect(url.expose()).await?;
                connection.execute("SELECT 1").await?;
                connection.close().await
            }
            DatasourceKind::Mysql => {
                let mut connection = MySqlConnection::connect(url.expose()).await?;
                connection.execute("SELECT 1").await?;
                connection.close().await
            }
            DatasourceKind::Sqlite => {
                let mut connection = SqliteConnection::connect(url.expose()).await?;
                connection.execute("SELECT 1").await?;
                connection.close().await
            }
        }
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, probe).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(datasources::redact(source, &e.to_string())),
        Err(_) => Err(format!(
            "no answer within {}s (connecting and `SELECT 1`)",
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
    checked: Option<&sqlite::CheckedFile>,
    url: &ConnectionUrl,
    statements: &[SqlStatement<'_>],
    transaction: bool,
    session: &Session,
    log: &LogSink,
) -> ExecOutcome {
    let kind = source.kind;
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
    if let Some(refused) = opened_refusal(&source.name, checked) {
        let _ = db.close().await;
        return refused;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_logged_on_one_line_and_cut() {
        assert_eq!(excerpt("select\n  1,\n\t2"), "select 1, 2");
        let long = excerpt(&format!("select '{}'", "y".repeat(500)));
        assert_eq!(long.chars().count(), STATEMENT_EXCERPT + 1);
    }
}
