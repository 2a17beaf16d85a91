//! The SQL and HTTP executors against real services: PostgreSQL and MariaDB
//! on this machine (127.0.0.1:5432 user postgres, 127.0.0.1:3306 root), a
//! SQLite file, and an HTTP server started by each test on a free port; the
//! SPARK and FLINK executors against recording `spark-submit`, `flink`,
//! `yarn` and `kubectl` stubs that print what a real cluster submission
//! prints (real Spark and Flink runs are in the e2e suite's `bigdata::`).
//!
//! Each PostgreSQL test works in its own database `dj_exec_test_<uuid>` and
//! each MariaDB test in its own tables of `test` (random suffix); both are
//! dropped when the test ends, even when it fails. The scheduler's own
//! database (where datasources are stored) is a temporary SQLite file.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{NaiveDate, TimeZone, Utc};
use datajump_migrations::{Migrator, MigratorTrait};
use datajump_runner::executor::{Cgroups, ExecContext, ExecOutcome, LogSink, TaskProcess, execute};
use datajump_shared::content::{TaskContent, TaskType};
use datajump_shared::dag_file::DEFAULT_PROJECT;
use datajump_shared::datasources::{DatasourceError, NewDatasource};
use datajump_shared::kinds::DatasourceKind;
use datajump_shared::network::{Caller, NetworkPolicy};
use datajump_shared::params::ParamContext;
use datajump_store::datasources;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const PG_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// The scheduler's database: a migrated temporary SQLite file.
struct Scheduler {
    db: DatabaseConnection,
    dir: tempfile::TempDir,
}

impl Scheduler {
    /// The database file.
    fn file(&self) -> std::path::PathBuf {
        self.dir.path().join("dj.db")
    }
}

async fn scheduler() -> Scheduler {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("dj.db").display());
    let (db, ()) =
        datajump_store::db::connect_migrated(&url, async |db| Migrator::up(db, None).await)
            .await
            .expect("a migrated scheduler database");
    Scheduler { db, dir }
}

fn params(extra: &[(&str, &str)]) -> ParamContext {
    ParamContext {
        biz_date: NaiveDate::from_ymd_opt(2024, 1, 14).expect("date"),
        logical_time: Utc.with_ymd_and_hms(2024, 1, 15, 2, 0, 0).unwrap(),
        time_zone: chrono_tz::UTC,
        run_id: 7,
        task_name: "load".to_owned(),
        params: extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        untrusted: Default::default(),
    }
}

/// What an execution ended as, and its whole log.
struct Ran {
    outcome: ExecOutcome,
    log: String,
    took: Duration,
}

struct Run {
    task_type: &'static str,
    content: Value,
    params: ParamContext,
    timeout: Duration,
    cancel: CancellationToken,
    network: NetworkPolicy,
    env: BTreeMap<String, String>,
    process: Arc<TaskProcess>,
    cgroups: Option<Arc<Cgroups>>,
    data_folder: Option<Arc<std::path::Path>>,
}

impl Run {
    fn new(task_type: &'static str, content: Value) -> Run {
        Run {
            task_type,
            content,
            params: params(&[]),
            timeout: Duration::from_secs(60),
            cancel: CancellationToken::new(),
            network: NetworkPolicy::default(),
            env: BTreeMap::new(),
            process: Arc::default(),
            // As a runner does: a control group per attempt where it may.
            cgroups: Cgroups::open().ok().map(Arc::new),
            data_folder: None,
        }
    }

    /// Without control groups, as a runner that may not create them.
    fn without_cgroups(mut self) -> Run {
        self.cgroups = None;
        self
    }

    /// Task processes start as `process` says (`--task-user`).
    fn process(mut self, process: TaskProcess) -> Run {
        self.process = Arc::new(process);
        self
    }

    /// On a runner whose data folder is `folder` (`--data-dir`).
    fn data_folder(mut self, folder: &std::path::Path) -> Run {
        self.data_folder = Some(Arc::from(folder));
        self
    }

    /// Variables of the attempt's own environment (over the runner's).
    fn env(mut self, env: &[(&str, &str)]) -> Run {
        self.env
            .extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        self
    }

    fn network(mut self, network: NetworkPolicy) -> Run {
        self.network = network;
        self
    }

    fn params(mut self, extra: &[(&str, &str)]) -> Run {
        self.params = params(extra);
        self
    }

    /// Params that came from a trigger or an event, over the others.
    fn untrusted(mut self, extra: &[(&str, &str)]) -> Run {
        for (name, value) in extra {
            self.params
                .params
                .insert((*name).to_owned(), (*value).to_owned());
            self.params.untrusted.insert((*name).to_owned());
        }
        self
    }

    fn timeout(mut self, timeout: Duration) -> Run {
        self.timeout = timeout;
        self
    }

    /// Runs the task as a runner does: its content parsed first (a
    /// content that does not read is an invalid attempt), then executed.
    async fn on(self, db: &DatabaseConnection) -> Ran {
        let task_type = TaskType::parse(self.task_type).expect("a task type");
        let content = match TaskContent::parse(task_type, &self.content) {
            Ok(content) => content,
            Err(e) => {
                return Ran {
                    outcome: ExecOutcome::Invalid(format!("the task's content: {e}")),
                    log: String::new(),
                    took: Duration::ZERO,
                };
            }
        };
        let ctx = ExecContext {
            content,
            params: self.params,
            env: self.env,
            process: self.process,
            network: Arc::new(self.network),
            data_folder: self.data_folder,
            lease: Arc::default(),
            cgroups: self.cgroups,
            db: db.clone(),
            project_id: DEFAULT_PROJECT,
            timeout: self.timeout,
            cancel: self.cancel,
        };
        let sink = LogSink::new(None, datajump_runner::executor::DEFAULT_MAX_LOG_BYTES);
        let start = Instant::now();
        let outcome = execute(&ctx, &sink).await;
        let took = start.elapsed();
        let finished = sink.finish();
        // A log the tail holds whole has no separate full copy.
        let log = match finished.full {
            Some(full) => std::fs::read_to_string(full.path()).expect("log"),
            None => finished.tail,
        };
        Ran { outcome, log, took }
    }
}

fn assert_success(ran: &Ran) {
    assert_eq!(ran.outcome, ExecOutcome::Success, "log:\n{}", ran.log);
}

fn failed_message(ran: &Ran) -> String {
    match &ran.outcome {
        ExecOutcome::Failed { reason, .. } => reason.text(),
        other => panic!("expected Failed, got {other:?}; log:\n{}", ran.log),
    }
}

fn invalid_message(ran: &Ran) -> &str {
    match &ran.outcome {
        ExecOutcome::Invalid(message) => message,
        other => panic!("expected Invalid, got {other:?}; log:\n{}", ran.log),
    }
}

fn datasource(name: &str, kind: DatasourceKind, host: &str) -> NewDatasource {
    NewDatasource {
        name: name.to_owned(),
        kind,
        host: host.to_owned(),
        port: None,
        database: None,
        username: None,
        password: None,
        params: BTreeMap::new(),
    }
}

async fn scalar(db: &DatabaseConnection, sql: &str) -> Option<sea_orm::QueryResult> {
    db.query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .expect(sql)
}

async fn exec(db: &DatabaseConnection, sql: &str) {
    db.execute_unprepared(sql).await.expect(sql);
}

fn suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// Runs `sql` on a fresh runtime in a fresh thread: for cleanup in `Drop`.
fn run_blocking(url: String, sql: String) {
    let _ = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            if let Ok(db) = Database::connect(url).await {
                let _ = db.execute_unprepared(&sql).await;
                let _ = db.close().await;
            }
        });
    })
    .join();
}

/// A PostgreSQL database of its own, dropped on drop.
struct PgDatabase {
    name: String,
    /// A connection to it, for checking what the task did.
    db: DatabaseConnection,
}

impl PgDatabase {
    async fn create() -> PgDatabase {
        let name = format!("dj_exec_test_{}", suffix());
        let admin = Database::connect(PG_ADMIN_URL)
            .await
            .expect("PostgreSQL at 127.0.0.1:5432");
        exec(&admin, &format!("CREATE DATABASE {name}")).await;
        admin.close().await.expect("close");
        let db = Database::connect(format!("postgres://postgres@127.0.0.1:5432/{name}"))
            .await
            .expect("connect to test database");
        PgDatabase { name, db }
    }

