//! Named API tokens and roles as an admin sets them up: `datajump token
//! create` (the real CLI, on the database), then each role tries what it
//! may and may not do over HTTP, and the audit log says who did what —
//! including what was refused and what the CLI itself changed.

use reqwest::Method;
use serde_json::{Value, json};

use crate::api::{Api, TIMEOUT, id_of};
use crate::harness::TestEnv;
use crate::harness::process::run_cli;

/// Runs `datajump ARGS` on the test's database (and the API at `api_url`
/// with `token`, for user commands); returns (success, stdout, stderr).
pub(crate) async fn datajump(
    env: &TestEnv,
    api_url: &str,
    token: Option<&str>,
    args: &[&str],
) -> (bool, String, String) {
    let mut extra = vec![("DATAJUMP_API_URL", api_url)];
    extra.extend(token.map(|token| ("DATAJUMP_API_TOKEN", token)));
    run_cli(env, args, &extra).await
}

/// `datajump token create NAME --role ROLE`; returns the token printed.
async fn create_token(env: &TestEnv, api: &Api, name: &str, role: &str) -> String {
    let (ok, stdout, stderr) = datajump(
        env,
        api.base(),
        None,
        &["token", "create", name, "--role", role],
    )
    .await;
    assert!(ok, "token create failed: {stderr}");
    let token = stdout.trim().to_owned();
    assert!(token.starts_with("dj_") && token.len() == 67, "{stdout}");
    token
}

/// A request as `token` (or none).
pub(crate) async fn call(
    api: &Api,
    token: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, format!("{}{path}", api.base()));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("HTTP request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("HTTP body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

both_dbs!(tokens_roles_and_the_audit_log, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let api = Api::start(&env, None).await;

    // No token yet: the local trial is open.
    let (status, _) = call(&api, None, Method::GET, "/api/v1/dags", None).await;
    assert_eq!(status, 200);

    let viewer = create_token(&env, &api, "dashboard", "viewer").await;
    let operator = create_token(&env, &api, "ci-bot", "operator").await;
    let admin = create_token(&env, &api, "platform-team", "admin").await;
    let (ok, _, stderr) = datajump(
        &env,
        api.base(),
        None,
        &["token", "create", "ci-bot", "--role", "admin"],
    )
    .await;
    assert!(!ok && stderr.contains("already exists"), "{stderr}");
    let (ok, _, stderr) = datajump(
        &env,
        api.base(),
        None,
        &["token", "create", "x", "--role", "root"],
    )
    .await;
    assert!(
        !ok && stderr.contains("expected viewer, operator or admin"),
        "{stderr}"
    );

    // Now every route but the probes needs a token.
    let (status, body) = call(&api, None, Method::GET, "/api/v1/dags", None).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("datajump token create"),
        "{body}"
    );
    assert_eq!(call(&api, None, Method::GET, "/healthz", None).await.0, 200);
    let (status, _) = call(&api, Some("dj_0000"), Method::GET, "/api/v1/dags", None).await;
    assert_eq!(status, 401);
    // /metrics too (names DAGs and queues), for a viewer's token, such as
    // the one a Prometheus scrape sends.
    assert_eq!(call(&api, None, Method::GET, "/metrics", None).await.0, 401);
    let scrape = reqwest::Client::new()
        .get(format!("{}/metrics", api.base()))
        .bearer_auth(&viewer)
        .send()
        .await
        .expect("scrape");
    assert_eq!(scrape.status().as_u16(), 200);
    assert!(
        scrape
            .text()
            .await
            .expect("page")
            .contains("datajump_task_attempts_total")
    );
    let open_metrics =
        Api::start_configured(&env, None, |config| config.public_metrics = true).await;
    assert_eq!(
        call(&open_metrics, None, Method::GET, "/metrics", None)
            .await
            .0,
        200,
        "--public-metrics"
    );
    assert_eq!(
        call(&open_metrics, None, Method::GET, "/api/v1/dags", None)
            .await
            .0,
        401,
        "--public-metrics opens /metrics only"
    );

    let dag = json!({ "name": "nightly", "tasks": [{ "name": "a", "command": "true" }] });
    // A viewer reads, and may not trigger or change DAGs.
    assert_eq!(
        call(&api, Some(&viewer), Method::GET, "/api/v1/dags", None)
            .await
            .0,
        200
    );
    let (status, body) = call(
        &api,
        Some(&viewer),
        Method::POST,
        "/api/v1/dags",
        Some(dag.clone()),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("viewer"),
        "{body}"
    );
    // An operator may not change DAGs either; an admin may.
    let (status, _) = call(
        &api,
        Some(&operator),
        Method::POST,
        "/api/v1/dags",
        Some(dag.clone()),
    )
    .await;
    assert_eq!(status, 403);
    let (status, created) = call(&api, Some(&admin), Method::POST, "/api/v1/dags", Some(dag)).await;
    assert_eq!(status, 201, "{created}");
    let trigger = format!("/api/v1/dags/{}/trigger", id_of(&created));
    let (status, _) = call(&api, Some(&viewer), Method::POST, &trigger, None).await;
    assert_eq!(status, 403);
    let (status, run) = call(&api, Some(&operator), Method::POST, &trigger, None).await;
    assert_eq!(status, 202, "{run}");
    let status_url = run["statusUrl"].as_str().expect("statusUrl").to_owned();
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let (_, run) = call(&api, Some(&viewer), Method::GET, &status_url, None).await;
        if run["status"] == "SUCCESS" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "run not finished: {run}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // The audit log is the admin's.
    assert_eq!(
        call(&api, Some(&operator), Method::GET, "/api/v1/audit", None)
            .await
            .0,
        403
    );
    let (status, audit) = call(
        &api,
        Some(&admin),
        Method::GET,
        "/api/v1/audit?pageSize=100",
        None,
    )
    .await;
    assert_eq!(status, 200, "{audit}");
    let entries = audit["items"].as_array().expect("items").clone();
    let has = |actor: &str, action: &str, status: i64| {
        entries
            .iter()
            .any(|e| e["actor"] == actor && e["action"] == action && e["status"] == status)
    };
    assert!(has("platform-team", "POST /api/v1/dags", 201), "{audit}");
    assert!(
        has("ci-bot", "POST /api/v1/dags/{dagId}/trigger", 202),
        "{audit}"
    );
    assert!(
        has("dashboard", "POST /api/v1/dags/{dagId}/trigger", 403),
        "{audit}"
    );
    assert!(has("ci-bot", "POST /api/v1/dags", 403), "{audit}");
    let cli_entry = entries
        .iter()
        .find(|e| {
            e["action"] == "token create" && e["target"] == "platform-team (admin, every project)"
        })
        .unwrap_or_else(|| panic!("no audit row of the CLI's token create: {audit}"));
    assert!(
        cli_entry["actor"]
            .as_str()
            .unwrap_or_default()
            .starts_with("os:"),
        "{cli_entry}"
    );
    assert!(
        cli_entry["origin"]
            .as_str()
            .unwrap_or_default()
            .starts_with("cli@"),
        "{cli_entry}"
    );
    let trigger_entry = entries
        .iter()
        .find(|e| e["actor"] == "ci-bot" && e["status"] == 202)
        .expect("trigger entry");
    assert!(
        trigger_entry["origin"]
            .as_str()
            .unwrap_or_default()
            .starts_with("127.0.0.1:"),
        "{trigger_entry}"
    );

    // Revoked, a token stops working at once; `token list` and `audit` say so.
    let (ok, _, stderr) = datajump(&env, api.base(), None, &["token", "revoke", "dashboard"]).await;
    assert!(ok, "{stderr}");
    assert_eq!(
        call(&api, Some(&viewer), Method::GET, "/api/v1/dags", None)
            .await
            .0,
        401
    );
    let (ok, listed, _) = datajump(&env, api.base(), None, &["token", "list"]).await;
    assert!(
        ok && listed.contains("ci-bot") && !listed.contains("dashboard"),
        "{listed}"
    );
    assert!(!listed.contains(&operator), "token list printed a token");
    let (ok, table, stderr) =
        datajump(&env, api.base(), Some(&admin), &["audit", "--limit", "5"]).await;
    assert!(ok, "{stderr}");
    assert!(
        table.contains("token revoke") && table.contains("dashboard (viewer)"),
        "{table}"
    );
    let (ok, _, stderr) = datajump(&env, api.base(), Some(&operator), &["audit"]).await;
    assert!(!ok && stderr.contains("operator"), "{stderr}");
    env.check_roles();
});

