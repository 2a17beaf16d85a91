//! Alert delivery: every [`EVERY`] the ticker notices new alertable events
//! (see `datajump_shared::alerts`) and POSTs the alerts that are due to their
//! webhooks, retrying with backoff while a target is down.
//!
//! Delivery is here, in the role that already acts on time, rather than in
//! the role that sees the failure, so a slow or dead webhook never holds up
//! a runner or a resolver.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::Utc;
use datajump_shared::alerts::Webhook;
use datajump_shared::entities::alert;
use datajump_shared::kinds::AlertState;
use datajump_shared::params::{secret_names, substitute_secrets};
use datajump_store::alerts::{self, Delivery};
use datajump_store::secrets;
use sea_orm::{DatabaseConnection, DbErr};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How often events are looked for and due alerts sent.
const EVERY: Duration = Duration::from_secs(2);
/// Alerts sent per round.
const BATCH: u64 = 50;
/// How long one webhook call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn run(db: &DatabaseConnection, shutdown: &CancellationToken) {
    let client = http_client();
    while !shutdown.is_cancelled() {
        if let Err(e) = round(db, &client).await {
            warn!(error = %e, "alerting round failed; the next one retries");
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {},
            () = shutdown.cancelled() => {},
        }
    }
}

/// The client webhook calls go through.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .user_agent(concat!("datajump/", env!("CARGO_PKG_VERSION")))
        .timeout(CALL_TIMEOUT)
        .build()
        .unwrap_or_default()
}

async fn round(db: &DatabaseConnection, client: &reqwest::Client) -> Result<(), DbErr> {
    let noticed = alerts::notice(db, Utc::now()).await?;
    if noticed > 0 {
        info!(noticed, "alerts recorded");
    }
    for taken in alerts::take_due(db, Utc::now(), BATCH).await? {
        send_taken(db, client, &taken).await?;
    }
    Ok(())
}

/// Sends an alert taken with [`alerts::take_due`] and records the outcome;
/// returns the alert's new status.
pub async fn send_taken(
    db: &DatabaseConnection,
    client: &reqwest::Client,
    taken: &alert::Model,
) -> Result<AlertState, DbErr> {
    let delivery = deliver(db, client, taken).await;
    let status = alerts::record_delivery(db, taken, &delivery, Utc::now()).await?;
    match &delivery {
        Delivery::Sent { .. } => {
            info!(alert_id = taken.id, kind = %taken.kind, dag_id = taken.dag_id, "alert sent");
        }
        Delivery::Failed { error, .. } => warn!(
            alert_id = taken.id,
            kind = %taken.kind,
            attempts = taken.attempts + 1,
            %status,
            error = %error,
            "alert not delivered"
        ),
    }
    Ok(status)
}

/// One POST of the alert's payload to its webhook.
async fn deliver(
    db: &DatabaseConnection,
    client: &reqwest::Client,
    alert: &alert::Model,
) -> Delivery {
    let failed = |error: String| Delivery::Failed {
        status: None,
        error,
    };
    let hook: Webhook = match serde_json::from_value(alert.target.clone()) {
        Ok(hook) => hook,
        Err(e) => return failed(format!("unreadable webhook: {e}")),
    };
    let mut names = BTreeSet::new();
    for value in hook.headers.values() {
        match secret_names(value) {
            Ok(found) => names.extend(found),
            Err(e) => return failed(e.to_string()),
        }
    }
    let secret_values = match secrets::values_for_dag(db, alert.dag_id, &names).await {
        Ok(values) => values,
        Err(e) => return failed(e.to_string()),
    };
    let mut request = client.post(&hook.url).json(&alert.payload);
    for (name, value) in &hook.headers {
        match substitute_secrets(value, &secret_values) {
            Ok(value) => request = request.header(name, value),
            Err(e) => return failed(format!("header '{name}': {e}")),
        }
    }
    match request.send().await {
        Ok(response) if response.status().is_success() => Delivery::Sent {
            status: response.status().as_u16(),
        },
        Ok(response) => Delivery::Failed {
            status: Some(response.status().as_u16()),
            error: format!("the webhook answered {}", response.status()),
        },
        // Without the URL: it may hold a token.
        Err(e) => failed(format!("cannot reach the webhook: {}", e.without_url())),
    }
}
