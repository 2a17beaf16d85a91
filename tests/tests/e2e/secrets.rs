//! Credentials of HTTP tasks: a header naming `${secret:NAME}` reaches the
//! server, while the value appears in no NATS message, no catalog or run row
//! and no log; a literal credential header is refused when the DAG is
//! applied. The receiving server is `harness::http_receiver`.

use datajump_shared::dag_file::DEFAULT_PROJECT;
use std::time::Duration;

use datajump_shared::entities::{dag_version_plan, task, task_instance};
use datajump_shared::{RunStatus, logs};
use datajump_store::secrets;
use futures::StreamExt;
use sea_orm::EntityTrait;
use tokio::io::AsyncReadExt;

use crate::harness::http_receiver;
use crate::harness::process::run_cli;

const TIMEOUT: Duration = Duration::from_secs(60);
const TOKEN: &str = "tok-9f8e7d-s3cr3t";

both_dbs!(secret_headers_travel_in_no_message, |env| async move {
    let (port, seen) = http_receiver(0);
    let literal = env
        .try_apply(&format!(
            r#"
name: notify
tasks:
  - name: call
    type: HTTP
    content:
      url: http://127.0.0.1:{port}/hook
      headers: {{ Authorization: "Bearer {TOKEN}" }}
"#
        ))
        .await
        .expect_err("a literal credential is refused");
    assert!(
        literal.contains("header 'Authorization' carries a credential"),
        "{literal}"
    );
    assert!(
        task::Entity::find()
            .all(&env.db)
            .await
            .expect("tasks")
            .is_empty(),
        "nothing was stored"
    );

    secrets::set(
        &env.db,
        DEFAULT_PROJECT,
        "hook_token",
        TOKEN,
        Some("the hook"),
    )
    .await
    .expect("secret stored");
    env.apply(&format!(
        r#"
name: notify
tasks:
  - name: call
    type: HTTP
    content:
      url: http://127.0.0.1:{port}/hook?day=${{bizdate}}
      headers: {{ Authorization: "Bearer ${{secret:hook_token}}", X-Day: "${{bizdate}}" }}
"#
    ))
    .await;
    // Every message on every subject, JetStream's included.
    let mut everything = env.nats.subscribe(">").await.expect("subscribe");
    let _resolver = env.spawn_resolver().await;
    let _runner = env.spawn_runner("r1", &["default"], 2).await;
    let run = env.run_to_end("notify", RunStatus::Success, TIMEOUT).await;

    let requests = seen.lock().expect("requests").clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}"))),
        "the server got the secret: {:?}",
        requests[0].headers
    );

    let mut messages = 0;
    let mut work = 0;
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(500), everything.next()).await
    {
        messages += 1;
        work += usize::from(message.subject.starts_with("dj.work."));
        assert!(
            !String::from_utf8_lossy(&message.payload).contains(TOKEN),
            "the secret travelled on {}",
            message.subject
        );
    }
    assert!(work >= 1, "the work message was seen ({messages} messages)");

    let rows = [
        serde_json::to_string(&task::Entity::find().all(&env.db).await.expect("tasks")[0].content),
        serde_json::to_string(
            dag_version_plan::Entity::find_by_id((run.dag_id, run.dag_version))
                .one(&env.db)
                .await
                .expect("run plan")
                .expect("run plan")
                .plan
                .json(),
        ),
        serde_json::to_string(
            task_instance::Entity::find()
                .all(&env.db)
                .await
                .expect("instances")[0]
                .spec
                .json(),
        ),
    ];
    for row in rows {
        let row = row.expect("json");
        assert!(row.contains("${secret:hook_token}"), "{row}");
        assert!(!row.contains(TOKEN), "a row holds the secret: {row}");
    }

    let exec = env.executions_by_name(run.id).await["call"][0].clone();
    let tail = exec.log_tail.clone().expect("log tail");
    assert!(tail.contains("> authorization: ***"), "{tail}");
    assert!(tail.contains("> x-day: "), "{tail}");
    assert!(!tail.contains(TOKEN), "{tail}");
    // A log the tail holds whole has no object-store copy; a longer one must
    // be clean there too.
    if let Some(name) = exec.log_path {
        let store = env
            .bus
            .js()
            .get_object_store("dj_logs")
            .await
            .expect("dj_logs");
        let mut full = String::new();
        store
            .get(name.as_str())
            .await
            .expect("log object")
            .read_to_string(&mut full)
            .await
            .expect("read the log");
        assert!(!full.contains(TOKEN), "{full}");
    } else {
        assert_eq!(logs::dropped_lines(&tail), 0, "{tail}");
    }
});

