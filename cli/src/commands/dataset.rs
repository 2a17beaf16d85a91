//! `datajump dataset list|show|events|announce`: the datasets tasks write
//! and data schedules wait for, through the API.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use datajump_api::routes::datasets::dto::{AnnouncedDto, DatasetDto, DatasetEventDto};
use serde_json::{Value, json};

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::output::{out, printable, table};

/// Dataset subcommands.
#[derive(Subcommand)]
pub enum DatasetCommand {
    /// List a project's datasets: who writes each, who waits for it, its
    /// latest event.
    ///
    /// A task writes a dataset with `outputs: [dw.orders/${bizdate}]`; a
    /// DAG waits for datasets with `schedules: [{ on: { all: [dw.orders,
    /// dw.users] } }]` (docs/DAG_FORMAT.md "Datasets").
    List {
        /// The project (default: the token's, or 1).
        #[arg(long)]
        project: Option<i64>,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one dataset: the tasks that write it and the schedules that wait
    /// for it (its lineage), and its latest event.
    Show {
        /// The dataset, e.g. `dw.orders`.
        name: String,
        /// The project (default: the token's, or 1).
        #[arg(long)]
        project: Option<i64>,
        /// Print the API's JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List a dataset's events, newest first.
    Events {
        /// The dataset, e.g. `dw.orders`.
        name: String,
        /// Only this partition, e.g. `2024-01-15`.
        #[arg(long)]
        partition: Option<String>,
        /// The project (default: the token's, or 1).
        #[arg(long)]
        project: Option<i64>,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: u64,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Announce that a dataset (or a partition of it) was written outside
    /// DataJump: starts every data schedule this completes.
    ///
    /// Examples:
    ///   datajump dataset announce ods.orders --partition 2024-01-15
    ///   datajump dataset announce ods.users --metadata '{"rows": 1200}'
    #[command(verbatim_doc_comment)]
    Announce {
        /// The dataset, e.g. `ods.orders`.
        name: String,
        /// The partition written; a date (2024-01-15, 20240115) becomes the
        /// business date of the runs it starts.
        #[arg(long)]
        partition: Option<String>,
        /// A small JSON object kept with the event.
        #[arg(long)]
        metadata: Option<String>,
        /// The project (default: the token's, or 1).
        #[arg(long)]
        project: Option<i64>,
        /// Print the API's JSON instead of a sentence.
        #[arg(long)]
        json: bool,
    },
}

fn project_query(project: Option<i64>) -> Vec<(&'static str, String)> {
    project
        .map(|id| ("project", id.to_string()))
        .into_iter()
        .collect()
}

fn partition_text(partition: Option<&str>) -> String {
    partition.map_or_else(|| "-".to_owned(), |p| printable(p).into_owned())
}

/// Runs a dataset subcommand.
pub async fn run(global: &Global, command: DatasetCommand) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    match command {
        DatasetCommand::List { project, json } => {
            let all = api.all(&["datasets"], &project_query(project)).await?;
            if json {
                print_json(&Value::Array(all));
                return Ok(ExitCode::SUCCESS);
            }
            let mut rows = Vec::with_capacity(all.len());
            for answer in all {
                let dataset: DatasetDto = read(answer)?;
                rows.push(vec![
                    dataset.name,
                    dataset
                        .producers
                        .iter()
                        .map(|p| format!("{}/{}", p.dag, p.task))
                        .collect::<Vec<_>>()
                        .join(", "),
                    dataset
                        .consumers
                        .iter()
                        .map(|c| c.dag.clone())
                        .collect::<Vec<_>>()
                        .join(", "),
                    dataset.events.to_string(),
                    dataset.last_event.map_or_else(
                        || "never".to_owned(),
                        |e| {
                            format!(
                                "{} {}",
                                partition_text(e.partition.as_deref()),
                                e.created_at.format("%Y-%m-%d %H:%M:%S UTC")
                            )
                        },
                    ),
                ]);
            }
            table(
                &["DATASET", "WRITTEN BY", "STARTS", "EVENTS", "LAST EVENT"],
                &rows,
            );
        }
        DatasetCommand::Show {
            name,
            project,
            json,
        } => {
            let answer = api
                .get(&["datasets", &name], &project_query(project))
                .await?;
            if json {
                print_json(&answer);
                return Ok(ExitCode::SUCCESS);
            }
            let dataset: DatasetDto = read(answer)?;
            out!("dataset {} (project {})", dataset.name, dataset.project_id);
            out!("written by:");
            if dataset.producers.is_empty() {
                out!("  no task (announced from outside, or not yet)");
            }
            for p in &dataset.producers {
                out!(
                    "  {}/{}{}",
                    p.dag,
                    p.task,
                    p.partition
                        .as_deref()
                        .map(|t| format!(" partition {t}"))
                        .unwrap_or_default()
                );
            }
            out!("starts:");
            if dataset.consumers.is_empty() {
                out!("  no data schedule waits for it");
            }
            for c in &dataset.consumers {
                let state = if c.active { "" } else { " (paused or offline)" };
                out!("  {} (schedule {}){state}", c.dag, c.schedule);
            }
            match &dataset.last_event {
                Some(e) => out!(
                    "last event: #{} partition {} at {} by {} ({} events)",
                    e.id,
                    partition_text(e.partition.as_deref()),
                    e.created_at.format("%Y-%m-%d %H:%M:%S UTC"),
                    e.source,
                    dataset.events
                ),
                None => out!("no event yet"),
            }
        }
        DatasetCommand::Events {
            name,
            partition,
            project,
            limit,
            json,
        } => {
            let mut query = project_query(project);
            query.push(("pageSize", limit.clamp(1, 500).to_string()));
            if let Some(partition) = partition {
                query.push(("partition", partition));
            }
            let answer = api.get(&["datasets", &name, "events"], &query).await?;
            if json {
                print_json(&answer);
                return Ok(ExitCode::SUCCESS);
            }
            let items: Vec<DatasetEventDto> = read(answer["items"].clone())?;
            let rows: Vec<Vec<String>> = items
                .into_iter()
                .map(|e| {
                    vec![
                        e.id.to_string(),
                        partition_text(e.partition.as_deref()),
                        e.source.to_string(),
                        e.dag_run_id
                            .map_or_else(|| "-".to_owned(), |id| id.to_string()),
                        e.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
                        e.metadata.map_or_else(String::new, |m| m.to_string()),
                    ]
                })
                .collect();
            table(
                &["ID", "PARTITION", "SOURCE", "RUN", "AT", "METADATA"],
                &rows,
            );
        }
        DatasetCommand::Announce {
            name,
            partition,
            metadata,
            project,
            json,
        } => {
            let metadata: Option<Value> = metadata
                .map(|text| serde_json::from_str(&text).context("--metadata is not valid JSON"))
                .transpose()?;
            let body = json!({ "project": project, "partition": partition, "metadata": metadata });
            let answer = api
                .post(&["datasets", &name, "events"], Some(&body))
                .await?;
            if json {
                print_json(&answer);
                return Ok(ExitCode::SUCCESS);
            }
            let announced: AnnouncedDto = read(answer)?;
            out!(
                "recorded event #{} of {} partition {}",
                announced.event.id,
                announced.event.dataset,
                partition_text(announced.event.partition.as_deref())
            );
            if announced.starts.is_empty() {
                out!("starts nothing: no data schedule's condition is met by it yet");
            } else {
                out!(
                    "starts a run of: {}",
                    printable(&announced.starts.join(", "))
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
