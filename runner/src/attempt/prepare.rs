//! Before an attempt runs: its log opened with the header, its content,
//! the outputs of the tasks it reads, its parameters, environment and the
//! partitions it writes. What cannot be prepared makes the attempt end
//! invalid without running anything.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use datajump_cron::parse_time_zone;
use datajump_engine::DeclaredOutputs;
use datajump_shared::content::TaskContent;
use datajump_shared::datasets::{self, Written};
use datajump_shared::entities::StoredJson;
use datajump_shared::entities::task_instance::{self, Children};
use datajump_shared::map;
use datajump_shared::messages::WorkMsg;
use datajump_shared::outputs;
use datajump_shared::params::Params;
use datajump_shared::params::{ParamContext, env_name};
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect};

use super::ClaimedAttempt;
use crate::Runner;
use crate::executor::{ExecContext, LogSink};
use crate::log::Heading;
use crate::outputs::{LargeOutputFolder, OutputFile};

/// What an attempt carries from before it runs to its end.
pub(super) struct Prepared {
    /// Its log, headed.
    pub(super) log: LogSink,
    /// Where it may write outputs.
    pub(super) output_file: OutputFile,
    /// The dataset partitions it writes if it succeeds.
    pub(super) written: Vec<Written>,
    /// Where a SHELL or PYTHON task may write its large output.
    pub(super) large_output: Option<LargeOutputFolder>,
}

/// What the attempt runs, or why it cannot run as written.
pub(super) type Runnable = Result<ExecContext, String>;

impl Runner {
    /// Opens the attempt's log and builds what it runs.
    pub(super) async fn prepare(&self, claimed: &ClaimedAttempt<'_>) -> (Prepared, Runnable) {
        let ClaimedAttempt {
            work,
            ref unreadable,
            row,
            exec_row,
            run_outputs,
            kill,
            ..
        } = *claimed;
        let config = &self.config;
        let task = &work.spec.task;
        let log = LogSink::new(
            Some((config.nats.clone(), &config.names, exec_row.id)),
            config.max_log_bytes,
        );
        log.header(&Heading {
            task_id: task.task_id,
            task_instance_id: row.id,
            attempt: exec_row.attempt,
            name: &task.name,
            task_type: task.task_type.as_str(),
            start: exec_row.start_time,
            time_zone: work.spec.time_zone.parse().unwrap_or(chrono_tz::UTC),
        });
        // Parsed when the DAG was applied; what fails here was stored before
        // content was checked, and cannot run as written.
        let content = match unreadable {
            Some(why) => Err(why.clone()),
            None => TaskContent::parse(task.task_type, &task.content)
                .map_err(|e| format!("the task's content: {e}")),
        };
        // A parameter must not fill a task output's variable: refused at
        // apply, trigger and event, and here for what came another way (a
        // DAG stored before the rule, a fire published on NATS).
        let content = content.and_then(|content| {
            match work
                .spec
                .params
                .keys()
                .find(|name| outputs::looks_like_output(name))
            {
                Some(name) => Err(outputs::output_like_problem(name)),
                None => Ok(content),
            }
        });
        let upstream = match content {
            // Most runs declare no outputs: nothing to read, no query.
            Ok(_) if run_outputs.is_empty() => Ok(Params::new()),
            Ok(_) => {
                upstream_outputs_retrying(&config.db, row, run_outputs, &task.content, kill).await
            }
            Err(_) => Ok(Params::new()),
        };
        let content = match upstream {
            Ok(upstream) => content.map(|content| (content, upstream)),
            Err(e) => Err(format!(
                "cannot read the outputs of the tasks before it: {e}"
            )),
        };
        // The partitions it writes are substituted before it runs: a template
        // that cannot be fails the attempt, as any other text would.
        let content = content.and_then(|(content, upstream)| {
            let params = param_context(work, &upstream, config.default_timezone);
            let written =
                datasets::written(&task.outputs, &params).map_err(|e| format!("outputs: {e}"))?;
            Ok((content, upstream, params, written))
        });
        let output_file = OutputFile::for_execution(exec_row.id);
        let mut written = Vec::new();
        let mut large_output = None;
        let runnable = content.map(|(content, upstream, params, datasets)| {
            written = datasets;
            let mut env = environment(work, row, &upstream);
            env.insert(outputs::FILE_ENV.to_owned(), output_file.path_text());
            if matches!(content, TaskContent::Shell(_) | TaskContent::Python(_)) {
                let owner = config.task_process.user().map(|u| (u.uid(), u.gid()));
                match LargeOutputFolder::create(exec_row.id, owner) {
                    Ok(folder) => {
                        env.insert(outputs::LARGE_FOLDER_ENV.to_owned(), folder.path_text());
                        large_output = Some(folder);
                    }
                    Err(e) => log.line(&format!(
                        "[datajump] ${} is not set: its folder could not be created: {e}",
                        outputs::LARGE_FOLDER_ENV
                    )),
                }
            }
            ExecContext {
                content,
                params,
                env,
                process: config.task_process.clone(),
                network: config.network.clone(),
                data_folder: config.data_folder.clone(),
                lease: self.lease.clone(),
                cgroups: self.cgroups.clone(),
                db: config.db.clone(),
                project_id: work.spec.project_id,
                timeout: Duration::from_secs(u64::try_from(task.timeout_secs).unwrap_or(0)),
                cancel: kill.clone(),
            }
        });
        let prepared = Prepared {
            log,
            output_file,
            written,
            large_output,
        };
        (prepared, runnable)
    }
}

