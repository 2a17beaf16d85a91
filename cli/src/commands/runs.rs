//! `datajump runs DAG [--json]`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::Global;
use crate::client::{Client, RunView};
use crate::output::table;

/// Arguments of `runs`.
#[derive(Args)]
pub struct RunsArgs {
    /// The DAG's name.
    dag: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// How many of the most recent runs.
    #[arg(long, default_value_t = 20)]
    limit: u64,
}

/// Prints one run with its task states.
pub fn print_run(view: &RunView) {
    let r = &view.run;
    println!(
        "run {}  {}  {}  biz_date {}  logical {}",
        r.id, r.status, r.trigger_type, r.biz_date, r.logical_time
    );
    let rows: Vec<Vec<String>> = view
        .tasks
        .iter()
        .map(|t| {
            let detail = match (&t.retry_at, &t.reason) {
                (Some(at), _) => format!("retry at {at}"),
                (None, Some(reason)) => reason.clone(),
                (None, None) => String::new(),
            };
            vec![
                format!("  {}", t.name),
                t.status.clone(),
                t.attempts.to_string(),
                detail,
            ]
        })
        .collect();
    table(&["  TASK", "STATUS", "ATTEMPTS", "DETAIL"], &rows);
}

/// Runs `runs`.
pub async fn run(global: &Global, args: RunsArgs) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    let runs = client.runs(&args.dag, args.limit).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else if runs.is_empty() {
        println!("no runs of {} yet", args.dag);
    } else {
        for view in &runs {
            print_run(view);
            println!();
        }
    }
    Ok(ExitCode::SUCCESS)
}
