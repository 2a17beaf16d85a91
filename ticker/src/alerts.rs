//! Alert delivery: every [`EVERY`] the ticker notices new alertable events
//! (see `datajump_shared::alerts`) and POSTs the alerts that are due to their
//! webhooks, retrying with backoff while a target is down.
//!
//! Delivery is here, in the role that already acts on time, rather than in
//! the role that sees the failure, so a slow or dead webhook never holds up
//! a runner or a resolver.

use std::collections::BTreeSet;
use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use datajump_shared::alerts::Webhook;
use datajump_shared::entities::{alert, dag};
use datajump_shared::kinds::AlertState;
use datajump_shared::network::{NetworkPolicy, Refusal};
use datajump_shared::params::{secret_names, substitute_secrets};
use datajump_shared::secrets::is_credential_header;
use datajump_store::alerts::{self, Delivery};
use datajump_store::secrets;
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use sea_orm::{DatabaseConnection, DbErr, EntityTrait};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How often events are looked for and due alerts sent.
const EVERY: Duration = Duration::from_secs(2);
/// Alerts sent per round.
const BATCH: u64 = 50;
/// How long one webhook call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn run(
    db: &DatabaseConnection,
    network: &Arc<NetworkPolicy>,
    shutdown: &CancellationToken,
) {
    while !shutdown.is_cancelled() {
        if let Err(e) = round(db, network).await {
            warn!(error = %e, "alerting round failed; the next one retries");
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {},
            () = shutdown.cancelled() => {},
        }
    }
}

async fn round(db: &DatabaseConnection, network: &Arc<NetworkPolicy>) -> Result<(), DbErr> {
    let noticed = alerts::notice(db, Utc::now()).await?;
    if noticed > 0 {
        info!(noticed, "alerts recorded");
    }
    for taken in alerts::take_due(db, Utc::now(), BATCH).await? {
        send_taken(db, network, &taken).await?;
    }
    Ok(())
}

/// Sends an alert taken with [`alerts::take_due`] and records the outcome;
/// returns the alert's new status. `network` says where webhooks may
/// connect (the ticker's `--http-allow` and the API's address).
pub async fn send_taken(
    db: &DatabaseConnection,
    network: &Arc<NetworkPolicy>,
    taken: &alert::Model,
) -> Result<AlertState, DbErr> {
    let delivery = deliver(db, network, taken).await;
    let status = alerts::record_delivery(db, taken, &delivery, Utc::now()).await?;
    match &delivery {
        Delivery::Sent { .. } => {
            info!(alert_id = taken.id, kind = %taken.kind, dag_id = taken.dag_id, "alert sent");
        }
        Delivery::Failed { error, .. } | Delivery::Refused { error } => warn!(
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

/// One POST of the alert's payload to its webhook, under the rule HTTP
/// tasks follow (docs/SECURITY.md "HTTP destinations"): no destination the
/// policy refuses, by address, name or redirect; no credentials in the URL;
/// credential headers never follow a redirect to another origin. An alert
/// whose DAG is gone, or whose webhook the policy refuses, is not retried.
async fn deliver(
    db: &DatabaseConnection,
    network: &Arc<NetworkPolicy>,
    alert: &alert::Model,
) -> Delivery {
    let failed = |error: String| Delivery::Failed {
        status: None,
        error,
    };
    let refused = |error: String| Delivery::Refused { error };
    match dag::Entity::find_by_id(alert.dag_id).one(db).await {
        Ok(Some(_)) => {}
        Ok(None) => return refused(format!("DAG {} was deleted: not sent", alert.dag_id)),
        Err(e) => return failed(format!("cannot read the alert's DAG: {e}")),
    }
    let hook: Webhook = match serde_json::from_value(alert.target.clone()) {
        Ok(hook) => hook,
        Err(e) => return refused(format!("unreadable webhook: {e}")),
    };
    let url = match Url::parse(&hook.url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url,
        Ok(url) => return refused(format!("url scheme '{}' (use http or https)", url.scheme())),
        Err(e) => return refused(format!("invalid url: {e}")),
    };
    // Refused when the DAG is applied; this catches alerts stored before.
    if !url.username().is_empty() || url.password().is_some() {
        return refused(
            "the url carries a user name or password: send credentials in a header naming a \
             secret"
                .to_owned(),
        );
    }
    let guard = network.guard().await;
    if let Some(why) = guard.url_problem(&url) {
        return refused(why.to_string());
    }
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
    let listed: BTreeSet<String> = hook
        .secret_headers
        .iter()
        .map(|name| name.to_ascii_lowercase())
        .collect();
    let mut headers = HeaderMap::new();
    for (name, value) in &hook.headers {
        let text = match substitute_secrets(value, &secret_values) {
            Ok(text) => text,
            Err(e) => return failed(format!("header '{name}': {e}")),
        };
        let (Ok(header), Ok(mut value_of)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&text),
        ) else {
            return refused(format!("header '{name}' is not valid in HTTP"));
        };
        if is_credential_header(name, &listed)
            || secret_names(value).is_ok_and(|found| !found.is_empty())
        {
            value_of.set_sensitive(true);
        }
        headers.append(header, value_of);
    }
    let carries_credentials = headers.values().any(HeaderValue::is_sensitive);
    let client = match reqwest::Client::builder()
        .user_agent(concat!("datajump/", env!("CARGO_PKG_VERSION")))
        .timeout(CALL_TIMEOUT)
        .dns_resolver(guard.resolver())
        .redirect(guard.redirect_policy(&url, carries_credentials))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            return failed(format!(
                "cannot create the HTTP client: {}",
                e.without_url()
            ));
        }
    };
    match client
        .post(url)
        .headers(headers)
        .json(&alert.payload)
        .send()
        .await
    {
        Ok(response) if response.status().is_success() => Delivery::Sent {
            status: response.status().as_u16(),
        },
        // Refused, not retried: the next attempt would be sent the same way.
        Ok(response) if carries_credentials && response.status().is_redirection() => {
            refused(format!(
                "the webhook answered {} toward another origin, not followed: the alert carries \
                 credentials, which go only to the webhook's own origin",
                response.status()
            ))
        }
        Ok(response) => Delivery::Failed {
            status: Some(response.status().as_u16()),
            error: format!("the webhook answered {}", response.status()),
        },
        Err(e) => match refusal(&e) {
            Some(why) => refused(why.to_string()),
            // Without the URL: it may hold a token.
            None => failed(format!("cannot reach the webhook: {}", e.without_url())),
        },
    }
}

/// The policy's refusal behind a request error (a name resolving only to
/// forbidden addresses, a redirect to one), if that is what it is.
fn refusal(error: &reqwest::Error) -> Option<Refusal> {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(found) = cause.downcast_ref::<Refusal>() {
            return Some(found.clone());
        }
        source = cause.source();
    }
    None
}
