//! `datajump`: the one binary of the DataJump scheduler, as a library whose
//! [`main`] is the whole program. `src/main.rs` only calls it; the fault tests
//! of `datajump-tests` build their own binary that calls it too, so they run
//! the real CLI as separate processes (an integration test of another package
//! has no `CARGO_BIN_EXE_datajump`).
//!
//! Every role (`ticker`, `resolver`, `runner`, `api`) can run as its own
//! process, or all together with `datajump up`; the user commands (`dag …`,
//! `trigger`, `runs`, `logs`, `kill`, `rerun`, `task …`, `backfill`,
//! `schedule …`, `events publish`) sit beside them and talk to the REST API
//! only ([`api`]). Operator commands (`migrate`, `datasource`, `secret`, `token`,
//! `alerts`) open the database directly ([`client`]): passwords and secret
//! values are deliberately not exposed over HTTP. Every setting is a flag
//! with an environment variable, and the defaults bring a working system up
//! on a laptop with nothing configured.

mod api;
mod client;
pub mod commands;
mod nats_server;
mod output;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use datajump_store::db::{DatabaseUrl, DatabaseUrlError};
use tracing_subscriber::EnvFilter;

/// DataJump: a DAG task scheduler on NATS JetStream.
///
/// Quick start: `datajump up` runs every role in one process with a SQLite
/// database and a local NATS server, and applies the DAG files in ./dags.
/// In another terminal: `datajump trigger example_diamond --wait` and
/// `datajump runs example_diamond`.
///
/// User commands (dag, trigger, runs, logs, kill, rerun, task, backfill,
/// schedule, events) talk to the HTTP API at --api (DATAJUMP_API_URL), with
/// the bearer token of DATAJUMP_API_TOKEN when the API requires one; they
/// print tables, or the API's JSON with --json. Roles and operator commands
/// (migrate, datasource, secret, token, alerts) use the database directly.
#[derive(Parser)]
#[command(
    name = "datajump",
    version,
    about,
    long_about,
    propagate_version = true
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Where the system's API, database and NATS are; shared by every command.
#[derive(Args, Clone, Debug)]
pub struct Global {
    /// The HTTP API user commands talk to (`datajump up` and `datajump api` serve it).
    #[arg(long = "api", global = true, env = "DATAJUMP_API_URL", default_value = api::DEFAULT_API_URL)]
    pub api_url: String,
    /// Database URL (roles and operator commands): `sqlite://FILE?mode=rwc` or
    /// `postgres://USER@HOST/DB` [default: datajump.db in the data folder]. Only `up` and
    /// `migrate` create a database that does not exist.
    #[arg(
        long = "database-url",
        global = true,
        env = "DATAJUMP_DATABASE_URL",
        value_name = "URL"
    )]
    pub database_url_given: Option<String>,
    /// NATS URL, or a comma-separated list for a cluster (roles, and `logs --follow`'s live lines).
    #[arg(
        long,
        global = true,
        env = "DATAJUMP_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    pub nats_url: String,
    /// The prefix of every NATS subject, stream and bucket of this installation
    /// (`dj.work.…`, `DJ_WORK`, `dj_ticker`), so that several installations can share one NATS
    /// server: give each its own, the same for all of its processes.
    #[arg(
        long,
        global = true,
        env = "DATAJUMP_NATS_PREFIX",
        default_value = datajump_shared::subjects::DEFAULT_PREFIX,
        value_name = "PREFIX"
    )]
    pub nats_prefix: datajump_shared::subjects::Namespace,
    /// Copies JetStream keeps of each stream and bucket DataJump creates: `auto` is 3 on a
    /// NATS cluster and 1 on a single server (a cluster of two nodes takes 2). Existing
    /// streams keep theirs (`topology check` reports a difference; `topology apply
    /// --replicas N` scales them).
    #[arg(
        long,
        global = true,
        env = "DATAJUMP_NATS_REPLICAS",
        default_value = "auto",
        value_name = "auto|1-5"
    )]
    pub nats_replicas: datajump_nats::Replicas,
    /// The IANA time zone times are read in where nothing names one: the roles' default for
    /// schedules that name none, and the zone `cron next` reads an expression in (`--tz` too).
    #[arg(
        long,
        visible_alias = "tz",
        global = true,
        env = "DATAJUMP_TIMEZONE",
        default_value = datajump_cron::DEFAULT_TIME_ZONE,
        value_parser = known_time_zone
    )]
    pub timezone: String,
    /// Folder for local state: the default SQLite database, a started nats-server's storage
    /// and logs, and `secret.key`, the key secrets are sealed with when DATAJUMP_SECRET_KEY /
    /// DATAJUMP_SECRET_KEY_FILE are unset [default: $XDG_DATA_HOME/datajump, else
    /// ~/.local/share/datajump].
    #[arg(
        long,
        global = true,
        env = "DATAJUMP_DATA_DIR",
        default_value_os_t = default_data_dir(),
        hide_default_value = true
    )]
    pub data_dir: std::path::PathBuf,
    /// NATS user name; its password is read from DATAJUMP_NATS_PASSWORD (never a flag). A token
    /// is read from DATAJUMP_NATS_TOKEN.
    #[arg(long, global = true, env = "DATAJUMP_NATS_USER", value_name = "USER")]
    pub nats_user: Option<String>,
    /// NATS credentials file (.creds: a user JWT and its NKey seed).
    #[arg(long, global = true, env = "DATAJUMP_NATS_CREDS", value_name = "FILE")]
    pub nats_creds: Option<std::path::PathBuf>,
    /// File holding an NKey seed to authenticate to NATS with.
    #[arg(long, global = true, env = "DATAJUMP_NATS_NKEY", value_name = "FILE")]
    pub nats_nkey: Option<std::path::PathBuf>,
    /// CA certificate(s) to trust for NATS TLS (PEM).
    #[arg(long, global = true, env = "DATAJUMP_NATS_TLS_CA", value_name = "FILE")]
    pub nats_tls_ca: Option<std::path::PathBuf>,
    /// Client certificate for NATS TLS (PEM), with --nats-tls-key.
    #[arg(
        long,
        global = true,
        env = "DATAJUMP_NATS_TLS_CERT",
        value_name = "FILE",
        requires = "nats_tls_key"
    )]
    pub nats_tls_cert: Option<std::path::PathBuf>,
    /// Key of --nats-tls-cert (PEM).
    #[arg(
        long,
        global = true,
        env = "DATAJUMP_NATS_TLS_KEY",
        value_name = "FILE",
        requires = "nats_tls_cert"
    )]
    pub nats_tls_key: Option<std::path::PathBuf>,
    /// Refuse to talk to NATS without TLS.
    #[arg(long, global = true, env = "DATAJUMP_NATS_REQUIRE_TLS")]
    pub nats_require_tls: bool,
}