    fn datasource(&self, name: &str) -> NewDatasource {
        let mut ds = datasource(name, DatasourceKind::Postgresql, "127.0.0.1");
        ds.port = Some(5432);
        ds.database = Some(self.name.clone());
        ds.username = Some("postgres".to_owned());
        // Trust authentication ignores it; it must still never be shown.
        ds.password = Some("pa55-W0rd:secret".to_owned());
        ds
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        run_blocking(
            PG_ADMIN_URL.to_owned(),
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// MariaDB tables with a random suffix in `test`, dropped on drop.
struct MyTables {
    suffix: String,
    db: DatabaseConnection,
}

impl MyTables {
    async fn create() -> MyTables {
        let db = Database::connect(MYSQL_URL)
            .await
            .expect("MariaDB at 127.0.0.1:3306");
        MyTables {
            suffix: suffix(),
            db,
        }
    }

    fn name(&self, base: &str) -> String {
        format!("{base}_{}", self.suffix)
    }

    fn datasource(&self, name: &str) -> NewDatasource {
        let mut ds = datasource(name, DatasourceKind::Mysql, "127.0.0.1");
        ds.port = Some(3306);
        ds.database = Some("test".to_owned());
        ds.username = Some("root".to_owned());
        ds
    }
}

impl Drop for MyTables {
    fn drop(&mut self) {
        let s = &self.suffix;
        run_blocking(
            MYSQL_URL.to_owned(),
            format!("DROP TABLE IF EXISTS people_{s}, numbers_{s}, counter_{s}"),
        );
        run_blocking(
            MYSQL_URL.to_owned(),
            format!("DROP PROCEDURE IF EXISTS bump_{s}"),
        );
    }
}

// ---------------------------------------------------------------- catalog

#[tokio::test]
async fn datasource_catalog_add_list_remove() {
    let s = scheduler().await;
    let mut pg = datasource("warehouse", DatasourceKind::Postgresql, "db.internal");
    pg.password = Some("hunter2".to_owned());
    let row = datasources::add(&s.db, DEFAULT_PROJECT, pg.clone())
        .await
        .expect("add");
    assert_eq!(row.kind, DatasourceKind::Postgresql);
    assert!(!format!("{row:?}").contains("hunter2"));
    assert!(matches!(
        datasources::add(&s.db, DEFAULT_PROJECT, pg).await,
        Err(DatasourceError::Exists(name)) if name == "warehouse"
    ));
    datasources::add(
        &s.db,
        DEFAULT_PROJECT,
        datasource("local", DatasourceKind::Sqlite, "/tmp/x.db"),
    )
    .await
    .expect("add sqlite");
    let names: Vec<String> = datasources::list(&s.db)
        .await
        .expect("list")
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["local", "warehouse"]);
    let url = datajump_shared::datasources::connection_url(
        &datasources::by_name(&s.db, "warehouse")
            .await
            .expect("get")
            .expect("found"),
    )
    .expect("url");
    assert_eq!(url.to_string(), "postgres://db.internal");
    datasources::remove(&s.db, "warehouse")
        .await
        .expect("remove");
    assert!(matches!(
        datasources::remove(&s.db, "warehouse").await,
        Err(DatasourceError::NotFound(_))
    ));
    assert!(
        datasources::by_name(&s.db, "warehouse")
            .await
            .expect("get")
            .is_none()
    );
}

// ------------------------------------------------------------- PostgreSQL

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_script_with_literals_dollar_quotes_params_and_a_cut_result() {
    let s = scheduler().await;
    let pg = PgDatabase::create().await;
    datasources::add(&s.db, DEFAULT_PROJECT, pg.datasource("pg"))
        .await
        .expect("add");
    let sql = r#"
        -- people; with a semicolon in this comment
        CREATE TABLE people (id int PRIMARY KEY, name text, note text, amount numeric(10,2));
        INSERT INTO people VALUES (1, 'a;b', 'it''s; fine', 1.50), (2, ${who:literal}, NULL, 2.25);
        CREATE FUNCTION shout(t text) RETURNS text AS $fn$
        BEGIN
            RETURN upper(t) || '; done';  -- a ; inside the body
        END
        $fn$ LANGUAGE plpgsql;
        UPDATE people SET note = shout('x') WHERE id <= 2;
        SELECT id, name, note, amount FROM people ORDER BY id;
        SELECT g AS n, g * 2 AS twice FROM generate_series(1, 150) AS g;
        SELECT p.id, q.id FROM people p JOIN people q ON q.id = 3 - p.id ORDER BY p.id;
        SELECT 1 AS nothing WHERE false;
        SELECT sum(amount) AS total, '${bizdate}' AS day FROM people;
    "#;
    let who = "O'Brien\"; DROP TABLE people; --";
    let ran = Run::new("SQL", json!({ "sql": sql, "datasource": "pg" }))
        .params(&[("who", who)])
        .on(&s.db)
        .await;
    assert_success(&ran);
    let log = &ran.log;
    assert!(!log.contains("pa55"), "password in the log:\n{log}");
    assert!(
        log.contains("postgres://postgres:***@127.0.0.1:5432/"),
        "{log}"
    );
    assert!(
        log.contains("[datajump] statement 1/9: CREATE TABLE people"),
        "{log}"
    );
    assert!(log.contains("2 rows affected"), "{log}");
    // The first table, with NULL gone after the UPDATE and the quoted name whole.
    assert!(log.contains("O'Brien\"; DROP TABLE people; --"), "{log}");
    assert!(log.contains("X; done"), "{log}");
    assert!(log.contains("(100 of 150 rows shown)"), "{log}");
    assert!(log.contains("100 | 200"), "{log}");
    assert!(!log.contains("101 | 202"), "{log}");
    // Repeated column names are read by position.
    let joined: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("1  | 2") || l.starts_with("2  | 1"))
        .collect();
    assert_eq!(joined.len(), 2, "{log}");
    assert!(log.contains("(0 rows)"), "{log}");
    assert!(log.contains("3.75"), "numeric sum shown:\n{log}");
    assert!(log.contains("2024-01-14"), "{log}");

    let row = scalar(&pg.db, "SELECT name FROM people WHERE id = 2")
        .await
        .expect("row");
    assert_eq!(row.try_get::<String>("", "name").expect("name"), who);
}

#[tokio::test]
async fn postgres_first_failing_statement_fails_the_task_and_stops() {
    let s = scheduler().await;
    let pg = PgDatabase::create().await;
    datasources::add(&s.db, DEFAULT_PROJECT, pg.datasource("pg"))
        .await
        .expect("add");
    let ran = Run::new(
        "SQL",
        json!({ "datasource": "pg", "sql": "CREATE TABLE a (x int); INSERT INTO missing VALUES (1); INSERT INTO a VALUES (1)" }),
    )
    .on(&s.db)
    .await;
    let message = failed_message(&ran);
    assert!(message.contains("statement 2 of 3"), "{message}");
    assert!(
        message.contains(
            "relation \"missing\" does not exist (SQLSTATE 42P01) at line 1, column 13 of the \
             statement, near \"missing VALUES (1)\""
        ),
        "{message}"
    );
    assert_eq!(ran.outcome.exit_code(), None);
    assert!(!ran.log.contains("statement 3/3"), "{}", ran.log);
    let row = scalar(&pg.db, "SELECT count(*)::bigint AS n FROM a")
        .await
        .expect("row");
    assert_eq!(row.try_get::<i64>("", "n").expect("n"), 0);
}

#[tokio::test]
async fn statements_in_one_transaction_take_effect_together_or_not_at_all() {
    let s = scheduler().await;
    let pg = PgDatabase::create().await;
    datasources::add(&s.db, DEFAULT_PROJECT, pg.datasource("pg"))
        .await
        .expect("add");
    let sql = "CREATE TABLE t (x int); INSERT INTO t VALUES (1); INSERT INTO missing VALUES (1)";
    let ran = Run::new(
        "SQL",
        json!({ "datasource": "pg", "sql": sql, "transaction": true }),
    )
    .on(&s.db)
    .await;
    assert!(failed_message(&ran).contains("statement 3 of 3"));
    assert!(
        ran.log
            .contains("rolled back: no statement of this attempt took effect"),
        "{}",
        ran.log
    );
    assert!(
        scalar(&pg.db, "SELECT to_regclass('t')::text AS t")
            .await
            .expect("row")
            .try_get::<Option<String>>("", "t")
            .expect("t")
            .is_none(),
        "the CREATE TABLE of a failed transaction was kept"
    );
    let ran = Run::new(
        "SQL",
        json!({ "datasource": "pg", "sql": "CREATE TABLE t (x int); INSERT INTO t VALUES (1)", "transaction": true }),
    )
    .on(&s.db)
    .await;
    assert_success(&ran);
    assert!(ran.log.contains("[datajump] committed"), "{}", ran.log);
    let row = scalar(&pg.db, "SELECT count(*)::bigint AS n FROM t")
        .await
        .expect("row");
    assert_eq!(row.try_get::<i64>("", "n").expect("n"), 1);
}

#[tokio::test]
async fn a_postgres_error_names_its_place_in_the_statement() {
    let s = scheduler().await;
    let pg = PgDatabase::create().await;
    datasources::add(&s.db, DEFAULT_PROJECT, pg.datasource("pg"))
        .await
        .expect("add");
    let ran = Run::new(
        "SQL",
        json!({ "datasource": "pg", "sql": "SELECT 1;\nSELECT id,\n  nme FROM (SELECT 1 AS id) t" }),
    )
    .on(&s.db)
    .await;
    let message = failed_message(&ran);
    assert!(
        message.contains(
            "statement 2 of 2 failed: column \"nme\" does not exist (SQLSTATE 42703) at line 2, \
             column 3 of the statement, near \"nme FROM (SELECT 1 AS id) t\""
        ),
        "{message}"
    );
}

/// True once `count` gives 0, within 5 s: a terminated session takes a moment to go.
async fn eventually<F, Fut>(count: F) -> bool
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = i64>,
{
    for _ in 0..50 {
        if count().await == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn pg_sleepers(db: &DatabaseConnection, database: &str) -> i64 {
    let sql = format!(
        "SELECT count(*)::bigint AS n FROM pg_stat_activity WHERE datname = '{database}' AND query LIKE 'SELECT pg_sleep(60)%'"
    );
    scalar(db, &sql)
        .await
        .expect("row")
        .try_get::<i64>("", "n")
        .expect("n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_timeout_and_kill_stop_the_statement_on_the_server() {
    let s = scheduler().await;
    let pg = PgDatabase::create().await;
    datasources::add(&s.db, DEFAULT_PROJECT, pg.datasource("pg"))
        .await
        .expect("add");
    let content = json!({ "datasource": "pg", "sql": "SELECT 1; SELECT pg_sleep(60)" });

    let ran = Run::new("SQL", content.clone())
        .timeout(Duration::from_secs(2))
        .on(&s.db)
        .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert!(ran.took < Duration::from_secs(10), "{:?}", ran.took);
    assert!(ran.log.contains("terminated"), "{}", ran.log);
    assert!(
        eventually(|| pg_sleepers(&pg.db, &pg.name)).await,
        "pg_sleep still running"
    );

    let run = Run::new("SQL", content);
    let cancel = run.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        cancel.cancel();
    });
    let ran = run.on(&s.db).await;
    assert_eq!(ran.outcome, ExecOutcome::Cancelled, "{}", ran.log);
    assert!(ran.took < Duration::from_secs(10), "{:?}", ran.took);
    assert!(
        eventually(|| pg_sleepers(&pg.db, &pg.name)).await,
        "pg_sleep still running"
    );
}

#[tokio::test]
async fn unreachable_datasource_fails_retryably_without_the_password() {
    let s = scheduler().await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let mut ds = datasource("gone", DatasourceKind::Postgresql, "127.0.0.1");
    ds.port = Some(port);
    ds.username = Some("u".to_owned());
    ds.password = Some("s3cr3t-pw".to_owned());
    datasources::add(&s.db, DEFAULT_PROJECT, ds)
        .await
        .expect("add");
    let ran = Run::new("SQL", json!({ "datasource": "gone", "sql": "SELECT 1" }))
        .on(&s.db)
        .await;
    let message = failed_message(&ran);
    assert!(message.contains("Connection refused"), "{message}");
    assert!(
        message.contains("cannot connect to datasource 'gone'"),
        "{message}"
    );
    assert!(
        !message.contains("s3cr3t") && !ran.log.contains("s3cr3t"),
        "{message}\n{}",
        ran.log
    );
}

#[tokio::test]
async fn sql_parameters_and_datasources_fail_fast() {
    let s = scheduler().await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("data.db");
    datasources::add(
        &s.db,
        DEFAULT_PROJECT,
        datasource("lite", DatasourceKind::Sqlite, &file.display().to_string()),
    )
    .await
    .expect("add");

    // A quote-containing value cannot go bare into SQL.
    let ran = Run::new(
        "SQL",
        json!({ "datasource": "lite", "sql": "SELECT ${who}" }),
    )
    .params(&[("who", "x' OR '1'='1")])
    .on(&s.db)
    .await;
    assert!(
        invalid_message(&ran).contains("${who}"),
        "{:?}",
        ran.outcome
    );

    let ran = Run::new(
        "SQL",
        json!({ "datasource": "lite", "sql": "SELECT ${nope}" }),
    )
    .on(&s.db)
    .await;
    assert!(
        invalid_message(&ran).contains("${nope}"),
        "{:?}",
        ran.outcome
    );

    let ran = Run::new("SQL", json!({ "datasource": "nowhere", "sql": "SELECT 1" }))
        .on(&s.db)
        .await;
    assert!(
        invalid_message(&ran).contains("'nowhere'"),
        "{:?}",
        ran.outcome
    );

    let ran = Run::new(
        "SQL",
        json!({ "datasource": "lite", "sql": "-- only a comment" }),
    )
    .on(&s.db)
    .await;
    invalid_message(&ran);
    // Nothing ran: the file was not even created.
    assert!(!file.exists());
}

// ---------------------------------------------------------------- MariaDB

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_script_with_escapes_procedure_show_and_a_cut_result() {
    let s = scheduler().await;
    let my = MyTables::create().await;
    datasources::add(&s.db, DEFAULT_PROJECT, my.datasource("maria"))
        .await
        .expect("add");
    let (people, numbers, counter, bump) = (
        my.name("people"),
        my.name("numbers"),
        my.name("counter"),
        my.name("bump"),
    );
    let sql = format!(
        r#"
        CREATE TABLE {people} (id INT PRIMARY KEY, name VARCHAR(100), note TEXT, amount DECIMAL(10,2));
        # a MySQL comment; with a semicolon
        INSERT INTO {people} VALUES (1, 'a;b', 'it\'s; \\fine', 1.50), (2, ${{who:literal}}, NULL, 2.25);
        CREATE TABLE {numbers} (n INT);
        INSERT INTO {numbers} WITH RECURSIVE seq AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM seq WHERE n < 150) SELECT n FROM seq;
        CREATE TABLE {counter} (n INT);
        INSERT INTO {counter} VALUES (0);
        CREATE PROCEDURE {bump}(times INT)
        BEGIN
            DECLARE i INT DEFAULT 0;
            WHILE i < times DO
                UPDATE {counter} SET n = n + 1;
                SET i = i + 1;
            END WHILE;
            IF times > 100 THEN SELECT 'many;'; END IF;
        END;
        CALL {bump}(3);
        SELECT id, name, note, amount FROM {people} ORDER BY id;
        SELECT n, n * 2 AS twice FROM {numbers} ORDER BY n;
        SHOW TABLES LIKE '{people}';
        DESCRIBE {people};
        SELECT n FROM {counter};
        "#
    );
    let who = r#"O'Brien\"; DROP TABLE x; --"#;
    let ran = Run::new("SQL", json!({ "sql": sql, "datasource": "maria" }))
        .params(&[("who", who)])
        .on(&s.db)
        .await;
    assert_success(&ran);
    let log = &ran.log;
    assert!(log.contains("mysql://root@127.0.0.1:3306/test"), "{log}");
    assert!(log.contains("2 rows affected"), "{log}");
    assert!(log.contains("150 rows affected"), "{log}");
    assert!(
        log.contains(r"it's; \\fine"),
        "backslash shown escaped in the table:\n{log}"
    );
    assert!(log.contains("(100 of 150 rows shown)"), "{log}");
    assert!(log.contains("100 | 200"), "{log}");
    assert!(log.contains("NULL"), "{log}");
    assert!(log.contains("2.25"), "{log}");
    assert!(
        log.contains(&format!("Tables_in_test ({people})")),
        "SHOW shown:\n{log}"
    );
    assert!(log.contains("decimal(10,2)"), "DESCRIBE shown:\n{log}");

    let row = scalar(&my.db, &format!("SELECT name FROM {people} WHERE id = 2"))
        .await
        .expect("row");
    assert_eq!(row.try_get::<String>("", "name").expect("name"), who);
    let row = scalar(&my.db, &format!("SELECT n FROM {counter}"))
        .await
        .expect("row");
    assert_eq!(row.try_get::<i32>("", "n").expect("n"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_failure_and_timeout() {
    let s = scheduler().await;
    let my = MyTables::create().await;
    datasources::add(&s.db, DEFAULT_PROJECT, my.datasource("maria"))
        .await
        .expect("add");
    let people = my.name("people");
    let ran = Run::new(
        "SQL",
        json!({ "datasource": "maria", "sql": format!("CREATE TABLE {people} (id INT); SELEC 1; INSERT INTO {people} VALUES (1)") }),
    )
    .on(&s.db)
    .await;
    let message = failed_message(&ran);
    assert!(message.contains("statement 2 of 3"), "{message}");
    assert!(message.contains("SQL syntax"), "{message}");

    let ran = Run::new(
        "SQL",
        json!({ "datasource": "maria", "sql": "SELECT SLEEP(60)" }),
    )
    .timeout(Duration::from_secs(2))
    .on(&s.db)
    .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert!(ran.took < Duration::from_secs(10), "{:?}", ran.took);
    assert!(ran.log.contains("terminated"), "{}", ran.log);
    let sleepers = || async {
        scalar(
            &my.db,
            "SELECT CAST(COUNT(*) AS SIGNED) AS n FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(60)'",
        )
        .await
        .expect("row")
        .try_get::<i64>("", "n")
        .expect("n")
    };
    assert!(eventually(sleepers).await, "SLEEP still running");
}

// ----------------------------------------------------------------- SQLite

#[tokio::test]
async fn sqlite_script_with_a_trigger_body() {
    let s = scheduler().await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("data.db");
    // The datasource opens an existing file; it never creates one.
    std::fs::File::create(&file).expect("create file");
    datasources::add(
        &s.db,
        DEFAULT_PROJECT,
        datasource("lite", DatasourceKind::Sqlite, &file.display().to_string()),
    )
    .await
    .expect("add");
    let sql = r#"
        CREATE TABLE [order items] (id INTEGER PRIMARY KEY, label TEXT, qty INTEGER);
        CREATE TABLE audit (n INTEGER);
        INSERT INTO audit VALUES (0);
        CREATE TRIGGER count_items AFTER INSERT ON [order items]
        BEGIN
            UPDATE audit SET n = n + 1;
            UPDATE audit SET n = n + CASE WHEN NEW.qty > 1 THEN 10 ELSE 0 END;
        END;
        INSERT INTO [order items] (label, qty) VALUES ('semi;colon', 1), (${label:literal}, 2), (NULL, NULL);
        SELECT id, label, qty FROM [order items] ORDER BY id;
        SELECT n FROM audit;
        PRAGMA table_info(audit);
        DELETE FROM [order items] WHERE qty IS NULL RETURNING id;
    "#;
    let ran = Run::new("SQL", json!({ "sql": sql, "datasource": "lite" }))
        .params(&[("label", "it's")])
        .on(&s.db)
        .await;
    assert_success(&ran);
    let log = &ran.log;
    assert!(log.contains("3 rows affected"), "{log}");
    assert!(log.contains("semi;colon"), "{log}");
    assert!(log.contains("it's"), "{log}");
    assert!(log.contains("3  | NULL       | NULL"), "{log}");
    assert!(
        log.contains("\n13\n"),
        "trigger ran three times, +10 once:\n{log}"
    );
    assert!(log.contains("(3 rows)"), "{log}");
    assert!(log.contains("(1 row)"), "{log}");

    // A path that does not exist fails (retryably) instead of creating a database.
    datasources::add(
        &s.db,
        DEFAULT_PROJECT,
        datasource(
            "typo",
            DatasourceKind::Sqlite,
            &dir.path().join("nope.db").display().to_string(),
        ),
    )
    .await
    .expect("add");
    let ran = Run::new("SQL", json!({ "sql": "SELECT 1", "datasource": "typo" }))
        .on(&s.db)
        .await;
    failed_message(&ran);
    assert!(!dir.path().join("nope.db").exists());
}

/// A task that leaves a daemon behind holding its output (`setsid`, out of
/// the task's process group) ends when its own process does, not at its
/// timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_holding_the_output_does_not_keep_the_task_running() {
    let s = scheduler().await;
    let dir = tempfile::tempdir().expect("dir");
    let pid_file = dir.path().join("daemon.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {}; while true; do echo tick; sleep 0.1; done' &\nsleep 0.3\necho done",
        pid_file.display()
    );
    let ran = Run::new("SHELL", json!({ "command": script }))
        .timeout(Duration::from_secs(60))
        .without_cgroups()
        .on(&s.db)
        .await;
    let daemon = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|pid| pid.trim().parse::<i32>().ok());
    if let Some(daemon) = daemon {
        // Not the runner's to stop (its own process group): the test's.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(daemon),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_success(&ran);
    assert!(
        ran.took < Duration::from_secs(10),
        "the task ended {:?} after it started",
        ran.took
    );
    assert!(ran.log.contains("done"), "{}", ran.log);
    assert!(ran.log.contains("still holds its output"), "{}", ran.log);
}

/// Whether process `pid` has ended (a zombie nobody reaps has).
fn ended(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        // `pid (comm) S …`: the state follows the last `)`.
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// A process that left its task's process group (`setsid`) ends with the
/// attempt however it ends — success, failure, timeout or kill — because
/// the attempt's control group is killed whole (docs/ARCHITECTURE.md,
/// "Task processes").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_process_of_an_attempt_ends_with_it_even_one_that_left_its_process_group() {
    let cgroups = Cgroups::open().unwrap_or_else(|e| {
        panic!(
            "this test needs cgroup v2 with cgroup.kill, writable by the test's user (root): {e}"
        )
    });
    // Where a task would move itself to leave its group: the runner's own.
    let runners_group = cgroups
        .folder()
        .parent()
        .expect("the runner's group")
        .join("cgroup.procs");
    let s = scheduler().await;
    for (ending, tail, timeout, user) in [
        ("success", "exit 0", Duration::from_secs(60), None),
        ("failure", "exit 3", Duration::from_secs(60), None),
        ("timeout", "sleep 300", Duration::from_secs(2), None),
        ("kill", "sleep 300", Duration::from_secs(60), None),
        ("success", "exit 0", Duration::from_secs(60), Some("nobody")),
    ] {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let pid_file = dir.path().join("escaped.pid");
        // Run as another user, the task also tries to leave its group.
        let leave = match user {
            Some(_) => format!("echo $$ > {} 2>/dev/null; ", runners_group.display()),
            None => String::new(),
        };
        let script = format!(
            "setsid sh -c '{leave}echo $$ > {pid}.tmp; mv {pid}.tmp {pid}; exec sleep 300' </dev/null >/dev/null 2>&1 &\n\
             while [ ! -s {pid} ]; do sleep 0.05; done\n{tail}",
            pid = pid_file.display()
        );
        let run = Run::new("SHELL", json!({ "command": script }))
            .timeout(timeout)
            .process(TaskProcess::new(&[], user).expect("the task user"));
        if ending == "kill" {
            // Killed once the escaped process is there.
            let cancel = run.cancel.clone();
            let escaped = pid_file.clone();
            tokio::spawn(async move {
                while !escaped.exists() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                cancel.cancel();
            });
        }
        let ran = run.on(&s.db).await;
        let escaped: i32 = std::fs::read_to_string(&pid_file)
            .expect("the escaped process wrote its id")
            .trim()
            .parse()
            .expect("a pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ended(escaped) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let survived = !ended(escaped);
        if survived {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(escaped),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        assert!(
            !survived,
            "after the attempt's {ending} as {user:?} ({:?}), process {escaped} that called \
             setsid still runs",
            ran.outcome
        );
        let expected = match ending {
            "success" => matches!(ran.outcome, ExecOutcome::Success),
            "failure" => matches!(
                ran.outcome,
                ExecOutcome::Failed {
                    exit_code: Some(3),
                    ..
                }
            ),
            "kill" => matches!(ran.outcome, ExecOutcome::Cancelled),
            _ => matches!(ran.outcome, ExecOutcome::TimedOut),
        };
        assert!(expected, "{ending}: {:?}\n{}", ran.outcome, ran.log);
    }
}

/// A file sensor looks in the runner's process, with the runner's rights:
/// a trigger must not point it elsewhere, and it may find only what its
/// task user could see (docs/SECURITY.md, "Task processes").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_sensor_sees_only_what_its_task_would() {
    use std::os::unix::fs::PermissionsExt;
    let s = scheduler().await;
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path();
    let mode = |path: &std::path::Path, bits: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).expect("chmod");
    };
    mode(root, 0o755);
    for (folder, bits) in [("public", 0o755), ("private", 0o700)] {
        std::fs::create_dir(root.join(folder)).expect("folder");
        std::fs::write(root.join(folder).join("_SUCCESS"), b"").expect("marker");
        mode(&root.join(folder), bits);
    }
    let sensor =
        |pattern: String| Run::new("SENSOR", json!({ "file": pattern, "mode": "reschedule" }));

    // A trigger's value fills one part of the path, and no more.
    for attack in ["../private", "/etc", "*", "pub[l]ic", ".."] {
        let ran = sensor(format!("{}/${{folder}}/_SUCCESS", root.display()))
            .untrusted(&[("folder", attack)])
            .on(&s.db)
            .await;
        assert!(
            invalid_message(&ran).contains("can only fill one part of a file sensor's path"),
            "{attack}: {:?}",
            ran.outcome
        );
    }
    let ran = sensor(format!("{}/${{folder}}/_SUCCESS", root.display()))
        .untrusted(&[("folder", "public")])
        .on(&s.db)
        .await;
    assert_success(&ran);

    if !nix::unistd::Uid::effective().is_root() {
        return;
    }
    let as_nobody = || TaskProcess::new(&[], Some("nobody")).expect("the nobody user");
    for pattern in [
        format!("{}/private/_SUCCESS", root.display()),
        format!("{}/private/*", root.display()),
        format!("{}/*/_SUCCESS", root.display()).replace("/*/", "/priv*/"),
    ] {
        let ran = sensor(pattern.clone()).process(as_nobody()).on(&s.db).await;
        assert!(
            matches!(ran.outcome, ExecOutcome::NotReady(_)),
            "{pattern}: the task user cannot see into private/: {:?}\n{}",
            ran.outcome,
            ran.log
        );
        // The runner itself (root) finds it: the check is the task user's.
        assert_success(&sensor(pattern).on(&s.db).await);
    }
    let ran = sensor(format!("{}/pub*/_SUCCESS", root.display()))
        .process(as_nobody())
        .on(&s.db)
        .await;
    assert_success(&ran);
}

/// A SQLite datasource runs inside the runner, which can open DataJump's
/// own database: a task of any project tried to mint an admin token there
/// (docs/SECURITY.md, "Datasources").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_task_reaches_no_file_but_its_datasource() {
    use sea_orm::sqlx::{Connection, Executor, SqliteConnection};
    let s = scheduler().await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("data.db");
    std::fs::File::create(&file).expect("create file");
    datasources::add(
        &s.db,
        DEFAULT_PROJECT,
        datasource("lite", DatasourceKind::Sqlite, &file.display().to_string()),
    )
    .await
    .expect("add");
    let own = s.file().display().to_string();
    let tokens = || async {
        scalar(&s.db, "SELECT count(*) AS n FROM api_token")
            .await
            .and_then(|row| row.try_get::<i64>("", "n").ok())
    };
    let before = tokens().await;
    let copy = dir.path().join("copy.db");
    for (sql, refused) in [
        (
            format!(
                "SELECT 1;\nATTACH DATABASE '{own}' AS dj;\nINSERT INTO dj.api_token (name, token_hash, role, created_at) VALUES ('x', 'y', 'admin', '2026-01-01')"
            ),
            "statement 2 of 3: ATTACH and DETACH are not allowed",
        ),
        (
            format!("VACUUM INTO '{}'", copy.display()),
            "VACUUM INTO is not allowed",
        ),
        (
            "SELECT load_extension('/tmp/evil.so')".to_owned(),
            "load_extension() is not allowed",
        ),
    ] {
        let ran = Run::new("SQL", json!({ "sql": sql, "datasource": "lite" }))
            .on(&s.db)
            .await;
        assert!(
            invalid_message(&ran).contains(refused),
            "{sql}: {:?}",
            ran.outcome
        );
    }
    assert_eq!(tokens().await, before, "no token was minted");
    assert!(!copy.exists(), "VACUUM INTO wrote a copy");

    // However a statement is spelled, this build's SQLite attaches nothing:
    // the lexical refusal above is not the only wall.
    let mut probe = SqliteConnection::connect("sqlite::memory:")
        .await
        .expect("in-memory SQLite");
    let attached = probe.execute("ATTACH DATABASE ':memory:' AS other").await;
    assert!(
        attached
            .expect_err("ATTACH must fail in DataJump's SQLite")
            .to_string()
            .contains("too many attached databases"),
    );

    // A datasource that is DataJump's database by another path.
    let linked = dir.path().join("innocent.db");
    std::os::unix::fs::symlink(s.file(), &linked).expect("symlink");
    let hard = dir.path().join("hard.db");
    std::fs::hard_link(s.file(), &hard).expect("hard link");
    for (name, path) in [("linked", &linked), ("hard", &hard)] {
        datasources::add(
            &s.db,
            DEFAULT_PROJECT,
            datasource(name, DatasourceKind::Sqlite, &path.display().to_string()),
        )
        .await
        .expect("add");
        let ran = Run::new(
            "SQL",
            json!({ "sql": "SELECT count(*) FROM api_token", "datasource": name }),
        )
        .on(&s.db)
        .await;
        assert!(
            invalid_message(&ran).contains("is DataJump's own database"),
            "{name}: {:?}",
            ran.outcome
        );
    }

    // A SQL sensor on it is refused the same way: sensors check in the
    // runner too.
    let ran = Run::new(
        "SENSOR",
        json!({ "sql": "SELECT 1 FROM api_token", "datasource": "linked", "mode": "reschedule" }),
    )
    .on(&s.db)
    .await;
    assert!(
        invalid_message(&ran).contains("is DataJump's own database"),
        "{:?}",
        ran.outcome
    );

    // The database's journal files, by their own names.
    let wal = format!("{}-wal", s.file().display());
    datasources::add(
        &s.db,
        DEFAULT_PROJECT,
        NewDatasource {
            params: [("mode".to_owned(), "rwc".to_owned())].into(),
            ..datasource("journal", DatasourceKind::Sqlite, &wal)
        },
    )
    .await
    .expect("add");
    let ran = Run::new(
        "SQL",
        json!({ "sql": "CREATE TABLE t (a)", "datasource": "journal" }),
    )
    .on(&s.db)
    .await;
    assert!(
        invalid_message(&ran).contains("is DataJump's own database"),
        "{:?}",
        ran.outcome
    );

    // The data folder (`--data-dir`: the secret key, the NATS store) is
    // DataJump's whole, but for its `datasources` folder; a link from there
    // back into the rest is refused as the rest is.
    let data = tempfile::tempdir().expect("data folder");
    let ours = data
        .path()
        .join(datajump_runner::executor::DATASOURCES_FOLDER);
    std::fs::create_dir(&ours).expect("datasources folder");
    std::fs::write(data.path().join("secret.key"), b"").expect("a key file");
    std::fs::File::create(ours.join("mine.db")).expect("a datasource file");
    std::os::unix::fs::symlink(data.path().join("secret.key"), ours.join("key.db"))
        .expect("symlink");
    for (name, path, refused) in [
        ("key", data.path().join("secret.key"), true),
        ("key_link", ours.join("key.db"), true),
        ("mine", ours.join("mine.db"), false),
    ] {
        datasources::add(
            &s.db,
            DEFAULT_PROJECT,
            datasource(name, DatasourceKind::Sqlite, &path.display().to_string()),
        )
        .await
        .expect("add");
        let ran = Run::new("SQL", json!({ "sql": "SELECT 1", "datasource": name }))
            .data_folder(data.path())
            .on(&s.db)
            .await;
        if refused {
            assert!(
                invalid_message(&ran).contains("is inside DataJump's data folder"),
                "{name}: {:?}",
                ran.outcome
            );
        } else {
            assert_success(&ran);
        }
    }

    // With a task user, a file that user cannot read is refused, and one it
    // can is opened.
    if nix::unistd::Uid::effective().is_root() {
        use std::os::unix::fs::PermissionsExt;
        let as_nobody = || TaskProcess::new(&[], Some("nobody")).expect("the nobody user");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let ran = Run::new("SQL", json!({ "sql": "SELECT 1", "datasource": "lite" }))
            .process(as_nobody())
            .on(&s.db)
            .await;
        assert!(
            invalid_message(&ran).contains("the task user 'nobody' may not read and write"),
            "{:?}",
            ran.outcome
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let ran = Run::new("SQL", json!({ "sql": "SELECT 1", "datasource": "lite" }))
            .process(as_nobody())
            .on(&s.db)
            .await;
        assert_success(&ran);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_timeout_interrupts_the_statement() {
    let s = scheduler().await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("data.db");
    std::fs::File::create(&file).expect("create file");
    datasources::add(
        &s.db,
        DEFAULT_PROJECT,
        datasource("lite", DatasourceKind::Sqlite, &file.display().to_string()),
    )
    .await
    .expect("add");
    // A write that takes minutes: it holds SQLite's write lock while it counts.
    let sql = "CREATE TABLE t (n INTEGER); INSERT INTO t SELECT count(*) FROM \
               (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT x FROM c)";
    let ran = Run::new("SQL", json!({ "sql": sql, "datasource": "lite" }))
        .timeout(Duration::from_secs(1))
        .on(&s.db)
        .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert!(ran.log.contains("interrupted"), "{}", ran.log);

    // Another writer gets the lock at once: the statement is gone.
    let mut options = sea_orm::ConnectOptions::new(format!("sqlite://{}?mode=rw", file.display()));
    options.map_sqlx_sqlite_opts(|o| o.busy_timeout(Duration::from_secs(3)));
    let other = Database::connect(options).await.expect("connect");
    let start = Instant::now();
    other
        .execute_unprepared("INSERT INTO t VALUES (1)")
        .await
        .expect("the interrupted statement released the write lock");
    assert!(start.elapsed() < Duration::from_secs(3));
}

// ------------------------------------------------------------------- HTTP

/// What the test server saw.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<(String, axum::http::HeaderMap, String)>>>);

impl Seen {
    fn last(&self) -> (String, axum::http::HeaderMap, String) {
        self.0.lock().unwrap().last().cloned().expect("a request")
    }
}

async fn http_server() -> (SocketAddr, Seen) {
    use axum::Router;
    use axum::extract::{Path, State};
    use axum::http::{HeaderMap, StatusCode, Uri};
    use axum::routing::any;

    async fn handler(
        State(seen): State<Seen>,
        Path(code): Path<u16>,
        uri: Uri,
        headers: HeaderMap,
        body: String,
    ) -> (StatusCode, HeaderMap, String) {
        seen.0
            .lock()
            .unwrap()
            .push((uri.to_string(), headers, body));
        let mut reply = HeaderMap::new();
        reply.insert("set-cookie", "session=abc123".parse().unwrap());
        reply.insert("x-reply", "plain".parse().unwrap());
        let status = StatusCode::from_u16(code).unwrap();
        let body = if status == StatusCode::NO_CONTENT {
            String::new()
        } else {
            format!("status {code}\nline two")
        };
        (status, reply, body)
    }
    async fn slow() -> &'static str {
        tokio::time::sleep(Duration::from_secs(30)).await;
        "late"
    }
    async fn big() -> String {
        "0123456789abcdef\n".repeat(12_000)
    }
    /// Echoes the Authorization header back, in a header and in the body,
    /// as careless servers do.
    async fn echo(headers: HeaderMap) -> (HeaderMap, String) {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut reply = HeaderMap::new();
        reply.insert("x-echo", auth.parse().unwrap());
        (reply, format!("you sent: {auth}"))
    }

    let seen = Seen::default();
    let app = Router::new()
        .route("/status/{code}", any(handler))
        .route("/slow", any(slow))
        .route("/big", any(big))
        .route("/echo", any(echo))
        .route(
            "/redirect",
            any(|| async { axum::response::Redirect::temporary("/status/200") }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_success_failure_and_status_codes() {
    let s = scheduler().await;
    let (addr, _) = http_server().await;

    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/status/200") }),
    )
    .on(&s.db)
    .await;
    assert_success(&ran);
    assert!(
        ran.log.contains(&format!("> GET http://{addr}/status/200")),
        "{}",
        ran.log
    );
    assert!(ran.log.contains("< HTTP/1.1 200 OK"), "{}", ran.log);
    assert!(ran.log.contains("< x-reply: plain"), "{}", ran.log);
    assert!(ran.log.contains("< set-cookie: ***"), "{}", ran.log);
    assert!(!ran.log.contains("abc123"), "{}", ran.log);
    assert!(ran.log.contains("status 200\nline two"), "{}", ran.log);

    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/status/500") }),
    )
    .on(&s.db)
    .await;
    assert_eq!(
        ran.outcome,
        ExecOutcome::Failed {
            exit_code: Some(500),
            reason: datajump_shared::problem::Reason::Said(
                "HTTP 500 Internal Server Error".to_owned()
            ),
        },
        "{}",
        ran.log
    );
    assert!(
        ran.log.contains("< HTTP/1.1 500 Internal Server Error"),
        "{}",
        ran.log
    );

    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/status/204"), "method": "delete" }),
    )
    .on(&s.db)
    .await;
    assert_success(&ran);
    assert!(ran.log.contains("> DELETE "), "{}", ran.log);

    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/status/404"), "success_codes": [200, 404] }),
    )
    .on(&s.db)
    .await;
    assert_success(&ran);
    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/status/200"), "success_codes": [201] }),
    )
    .on(&s.db)
    .await;
    assert_eq!(ran.outcome.exit_code(), Some(200));

    let ran = Run::new("HTTP", json!({ "url": format!("http://{addr}/redirect") }))
        .on(&s.db)
        .await;
    assert_success(&ran);
    assert!(
        ran.log
            .contains(&format!("< (redirected to http://{addr}/status/200)")),
        "{}",
        ran.log
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_params_headers_body_and_masked_credentials() {
    let s = scheduler().await;
    let (addr, seen) = http_server().await;
    let content = json!({
        "url": format!("http://{addr}/status/201?day=${{bizdate}}&run=${{run_id}}"),
        "method": "POST",
        "headers": {
            "Authorization": "Bearer ${secret:api_token}",
            "X-Api-Key": "key-123",
            "Cookie": "sid=cookie-456",
            "X-Custom-Secret": "custom-789",
            "X-Day": "${bizdate}"
        },
        "secret_headers": ["x-custom-secret"],
        "body": { "day": "${bizdate}", "task": "${task_name}", "n": 3 },
    });
    datajump_store::secrets::set(
        &s.db,
        DEFAULT_PROJECT,
        "api_token",
        "tok-abc",
        Some("test API"),
    )
    .await
    .expect("secret stored");
    let ran = Run::new("HTTP", content).on(&s.db).await;
    assert_success(&ran);
    for secret in ["tok-abc", "key-123", "cookie-456", "custom-789"] {
        assert!(
            !ran.log.contains(secret),
            "{secret} in the log:\n{}",
            ran.log
        );
    }
    assert!(ran.log.contains("> authorization: ***"), "{}", ran.log);
    assert!(ran.log.contains("> x-custom-secret: ***"), "{}", ran.log);
    assert!(ran.log.contains("> x-day: 2024-01-14"), "{}", ran.log);
    assert!(ran.log.contains("< HTTP/1.1 201 Created"), "{}", ran.log);

    let (uri, headers, body) = seen.last();
    assert_eq!(uri, "/status/201?day=2024-01-14&run=7");
    assert_eq!(headers["authorization"], "Bearer tok-abc");
    assert_eq!(headers["x-api-key"], "key-123");
    assert_eq!(headers["content-type"], "application/json");
    let body: Value = serde_json::from_str(&body).expect("json body");
    assert_eq!(body, json!({ "day": "2024-01-14", "task": "load", "n": 3 }));

    // A server echoing the secret back does not get it into the log.
    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/echo"),
                "headers": { "Authorization": "Token ${secret:api_token}" } }),
    )
    .on(&s.db)
    .await;
    assert_success(&ran);
    assert!(!ran.log.contains("tok-abc"), "{}", ran.log);
    assert!(ran.log.contains("you sent: Token ***"), "{}", ran.log);
    assert!(ran.log.contains("< x-echo: Token ***"), "{}", ran.log);

