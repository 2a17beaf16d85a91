//! `datajump trigger DAG [--param k=v]… [--wait]`, through the API.
//!
//! With `--wait`, every change of a task's state is printed as it is seen
//! (polled from the API five times a second): when it starts, the retry it
//! waits for and when, why it failed with the last lines of its log and
//! the command that shows the rest. Nothing waits in silence.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use chrono::{NaiveDate, Utc};
use clap::Args;
use datajump_api::routes::dags::dto::TriggerResponse;
use datajump_api::routes::runs::dto::RunDetail;
use datajump_shared::TaskStatus;
use serde_json::{Map, Value, json};

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::commands::runs::print_run;
use crate::output::{out, printable};

/// Arguments of `trigger`.
#[derive(Args)]
pub struct TriggerArgs {
    /// The DAG's name.
    dag: String,
    /// A run parameter `NAME=VALUE` (repeatable); overrides DAG and task params.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Business date of the run (default: the one a fire of its schedule would have now, usually
    /// yesterday). Its date parameters are those of its scheduled run (docs/PARAMETERS.md).
    #[arg(long)]
    biz_date: Option<NaiveDate>,
    /// Wait for the run to finish, printing each task's state changes as
    /// they happen; exit 0 only if it ends SUCCESS.
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this many seconds (exit 1; the run goes on).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    timeout: u64,
    /// Print the API's JSON: the trigger's answer, or with --wait the finished run.
    #[arg(long)]
    json: bool,
}

fn parse_params(raw: &[String]) -> Result<Map<String, Value>> {
    let mut params = Map::new();
    for item in raw {
        let Some((name, value)) = item.split_once('=') else {
            bail!("--param '{item}': expected NAME=VALUE");
        };
        if name.is_empty() {
            bail!("--param '{item}': the name is empty");
        }
        params.insert(name.to_owned(), json!(value));
    }
    Ok(params)
}

