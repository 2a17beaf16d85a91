//! `datajump kill TASK_INSTANCE` and `datajump kill --run RUN`, through the API.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use datajump_api::routes::runs::dto::KillResponse;

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::output::out;

/// Arguments of `kill`.
#[derive(Args)]
pub struct KillArgs {
    /// The task instance to kill (ids as `datajump runs` shows).
    #[arg(required_unless_present = "run", conflicts_with = "run")]
    task_instance: Option<i64>,
    /// Kill a whole run instead: every live task in it, and the run ends KILLED.
    #[arg(long)]
    run: Option<i64>,
    /// Print the API's JSON instead of a sentence.
    #[arg(long)]
    json: bool,
}

/// Runs `kill`; one that had already ended is an error (the API's 409).
pub async fn run(global: &Global, args: KillArgs) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    let answer = match (args.task_instance, args.run) {
        (Some(id), None) => {
            api.post(&["task-instances", &id.to_string(), "kill"], None)
                .await?
        }
        (None, Some(run)) => {
            api.post(&["dags", "instances", &run.to_string(), "kill"], None)
                .await?
        }
        _ => bail!("give a task instance id or --run RUN"),
    };
    if args.json {
        print_json(&answer);
        return Ok(ExitCode::SUCCESS);
    }
    let killed: KillResponse = read(answer)?;
    match args.run {
        Some(run) => out!(
            "killed run {run} ({} live tasks stopped)",
            killed.killed_task_instances.len()
        ),
        None => out!(
            "killed task instance {}; its children follow their strategies",
            killed.id
        ),
    }
    Ok(ExitCode::SUCCESS)
}
