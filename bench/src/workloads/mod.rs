//! The workloads: the DAG shapes, how each repetition drives its system,
//! and which figures it reads back from the database. One module per
//! workload family — [`chain`] (`chain10`, `chain1000`), [`fanout`]
//! (`fanout50`), [`wide`] (`wide200`, `wide10k`), [`scale`], [`cron`],
//! [`load`], [`burst`] and [`schedules`] (`schedules1m`) — and here what they share: the workload
//! and task types, the figures, the DAG YAML, and the one-DAG
//! repetition ([`repeat_runs`]: a fresh system, a warm-up run, the measured
//! run, read back as [`RunTimes`]).
//!
//! Every figure comes from timestamps the roles write: a task's
//! `execution.start_time` (taken just before its claim) and `end_time`
//! (just after the executor returned, before the attempt is committed), a
//! run's `created_at`, `finished_at` and `logical_time`. The only instant
//! the bench takes itself is the moment it publishes a manual fire.

mod burst;
mod chain;
mod cron;
mod engine_alone;
mod fanout;
pub mod load;
mod map;
mod scale;

pub use scale::SLOTS as SCALE_SLOTS;
pub mod schedules;
pub mod soak;
mod ui;
mod wide;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use chrono::{DateTime, Utc};
use clap::ValueEnum;
use datajump_shared::dag_file::DagFile;
use datajump_shared::entities::{dag_run, execution, task_instance};
use datajump_shared::messages::{FireMsg, Message};
use datajump_shared::params::Params;
use datajump_shared::subjects::Priority;
use datajump_shared::{RunStatus, TaskStatus};
use datajump_store::catalog;
use futures::StreamExt;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};
use tokio_util::sync::CancellationToken;

use crate::report::{Row, Target};
use crate::system::{Backend, RunnerSetup, System};

/// A benchmark workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// 10 tasks in a line: total time and edge latency.
    #[value(name = "chain10")]
    Chain10,
    /// 1 → 50 → 1: total time and the join's latency.
    #[value(name = "fanout50")]
    Fanout50,
    /// 200 independent tasks: throughput.
    #[value(name = "wide200")]
    Wide200,
    /// 1000 tasks in a line: edge latency at the start and at the end.
    #[value(name = "chain1000")]
    Chain1000,
    /// 10,000 independent tasks: throughput.
    #[value(name = "wide10k")]
    Wide10k,
    /// `sleep 0.2` tasks by 1, 2, 4 and 8 runner processes of 8 slots:
    /// throughput and its ratio to linear.
    #[value(name = "scale")]
    Scale,
    /// Schedules firing every second: fire lag, missed and doubled fires.
    #[value(name = "cron")]
    Cron,
    /// 1,000 runs of a 50-task DAG, then the web UI's grid of them all in
    /// one request and the UI's own load: time and bytes.
    #[value(name = "ui")]
    Ui,
    /// A million daily schedules: ticker start-up, memory and fire lag.
    /// Not run by default: it takes minutes per repetition and
    /// writes its own report section.
    #[value(name = "schedules1m")]
    Schedules1m,
    /// Dispatch latency against offered load (`--load-*`): the curve, its
    /// knee, a table and an SVG plot. Not run by default: a minute per
    /// rate and repetition; it writes its own report section.
    #[value(name = "load")]
    Load,
    /// `--burst-runs` runs due in the same second: time until every first
    /// task started. Not run by default: it applies thousands of DAGs and
    /// waits for a whole minute; it writes its own report section.
    #[value(name = "burst")]
    Burst,
    /// A task lists 10,000 tables in its large output and a mapped task
    /// runs over them: list end → first item QUEUED, and the items'
    /// throughput.
    #[value(name = "map10k")]
    Map10k,
    /// `--soak-tasks` runs offered steadily (`--soak-rate` a second) to
    /// one `datajump up` keeping runs 10 minutes: memory, dispatch and the
    /// database must stay flat. Not run by default (and never in CI): half
    /// an hour and more; it writes its own report section.
    #[value(name = "soak")]
    Soak,
}

impl Workload {
    /// Every workload, in the order `datajump-bench` runs them by default.
    pub const ALL: [Workload; 9] = [
        Workload::Chain10,
        Workload::Fanout50,
        Workload::Wide200,
        Workload::Chain1000,
        Workload::Wide10k,
        Workload::Scale,
        Workload::Cron,
        Workload::Ui,
        Workload::Map10k,
    ];

    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Chain10 => "chain10",
            Workload::Fanout50 => "fanout50",
            Workload::Wide200 => "wide200",
            Workload::Chain1000 => "chain1000",
            Workload::Wide10k => "wide10k",
            Workload::Scale => "scale",
            Workload::Cron => "cron",
            Workload::Ui => "ui",
            Workload::Schedules1m => "schedules1m",
            Workload::Load => "load",
            Workload::Burst => "burst",
            Workload::Map10k => "map10k",
            Workload::Soak => "soak",
        }
    }
}