    // A secret that does not exist fails before any request, naming it.
    let before = seen.0.lock().unwrap().len();
    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/status/200"),
                "headers": { "Authorization": "Bearer ${secret:missing_one}" } }),
    )
    .on(&s.db)
    .await;
    let message = invalid_message(&ran);
    assert!(
        message.contains("no secret named 'missing_one'"),
        "{message}"
    );
    assert_eq!(seen.0.lock().unwrap().len(), before, "a request was sent");

    // A text body goes as is.
    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/status/200"), "method": "PUT", "body": "day=${bizdate}" }),
    )
    .on(&s.db)
    .await;
    assert_success(&ran);
    let (_, headers, body) = seen.last();
    assert_eq!(body, "day=2024-01-14");
    assert_eq!(
        headers["content-type"], "text/plain; charset=utf-8",
        "a text body says what it is"
    );

    // A password in the URL is used (basic authentication) but never shown.
    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://user:urlpass@{addr}/status/200") }),
    )
    .on(&s.db)
    .await;
    assert_success(&ran);
    assert!(!ran.log.contains("urlpass"), "{}", ran.log);
    assert!(ran.log.contains("user:***@"), "{}", ran.log);
    assert!(seen.last().1.contains_key("authorization"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_timeouts_cancel_refused_and_big_bodies() {
    let s = scheduler().await;
    let (addr, _) = http_server().await;

    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://{addr}/slow"), "request_timeout": 1 }),
    )
    .on(&s.db)
    .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert!(ran.took < Duration::from_secs(10));

    let ran = Run::new("HTTP", json!({ "url": format!("http://{addr}/slow") }))
        .timeout(Duration::from_secs(1))
        .on(&s.db)
        .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert!(ran.took < Duration::from_secs(10));

    let run = Run::new("HTTP", json!({ "url": format!("http://{addr}/slow") }));
    let cancel = run.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let ran = run.on(&s.db).await;
    assert_eq!(ran.outcome, ExecOutcome::Cancelled, "{}", ran.log);

    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let ran = Run::new(
        "HTTP",
        json!({ "url": format!("http://127.0.0.1:{port}/") }),
    )
    .on(&s.db)
    .await;
    let message = failed_message(&ran);
    assert_eq!(ran.outcome.exit_code(), None);
    assert!(message.to_lowercase().contains("connect"), "{message}");

    let ran = Run::new("HTTP", json!({ "url": format!("http://{addr}/big") }))
        .on(&s.db)
        .await;
    assert_success(&ran);
    let body_lines = ran
        .log
        .lines()
        .filter(|l| l.starts_with("0123456789"))
        .count();
    assert_eq!(body_lines, 64 * 1024 / 17, "{}", &ran.log[..400]);
    assert!(
        ran.log
            .contains("response body cut: first 65536 bytes of 204000 shown"),
        "{}",
        ran.log
    );
}

#[tokio::test]
async fn http_bad_configuration_is_invalid() {
    let s = scheduler().await;
    for (content, expected) in [
        (json!({ "url": "http://127.0.0.1:1/${nope}" }), "${nope}"),
        (json!({ "url": "not a url" }), "invalid url"),
        (json!({ "url": "ftp://example.com/" }), "scheme"),
        (
            json!({ "url": "http://127.0.0.1:1/", "method": "GE T" }),
            "method",
        ),
        (
            json!({ "url": "http://127.0.0.1:1/", "success_codes": [999] }),
            "success_codes",
        ),
        (
            json!({ "url": "http://127.0.0.1:1/", "success_codes": [] }),
            "success_codes",
        ),
        (
            json!({ "url": "http://127.0.0.1:1/", "headers": { "Bad Name": "x" } }),
            "header name",
        ),
        (
            json!({ "url": "http://127.0.0.1:1/", "headers": { "X-A": "${nope}" } }),
            "${nope}",
        ),
        (
            json!({ "url": "http://127.0.0.1:1/", "body": "${nope}" }),
            "${nope}",
        ),
    ] {
        let ran = Run::new("HTTP", content.clone()).on(&s.db).await;
        let message = invalid_message(&ran);
        assert!(message.contains(expected), "{content}: {message}");
    }
}

/// A server that answers `/away` with a redirect to the same server under
/// another name (`localhost` instead of `127.0.0.1`), and `/echo-key` with
/// the `X-Api-Key` it got, JSON-escaped, percent-encoded and in base64, as
/// careless servers do. Returns its address and the keys `/echo-key` saw.
async fn echoing_server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    use axum::Router;
    use axum::extract::State;
    use axum::http::HeaderMap;
    use axum::routing::any;
    use base64::Engine as _;

    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let away = format!("http://localhost:{}/echo-key", addr.port());
    let app = Router::new()
        .route(
            "/away",
            any(move || async move { axum::response::Redirect::temporary(&away) }),
        )
        .route(
            "/echo-key",
            any(
                |State(seen): State<Arc<Mutex<Vec<String>>>>, headers: HeaderMap| async move {
                    let key = headers
                        .get("x-api-key")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    seen.lock().unwrap().push(key.clone());
                    format!(
                        "{{\"key\":{}}}\nurl: {}\nb64: {}\n",
                        Value::String(key.clone()),
                        percent_encoding::utf8_percent_encode(
                            &key,
                            percent_encoding::NON_ALPHANUMERIC
                        ),
                        base64::engine::general_purpose::STANDARD.encode(&key),
                    )
                },
            ),
        )
        .with_state(seen.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_headers_stay_on_their_host_and_encoded_echoes_are_masked() {
    let s = scheduler().await;
    let (addr, seen) = echoing_server().await;
    let key = r#"k3y "quoted" \ slashed/+"#;
    datajump_store::secrets::set(&s.db, DEFAULT_PROJECT, "api_key", key, None)
        .await
        .expect("secret stored");
    let with_key = |path: &str| {
        json!({
            "url": format!("http://{addr}{path}"),
            "headers": { "X-Api-Key": "${secret:api_key}" },
        })
    };

    // The key is not carried to another host: the redirect is not followed.
    let ran = Run::new("HTTP", with_key("/away")).on(&s.db).await;
    assert_eq!(ran.outcome.exit_code(), Some(307), "{}", ran.log);
    assert!(
        ran.log
            .contains("redirect to another origin (scheme, host or port) was not followed"),
        "{}",
        ran.log
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "the key went to the other host"
    );
    // Without credentials, the same redirect is followed.
    let ran = Run::new("HTTP", json!({ "url": format!("http://{addr}/away") }))
        .on(&s.db)
        .await;
    assert_success(&ran);
    assert_eq!(seen.lock().unwrap().len(), 1);

    // Echoed back in any encoding, the key is masked.
    let ran = Run::new("HTTP", with_key("/echo-key")).on(&s.db).await;
    assert_success(&ran);
    assert_eq!(seen.lock().unwrap().last().map(String::as_str), Some(key));
    assert!(ran.log.contains("{\"key\":\"***\"}"), "{}", ran.log);
    assert!(ran.log.contains("url: ***"), "{}", ran.log);
    assert!(ran.log.contains("b64: ***"), "{}", ran.log);
    assert!(!ran.log.contains("k3y"), "{}", ran.log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_tasks_reach_neither_metadata_nor_the_api_itself() {
    let s = scheduler().await;
    let (addr, seen) = http_server().await;
    // This server plays the DataJump API.
    let api = format!("http://{addr}");
    let policy = || NetworkPolicy::new(Some(&api), &[], Caller::HttpTask).expect("a policy");
    let invalid = |ran: &Ran, needle: &str| {
        assert!(
            matches!(&ran.outcome, ExecOutcome::Invalid(why) if why.contains(needle)),
            "{:?}\n{}",
            ran.outcome,
            ran.log
        );
    };
    let before = seen.0.lock().unwrap().len();
    // The API's listener answers on every address of this host: each form
    // of one is the API (before #38, all but the first two went through).
    let port = addr.port();
    for url in [
        format!("{api}/status/200"),
        format!("http://localhost:{port}/status/200"),
        format!("http://0.0.0.0:{port}/status/200"),
        format!("http://0:{port}/status/200"),
        format!("http://127.0.0.2:{port}/status/200"),
        format!("http://127.1:{port}/status/200"),
        format!("http://[::ffff:127.0.0.1]:{port}/status/200"),
        format!("http://[::ffff:0.0.0.0]:{port}/status/200"),
        format!("http://[::]:{port}/status/200"),
        format!("http://[::1]:{port}/status/200"),
    ] {
        let ran = Run::new("HTTP", json!({ "url": url }))
            .network(policy())
            .on(&s.db)
            .await;
        invalid(&ran, "may not call the DataJump API");
    }
    // Metadata addresses are refused by the same policy; that is checked
    // on addresses (`shared/src/network.rs`), as no test sends a request
    // beyond loopback.
    assert_eq!(seen.0.lock().unwrap().len(), before, "a request went out");

    // Another service on the same host is fine, and so is the API when allowed.
    let other =
        NetworkPolicy::new(Some("http://127.0.0.1:1"), &[], Caller::HttpTask).expect("a policy");
    let ran = Run::new("HTTP", json!({ "url": format!("{api}/status/200") }))
        .network(other)
        .on(&s.db)
        .await;
    assert_success(&ran);
    let allowed = NetworkPolicy::new(Some(&api), &["127.0.0.1".to_owned()], Caller::HttpTask)
        .expect("a policy");
    let ran = Run::new("HTTP", json!({ "url": format!("{api}/status/200") }))
        .network(allowed)
        .on(&s.db)
        .await;
    assert_success(&ran);
}

/// A folder of recording stubs: each writes its arguments, one per line,
/// to `<record>/<name>.args` (and the configuration folder
/// `SPARK_CONF_DIR` or `FLINK_CONF_DIR` names, if one does, to
/// `<record>/<name>.conf`: its path, its entries, the mode and owner of it
/// and of the one properties file in it that is not a link, that file), prints `output`, then exits with `exit`
/// or, with `exit: None`, waits to be stopped (unless called to `cancel`).
struct Stubs {
    bin: tempfile::TempDir,
    record: tempfile::TempDir,
}

/// How a stub records its configuration folder ([`Stubs`]).
const CONF_RECORD: &str = r#"case "$(basename "$0")" in flink) d="$FLINK_CONF_DIR" ;; *) d="$SPARK_CONF_DIR" ;; esac
if [ -n "$d" ]; then
  for f in spark-defaults.conf config.yaml flink-conf.yaml; do
    [ -f "$d/$f" ] && [ ! -L "$d/$f" ] && { echo "$d"; ls -A "$d" | tr '\n' ' '; echo; stat -c '%a %U' "$d" "$d/$f"; cat "$d/$f"; } > "$STUB_RECORD/$(basename "$0").conf"
  done
fi
"#;

impl Stubs {
    fn new() -> Stubs {
        Stubs {
            bin: tempfile::tempdir().expect("stub bin"),
            record: tempfile::tempdir().expect("stub record"),
        }
    }

    fn add(&self, name: &str, output: &str, exit: Option<i32>) -> &Stubs {
        use std::os::unix::fs::PermissionsExt;
        let path = self.bin.path().join(name);
        let end = match exit {
            Some(code) => format!("exit {code}"),
            // `flink cancel` answers at once; a submission runs on.
            None => "[ \"$1\" = cancel ] && exit 0\nexec sleep 60".to_owned(),
        };
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$STUB_RECORD/{name}.args\"\n{CONF_RECORD}cat <<'OUT'\n{output}\nOUT\n{end}\n"
            ),
        )
        .expect("write stub");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        self
    }

    /// The environment that puts the stubs first on `PATH`.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "PATH",
                format!("{}:/usr/bin:/bin", self.bin.path().display()),
            ),
            ("STUB_RECORD", self.record.path().display().to_string()),
        ]
    }

    /// What `name` was called with, one argument per line; `None` if it
    /// was not called.
    fn args(&self, name: &str) -> Option<Vec<String>> {
        std::fs::read_to_string(self.record.path().join(format!("{name}.args")))
            .ok()
            .map(|text| text.lines().map(str::to_owned).collect())
    }

    /// What `name` saw of its configuration folder, one item per line
    /// ([`CONF_RECORD`]); `None` if it was given none.
    fn conf(&self, name: &str) -> Option<Vec<String>> {
        std::fs::read_to_string(self.record.path().join(format!("{name}.conf")))
            .ok()
            .map(|text| text.lines().map(str::to_owned).collect())
    }
}

