//! The end-to-end harness: a private `nats-server`, a private database on
//! SQLite or PostgreSQL, and the roles (ticker, resolver, runners) running
//! in-process as tokio tasks, each with its own NATS connection and database
//! pool, exactly as separate processes would have.
//!
//! Everything a test starts is stopped when its handle drops, including when
//! the test panics: the server is killed, the PostgreSQL database dropped
//! (`WITH (FORCE)`, from a thread with its own runtime) and role tokens
//! cancelled.
//!
//! For the fault tests, [`process`] runs the roles as real `datajump`
//! processes instead, and [`pg_cluster`] gives a test a PostgreSQL server of
//! its own to crash and restart.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer};
use chrono::Utc;
use datajump_engine::{Effects, OperatorError, ResetScope};
use datajump_migrations::{Migrator, MigratorTrait};
use datajump_nats::Bus;
use datajump_shared::dag_file::DagFile;
use datajump_shared::entities::{dag_run, execution, task_instance};
use datajump_shared::messages::FireMsg;
use datajump_shared::params::Params;
use datajump_shared::subjects::Namespace;
use datajump_shared::{RunStatus, TaskStatus};
use datajump_store::catalog::{self, ApplyReport};
use sea_orm::{
    ColumnTrait, ConnectionTrait, Database, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
    QueryOrder,
};
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub mod nats_cluster;
pub mod pg_cluster;
pub mod process;

use nats_cluster::NatsCluster;

/// The default time zone of schedules applied by tests.
pub const TIMEZONE: &str = "Asia/Shanghai";
/// The periods of the tickers tests start: the same checks as in
/// production, seconds apart instead of tens of seconds, so a test waiting
/// for a repair waits seconds. Tests derive their waits from these.
pub const TICKER_PERIODS: datajump_ticker::Periods = datajump_ticker::Periods {
    duplicate_check_after: Duration::from_secs(3),
    queue_check_every: Duration::from_secs(1),
    unserved_after: Duration::from_secs(2),
    owed_fires_after: Duration::from_secs(2),
};
/// Admin URL of the shared PostgreSQL server (overridden by `DATAJUMP_TEST_PG_URL`).
const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A temporary SQLite file.
    Sqlite,
    /// A fresh database on the local PostgreSQL server.
    Postgres,
}

fn init_tracing() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(
                "warn,datajump_resolver=info,datajump_runner=info,datajump_ticker=info",
            )
        });
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_test_writer()
            .try_init();
    });
}

/// The names the tests' installations use: the default prefix, as on a
/// fresh `datajump up`.
pub fn dj() -> Namespace {
    Namespace::default()
}

/// A date written `YYYY-MM-DD`.
pub fn date(text: &str) -> chrono::NaiveDate {
    text.parse().expect("a date written YYYY-MM-DD")
}

/// A TCP port on 127.0.0.1 for a server a test must name before it starts
/// (a role's metrics or API address). It comes from below the kernel's
/// ephemeral range, which `bind(…:0)` and outgoing connections draw from,
/// so nothing else on the machine is handed it meanwhile; and it is held
/// under a lock file until this test process exits, so no other test
/// process (nextest runs each test in its own) gets it too.
pub fn free_port() -> u16 {
    static HELD: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());
    let locks = std::env::temp_dir().join("datajump-test-ports");
    std::fs::create_dir_all(&locks).expect("the port lock folder");
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let candidates = 15_000..ephemeral_low.clamp(15_001, 32768);
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..10_000 {
        let port = rand::random_range(candidates.clone());
        let Ok(lock) = std::fs::File::create(locks.join(port.to_string())) else {
            continue;
        };
        if lock.try_lock().is_ok() && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            held.push(lock);
            return port;
        }
    }
    panic!("no free TCP port on 127.0.0.1 between {candidates:?}");
}

/// A private `nats-server` with JetStream, killed on drop.
pub struct NatsServer {
    child: Child,
    port: u16,
    /// The store directory (JetStream data and the server's log), kept
    /// alive as long as the server and reused by [`NatsServer::restart`].
    store: TempDir,
}