/// A request carrying the session cookie `cookie` and, when given, an
/// `Origin`; returns status, headers and JSON body.
async fn with_cookie(
    api: &Api,
    cookie: &str,
    origin: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", api.base()))
        .header("Cookie", format!("dj_session={cookie}"));
    if let Some(origin) = origin {
        request = request.header("Origin", origin);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("HTTP request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("HTTP body");
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Signs in with `token` from the API's own origin; returns the cookie's
/// value and its `Set-Cookie` header.
async fn sign_in(api: &Api, token: &str) -> (String, String) {
    let response = reqwest::Client::new()
        .post(format!("{}/api/v1/session", api.base()))
        .header("Origin", api.base())
        .json(&json!({ "token": token }))
        .send()
        .await
        .expect("HTTP request");
    assert_eq!(response.status().as_u16(), 201);
    let set_cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("Set-Cookie")
        .to_owned();
    let value = set_cookie
        .strip_prefix("dj_session=")
        .and_then(|rest| rest.split(';').next())
        .expect("dj_session cookie")
        .to_owned();
    (value, set_cookie)
}

both_dbs!(a_browser_signs_in_with_a_session_cookie, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let api = Api::start(&env, None).await;
    let admin = datajump_store::tokens::create(
        &env.db,
        "admin",
        datajump_shared::access::Role::Admin,
        datajump_shared::access::Reach::Everything,
        "test",
    )
    .await
    .expect("admin token")
    .token;
    let operator = datajump_store::tokens::create(
        &env.db,
        "night-shift",
        datajump_shared::access::Role::Operator,
        datajump_shared::access::Reach::Everything,
        "test",
    )
    .await
    .expect("operator token")
    .token;
    let (status, created) = call(
        &api,
        Some(&admin),
        Method::POST,
        "/api/v1/dags",
        Some(json!({ "name": "nightly", "tasks": [{ "name": "a", "command": "true" }] })),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let trigger = format!("/api/v1/dags/{}/trigger", id_of(&created));

    // A wrong token does not sign in.
    let (status, _) = call(
        &api,
        None,
        Method::POST,
        "/api/v1/session",
        Some(json!({ "token": "dj_guess" })),
    )
    .await;
    assert_eq!(status, 401);

    let (cookie, set_cookie) = sign_in(&api, &operator).await;
    assert!(
        set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"),
        "{set_cookie}"
    );
    assert!(
        !set_cookie.contains(&operator),
        "the token itself is in the cookie"
    );
    let own = api.base().to_owned();
    let (status, _, me) =
        with_cookie(&api, &cookie, None, Method::GET, "/api/v1/session", None).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["name"], "night-shift");
    assert_eq!(me["role"], "operator");
    assert_eq!(me["tokensRequired"], true);

    // The cookie reads and runs what an operator may, from the API's own pages.
    assert_eq!(
        with_cookie(&api, &cookie, None, Method::GET, "/api/v1/dags", None)
            .await
            .0,
        200
    );
    let (status, _, run) =
        with_cookie(&api, &cookie, Some(&own), Method::POST, &trigger, None).await;
    assert_eq!(status, 202, "{run}");
    let (status, _, _) = with_cookie(
        &api,
        &cookie,
        Some(&own),
        Method::POST,
        "/api/v1/dags",
        Some(json!({ "name": "other" })),
    )
    .await;
    assert_eq!(status, 403, "an operator's cookie created a DAG");
    // Another site's page gets nothing with it, not even a read.
    let (status, _, body) = with_cookie(
        &api,
        &cookie,
        Some("https://evil.example"),
        Method::GET,
        "/api/v1/dags",
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.to_string().contains("nightly"), "{body}");

    // Signing out ends it; so does revoking the token.
    let (status, headers, _) = with_cookie(
        &api,
        &cookie,
        Some(&own),
        Method::DELETE,
        "/api/v1/session",
        None,
    )
    .await;
    assert_eq!(status, 204);
    let cleared = headers
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    assert_eq!(
        with_cookie(&api, &cookie, None, Method::GET, "/api/v1/dags", None)
            .await
            .0,
        401
    );
    let (cookie, _) = sign_in(&api, &operator).await;
    assert_eq!(
        with_cookie(&api, &cookie, None, Method::GET, "/api/v1/dags", None)
            .await
            .0,
        200
    );
    datajump_store::tokens::revoke(&env.db, "night-shift")
        .await
        .expect("revoke");
    assert_eq!(
        with_cookie(&api, &cookie, None, Method::GET, "/api/v1/dags", None)
            .await
            .0,
        401
    );
    env.check_roles();
});

both_dbs!(
    a_session_ends_when_datajump_api_token_is_replaced,
    |env| async move {
        // Signed in with the environment's token, a browser stayed admin for
        // up to twelve hours after that token was replaced.
        let first = "dj_first-environment-token-of-this-installation";
        let api = Api::start(&env, Some(first)).await;
        let (cookie, _) = sign_in(&api, first).await;
        let dags = |api: &Api, cookie: String| {
            let api_base = api.base().to_owned();
            async move {
                reqwest::Client::new()
                    .get(format!("{api_base}/api/v1/dags"))
                    .header("Cookie", format!("dj_session={cookie}"))
                    .send()
                    .await
                    .expect("HTTP request")
                    .status()
                    .as_u16()
            }
        };
        assert_eq!(dags(&api, cookie.clone()).await, 200);

        // The same installation, its API restarted with another token.
        let second = "dj_second-environment-token-of-this-installation";
        let rotated = Api::start(&env, Some(second)).await;
        assert_eq!(
            dags(&rotated, cookie.clone()).await,
            401,
            "a session of the replaced token still works"
        );
        assert_eq!(
            dags(&api, cookie).await,
            401,
            "the session is gone, not only refused by the new API"
        );

        // `datajump token end-sessions` ends every session, named tokens' too.
        let named = create_token(&env, &rotated, "night-shift", "operator").await;
        let (by_env, _) = sign_in(&rotated, second).await;
        let (by_named, _) = sign_in(&rotated, &named).await;
        assert_eq!(dags(&rotated, by_env.clone()).await, 200);
        assert_eq!(dags(&rotated, by_named.clone()).await, 200);
        let (ok, stdout, stderr) =
            datajump(&env, rotated.base(), None, &["token", "end-sessions"]).await;
        assert!(ok, "{stderr}");
        assert!(stdout.contains("2 browser session(s) ended"), "{stdout}");
        assert_eq!(dags(&rotated, by_env).await, 401);
        assert_eq!(dags(&rotated, by_named).await, 401);
        let (_, audit) = call(&rotated, Some(second), Method::GET, "/api/v1/audit", None).await;
        assert!(audit.to_string().contains("sessions end"), "{audit}");
    }
);
