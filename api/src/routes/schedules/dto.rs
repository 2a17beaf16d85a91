//! The request and response bodies of the schedule routes: changes to a DAG's
//! schedules and cron validation ([`super`]); those several route modules share
//! are in [`crate::dto`].

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// `PUT /api/v1/dags/{dagId}/schedule` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleUpdate {
    /// Cron expression.
    pub cron_expression: String,
    /// Paused when false (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// IANA zone (default: unchanged, or the API's zone for a new schedule).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// `POST /api/v1/dags/{dagId}/schedule/enable` body (optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleEnable {
    /// A new cron expression; needed when the DAG has no schedule yet.
    #[serde(default)]
    pub cron_expression: Option<String>,
}

/// `POST /api/v1/dags/{dagId}/schedule/disable` body (optional, empty).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleDisable {}

/// A schedule of the `/schedules` collection, as sent: `POST` creates one
/// (`name` and one of `cronExpression` or `eventName` required), `PUT`
/// changes the fields given and keeps the others (the name cannot change).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleBody {
    /// Unique within the DAG.
    #[serde(default)]
    pub name: Option<String>,
    /// Cron expression (replaces an event trigger).
    #[serde(default)]
    pub cron_expression: Option<String>,
    /// Event name: fires on `dj.event.<project>.<name>` (replaces a cron expression).
    #[serde(default)]
    pub event_name: Option<String>,
    /// A DAG whose every successful run starts one run of this one, with
    /// its business date (a dependency trigger; replaces the others).
    #[serde(default)]
    pub after: Option<String>,
    /// Paused when false (a new schedule is enabled).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// IANA zone (default the API's zone).
    #[serde(default)]
    pub timezone: Option<String>,
    /// First day it may fire (0001-01-01 to 9999-12-31).
    #[serde(
        default,
        deserialize_with = "datajump_shared::biz_date::deserialize_optional"
    )]
    pub start_date: Option<NaiveDate>,
    /// Last day it may fire (0001-01-01 to 9999-12-31).
    #[serde(
        default,
        deserialize_with = "datajump_shared::biz_date::deserialize_optional"
    )]
    pub end_date: Option<NaiveDate>,
    /// Missed-fire policy: `none`, `latest` or `all`.
    #[serde(default)]
    pub catchup: Option<String>,
    /// Bound for `catchup: all`.
    #[serde(default)]
    pub catchup_limit: Option<i32>,
    /// Seconds after which a fire counts as missed.
    #[serde(default)]
    pub misfire_grace: Option<i32>,
    /// Business date = local fire date + this many days.
    #[serde(default)]
    pub biz_date_offset: Option<i32>,
    /// Minutes a run it fires may be RUNNING (0: no limit), converted to
    /// the seconds the DAG file holds.
    #[serde(default)]
    pub timeout: Option<u32>,
}

impl ScheduleBody {
    /// Whether the body only pauses or resumes the schedule (an operator's
    /// change, allowed on a file-managed DAG).
    pub fn only_enabled(&self) -> bool {
        let ScheduleBody {
            name: _,
            cron_expression,
            event_name,
            after,
            enabled,
            timezone,
            start_date,
            end_date,
            catchup,
            catchup_limit,
            misfire_grace,
            biz_date_offset,
            timeout,
        } = self;
        enabled.is_some()
            && cron_expression.is_none()
            && event_name.is_none()
            && after.is_none()
            && timezone.is_none()
            && start_date.is_none()
            && end_date.is_none()
            && catchup.is_none()
            && catchup_limit.is_none()
            && misfire_grace.is_none()
            && biz_date_offset.is_none()
            && timeout.is_none()
    }
}

/// `POST /api/v1/dags/schedule/validate-cron` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidateCronRequest {
    /// The expression.
    pub cron_expression: String,
    /// IANA zone to compute fire times in (default the API's zone).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Also list this many next fire times (1–100).
    #[serde(default)]
    pub count: Option<u32>,
}

/// `POST /api/v1/dags/schedule/validate-cron` answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateCronResponse {
    /// True when the expression (and zone) are valid.
    pub valid: bool,
    /// The expression in words.
    pub description: Option<String>,
    /// The next fire (RFC 3339 in `timezone`).
    pub next_fire_time: Option<String>,
    /// The next `count` fires, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_fire_times: Option<Vec<String>>,
    /// The zone used.
    pub timezone: String,
    /// Why it is invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why it is invalid, as a stable code and the values `error` names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<datajump_shared::problem::Problem>,
    /// What is wrong with a valid expression: it never fires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}