/// `--timezone`'s value, refused at once when no such zone exists.
fn known_time_zone(name: &str) -> Result<String, String> {
    datajump_cron::parse_time_zone(name)
        .map(|zone| zone.name().to_owned())
        .map_err(|e| format!("{e} (an IANA name such as Asia/Shanghai, Europe/London or UTC)"))
}

/// Where local state lives when `--data-dir` is not given: the XDG data
/// folder, so that a command run from any directory finds the same
/// database (`./.datajump` only where there is no home).
fn default_data_dir() -> std::path::PathBuf {
    let absolute = |name| {
        std::env::var_os(name)
            .map(std::path::PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    absolute("XDG_DATA_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local").join("share")))
        .map_or_else(
            || std::path::PathBuf::from(".datajump"),
            |base| base.join("datajump"),
        )
}

impl Global {
    /// The database: the one given, or the SQLite file of the data folder.
    pub fn database_url(&self) -> Result<DatabaseUrl, DatabaseUrlError> {
        match &self.database_url_given {
            Some(given) => DatabaseUrl::parse(given),
            None => Ok(DatabaseUrl::default_in(&self.data_dir)),
        }
    }

    /// The NATS credentials and TLS settings of the flags and environment.
    pub fn nats_auth(&self) -> datajump_nats::NatsAuth {
        let secret = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        datajump_nats::NatsAuth {
            user_password: self
                .nats_user
                .clone()
                .map(|user| (user, secret("DATAJUMP_NATS_PASSWORD").unwrap_or_default())),
            token: secret("DATAJUMP_NATS_TOKEN"),
            creds_file: self.nats_creds.clone(),
            nkey_seed_file: self.nats_nkey.clone(),
            tls_ca: self.nats_tls_ca.clone(),
            tls_client: self.nats_tls_cert.clone().zip(self.nats_tls_key.clone()),
            require_tls: self.nats_require_tls,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run every role in one process with embedded defaults (starts nats-server if none answers).
    Up(commands::up::UpArgs),
    /// Stop the `datajump up` running on this data folder (as Ctrl-C would: tasks may finish).
    Down,
    /// Drop this installation: its database (tables, or the SQLite file) and DataJump's
    /// streams and buckets, after a confirmation (--yes off a terminal). DAG files and the
    /// secret key stay.
    Reset(commands::lifecycle::ResetArgs),
    /// Apply the database migrations (`up` and every role do it too).
    Migrate,
    /// Print the API's OpenAPI 3 document (JSON), as `GET /api/v1/openapi.json`
    /// answers, without starting anything: for client generators.
    ///
    /// Example: datajump openapi > openapi.json
    #[command(verbatim_doc_comment)]
    Openapi,
    /// Create or check the JetStream streams, consumers and buckets (`up`
    /// and every role create what is missing when their NATS user may).
    #[command(subcommand)]
    Topology(commands::topology::TopologyCommand),
    /// Run the ticker role: cron fires and the deadline scan.
    Ticker(commands::roles::TickerArgs),
    /// Run the resolver role: fires into runs, completions into releases.
    Resolver(commands::roles::ResolverArgs),
    /// Run a runner: executes tasks of its queues.
    Runner(commands::roles::RunnerArgs),
    /// Run the HTTP API.
    Api(commands::roles::ApiArgs),
    /// Work with DAG definitions: apply, list, show, delete.
    #[command(subcommand)]
    Dag(commands::dag::DagCommand),
    /// List, add, change, pause, resume and remove a DAG's schedules.
    #[command(subcommand)]
    Schedule(commands::schedule::ScheduleCommand),
    /// Publish external events that start the DAGs bound to them.
    #[command(subcommand)]
    Events(commands::events::EventsCommand),
    /// Datasets: what tasks write, what starts data-scheduled DAGs, their events.
    #[command(subcommand)]
    Dataset(commands::dataset::DatasetCommand),
    /// Start a MANUAL run of a DAG.
    Trigger(commands::trigger::TriggerArgs),
    /// List a DAG's runs with their task states, newest first, a page at a time.
    Runs(commands::runs::RunsArgs),
    /// Show one run by id.
    #[command(subcommand)]
    Run(commands::runs::RunCommand),
    /// Manage the datasources SQL tasks connect to (direct database access; passwords are never printed).
    #[command(subcommand)]
    Datasource(commands::datasource::DatasourceCommand),
    /// Test a DAG's alert webhooks and list the alerts sent (direct database access).
    #[command(subcommand)]
    Alerts(commands::alerts::AlertsCommand),
    /// Manage the secrets HTTP tasks put in headers as ${secret:NAME} (direct database access; values are never printed).
    #[command(subcommand)]
    Secret(commands::secret::SecretCommand),
    /// Manage the named API tokens and their roles (direct database access; a token is shown once).
    #[command(subcommand)]
    Token(commands::token::TokenCommand),
    /// Manage projects: the groups DAGs, secrets, datasources and tokens belong to (direct database access).
    #[command(subcommand)]
    Project(commands::project::ProjectCommand),
    /// Who changed what, when and from where (GET /api/v1/audit; an admin token).
    Audit(commands::audit::AuditArgs),
    /// Kill a running (or waiting) task instance, or a whole run.
    Kill(commands::kill::KillArgs),
    /// Run a DAG for a range of business dates (BACKFILL runs; dates that already ran are skipped).
    Backfill(commands::backfill::BackfillArgs),
    /// Run a finished run again, in place (all tasks, or --failed-only).
    Rerun(commands::rerun::RerunArgs),
    /// Clear or mark a single task instance.
    #[command(subcommand)]
    Task(commands::rerun::TaskCommand),
    /// Print a task's log (the latest attempt by default), or follow it live.
    Logs(commands::logs::LogsArgs),
    /// Check cron expressions: next fire times and descriptions.
    #[command(subcommand)]
    Cron(commands::cron::CronCommand),
}

/// A group of [`Global`]'s settings, as commands read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    /// `--api`: user commands talk to the API.
    Api,
    /// `--database-url`: roles and operator commands open the database.
    Database,
    /// `--data-dir`: the default database, a started nats-server, the secret key.
    DataDir,
    /// `--nats-*`: roles and `logs --follow` connect to NATS.
    Nats,
    /// `--timezone`.
    TimeZone,
}

impl Setting {
    /// The group of one of [`Global`]'s arguments, by its id.
    fn of_arg(id: &str) -> Option<Setting> {
        match id {
            "api_url" => Some(Setting::Api),
            "database_url_given" => Some(Setting::Database),
            "data_dir" => Some(Setting::DataDir),
            "timezone" => Some(Setting::TimeZone),
            id if id.starts_with("nats_") => Some(Setting::Nats),
            _ => None,
        }
    }