/// The task type a workload's tasks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// `NOOP`: succeeds in the runner at once, no process.
    Noop,
    /// `SHELL` with `command: "true"`: one bash process per task.
    Shell,
    /// `SHELL` with `command: "sleep 0.2"`: a task that waits, as data
    /// tasks wait on the systems they drive (`scale` only).
    Sleep,
}

impl TaskKind {
    /// Its name in the report.
    pub fn label(self) -> &'static str {
        match self {
            TaskKind::Noop => "NOOP",
            TaskKind::Shell => "SHELL true",
            TaskKind::Sleep => "SHELL sleep 0.2",
        }
    }

    fn yaml(self) -> &'static str {
        match self {
            TaskKind::Noop => "    type: NOOP\n",
            TaskKind::Shell => "    type: SHELL\n    command: \"true\"\n",
            TaskKind::Sleep => "    type: SHELL\n    command: \"sleep 0.2\"\n",
        }
    }
}

/// What every workload shares.
pub struct Bench<'a> {
    /// Where databases come from.
    pub backend: &'a Backend,
    /// The `datajump` binary that role processes run.
    pub datajump: &'a Path,
    /// Repetitions per measurement.
    pub repeat: u32,
    /// The runners of the single-runner-count workloads.
    pub runners: RunnerSetup,
    /// Length of the cron window.
    pub cron_seconds: u64,
    /// Schedules of the cron workload.
    pub cron_schedules: usize,
    /// Tasks of the wide10k DAG.
    pub wide_tasks: usize,
    /// Tasks of the scale DAG.
    pub scale_tasks: usize,
    /// Schedules of the schedules1m workload.
    pub schedules1m_count: usize,
    /// Length of the schedules1m window, in seconds.
    pub schedules1m_seconds: u64,
    /// What `load` sweeps.
    pub load: load::LoadPlan,
    /// Runs of the `burst`.
    pub burst_runs: usize,
    /// What `soak` offers.
    pub soak: soak::SoakPlan,
}

/// What a workload measured: its report rows, and for a workload whose
/// figures do not fit rows alone, an appendix.
pub struct Measured {
    /// The report rows.
    pub rows: Vec<Row>,
    /// A table or plot of its own, if any.
    pub appendix: Option<Appendix>,
}

impl From<Vec<Row>> for Measured {
    fn from(rows: Vec<Row>) -> Measured {
        Measured {
            rows,
            appendix: None,
        }
    }
}

/// What a workload reports beside its rows.
pub struct Appendix {
    /// For the terminal.
    pub text: String,
    /// For the Markdown section, after its table.
    pub markdown: String,
    /// An SVG file the Markdown links to: its file name (written next to
    /// the report) and contents.
    pub svg: Option<(String, String)>,
    /// Remarks for the section's notes.
    pub notes: Vec<String>,
}

/// Every fire the ticker publishes, as a core subscriber on `dj.fire.>` sees
/// it: (schedule id, logical time in unix seconds, instant seen).
pub struct FireWatch {
    stop: CancellationToken,
    seen: tokio::task::JoinHandle<Vec<(i64, i64, DateTime<Utc>)>>,
}

impl FireWatch {
    /// Subscribes and starts collecting.
    pub async fn start(system: &System<'_>) -> Result<FireWatch> {
        let mut fires = system
            .nats
            .subscribe(
                system
                    .bus
                    .names()
                    .stream_subjects(datajump_shared::subjects::Stream::Fire),
            )
            .await
            .context("cannot watch fires")?;
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let seen = tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                tokio::select! {
                    message = fires.next() => {
                        let Some(message) = message else { break };
                        let at = Utc::now();
                        if let Ok(fire) = FireMsg::decode(&message.payload)
                            && let Some(schedule_id) = fire.schedule_id
                        {
                            seen.push((schedule_id, fire.logical_time.timestamp(), at));
                        }
                    }
                    () = stopped.cancelled() => break,
                }
            }
            seen
        });
        Ok(FireWatch { stop, seen })
    }

    /// Stops collecting and returns what was seen.
    pub async fn finish(self) -> Result<Vec<(i64, i64, DateTime<Utc>)>> {
        self.stop.cancel();
        self.seen.await.context("fire watcher")
    }
}

