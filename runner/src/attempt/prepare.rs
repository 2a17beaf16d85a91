//! Before an attempt runs: its log opened with the header, its content,
//! the outputs of the tasks it reads, its parameters, environment and the
//! partitions it writes. What cannot be prepared makes the attempt end
//! invalid without running anything.

use std::collections::BTreeMap;
use std::time::Duration;

use datajump_cron::parse_time_zone;
use datajump_shared::content::TaskContent;
use datajump_shared::datasets::{self, Written};
use datajump_shared::entities::task_instance;
use datajump_shared::messages::WorkMsg;
use datajump_shared::outputs;
use datajump_shared::params::{ParamContext, env_name};
use datajump_shared::params::{Params, params_from_json};
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect};

use super::ClaimedAttempt;
use crate::Runner;
use crate::executor::{ExecContext, LogSink};
use crate::log::Heading;
use crate::outputs::OutputFile;

/// What an attempt carries from before it runs to its end.
pub(super) struct Prepared {
    /// Its log, headed.
    pub(super) log: LogSink,
    /// Where it may write outputs.
    pub(super) output_file: OutputFile,
    /// The dataset partitions it writes if it succeeds.
    pub(super) written: Vec<Written>,
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
        let upstream = match content {
            Ok(_) => upstream_outputs(&config.db, row, &task.content).await,
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
        let runnable = content.map(|(content, upstream, params, datasets)| {
            written = datasets;
            let mut env = environment(work, row, &upstream);
            env.insert(outputs::FILE_ENV.to_owned(), output_file.path_text());
            ExecContext {
                content,
                params,
                env,
                process: config.task_process.clone(),
                network: config.network.clone(),
                lease: self.lease.clone(),
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
        };
        (prepared, runnable)
    }
}

/// The outputs of the tasks of `row`'s run that its content reads
/// (`${task.output.name}`), as parameters (`task.output.name`): one query,
/// made only when the content reads any.
async fn upstream_outputs(
    db: &DatabaseConnection,
    row: &task_instance::Model,
    content: &serde_json::Value,
) -> Result<Params, DbErr> {
    let text = content.to_string();
    let read = outputs::tasks_read(&text);
    if read.is_empty() {
        return Ok(Params::new());
    }
    let rows: Vec<(String, Option<serde_json::Value>)> = task_instance::Entity::find()
        .select_only()
        .columns([
            task_instance::Column::TaskName,
            task_instance::Column::Outputs,
        ])
        .filter(task_instance::Column::DagRunId.eq(row.dag_run_id))
        .filter(task_instance::Column::TaskName.is_in(read.iter().copied()))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .flat_map(|(task, declared)| {
            params_from_json(&declared.unwrap_or_default())
                .into_iter()
                .map(move |(name, value)| (outputs::param_name(&task, &name), value))
        })
        .collect())
}

/// The parameter context of an attempt: built-ins from the run, user
/// parameters from the spec, and the outputs it reads (`upstream`, which
/// are untrusted); `default_zone` stands in for a zone that cannot be read.
fn param_context(work: &WorkMsg, upstream: &Params, default_zone: chrono_tz::Tz) -> ParamContext {
    let mut params = work.spec.params.clone();
    params.extend(upstream.clone());
    let mut untrusted = work.spec.untrusted_params.clone();
    untrusted.extend(upstream.keys().cloned());
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
/// reads and the `DJ_*` built-ins.
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
    // The names the engine requirements give the executor's variables.
    env.insert("bizdate".into(), biz_date);
    env.insert("task_id".into(), task.task_id.to_string());
    env.insert("task_name".into(), task.name.clone());
    env
}