    /// What a command that reads none of the group's settings reads instead,
    /// for the error that refuses one.
    fn instead(self) -> &'static str {
        match self {
            Setting::Api => "it does not talk to the API",
            Setting::Database | Setting::DataDir => {
                "it talks to the API (--api), which has the database"
            }
            Setting::Nats => "it does not connect to NATS",
            Setting::TimeZone => "it reads no time in a default zone",
        }
    }
}

/// The settings each command reads: `--help` shows only these, and one of
/// the others given on the command line is an error rather than silently
/// ignored. (Variables in the environment are not checked: one environment
/// serves every command.)
fn settings_of(command: &str) -> &'static [Setting] {
    use Setting::*;
    match command {
        "up" | "ticker" | "api" => &[Database, DataDir, Nats, TimeZone],
        "resolver" => &[Database, DataDir, Nats, TimeZone],
        "reset" => &[Database, DataDir, Nats],
        "runner" => &[Database, DataDir, Nats, Api, TimeZone],
        "migrate" | "datasource" | "alerts" | "secret" | "token" | "project" => {
            &[Database, DataDir]
        }
        "down" => &[DataDir],
        "topology" => &[Nats],
        "logs" => &[Api, Nats],
        "cron" => &[TimeZone],
        // dag, schedule, events, dataset, trigger, runs, run, kill, backfill, rerun,
        // task, audit: the API's clients.
        _ => &[Api],
    }
}