/// Runs `trigger`.
pub async fn run(global: &Global, args: TriggerArgs) -> Result<ExitCode> {
    let params = parse_params(&args.params)?;
    let api = Api::new(&global.api_url)?;
    let dag_id = api.dag_id(&args.dag).await?;
    let mut body = json!({ "params": params });
    if let Some(date) = args.biz_date {
        body["bizDate"] = json!(date);
    }
    let answer = api
        .post(&["dags", &dag_id.to_string(), "trigger"], Some(&body))
        .await?;
    let triggered: TriggerResponse = read(answer.clone())?;
    if !args.wait {
        if args.json {
            print_json(&answer);
            return Ok(ExitCode::SUCCESS);
        }
        // A resolver creates the run from the fire within milliseconds;
        // its id is what `runs`, `kill --run` and `rerun` take.
        let run_id = match triggered.instance_id {
            Some(id) => Some(id),
            None => created_within(&api, &triggered.run_key, RUN_ID_WAIT).await?,
        };
        match run_id {
            Some(id) => out!(
                "triggered {}: run {id} (biz date {}, run key {})",
                printable(&args.dag),
                triggered.biz_date,
                triggered.run_key
            ),
            None => {
                out!(
                    "triggered {} (biz date {}, run key {})",
                    printable(&args.dag),
                    triggered.biz_date,
                    triggered.run_key
                );
                eprintln!(
                    "warning: no run was created within {}s: is `datajump up` (or a resolver) \
                     running? `datajump runs {}` lists it once it is",
                    RUN_ID_WAIT.as_secs(),
                    printable(&args.dag)
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.json {
        out!("triggered {} (run key {})", args.dag, triggered.run_key);
    }
    let narrate = if args.json {
        Narrate::No
    } else {
        Narrate::NewRun
    };
    wait_for_outcome(&api, &triggered.run_key, args.timeout, narrate).await
}

/// `--wait`: waits for the run with key `run_key` as [`wait`] does, prints
/// it finished (its JSON when `narrate` is [`Narrate::No`], which `--json`
/// asks for), and exits 0 only if it ended SUCCESS.
pub(crate) async fn wait_for_outcome(
    api: &Api,
    run_key: &str,
    timeout_secs: u64,
    narrate: Narrate,
) -> Result<ExitCode> {
    let finished = wait(api, run_key, Duration::from_secs(timeout_secs), narrate).await?;
    let run: RunDetail = read(finished.clone())?;
    if narrate == Narrate::No {
        print_json(&finished);
    } else {
        print_run(&run);
    }
    Ok(if run.run.status == datajump_shared::RunStatus::Success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// How long `trigger` without `--wait` waits to print the run's id.
const RUN_ID_WAIT: Duration = Duration::from_secs(5);

/// The id of the run with key `run_key` once a resolver has created it,
/// or `None` after `within`.
async fn created_within(api: &Api, run_key: &str, within: Duration) -> Result<Option<i64>> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match api
            .get(&["dags", "instances", "by-key", run_key], &[])
            .await
        {
            Ok(answer) => return Ok(answer["id"].as_i64()),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many lines of a failed task's log `--wait` prints.
const FAILED_LOG_LINES: usize = 10;

/// What `--wait` has seen of each task instance, to print what changed.
#[derive(Default)]
struct Progress {
    seen: HashMap<i64, (TaskStatus, i32)>,
    /// Instances whose first retry showed their log: later retries do not
    /// repeat it.
    retry_log_shown: std::collections::HashSet<i64>,
    /// Sensors already said to be waiting: their later checks are quiet.
    waiting_shown: std::collections::HashSet<i64>,
}

impl Progress {
    /// The lines saying what changed in `run` since the last look, and
    /// the instances that have just failed or first wait for a retry (whose
    /// logs are worth showing: a typo'd command says so in its log).
    fn changes(&mut self, run: &RunDetail) -> (Vec<String>, Vec<i64>) {
        let mut lines = Vec::new();
        let mut failed = Vec::new();
        for task in &run.task_instances {
            let now = (task.status, task.attempts);
            let before = self.seen.insert(task.id, now);
            if before == Some(now) || (before.is_none() && task.status == TaskStatus::Pending) {
                continue;
            }
            let name = match task.map_index {
                Some(index) => format!("{}[{index}]", printable(&task.task_name)),
                None => printable(&task.task_name).into_owned(),
            };
            let line = match task.status {
                // A sensor's later checks: it was said to be waiting.
                TaskStatus::Running if task.checks > 0 => continue,
                TaskStatus::UpForReschedule if !self.waiting_shown.insert(task.id) => continue,
                TaskStatus::UpForReschedule => format!(
                    "{name}: waiting for its condition{}; checks again at {}",
                    task.error_message
                        .as_deref()
                        .map_or_else(String::new, |why| format!(" ({})", printable(why))),
                    task.next_check_at.map_or_else(
                        || "its next poke".to_owned(),
                        |at| at.format("%H:%M:%S").to_string()
                    )
                ),
                TaskStatus::Running => format!("{name}: RUNNING (attempt {})", task.attempts),
                TaskStatus::UpForRetry => {
                    if self.retry_log_shown.insert(task.id) {
                        failed.push(task.id);
                    }
                    format!(
                        "{name}: UP_FOR_RETRY after attempt {}{}{}",
                        task.attempts,
                        task.error_message
                            .as_deref()
                            .map_or_else(String::new, |why| format!(": {}", printable(why))),
                        task.retry_at.map_or_else(String::new, |at| format!(
                            "; retries at {} (in {}s)",
                            at.format("%H:%M:%S"),
                            ((at - Utc::now()).num_milliseconds().max(0) + 999) / 1000
                        ))
                    )
                }
                TaskStatus::Failed | TaskStatus::Timeout => {
                    failed.push(task.id);
                    format!(
                        "{name}: {}{}",
                        task.status,
                        task.error_message
                            .as_deref()
                            .map_or_else(String::new, |why| format!(": {}", printable(why)))
                    )
                }
                status => match &task.error_message {
                    Some(why) if status != TaskStatus::Success => {
                        format!("{name}: {status}: {}", printable(why))
                    }
                    _ => format!("{name}: {status}"),
                },
            };
            lines.push(format!("  {}  {line}", Utc::now().format("%H:%M:%S")));
        }
        (lines, failed)
    }
}

/// Prints the last lines of instance `id`'s log and how to see the rest.
async fn print_log_tail(api: &Api, id: i64) {
    match crate::commands::logs::log(api, id, None).await {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(FAILED_LOG_LINES);
            for line in &lines[from..] {
                out!("      | {}", printable(line));
            }
        }
        Err(e) => out!("      (its log cannot be read: {e})"),
    }
    out!("      the whole log: datajump logs {id}");
}

/// What [`wait`] prints while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Narrate {
    /// Nothing (`--json`).
    No,
    /// Each task's state changes of a run just triggered, from its creation.
    NewRun,
    /// Each task's state changes of a run running again in place (`rerun`).
    Rerun,
}

/// Waits until the run with key `run_key` has finished; returns the API's
/// answer for it (the run with its task instances), printing what
/// `narrate` says as it goes.
pub(crate) async fn wait(
    api: &Api,
    run_key: &str,
    timeout: Duration,
    narrate: Narrate,
) -> Result<Value> {
    let report = narrate != Narrate::No;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut created = false;
    let mut progress = Progress::default();
    loop {
        match api
            .get(&["dags", "instances", "by-key", run_key], &[])
            .await
        {
            Ok(answer) => {
                if report {
                    if !created && narrate == Narrate::NewRun {
                        out!("  run {} created", answer["id"]);
                    }
                    let run: RunDetail = read(answer.clone())?;
                    let (lines, failed) = progress.changes(&run);
                    for line in lines {
                        out!("{line}");
                    }
                    for id in failed {
                        print_log_tail(api, id).await;
                    }
                }
                created = true;
                let status = answer["status"].as_str().unwrap_or_default();
                if !matches!(status, "RUNNING" | "QUEUED") {
                    return Ok(answer);
                }
            }
            // 404 until a resolver has taken the fire and created the run.
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        if tokio::time::Instant::now() >= deadline {
            if created {
                bail!(
                    "the run did not finish within {}s (--timeout); it goes on: \
                     `datajump runs` shows it",
                    timeout.as_secs()
                );
            }
            bail!(
                "no resolver created the run within {}s: is `datajump up` (or a resolver) running?",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let p = parse_params(&["a=1".into(), "b=x=y".into()]).unwrap();
        assert_eq!(p["a"], "1");
        assert_eq!(p["b"], "x=y");
        assert!(parse_params(&["novalue".into()]).is_err());
        assert!(parse_params(&["=v".into()]).is_err());
    }
}
