//! `datajump runs DAG [--limit N] [--json]`, through the API.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use datajump_api::dto::Page;
use datajump_api::routes::runs::dto::{RunDetail, RunDto};
use datajump_shared::naming::{printable, shortened};
use serde_json::Value;

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::output::{out, table};

/// Arguments of `runs`.
#[derive(Args)]
pub struct RunsArgs {
    /// The DAG's name.
    dag: String,
    /// Print the API's JSON (each run with its task instances) instead of tables.
    #[arg(long)]
    json: bool,
    /// How many runs per page (at most 500).
    #[arg(long, default_value_t = 20)]
    limit: u64,
    /// Which page, newest first: `--page 2` shows the runs before the first page's.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    page: u64,
}

/// Arguments of `run show`.
#[derive(Args)]
pub struct RunShowArgs {
    /// The run's id (what `trigger` and `runs` print).
    id: i64,
    /// Print the API's JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// `run` subcommands.
#[derive(Subcommand)]
pub enum RunCommand {
    /// Show one run with its task instances.
    Show(RunShowArgs),
}

/// Runs `run show`.
pub async fn run_command(global: &Global, command: RunCommand) -> Result<ExitCode> {
    let RunCommand::Show(args) = command;
    let api = Api::new(&global.api_url)?;
    let run = api
        .get(&["dags", "instances", &args.id.to_string()], &[])
        .await?;
    if args.json {
        print_json(&run);
    } else {
        print_run(&read(run)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints one run with its task instances (their ids are what `kill`,
/// `logs` and `task …` take); a mapped task's items are listed under it,
/// `load_table[3]`, with their values, after a line saying how they stand.
pub fn print_run(run: &RunDetail) {
    let r = &run.run;
    out!(
        "run {}  {}  {}  biz_date {}  logical {}",
        r.id,
        r.status,
        r.trigger_type,
        r.biz_date,
        r.schedule_time.to_rfc3339()
    );
    for mapped in &run.mapped_tasks {
        let failed = match mapped.failed {
            0 => String::new(),
            n => format!(", {n} failed"),
        };
        out!(
            "  {}: {} over {} items, {} ended{failed}",
            printable(&mapped.task_name),
            mapped.status,
            mapped.items,
            mapped.ended,
        );
    }
    let rows: Vec<Vec<String>> = run
        .task_instances
        .iter()
        .map(|t| {
            let detail = match (&t.retry_at, &t.error_message, &t.map_item) {
                (Some(at), _, _) => format!("retry at {}", at.to_rfc3339()),
                (None, Some(reason), _) => reason.clone(),
                (None, None, Some(item)) => format!("item {}", printable(&shortened(item))),
                (None, None, None) => String::new(),
            };
            let task = match t.map_index {
                Some(index) => format!("{}[{index}]", t.task_name),
                None => t.task_name.clone(),
            };
            vec![
                format!("  {}", t.id),
                task,
                t.status.to_string(),
                t.attempts.to_string(),
                detail,
            ]
        })
        .collect();
    table(&["  ID", "TASK", "STATUS", "ATTEMPTS", "DETAIL"], &rows);
}

/// Runs `runs`: the DAG's latest runs, then each with its task instances.
pub async fn run(global: &Global, args: RunsArgs) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    let dag_id = api.dag_id(&args.dag).await?.to_string();
    let page: Page<RunDto> = read(
        api.get(
            &["dags", &dag_id, "instances"],
            &[
                ("limit", args.limit.to_string()),
                ("page", args.page.to_string()),
            ],
        )
        .await?,
    )?;
    let mut runs = Vec::with_capacity(page.items.len());
    for run in &page.items {
        runs.push(
            api.get(&["dags", "instances", &run.id.to_string()], &[])
                .await?,
        );
    }
    if args.json {
        print_json(&Value::Array(runs));
    } else if runs.is_empty() && args.page == 1 {
        out!("no runs of {} yet", args.dag);
    } else if runs.is_empty() {
        out!("no runs on page {} ({} runs in all)", args.page, page.total);
    } else {
        for run in runs {
            print_run(&read(run)?);
            out!();
        }
        let shown = (args.page - 1) * args.limit + page.items.len() as u64;
        if shown < page.total {
            out!(
                "{shown} of {} runs shown; older: datajump runs {} --page {}",
                page.total,
                args.dag,
                args.page + 1
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
