//! `datajump secret set|list|remove`: the credentials HTTP tasks name in
//! header values as `${secret:NAME}`.
//!
//! The shaping decision: **a value is never an argument**, as with datasource
//! passwords: `set` reads it from an environment variable it is told the name
//! of (`--value-env VAR`) or from standard input (`--value-stdin`, the
//! default), and `list` never shows values.

use std::process::ExitCode;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use datajump_shared::naming::printable;
use datajump_shared::secrets::{self, SecretError};
use datajump_store::sealing::{self, SecretKey};
use datajump_store::secrets::SetOutcome;

use crate::Global;
use crate::client::Client;
use crate::output::{out, read_secret, table};

/// Secret subcommands.
#[derive(Subcommand)]
pub enum SecretCommand {
    /// Create a secret, or replace its value.
    ///
    /// An HTTP task uses it in a header value; the runner reads it when the
    /// request is sent, so it is never stored in the DAG or sent in a message,
    /// and the log shows it as ***. A secret belongs to one project (the
    /// default one unless --project says), and only that project's tasks
    /// and alerts may use it; names are unique in the installation.
    ///
    /// Examples:
    ///   printf '%s\n' "$TOKEN" | datajump secret set api_token --description "reporting API"
    ///   API_TOKEN=… datajump secret set api_token --value-env API_TOKEN --project analytics
    ///
    /// and in the DAG:
    ///   headers: { Authorization: "Bearer ${secret:api_token}" }
    #[command(verbatim_doc_comment)]
    Set(SetArgs),
    /// List secrets (names, projects and descriptions; values are never shown).
    List,
    /// Remove a secret (tasks naming it then fail until it is set again).
    Remove {
        /// The secret's name.
        name: String,
    },
    /// Seal every secret value and datasource password under a new key.
    ///
    /// Values are stored encrypted (AES-256-GCM) under the key of
    /// DATAJUMP_SECRET_KEY, or of the file DATAJUMP_SECRET_KEY_FILE names, or
    /// of secret.key in the data folder (which `datajump up` creates). This
    /// makes a new key, re-seals every value with it in one transaction
    /// (values stored before there was a key are sealed too), and then:
    ///   - with a key file: writes the new key to that file;
    ///   - with DATAJUMP_SECRET_KEY: prints the new key, which every runner,
    ///     ticker and operator command must then be given.
    ///
    /// With no key yet, it creates secret.key in the data folder.
    ///
    /// Example:
    ///   datajump secret rotate-key
    #[command(verbatim_doc_comment)]
    RotateKey,
}

/// Arguments of `secret set`.
#[derive(Args)]
pub struct SetArgs {
    /// Name tasks refer to as ${secret:NAME}: letters, digits, '_' and '.',
    /// starting with a letter or '_'.
    name: String,
    /// Read the value from this environment variable.
    #[arg(long, value_name = "VAR", conflicts_with = "value_stdin")]
    value_env: Option<String>,
    /// Read the value from the first line of standard input (the default).
    #[arg(long)]
    value_stdin: bool,
    /// What the secret is for (kept as it was when not given).
    #[arg(long)]
    description: Option<String>,
    /// The project whose tasks may use it, by id or name.
    #[arg(long, default_value = "default")]
    project: String,
}

/// `secret rotate-key`: a new key, every value re-sealed under it, then
/// the key put where the old one came from.
async fn rotate_key(global: &Global, client: &Client) -> Result<()> {
    let old = sealing::current();
    let new = SecretKey::generate();
    let from_env = std::env::var("DATAJUMP_SECRET_KEY").is_ok_and(|k| !k.trim().is_empty());
    let file = match std::env::var("DATAJUMP_SECRET_KEY_FILE") {
        Ok(path) if !path.trim().is_empty() => PathBuf::from(path),
        _ => sealing::default_key_file(&global.data_dir),
    };
    // The new key is on disk before any value depends on it.
    let staged = file.with_extension("key.new");
    if !from_env {
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        new.write(&staged)?;
    }
    let resealed = client.rotate_secret_key(old, &new).await?;
    out!(
        "re-sealed {} secret(s) and {} datasource password(s) under a new key",
        resealed.secrets,
        resealed.passwords
    );
    if from_env {
        out!("new key (give it to every role and operator command as DATAJUMP_SECRET_KEY):");
        out!("{}", new.encode());
    } else {
        std::fs::rename(&staged, &file)
            .with_context(|| format!("cannot move the new key into {}", file.display()))?;
        out!(
            "the new key is in {} (roles on other hosts need a copy)",
            file.display()
        );
    }
    Ok(())
}

/// Runs a secret subcommand.
pub async fn run(global: &Global, command: SecretCommand) -> Result<ExitCode> {
    let client = Client::connect(global).await?;
    match command {
        SecretCommand::Set(args) => {
            if !secrets::is_valid_name(&args.name) {
                return Err(SecretError::InvalidName(args.name).into());
            }
            let from_stdin = args.value_env.is_none();
            let Some(value) = read_secret("--value", args.value_env.as_deref(), from_stdin)? else {
                bail!("no value: give --value-env VAR or pipe the value to standard input");
            };
            let project = client.resolve_project(&args.project).await?;
            let outcome = client
                .set_secret(project.id, &args.name, &value, args.description.as_deref())
                .await?;
            let done = match outcome {
                SetOutcome::Created => "created",
                SetOutcome::Updated => "updated",
            };
            out!(
                "secret '{}' {done} for project {} ({})",
                args.name,
                printable(&project.name),
                project.id
            );
            if sealing::current().is_none() {
                eprintln!(
                    "warning: stored unencrypted: no secret key is configured (set \
                     DATAJUMP_SECRET_KEY, or run `datajump secret rotate-key` to create one)"
                );
            }
        }
        SecretCommand::List => {
            let rows: Vec<Vec<String>> = client
                .secrets()
                .await?
                .into_iter()
                .map(|s| {
                    vec![
                        s.name,
                        s.project_id.to_string(),
                        s.description,
                        s.updated_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
                    ]
                })
                .collect();
            table(&["NAME", "PROJECT", "DESCRIPTION", "UPDATED"], &rows);
        }
        SecretCommand::Remove { name } => {
            client.remove_secret(&name).await?;
            out!("secret '{name}' removed");
        }
        SecretCommand::RotateKey => rotate_key(global, &client).await?,
    }
    Ok(ExitCode::SUCCESS)
}