/// The command line's parser, with each command's help showing only the
/// global settings it reads ([`settings_of`]).
///
/// Each command is given, before clap propagates the global arguments, a
/// hidden copy of every one it does not read: clap then propagates nothing
/// over it, and the copy still parses, so that the error can say why the
/// setting does nothing there ([`unused_setting_given`]).
fn command_line() -> clap::Command {
    let command = Cli::command();
    let globals: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .cloned()
        .collect();
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .collect();
    names.into_iter().fold(command, |command, name| {
        let used = settings_of(&name);
        let hidden: Vec<clap::Arg> = globals
            .iter()
            .filter(|arg| {
                Setting::of_arg(arg.get_id().as_str()).is_some_and(|s| !used.contains(&s))
            })
            .map(|arg| arg.clone().hide(true))
            .collect();
        command.mut_subcommand(name, |sub| sub.args(hidden))
    })
}

/// A global setting given on the command line to a command that does not
/// read it, as the message refusing it: `datajump trigger --database-url …`
/// would otherwise look as if it chose the database.
fn unused_setting_given(command: &clap::Command, matches: &clap::ArgMatches) -> Option<String> {
    let name = matches.subcommand_name()?;
    let used = settings_of(name);
    command.get_arguments().find_map(|arg| {
        let id = arg.get_id().as_str();
        let setting = Setting::of_arg(id).filter(|s| !used.contains(s))?;
        (matches.value_source(id) == Some(ValueSource::CommandLine)).then(|| {
            format!(
                "--{} does nothing for `datajump {name}`: {}",
                arg.get_long().unwrap_or(id),
                setting.instead()
            )
        })
    })
}

/// Logs to stderr under the `DATAJUMP_LOG` filter (default `info`), the
/// same way in every binary that runs roles (`datajump`, `datajump-bench`).
pub fn init_tracing() {
    let filter = EnvFilter::try_from_env("DATAJUMP_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,async_nats=warn,sea_orm=warn"));
    // Colours only for a person at a terminal (and never with NO_COLOR):
    // escape codes in a log file or a pipe are noise.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .with_target(false)
        .compact()
        .init();
}

