//! Alerting against a real local webhook receiver: a failing run, a task's
//! final failure, a timeout and an SLA miss each reach the webhook once, with
//! the secret header resolved, retried with backoff while the receiver
//! answers 500; `datajump alerts test` (the real CLI) reports delivery.

use datajump_shared::dag_file::DEFAULT_PROJECT;
use std::time::Duration;

use datajump_shared::RunStatus;
use datajump_shared::entities::alert;
use datajump_shared::kinds::AlertState;
use datajump_store::secrets;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use crate::harness::http_receiver;

const TIMEOUT: Duration = Duration::from_secs(90);
const TOKEN: &str = "hook-s3cret-42";

both_dbs!(failures_timeouts_and_sla_misses_alert, |env| async move {
    let (port, seen) = http_receiver(2);
    let refused = env
        .try_apply(&format!(
            r#"
name: alerting
alerts:
  webhooks: [{{ url: "http://127.0.0.1:{port}/hook", headers: {{ Authorization: "Bearer {TOKEN}" }} }}]
tasks: [{{ name: a, command: "true" }}]
"#
        ))
        .await
        .expect_err("a literal credential is refused");
    assert!(
        refused.contains("webhooks[0]: header 'Authorization'"),
        "{refused}"
    );

    secrets::set(&env.db, DEFAULT_PROJECT, "hook_token", TOKEN, None)
        .await
        .expect("secret");
    env.apply(&format!(
        r#"
name: alerting
alerts:
  webhooks:
    - url: http://127.0.0.1:{port}/hook
      headers: {{ Authorization: "Bearer ${{secret:hook_token}}" }}
  sla: 1
tasks:
  - {{ name: slow, command: "sleep 4" }}
  - {{ name: boom, command: "exit 2", retry: {{ max: 0 }} }}
  - {{ name: late, command: "sleep 10", timeout: 1, retry: {{ max: 0 }} }}
"#
    ))
    .await;
    let _ticker = env.spawn_ticker().await;
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 4).await;
    let run = env.run_to_end("alerting", RunStatus::Failed, TIMEOUT).await;

    // run_failed, task_failed for boom and late, timeout for late, sla_miss.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let alerts = loop {
        let alerts = alert::Entity::find()
            .filter(alert::Column::DagRunId.eq(run.id))
            .all(&env.db)
            .await
            .expect("alerts");
        if alerts.len() == 5 && alerts.iter().all(|a| a.status == AlertState::Sent) {
            break alerts;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "alerts not all sent: {alerts:#?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let mut kinds: Vec<&str> = alerts.iter().map(|a| a.kind.as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "run_failed",
            "sla_miss",
            "task_failed",
            "task_failed",
            "timeout"
        ]
    );
    let retried: Vec<_> = alerts.iter().filter(|a| a.attempts > 1).collect();
    assert!(
        !retried.is_empty(),
        "the two 500s were retried: {alerts:#?}"
    );

    let received = seen.lock().expect("requests").clone();
    assert_eq!(received.len(), 5 + 2, "each alert once, plus the two 500s");
    for request in &received {
        assert!(
            request
                .headers
                .iter()
                .any(|h| h.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}"))),
            "{request:?}"
        );
    }
    let boom = received
        .iter()
        .find(|r| r.body["kind"] == "task_failed" && r.body["taskName"] == "boom")
        .expect("boom's alert");
    assert_eq!(boom.body["dag"], "alerting");
    assert_eq!(boom.body["runId"], run.id);
    assert_eq!(boom.body["status"], "FAILED");

    // The API shows them, with their delivery.
    let api = crate::api::Api::start(&env, None).await;
    let listed = api
        .get(&format!("/api/v1/dags/{}/alerts?pageSize=50", run.dag_id))
        .await
        .expect(200);
    assert_eq!(listed["total"], 5, "{listed}");
    let items = listed["items"].as_array().expect("items");
    assert!(
        items.iter().all(|a| a["status"] == "SENT"
            && a["webhook"] == format!("http://127.0.0.1:{port}/hook")
            && a["runId"] == run.id),
        "{listed}"
    );
    assert!(
        items.iter().any(|a| a["attempts"].as_i64() > Some(1)),
        "{listed}"
    );

    // The definition over the API shows the alerts, and changing the DAG
    // through the API (a schedule added) keeps them.
    let detail = api
        .get(&format!("/api/v1/dags/{}", run.dag_id))
        .await
        .expect(200);
    assert_eq!(
        detail["alerts"]["webhooks"][0]["headers"]["Authorization"], "Bearer ${secret:hook_token}",
        "{detail}"
    );
    api.post(
        &format!("/api/v1/dags/{}/schedules", run.dag_id),
        json!({ "name": "nightly", "cronExpression": "0 0 3 * * ?" }),
    )
    .await
    .expect(201);
    let dag = datajump_shared::entities::dag::Entity::find_by_id(run.dag_id)
        .one(&env.db)
        .await
        .expect("dag")
        .expect("dag row");
    assert!(
        dag.alert_config.is_some_and(|c| c["sla"] == 1),
        "the alert config survives an API change"
    );

    // The real CLI: a test alert reaches the receiver and is reported SENT.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_datajump-under-test"))
        .args(["--database-url", &env.db_url])
        .args(["alerts", "test", "alerting"])
        .env("DATAJUMP_LOG", "warn")
        .output()
        .await
        .expect("datajump alerts test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("http://127.0.0.1:{port}/hook: SENT (HTTP 200)")),
        "{stdout}"
    );
    let last = seen
        .lock()
        .expect("requests")
        .last()
        .cloned()
        .expect("a test alert");
    assert_eq!(last.body["kind"], "test");
});