/// The nats-server binary tests run.
pub fn nats_binary() -> String {
    std::env::var("DATAJUMP_TEST_NATS_SERVER").unwrap_or_else(|_| "nats-server".to_owned())
}

/// Starts nats-server with its JetStream store and log in `store`, on
/// `port` or, given none, on a port the server picks itself, and waits until
/// it listens; returns it and its port. The port is read back from the
/// ports file the server writes once it listens (`--ports_file_dir`), so a
/// test never mistakes another test's server on a reused port for its own.
fn spawn_nats(binary: &str, port: Option<u16>, store: &Path) -> Result<(Child, u16), String> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(store.join("nats.log"))
        .expect("log file");
    let port_arg = port.map_or_else(|| "-1".to_owned(), |port| port.to_string());
    let mut child = Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port_arg, "-js", "-sd"])
        .arg(store.join("js"))
        .arg("--ports_file_dir")
        .arg(store)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    let ports_file_suffix = format!("_{}.ports", child.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(store.join("nats.log")).unwrap_or_default();
            return Err(format!("{binary} exited with {status}:\n{log}"));
        }
        if let Some(listening) = ports_file_port(store, &ports_file_suffix) {
            return Ok((child, listening));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{binary} wrote no ports file within 20 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The client port in the ports file in `dir` whose name ends with
/// `suffix` (`<binary>_<pid>.ports`: `{"nats":["nats://127.0.0.1:4222"]}`).
fn ports_file_port(dir: &Path, suffix: &str) -> Option<u16> {
    let file = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .find(|entry| entry.file_name().to_string_lossy().ends_with(suffix))?;
    let ports: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file.path()).ok()?).ok()?;
    ports["nats"][0].as_str()?.rsplit_once(':')?.1.parse().ok()
}

impl NatsServer {
    /// Starts `$DATAJUMP_TEST_NATS_SERVER` (default `nats-server`) on a port
    /// it picks and waits until it accepts connections.
    pub fn start() -> NatsServer {
        let store = tempfile::tempdir().expect("temporary directory");
        let (child, port) = spawn_nats(&nats_binary(), None, store.path())
            .unwrap_or_else(|e| panic!("cannot start nats-server: {e}"));
        NatsServer { child, port, store }
    }