impl Bench<'_> {
    /// The report name of `workload`, with its size when it was changed.
    fn label(&self, workload: Workload) -> String {
        match workload {
            Workload::Wide10k if self.wide_tasks != 10_000 => {
                format!("wide10k (n={})", self.wide_tasks)
            }
            Workload::Scale if self.scale_tasks != 10_000 => {
                format!("scale (n={})", self.scale_tasks)
            }
            _ => workload.name().to_owned(),
        }
    }
}

/// Anchor and target figures (issue 6).
mod figures {
    pub const EDGE_P50_MS: f64 = 5.0;
    pub const EDGE_P99_MS: f64 = 25.0;
    pub const CHAIN10_TOTAL_S: f64 = 0.3;
    pub const FANOUT50_TOTAL_S: f64 = 0.5;
    pub const NOOP_TASKS_PER_S: f64 = 1000.0;
    /// The bound (#49) on SHELL `true` throughput as a share of
    /// the spawn floor measured in the same bench run.
    pub const SHELL_OF_SPAWN_FLOOR: f64 = 0.75;
    pub const SHELL_TASKS_PER_S: f64 = 300.0;
    pub const CRON_LAG_P99_MS: f64 = 50.0;
    pub const CRON_LAG_MAX_MS: f64 = 200.0;
    /// The bench's own criterion for "per-completion cost does not grow".
    pub const CHAIN_GROWTH_MAX: f64 = 1.25;

    pub const AIRFLOW: &str = "Airflow 2.10.5";
    pub const AIRFLOW_CHAIN10_S: f64 = 10.9;
    pub const AIRFLOW_EDGE_MS: f64 = 890.0;
    pub const AIRFLOW_FANOUT50_S: f64 = 21.2;
    pub const AIRFLOW_WIDE200_S: f64 = 71.0;
    pub const AIRFLOW_WIDE200_PER_S: f64 = 2.8;
    pub const AIRFLOW_CRON_FIRST_TASK_MS: f64 = 690.0;
    pub const HATCHET: &str = "Hatchet (10 ms tasks)";
    pub const HATCHET_PER_TASK_MS: f64 = 31.0;
}

/// The targets of an edge's latency.
fn edge_targets() -> Vec<Target> {
    vec![
        Target::median(figures::EDGE_P50_MS),
        Target::tail(figures::EDGE_P99_MS),
    ]
}

/// The YAML of a DAG of `tasks` (name, parents), all of type `kind`, with
/// retries off so a failure shows at once instead of after a back-off.
/// `header` holds the DAG-level lines (run limits, schedules).
fn dag_yaml(name: &str, kind: TaskKind, tasks: &[(String, Vec<String>)], header: &str) -> String {
    let mut yaml = format!("name: {name}\n{header}tasks:\n");
    for (task, deps) in tasks {
        yaml.push_str(&format!("  - name: {task}\n"));
        yaml.push_str(kind.yaml());
        yaml.push_str("    retry: { max: 0 }\n");
        if !deps.is_empty() {
            yaml.push_str(&format!("    depends_on: [{}]\n", deps.join(", ")));
        }
    }
    yaml
}

/// DAG header of the one-run workloads.
const ONE_RUN: &str = "max_active_runs: 1\n";

/// Applies the DAG `yaml` through the catalog, as `dag apply` would;
/// returns its id.
async fn apply(system: &System<'_>, yaml: &str) -> Result<i64> {
    let file = DagFile::parse(yaml).context("bench DAG is invalid")?;
    let report = catalog::apply(&system.db, &file, "UTC", catalog::Origin::Edit)
        .await
        .with_context(|| format!("cannot apply the bench DAG {}", file.name))?;
    Ok(report.dag_id)
}

/// Timestamps of one finished run.
struct RunTimes {
    published: DateTime<Utc>,
    finished: DateTime<Utc>,
    /// By task name.
    tasks: HashMap<String, TaskTimes>,
}

/// When a task was queued (by a resolver, or by the runner that ended its
/// last parent), started and ended (by the runner).
#[derive(Clone, Copy)]
struct TaskTimes {
    queued: Option<DateTime<Utc>>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

fn ms(d: chrono::TimeDelta) -> f64 {
    d.num_microseconds()
        .map_or(f64::NAN, |us| us as f64 / 1000.0)
}

fn secs(d: chrono::TimeDelta) -> f64 {
    ms(d) / 1000.0
}

impl RunTimes {
    fn total_s(&self) -> f64 {
        secs(self.finished - self.published)
    }

    fn task(&self, name: &str) -> Result<TaskTimes> {
        self.tasks
            .get(name)
            .copied()
            .with_context(|| format!("task {name} has no execution"))
    }