/// Parses the command line, runs the command and returns its exit code.
#[tokio::main]
pub async fn main() -> ExitCode {
    let mut command = command_line();
    let matches = command.get_matches_mut();
    if let Some(message) = unused_setting_given(&command, &matches) {
        command
            .error(clap::error::ErrorKind::ArgumentConflict, message)
            .exit();
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if !matches!(cli.command, Command::Cron(_)) {
        init_tracing();
    }
    // `up` creates a key when there is none; everyone else uses the one
    // configured, if any (`secret rotate-key` may be the one to create the
    // file named).
    if !matches!(
        cli.command,
        Command::Up(_) | Command::Cron(_) | Command::Openapi
    ) {
        let creating = matches!(
            cli.command,
            Command::Secret(commands::secret::SecretCommand::RotateKey)
        );
        match datajump_store::sealing::key_from_environment(&cli.global.data_dir) {
            Ok(key) => {
                datajump_store::sealing::configure(key);
            }
            Err(datajump_store::sealing::SealError::KeyFile { source, .. })
                if creating && source.kind() == std::io::ErrorKind::NotFound =>
            {
                datajump_store::sealing::configure(None);
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let result = match cli.command {
        Command::Up(args) => commands::up::run(&cli.global, args).await,
        Command::Migrate => commands::roles::migrate(&cli.global).await,
        Command::Down => commands::lifecycle::down(&cli.global).await,
        Command::Openapi => {
            let document =
                datajump_api::routes::openapi::build(&datajump_api::routes::table::endpoints());
            output::out!("{document:#}");
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Reset(args) => commands::lifecycle::reset(&cli.global, args).await,
        Command::Topology(command) => commands::topology::run(&cli.global, command).await,
        Command::Ticker(args) => commands::roles::ticker(&cli.global, args).await,
        Command::Resolver(args) => commands::roles::resolver(&cli.global, args).await,
        Command::Runner(args) => commands::roles::runner(&cli.global, args).await,
        Command::Api(args) => commands::roles::api(&cli.global, args).await,
        Command::Dag(command) => commands::dag::run(&cli.global, command).await,
        Command::Schedule(command) => commands::schedule::run(&cli.global, command).await,
        Command::Events(command) => commands::events::run(&cli.global, command).await,
        Command::Dataset(command) => commands::dataset::run(&cli.global, command).await,
        Command::Trigger(args) => commands::trigger::run(&cli.global, args).await,
        Command::Runs(args) => commands::runs::run(&cli.global, args).await,
        Command::Run(command) => commands::runs::run_command(&cli.global, command).await,
        Command::Kill(args) => commands::kill::run(&cli.global, args).await,
        Command::Backfill(args) => commands::backfill::run(&cli.global, args).await,
        Command::Rerun(args) => commands::rerun::rerun(&cli.global, args).await,
        Command::Task(command) => commands::rerun::task(&cli.global, command).await,
        Command::Logs(args) => commands::logs::run(&cli.global, args).await,
        Command::Datasource(command) => commands::datasource::run(&cli.global, command).await,
        Command::Secret(command) => commands::secret::run(&cli.global, command).await,
        Command::Alerts(command) => commands::alerts::run(&cli.global, command).await,
        Command::Token(command) => commands::token::run(&cli.global, command).await,
        Command::Project(command) => commands::project::run(&cli.global, command).await,
        Command::Audit(args) => commands::audit::run(&cli.global, args).await,
        Command::Cron(command) => commands::cron::run(&cli.global, command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_global_setting_has_a_group() {
        for arg in Cli::command().get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_global_set() {
                assert!(Setting::of_arg(id).is_some(), "{id} belongs to no Setting");
            }
        }
    }

    #[test]
    fn help_shows_only_the_settings_a_command_reads() {
        let help = |path: &[&str]| {
            let mut command = command_line();
            command.build();
            let mut sub = &mut command;
            for name in path {
                sub = sub.find_subcommand_mut(name).expect("a subcommand");
            }
            sub.render_long_help().to_string()
        };
        let trigger = help(&["trigger"]);
        assert!(trigger.contains("--api"), "{trigger}");
        assert!(!trigger.contains("--database-url"), "{trigger}");
        assert!(!trigger.contains("--nats-creds"), "{trigger}");
        let apply = help(&["dag", "apply"]);
        assert!(!apply.contains("--nats-url"), "{apply}");
        let cron = help(&["cron", "next"]);
        assert!(cron.contains("--timezone"), "{cron}");
        assert!(!cron.contains("--api"), "{cron}");
        let runner = help(&["runner"]);
        for flag in ["--database-url", "--nats-url", "--nats-prefix", "--api"] {
            assert!(runner.contains(flag), "{flag}: {runner}");
        }
    }

    #[test]
    fn a_setting_a_command_ignores_is_refused() {
        let refused = |args: &[&str]| {
            let mut command = command_line();
            let matches = command
                .try_get_matches_from_mut(args)
                .expect("the line parses");
            unused_setting_given(&command, &matches)
        };
        assert_eq!(
            refused(&[
                "datajump",
                "trigger",
                "x",
                "--database-url",
                "sqlite://a.db"
            ])
            .as_deref(),
            Some(
                "--database-url does nothing for `datajump trigger`: it talks to the API (--api), \
                 which has the database"
            )
        );
        assert!(refused(&["datajump", "--nats-url", "nats://h:1", "dag", "list"]).is_some());
        assert_eq!(
            refused(&["datajump", "trigger", "x", "--api", "http://h:1"]),
            None
        );
        assert_eq!(
            refused(&["datajump", "runner", "--database-url", "sqlite://a.db"]),
            None
        );
        assert_eq!(
            refused(&["datajump", "cron", "next", "0 0 * * * ?", "--tz", "UTC"]),
            None
        );
    }
}
