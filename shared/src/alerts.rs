//! Alerting: a DAG's `alerts:` config (webhooks and the events they want)
//! and the states of the `alert` rows that carry each webhook call through
//! delivery; `datajump_store::alerts` notices the events and keeps the rows.
//!
//! The shaping decision: **alerts are noticed by scanning, not raised by the
//! transitions.** The ticker looks every few seconds for failed runs, final
//! task failures, timed-out attempts and runs past their SLA in the DAGs that
//! have webhooks, and inserts one row per (event, webhook) under a unique
//! `dedup_key`. This keeps every hot path (claiming, finishing, propagating)
//! free of alert work, any number of tickers can scan at once (the unique key
//! lets one insert win), and a row is an outbox entry: written before the
//! call, so a crash between noticing and sending loses nothing. Events older
//! than [`LOOKBACK`] when first seen (a ticker down for longer, or alerts just
//! configured) are not alerted. Delivery takes a row with a conditional
//! update (PENDING → SENDING with a lease), so one ticker sends it; a sender
//! that dies leaves a lease another takes over — delivery is at least once.
//!
//! Webhook headers follow the HTTP task's rule: a credential header's value
//! names a secret, `${secret:NAME}`, resolved only when the call is made.

use std::collections::{BTreeMap, BTreeSet};

use chrono::Duration;
use serde::{Deserialize, Serialize};

use crate::entities::dag;
use crate::kinds::AlertKind;

/// How far back a scan looks for events it has not alerted yet.
pub const LOOKBACK: Duration = Duration::hours(1);
/// Delivery attempts before an alert is given up as FAILED.
pub const MAX_ATTEMPTS: i32 = 6;
/// How long a sender may hold an alert before another may retry it.
pub const LEASE: Duration = Duration::seconds(60);

/// One webhook target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    /// `http` or `https` URL the alert is POSTed to.
    pub url: String,
    /// Extra headers; credential headers must name a secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// More header names to treat as credentials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_headers: Vec<String>,
}

/// A DAG's `alerts:` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertConfig {
    /// Where alerts go.
    pub webhooks: Vec<Webhook>,
    /// Which events alert; empty (the default) means all four (`sla_miss`
    /// only with an `sla`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<AlertKind>,
    /// Seconds after a run's logical time by which it should have finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sla: Option<u32>,
}

impl AlertConfig {
    /// Whether `kind` alerts.
    pub fn wants(&self, kind: AlertKind) -> bool {
        self.on.is_empty() || self.on.contains(&kind)
    }

    /// What is wrong with the config, each problem a sentence.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.webhooks.is_empty() {
            problems.push("alerts: list at least one webhook".to_owned());
        }
        if self.on.contains(&AlertKind::Test) {
            problems.push(
                "alerts.on: 'test' is not an event (use `datajump alerts test DAG`)".to_owned(),
            );
        }
        if self.on.contains(&AlertKind::SlaMiss) && self.sla.is_none() {
            problems.push("alerts.on lists sla_miss but no 'sla' (seconds) is set".to_owned());
        }
        if self.sla == Some(0) {
            problems.push("alerts.sla must be at least 1 second".to_owned());
        }
        for (i, hook) in self.webhooks.iter().enumerate() {
            let at = format!("alerts.webhooks[{i}]");
            match reqwest::Url::parse(&hook.url) {
                Ok(url) if !matches!(url.scheme(), "http" | "https") => problems.push(format!(
                    "{at}: url scheme '{}' (use http or https)",
                    url.scheme()
                )),
                // Kept in the DAG, shown with every alert (API, `alerts
                // list`) and sent on every redirect: a credential belongs in
                // a header naming a secret (docs/SECURITY.md "HTTP
                // destinations").
                Ok(url) if !url.username().is_empty() || url.password().is_some() => {
                    problems.push(format!(
                        "{at}: the url carries a user name or password \
                         (scheme://user:PASSWORD@host): it would be stored in the DAG and shown \
                         with every alert; store the credential with `datajump secret set NAME` \
                         and send it in a header instead, e.g. Authorization: \
                         \"Basic ${{secret:NAME}}\""
                    ))
                }
                Ok(_) => {}
                Err(e) => problems.push(format!("{at}: invalid url: {e}")),
            }
            let listed: BTreeSet<String> = hook
                .secret_headers
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect();
            let headers = hook
                .headers
                .iter()
                .map(|(name, value)| (name.as_str(), Some(value.as_str())));
            for problem in crate::secrets::header_problems(headers, &listed) {
                problems.push(format!("{at}: {problem}"));
            }
        }
        problems
    }

    /// The config stored in `dag.alert_config`, if it reads.
    pub fn from_row(row: &dag::Model) -> Option<AlertConfig> {
        serde_json::from_value(row.alert_config.clone()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> AlertConfig {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn defaults_and_problems() {
        let ok = config("webhooks: [{ url: 'http://hooks.local/x' }]\nsla: 60\n");
        assert!(AlertKind::EVENTS.iter().all(|&kind| ok.wants(kind)));
        assert!(ok.problems().is_empty(), "{:?}", ok.problems());

        let bad = config(
            "webhooks:\n  - url: 'ftp://x'\n  - url: 'http://x'\n    headers: { Authorization: 'Bearer abc' }\non: [sla_miss, test]\n",
        );
        let problems = bad.problems().join("\n");
        assert!(problems.contains("scheme 'ftp'"), "{problems}");
        assert!(problems.contains("'test' is not an event"), "{problems}");
        assert!(problems.contains("no 'sla'"), "{problems}");
        assert!(
            problems.contains("webhooks[1]: header 'Authorization'"),
            "{problems}"
        );
        assert!(serde_yaml_ng::from_str::<AlertConfig>("webhooks: []\nretries: 3\n").is_err());

        for url in [
            "https://user:pass@hooks.example/x",
            "https://token@hooks.example/x",
            "http://:pw@127.0.0.1:9/x",
        ] {
            let hooked = config(&format!("webhooks: [{{ url: '{url}' }}]\n"));
            let problems = hooked.problems().join("\n");
            assert!(
                problems.contains("webhooks[0]: the url carries a user name or password"),
                "{url}: {problems}"
            );
        }
        let problems = config("webhooks: [{ url: 'http://' }]\n")
            .problems()
            .join("\n");
        assert!(problems.contains("webhooks[0]: invalid url"), "{problems}");
    }
}
