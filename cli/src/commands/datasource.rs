//! `datajump datasource add|list|remove`: the named database connections
//! SQL tasks run against.
//!
//! The shaping decision: **a password is never an argument.** Command lines
//! show in `ps` and land in shell history, so `add` reads the password from
//! an environment variable it is told the name of (`--password-env VAR`) or
//! from standard input (`--password-stdin`), and `list` shows only whether
//! one is set (`***`).

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use datajump_shared::datasources::{self, MASK, NewDatasource};
use datajump_shared::kinds::DatasourceKind;
use datajump_shared::naming::printable;

use crate::Global;
use crate::client::Client;
use crate::output::{out, read_secret, table};

/// Datasource subcommands.
#[derive(Subcommand)]
pub enum DatasourceCommand {
    /// Add a datasource for SQL tasks (`datasource: NAME` in a DAG file).
    ///
    /// The connection is tried first (connect, `SELECT 1`, as a SQL task
    /// would from this host); a datasource that cannot connect is not
    /// stored unless --no-test says so.
    ///
    /// Examples:
    ///   DW_PASSWORD=… datajump datasource add dw --kind postgresql --host db1 --database dw --user etl --password-env DW_PASSWORD
    ///   datajump datasource add local --kind sqlite --host /data/app.db
    ///   datajump datasource add later --kind mysql --host db2 --no-test
    #[command(verbatim_doc_comment)]
    Add(AddArgs),
    /// Try a stored datasource's connection (connect, `SELECT 1`) from this host.
    Test {
        /// The datasource's name.
        name: String,
    },
    /// List datasources (a password shows as ***).
    List,
    /// Remove a datasource.
    Remove {
        /// The datasource's name.
        name: String,
    },
}

/// Arguments of `datasource add`.
#[derive(Args)]
pub struct AddArgs {
    /// Unique name tasks refer to (letters, digits, '_', '-', '.').
    name: String,
    /// postgresql, mysql (also for MariaDB) or sqlite.
    #[arg(long, value_parser = parse_kind)]
    kind: DatasourceKind,
    /// Host name or address; for sqlite, the database file's path (it must exist).
    #[arg(long)]
    host: String,
    /// Port (default: the database's usual one).
    #[arg(long)]
    port: Option<u16>,
    /// Database name.
    #[arg(long)]
    database: Option<String>,
    /// User name.
    #[arg(long)]
    user: Option<String>,
    /// Read the password from this environment variable.
    #[arg(long, value_name = "VAR", conflicts_with = "password_stdin")]
    password_env: Option<String>,
    /// Read the password from the first line of standard input.
    #[arg(long)]
    password_stdin: bool,
    /// A connection parameter added to the URL (repeatable), e.g.
    /// `sslmode=require`; for sqlite, `mode=ro` opens the file read-only.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// The project whose SQL tasks may use it, by id or name.
    #[arg(long, default_value = "default")]
    project: String,
    /// Store it without trying the connection (a database not up yet, or
    /// reachable from the runners' hosts only).
    #[arg(long)]
    no_test: bool,
}

fn parse_kind(text: &str) -> Result<DatasourceKind, String> {
    text.parse()
        .map_err(|e: datasources::DatasourceError| e.to_string())
}

impl AddArgs {
    fn password(&self) -> Result<Option<String>> {
        read_secret(
            "--password",
            self.password_env.as_deref(),
            self.password_stdin,
        )
    }

    fn into_new(self) -> Result<NewDatasource> {
        let mut params = BTreeMap::new();
        for item in &self.params {
            match item.split_once('=') {
                Some((name, value)) if !name.is_empty() => {
                    params.insert(name.to_owned(), value.to_owned());
                }
                _ => bail!("--param '{item}': expected NAME=VALUE"),
            }
        }
        Ok(NewDatasource {
            password: self.password()?,
            name: self.name,
            kind: self.kind,
            host: self.host,
            port: self.port,
            database: self.database,
            username: self.user,
            params,
        })
    }
}

/// Runs a datasource subcommand.
pub async fn run(global: &Global, command: DatasourceCommand) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match command {
        DatasourceCommand::Add(args) => {
            let project = client.resolve_project(&args.project).await?;
            let no_test = args.no_test;
            let new = args.into_new()?;
            new.validate()?;
            if !no_test {
                let trial = new.trial_model(project.id);
                if let Err(why) = datajump_runner::executor::check_datasource(&trial).await {
                    bail!(
                        "datasource '{}' not added: cannot connect: {why}\n(fix the settings, or pass \
                         --no-test to store it anyway)",
                        new.name
                    );
                }
            }
            let row = client.add_datasource(project.id, new).await?;
            let url = datasources::connection_url(&row)?;
            out!(
                "datasource '{}' added for project {} ({}): {} {url}",
                row.name,
                printable(&project.name),
                project.id,
                row.kind
            );
            if row.password.is_some() && datajump_store::sealing::current().is_none() {
                eprintln!(
                    "warning: its password is stored unencrypted: no secret key is configured \
                     (set DATAJUMP_SECRET_KEY, or run `datajump secret rotate-key` to create one)"
                );
            }
        }
        DatasourceCommand::List => {
            let rows: Vec<Vec<String>> = client
                .datasources()
                .await?
                .into_iter()
                .map(|d| {
                    let params = match &d.params {
                        serde_json::Value::Object(map) => map
                            .iter()
                            .map(|(k, v)| match v {
                                serde_json::Value::String(s) => format!("{k}={s}"),
                                other => format!("{k}={other}"),
                            })
                            .collect::<Vec<_>>()
                            .join(","),
                        _ => String::new(),
                    };
                    vec![
                        d.name,
                        d.project_id.to_string(),
                        d.kind.as_str().to_owned(),
                        d.host,
                        d.port.map(|p| p.to_string()).unwrap_or_default(),
                        d.database.unwrap_or_default(),
                        d.username.unwrap_or_default(),
                        if d.password.is_some_and(|p| !p.is_empty()) {
                            MASK.to_owned()
                        } else {
                            String::new()
                        },
                        params,
                    ]
                })
                .collect();
            table(
                &[
                    "NAME", "PROJECT", "KIND", "HOST", "PORT", "DATABASE", "USER", "PASSWORD",
                    "PARAMS",
                ],
                &rows,
            );
        }
        DatasourceCommand::Test { name } => {
            let Some(source) = client.datasource_for_test(&name).await? else {
                bail!("no datasource named '{name}' (`datajump datasource list` shows them)");
            };
            match datajump_runner::executor::check_datasource(&source).await {
                Ok(()) => out!(
                    "datasource '{}' connects: {} {}",
                    printable(&name),
                    source.kind,
                    datasources::connection_url(&source)?
                ),
                Err(why) => bail!("datasource '{name}' cannot connect: {why}"),
            }
        }
        DatasourceCommand::Remove { name } => {
            client.remove_datasource(&name).await?;
            out!("datasource '{name}' removed");
        }
    }
    Ok(ExitCode::SUCCESS)
}