fn with_env(run: Run, env: &[(&'static str, String)]) -> Run {
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run.env(&pairs)
}

#[tokio::test]
async fn spark_submit_gets_an_argument_list_and_a_masked_log_line() {
    let s = scheduler().await;
    let stubs = Stubs::new();
    stubs.add("spark-submit", "Pi is roughly 3.14", Some(0));
    let env = stubs.env();
    let ran = with_env(
        Run::new(
            "SPARK",
            json!({
                "jar": "/jobs/etl.jar",
                "main_class": "com.acme.Etl",
                "master": "yarn",
                "conf": { "spark.hadoop.fs.s3a.secret.key": "s3cr3t", "spark.sql.shuffle.partitions": 8 },
                "app_args": ["--day", "${bizdate}", "two words", "$(touch /tmp/pwned)"]
            }),
        ),
        &env,
    )
    .env(&[("DJ_DAG_NAME", "daily"), ("DJ_TASK_NAME", "etl")])
    .on(&s.db)
    .await;
    assert_success(&ran);
    assert_eq!(
        stubs.args("spark-submit").expect("spark-submit ran"),
        [
            "--master",
            "yarn",
            "--conf",
            "spark.sql.shuffle.partitions=8",
            "--name",
            "daily.etl",
            "--class",
            "com.acme.Etl",
            "/jobs/etl.jar",
            "--day",
            "2024-01-14",
            "two words",
            "$(touch /tmp/pwned)",
        ]
    );
    assert!(ran.log.contains("Pi is roughly 3.14"), "{}", ran.log);
    assert!(
        ran.log
            .contains("rather than on the command line (SPARK_CONF_DIR=")
            && ran.log.contains("): spark.hadoop.fs.s3a.secret.key=***"),
        "{}",
        ran.log
    );
    assert!(!ran.log.contains("s3cr3t"), "{}", ran.log);
    assert!(ran.log.contains("'two words'"), "{}", ran.log);

    // A SQL task with engine: spark runs its statements from a file
    // through spark-sql, a literal quoted for Spark.
    stubs.add("spark-sql", "2", Some(0));
    let ran = with_env(
        Run::new(
            "SQL",
            json!({ "sql": "select ${owner:literal}", "engine": "spark", "queue": "root.etl" }),
        ),
        &env,
    )
    .params(&[("owner", "O'Brien")])
    .on(&s.db)
    .await;
    assert_success(&ran);
    let args = stubs.args("spark-sql").expect("spark-sql ran");
    assert_eq!(
        args[..4],
        ["--name", "datajump.load", "--queue", "root.etl"]
    );
    assert_eq!(args[4], "-f");
    assert!(
        !std::path::Path::new(&args[5]).exists(),
        "the SQL file is removed after the run"
    );

    // A failing submission fails the attempt with its exit code.
    stubs.add("spark-submit", "Exception in thread main", Some(1));
    let ran = with_env(Run::new("SPARK", json!({ "py_file": "job.py" })), &env)
        .on(&s.db)
        .await;
    assert_eq!(ran.outcome.exit_code(), Some(1), "{}", ran.log);
}

/// A SPARK or FLINK property that is a credential (a secret-looking key, or
/// a value naming `${secret:…}`) reaches the submitter in a configuration
/// folder of the attempt's own, the installation's settings kept, and never
/// on a command line, which every user of the host can read (#38).
#[tokio::test]
async fn credential_properties_reach_the_submitter_in_a_folder_not_its_command_line() {
    use std::os::unix::fs::PermissionsExt;
    let s = scheduler().await;
    const SECRET: &str = "s3cr3t-from-the-store";
    datajump_store::secrets::set(&s.db, DEFAULT_PROJECT, "s3_key", SECRET, None)
        .await
        .expect("secret stored");
    let stubs = Stubs::new();
    stubs.add("spark-submit", "submitted", Some(0)).add(
        "flink",
        "Job has been submitted with JobID 5e20cb6b0f357591171dfcca2eea09de",
        None,
    );
    // The installation's configuration: its defaults, and a file the
    // attempt's folder links.
    let installed = tempfile::tempdir().expect("conf dir");
    std::fs::write(
        installed.path().join("spark-defaults.conf"),
        "spark.master yarn\n",
    )
    .expect("defaults");
    std::fs::write(installed.path().join("spark-env.sh"), "# env\n").expect("env");
    std::fs::write(
        installed.path().join("config.yaml"),
        "rest:\n  address: jm.example\n",
    )
    .expect("flink config");
    let mut env = stubs.env();
    env.push(("SPARK_CONF_DIR", installed.path().display().to_string()));
    env.push(("FLINK_CONF_DIR", installed.path().display().to_string()));
    let spark = || {
        with_env(
            Run::new(
                "SPARK",
                json!({ "py_file": "job.py", "conf": {
                    "spark.hadoop.fs.s3a.secret.key": "${secret:s3_key}",
                    "spark.hadoop.fs.s3a.access.key": "AKIA-written-in-the-dag",
                    "spark.sql.shuffle.partitions": 8,
                } }),
            ),
            &env,
        )
    };
    let ran = spark().on(&s.db).await;
    assert_success(&ran);
    assert_eq!(
        stubs.args("spark-submit").expect("spark-submit ran"),
        [
            "--conf",
            "spark.sql.shuffle.partitions=8",
            "--name",
            "datajump.load",
            "job.py"
        ]
    );
    let seen = stubs.conf("spark-submit").expect("a configuration folder");
    let folder = std::path::PathBuf::from(&seen[0]);
    let name = folder.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("datajump-{}-conf-", std::process::id())),
        "swept after a crash: {name}"
    );
    let me = nix::unistd::User::from_uid(nix::unistd::Uid::effective())
        .ok()
        .flatten()
        .map(|user| user.name)
        .expect("who runs the test");
    assert_eq!(
        seen[1..],
        [
            "config.yaml spark-defaults.conf spark-env.sh ".to_owned(),
            format!("700 {me}"),
            format!("600 {me}"),
            "spark.master yarn".to_owned(),
            "spark.hadoop.fs.s3a.access.key=AKIA-written-in-the-dag".to_owned(),
            format!("spark.hadoop.fs.s3a.secret.key={SECRET}"),
        ]
    );
    assert!(!folder.exists(), "removed when the attempt ended");
    for value in [SECRET, "AKIA-written-in-the-dag"] {
        assert!(!ran.log.contains(value), "{}", ran.log);
    }

    // A secret the project does not have fails the attempt before
    // anything runs.
    std::fs::remove_file(stubs.record.path().join("spark-submit.args")).expect("reset");
    let ran = with_env(
        Run::new(
            "SPARK",
            json!({ "py_file": "job.py", "conf": { "spark.x": "${secret:missing_one}" } }),
        ),
        &env,
    )
    .on(&s.db)
    .await;
    let message = invalid_message(&ran);
    assert!(
        message.contains("no secret named 'missing_one'"),
        "{message}"
    );
    assert_eq!(stubs.args("spark-submit"), None);

    // Flink: the installation's config.yaml with the credential added;
    // cancelling the job on its session cluster reads the same folder.
    let ran = with_env(
        Run::new(
            "FLINK",
            json!({ "jar": "/jobs/stream.jar", "run_mode": "remote",
                    "conf": { "s3.secret-key": "${secret:s3_key}" } }),
        ),
        &env,
    )
    .timeout(Duration::from_secs(2))
    .on(&s.db)
    .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    let cancel = stubs.args("flink").expect("flink cancel ran");
    assert_eq!(cancel[0], "cancel");
    assert!(!cancel.iter().any(|arg| arg.contains(SECRET)), "{cancel:?}");
    let seen = stubs.conf("flink").expect("flink cancel had the folder");
    assert_eq!(
        seen[4..],
        [
            "rest:",
            "  address: jm.example",
            &format!("s3.secret-key: {SECRET}")
        ]
    );
    assert!(!ran.log.contains(SECRET), "{}", ran.log);

    if !nix::unistd::Uid::effective().is_root() {
        return;
    }
    // Run as a task user: the folder is that user's, and a properties
    // file that user could not read is not copied for it.
    for dir in [stubs.bin.path(), installed.path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::set_permissions(stubs.record.path(), std::fs::Permissions::from_mode(0o777))
        .expect("chmod");
    // What root's runs recorded, the task user could not overwrite.
    std::fs::remove_file(stubs.record.path().join("spark-submit.conf")).expect("reset");
    let as_nobody = || TaskProcess::new(&[], Some("nobody")).expect("the nobody user");
    let ran = spark().process(as_nobody()).on(&s.db).await;
    assert_success(&ran);
    let seen = stubs.conf("spark-submit").expect("a configuration folder");
    assert_eq!(seen[2..4], ["700 nobody", "600 nobody"]);
    std::fs::set_permissions(
        installed.path().join("spark-defaults.conf"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let ran = spark().process(as_nobody()).on(&s.db).await;
    let message = invalid_message(&ran);
    assert!(
        message.contains("the task user may not read") && message.contains("spark-defaults.conf"),
        "{message}"
    );
}

#[tokio::test]
async fn an_untrusted_value_never_begins_a_submitter_argument_with_a_dash() {
    // In the place of the jar, `--conf=…` is an option of spark-submit's;
    // after `flink run --python job.py`, flink still parses options, so an
    // argument `-pyexec=…` would choose the Python that runs the job (#38).
    let s = scheduler().await;
    let stubs = Stubs::new();
    stubs
        .add("spark-submit", "submitted", Some(0))
        .add("flink", "submitted", Some(0));
    let env = stubs.env();
    let attacks = [
        (
            "SPARK",
            json!({ "jar": "${jar}", "app_args": ["${day}"] }),
            "jar",
            "--conf=spark.driver.extraJavaOptions=-javaagent:/tmp/evil.jar",
        ),
        (
            "SPARK",
            json!({ "py_file": "/jobs/etl.py", "app_args": ["--day", "${day}"] }),
            "app_args[1]",
            "--py-files=/tmp/evil.zip",
        ),
        (
            "FLINK",
            json!({ "py_file": "/jobs/stream.py", "app_args": ["${day}"] }),
            "app_args[0]",
            "-pyexec=/tmp/evil-python",
        ),
        (
            "FLINK",
            json!({ "jar": "${jar}" }),
            "jar",
            "-Dsecurity.ssl.enabled=false",
        ),
        (
            "FLINK",
            json!({ "jar": "/jobs/stream.jar", "main_class": "${jar}" }),
            "main_class",
            "-Dx=y",
        ),
    ];
    for (task_type, content, field, attack) in attacks {
        let ran = with_env(Run::new(task_type, content.clone()), &env)
            .untrusted(&[("jar", attack), ("day", attack)])
            .on(&s.db)
            .await;
        let message = invalid_message(&ran);
        assert!(
            message.starts_with(&format!("'{field}': parameter $"))
                && message.contains("would begin a command-line argument with '-'"),
            "{task_type} {content}: {message}"
        );
        assert!(!message.contains(attack), "the value stays out: {message}");
        let program = if task_type == "SPARK" {
            "spark-submit"
        } else {
            "flink"
        };
        assert_eq!(stubs.args(program), None, "{program} ran: {content}");
    }
    // The same values are data where the DAG file's text begins the
    // argument, and a value that begins with anything else is a value.
    let ran = with_env(
        Run::new(
            "SPARK",
            json!({ "jar": "${jar}", "app_args": ["--day=${day}"] }),
        ),
        &env,
    )
    .untrusted(&[("jar", "/jobs/etl.jar"), ("day", "-1")])
    .on(&s.db)
    .await;
    assert_success(&ran);
    assert_eq!(
        stubs.args("spark-submit").expect("spark-submit ran"),
        ["--name", "datajump.load", "/jobs/etl.jar", "--day=-1"]
    );
}

#[tokio::test]
async fn a_timed_out_or_killed_submission_stops_its_remote_job() {
    let s = scheduler().await;
    let stubs = Stubs::new();
    stubs
        .add(
            "spark-submit",
            "24/01/15 02:00:03 INFO YarnClientImpl: Submitted application application_1700000000000_0042\n24/01/15 02:00:04 INFO Client: Application report for application_1700000000000_0042 (state: RUNNING)",
            None,
        )
        .add("yarn", "Killed application application_1700000000000_0042", Some(0))
        .add("kubectl", "pod \"etl-3f2a-driver\" deleted", Some(0));
    let env = stubs.env();

    // YARN cluster mode, timed out: the application is killed on YARN.
    let ran = with_env(
        Run::new(
            "SPARK",
            json!({ "jar": "/jobs/etl.jar", "master": "yarn", "deploy_mode": "cluster" }),
        ),
        &env,
    )
    .timeout(Duration::from_secs(2))
    .on(&s.db)
    .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert_eq!(
        stubs.args("yarn").expect("yarn was called"),
        ["application", "-kill", "application_1700000000000_0042"]
    );
    assert!(
        ran.log
            .contains("Killed application application_1700000000000_0042"),
        "{}",
        ran.log
    );

    // Kubernetes cluster mode, killed: the driver pod is deleted.
    stubs.add(
        "spark-submit",
        "25/01/15 02:00:03 INFO LoggingPodStatusWatcherImpl: State changed, new state:\n\t pod name: etl-3f2a-driver\n\t namespace: data",
        None,
    );
    let run = with_env(
        Run::new(
            "SPARK",
            json!({ "py_file": "etl.py", "master": "k8s://https://k8s.example:6443", "deploy_mode": "cluster" }),
        ),
        &env,
    );
    let cancel = run.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    });
    let ran = run.on(&s.db).await;
    assert_eq!(ran.outcome, ExecOutcome::Cancelled, "{}", ran.log);
    assert_eq!(
        stubs.args("kubectl").expect("kubectl was called"),
        ["delete", "pod", "etl-3f2a-driver", "--namespace", "data"]
    );

    // A Flink job on a session cluster is cancelled there, on the same
    // target; one with its own YARN cluster has it killed.
    stubs.add(
        "flink",
        "Job has been submitted with JobID 5e20cb6b0f357591171dfcca2eea09de",
        None,
    );
    let ran = with_env(
        Run::new(
            "FLINK",
            json!({ "jar": "/jobs/stream.jar", "run_mode": "remote", "conf": { "rest.address": "jm.example" } }),
        ),
        &env,
    )
    .timeout(Duration::from_secs(2))
    .on(&s.db)
    .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert_eq!(
        stubs.args("flink").expect("flink was called"),
        [
            "cancel",
            "-t",
            "remote",
            "-Dpipeline.name=datajump.load",
            "-Drest.address=jm.example",
            "5e20cb6b0f357591171dfcca2eea09de"
        ]
    );
    std::fs::remove_file(stubs.record.path().join("yarn.args")).expect("reset");
    stubs.add(
        "flink",
        "Submitted application application_1700000000000_0077",
        None,
    );
    let ran = with_env(
        Run::new(
            "FLINK",
            json!({ "py_file": "stream.py", "run_mode": "yarn-application" }),
        ),
        &env,
    )
    .timeout(Duration::from_secs(2))
    .on(&s.db)
    .await;
    assert_eq!(ran.outcome, ExecOutcome::TimedOut, "{}", ran.log);
    assert_eq!(
        stubs.args("yarn").expect("yarn was called"),
        ["application", "-kill", "application_1700000000000_0077"]
    );
}

#[tokio::test]
async fn spark_and_flink_misconfigured_are_invalid() {
    let s = scheduler().await;
    let empty = tempfile::tempdir().expect("empty");
    let path = format!("{}:/usr/bin:/bin", empty.path().display());
    let ran = Run::new("SPARK", json!({ "jar": "x.jar" }))
        .env(&[("PATH", path.as_str())])
        .on(&s.db)
        .await;
    let message = invalid_message(&ran);
    assert!(
        message.contains("spark-submit is not on this runner's PATH")
            && message.contains("--task-env SPARK_HOME"),
        "{message}"
    );
    let home = empty.path().display().to_string();
    let ran = Run::new("FLINK", json!({ "jar": "x.jar" }))
        .env(&[("FLINK_HOME", home.as_str())])
        .on(&s.db)
        .await;
    assert!(
        invalid_message(&ran).contains("flink is not in FLINK_HOME/bin"),
        "{}",
        invalid_message(&ran)
    );
    for (task_type, content, expected) in [
        (
            "SPARK",
            json!({}),
            "exactly one of 'jar', 'py_file' or 'sql'",
        ),
        ("SPARK", json!({ "jar": "a", "sql": "b" }), "exactly one of"),
        (
            "SPARK",
            json!({ "py_file": "a", "main_class": "B" }),
            "'main_class' goes with 'jar'",
        ),
        (
            "SPARK",
            json!({ "jar": "a", "driver_memory": "lots" }),
            "not a memory size",
        ),
        (
            "SPARK",
            json!({ "sql": "a", "deploy_mode": "cluster" }),
            "cluster deploy mode",
        ),
        (
            "SPARK",
            json!({ "jar": "a", "deploy_mode": "orbit" }),
            "unknown variant",
        ),
        (
            "SQL",
            json!({ "sql": "a", "engine": "hive" }),
            "not an engine",
        ),
        (
            "SQL",
            json!({ "sql": "a", "engine": "spark", "datasource": "dw" }),
            "takes no 'datasource'",
        ),
        (
            "FLINK",
            json!({ "jar": "a", "run_mode": "yarn" }),
            "unknown variant",
        ),
        (
            "FLINK",
            json!({ "jar": "a", "allow_non_restored_state": true }),
            "goes with 'savepoint'",
        ),
    ] {
        let ran = Run::new(task_type, content.clone()).on(&s.db).await;
        let message = invalid_message(&ran);
        assert!(
            message.contains(expected),
            "{task_type} {content}: {message}"
        );
    }
}