/// The outputs a task may read, as parameters (`task.output.name`): those
/// `declared` (its run's, read with the claim) by every task of `row`'s
/// run that it runs after (its same-run parents, directly or through
/// others: they have ended before it starts), and by any other its content
/// names (`${task.output.name}`; `apply` refuses those, but a DAG stored
/// before that rule may have one). Each is exported as
/// `$DJ_PARAM_<TASK>_OUTPUT_<NAME>` whether or not the content names it
/// (docs/PARAMETERS.md, "Values between tasks"). One query, for the run's
/// edges: made only when some task of the run declared outputs.
async fn upstream_outputs(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    declared: &[DeclaredOutputs],
    content: &serde_json::Value,
) -> Result<Params, DbErr> {
    let text = content.to_string();
    let read = outputs::tasks_read(&text);
    let edges: Vec<(i64, StoredJson<Children>)> = task_instance::Entity::find()
        .select_only()
        .columns([
            task_instance::Column::TaskId,
            task_instance::Column::Children,
        ])
        .filter(task_instance::Column::DagRunId.eq(row.dag_run_id))
        .into_tuple()
        .all(db)
        .await?;
    let before = ancestors(row.task_id, &edges);
    Ok(declared
        .iter()
        .filter(|declared| {
            before.contains(&declared.task_id) || read.contains(&declared.task_name.as_str())
        })
        .flat_map(|declared| {
            declared.outputs.iter().map(|(name, value)| {
                (
                    outputs::param_name(&declared.task_name, name),
                    value.clone(),
                )
            })
        })
        .collect())
}

/// How long reading the outputs is retried through a database outage
/// before the attempt fails.
const OUTPUTS_RETRY_FOR: Duration = Duration::from_secs(60);

