//! `datajump rerun RUN [--failed-only]` and `datajump task
//! clear|mark-success|mark-failed`, through the API.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use datajump_api::routes::runs::dto::{
    RerunResponse, RunDetail, TaskInstanceDto, TaskResetResponse,
};
use serde_json::json;

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::commands::trigger::{Narrate, wait_for_outcome};
use crate::output::out;

/// Arguments of `rerun`.
#[derive(Args)]
pub struct RerunArgs {
    /// The finished run to run again, in place (same run id, same business date).
    run: i64,
    /// Only FAILED, TIMEOUT, KILLED and UPSTREAM_FAILED tasks and their downstream.
    #[arg(long)]
    failed_only: bool,
    /// Wait for the run to finish, printing each task's state changes;
    /// exit 0 only if it ends SUCCESS.
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this many seconds (exit 1; the run goes on).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    timeout: u64,
    /// Print the API's JSON instead of a sentence (with --wait, the finished run).
    #[arg(long)]
    json: bool,
}

/// Task subcommands.
#[derive(Subcommand)]
pub enum TaskCommand {
    /// Put a finished task (and with --downstream everything below it) back to PENDING.
    Clear {
        /// The task instance.
        task_instance: i64,
        /// Also clear every task downstream of it.
        #[arg(long)]
        downstream: bool,
        /// Print the API's JSON instead of a sentence.
        #[arg(long)]
        json: bool,
    },
    /// Mark a task SUCCESS by hand; its downstream runs again accordingly.
    MarkSuccess {
        /// The task instance.
        task_instance: i64,
        /// Print the API's JSON instead of a sentence.
        #[arg(long)]
        json: bool,
    },
    /// Mark a task FAILED by hand; its downstream follows its strategies.
    MarkFailed {
        /// The task instance.
        task_instance: i64,
        /// Print the API's JSON instead of a sentence.
        #[arg(long)]
        json: bool,
    },
}

fn report(what: &str, queued: &[TaskInstanceDto]) {
    let names: Vec<&str> = queued.iter().map(|r| r.task_name.as_str()).collect();
    if names.is_empty() {
        out!("{what}");
    } else {
        out!("{what}; queued now: {}", names.join(", "));
    }
}

/// Runs `rerun`.
pub async fn rerun(global: &Global, args: RerunArgs) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    let answer = api
        .post(
            &["dags", "instances", &args.run.to_string(), "rerun"],
            Some(&json!({ "failedOnly": args.failed_only })),
        )
        .await?;
    if !args.wait {
        if args.json {
            print_json(&answer);
        } else {
            let rerun: RerunResponse = read(answer)?;
            report(
                &format!("run {} is running again", rerun.id),
                &rerun.queued_task_instances,
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let rerun: RerunResponse = read(answer)?;
    if !args.json {
        report(
            &format!("run {} is running again", rerun.id),
            &rerun.queued_task_instances,
        );
    }
    let run: RunDetail = read(
        api.get(&["dags", "instances", &rerun.id.to_string()], &[])
            .await?,
    )?;
    let narrate = if args.json {
        Narrate::No
    } else {
        Narrate::Rerun
    };
    wait_for_outcome(&api, &run.run.run_key, args.timeout, narrate).await
}

/// Runs a task subcommand.
pub async fn task(global: &Global, command: TaskCommand) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    let (id, action, body, json, what) = match command {
        TaskCommand::Clear {
            task_instance,
            downstream,
            json,
        } => (
            task_instance,
            "clear",
            json!({ "downstream": downstream }),
            json,
            "cleared",
        ),
        TaskCommand::MarkSuccess {
            task_instance,
            json,
        } => (
            task_instance,
            "mark",
            json!({ "status": "SUCCESS" }),
            json,
            "marked SUCCESS",
        ),
        TaskCommand::MarkFailed {
            task_instance,
            json,
        } => (
            task_instance,
            "mark",
            json!({ "status": "FAILED" }),
            json,
            "marked FAILED",
        ),
    };
    let answer = api
        .post(&["task-instances", &id.to_string(), action], Some(&body))
        .await?;
    if json {
        print_json(&answer);
    } else {
        let done: TaskResetResponse = read(answer)?;
        report(
            &format!(
                "task instance {id} {what} (run {}, now {})",
                done.dag_instance_id, done.status
            ),
            &done.queued_task_instances,
        );
    }
    Ok(ExitCode::SUCCESS)
}
