//! `datajump logs TASK_INSTANCE|run:RUN [--attempt N] [--follow] [--raw]`.
//!
//! A stored log (the full copy once an attempt has ended, its tail while it
//! runs) comes from the API. `--follow` takes the live lines from NATS
//! (`dj.log.<execution_id>`, one message per line, published by the
//! runner and stored nowhere) and asks the runner for its in-memory tail
//! right after subscribing: the API has no streaming endpoint, and one
//! would only relay these same messages. The API still gives the start
//! (which attempt, once it exists) and the end (the attempt ended, and its
//! full log fills any line the live messages missed). When NATS cannot be
//! reached, following falls back to the API's stored tail, which the runner
//! refreshes every few seconds.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use datajump_api::routes::runs::dto::{ExecutionDto, RunDetail, TaskInstanceDetail};
use datajump_shared::logs::SEQ_HEADER;
use futures::StreamExt;

use crate::Global;
use crate::api::{Api, read};
use crate::output::{self, out};

/// Arguments of `logs`.
#[derive(Args)]
pub struct LogsArgs {
    /// A task instance id (as `datajump runs` shows), or `run:ID` for every task of a run.
    target: String,
    /// Which attempt (0 = the first); default the latest.
    #[arg(long)]
    attempt: Option<i32>,
    /// Keep printing as the task writes, until it ends (waits for it to start).
    /// Live lines come from NATS (--nats-url); without it, from the API every second.
    #[arg(long, short = 'f')]
    follow: bool,
    /// Print the log exactly as the task wrote it. By default a control character other than
    /// a line break or a tab (a terminal escape, a carriage return) is printed as its escape
    /// (`\u{1b}`), on a terminal and in a pipe alike, so a task's output cannot drive your
    /// terminal; use --raw for a byte-exact copy (`> task.log`) or colours in a pager you trust
    /// (`--raw | less -R`).
    #[arg(long)]
    raw: bool,
}

/// The log text as printed: escaped unless `raw` (docs/SECURITY.md,
/// "Names in a terminal": a task's output is the task's to write, and an
/// escape sequence in it could retitle, clear or rewrite the terminal).
fn shown(text: &str, raw: bool) -> std::borrow::Cow<'_, str> {
    if raw {
        std::borrow::Cow::Borrowed(text)
    } else {
        datajump_shared::naming::printable_lines(text)
    }
}

enum Target {
    Instance(i64),
    Run(i64),
}

fn parse_target(text: &str) -> Result<Target> {
    let parsed = match text.strip_prefix("run:") {
        Some(run) => run.parse().map(Target::Run),
        None => text.parse().map(Target::Instance),
    };
    match parsed {
        Ok(target) => Ok(target),
        Err(_) => {
            bail!("'{text}': expected a task instance id (e.g. 42) or run:RUN_ID (e.g. run:7)")
        }
    }
}