/// The alerts of `dag_id`, once every one has left PENDING and SENDING.
async fn settled(env: &crate::harness::TestEnv, dag_id: i64, count: usize) -> Vec<alert::Model> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let alerts = alert::Entity::find()
            .filter(alert::Column::DagId.eq(dag_id))
            .all(&env.db)
            .await
            .expect("alerts");
        if alerts.len() == count
            && alerts
                .iter()
                .all(|a| matches!(a.status, AlertState::Sent | AlertState::Failed))
        {
            return alerts;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "alerts not settled: {alerts:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// #38 (medium 7): a webhook follows the rule HTTP tasks follow. Every form
// of an address that reaches the API's listener is the API (here all on
// loopback, so nothing leaves the host even before the fix), and a URL
// holding a user name or password is refused when the DAG is created or
// changed, with nothing stored.
both_dbs!(
    webhooks_follow_the_http_destination_rule,
    |env| async move {
        let api = crate::api::Api::start(&env, None).await;
        let api_port: u16 = api
            .base()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("the API's port");
        let (port, seen) = http_receiver(0);
        let dag_with = |urls: &[String]| {
            let hooks: Vec<_> = urls.iter().map(|url| json!({ "url": url })).collect();
            json!({
                "name": "hooked",
                "alerts": { "webhooks": hooks },
                "tasks": [{ "name": "a", "command": "true" }],
            })
        };
        let with_password = format!("http://user:pa55@127.0.0.1:{port}/hook");
        api.post(
            "/api/v1/dags",
            dag_with(std::slice::from_ref(&with_password)),
        )
        .await
        .expect_error(
            400,
            "BAD_REQUEST",
            "webhooks[0]: the url carries a user name or password",
        );
        assert!(
            datajump_store::catalog::dag_by_name(&env.db, "hooked")
                .await
                .is_err(),
            "a DAG was stored"
        );

        let receiver = format!("http://127.0.0.1:{port}/hook");
        let the_api = [
            format!("http://0.0.0.0:{api_port}/api/v1/dags"),
            format!("http://[::ffff:127.0.0.1]:{api_port}/api/v1/dags"),
            format!("http://127.0.0.2:{api_port}/api/v1/dags"),
            format!("http://[::]:{api_port}/api/v1/dags"),
            format!("http://localhost:{api_port}/api/v1/dags"),
        ];
        let mut urls = vec![receiver.clone()];
        urls.extend(the_api.iter().cloned());
        let created = api.post("/api/v1/dags", dag_with(&urls)).await.expect(201);
        let dag_id = created["id"].as_i64().expect("id");
        api.put(
            &format!("/api/v1/dags/{dag_id}"),
            json!({ "alerts": { "webhooks": [{ "url": with_password }] } }),
        )
        .await
        .expect_error(
            400,
            "BAD_REQUEST",
            "webhooks[0]: the url carries a user name or password",
        );
        let dag = datajump_store::catalog::dag_by_name(&env.db, "hooked")
            .await
            .expect("the DAG");
        assert_eq!(
            dag.alert_config
                .as_ref()
                .map(|c| c["webhooks"][0]["url"].clone()),
            Some(json!(receiver)),
            "the refused change was stored"
        );

        // The ticker knows the API's address as `datajump ticker` would
        // (DATAJUMP_API_URL).
        let network = datajump_shared::network::NetworkPolicy::new(
            Some(api.base()),
            &[],
            datajump_shared::network::Caller::Webhook,
        )
        .expect("a policy");
        let _ticker = env.spawn_ticker_with(std::sync::Arc::new(network)).await;
        datajump_store::alerts::record_test(&env.db, &dag, chrono::Utc::now())
            .await
            .expect("test alerts")
            .expect("webhooks");
        let alerts = settled(&env, dag_id, urls.len()).await;
        for alert in &alerts {
            let url = alert.target["url"].as_str().unwrap_or_default();
            if url == receiver {
                assert_eq!(alert.status, AlertState::Sent, "{alert:#?}");
                continue;
            }
            assert_eq!(alert.status, AlertState::Failed, "{alert:#?}");
            assert_eq!(alert.attempts, 1, "refused, not retried: {alert:#?}");
            let error = alert.last_error.clone().unwrap_or_default();
            assert!(
                error.contains("alert webhooks may not call the DataJump API itself")
                    && error.contains("on the ticker with --http-allow"),
                "{url}: {error}"
            );
        }
        assert_eq!(seen.lock().expect("requests").len(), 1);
    }
);

// #38 (medium 7): the alerts of a deleted DAG are not retried. Deleting the
// DAG removes them; one left by an earlier version (its DAG gone) ends
// FAILED at its next attempt without being sent.
both_dbs!(alerts_of_a_deleted_dag_stop_retrying, |env| async move {
    // Always 500: every attempt asks for a retry.
    let (port, seen) = http_receiver(usize::MAX);
    let receiver = format!("http://127.0.0.1:{port}/hook");
    env.apply(&format!(
        r#"
name: doomed
alerts:
  webhooks: [{{ url: "{receiver}" }}]
tasks: [{{ name: a, command: "true" }}]
"#
    ))
    .await;
    let api = crate::api::Api::start(&env, None).await;
    let _ticker = env.spawn_ticker().await;
    let dag = datajump_store::catalog::dag_by_name(&env.db, "doomed")
        .await
        .expect("the DAG");
    datajump_store::alerts::record_test(&env.db, &dag, chrono::Utc::now())
        .await
        .expect("test alert")
        .expect("a webhook");
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while seen.lock().expect("requests").is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "never sent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    api.delete(&format!("/api/v1/dags/{}", dag.id))
        .await
        .expect(204);
    let after = seen.lock().expect("requests").len();
    // Retries come 2 then 4 seconds apart, in rounds every 2 seconds.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(
        seen.lock().expect("requests").len(),
        after,
        "the alert of a deleted DAG was retried"
    );
    let left = alert::Entity::find()
        .filter(alert::Column::DagId.eq(dag.id))
        .all(&env.db)
        .await
        .expect("alerts");
    assert!(left.is_empty(), "{left:#?}");

    // An alert whose DAG is gone, as deletion left them before.
    use sea_orm::{ActiveModelTrait, ActiveValue::Set};
    let orphan = alert::ActiveModel {
        dag_id: Set(dag.id + 1000),
        kind: Set(datajump_shared::kinds::AlertKind::Test),
        dedup_key: Set("orphan:1".to_owned()),
        target: Set(json!({ "url": receiver })),
        payload: Set(json!({ "kind": "test" })),
        status: Set(AlertState::Pending),
        attempts: Set(0),
        next_attempt_at: Set(chrono::Utc::now()),
        created_at: Set(chrono::Utc::now()),
        ..Default::default()
    }
    .insert(&env.db)
    .await
    .expect("orphan alert");
    let ended = settled(&env, orphan.dag_id, 1).await;
    assert_eq!(ended[0].status, AlertState::Failed, "{ended:#?}");
    assert_eq!(ended[0].attempts, 1, "{ended:#?}");
    assert!(
        ended[0]
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("was deleted")),
        "{ended:#?}"
    );
    assert_eq!(
        seen.lock().expect("requests").len(),
        after,
        "the orphan alert was sent"
    );
});

