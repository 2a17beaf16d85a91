//! `datajump dag apply|list|show|delete`, through the API.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use datajump_api::routes::dags::dto::DagSummary;
use datajump_shared::dag_file::DagFile;
use datajump_store::catalog::ApplyReport;
use reqwest::Method;
use serde_json::Value;

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::output::{out, printable, table};

/// DAG subcommands.
#[derive(Subcommand)]
pub enum DagCommand {
    /// Create or update DAGs from YAML files (by name); prints what changed.
    ///
    /// Every file is validated here before anything is sent: cycles (named),
    /// unknown or duplicate tasks, invalid cron, time zones, queue names, with
    /// the line of a syntax error. The whole definition is then sent to the
    /// API (created, or replaced in full: what the file leaves out gets its
    /// default), and each DAG's new version is printed with the fields,
    /// tasks and schedules added, changed and removed. The file owns the
    /// DAG from then on: the API refuses edits of its definition, while
    /// online/offline and schedule pauses stay the operators'. See
    /// docs/DAG_FORMAT.md for the format.
    ///
    /// Examples:
    ///   datajump dag apply -f dags/                 # every file of a folder
    ///   datajump dag apply -f nightly.yaml --dry-run  # what would change
    #[command(verbatim_doc_comment)]
    Apply {
        /// DAG files or folders of them (*.yaml, *.yml).
        #[arg(short = 'f', long = "file", required = true)]
        files: Vec<PathBuf>,
        /// Say what each file would change, and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the API's answers (the DAGs as stored, with `changes`) as a
        /// JSON array.
        #[arg(long)]
        json: bool,
    },
    /// List a project's DAGs.
    List {
        /// The project's id (default: the token's project, if it is limited
        /// to one, else 1, `default`; `datajump project list` shows them).
        #[arg(long)]
        project: Option<i64>,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a DAG: its fields, tasks and schedules.
    Show {
        /// The DAG's name.
        name: String,
        /// Print the API's JSON (the whole definition) instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Delete a DAG with its tasks, schedules and run history (refused while runs are active).
    ///
    /// On a terminal it asks first; --yes skips the question (and is needed
    /// when the input is not a terminal, so a script cannot delete by accident).
    Delete {
        /// The DAG's name.
        name: String,
        /// Delete without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Stop the DAG's schedules and events from starting runs (it goes offline);
    /// runs already started go on, and triggers still work.
    Pause {
        /// The DAG's name.
        name: String,
    },
    /// Let the DAG's schedules and events start runs again (it goes online).
    Unpause {
        /// The DAG's name.
        name: String,
    },
}

/// Runs a DAG subcommand.
pub async fn run(global: &Global, command: DagCommand) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    match command {
        DagCommand::Apply {
            files,
            dry_run,
            json,
        } => apply(&api, &files, dry_run, json).await,
        DagCommand::List { project, json } => {
            let query: Vec<(&str, String)> = project
                .map(|id| ("projectId", id.to_string()))
                .into_iter()
                .collect();
            let dags = api.all(&["dags"], &query).await?;
            if json {
                print_json(&Value::Array(dags));
                return Ok(ExitCode::SUCCESS);
            }
            let mut rows = Vec::with_capacity(dags.len());
            for dag in dags {
                let d: DagSummary = read(dag)?;
                rows.push(vec![
                    d.id.to_string(),
                    d.name,
                    if d.online { "online" } else { "offline" }.to_owned(),
                    d.version.to_string(),
                    d.description,
                ]);
            }
            table(&["ID", "NAME", "STATE", "VERSION", "DESCRIPTION"], &rows);
            Ok(ExitCode::SUCCESS)
        }
        DagCommand::Pause { name } => set_online(&api, &name, false).await,
        DagCommand::Unpause { name } => set_online(&api, &name, true).await,
        DagCommand::Show { name, json } => {
            let dag = api.dag(&name).await?;
            if json {
                print_json(&dag);
            } else {
                show(dag)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        DagCommand::Delete { name, yes } => {
            let id = api.dag_id(&name).await?;
            if !yes
                && !crate::commands::confirmed(&format!(
                    "delete DAG {} (id {id}) with its tasks, schedules and every run? [y/N] ",
                    printable(&name)
                ))?
            {
                eprintln!("nothing deleted");
                return Ok(ExitCode::FAILURE);
            }
            api.delete(&["dags", &id.to_string()]).await?;
            out!(
                "deleted DAG {} (id {id}) with its tasks, schedules and runs",
                printable(&name)
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Puts the DAG `name` online or offline (`dag unpause` / `dag pause`).
async fn set_online(api: &Api, name: &str, online: bool) -> Result<ExitCode> {
    let id = api.dag_id(name).await?;
    let action = if online { "online" } else { "offline" };
    api.post(&["dags", &id.to_string(), action], None).await?;
    out!(
        "DAG {} is {}",
        printable(name),
        if online {
            "unpaused: its schedules and events start runs"
        } else {
            "paused: its schedules and events start nothing (runs in progress go on)"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `dag apply`: validates every file, then creates or replaces each DAG.
async fn apply(api: &Api, files: &[PathBuf], dry_run: bool, json: bool) -> Result<ExitCode> {
    let files = expand(files)?;
    // Validate every file before sending any.
    let mut parsed = Vec::new();
    let mut failed = false;
    for path in &files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        match DagFile::parse(&text) {
            Ok(dag) => parsed.push((path, dag)),
            Err(e) => {
                eprintln!("{}: {e}", printable(&path.display().to_string()));
                failed = true;
            }
        }
    }
    if failed {
        eprintln!("nothing was applied");
        return Ok(ExitCode::FAILURE);
    }
    let mut answers = Vec::with_capacity(parsed.len());
    for (path, dag) in parsed {
        // Every field written out, defaults included: an update replaces
        // the whole definition, as applying the file locally would.
        let file = serde_json::to_value(&dag).context("cannot encode the DAG")?;
        let mut body = datajump_api::definition::to_response(
            file.as_object().context("a DAG encodes as an object")?,
        );
        // The file owns the definition from now on (docs/DAG_FORMAT.md).
        body.insert(
            "sourceFile".into(),
            Value::String(crate::client::source_file(path)),
        );
        let body = Value::Object(body);
        let query: Vec<(&str, String)> = if dry_run {
            vec![("dryRun", "true".to_owned())]
        } else {
            Vec::new()
        };
        let stored = match api.dag(&dag.name).await {
            Ok(before) => {
                let id = before["id"].as_i64().context("the API's DAG has no id")?;
                let segments = ["dags", &id.to_string()];
                api.json(Method::PUT, &segments, &query, Some(&body))
                    .await?
            }
            Err(e) if e.is_not_found() => {
                api.json(Method::POST, &["dags"], &query, Some(&body))
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        if !json {
            let changes: ApplyReport = read(stored["changes"].clone())?;
            out!(
                "dag '{}' ({}): {}{changes}",
                printable(&dag.name),
                printable(&path.display().to_string()),
                if dry_run { "would be " } else { "" }
            );
        }
        answers.push(stored);
    }
    if json {
        print_json(&Value::Array(answers));
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a DAG's detail: headline, tasks, schedules.
fn show(dag: Value) -> Result<()> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let tasks: Vec<Vec<String>> = dag["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let parents: Vec<String> = t["dependsOn"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| match d {
                    Value::String(name) => name.clone(),
                    full => text(&full["task"]),
                })
                .collect();
            vec![
                text(&t["name"]),
                text(&t["type"]),
                text(&t["queue"]),
                parents.join(", "),
            ]
        })
        .collect();
    let schedules: Vec<Vec<String>> = dag["schedules"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let trigger = match (&s["cronExpression"], &s["eventName"]) {
                (Value::String(cron), _) => cron.clone(),
                (_, Value::String(event)) => format!("event {event}"),
                _ => String::new(),
            };
            vec![
                text(&s["name"]),
                trigger,
                text(&s["timezone"]),
                if s["enabled"] == Value::Bool(false) {
                    "paused"
                } else {
                    "active"
                }
                .to_owned(),
            ]
        })
        .collect();
    let d: DagSummary = read(dag)?;
    out!(
        "DAG {} (id {}, project {}, version {}, {})",
        printable(&d.name),
        d.id,
        d.project_id,
        d.version,
        if d.online { "online" } else { "offline" }
    );
    if !d.description.is_empty() {
        out!("  {}", printable(&d.description));
    }
    out!(
        "max active runs {}, overlap {}, owner {}",
        d.max_active_runs,
        d.overlap,
        printable(d.owner.as_deref().unwrap_or("-"))
    );
    out!();
    table(&["TASK", "TYPE", "QUEUE", "DEPENDS ON"], &tasks);
    out!();
    if schedules.is_empty() {
        out!("no schedules (runs start by trigger only)");
    } else {
        table(&["SCHEDULE", "TRIGGER", "TIMEZONE", "STATE"], &schedules);
    }
    Ok(())
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