    /// Child's start − parent's end, in ms.
    fn edge_ms(&self, parent: &str, child: &str) -> Result<f64> {
        Ok(ms(self.task(child)?.start - self.task(parent)?.end))
    }

    /// The two halves of an edge, in ms: parent's end → child queued (the
    /// runner uploads the log, commits and reports; the resolver picks the
    /// completion up — `queued_at` is taken as its propagation begins), and
    /// child queued → child's start (the propagation commits, the work
    /// message is published and fetched).
    fn edge_parts_ms(&self, parent: &str, child: &str) -> Result<(f64, f64)> {
        let (parent, child) = (self.task(parent)?, self.task(child)?);
        let queued = child.queued.context("a started task has no queued_at")?;
        Ok((ms(queued - parent.end), ms(child.start - queued)))
    }

    fn first_start(&self) -> Option<DateTime<Utc>> {
        self.tasks.values().map(|t| t.start).min()
    }

    fn last_end(&self) -> Option<DateTime<Utc>> {
        self.tasks.values().map(|t| t.end).max()
    }
}

/// A run that succeeded: when its fire was published, its id, and when it
/// finished.
struct Succeeded {
    published: DateTime<Utc>,
    run_id: i64,
    finished: DateTime<Utc>,
}

/// Publishes a manual fire of `dag_id` and waits for its run to succeed;
/// a run that ends otherwise is an error naming some tasks that did not
/// succeed.
async fn publish_and_wait(
    system: &mut System<'_>,
    dag_id: i64,
    timeout: Duration,
) -> Result<Succeeded> {
    let published = Utc::now();
    let fire = FireMsg::manual(
        dag_id,
        Priority::DEFAULT,
        published,
        published.date_naive(),
        Params::new(),
    );
    system.bus.publish_fire(&fire).await?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    let (run_id, status, finished) = loop {
        let row: Option<(i64, RunStatus, Option<DateTime<Utc>>)> = dag_run::Entity::find()
            .select_only()
            .column(dag_run::Column::Id)
            .column(dag_run::Column::Status)
            .column(dag_run::Column::FinishedAt)
            .filter(dag_run::Column::DedupKey.eq(&fire.dedup_key))
            .into_tuple()
            .one(&system.db)
            .await?;
        if let Some((id, status, finished)) = row
            && status.is_terminal()
        {
            break (id, status, finished.unwrap_or_else(Utc::now));
        }
        if started.elapsed() > timeout {
            bail!("the run did not finish within {} s", timeout.as_secs());
        }
        system.check_alive()?;
        tokio::time::sleep(pause).await;
        pause = (pause * 3 / 2).min(Duration::from_millis(250));
    };
    if status != RunStatus::Success {
        let failed: Vec<(String, TaskStatus, Option<String>)> = task_instance::Entity::find()
            .select_only()
            .column(task_instance::Column::TaskName)
            .column(task_instance::Column::Status)
            .column(task_instance::Column::Reason)
            .filter(task_instance::Column::DagRunId.eq(run_id))
            .filter(task_instance::Column::Status.ne(TaskStatus::Success))
            .limit(3)
            .into_tuple()
            .all(&system.db)
            .await?;
        bail!("the run ended {status}: {failed:?}");
    }
    Ok(Succeeded {
        published,
        run_id,
        finished,
    })
}

/// Publishes a manual fire of `dag_id` and waits for its run to succeed.
async fn trigger_and_wait(
    system: &mut System<'_>,
    dag_id: i64,
    timeout: Duration,
) -> Result<RunTimes> {
    let ended = publish_and_wait(system, dag_id, timeout).await?;
    let (published, run_id, finished) = (ended.published, ended.run_id, ended.finished);
    let names: HashMap<i64, (String, Option<DateTime<Utc>>)> = task_instance::Entity::find()
        .select_only()
        .column(task_instance::Column::Id)
        .column(task_instance::Column::TaskName)
        .column(task_instance::Column::QueuedAt)
        .filter(task_instance::Column::DagRunId.eq(run_id))
        .into_tuple::<(i64, String, Option<DateTime<Utc>>)>()
        .all(&system.db)
        .await?
        .into_iter()
        .map(|(id, name, queued)| (id, (name, queued)))
        .collect();
    let executions: Vec<(i64, DateTime<Utc>, Option<DateTime<Utc>>)> = execution::Entity::find()
        .select_only()
        .column(execution::Column::TaskInstanceId)
        .column(execution::Column::StartTime)
        .column(execution::Column::EndTime)
        .filter(execution::Column::DagRunId.eq(run_id))
        .into_tuple()
        .all(&system.db)
        .await?;
    if executions.len() != names.len() {
        bail!(
            "{} executions for {} task instances: a task ran twice or not at all",
            executions.len(),
            names.len()
        );
    }
    let mut tasks = HashMap::with_capacity(names.len());
    for (instance, start, end) in executions {
        let (name, queued) = names
            .get(&instance)
            .with_context(|| format!("execution of unknown instance {instance}"))?;
        let end = end.with_context(|| format!("execution of {name} has no end"))?;
        tasks.insert(
            name.clone(),
            TaskTimes {
                queued: *queued,
                start,
                end,
            },
        );
    }
    Ok(RunTimes {
        published,
        finished,
        tasks,
    })
}

/// One repetition of a one-DAG workload: a fresh system, the DAG, a warm-up
/// run of a one-task DAG of the same task type (pools, page cache, bash),
/// then the measured run.
async fn one_run(
    bench: &Bench<'_>,
    runners: RunnerSetup,
    kind: TaskKind,
    yaml: &str,
    timeout: Duration,
) -> Result<RunTimes> {
    let mut system = System::start(bench.backend, bench.datajump).await?;
    let result = async {
        let warmup = apply(
            &system,
            &dag_yaml("bench_warmup", kind, &wide::tasks(1), ONE_RUN),
        )
        .await?;
        let dag_id = apply(&system, yaml).await?;
        system.start_roles(runners).await?;
        trigger_and_wait(&mut system, warmup, Duration::from_secs(60))
            .await
            .context("warm-up run")?;
        trigger_and_wait(&mut system, dag_id, timeout).await
    }
    .await;
    system.stop().await;
    result
}

/// Runs a one-DAG workload `bench.repeat` times, printing a progress line
/// per repetition.
async fn repeat_runs(
    bench: &Bench<'_>,
    label: &str,
    runners: RunnerSetup,
    kind: TaskKind,
    tasks: &[(String, Vec<String>)],
) -> Result<Vec<RunTimes>> {
    let yaml = dag_yaml(&format!("bench_{}", tasks.len()), kind, tasks, ONE_RUN);
    let timeout = Duration::from_secs(120 + tasks.len() as u64 / 5);
    let mut runs = Vec::new();
    for rep in 1..=bench.repeat {
        let started = Instant::now();
        let run = one_run(bench, runners, kind, &yaml, timeout)
            .await
            .with_context(|| format!("{label} {} repetition {rep}", kind.label()))?;
        eprintln!(
            "  {label} {} [{}] rep {rep}/{}: run {:.3} s ({} tasks; repetition took {:.1} s)",
            kind.label(),
            bench.backend.kind.key(),
            bench.repeat,
            run.total_s(),
            run.tasks.len(),
            started.elapsed().as_secs_f64()
        );
        runs.push(run);
    }
    Ok(runs)
}

/// Runs `workload` with `kind` tasks; returns its report rows.
pub async fn run(bench: &Bench<'_>, workload: Workload, kind: TaskKind) -> Result<Measured> {
    let rows = match workload {
        Workload::Chain10 => chain::chain10(bench, kind).await,
        Workload::Fanout50 => fanout::fanout50(bench, kind).await,
        Workload::Wide200 => wide::wide200(bench, kind).await,
        Workload::Chain1000 => chain::chain1000(bench, kind).await,
        Workload::Wide10k => wide::wide10k(bench, kind).await,
        Workload::Scale => scale::run(bench).await,
        Workload::Cron => cron::run(bench).await,
        Workload::Ui => ui::run(bench).await,
        Workload::Schedules1m => schedules::run(bench).await,
        Workload::Burst => burst::run(bench).await,
        Workload::Map10k => map::run(bench).await,
        Workload::Load => return load::run(bench).await,
        Workload::Soak => return soak::run(bench).await,
    };
    rows.map(Measured::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_dags_are_valid() {
        for kind in [TaskKind::Noop, TaskKind::Shell, TaskKind::Sleep] {
            for tasks in [chain::tasks(10), fanout::tasks(50), wide::tasks(3)] {
                let yaml = dag_yaml("bench_x", kind, &tasks, ONE_RUN);
                let parsed = DagFile::parse(&yaml);
                assert!(parsed.is_ok(), "{yaml}\n{parsed:?}");
            }
        }
        let cron = DagFile::parse(&cron::cron_yaml(7));
        assert!(cron.is_ok(), "{cron:?}");
        let map = DagFile::parse(&map::yaml());
        assert!(map.is_ok(), "{map:?}");
    }
}
