//! The request and response bodies of the external event route ([`super`]);
//! those several route modules share are in [`crate::dto`].

use serde::{Deserialize, Serialize};

/// `POST /api/v1/events/{name}` query.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventQuery {
    /// The project whose DAGs the event starts (default: the caller's
    /// token's, or the default project).
    pub project: Option<i64>,
}

/// `POST /api/v1/events/{name}` answer (202).
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventResponse {
    /// The event name.
    pub event: String,
    /// The project whose DAGs it starts.
    pub project: i64,
    /// The subject it was published to.
    pub subject: String,
    /// The stream that stored it.
    pub stream: String,
    /// Its sequence in the stream.
    pub sequence: u64,
    /// The online DAGs with an active schedule on this event: each starts
    /// a run (empty: the event starts nothing).
    pub starts: Vec<String>,
    /// DAGs with an active schedule on this event that are offline, and so
    /// start nothing until they are put online.
    pub offline: Vec<String>,
}
