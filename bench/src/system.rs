//! One throw-away DataJump system per repetition: a child nats-server on a
//! free port with a temporary store, a fresh database (a SQLite file in the
//! same temporary folder, or a new PostgreSQL database `dj_bench_<uuid>`
//! dropped afterwards), migrations, and the roles — ticker and resolver as
//! in `datajump up`, plus N runners either in this process (each with its
//! own NATS connection and database pool, as a runner process would have)
//! or as `datajump runner` child processes. Role processes run the real
//! `datajump` binary ([`datajump_next_to_bench`] or `--datajump`).
//!
//! Starting from nothing each time costs a second or two per repetition and
//! buys independence: no stream backlog, no table growth, no warm pool
//! carried from one measurement to the next.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use async_nats::jetstream;
use clap::ValueEnum;
use datajump_migrations::{Migrator, MigratorTrait};
use datajump_nats::Bus;
use datajump_shared::subjects::{self, Namespace};
use futures::StreamExt;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};
use tokio::process::{Child, Command};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use datajump::commands::roles::{MetricsArgs, RunnerArgs, runner_config};

/// The database a bench runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DbKind {
    /// A SQLite file (WAL) in the repetition's temporary folder.
    Sqlite,
    /// A fresh database on a PostgreSQL server (`--postgres-url`).
    Postgres,
}

impl DbKind {
    /// Its name in the report.
    pub fn label(self) -> &'static str {
        match self {
            DbKind::Sqlite => "SQLite",
            DbKind::Postgres => "PostgreSQL",
        }
    }

    /// Its name on the command line and in file markers.
    pub fn key(self) -> &'static str {
        match self {
            DbKind::Sqlite => "sqlite",
            DbKind::Postgres => "postgres",
        }
    }
}

/// Where fresh databases come from: nothing for SQLite, an administrative
/// connection for PostgreSQL.
pub struct Backend {
    /// The kind.
    pub kind: DbKind,
    admin: Option<(DatabaseConnection, String)>,
    /// PostgreSQL databases created and not dropped yet.
    live: std::sync::Mutex<Vec<String>>,
}

impl Backend {
    /// Prepares `kind`; for PostgreSQL connects to `postgres_url` (a
    /// database the user may `CREATE DATABASE` from).
    pub async fn new(kind: DbKind, postgres_url: &str) -> Result<Backend> {
        let admin = match kind {
            DbKind::Sqlite => None,
            DbKind::Postgres => {
                let db = Database::connect(postgres_url)
                    .await
                    .with_context(|| format!("cannot connect to PostgreSQL at {postgres_url}"))?;
                Some((db, postgres_url.to_owned()))
            }
        };
        Ok(Backend {
            kind,
            admin,
            live: std::sync::Mutex::default(),
        })
    }

    /// The server's version, e.g. `SQLite 3.46.0` or `PostgreSQL 15.20`.
    pub async fn version(&self) -> String {
        let (label, sql, db) = match &self.admin {
            Some((db, _)) => ("PostgreSQL", "SHOW server_version", Some(db.clone())),
            None => (
                "SQLite",
                "SELECT sqlite_version()",
                Database::connect("sqlite::memory:").await.ok(),
            ),
        };
        let Some(db) = db else {
            return label.to_owned();
        };
        let version = db
            .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
            .await
            .ok()
            .flatten()
            .and_then(|row| row.try_get_by_index::<String>(0).ok());
        match version {
            Some(v) => format!("{label} {v}"),
            None => label.to_owned(),
        }
    }

    /// Creates an empty database for one repetition; returns its URL and,
    /// for PostgreSQL, its name (to drop).
    async fn create(&self, dir: &Path) -> Result<(String, Option<String>)> {
        match &self.admin {
            None => {
                let file = dir.join("bench.db");
                Ok((format!("sqlite://{}?mode=rwc", file.display()), None))
            }
            Some((admin, admin_url)) => {
                let name = format!("dj_bench_{}", uuid::Uuid::new_v4().simple());
                admin
                    .execute_unprepared(&format!("CREATE DATABASE {name}"))
                    .await
                    .with_context(|| format!("cannot create the database {name}"))?;
                if let Ok(mut live) = self.live.lock() {
                    live.push(name.clone());
                }
                Ok((with_database(admin_url, &name), Some(name)))
            }
        }
    }

