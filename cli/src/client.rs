//! How user commands reach the system.
//!
//! Until the HTTP API serves these operations, user commands talk to the
//! database and NATS directly, and only through this module, so switching
//! them to the API changes this file and nothing else.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use chrono::{NaiveDate, Utc};
use datajump_shared::alerts;
use datajump_shared::backfill::{self, Planned};
use datajump_shared::biz_date::{DEFAULT_OFFSET_DAYS, biz_date_for};
use datajump_shared::catalog::{self, ApplyReport};
use datajump_shared::cron::parse_time_zone;
use datajump_shared::dag_file::DagFile;
use datajump_shared::entities::{alert, dag, dag_run, execution, task_instance};
use datajump_shared::messages::FireMsg;
use datajump_shared::plan::Params;
use datajump_shared::subjects;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use crate::Global;

/// A connection to the system for user commands.
pub struct Client {
    db: DatabaseConnection,
    global: Global,
    /// Connected on first use: most commands never need NATS.
    js: tokio::sync::OnceCell<async_nats::jetstream::Context>,
}

/// A run with its task instances.
#[derive(Debug, serde::Serialize)]
pub struct RunView {
    /// The run.
    #[serde(flatten)]
    pub run: RunSummary,
    /// Its instances, in task order.
    pub tasks: Vec<TaskView>,
}

/// A run's headline fields.
#[derive(Debug, serde::Serialize)]
pub struct RunSummary {
    /// Run id.
    pub id: i64,
    /// Run key.
    pub dedup_key: String,
    /// SCHEDULE, MANUAL, …
    pub trigger_type: String,
    /// Business date.
    pub biz_date: NaiveDate,
    /// Logical time (RFC 3339).
    pub logical_time: String,
    /// Status.
    pub status: String,
    /// Finish time (RFC 3339).
    pub finished_at: Option<String>,
}

/// A task instance's headline fields.
#[derive(Debug, serde::Serialize)]
pub struct TaskView {
    /// Instance id.
    pub id: i64,
    /// Task name.
    pub name: String,
    /// Status.
    pub status: String,
    /// Attempts started.
    pub attempts: i32,
    /// Retry time when UP_FOR_RETRY.
    pub retry_at: Option<String>,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
}

impl Client {
    /// Connects to the database (and migrates it, so a fresh file works).
    pub async fn connect(global: &Global) -> Result<Client> {
        let db = crate::commands::roles::database(global).await?;
        Ok(Client::with_database(db, global))
    }

    /// A client over an already open (and migrated) database.
    pub fn with_database(db: DatabaseConnection, global: &Global) -> Client {
        Client {
            db,
            global: global.clone(),
            js: tokio::sync::OnceCell::new(),
        }
    }

    async fn jetstream(&self) -> Result<async_nats::jetstream::Context> {
        let js = self
            .js
            .get_or_try_init(|| async {
                let client = tokio::time::timeout(
                    Duration::from_secs(10),
                    datajump_nats::connect(&self.global.nats_url, "datajump-cli"),
                )
                .await
                .with_context(|| format!("NATS at {} does not answer", self.global.nats_url))??;
                let js = async_nats::jetstream::new(client);
                datajump_nats::ensure_topology(&js).await?;
                anyhow::Ok(js)
            })
            .await?;
        Ok(js.clone())
    }

    /// Validates and stores a DAG file; tells tickers when schedules changed.
    pub async fn apply(&self, file: &DagFile) -> Result<ApplyReport> {
        let report = catalog::apply(&self.db, file, &self.global.timezone).await?;
        if report.schedules_touched() {
            self.notify_schedules_changed().await;
        }
        Ok(report)
    }

    /// Tells running tickers to reload schedules now (they also reload on a timer).
    pub async fn notify_schedules_changed(&self) {
        if let Ok(Ok(client)) = tokio::time::timeout(
            Duration::from_secs(2),
            async_nats::connect(self.global.nats_url.split(',').next().unwrap_or_default()),
        )
        .await
        {
            let _ = client.publish(subjects::SCHEDULES_CHANGED, "".into()).await;
            let _ = client.flush().await;
        }
    }

    /// Kills a task instance; `None` if it had already ended.
    pub async fn kill_instance(&self, id: i64) -> Result<Option<task_instance::Model>> {
        task_instance::Entity::find_by_id(id)
            .one(&self.db)
            .await?
            .with_context(|| format!("no task instance {id}"))?;
        let js = self.jetstream().await?;
        Ok(datajump_nats::control::kill_instance(&self.db, &js, id).await?)
    }

    /// Kills a run and every live task in it; `None` if it had already ended.
    pub async fn kill_run(&self, run_id: i64) -> Result<Option<datajump_shared::state::KilledRun>> {
        dag_run::Entity::find_by_id(run_id)
            .one(&self.db)
            .await?
            .with_context(|| format!("no run {run_id}"))?;
        let js = self.jetstream().await?;
        Ok(datajump_nats::control::kill_run(&self.db, &js, run_id).await?)
    }

