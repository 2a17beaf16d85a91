//! The engine test layer: an installation's database (SQLite in a temporary
//! file, or a fresh PostgreSQL database) and the engine's entry points
//! called directly — no NATS, no role, no wall clock. Each call applies one
//! command, returns what it released ([`Effects`]) and leaves the rows to
//! read back; time is the caller's [`EngineEnv::now`], moved by hand.
//!
//! The invariants every test may check after any step are pure functions
//! over the rows ([`invariants`]), so the model test and the rule tests
//! share them.

#![allow(dead_code)] // each test file uses its own part of the layer

pub mod invariants;

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use datajump_engine::{AttemptEnd, Claim, Effects, End, FireOutcome, Recorded};
use datajump_migrations::{Migrator, MigratorTrait};
use datajump_shared::dag_file::DagFile;
use datajump_shared::entities::{dag_run, execution, task_instance};
use datajump_shared::messages::FireMsg;
use datajump_shared::{RunId, TaskStatus};
use datajump_store::catalog::{self, Origin};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
    Statement,
};

/// The runner id claims and ends are recorded under.
pub const RUNNER: &str = "engine-test-runner";

/// Which database an environment runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One installation's database and the engine's clock.
pub struct EngineEnv {
    pub db: DatabaseConnection,
    pub backend: Backend,
    /// The instant the next command happens at.
    pub now: DateTime<Utc>,
    _file: Option<tempfile::TempDir>,
    postgres: Option<(String, String)>,
}

