//! The request and response bodies of the session routes ([`super`]); those
//! several route modules share are in [`crate::dto`].

use chrono::{DateTime, Utc};
use datajump_shared::access::Role;
use serde::{Deserialize, Serialize};

/// `POST /api/v1/session` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignIn {
    /// An API token (`datajump token create`, or `DATAJUMP_API_TOKEN`).
    pub token: String,
}

/// Who the caller is, for a page deciding which buttons to offer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDto {
    /// The token's name, or `anonymous` on an API without tokens.
    pub name: String,
    /// `viewer`, `operator` or `admin`.
    pub role: Role,
    /// The one project the token is limited to; `null`: every project.
    pub project_id: Option<i64>,
    /// Whether the API requires a token at all (false: the local trial).
    pub tokens_required: bool,
    /// When the session cookie stops working, if signed in by one.
    pub expires_at: Option<DateTime<Utc>>,
}
