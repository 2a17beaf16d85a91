//! A web page in the operator's browser tries to drive the token-less local
//! API, as `datajump up` starts it: requests written byte for byte as a
//! browser sends them (a cross-origin "simple" POST, a DNS-rebinding read),
//! over a raw TCP connection. Each is refused, nothing is written, and the
//! legitimate paths (a JSON client with no `Origin`, the API's own origin,
//! a listed origin) keep working.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::api::{Api, id_of};

/// A raw HTTP/1.1 exchange with the server at `addr`: status and body.
async fn raw(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the API");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .expect("read the answer");
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"));
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// The DAG names the API lists.
async fn dag_names(api: &Api) -> Vec<String> {
    let page = api.get("/api/v1/dags?pageSize=500").await.expect(200);
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|d| d["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

both_dbs!(a_web_page_cannot_drive_the_local_api, |env| async move {
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let api = Api::start_with(
        &env,
        None,
        datajump_api::BrowserRules::new(&[], &["http://ui.example.test:3000".to_owned()], None)
            .expect("rules"),
    )
    .await;
    let addr = api.base().trim_start_matches("http://").to_owned();
    let evil_dag = json!({
        "name": "from_a_page",
        "tasks": [{ "name": "pwn", "command": "echo owned" }],
    })
    .to_string();
    let page = "https://evil.example";

    // A form-like cross-origin POST (text/plain needs no preflight).
    let (status, body) = raw(
        &addr,
        "POST",
        "/api/v1/dags",
        &[
            ("Host", &addr),
            ("Origin", page),
            ("Content-Type", "text/plain;charset=UTF-8"),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        &evil_dag,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "FORBIDDEN");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("cross-origin"),
        "{body}"
    );
    // The same with a JSON content type, an `Origin: null` (sandboxed
    // iframe) and a look-alike origin on another port.
    for origin in [
        page,
        "null",
        &format!("http://{}", addr.replace("127.0.0.1", "localhost")),
    ] {
        let (status, body) = raw(
            &addr,
            "POST",
            "/api/v1/dags",
            &[
                ("Host", &addr),
                ("Origin", origin),
                ("Content-Type", "application/json"),
            ],
            &evil_dag,
        )
        .await;
        assert_eq!(status, 403, "{origin}: {body}");
    }
    // A body that is not declared JSON is refused even without an Origin.
    let (status, body) = raw(
        &addr,
        "POST",
        "/api/v1/dags",
        &[("Host", &addr), ("Content-Type", "text/plain")],
        &evil_dag,
    )
    .await;
    assert_eq!(status, 415, "{body}");
    assert_eq!(body["error"], "UNSUPPORTED_MEDIA_TYPE");
    assert!(!dag_names(&api).await.contains(&"from_a_page".to_owned()));

    // An existing DAG cannot be triggered from a page (an empty POST).
    let created = api
        .post(
            "/api/v1/dags",
            json!({ "name": "nightly", "tasks": [{ "name": "a", "command": "true" }] }),
        )
        .await
        .expect(201);
    let dag_id = id_of(&created);
    let trigger = format!("/api/v1/dags/{dag_id}/trigger");
    let (status, body) = raw(
        &addr,
        "POST",
        &trigger,
        &[("Host", &addr), ("Origin", page)],
        "",
    )
    .await;
    assert_eq!(status, 403, "{body}");

    // DNS rebinding: a hostile name resolving to 127.0.0.1 makes the page
    // same-origin, so the Host it sends is the hostile name.
    let port = addr.rsplit_once(':').map_or("", |(_, p)| p).to_owned();
    let rebound = format!("rebind.evil.example:{port}");
    let (status, body) = raw(&addr, "GET", "/api/v1/dags", &[("Host", &rebound)], "").await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.to_string().contains("nightly"), "{body}");
    let (status, _) = raw(
        &addr,
        "POST",
        &trigger,
        &[("Host", &rebound), ("Origin", &format!("http://{rebound}"))],
        "",
    )
    .await;
    assert_eq!(status, 403);

    // What must keep working: a JSON client without an Origin (curl, the
    // CLI), the API's own origin under each loopback name, a listed origin.
    let (status, body) = raw(
        &addr,
        "GET",
        "/api/v1/dags",
        &[("Host", &format!("localhost:{port}"))],
        "",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for (host, origin) in [
        (addr.clone(), format!("http://{addr}")),
        (
            format!("localhost:{port}"),
            format!("http://localhost:{port}"),
        ),
        (addr.clone(), "http://ui.example.test:3000".to_owned()),
    ] {
        let (status, body) = raw(
            &addr,
            "POST",
            "/api/v1/dags/schedule/validate-cron",
            &[
                ("Host", &host),
                ("Origin", &origin),
                ("Content-Type", "application/json"),
            ],
            r#"{"cronExpression":"0 0 2 * * ?"}"#,
        )
        .await;
        assert_eq!(status, 200, "{origin}: {body}");
    }
    let run = api.post_empty(&trigger).await.expect(202);
    let finished = api
        .wait_run(run["statusUrl"].as_str().expect("statusUrl"))
        .await;
    assert_eq!(finished["status"], "SUCCESS", "{finished}");
    // Fires are taken in order, so a fire the page's trigger had published
    // would have made its run before this one finished.
    let runs = api
        .get(&format!("/api/v1/dags/{dag_id}/instances"))
        .await
        .expect(200);
    assert_eq!(runs["total"], 1, "a page started a run: {runs}");

    // Paging beyond any table is a 400, not a crashed handler.
    api.get("/api/v1/dags?page=9223372036854775807")
        .await
        .expect_error(400, "BAD_REQUEST", "`page`");
    env.check_roles();
});