/// Where SQLite files go: memory (`/dev/shm`) where the machine has it,
/// since a test's database never outlives it and each commit's sync to a
/// disk is most of a step's time.
fn memory_folder() -> std::path::PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// The PostgreSQL server to create test databases on: the one the
/// end-to-end harness reads.
fn postgres_admin_url() -> String {
    std::env::var("DATAJUMP_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

impl EngineEnv {
    /// A migrated SQLite database in a temporary file.
    pub async fn sqlite() -> EngineEnv {
        let dir = tempfile::tempdir_in(memory_folder()).expect("a temporary folder");
        let mut env = EngineEnv::sqlite_at(&dir.path().join("dj.db")).await;
        env._file = Some(dir);
        env
    }

    /// The SQLite database in `file` (created if missing), migrated to
    /// this release's schema; the caller keeps the file.
    pub async fn sqlite_at(file: &std::path::Path) -> EngineEnv {
        let url = format!("sqlite://{}?mode=rwc", file.display());
        let (db, ()) =
            datajump_store::db::connect_migrated(&url, async |db| Migrator::up(db, None).await)
                .await
                .expect("a migrated SQLite database");
        EngineEnv {
            db,
            backend: Backend::Sqlite,
            now: start_of_time(),
            _file: None,
            postgres: None,
        }
    }

    /// A migrated, fresh PostgreSQL database, or `None` (with a line saying
    /// so) when no server answers and `DATAJUMP_NEED_POSTGRES` is not 1;
    /// under `scripts/test.sh` it is, and a missing server fails the test.
    pub async fn postgres() -> Option<EngineEnv> {
        let admin_url = postgres_admin_url();
        let admin = match sea_orm::Database::connect(&admin_url).await {
            Ok(admin) => admin,
            Err(e) if std::env::var("DATAJUMP_NEED_POSTGRES").as_deref() != Ok("1") => {
                eprintln!("skipped on PostgreSQL: no server at {admin_url} ({e})");
                return None;
            }
            Err(e) => panic!("PostgreSQL at {admin_url}: {e}"),
        };
        let name = format!("dj_engine_{}", uuid::Uuid::new_v4().simple());
        admin
            .execute_unprepared(&format!("CREATE DATABASE {name}"))
            .await
            .expect("CREATE DATABASE");
        let (base, query) = admin_url
            .split_once('?')
            .map_or((admin_url.as_str(), ""), |(b, q)| (b, q));
        let base = base.rsplit_once('/').map_or(base, |(server, _)| server);
        let url = if query.is_empty() {
            format!("{base}/{name}")
        } else {
            format!("{base}/{name}?{query}")
        };
        let (db, ()) =
            datajump_store::db::connect_migrated(&url, async |db| Migrator::up(db, None).await)
                .await
                .expect("a migrated PostgreSQL database");
        Some(EngineEnv {
            db,
            backend: Backend::Postgres,
            now: start_of_time(),
            _file: None,
            postgres: Some((admin_url, name)),
        })
    }

    /// Applies a DAG file; returns the DAG's id.
    pub async fn apply(&self, yaml: &str) -> i64 {
        let file = DagFile::parse(yaml).unwrap_or_else(|e| panic!("the DAG file: {e}\n{yaml}"));
        catalog::apply(&self.db, &file, "UTC", Origin::Edit)
            .await
            .expect("apply")
            .dag_id
    }

    /// A manual run of `dag_id` for `biz_date`: its outcome, the run's id
    /// when one was created, and what the commit released.
    pub async fn fire(&self, dag_id: i64, biz_date: NaiveDate) -> (Option<RunId>, Effects) {
        let fire = FireMsg::manual(
            dag_id,
            Default::default(),
            self.now,
            biz_date,
            Default::default(),
        );
        let (outcomes, effects) = datajump_engine::create_runs(&self.db, &[&fire], self.now)
            .await
            .expect("create_runs");
        let run = match outcomes.first() {
            Some(FireOutcome::Created) => dag_run::Entity::find()
                .filter(dag_run::Column::DagId.eq(dag_id))
                .order_by_desc(dag_run::Column::Id)
                .one(&self.db)
                .await
                .expect("the run")
                .map(|run| RunId(run.id)),
            _ => None,
        };
        (run, effects)
    }

    /// Applies `yaml` and starts a manual run of it for 2026-01-04.
    pub async fn start(&self, yaml: &str) -> RunId {
        let dag = self.apply(yaml).await;
        let (run, _released) = self.fire(dag, date("2026-01-04")).await;
        run.unwrap_or_else(|| panic!("{:?}: the fire created no run", self.backend))
    }

    /// A run's task instances by task name: those planned with it (a
    /// mapped task's aggregate, not its items: [`EngineEnv::items`]).
    pub async fn instances(&self, run: RunId) -> BTreeMap<String, task_instance::Model> {
        task_instance::Entity::find()
            .filter(task_instance::Column::DagRunId.eq(run.0))
            .filter(task_instance::Column::MapIndex.eq(task_instance::PLANNED))
            .all(&self.db)
            .await
            .expect("task instances")
            .into_iter()
            .map(|row| (row.task_name.clone(), row))
            .collect()
    }

    /// The items of mapped task `task` in `run`, by index.
    pub async fn items(&self, run: RunId, task: &str) -> Vec<task_instance::Model> {
        task_instance::Entity::find()
            .filter(task_instance::Column::DagRunId.eq(run.0))
            .filter(task_instance::Column::TaskName.eq(task))
            .filter(task_instance::Column::MapIndex.gte(0))
            .order_by_asc(task_instance::Column::MapIndex)
            .all(&self.db)
            .await
            .expect("map items")
    }

    /// The statuses of `task`'s items in `run`, by index.
    pub async fn item_statuses(&self, run: RunId, task: &str) -> Vec<TaskStatus> {
        self.items(run, task)
            .await
            .iter()
            .map(|item| item.status)
            .collect()
    }

    /// Claims item `index` of `task` in `run` and ends its attempt as `end`
    /// says; panics if the claim is lost.
    pub async fn run_item(&self, run: RunId, task: &str, index: usize, end: AttemptEnd) -> Effects {
        let item = self.items(run, task).await.remove(index);
        let (execution, mut effects) = self.claim(&item).await;
        let execution = execution.unwrap_or_else(|| {
            panic!(
                "the claim of '{task}'[{index}] ({:?}) was lost",
                item.status
            )
        });
        let claimed = self.instance_by_id(item.id).await;
        effects.merge(self.end(&claimed, execution, end).await);
        effects
    }

    /// Every task instance of the installation.
    pub async fn all_instances(&self) -> Vec<task_instance::Model> {
        task_instance::Entity::find()
            .order_by_asc(task_instance::Column::Id)
            .all(&self.db)
            .await
            .expect("task instances")
    }

    /// Every run of the installation.
    pub async fn all_runs(&self) -> Vec<dag_run::Model> {
        dag_run::Entity::find()
            .order_by_asc(dag_run::Column::Id)
            .all(&self.db)
            .await
            .expect("runs")
    }

    /// The instance `task` of `run`.
    pub async fn instance(&self, run: RunId, task: &str) -> task_instance::Model {
        self.instances(run)
            .await
            .remove(task)
            .unwrap_or_else(|| panic!("no task '{task}' in run {}", run.0))
    }

    /// The instance with id `id`, as stored now.
    pub async fn instance_by_id(&self, id: i64) -> task_instance::Model {
        task_instance::Entity::find_by_id(id)
            .one(&self.db)
            .await
            .expect("the instance")
            .unwrap_or_else(|| panic!("no task instance {id}"))
    }

    /// The run's row.
    pub async fn run(&self, run: RunId) -> dag_run::Model {
        dag_run::Entity::find_by_id(run.0)
            .one(&self.db)
            .await
            .expect("the run")
            .expect("a run row")
    }

    /// A runner claims the instance's next attempt: the execution row's id
    /// if it won the claim.
    pub async fn claim(&self, row: &task_instance::Model) -> (Option<i64>, Effects) {
        let claim = Claim {
            task_instance_id: row.instance_id(),
            attempt: row.attempt,
        };
        let (recorded, effects): (Recorded, Effects) =
            datajump_engine::record(&self.db, RUNNER, &[&claim], &[], self.now)
                .await
                .expect("record a claim");
        let execution = recorded
            .claimed
            .get(&row.instance_id())
            .map(|claimed| claimed.execution.id);
        (execution, effects)
    }

    /// The execution row of the attempt `row` (RUNNING, as last read) runs.
    pub async fn open_execution(&self, row: &task_instance::Model) -> i64 {
        execution::Entity::find()
            .filter(execution::Column::TaskInstanceId.eq(row.id))
            .filter(execution::Column::Attempt.eq(row.last_attempt()))
            .one(&self.db)
            .await
            .expect("the execution")
            .unwrap_or_else(|| panic!("'{}' runs no attempt", row.task_name))
            .id
    }

    /// The running attempt of `row` (as last read) ends as `end` says.
    pub async fn end(
        &self,
        row: &task_instance::Model,
        execution_id: i64,
        end: AttemptEnd,
    ) -> Effects {
        self.end_declaring(row, execution_id, end, None).await
    }

    /// [`EngineEnv::end`], the attempt having declared `outputs`.
    pub async fn end_declaring(
        &self,
        row: &task_instance::Model,
        execution_id: i64,
        end: AttemptEnd,
        outputs: Option<datajump_shared::outputs::Outputs>,
    ) -> Effects {
        self.end_writing(row, execution_id, end, outputs, None)
            .await
    }

    /// [`EngineEnv::end_declaring`], the attempt having written a large
    /// output too.
    pub async fn end_writing(
        &self,
        row: &task_instance::Model,
        execution_id: i64,
        end: AttemptEnd,
        outputs: Option<datajump_shared::outputs::Outputs>,
        large_output: Option<datajump_shared::outputs::LargeOutput>,
    ) -> Effects {
        let status = match &end {
            AttemptEnd::Terminal(status) => *status,
            AttemptEnd::Retry { .. } => TaskStatus::Failed,
            AttemptEnd::Reschedule { .. } => TaskStatus::UpForReschedule,
        };
        let ended = End {
            task_instance_id: row.instance_id(),
            attempt: row.attempt - 1,
            execution_id,
            abandoned: false,
            instance_end: end,
            status,
            reason: (status != TaskStatus::Success)
                .then(|| datajump_shared::problem::Reason::Said("ended by the test".to_owned())),
            end: self.now,
            duration_ms: 0,
            exit_code: None,
            log_tail: String::new(),
            log_path: None,
            outputs,
            large_output,
            written: Vec::new(),
        };
        let (_, effects) = datajump_engine::record(&self.db, RUNNER, &[], &[&ended], self.now)
            .await
            .expect("record an end");
        effects
    }

    /// Claims the QUEUED instance `task` of `run` and ends its attempt as
    /// `end` says; panics if the claim is lost.
    pub async fn run_task(&self, run: RunId, task: &str, end: AttemptEnd) -> Effects {
        self.run_task_declaring(run, task, end, None).await
    }

    /// [`EngineEnv::run_task`], the attempt having declared `outputs`.
    pub async fn run_task_declaring(
        &self,
        run: RunId,
        task: &str,
        end: AttemptEnd,
        outputs: Option<datajump_shared::outputs::Outputs>,
    ) -> Effects {
        let row = self.instance(run, task).await;
        let (execution, mut effects) = self.claim(&row).await;
        let execution = execution
            .unwrap_or_else(|| panic!("the claim of '{task}' ({:?}) was lost", row.status));
        let claimed = self.instance(run, task).await;
        effects.merge(self.end_declaring(&claimed, execution, end, outputs).await);
        effects
    }

    /// Claims the QUEUED instance `task` of `run` and ends its attempt as
    /// `end` says, the attempt having written `large` to
    /// `$DJ_OUTPUT_JSON`; panics if the claim is lost.
    pub async fn run_task_writing(
        &self,
        run: RunId,
        task: &str,
        end: AttemptEnd,
        large: datajump_shared::outputs::LargeOutput,
    ) -> Effects {
        let row = self.instance(run, task).await;
        let (execution, mut effects) = self.claim(&row).await;
        let execution = execution
            .unwrap_or_else(|| panic!("the claim of '{task}' ({:?}) was lost", row.status));
        let claimed = self.instance(run, task).await;
        effects.merge(
            self.end_writing(&claimed, execution, end, None, Some(large))
                .await,
        );
        effects
    }

    /// The retry (or next check) `row` waits for comes due at
    /// [`EngineEnv::now`]: what the deadline scan does.
    pub async fn retry_due(&self, row: &task_instance::Model) -> Effects {
        datajump_engine::retry_due(&self.db, row.instance_id(), row.status, self.now)
            .await
            .expect("retry_due")
            .unwrap_or_default()
    }

    /// Statuses of a run's instances by task name.
    pub async fn statuses(&self, run: RunId) -> BTreeMap<String, TaskStatus> {
        self.instances(run)
            .await
            .into_iter()
            .map(|(name, row)| (name, row.status))
            .collect()
    }

    /// Runs a statement and returns nothing: for tests that corrupt rows.
    pub async fn execute(&self, sql: &str) {
        self.db
            .execute_raw(Statement::from_string(self.db.get_database_backend(), sql))
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

impl Drop for EngineEnv {
    fn drop(&mut self) {
        let Some((admin_url, name)) = self.postgres.take() else {
            return;
        };
        // Dropped on a thread of its own: Drop cannot await, and the test's
        // runtime may be shutting down.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                if let Ok(admin) = sea_orm::Database::connect(&admin_url).await {
                    let _ = admin
                        .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await;
                }
            });
        })
        .join();
    }
}

/// Where every environment's clock starts.
pub fn start_of_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 2, 0, 0)
        .single()
        .expect("a valid instant")
}

/// A business date written `YYYY-MM-DD`.
pub fn date(text: &str) -> NaiveDate {
    text.parse().expect("a date written YYYY-MM-DD")
}

/// The status of `task` in `statuses`.
pub fn status_of(statuses: &BTreeMap<String, TaskStatus>, task: &str) -> TaskStatus {
    *statuses
        .get(task)
        .unwrap_or_else(|| panic!("no task '{task}' in {statuses:?}"))
}

/// An attempt that succeeded.
pub fn success() -> AttemptEnd {
    AttemptEnd::Terminal(TaskStatus::Success)
}

/// An attempt that failed with no retry left.
pub fn failure() -> AttemptEnd {
    AttemptEnd::Terminal(TaskStatus::Failed)
}
