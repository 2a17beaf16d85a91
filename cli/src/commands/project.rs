//! `datajump project create|list`: the projects DAGs belong to, and the
//! boundary of a token created with `--project`.
//!
//! These write the database directly, as `token` and `secret` do:
//! creating a project widens what tokens and secrets can be divided into,
//! which is the installation operator's call.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use datajump_shared::naming::printable;

use crate::Global;
use crate::client::Client;
use crate::output::{out, table};

/// Project subcommands.
#[derive(Subcommand)]
pub enum ProjectCommand {
    /// Create a project and print its id.
    ///
    /// A DAG names its project by id (`project: 2` in its file, `projectId`
    /// in the API); project 1, `default`, is every DAG's that names none.
    /// Secrets and datasources belong to one project, and only its tasks may
    /// use them; a token created with --project reaches that project only.
    ///
    /// Examples:
    ///   datajump project create analytics --description "reporting DAGs"
    ///   datajump token create analytics-ci --role operator --project analytics
    ///   datajump secret set warehouse_key --project analytics --value-env KEY
    #[command(verbatim_doc_comment)]
    Create {
        /// Letters, digits, '_', '-' and '.', at most 64.
        name: String,
        /// What it is for.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List projects: ids, names and descriptions.
    List,
}

/// Runs a project subcommand.
pub async fn run(global: &Global, command: ProjectCommand) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match command {
        ProjectCommand::Create { name, description } => {
            let row = client.create_project(&name, &description).await?;
            out!(
                "project '{}' created with id {} (DAG files: `project: {}`)",
                printable(&row.name),
                row.id,
                row.id
            );
        }
        ProjectCommand::List => {
            let rows: Vec<Vec<String>> = client
                .projects()
                .await?
                .into_iter()
                .map(|p| {
                    vec![
                        p.id.to_string(),
                        p.name,
                        p.description,
                        p.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
                    ]
                })
                .collect();
            table(&["ID", "NAME", "DESCRIPTION", "CREATED"], &rows);
        }
    }
    Ok(ExitCode::SUCCESS)
}