/// The stored (sealed or not) value of secret `name`.
async fn stored_value(env: &crate::harness::TestEnv, name: &str) -> String {
    use datajump_shared::entities::secret;
    use sea_orm::{ColumnTrait, QueryFilter};
    secret::Entity::find()
        .filter(secret::Column::Name.eq(name))
        .one(&env.db)
        .await
        .expect("query")
        .expect("the secret row")
        .value
}

both_dbs!(
    secrets_are_sealed_at_rest_and_the_key_rotates,
    |env| async move {
        use crate::harness::process::{start_resolver, start_runner};

        let (port, seen) = http_receiver(0);
        let key_file = env.path("secret.key");
        let key_file_text = key_file.display().to_string();
        let with_key = [
            ("DATAJUMP_SECRET_KEY_FILE", key_file_text.as_str()),
            ("HOOK_TOKEN", TOKEN),
        ];

        // No key yet: stored as given, and the command says so.
        let (ok, _, stderr) = run_cli(
            &env,
            &["secret", "set", "hook_token", "--value-env", "HOOK_TOKEN"],
            &[("HOOK_TOKEN", TOKEN)],
        )
        .await;
        assert!(ok, "{stderr}");
        assert!(stderr.contains("stored unencrypted"), "{stderr}");
        assert_eq!(stored_value(&env, "hook_token").await, TOKEN);

        // rotate-key creates the key file and seals what was plain.
        let (ok, stdout, stderr) = run_cli(&env, &["secret", "rotate-key"], &with_key).await;
        assert!(ok, "{stderr}");
        assert!(stdout.contains("re-sealed 1 secret(s)"), "{stdout}");
        let sealed = stored_value(&env, "hook_token").await;
        assert!(
            sealed.starts_with("dj1:") && !sealed.contains(TOKEN),
            "{sealed}"
        );
        let first_key = std::fs::read_to_string(&key_file).expect("key file");

        // A runner with the key sends the real value.
        env.apply(&format!(
            r#"
name: notify
tasks:
  - name: call
    type: HTTP
    retry: {{ max: 0 }}
    content:
      url: http://127.0.0.1:{port}/hook
      headers: {{ Authorization: "Bearer ${{secret:hook_token}}" }}
"#
        ))
        .await;
        let _resolver = start_resolver(&env, "resolver").await;
        {
            let _runner = start_runner(&env, "runner", 1, &with_key).await;
            env.run_to_end("notify", RunStatus::Success, TIMEOUT).await;
        }
        let requests = seen.lock().expect("requests").clone();
        assert!(
            requests.last().is_some_and(|r| r
                .headers
                .iter()
                .any(|h| h.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}")))),
            "{requests:?}"
        );

        // Rotated again, the value is sealed under a new key; a runner still
        // holding the old one fails the attempt, saying why, without retrying.
        let (ok, _, stderr) = run_cli(&env, &["secret", "rotate-key"], &with_key).await;
        assert!(ok, "{stderr}");
        assert_ne!(
            std::fs::read_to_string(&key_file).expect("key file"),
            first_key
        );
        assert_ne!(stored_value(&env, "hook_token").await, sealed);
        let old_key_file = env.path("old.key");
        std::fs::write(&old_key_file, &first_key).expect("old key");
        let old_key_text = old_key_file.display().to_string();
        let _stale = start_runner(
            &env,
            "stale-runner",
            1,
            &[("DATAJUMP_SECRET_KEY_FILE", old_key_text.as_str())],
        )
        .await;
        let run = env.run_to_end("notify", RunStatus::Failed, TIMEOUT).await;
        let instances = env.instances_by_name(run.id).await;
        let reason = instances["call"].reason.clone().unwrap_or_default();
        assert!(reason.contains("cannot be decrypted"), "{reason}");
        assert!(!reason.contains(TOKEN));
    }
);
