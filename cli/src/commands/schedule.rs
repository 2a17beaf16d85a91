//! `datajump schedule list|add|update|delete|enable|disable DAG …`, over
//! the API's `/api/v1/dags/{dagId}/schedules` collection. Schedules are
//! named here by their name within the DAG (`schedule list` shows them).

use std::process::ExitCode;

use anyhow::{Result, bail};
use chrono::NaiveDate;
use clap::{Args, Subcommand};
use datajump_api::dto::ScheduleDto;
use serde_json::{Map, Value, json};

use datajump_shared::kinds::ScheduleKind;

use crate::Global;
use crate::api::{Api, print_json, read};
use crate::output::{out, table};

/// Schedule subcommands.
#[derive(Subcommand)]
pub enum ScheduleCommand {
    /// List a DAG's schedules with their next fire times.
    List {
        /// The DAG's name.
        dag: String,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Add a schedule: a cron expression (--cron) or an event (--event).
    Add {
        /// The DAG's name.
        dag: String,
        /// The schedule's name, unique within the DAG.
        name: String,
        /// What the schedule fires on, and when.
        #[command(flatten)]
        fields: ScheduleFields,
        /// Add it paused.
        #[arg(long)]
        disabled: bool,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Change the fields given of a schedule; the others stay.
    Update {
        /// The DAG's name.
        dag: String,
        /// The schedule's name.
        name: String,
        /// What the schedule fires on, and when.
        #[command(flatten)]
        fields: ScheduleFields,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove a schedule (the runs it started stay).
    Delete {
        /// The DAG's name.
        dag: String,
        /// The schedule's name.
        name: String,
    },
    /// Resume a paused schedule.
    Enable {
        /// The DAG's name.
        dag: String,
        /// The schedule's name.
        name: String,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Pause a schedule (manual triggers still run the DAG).
    Disable {
        /// The DAG's name.
        dag: String,
        /// The schedule's name.
        name: String,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// A schedule's fields as flags (docs/DAG_FORMAT.md explains each).
#[derive(Args)]
pub struct ScheduleFields {
    /// Quartz cron expression, e.g. '0 30 2 * * ?' (see `datajump cron describe`).
    #[arg(long, conflicts_with = "event")]
    cron: Option<String>,
    /// Fire on external event NAME instead of a cron (`datajump events publish NAME`).
    #[arg(long, value_name = "NAME")]
    event: Option<String>,
    /// IANA time zone the cron is read in (default the API's). Not
    /// `--timezone`: that global flag is the roles' default zone.
    #[arg(long, value_name = "IANA_NAME")]
    zone: Option<String>,
    /// First day it may fire.
    #[arg(long)]
    start_date: Option<NaiveDate>,
    /// Last day it may fire.
    #[arg(long)]
    end_date: Option<NaiveDate>,
    /// Missed fires after downtime: none, latest or all.
    #[arg(long)]
    catchup: Option<String>,
    /// With --catchup all: at most this many missed fires.
    #[arg(long)]
    catchup_limit: Option<i32>,
    /// Seconds after which a fire counts as missed.
    #[arg(long)]
    misfire_grace: Option<i32>,
    /// Business date = local fire date + this many days.
    #[arg(long, allow_negative_numbers = true)]
    biz_date_offset: Option<i32>,
}

impl ScheduleFields {
    /// The API's body with the fields given.
    fn body(&self) -> Map<String, Value> {
        let fields = [
            ("cronExpression", self.cron.as_ref().map(|v| json!(v))),
            ("eventName", self.event.as_ref().map(|v| json!(v))),
            ("timezone", self.zone.as_ref().map(|v| json!(v))),
            ("startDate", self.start_date.map(|v| json!(v))),
            ("endDate", self.end_date.map(|v| json!(v))),
            ("catchup", self.catchup.as_ref().map(|v| json!(v))),
            ("catchupLimit", self.catchup_limit.map(|v| json!(v))),
            ("misfireGrace", self.misfire_grace.map(|v| json!(v))),
            ("bizDateOffset", self.biz_date_offset.map(|v| json!(v))),
        ];
        fields
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_owned(), value?)))
            .collect()
    }
}

/// Runs a schedule subcommand.
pub async fn run(global: &Global, command: ScheduleCommand) -> Result<ExitCode> {
    let api = Api::new(&global.api_url)?;
    match command {
        ScheduleCommand::List { dag, json } => {
            let dag_id = api.dag_id(&dag).await?.to_string();
            let schedules = api.all(&["dags", &dag_id, "schedules"], &[]).await?;
            if json {
                print_json(&Value::Array(schedules));
            } else if schedules.is_empty() {
                out!("DAG {dag} has no schedules (runs start by trigger only)");
            } else {
                let rows = schedules
                    .into_iter()
                    .map(|s| read(s).map(|s| row(&s)))
                    .collect::<Result<Vec<_>, _>>()?;
                table(HEADER, &rows);
            }
        }
        ScheduleCommand::Add {
            dag,
            name,
            fields,
            disabled,
            json,
        } => {
            if fields.cron.is_none() && fields.event.is_none() {
                bail!("give --cron EXPRESSION or --event NAME");
            }
            let dag_id = api.dag_id(&dag).await?.to_string();
            let mut body = fields.body();
            body.insert("name".into(), json!(name));
            body.insert("enabled".into(), json!(!disabled));
            let answer = api
                .post(&["dags", &dag_id, "schedules"], Some(&Value::Object(body)))
                .await?;
            print_schedule(answer, json)?;
        }
        ScheduleCommand::Update {
            dag,
            name,
            fields,
            json,
        } => {
            let body = fields.body();
            if body.is_empty() {
                bail!("nothing to change: give at least one field (see --help)");
            }
            let (dag_id, id) = find(&api, &dag, &name).await?;
            let answer = api
                .put(&["dags", &dag_id, "schedules", &id], &Value::Object(body))
                .await?;
            print_schedule(answer, json)?;
        }
        ScheduleCommand::Delete { dag, name } => {
            let (dag_id, id) = find(&api, &dag, &name).await?;
            api.delete(&["dags", &dag_id, "schedules", &id]).await?;
            out!("removed schedule {name} of DAG {dag}");
        }
        ScheduleCommand::Enable { dag, name, json } => {
            let (dag_id, id) = find(&api, &dag, &name).await?;
            let answer = api
                .post(&["dags", &dag_id, "schedules", &id, "enable"], None)
                .await?;
            print_schedule(answer, json)?;
        }
        ScheduleCommand::Disable { dag, name, json } => {
            let (dag_id, id) = find(&api, &dag, &name).await?;
            let answer = api
                .post(&["dags", &dag_id, "schedules", &id, "disable"], None)
                .await?;
            print_schedule(answer, json)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The ids (as path segments) of DAG `dag` and its schedule `name`.
async fn find(api: &Api, dag: &str, name: &str) -> Result<(String, String)> {
    let dag_id = api.dag_id(dag).await?.to_string();
    for schedule in api.all(&["dags", &dag_id, "schedules"], &[]).await? {
        let schedule: ScheduleDto = read(schedule)?;
        if schedule.name == name {
            return Ok((dag_id, schedule.schedule_id.to_string()));
        }
    }
    bail!("DAG {dag} has no schedule named '{name}' (`datajump schedule list {dag}` shows them)")
}

const HEADER: &[&str] = &["ID", "NAME", "TRIGGER", "TIMEZONE", "STATE", "NEXT FIRE"];

fn row(s: &ScheduleDto) -> Vec<String> {
    let trigger = match (&s.cron_expression, &s.event_name, &s.after) {
        (_, Some(event), _) if s.kind == ScheduleKind::Event => format!("event {event}"),
        (_, _, Some(upstream)) if s.kind == ScheduleKind::After => format!("after {upstream}"),
        _ if s.kind == ScheduleKind::Data => s.on.as_ref().map_or_else(String::new, |on| {
            format!("on {}", serde_json::to_string(on).unwrap_or_default())
        }),
        (Some(cron), _, _) => cron.clone(),
        _ => String::new(),
    };
    vec![
        s.schedule_id.to_string(),
        s.name.clone(),
        trigger,
        s.timezone.clone(),
        if s.enabled { "active" } else { "paused" }.to_owned(),
        s.next_fire_time.clone().unwrap_or_default(),
    ]
}

/// Prints one schedule as the API answered it.
fn print_schedule(answer: Value, json: bool) -> Result<()> {
    if json {
        print_json(&answer);
    } else {
        table(HEADER, &[row(&read(answer)?)]);
    }
    Ok(())
}