/// [`upstream_outputs`], retried with backoff while the database is out
/// (a restart, a failover), as recording the attempt's end is: a transient
/// error is not the task's failure.
/// Gives up after [`OUTPUTS_RETRY_FOR`] or when the attempt is stopped.
async fn upstream_outputs_retrying(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    declared: &[DeclaredOutputs],
    content: &serde_json::Value,
    kill: &tokio_util::sync::CancellationToken,
) -> Result<Params, DbErr> {
    let give_up = tokio::time::Instant::now() + OUTPUTS_RETRY_FOR;
    let mut wait = Duration::from_millis(200);
    loop {
        match upstream_outputs(db, row, declared, content).await {
            Ok(params) => return Ok(params),
            Err(e) if tokio::time::Instant::now() + wait < give_up => {
                tracing::warn!(error = %e, retry_in = ?wait, "cannot read the outputs of the tasks before it; retrying");
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = kill.cancelled() => return Err(e),
                }
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The tasks `task_id` runs after in its run, directly or through others,
/// from each instance's `children` (`[[task_id, type], …]`: only same-run
/// children are listed).
fn ancestors(task_id: i64, edges: &[(i64, StoredJson<Children>)]) -> HashSet<i64> {
    let mut parents: HashMap<i64, Vec<i64>> = HashMap::new();
    for (parent, children) in edges {
        // A list that does not read is the engine's to report
        // (docs/ARCHITECTURE.md "Stored JSON"); here it adds no ancestor.
        for (child, _) in children.read().into_iter().flatten() {
            parents.entry(*child).or_default().push(*parent);
        }
    }
    let mut seen = HashSet::new();
    let mut frontier = vec![task_id];
    while let Some(task) = frontier.pop() {
        for parent in parents.get(&task).into_iter().flatten() {
            if seen.insert(*parent) {
                frontier.push(*parent);
            }
        }
    }
    seen
}

/// The parameter context of an attempt: built-ins from the run, user
/// parameters from the spec, the outputs it reads (`upstream`) and its map
/// item, which are untrusted, and its item's index; `default_zone` stands
/// in for a zone that cannot be read.
fn param_context(work: &WorkMsg, upstream: &Params, default_zone: chrono_tz::Tz) -> ParamContext {
    let mut params = work.spec.params.clone();
    params.extend(upstream.clone());
    let mut untrusted = work.spec.untrusted_params.clone();
    untrusted.extend(upstream.keys().cloned());
    if let Some(item) = &work.spec.map_item {
        params.insert(map::ITEM_PARAM.to_owned(), item.value.as_param());
        untrusted.insert(map::ITEM_PARAM.to_owned());
        params.insert(map::INDEX_PARAM.to_owned(), item.index.to_string());
        untrusted.remove(map::INDEX_PARAM);
    }
    ParamContext {
        biz_date: work.biz_date,
        logical_time: work.spec.logical_time,
        time_zone: parse_time_zone(&work.spec.time_zone).unwrap_or(default_zone),
        run_id: work.dag_run_id.0,
        task_name: work.spec.task.name.clone(),
        params,
        untrusted,
    }
}

/// The environment variables of an attempt: its parameters, the outputs it
/// may read ([`upstream_outputs`]; none of its parameters has an output's
/// variable, see [`outputs::looks_like_output`]) and the `DJ_*` built-ins.
fn environment(
    work: &WorkMsg,
    row: &task_instance::Model,
    upstream: &Params,
) -> BTreeMap<String, String> {
    let task = &work.spec.task;
    let mut env = BTreeMap::new();
    for (name, value) in work.spec.params.iter().chain(upstream) {
        env.insert(env_name(name), value.clone());
    }
    let biz_date = work.biz_date.to_string();
    env.insert("DJ_BIZ_DATE".into(), biz_date.clone());
    env.insert("DJ_TASK_ID".into(), task.task_id.to_string());
    env.insert("DJ_TASK_NAME".into(), task.name.clone());
    env.insert("DJ_TASK_INSTANCE_ID".into(), row.id.to_string());
    env.insert("DJ_DAG_RUN_ID".into(), work.dag_run_id.to_string());
    env.insert("DJ_DAG_NAME".into(), work.spec.dag_name.clone());
    env.insert("DJ_ATTEMPT".into(), work.attempt.to_string());
    env.insert(
        "DJ_TRIGGER_TYPE".into(),
        row.trigger_type.as_str().to_owned(),
    );
    if let Some(item) = &work.spec.map_item {
        env.insert(map::ITEM_ENV.into(), item.value.as_param());
        env.insert(map::INDEX_ENV.into(), item.index.to_string());
    }
    // The names the engine requirements give the executor's variables.
    env.insert("bizdate".into(), biz_date);
    env.insert("task_id".into(), task.task_id.to_string());
    env.insert("task_name".into(), task.name.clone());
    env
}
