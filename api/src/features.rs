//! The check every apply passes before anything is stored: a DAG may use a
//! feature only when every live role that acts on it understands it
//! ([`datajump_shared::features`], docs/OPERATIONS.md "Upgrading DataJump").
//!
//! Roles are read from their heartbeats, so a role that is down is not
//! counted: one started later from an older build is the operator's to
//! avoid, as the upgrading order says.

use datajump_nats::Bus;
use datajump_shared::dag_file::DagFile;
use datajump_shared::features::{FeatureLevel, FeatureUse, RoleKind, features_used};

use crate::error::{Error, Result};

/// A live role, as its heartbeat describes it.
struct LiveRole {
    kind: RoleKind,
    id: String,
    version: Option<String>,
    features: FeatureLevel,
    /// The queues it serves, for a runner.
    queues: Vec<String>,
}

/// 409 naming the first feature `file` uses that a live role acting on it
/// does not understand, with that role; 503 when the DAG uses a feature
/// and the heartbeats cannot be read. Reads nothing when the DAG uses no
/// feature newer than the baseline.
pub async fn refuse_features_live_roles_lack(bus: &Bus, file: &DagFile) -> Result<()> {
    let uses = features_used(file);
    if uses.is_empty() {
        return Ok(());
    }
    let runners = datajump_nats::live_runners(bus.js(), bus.names())
        .await?
        .into_iter()
        .map(|beat| LiveRole {
            kind: RoleKind::Runner,
            id: beat.id,
            version: beat.version,
            features: beat.features,
            queues: beat.queues,
        });
    let resolvers = datajump_nats::live_resolvers(bus.js(), bus.names())
        .await?
        .into_iter()
        .map(|beat| LiveRole {
            kind: RoleKind::Resolver,
            id: beat.id,
            version: Some(beat.version),
            features: beat.features,
            queues: Vec::new(),
        });
    let roles: Vec<LiveRole> = runners.chain(resolvers).collect();
    for used in &uses {
        if let Some(role) = roles.iter().find(|role| lacks(role, used)) {
            return Err(Error::conflict(refusal(used, role)));
        }
    }
    Ok(())
}

/// Whether `role` acts on `used` and does not understand it: a runner acts
/// on the tasks of the queues it serves, a resolver on every DAG.
fn lacks(role: &LiveRole, used: &FeatureUse) -> bool {
    let acts_on = role.kind == used.feature.role()
        && match (&used.queue, role.kind) {
            (Some(queue), RoleKind::Runner) => role.queues.contains(queue),
            _ => true,
        };
    acts_on && role.features < used.feature.level()
}

/// What the 409 says.
fn refusal(used: &FeatureUse, role: &LiveRole) -> String {
    let user = used
        .task
        .as_deref()
        .map_or_else(|| "the DAG".to_owned(), |task| format!("task '{task}'"));
    let serving = match (&used.queue, role.kind) {
        (Some(queue), RoleKind::Runner) => format!(", serving queue '{queue}',"),
        _ => String::new(),
    };
    let build = match &role.version {
        Some(version) => format!("version {version}, feature level {}", role.features),
        None => "a build from before roles reported their version".to_owned(),
    };
    format!(
        "{user} uses {feature}, which {kind}s understand from feature level {level} on, but \
         live {kind} {id}{serving} is {build}: upgrade every runner and resolver before \
         applying this DAG (docs/OPERATIONS.md, \"Upgrading DataJump\"); nothing was stored",
        feature = used.feature.describe(),
        kind = role.kind.as_str(),
        level = used.feature.level(),
        id = role.id,
    )
}
