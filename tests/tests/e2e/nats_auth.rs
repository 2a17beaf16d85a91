//! NATS locked down with the shipped `nats/config/secured.conf`: the whole
//! system (`datajump up`, a real process) runs as the `datajump` user with
//! its password from the environment, an anonymous client is refused, and
//! the `producer` user can announce an event that starts its DAG but cannot
//! publish work — with no permission violation of DataJump's own in the
//! server's log.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::free_port;

const DATAJUMP: &str = env!("CARGO_BIN_EXE_datajump-under-test");
const TIMEOUT: Duration = Duration::from_secs(60);
const PASSWORD: &str = "dj-nats-pw-7d1e";
const PRODUCER_PASSWORD: &str = "producer-pw-93ab";

/// A child process killed on drop.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts nats-server with the shipped secured configuration, moved to a
/// free port and a private store.
fn secured_nats(dir: &Path) -> (Killed, u16) {
    shipped_nats(
        dir,
        "secured.conf",
        &[
            ("DJ_NATS_PASSWORD", PASSWORD),
            ("DJ_PRODUCER_PASSWORD", PRODUCER_PASSWORD),
        ],
    )
}

/// Starts nats-server with the shipped `nats/config/<file>`, moved to a
/// free port and a private store, with `passwords` in its environment.
pub(crate) fn shipped_nats(dir: &Path, file: &str, passwords: &[(&str, &str)]) -> (Killed, u16) {
    let shipped = std::fs::read_to_string(format!(
        "{}/../nats/config/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("nats/config/{file}: {e}"));
    let port = free_port();
    let config: String = shipped
        .lines()
        .map(|line| {
            if line.starts_with("listen:") {
                format!("listen: 127.0.0.1:{port}")
            } else if line.starts_with("http:") {
                String::new()
            } else if line.trim_start().starts_with("store_dir:") {
                format!("  store_dir: \"{}\"", dir.join("js").display())
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.join("nats.conf");
    std::fs::write(&path, config).expect("write the config");
    let log = std::fs::File::create(dir.join("nats.log")).expect("log");
    let binary =
        std::env::var("DATAJUMP_TEST_NATS_SERVER").unwrap_or_else(|_| "nats-server".to_owned());
    let child = Command::new(binary)
        .arg("-c")
        .arg(&path)
        .envs(passwords.iter().copied())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start nats-server");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nats-server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    (Killed(child), port)
}

/// `datajump ARGS` against the system, as the `datajump` NATS user.
fn datajump(dir: &Path, nats_url: &str, api_url: &str) -> Command {
    datajump_as(dir, nats_url, api_url, "datajump", PASSWORD)
}

/// `datajump ARGS` against the system, as NATS user `user`.
pub(crate) fn datajump_as(
    dir: &Path,
    nats_url: &str,
    api_url: &str,
    user: &str,
    password: &str,
) -> Command {
    let mut command = Command::new(DATAJUMP);
    command
        .env(
            "DATAJUMP_DATABASE_URL",
            format!("sqlite://{}?mode=rwc", dir.join("dj.db").display()),
        )
        .env("DATAJUMP_NATS_URL", nats_url)
        .env("DATAJUMP_API_URL", api_url)
        .env("DATAJUMP_DATA_DIR", dir.join("data"))
        .env("DATAJUMP_NATS_USER", user)
        .env("DATAJUMP_NATS_PASSWORD", password)
        .env(
            "DATAJUMP_LOG",
            "info,sqlx=warn,async_nats=warn,sea_orm=warn",
        )
        .env_remove("DATAJUMP_API_TOKEN");
    command
}

/// Whether JetStream stores a work message `client` publishes (a user
/// without the right is refused by the server and gets no ack).
pub(crate) async fn stores_work(client: &async_nats::Client) -> bool {
    let forged = async_nats::jetstream::new(client.clone())
        .publish("dj.work.default.p10", b"{}".as_slice().into())
        .await;
    match forged {
        Ok(ack) => tokio::time::timeout(Duration::from_secs(5), ack)
            .await
            .is_ok_and(|ack| ack.is_ok()),
        Err(_) => false,
    }
}

/// Waits until `check` is true, or fails with `what`.
pub(crate) async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut check: impl FnMut() -> F,
) {
    let deadline = Instant::now() + TIMEOUT;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_down_nats_runs_everything_and_refuses_the_rest() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let dir = dir.path();
    let (_nats, port) = secured_nats(dir);
    let nats_url = format!("nats://127.0.0.1:{port}");
    let api_port = free_port();
    let api_url = format!("http://127.0.0.1:{api_port}");
    let dags = dir.join("dags");
    std::fs::create_dir_all(&dags).expect("dags folder");
    std::fs::write(
        dags.join("nightly.yaml"),
        format!(
            "name: nightly\ntasks:\n  - {{ name: first, command: 'test -f {marker} || {{ touch {marker}; exit 1; }}', retry: {{ max: 2, interval: 1 }} }}\n  - {{ name: second, command: 'echo done', depends_on: [first] }}\n",
            // In the test's own folder: the runner's working directory is
            // the source tree, and a marker left there made the next run's
            // first attempt succeed.
            marker = dir.join("retried").display()
        ),
    )
    .expect("write a DAG");
    std::fs::write(
        dags.join("on_orders.yaml"),
        "name: on_orders\nschedules: [{ event: orders.ready }]\ntasks:\n  - { name: load, command: 'echo \"loading $DJ_PARAM_TABLE\"' }\n",
    )
    .expect("write a DAG");

    let up_log = std::fs::File::create(dir.join("up.log")).expect("log");
    let _up = Killed(
        datajump(dir, &nats_url, &api_url)
            .current_dir(dir)
            .args(["up", "--dags"])
            .arg(&dags)
            .args(["--api-addr", &format!("127.0.0.1:{api_port}")])
            .stdout(up_log.try_clone().expect("log"))
            .stderr(up_log)
            .spawn()
            .expect("start datajump up"),
    );
    let http = reqwest::Client::new();
    eventually("the API never became ready", || async {
        http.get(format!("{api_url}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    })
    .await;

    // A run with a retry, through the locked-down NATS.
    let triggered = datajump(dir, &nats_url, &api_url)
        .args(["trigger", "nightly", "--wait"])
        .output()
        .expect("trigger");
    assert!(
        triggered.status.success(),
        "{}\n{}\n{}",
        String::from_utf8_lossy(&triggered.stdout),
        String::from_utf8_lossy(&triggered.stderr),
        std::fs::read_to_string(dir.join("up.log")).unwrap_or_default()
    );

    // Nobody gets in without a password.
    let anonymous = async_nats::connect(&nats_url).await;
    assert!(anonymous.is_err(), "an anonymous client was let in");

    // The producer announces an event, which starts its DAG.
    let producer = async_nats::ConnectOptions::with_user_and_password(
        "producer".to_owned(),
        PRODUCER_PASSWORD.to_owned(),
    )
    .connect(&nats_url)
    .await
    .expect("the producer connects");
    let js = async_nats::jetstream::new(producer.clone());
    js.publish("dj.event.orders.ready", r#"{"table":"orders"}"#.into())
        .await
        .expect("publish the event")
        .await
        .expect("JetStream stored the event");
    eventually("the event's DAG did not run", || async {
        let out = datajump(dir, &nats_url, &api_url)
            .args(["runs", "on_orders", "--json"])
            .output()
            .expect("runs");
        let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        runs.get(0).is_some_and(|run| run["status"] == "SUCCESS")
    })
    .await;

    // It may not publish work (or fires, completions, kills).
    assert!(!stores_work(&producer).await, "the producer published work");
    let server_log = std::fs::read_to_string(dir.join("nats.log")).unwrap_or_default();
    // 2.9 logs `Publish Violation - User "producer", Subject "…"`.
    assert!(
        server_log.lines().any(|l| l.contains("Violation")
            && l.contains("producer")
            && l.contains("dj.work.default.p10")),
        "{server_log}"
    );
    let violations: Vec<&str> = server_log
        .lines()
        .filter(|l| l.contains("Violation") && l.contains("\"datajump\""))
        .collect();
    assert!(
        violations.is_empty(),
        "DataJump hit permission violations: {violations:#?}"
    );
}