    async fn drop_database(&self, name: &str) {
        if let Some((admin, _)) = &self.admin {
            match admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await
            {
                Ok(_) => {
                    if let Ok(mut live) = self.live.lock() {
                        live.retain(|n| n != name);
                    }
                }
                Err(e) => eprintln!("warning: cannot drop the bench database {name}: {e}"),
            }
        }
    }

    /// Drops the databases of systems that were abandoned (the bench was
    /// interrupted mid-repetition).
    pub async fn drop_leftovers(&self) {
        let names = self.live.lock().map(|l| l.clone()).unwrap_or_default();
        for name in names {
            self.drop_database(&name).await;
        }
    }
}

/// `url` with its database name replaced by `name`; its query string
/// (`sslmode`, `host` of a Unix socket, …) is kept.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let (scheme, rest) = base.split_once("://").unwrap_or(("postgres", base));
    let host = rest.split('/').next().unwrap_or(rest);
    format!("{scheme}://{host}/{name}{query}")
}

/// How the runners of a system run.
#[derive(Clone, Copy, Debug)]
pub struct RunnerSetup {
    /// How many.
    pub count: usize,
    /// Slots of each.
    pub slots: usize,
    /// As `datajump runner` child processes rather than in this process.
    pub processes: bool,
}

/// How to get the `datajump` binary that role processes run.
const BUILD_HINT: &str = "build it with `cargo build --release -p datajump -p datajump-bench` \
     (or name one with --datajump PATH / DATAJUMP_BENCH_DATAJUMP)";

/// The `datajump` executable next to this one: where `cargo build -p datajump
/// -p datajump-bench` puts both.
pub fn datajump_next_to_bench() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the datajump-bench executable")?;
    let dir = exe
        .parent()
        .with_context(|| format!("{} has no folder; pass --datajump PATH", exe.display()))?;
    Ok(dir.join("datajump"))
}

/// Fails, saying how to build it, when `path` is not a file: the role
/// processes of `scale`, `schedules1m` and `--processes` would not start.
pub fn check_datajump(path: &Path) -> Result<()> {
    if path.is_file() {
        return Ok(());
    }
    bail!(
        "the datajump binary {} is missing (runner and ticker processes run it): {BUILD_HINT}",
        path.display()
    )
}

/// A temporary folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir> {
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let path = std::env::temp_dir().join(format!("dj-bench-{}", &suffix[..12]));
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running system.
pub struct System<'b> {
    backend: &'b Backend,
    /// The `datajump` binary role processes run.
    datajump: &'b Path,
    dir: TempDir,
    nats_server: Child,
    nats_url: String,
    db_url: String,
    pg_database: Option<String>,
    /// The bench's own pool: DAG setup and reading results.
    pub db: DatabaseConnection,
    /// The bench's own NATS connection.
    pub nats: async_nats::Client,
    /// JetStream on [`System::nats`], naming the bench database's
    /// installation.
    pub bus: Bus,
    shutdown: CancellationToken,
    roles: JoinSet<Result<()>>,
    pools: Vec<DatabaseConnection>,
    children: Vec<Child>,
    ticker: Option<Child>,
    /// `datajump up`, when the system runs as one process.
    up: Option<Child>,
}

/// The bench's own `DATAJUMP_LOG` for role processes, `warn` by default.
fn quiet_log_level() -> String {
    std::env::var("DATAJUMP_LOG").unwrap_or_else(|_| "warn".to_owned())
}

/// The `nats-server` binary on PATH (or the usual places).
pub fn nats_server_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/bin")])
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file())
}

/// `nats-server --version`, e.g. `v2.10.24`.
pub async fn nats_server_version() -> String {
    let Some(binary) = nats_server_binary() else {
        return "not installed".to_owned();
    };
    match Command::new(binary).arg("--version").output().await {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let text = text.trim();
            text.rsplit(' ').next().unwrap_or(text).to_owned()
        }
        Err(e) => format!("unknown ({e})"),
    }
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("no free TCP port")?;
    Ok(listener.local_addr()?.port())
}

