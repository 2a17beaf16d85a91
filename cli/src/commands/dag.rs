//! `datajump dag apply|list`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use datajump_shared::dag_file::DagFile;

use crate::Global;
use crate::client::Client;
use crate::output::table;

/// DAG subcommands.
#[derive(Subcommand)]
pub enum DagCommand {
    /// Create or update DAGs from YAML files (by name); prints what changed.
    ///
    /// Every file is validated before anything is stored: cycles (named),
    /// unknown or duplicate tasks, invalid cron, time zones, queue names.
    /// See docs/DAG_FORMAT.md for the format.
    Apply {
        /// DAG files or folders of them (*.yaml, *.yml).
        #[arg(short = 'f', long = "file", required = true)]
        files: Vec<PathBuf>,
    },
    /// List DAGs.
    List,
}

/// Runs a DAG subcommand.
pub async fn run(global: &Global, command: DagCommand) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match command {
        DagCommand::Apply { files } => {
            let files = expand(&files)?;
            // Validate every file before storing any.
            let mut parsed = Vec::new();
            let mut failed = false;
            for path in &files {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                match DagFile::parse(&text) {
                    Ok(dag) => parsed.push((path, dag)),
                    Err(e) => {
                        eprintln!("{}: {e}", path.display());
                        failed = true;
                    }
                }
            }
            if failed {
                eprintln!("nothing was applied");
                return Ok(ExitCode::FAILURE);
            }
            for (path, dag) in parsed {
                let report = client.apply(&dag).await?;
                println!("dag '{}' ({}): {report}", dag.name, path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        DagCommand::List => {
            let rows: Vec<Vec<String>> = client
                .dags()
                .await?
                .into_iter()
                .map(|d| {
                    vec![
                        d.id.to_string(),
                        d.name,
                        if d.online { "online" } else { "offline" }.to_owned(),
                        d.version.to_string(),
                        d.description,
                    ]
                })
                .collect();
            table(&["ID", "NAME", "STATE", "VERSION", "DESCRIPTION"], &rows);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Files as given, with folders replaced by their YAML files (sorted).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot read folder {}", path.display()))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}
