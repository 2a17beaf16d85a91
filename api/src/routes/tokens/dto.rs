//! The request and response bodies of the token routes ([`super`]); those
//! several route modules share are in [`crate::dto`].

use chrono::{DateTime, Utc};
use datajump_shared::access::Role;
use datajump_shared::entities::api_token;
use serde::{Deserialize, Serialize};

/// A token as it may be shown: everything but the token.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenDto {
    /// Its unique name.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The one project it is limited to; `null`: every project.
    pub project_id: Option<i64>,
    /// Who created it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// When it was last used (to the minute).
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<api_token::Model> for TokenDto {
    fn from(row: api_token::Model) -> TokenDto {
        TokenDto {
            name: row.name,
            role: row.role,
            project_id: row.project_id,
            created_by: row.created_by,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// `POST /api/v1/tokens` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewToken {
    /// Letters, digits, `_`, `-` and `.`, 1-64 of them.
    pub name: String,
    /// `viewer`, `operator` or `admin`, at most the creator's.
    pub role: Role,
    /// The project to limit it to; left out, the creator's own reach.
    pub project_id: Option<i64>,
}

/// A token just created.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedToken {
    /// The token, shown this once: send it as `Authorization: Bearer …`.
    pub token: String,
    /// What was stored.
    #[serde(flatten)]
    pub info: TokenDto,
}