// #38 (medium 7): a webhook redirected to another origin keeps its
// credentials home, as HTTP tasks do. The alert with a secret header is
// not followed (and not retried: it would be sent the same way); the one
// without is followed.
both_dbs!(
    credentials_do_not_follow_a_webhook_redirect_to_another_origin,
    |env| async move {
        let (elsewhere, landed) = http_receiver(0);
        let (port, redirected) =
            crate::harness::http_redirector(format!("http://127.0.0.1:{elsewhere}/caught"));
        secrets::set(&env.db, DEFAULT_PROJECT, "hook_token", TOKEN, None)
            .await
            .expect("secret");
        env.apply(&format!(
            r#"
name: redirected
alerts:
  webhooks:
    - url: http://127.0.0.1:{port}/with
      headers: {{ Authorization: "Bearer ${{secret:hook_token}}" }}
    - url: http://127.0.0.1:{port}/plain
tasks: [{{ name: a, command: "true" }}]
"#
        ))
        .await;
        let _ticker = env.spawn_ticker().await;
        let dag = datajump_store::catalog::dag_by_name(&env.db, "redirected")
            .await
            .expect("the DAG");
        datajump_store::alerts::record_test(&env.db, &dag, chrono::Utc::now())
            .await
            .expect("test alerts")
            .expect("webhooks");
        let alerts = settled(&env, dag.id, 2).await;
        for alert in &alerts {
            let url = alert.target["url"].as_str().unwrap_or_default();
            if url.ends_with("/plain") {
                assert_eq!(alert.status, AlertState::Sent, "{alert:#?}");
                continue;
            }
            assert_eq!(alert.status, AlertState::Failed, "{alert:#?}");
            assert_eq!(alert.attempts, 1, "not retried: {alert:#?}");
            let error = alert.last_error.clone().unwrap_or_default();
            assert!(
                error.contains("toward another origin, not followed"),
                "{error}"
            );
        }
        assert_eq!(redirected.lock().expect("requests").len(), 2);
        let landed = landed.lock().expect("requests").clone();
        assert_eq!(
            landed.len(),
            1,
            "only the plain alert was followed: {landed:?}"
        );
        assert!(
            landed[0]
                .headers
                .iter()
                .all(|h| !h.to_ascii_lowercase().starts_with("authorization")
                    && !h.contains(TOKEN)),
            "{landed:?}"
        );
    }
);