/// The last lines of a log file, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

async fn start_nats_server(dir: &Path) -> Result<(Child, String)> {
    let Some(binary) = nats_server_binary() else {
        bail!("nats-server is not installed (Debian: `apt-get install -y nats-server`)");
    };
    let port = free_port()?;
    let log = dir.join("nats-server.log");
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let child = Command::new(&binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(dir.join("nats"))
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let started = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if started.elapsed() > Duration::from_secs(15) {
            bail!("nats-server did not start within 15 s:\n{}", tail(&log));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((child, format!("nats://127.0.0.1:{port}")))
}

async fn connect_nats(url: &str, name: &str) -> Result<async_nats::Client> {
    tokio::time::timeout(Duration::from_secs(15), datajump_nats::connect(url, name))
        .await
        .with_context(|| format!("NATS at {url} did not answer"))?
        .map_err(anyhow::Error::from)
}

impl<'b> System<'b> {
    /// Starts NATS and a migrated, empty database; no roles yet, so DAGs
    /// (and schedules) can be applied before the ticker loads them. Role
    /// processes will run `datajump`.
    pub async fn start(backend: &'b Backend, datajump: &'b Path) -> Result<System<'b>> {
        let dir = TempDir::new()?;
        let (nats_server, nats_url) = start_nats_server(&dir.0).await?;
        let (db_url, pg_database) = backend.create(&dir.0).await?;
        let prepared = async {
            let (db, ()) = datajump_store::db::connect_migrated(&db_url, async |db| {
                Migrator::up(db, None).await
            })
            .await
            .with_context(|| format!("cannot open and migrate the bench database {db_url}"))?;
            let nats = connect_nats(&nats_url, "datajump-bench").await?;
            let js = jetstream::new(nats.clone());
            let names = Namespace::default();
            datajump_nats::ensure_topology(&js, &names, datajump_nats::Replicas::AUTO).await?;
            datajump_nats::ensure_queue(&js, &names, subjects::DEFAULT_QUEUE).await?;
            let installation = datajump_store::installation::identity(&db).await?;
            Ok::<_, anyhow::Error>((db, nats, Bus::new(js, names, installation)))
        }
        .await;
        let (db, nats, bus) = match prepared {
            Ok(parts) => parts,
            Err(e) => {
                if let Some(name) = &pg_database {
                    backend.drop_database(name).await;
                }
                return Err(e);
            }
        };
        Ok(System {
            backend,
            datajump,
            dir,
            nats_server,
            nats_url,
            db_url,
            pg_database,
            db,
            nats,
            bus,
            shutdown: CancellationToken::new(),
            roles: JoinSet::new(),
            pools: Vec::new(),
            children: Vec::new(),
            ticker: None,
            up: None,
        })
    }

    /// Starts the ticker, the resolver and the runners, and waits until
    /// every runner has announced itself in `dj_runners`.
    pub async fn start_roles(&mut self, runners: RunnerSetup) -> Result<()> {
        let db = datajump_store::db::connect(&self.db_url).await?;
        let nats = connect_nats(&self.nats_url, "datajump-bench-roles").await?;
        self.pools.push(db.clone());
        let ticker = datajump_ticker::Config {
            db: db.clone(),
            nats: nats.clone(),
            names: self.bus.names().clone(),
            replicas: datajump_nats::Replicas::AUTO,
            shard: None,
            default_timezone: chrono_tz::UTC,
            retention: datajump_ticker::cleanup::Retention::default(),
            network: std::sync::Arc::default(),
            periods: datajump_ticker::Periods::default(),
        };
        let resolver = datajump_resolver::Config {
            db,
            nats,
            names: self.bus.names().clone(),
            replicas: datajump_nats::Replicas::AUTO,
            default_timezone: chrono_tz::UTC,
            concurrency: 16,
        };
        let token = self.shutdown.clone();
        self.roles.spawn(async move {
            datajump_ticker::run(ticker, token)
                .await
                .map_err(anyhow::Error::from)
        });
        let token = self.shutdown.clone();
        self.roles.spawn(async move {
            datajump_resolver::run(resolver, token)
                .await
                .map_err(anyhow::Error::from)
        });
        let args = RunnerArgs {
            queues: vec![subjects::DEFAULT_QUEUE.to_owned()],
            slots: runners.slots,
            drain_timeout: 5,
            task_env: Vec::new(),
            task_user: None,
            max_log_bytes: datajump_runner::executor::DEFAULT_MAX_LOG_BYTES,
            network: datajump::commands::roles::NetworkArgs {
                http_allow: Vec::new(),
            },
            metrics: MetricsArgs { metrics_addr: None },
        };
        for index in 0..runners.count {
            if runners.processes {
                self.spawn_runner_process(index, &args)?;
            } else {
                let db = datajump_store::db::connect(&self.db_url).await?;
                self.pools.push(db.clone());
                let nats =
                    connect_nats(&self.nats_url, &format!("datajump-bench-runner-{index}")).await?;
                let config = runner_config(
                    db,
                    nats,
                    self.bus.names(),
                    datajump_nats::Replicas::AUTO,
                    chrono_tz::UTC,
                    &args,
                    None,
                )?;
                let token = self.shutdown.clone();
                self.roles.spawn(async move {
                    datajump_runner::run(config, token)
                        .await
                        .map_err(anyhow::Error::from)
                });
            }
        }
        self.wait_for_runners(runners.count).await
    }

    /// A `datajump` role process on this system's database and NATS,
    /// logging into `log` in its folder at `log_level`, with `args`; no
    /// metrics address (several processes cannot all listen on one), and
    /// killed if the bench drops it.
    fn spawn_role(&self, args: &[String], log: &Path, log_level: &str) -> Result<Child> {
        let log_file = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        Command::new(self.datajump)
            .args(args)
            .env("DATAJUMP_DATABASE_URL", &self.db_url)
            .env("DATAJUMP_NATS_URL", &self.nats_url)
            .env_remove("DATAJUMP_METRICS_ADDR")
            .env("DATAJUMP_LOG", log_level)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start `datajump {}` ({}): {BUILD_HINT}",
                    args.first().map_or("", String::as_str),
                    self.datajump.display()
                )
            })
    }

    fn spawn_runner_process(&mut self, index: usize, args: &RunnerArgs) -> Result<()> {
        let log = self.dir.0.join(format!("runner-{index}.log"));
        let args = [
            "runner".to_owned(),
            "--queues".to_owned(),
            args.queues.join(","),
            "--slots".to_owned(),
            args.slots.to_string(),
            "--drain-timeout".to_owned(),
            args.drain_timeout.to_string(),
        ];
        let child = self.spawn_role(&args, &log, &quiet_log_level())?;
        self.children.push(child);
        Ok(())
    }

    /// Starts `datajump ticker` as a child process (nothing else: no
    /// resolver, no runners), logging at `info` for the ticker's crate into
    /// `ticker.log`; returns its pid and the log's path.
    pub fn spawn_ticker_process(&mut self) -> Result<(u32, PathBuf)> {
        let log = self.dir.0.join("ticker.log");
        // Its "schedules loaded" line is how the bench sees it ready.
        let child = self.spawn_role(&["ticker".to_owned()], &log, "warn,datajump_ticker=info")?;
        let pid = child.id().context("the ticker process has no pid")?;
        self.ticker = Some(child);
        Ok((pid, log))
    }

    /// The log of the `datajump up` process.
    pub fn up_log(&self) -> PathBuf {
        self.dir.0.join("up.log")
    }

    /// The pid of this system's nats-server.
    pub fn nats_server_pid(&self) -> Option<u32> {
        self.nats_server.id()
    }

    /// Starts the whole system as one `datajump up` process on this
    /// system's NATS server and database, as a user runs it (API on a free
    /// port, no DAG folder, its runner with `slots` slots), and waits until
    /// its runner has announced itself; returns its pid. Its log is
    /// `up.log`.
    pub async fn start_up_process(&mut self, slots: usize) -> Result<u32> {
        self.start_up_process_with(slots, &[], &quiet_log_level())
            .await
    }

    /// [`System::start_up_process`] with `extra` flags for `up`, logging at
    /// `log_level` (a `DATAJUMP_LOG` filter) into [`System::up_log`].
    pub async fn start_up_process_with(
        &mut self,
        slots: usize,
        extra: &[&str],
        log_level: &str,
    ) -> Result<u32> {
        let log = self.up_log();
        let api_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()?));
        let mut args = vec![
            "up".to_owned(),
            "--dags".to_owned(),
            self.dir.0.join("no-dags").display().to_string(),
            "--api-addr".to_owned(),
            api_addr.to_string(),
            "--slots".to_owned(),
            slots.to_string(),
            "--data-dir".to_owned(),
            self.dir.0.join("up").display().to_string(),
        ];
        args.extend(extra.iter().map(|flag| (*flag).to_owned()));
        let child = self.spawn_role(&args, &log, log_level)?;
        let pid = child.id().context("the up process has no pid")?;
        self.up = Some(child);
        self.wait_for_runners(1).await?;
        Ok(pid)
    }

    /// Stops the `datajump up` process (SIGTERM: it drains), leaving the
    /// NATS server and the database.
    pub async fn stop_up_process(&mut self) {
        if let Some(mut up) = self.up.take() {
            terminate(&mut up).await;
        }
    }

    async fn wait_for_runners(&mut self, count: usize) -> Result<()> {
        let kv =
            datajump_nats::key_value(self.bus.js(), &self.bus.names().runners_bucket()).await?;
        let started = Instant::now();
        loop {
            let mut seen = 0;
            if let Ok(mut keys) = kv.keys().await {
                while let Some(key) = keys.next().await {
                    seen += usize::from(key.is_ok());
                }
            }
            if seen >= count {
                return Ok(());
            }
            self.check_alive()
                .context("while waiting for the runners")?;
            if started.elapsed() > Duration::from_secs(30) {
                bail!("only {seen} of {count} runners announced themselves within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Checks that no role has stopped; a measurement must not wait for a
    /// run a dead role will never finish.
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(joined) = self.roles.try_join_next() {
            return match joined {
                Ok(Err(e)) => Err(e.context("a role stopped")),
                Err(e) => Err(anyhow::anyhow!("a role panicked: {e}")),
                Ok(Ok(())) => Err(anyhow::anyhow!("a role stopped early")),
            };
        }
        for (index, child) in self.children.iter_mut().enumerate() {
            if let Ok(Some(status)) = child.try_wait() {
                let log = self.dir.0.join(format!("runner-{index}.log"));
                bail!("runner process {index} exited ({status}):\n{}", tail(&log));
            }
        }
        if let Some(Ok(Some(status))) = self.ticker.as_mut().map(Child::try_wait) {
            let log = self.dir.0.join("ticker.log");
            bail!("ticker process exited ({status}):\n{}", tail(&log));
        }
        if let Some(Ok(Some(status))) = self.up.as_mut().map(Child::try_wait) {
            let log = self.dir.0.join("up.log");
            bail!("`datajump up` exited ({status}):\n{}", tail(&log));
        }
        Ok(())
    }

    /// Stops everything and deletes the database and the temporary folder.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        for child in self
            .children
            .iter_mut()
            .chain(&mut self.ticker)
            .chain(&mut self.up)
        {
            terminate(child).await;
        }
        let roles = async { while self.roles.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(30), roles)
            .await
            .is_err()
        {
            eprintln!("warning: roles did not stop within 30 s; aborting them");
            self.roles.abort_all();
        }
        for pool in self.pools.drain(..) {
            let _ = pool.close().await;
        }
        let _ = self.db.close_by_ref().await;
        drop(self.nats);
        terminate(&mut self.nats_server).await;
        if let Some(name) = &self.pg_database {
            self.backend.drop_database(name).await;
        }
        drop(self.dir);
    }
}

/// SIGTERM, then SIGKILL after 10 s.
async fn terminate(child: &mut Child) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_name_is_replaced() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "dj_bench_x"),
            "postgres://postgres@127.0.0.1:5432/dj_bench_x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "b"),
            "postgres://u:p@h/b?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "b"), "postgres://h/b");
    }
}