    /// Kills the server (SIGKILL, as a crash would), waits `down`, and starts
    /// it again on the same port with the same JetStream store.
    pub fn restart(&mut self, down: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(down);
        (self.child, _) = spawn_nats(&nats_binary(), Some(self.port), self.store.path())
            .unwrap_or_else(|e| panic!("cannot restart nats-server: {e}"));
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The URL of database `name` on the server of the admin URL `admin`.
fn database_url(admin: &str, name: &str) -> String {
    let (base, query) = match admin.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (admin, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let server = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

/// A PostgreSQL database made for one test, dropped on drop.
struct PgDatabase {
    admin_url: String,
    name: String,
}

impl PgDatabase {
    async fn create() -> (PgDatabase, String) {
        let admin_url =
            std::env::var("DATAJUMP_TEST_PG_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_owned());
        let name = format!("dj_test_{}", uuid::Uuid::new_v4().simple());
        let admin = Database::connect(&admin_url)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to PostgreSQL at {admin_url}: {e}"));
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap_or_else(|e| panic!("cannot create database {name}: {e}"));
        let _ = admin.close().await;
        let url = database_url(&admin_url, &name);
        (PgDatabase { admin_url, name }, url)
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop may run inside the test's runtime (or while it unwinds): use
        // a thread with a runtime of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let admin = Database::connect(&admin_url)
                    .await
                    .map_err(|e| e.to_string())?;
                admin
                    .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .await
                    .map_err(|e| e.to_string())?;
                let _ = admin.close().await;
                Ok::<_, String>(())
            })
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("could not drop test database {}: {e}", self.name),
            Err(_) => eprintln!(
                "could not drop test database {}: thread panicked",
                self.name
            ),
        }
    }
}

/// A role running as a tokio task; cancelled when dropped.
pub struct Role {
    name: String,
    token: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Role {
    /// Cancels the role and waits (up to 30 s) until it has stopped.
    pub async fn stop(mut self) {
        self.token.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .unwrap_or_else(|_| panic!("{} did not stop within 30 s", self.name))
                .unwrap_or_else(|e| panic!("{} panicked: {e}", self.name));
        }
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// One test's world: NATS, database, and helpers to run roles and DAGs.
pub struct TestEnv {
    /// The database URL roles connect to.
    pub db_url: String,
    /// The test's own pool.
    pub db: DatabaseConnection,
    /// The test's own NATS connection.
    pub nats: async_nats::Client,
    /// JetStream on `nats`, naming the test database's installation.
    pub bus: Bus,
    /// A scratch directory for files tasks touch.
    pub dir: PathBuf,
    /// Errors of roles that stopped on their own.
    role_errors: Arc<Mutex<Vec<String>>>,
    /// Roles started so far, to number them.
    spawned: AtomicUsize,
    // Dropped in this order: the server, then the database, then the files.
    server: Broker,
    _pg: Option<PgDatabase>,
    _tmp: TempDir,
}

/// The NATS a test runs on: one server, or a three-node cluster.
enum Broker {
    Single(NatsServer),
    Cluster(NatsCluster),
}

impl Broker {
    fn url(&self) -> String {
        match self {
            Broker::Single(server) => server.url(),
            Broker::Cluster(cluster) => cluster.url(),
        }
    }
}

impl TestEnv {
    /// Starts a NATS server and creates and migrates a database.
    pub async fn new(backend: Backend) -> TestEnv {
        TestEnv::on(Broker::Single(NatsServer::start()), backend).await
    }

    /// Starts a three-node NATS cluster and creates and migrates a
    /// database; the topology is created with `auto` replicas (R3).
    pub async fn on_cluster(backend: Backend) -> TestEnv {
        TestEnv::on(Broker::Cluster(NatsCluster::start()), backend).await
    }

    async fn on(server: Broker, backend: Backend) -> TestEnv {
        init_tracing();
        let tmp = tempfile::tempdir().expect("temporary directory");
        let (pg, db_url) = match backend {
            Backend::Sqlite => (
                None,
                format!("sqlite://{}?mode=rwc", tmp.path().join("dj.db").display()),
            ),
            Backend::Postgres => {
                let (pg, url) = PgDatabase::create().await;
                (Some(pg), url)
            }
        };
        TestEnv::assemble(tmp, server, pg, db_url).await
    }

    /// Starts a NATS server and migrates the database at `db_url`, which the
    /// test owns (nothing is dropped at the end): for a test that runs its own
    /// PostgreSQL cluster.
    pub async fn with_database(db_url: String) -> TestEnv {
        init_tracing();
        let tmp = tempfile::tempdir().expect("temporary directory");
        let server = Broker::Single(NatsServer::start());
        TestEnv::assemble(tmp, server, None, db_url).await
    }

    async fn assemble(
        tmp: TempDir,
        server: Broker,
        pg: Option<PgDatabase>,
        db_url: String,
    ) -> TestEnv {
        let (db, ()) =
            datajump_store::db::connect_migrated(&db_url, async |db| Migrator::up(db, None).await)
                .await
                .unwrap_or_else(|e| panic!("cannot connect to and migrate {db_url}: {e}"));
        let nats = datajump_nats::connect(&server.url(), "e2e-test")
            .await
            .expect("connect to NATS");
        let js = jetstream::new(nats.clone());
        datajump_nats::ensure_topology(&js, &dj(), datajump_nats::Replicas::AUTO)
            .await
            .expect("JetStream topology");
        let installation = datajump_store::installation::identity(&db)
            .await
            .expect("the installation identity");
        let bus = Bus::new(js, dj(), installation);
        let dir = tmp.path().join("scratch");
        std::fs::create_dir_all(&dir).expect("scratch directory");
        TestEnv {
            db_url,
            db,
            nats,
            bus,
            dir,
            role_errors: Arc::new(Mutex::new(Vec::new())),
            spawned: AtomicUsize::new(0),
            server,
            _pg: pg,
            _tmp: tmp,
        }
    }

    /// The NATS URL roles connect to.
    pub fn nats_url(&self) -> String {
        self.server.url()
    }

    /// Restarts the NATS server on the same port and store (see [`NatsServer::restart`]).
    pub fn restart_nats(&mut self, down: Duration) {
        match &mut self.server {
            Broker::Single(server) => server.restart(down),
            Broker::Cluster(_) => panic!("restart_nats is for a single server; use cluster()"),
        }
    }

    /// The NATS cluster of a test started with [`TestEnv::on_cluster`].
    pub fn cluster(&mut self) -> &mut NatsCluster {
        match &mut self.server {
            Broker::Cluster(cluster) => cluster,
            Broker::Single(_) => panic!("the test runs on a single NATS server"),
        }
    }

    /// A scratch path (not created).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    async fn role_connections(&self, name: &str) -> (DatabaseConnection, async_nats::Client) {
        self.role_connections_to(name, &self.nats_url()).await
    }

    /// [`TestEnv::role_connections`] with NATS at `nats_url`.
    async fn role_connections_to(
        &self,
        name: &str,
        nats_url: &str,
    ) -> (DatabaseConnection, async_nats::Client) {
        let db = datajump_store::db::connect(&self.db_url)
            .await
            .unwrap_or_else(|e| panic!("{name}: cannot connect to the database: {e}"));
        let nats = datajump_nats::connect(nats_url, name)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        (db, nats)
    }

    fn spawn_role<F, E>(&self, name: String, run: impl FnOnce(CancellationToken) -> F) -> Role
    where
        F: std::future::Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display,
    {
        let token = CancellationToken::new();
        let future = run(token.clone());
        let errors = self.role_errors.clone();
        let label = name.clone();
        // At ERROR level so the default `warn` directive keeps it: every log
        // line of the role then says which role it came from.
        let span = tracing::error_span!("role", name = %name);
        let task = tokio::spawn(async move {
            if let Err(e) = future.instrument(span).await {
                let message = format!("{label} stopped with an error: {e}");
                eprintln!("{message}");
                errors
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(message);
            }
        });
        Role {
            name,
            token,
            task: Some(task),
        }
    }

    fn next_name(&self, role: &str) -> String {
        format!(
            "{role}-{}",
            self.spawned.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    /// Starts a ticker that knows no API address.
    pub async fn spawn_ticker(&self) -> Role {
        let network = datajump_shared::network::NetworkPolicy::new(
            None,
            &[],
            datajump_shared::network::Caller::Webhook,
        )
        .expect("a policy");
        self.spawn_ticker_with(std::sync::Arc::new(network)).await
    }

    /// Starts a ticker whose webhooks follow `network`.
    pub async fn spawn_ticker_with(
        &self,
        network: std::sync::Arc<datajump_shared::network::NetworkPolicy>,
    ) -> Role {
        let name = self.next_name("ticker");
        let (db, nats) = self.role_connections(&name).await;
        let config = datajump_ticker::Config {
            db,
            nats,
            names: dj(),
            replicas: datajump_nats::Replicas::AUTO,
            shard: None,
            default_timezone: chrono_tz::Asia::Shanghai,
            retention: datajump_ticker::cleanup::Retention::default(),
            network,
            periods: TICKER_PERIODS,
        };
        self.spawn_role(name, |token| datajump_ticker::run(config, token))
    }

    /// Starts a resolver.
    pub async fn spawn_resolver(&self) -> Role {
        let name = self.next_name("resolver");
        let (db, nats) = self.role_connections(&name).await;
        let config = datajump_resolver::Config {
            db,
            nats,
            names: dj(),
            replicas: datajump_nats::Replicas::AUTO,
            default_timezone: chrono_tz::Asia::Shanghai,
            concurrency: 8,
        };
        self.spawn_role(name, |token| datajump_resolver::run(config, token))
    }

    /// Starts runner `id` serving `queues` with `slots` slots, and waits
    /// until its heartbeat is visible (it is then fetching work).
    pub async fn spawn_runner(&self, id: &str, queues: &[&str], slots: usize) -> Role {
        self.spawn_runner_with_drain(id, queues, slots, Duration::from_secs(5))
            .await
    }

    /// [`TestEnv::spawn_runner`] whose running tasks get `drain_timeout` to
    /// finish when it is stopped.
    pub async fn spawn_runner_with_drain(
        &self,
        id: &str,
        queues: &[&str],
        slots: usize,
        drain_timeout: Duration,
    ) -> Role {
        self.spawn_runner_on(id, queues, slots, drain_timeout, &self.nats_url())
            .await
    }

    /// [`TestEnv::spawn_runner`] reaching NATS at `nats_url` (a proxy the
    /// test can cut, say).
    pub async fn spawn_runner_through(
        &self,
        id: &str,
        queues: &[&str],
        slots: usize,
        nats_url: &str,
    ) -> Role {
        self.spawn_runner_on(id, queues, slots, Duration::from_secs(5), nats_url)
            .await
    }

    async fn spawn_runner_on(
        &self,
        id: &str,
        queues: &[&str],
        slots: usize,
        drain_timeout: Duration,
        nats_url: &str,
    ) -> Role {
        let (db, nats) = self.role_connections_to(id, nats_url).await;
        let config = datajump_runner::Config {
            db,
            nats,
            names: dj(),
            replicas: datajump_nats::Replicas::AUTO,
            default_timezone: chrono_tz::Asia::Shanghai,
            id: id.to_owned(),
            queues: queues.iter().map(|q| (*q).to_owned()).collect(),
            slots,
            drain_timeout,
            task_process: std::sync::Arc::default(),
            network: std::sync::Arc::default(),
            data_folder: None,
            max_log_bytes: datajump_runner::executor::DEFAULT_MAX_LOG_BYTES,
        };
        let role = self.spawn_role(id.to_owned(), |token| datajump_runner::run(config, token));
        let kv = datajump_nats::key_value(self.bus.js(), "dj_runners")
            .await
            .expect("dj_runners bucket");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !matches!(kv.get(id).await, Ok(Some(_))) {
            self.check_roles();
            assert!(
                Instant::now() < deadline,
                "runner {id} wrote no heartbeat within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        role
    }

    /// Panics if a role stopped with an error.
    pub fn check_roles(&self) {
        let errors = self.role_errors.lock().unwrap_or_else(|p| p.into_inner());
        assert!(errors.is_empty(), "roles failed:\n{}", errors.join("\n"));
    }

    /// Parses and stores a DAG file, announcing schedule changes as `dag apply` does.
    pub async fn try_apply(&self, yaml: &str) -> Result<ApplyReport, String> {
        let file = DagFile::parse(yaml).map_err(|e| e.to_string())?;
        let report = catalog::apply(&self.db, &file, TIMEZONE, catalog::Origin::Edit)
            .await
            .map_err(|e| e.to_string())?;
        if report.schedules_touched() {
            self.nats
                .publish(dj().schedules_changed(), "".into())
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(report)
    }

    /// [`TestEnv::try_apply`] that must succeed.
    pub async fn apply(&self, yaml: &str) -> ApplyReport {
        self.try_apply(yaml)
            .await
            .unwrap_or_else(|e| panic!("apply failed: {e}\n---\n{yaml}"))
    }

    /// The id of the DAG named `name`.
    pub async fn dag_id(&self, name: &str) -> i64 {
        catalog::dag_by_name(&self.db, name)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .id
    }

    /// A manual fire of DAG `name`, not yet published.
    pub async fn manual_fire(&self, name: &str) -> FireMsg {
        let now = Utc::now();
        let biz_date = datajump_shared::biz_date::biz_date_for(
            now,
            chrono_tz::Asia::Shanghai,
            datajump_shared::biz_date::DEFAULT_OFFSET_DAYS,
        );
        FireMsg::manual(
            self.dag_id(name).await,
            datajump_shared::subjects::Priority::DEFAULT,
            now,
            biz_date,
            Params::new(),
        )
    }

    /// Triggers DAG `name` manually; returns the run's dedup key.
    pub async fn trigger(&self, name: &str) -> String {
        let fire = self.manual_fire(name).await;
        self.bus.publish_fire(&fire).await.expect("publish fire");
        fire.dedup_key
    }

    /// Triggers DAG `name` manually for business date `biz_date`
    /// (`YYYY-MM-DD`); returns the run's dedup key.
    pub async fn trigger_for(&self, name: &str, biz_date: &str) -> String {
        let mut fire = self.manual_fire(name).await;
        fire.biz_date = date(biz_date);
        self.bus.publish_fire(&fire).await.expect("publish fire");
        fire.dedup_key
    }

    /// The run with `dedup_key`, if it exists.
    pub async fn run_by_key(&self, dedup_key: &str) -> Option<dag_run::Model> {
        dag_run::Entity::find()
            .filter(dag_run::Column::DedupKey.eq(dedup_key))
            .one(&self.db)
            .await
            .expect("query dag_run")
    }

    /// Waits until the run with `dedup_key` exists and returns it.
    pub async fn wait_run_created(&self, dedup_key: &str, timeout: Duration) -> dag_run::Model {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_roles();
            if let Some(run) = self.run_by_key(dedup_key).await {
                return run;
            }
            assert!(
                Instant::now() < deadline,
                "run {dedup_key} was never created"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the run with `dedup_key` is terminal and returns it.
    pub async fn wait_run(&self, dedup_key: &str, timeout: Duration) -> dag_run::Model {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_roles();
            let run = self.run_by_key(dedup_key).await;
            if let Some(run) = &run
                && run.status.is_terminal()
            {
                return run.clone();
            }
            if Instant::now() > deadline {
                let detail = match &run {
                    None => "the run was never created".to_owned(),
                    Some(run) => self.describe_run(run).await,
                };
                panic!("run {dedup_key} not finished after {timeout:?}: {detail}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Triggers DAG `dag`, waits up to `timeout` for the run to finish and
    /// asserts it ended `expected` (the failure message describes the run).
    pub async fn run_to_end(
        &self,
        dag: &str,
        expected: RunStatus,
        timeout: Duration,
    ) -> dag_run::Model {
        let key = self.trigger(dag).await;
        let run = self.wait_run(&key, timeout).await;
        assert_eq!(run.status, expected, "{}", self.describe_run(&run).await);
        run
    }

    /// A run and the count of its instances by status, for failure messages.
    pub async fn describe_run(&self, run: &dag_run::Model) -> String {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for row in self.instances(run.id).await {
            *counts.entry(row.status.to_string()).or_default() += 1;
        }
        format!(
            "run {} status {} pending_instances {} failed_instances {}; instances {counts:?}",
            run.id, run.status, run.pending_instances, run.failed_instances
        )
    }

    /// Every run of DAG `dag_id`, by logical time.
    pub async fn runs_of(&self, dag_id: i64) -> Vec<dag_run::Model> {
        dag_run::Entity::find()
            .filter(dag_run::Column::DagId.eq(dag_id))
            .order_by_asc(dag_run::Column::LogicalTime)
            .order_by_asc(dag_run::Column::Id)
            .all(&self.db)
            .await
            .expect("query dag_run")
    }

    /// The task instances of a run, by id.
    pub async fn instances(&self, run_id: i64) -> Vec<task_instance::Model> {
        task_instance::Entity::find()
            .filter(task_instance::Column::DagRunId.eq(run_id))
            .order_by_asc(task_instance::Column::Id)
            .all(&self.db)
            .await
            .expect("query task_instance")
    }

    /// The task instances of a run by task name.
    pub async fn instances_by_name(&self, run_id: i64) -> BTreeMap<String, task_instance::Model> {
        self.instances(run_id)
            .await
            .into_iter()
            .map(|row| (row.task_name.clone(), row))
            .collect()
    }

    /// The executions of a run, by id.
    pub async fn executions(&self, run_id: i64) -> Vec<execution::Model> {
        execution::Entity::find()
            .filter(execution::Column::DagRunId.eq(run_id))
            .order_by_asc(execution::Column::Id)
            .all(&self.db)
            .await
            .expect("query execution")
    }

    /// The executions of a run grouped by task name.
    pub async fn executions_by_name(&self, run_id: i64) -> BTreeMap<String, Vec<execution::Model>> {
        let names: BTreeMap<i64, String> = self
            .instances(run_id)
            .await
            .into_iter()
            .map(|row| (row.id, row.task_name))
            .collect();
        let mut by_name: BTreeMap<String, Vec<execution::Model>> = BTreeMap::new();
        for execution in self.executions(run_id).await {
            let name = names
                .get(&execution.task_instance_id)
                .cloned()
                .unwrap_or_default();
            by_name.entry(name).or_default().push(execution);
        }
        for executions in by_name.values_mut() {
            executions.sort_by_key(|e| e.attempt);
        }
        by_name
    }

    /// The executions of a run grouped by task name, once every attempt's
    /// end is recorded. A kill ends the instance (and so can end the run)
    /// in the database first; the runner records the attempt's exit code
    /// and log when its process is gone, a moment later.
    pub async fn ended_executions_by_name(
        &self,
        run_id: i64,
        timeout: Duration,
    ) -> BTreeMap<String, Vec<execution::Model>> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_roles();
            let executions = self.executions_by_name(run_id).await;
            let running: Vec<_> = executions
                .iter()
                .flat_map(|(name, attempts)| attempts.iter().map(move |e| (name, e)))
                .filter(|(_, e)| e.end_time.is_none())
                .map(|(name, e)| format!("{name} attempt {}", e.attempt))
                .collect();
            if running.is_empty() {
                return executions;
            }
            assert!(
                Instant::now() < deadline,
                "attempts of run {run_id} not recorded as ended after {timeout:?}: {running:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A durable consumer's current state.
    pub async fn consumer_info(&self, stream: &str, name: &str) -> consumer::Info {
        let mut consumer: consumer::PullConsumer = self
            .bus
            .js()
            .get_stream(stream)
            .await
            .expect("stream")
            .get_consumer(name)
            .await
            .expect("consumer");
        consumer.info().await.expect("consumer info").clone()
    }

    /// Waits until a consumer has nothing pending and nothing unacknowledged.
    pub async fn wait_consumer_idle(&self, stream: &str, name: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_roles();
            let info = self.consumer_info(stream, name).await;
            if info.num_pending == 0 && info.num_ack_pending == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{stream}/{name} still busy after {timeout:?}: pending {}, unacknowledged {}",
                info.num_pending,
                info.num_ack_pending
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until no fire of any level waits for a resolver.
    pub async fn wait_fires_idle(&self, timeout: Duration) {
        for priority in datajump_shared::subjects::Priority::ALL {
            let consumer = datajump_shared::subjects::resolver_fire_consumer(priority);
            self.wait_consumer_idle("DJ_FIRE", &consumer, timeout).await;
        }
    }

    /// Kills a task instance as an operator does: the engine's commit, then
    /// what it owes published. `None` if it had already ended.
    pub async fn kill_instance(
        &self,
        id: i64,
    ) -> Result<Option<task_instance::Model>, OperatorError> {
        let Some((row, effects)) = datajump_engine::kill_instance(
            &self.db,
            datajump_shared::TaskInstanceId(id),
            chrono::Utc::now(),
        )
        .await?
        else {
            return Ok(None);
        };
        effects.publish(&self.bus).await.expect("publish the kill");
        Ok(Some(row))
    }

    /// Kills a run as an operator does; `None` if it had already ended.
    pub async fn kill_run(&self, id: i64) -> Result<Option<KilledRun>, DbErr> {
        let Some((_, effects)) =
            datajump_engine::kill_run(&self.db, datajump_shared::RunId(id), chrono::Utc::now())
                .await?
        else {
            return Ok(None);
        };
        let started_runs = effects.started_runs().to_vec();
        effects.publish(&self.bus).await.expect("publish the kill");
        Ok(Some(KilledRun { started_runs }))
    }

    /// Reruns or clears instances of a run in place, as `rerun` and `task
    /// clear` do; returns the instances queued at once.
    pub async fn reset(
        &self,
        run_id: i64,
        scope: ResetScope,
    ) -> Result<Vec<task_instance::Model>, OperatorError> {
        let effects = datajump_engine::reset(
            &self.db,
            datajump_shared::RunId(run_id),
            scope,
            chrono::Utc::now(),
        )
        .await?;
        self.publish(effects).await
    }

    /// Marks a task instance SUCCESS or FAILED by hand; returns the
    /// instances queued at once.
    pub async fn mark(
        &self,
        id: i64,
        to: TaskStatus,
    ) -> Result<Vec<task_instance::Model>, OperatorError> {
        let effects = datajump_engine::mark(
            &self.db,
            datajump_shared::TaskInstanceId(id),
            to,
            chrono::Utc::now(),
        )
        .await?;
        self.publish(effects).await
    }

    async fn publish(&self, effects: Effects) -> Result<Vec<task_instance::Model>, OperatorError> {
        let queued = effects.queued().to_vec();
        effects.publish(&self.bus).await.expect("publish");
        Ok(queued)
    }
}

/// What [`TestEnv::kill_run`] did.
pub struct KilledRun {
    /// Waiting runs of the DAG that took the freed slot.
    pub started_runs: Vec<i64>,
}

/// A file path as a shell word (paths from `tempfile` have no quotes).
pub fn shell_path(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[cfg(test)]
mod tests {
    use super::database_url;

    #[test]
    fn database_url_replaces_the_database() {
        assert_eq!(
            database_url("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            database_url("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(
            database_url("postgres://h:5432", "x"),
            "postgres://h:5432/x"
        );
    }
}

/// One request the receiver got: its header lines and JSON body.
#[derive(Debug, Clone)]
pub struct Received {
    /// Header lines, as sent.
    pub headers: Vec<String>,
    /// The body as JSON (null when it is not JSON).
    pub body: serde_json::Value,
}

/// A one-thread HTTP server on a free port (an HTTP task's target, a
/// webhook) answering 500 to its first `failures` requests and 200
/// afterwards, keeping every request.
pub fn http_receiver(failures: usize) -> (u16, Arc<Mutex<Vec<Received>>>) {
    http_server_answering(move |earlier| {
        if earlier < failures {
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_owned()
        } else {
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
        }
    })
}

/// A one-thread HTTP server on a free port answering every request with a
/// `307` to `location`, keeping every request.
pub fn http_redirector(location: String) -> (u16, Arc<Mutex<Vec<Received>>>) {
    http_server_answering(move |_| {
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )
    })
}

/// A one-thread HTTP server on a free port giving each request the answer
/// `answer` makes of the number of requests before it, keeping every
/// request.
fn http_server_answering(
    answer: impl Fn(usize) -> String + Send + 'static,
) -> (u16, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let requests = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut headers = Vec::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                headers.push(line.trim_end().to_owned());
                line.clear();
            }
            let length = headers
                .iter()
                .find_map(|h| {
                    let (name, value) = h.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let mut requests = requests.lock().expect("requests");
            let answer = answer(requests.len());
            requests.push(Received {
                headers,
                body: serde_json::from_slice(&body).unwrap_or_default(),
            });
            drop(requests);
            let _ = (&stream).write_all(answer.as_bytes());
        }
    });
    (port, seen)
}
