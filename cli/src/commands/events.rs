//! `datajump events publish NAME [--payload JSON]`, through the API.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use datajump_api::routes::events::dto::EventResponse;
use serde_json::Value;

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::output::{out, printable};

/// Event subcommands.
#[derive(Subcommand)]
pub enum EventsCommand {
    /// Publish event NAME of a project: every DAG of that project with an
    /// event schedule naming it starts a run, with the payload's top-level
    /// fields as run parameters. Other projects' DAGs never see it.
    Publish {
        /// Dot-separated tokens of [a-z0-9_-], the first not a number, e.g.
        /// `orders.loaded`.
        name: String,
        /// The project whose DAGs it starts (default: the token's, or 1).
        #[arg(long)]
        project: Option<i64>,
        /// A JSON object, e.g. '{"table": "orders"}' (default `{}`).
        #[arg(long)]
        payload: Option<String>,
        /// Print the API's JSON instead of a sentence.
        #[arg(long)]
        json: bool,
    },
}

/// Runs an events subcommand.
pub async fn run(global: &Global, command: EventsCommand) -> Result<ExitCode> {
    let EventsCommand::Publish {
        name,
        project,
        payload,
        json,
    } = command;
    let payload: Option<Value> = payload
        .map(|text| serde_json::from_str(&text).context("--payload is not valid JSON"))
        .transpose()?;
    let api = Api::new(&global.api_url)?;
    let query: Vec<(&str, String)> = project
        .map(|id| ("project", id.to_string()))
        .into_iter()
        .collect();
    let answer = api
        .post_query(&["events", &name], &query, payload.as_ref())
        .await?;
    if json {
        print_json(&answer);
    } else {
        let event: EventResponse = read(answer)?;
        out!(
            "published event {} of project {} to {} (stream {}, sequence {})",
            event.event,
            event.project,
            event.subject,
            event.stream,
            event.sequence
        );
        if event.starts.is_empty() {
            eprintln!(
                "warning: no online DAG has an active schedule on {}: the event starts nothing \
                 (bind one with `schedules: [{{ event: {} }}]` in a DAG file)",
                event.event, event.event
            );
        } else {
            out!("starts a run of: {}", printable(&event.starts.join(", ")));
        }
        if !event.offline.is_empty() {
            eprintln!(
                "note: bound but offline, so not started: {} (`datajump dag unpause NAME`)",
                printable(&event.offline.join(", "))
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