/// Runs `logs`.
pub async fn run(global: &Global, args: LogsArgs) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    match parse_target(&args.target)? {
        Target::Instance(id) if args.follow => {
            let exec = started(&api, id, args.attempt).await?;
            follow(&api, global, id, &exec, args.raw, &mut std::io::stdout()).await?;
        }
        Target::Instance(id) => output::text(&shown(&log(&api, id, args.attempt).await?, args.raw)),
        Target::Run(run_id) => {
            if args.follow {
                bail!("--follow takes a task instance id; `datajump runs DAG` lists them");
            }
            let run: RunDetail = read(
                api.get(&["dags", "instances", &run_id.to_string()], &[])
                    .await?,
            )?;
            for instance in run.task_instances {
                out!(
                    "##### {} (task instance {}, {})",
                    instance.task_name,
                    instance.id,
                    instance.status
                );
                match log(&api, instance.id, args.attempt).await {
                    Ok(text) => output::text(&shown(&text, args.raw)),
                    // Not started yet, or no such attempt: say so and go on.
                    Err(e) if e.is_not_found() => out!("({e})"),
                    Err(e) => return Err(e.into()),
                }
                out!();
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The log of task instance `id`'s attempt `attempt` (default the latest):
/// the full copy once it has ended, its tail while it runs.
pub(crate) async fn log(api: &Api, id: i64, attempt: Option<i32>) -> crate::api::ApiResult<String> {
    let query: Vec<(&str, String)> = attempt
        .map(|a| ("attempt", a.to_string()))
        .into_iter()
        .collect();
    let (text, _) = api
        .text(&["dags", "task-instances", &id.to_string(), "log"], &query)
        .await?;
    Ok(text)
}

/// The task instance's attempt to follow, once it exists: `attempt`, or the
/// latest.
async fn execution(api: &Api, id: i64, attempt: Option<i32>) -> Result<Option<ExecutionDto>> {
    let detail: TaskInstanceDetail = read(
        api.get(&["dags", "task-instances", &id.to_string()], &[])
            .await?,
    )?;
    Ok(detail
        .executions
        .into_iter()
        .filter(|e| attempt.is_none_or(|a| e.attempt == a))
        .max_by_key(|e| e.attempt))
}

/// Waits until the attempt to follow has started.
async fn started(api: &Api, id: i64, attempt: Option<i32>) -> Result<ExecutionDto> {
    loop {
        if let Some(exec) = execution(api, id, attempt).await? {
            return Ok(exec);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Prints an attempt's log as it is written until the attempt ends.
///
/// Live lines carry their number, and a tail (asked of the runner right
/// after subscribing, else the one the API serves) tells the number of its
/// last line, so the two are joined without gaps or repeats: a live line
/// that arrives ahead of a gap waits until a stored tail (the runner
/// refreshes it every few seconds) or, at the end, the full log fills it.
async fn follow(
    api: &Api,
    global: &Global,
    id: i64,
    exec: &ExecutionDto,
    raw: bool,
    out: &mut impl Write,
) -> Result<()> {
    let mut printed = 0u64;
    // Subscribe before reading what is written, so no line falls between.
    let mut live = match tokio::time::timeout(
        Duration::from_secs(5),
        datajump_nats::connect_with(&global.nats_url, "datajump-logs", &global.nats_auth()),
    )
    .await
    {
        Ok(Ok(client)) => {
            let live = client.subscribe(global.nats_prefix.log(exec.id)).await?;
            let runner_tail = tokio::time::timeout(
                Duration::from_secs(2),
                client.request(
                    global.nats_prefix.log_tail_request(exec.id),
                    Vec::new().into(),
                ),
            )
            .await;
            if let Ok(Ok(reply)) = runner_tail {
                print_new_lines(
                    &String::from_utf8_lossy(&reply.payload),
                    &mut printed,
                    raw,
                    out,
                )?;
            }
            // The client is kept with its subscription, which ends with it.
            Some((client, live))
        }
        _ => {
            eprintln!(
                "(NATS at {} does not answer: following the API's stored tail, refreshed every few seconds)",
                global.nats_url
            );
            None
        }
    };
    let mut waiting: BTreeMap<u64, String> = BTreeMap::new();
    let mut check = tokio::time::interval(Duration::from_secs(1));
    loop {
        let next_live = async {
            match &mut live {
                Some((_, subscriber)) => subscriber.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            message = next_live => {
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
                // Whether it ended first: the log read after is then the full one.
                let ended = execution(api, id, Some(exec.attempt))
                    .await?
                    .with_context(|| format!("attempt {} of task instance {id} vanished", exec.attempt))?
                    .end_time
                    .is_some();
                let text = log(api, id, Some(exec.attempt)).await?;
                print_new_lines(&text, &mut printed, raw, out)?;
                if ended {
                    break;
                }
            }
        }
        while let Some(line) = waiting.remove(&(printed + 1)) {
            writeln!(out, "{}", shown(&line, raw))?;
            printed += 1;
        }
        waiting.retain(|&seq, _| seq > printed);
        out.flush()?;
    }
    Ok(())
}

/// Prints the lines of a log or log tail numbered after `printed` (a tail's
/// cut note says how many lines came before it), and moves `printed` on.
fn print_new_lines(text: &str, printed: &mut u64, raw: bool, out: &mut impl Write) -> Result<()> {
    let first = datajump_shared::logs::dropped_lines(text) + 1;
    let lines = text.lines().skip(usize::from(first > 1));
    for (number, line) in (first..).zip(lines) {
        if number > *printed {
            writeln!(out, "{}", shown(line, raw))?;
            *printed = number;
        }
    }
    Ok(())
}
