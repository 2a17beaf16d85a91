//! The heartbeats roles keep in KV buckets: runners in `dj_runners`, which
//! other runners read to tell a lost owner from a live one, and resolvers
//! in `dj_resolvers`; both say which build wrote them, which `dag apply`
//! reads ([`datajump_shared::features`]). A key expires [`RUNNER_TTL`]
//! after its last write, so what a bucket holds is who is live.
//!
//! [`RUNNER_TTL`]: crate::RUNNER_TTL

use std::collections::BTreeMap;

use async_nats::jetstream::{Context, kv};
use chrono::{DateTime, Utc};
use datajump_shared::features::FeatureLevel;
use datajump_shared::subjects::Namespace;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::NatsError;
use crate::buckets::kv_scan;
use crate::error::js_err;

/// How often a role rewrites its heartbeat: well within [`RUNNER_TTL`],
/// so two missed writes still leave it live.
///
/// [`RUNNER_TTL`]: crate::RUNNER_TTL
pub const HEARTBEAT_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// This build's version, as heartbeats carry it.
pub const BUILD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A runner's heartbeat in `dj_runners`, under its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerHeartbeat {
    /// The runner's id (`host-pid-xxxx`), also its key.
    pub id: String,
    /// The queues it serves.
    #[serde(default)]
    pub queues: Vec<String>,
    /// Tasks it can run at once.
    #[serde(default)]
    pub slots: u64,
    /// Tasks it was running when it wrote this.
    #[serde(default)]
    pub running: u64,
    /// When it wrote this.
    pub at: DateTime<Utc>,
    /// Its build's version; absent from runners built before heartbeats
    /// carried it.
    #[serde(default)]
    pub version: Option<String>,
    /// What its build understands of DAGs; a runner built before levels
    /// reports none, read as [`FeatureLevel::BEFORE_LEVELS`].
    #[serde(default)]
    pub features: FeatureLevel,
}

/// A resolver's heartbeat in `dj_resolvers`, under its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolverHeartbeat {
    /// The resolver's id (`host-pid-xxxx`), also its key.
    pub id: String,
    /// When it wrote this.
    pub at: DateTime<Utc>,
    /// Its build's version.
    pub version: String,
    /// What its build understands of DAGs.
    pub features: FeatureLevel,
}

impl ResolverHeartbeat {
    /// This resolver's heartbeat now.
    pub fn now(id: &str) -> ResolverHeartbeat {
        ResolverHeartbeat {
            id: id.to_owned(),
            at: Utc::now(),
            version: BUILD_VERSION.to_owned(),
            features: FeatureLevel::CURRENT,
        }
    }
}

/// Writes `beat` under `key` in `kv`.
pub async fn write_heartbeat(
    kv: &kv::Store,
    key: &str,
    beat: &impl Serialize,
) -> Result<(), NatsError> {
    let what = || format!("heartbeat {key}");
    let body = serde_json::to_vec(beat).map_err(|e| js_err(what())(e.into()))?;
    kv.put(key, body.into())
        .await
        .map(drop)
        .map_err(|e| js_err(what())(e.into()))
}

/// The live runners, by id.
pub async fn live_runners(
    js: &Context,
    names: &Namespace,
) -> Result<Vec<RunnerHeartbeat>, NatsError> {
    live(js, &names.runners_bucket()).await
}

/// The live resolvers, by id.
pub async fn live_resolvers(
    js: &Context,
    names: &Namespace,
) -> Result<Vec<ResolverHeartbeat>, NatsError> {
    live(js, &names.resolvers_bucket()).await
}

/// The heartbeats in `bucket`, by key; one that cannot be read is skipped
/// and logged.
async fn live<T: DeserializeOwned>(js: &Context, bucket: &str) -> Result<Vec<T>, NatsError> {
    let mut beats = BTreeMap::new();
    kv_scan(js, bucket, |key, value| {
        match serde_json::from_slice::<T>(value) {
            // A key rewritten during the scan comes again, newer last.
            Ok(beat) => {
                beats.insert(key.to_owned(), beat);
            }
            Err(e) => warn!(bucket, key, error = %e, "unreadable heartbeat skipped"),
        }
    })
    .await?;
    Ok(beats.into_values().collect())
}