    /// The fires of a backfill of DAG `dag_name` over `from..=to`
    /// ([`datajump_shared::backfill::plan`]).
    pub async fn backfill_plan(
        &self,
        dag_name: &str,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<Planned>> {
        let dag = catalog::dag_by_name(&self.db, dag_name).await?;
        let zone = parse_time_zone(&self.global.timezone)?;
        Ok(backfill::plan(&self.db, dag.id, from, to, zone).await?)
    }

    /// The status of the run with this key, if it exists.
    pub async fn run_status(&self, dedup_key: &str) -> Result<Option<String>> {
        Ok(dag_run::Entity::find()
            .filter(dag_run::Column::DedupKey.eq(dedup_key))
            .one(&self.db)
            .await?
            .map(|r| r.status.to_string()))
    }

    /// Publishes a fire.
    pub async fn publish_fire(&self, fire: &FireMsg) -> Result<()> {
        let js = self.jetstream().await?;
        datajump_nats::publish_fire(&js, fire).await?;
        Ok(())
    }

    /// A task instance by id.
    pub async fn instance(&self, id: i64) -> Result<task_instance::Model> {
        task_instance::Entity::find_by_id(id)
            .one(&self.db)
            .await?
            .with_context(|| format!("no task instance {id}"))
    }

    /// Puts instances of a run back to PENDING; returns those queued at once.
    pub async fn reset(
        &self,
        run_id: i64,
        scope: datajump_shared::state::ResetScope,
    ) -> Result<Vec<task_instance::Model>> {
        let js = self.jetstream().await?;
        Ok(datajump_nats::control::reset(&self.db, &js, run_id, scope).await?)
    }

    /// Marks a task instance SUCCESS or FAILED by hand.
    pub async fn mark(
        &self,
        id: i64,
        to: datajump_shared::TaskStatus,
    ) -> Result<Vec<task_instance::Model>> {
        let js = self.jetstream().await?;
        Ok(datajump_nats::control::mark(&self.db, &js, id, to).await?)
    }

    /// DAGs by name.
    pub async fn dags(&self) -> Result<Vec<dag::Model>> {
        Ok(dag::Entity::find()
            .order_by_asc(dag::Column::Name)
            .all(&self.db)
            .await?)
    }

    /// Starts a MANUAL run; returns its run key at once.
    pub async fn trigger(
        &self,
        dag_name: &str,
        params: Params,
        biz_date: Option<NaiveDate>,
    ) -> Result<String> {
        let dag = catalog::dag_by_name(&self.db, dag_name).await?;
        let now = Utc::now();
        let zone = parse_time_zone(&self.global.timezone)?;
        let biz_date = biz_date.unwrap_or_else(|| biz_date_for(now, zone, DEFAULT_OFFSET_DAYS));
        let mut fire = FireMsg::manual(dag.id, now, biz_date, params);
        fire.time_zone = zone.name().to_owned();
        let js = self.jetstream().await?;
        datajump_nats::publish_fire(&js, &fire).await?;
        Ok(fire.dedup_key)
    }

    /// The run with this key, once the resolver has created it.
    pub async fn run_by_key(&self, dedup_key: &str) -> Result<Option<RunView>> {
        let run = dag_run::Entity::find()
            .filter(dag_run::Column::DedupKey.eq(dedup_key))
            .one(&self.db)
            .await?;
        match run {
            None => Ok(None),
            Some(run) => Ok(Some(self.view(run).await?)),
        }
    }

    /// Waits until the run with this key is finished.
    pub async fn wait(&self, dedup_key: &str, timeout: Duration) -> Result<RunView> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut created = false;
        loop {
            if let Some(view) = self.run_by_key(dedup_key).await? {
                created = true;
                if !matches!(view.run.status.as_str(), "RUNNING" | "QUEUED") {
                    return Ok(view);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                if created {
                    bail!("the run did not finish within {}s", timeout.as_secs());
                }
                bail!(
                    "no resolver created the run within {}s: is `datajump up` (or a resolver) running?",
                    timeout.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A DAG's most recent runs.
    pub async fn runs(&self, dag_name: &str, limit: u64) -> Result<Vec<RunView>> {
        let dag = catalog::dag_by_name(&self.db, dag_name).await?;
        let runs = dag_run::Entity::find()
            .filter(dag_run::Column::DagId.eq(dag.id))
            .order_by_desc(dag_run::Column::Id)
            .limit(limit)
            .all(&self.db)
            .await?;
        let mut views = Vec::with_capacity(runs.len());
        for run in runs {
            views.push(self.view(run).await?);
        }
        Ok(views)
    }

    /// The execution of a task instance to show: attempt `attempt`, or the
    /// latest; waits (when `wait`) until one exists.
    pub async fn execution(
        &self,
        task_instance_id: i64,
        attempt: Option<i32>,
        wait: bool,
    ) -> Result<execution::Model> {
        let instance = task_instance::Entity::find_by_id(task_instance_id)
            .one(&self.db)
            .await?
            .with_context(|| format!("no task instance {task_instance_id}"))?;
        loop {
            let mut query = execution::Entity::find()
                .filter(execution::Column::TaskInstanceId.eq(task_instance_id));
            if let Some(attempt) = attempt {
                query = query.filter(execution::Column::Attempt.eq(attempt));
            }
            if let Some(found) = query
                .order_by_desc(execution::Column::Attempt)
                .one(&self.db)
                .await?
            {
                return Ok(found);
            }
            if !wait {
                match attempt {
                    Some(n) => bail!(
                        "task instance {task_instance_id} ({}) has no attempt {n}",
                        instance.task_name
                    ),
                    None => bail!(
                        "task instance {task_instance_id} ({}) has not started yet (status {})",
                        instance.task_name,
                        instance.status
                    ),
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Task instance ids of a run, in task order.
    pub async fn run_instances(&self, run_id: i64) -> Result<Vec<task_instance::Model>> {
        let instances = task_instance::Entity::find()
            .filter(task_instance::Column::DagRunId.eq(run_id))
            .order_by_asc(task_instance::Column::Id)
            .all(&self.db)
            .await?;
        if instances.is_empty() {
            bail!("no run {run_id}");
        }
        Ok(instances)
    }

    /// An execution's whole log: the full copy from the object store, or the
    /// database's tail when the full copy is not (yet) there.
    pub async fn full_log(&self, exec: &execution::Model) -> Result<String> {
        if let Some(name) = &exec.log_path
            && let Ok(js) = self.jetstream().await
            && let Ok(store) = js.get_object_store(subjects::LOGS_BUCKET).await
            && let Ok(mut object) = store.get(name.as_str()).await
        {
            let mut bytes = Vec::new();
            if tokio::io::AsyncReadExt::read_to_end(&mut object, &mut bytes)
                .await
                .is_ok()
            {
                return Ok(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
        Ok(exec.log_tail.clone().unwrap_or_default())
    }

    /// Prints an execution's log as it is written until the attempt ends.
    ///
    /// Live lines carry their number, and a tail (asked of the runner right
    /// after subscribing, else the one the database keeps) tells the number
    /// of its last line, so the two are joined without gaps or repeats: a
    /// live line that arrives ahead of a gap waits until a stored tail (the
    /// runner refreshes it every few seconds) or, at the end, the full log
    /// fills the gap.
    pub async fn follow(
        &self,
        exec: &execution::Model,
        out: &mut impl std::io::Write,
    ) -> Result<()> {
        use datajump_shared::logs::SEQ_HEADER;
        let client = tokio::time::timeout(
            Duration::from_secs(10),
            datajump_nats::connect(&self.global.nats_url, "datajump-logs"),
        )
        .await
        .with_context(|| format!("NATS at {} does not answer", self.global.nats_url))??;
        // Subscribe before reading what is written, so no line falls between.
        let mut live = client.subscribe(subjects::log(exec.id)).await?;
        let mut printed = 0u64;
        let runner_tail = tokio::time::timeout(
            Duration::from_secs(2),
            client.request(subjects::log_tail_request(exec.id), Vec::new().into()),
        )
        .await;
        if let Ok(Ok(reply)) = runner_tail {
            print_new_lines(&String::from_utf8_lossy(&reply.payload), &mut printed, out)?;
        }
        let mut waiting: std::collections::BTreeMap<u64, String> = Default::default();
        let mut check = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                message = futures::StreamExt::next(&mut live) => {
                    let Some(message) = message else { break };
                    let seq = message
                        .headers
                        .as_ref()
                        .and_then(|h| h.get(SEQ_HEADER))
                        .and_then(|v| v.as_str().parse::<u64>().ok());
                    if let Some(seq) = seq.filter(|&seq| seq > printed) {
                        waiting.insert(seq, String::from_utf8_lossy(&message.payload).into_owned());
                    }
                }
                _ = check.tick() => {
                    let stored = execution::Entity::find_by_id(exec.id)
                        .one(&self.db)
                        .await?
                        .with_context(|| format!("execution {} vanished", exec.id))?;
                    let ended = stored.end_time.is_some();
                    let text = if ended { self.full_log(&stored).await? } else { stored.log_tail.unwrap_or_default() };
                    print_new_lines(&text, &mut printed, out)?;
                    if ended {
                        break;
                    }
                }
            }
            while let Some(line) = waiting.remove(&(printed + 1)) {
                writeln!(out, "{line}")?;
                printed += 1;
            }
            waiting.retain(|&seq, _| seq > printed);
            out.flush()?;
        }
        Ok(())
    }

    async fn view(&self, run: dag_run::Model) -> Result<RunView> {
        let tasks = task_instance::Entity::find()
            .filter(task_instance::Column::DagRunId.eq(run.id))
            .order_by_asc(task_instance::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|t| TaskView {
                id: t.id,
                name: t.task_name,
                status: t.status.to_string(),
                attempts: t.attempt,
                retry_at: (t.status == datajump_shared::TaskStatus::UpForRetry)
                    .then(|| t.deadline_at.map(|d| d.to_rfc3339()))
                    .flatten(),
                reason: t.reason,
            })
            .collect();
        Ok(RunView {
            run: RunSummary {
                id: run.id,
                dedup_key: run.dedup_key,
                trigger_type: run.trigger_type.as_str().to_owned(),
                biz_date: run.biz_date,
                logical_time: run.logical_time.to_rfc3339(),
                status: run.status.to_string(),
                finished_at: run.finished_at.map(|d| d.to_rfc3339()),
            },
            tasks,
        })
    }

    // ----- datasources (`datajump datasource …`) -----

    /// Stores a new datasource.
    pub async fn add_datasource(
        &self,
        new: datajump_shared::datasources::NewDatasource,
    ) -> Result<datajump_shared::entities::datasource::Model> {
        Ok(datajump_shared::datasources::add(&self.db, new).await?)
    }

    /// Every datasource, by name.
    pub async fn datasources(&self) -> Result<Vec<datajump_shared::entities::datasource::Model>> {
        Ok(datajump_shared::datasources::list(&self.db).await?)
    }

    /// Removes a datasource.
    pub async fn remove_datasource(&self, name: &str) -> Result<()> {
        Ok(datajump_shared::datasources::remove(&self.db, name).await?)
    }

    // ----- alerts (`datajump alerts …`) -----

    /// Records a test alert per webhook of `dag_name` and sends each one now
    /// (unless a ticker took it first, then waits for the ticker's attempt);
    /// returns the alerts as they ended.
    pub async fn test_alerts(&self, dag_name: &str) -> Result<Vec<alert::Model>> {
        let dag = catalog::dag_by_name(&self.db, dag_name).await?;
        let Some(recorded) = alerts::record_test(&self.db, &dag, Utc::now()).await? else {
            bail!("DAG {dag_name} has no alerts: add an `alerts:` block with webhooks to its file");
        };
        let client = datajump_ticker::alerts::http_client();
        let mut ended = Vec::with_capacity(recorded.len());
        for row in recorded {
            if alerts::take(&self.db, &row, Utc::now()).await? {
                datajump_ticker::alerts::send_taken(&self.db, &client, &row).await?;
            }
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let now = alert::Entity::find_by_id(row.id)
                    .one(&self.db)
                    .await?
                    .with_context(|| format!("alert {} vanished", row.id))?;
                if now.attempts > 0 || tokio::time::Instant::now() >= deadline {
                    ended.push(now);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(ended)
    }

    /// A DAG's most recent alerts.
    pub async fn alerts(&self, dag_name: &str, limit: u64) -> Result<Vec<alert::Model>> {
        let dag = catalog::dag_by_name(&self.db, dag_name).await?;
        Ok(alerts::list(&self.db, dag.id, 0, limit).await?)
    }

    // ----- secrets (`datajump secret …`) -----

    /// Creates or replaces a secret.
    pub async fn set_secret(
        &self,
        name: &str,
        value: &str,
        description: Option<&str>,
    ) -> Result<datajump_shared::secrets::SetOutcome> {
        Ok(datajump_shared::secrets::set(&self.db, name, value, description).await?)
    }

    /// Every secret, without values.
    pub async fn secrets(&self) -> Result<Vec<datajump_shared::secrets::SecretInfo>> {
        Ok(datajump_shared::secrets::list(&self.db).await?)
    }

    /// Removes a secret.
    pub async fn remove_secret(&self, name: &str) -> Result<()> {
        Ok(datajump_shared::secrets::remove(&self.db, name).await?)
    }
}

/// Prints the lines of a log or log tail numbered after `printed` (a tail's
/// cut note says how many lines came before it), and moves `printed` on.
fn print_new_lines(text: &str, printed: &mut u64, out: &mut impl std::io::Write) -> Result<()> {
    let first = datajump_shared::logs::dropped_lines(text) + 1;
    let lines = text.lines().skip(usize::from(first > 1));
    for (number, line) in (first..).zip(lines) {
        if number > *printed {
            writeln!(out, "{line}")?;
            *printed = number;
        }
    }
    Ok(())
}
