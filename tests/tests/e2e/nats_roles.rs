//! NATS with one user per role (the shipped `nats/config/roles.conf`):
//! real `datajump` processes, each role as its own user, run the scenario
//! set — a run with a retry, `logs --follow`, a kill, a cron fire, an event
//! from the producer, an alert — and the server logs no permission
//! violation by any of them; a role's user cannot create the topology, and
//! users without the right cannot publish work.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::harness::{free_port, http_receiver};
use crate::nats_auth::{Killed, datajump_as, eventually, shipped_nats, stores_work};

/// Every user of roles.conf, with its password.
const USERS: [(&str, &str, &str); 7] = [
    ("dj-admin", "DJ_ADMIN_PASSWORD", "admin-pw-1"),
    ("dj-ticker", "DJ_TICKER_PASSWORD", "ticker-pw-2"),
    ("dj-resolver", "DJ_RESOLVER_PASSWORD", "resolver-pw-3"),
    ("dj-runner", "DJ_RUNNER_PASSWORD", "runner-pw-4"),
    ("dj-api", "DJ_API_PASSWORD", "api-pw-5"),
    ("dj-operator", "DJ_OPERATOR_PASSWORD", "operator-pw-6"),
    ("producer", "DJ_PRODUCER_PASSWORD", "producer-pw-7"),
];

fn password(user: &str) -> &'static str {
    USERS
        .iter()
        .find(|(name, _, _)| *name == user)
        .map(|(_, _, password)| *password)
        .unwrap_or_else(|| panic!("no user {user}"))
}

/// The system as seen from one test: where things are, and a `datajump`
/// command as any user.
struct System<'a> {
    dir: &'a Path,
    nats_url: String,
    api_url: String,
}

impl System<'_> {
    fn datajump(&self, user: &str) -> Command {
        datajump_as(
            self.dir,
            &self.nats_url,
            &self.api_url,
            user,
            password(user),
        )
    }

    /// Starts a role process as `user`, logging to `<name>.log`.
    fn start(&self, name: &str, user: &str, args: &[&str]) -> Killed {
        let log = std::fs::File::create(self.dir.join(format!("{name}.log"))).expect("log");
        Killed(
            self.datajump(user)
                .args(args)
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("start {name}: {e}")),
        )
    }

    /// Runs `datajump ARGS` as `user`; returns (success, stdout + stderr).
    fn run(&self, user: &str, args: &[&str]) -> (bool, String) {
        let out = self
            .datajump(user)
            .args(args)
            .output()
            .expect("run datajump");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// `datajump runs DAG --json`.
    fn runs(&self, dag: &str) -> Value {
        let (_, out) = self.run("dj-operator", &["runs", dag, "--json"]);
        serde_json::from_str(out.trim()).unwrap_or_default()
    }

    fn logs(&self) -> String {
        ["api", "ticker", "resolver", "runner"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(self.dir.join(format!("{name}.log")))
                    .unwrap_or_default();
                format!("--- {name}\n{text}")
            })
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_role_runs_as_its_own_nats_user_without_a_violation() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let dir = dir.path();
    let passwords: Vec<(&str, &str)> = USERS.iter().map(|(_, env, pw)| (*env, *pw)).collect();
    let (_nats, port) = shipped_nats(dir, "roles.conf", &passwords);
    let api_port = free_port();
    let system = System {
        dir,
        nats_url: format!("nats://127.0.0.1:{port}"),
        api_url: format!("http://127.0.0.1:{api_port}"),
    };

    let (ok, out) = system.run("dj-admin", &["migrate"]);
    assert!(ok, "{out}");
    // A role's user may not create streams: the runner says what to do.
    let (ok, out) = system.run("dj-runner", &["runner"]);
    assert!(
        !ok && out.contains("datajump topology apply"),
        "a runner started on an empty server: {out}"
    );
    let (ok, out) = system.run("dj-admin", &["topology", "check"]);
    assert!(
        !ok && out.contains("DJ_WORK") && out.contains("missing"),
        "{out}"
    );
    let (ok, out) = system.run("dj-admin", &["topology", "apply"]);
    assert!(ok, "{out}");
    let (ok, out) = system.run("dj-admin", &["topology", "check"]);
    assert!(ok && out.contains("as DataJump expects"), "{out}");

    let _api = system.start(
        "api",
        "dj-api",
        &["api", "--addr", &format!("127.0.0.1:{api_port}")],
    );
    let _ticker = system.start("ticker", "dj-ticker", &["ticker"]);
    let _resolver = system.start("resolver", "dj-resolver", &["resolver"]);
    let _runner = system.start("runner", "dj-runner", &["runner"]);
    let http = reqwest::Client::new();
    eventually("the API never became ready", || async {
        http.get(format!("{}/readyz", system.api_url))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    })
    .await;

    let (hook_port, hooks) = http_receiver(0);
    let dags = dir.join("dags");
    std::fs::create_dir_all(&dags).expect("dags folder");
    for (file, text) in [
        (
            "nightly.yaml",
            format!(
            "name: nightly\ntasks:\n  - {{ name: first, command: 'test -f {marker} || {{ touch {marker}; exit 1; }}', retry: {{ max: 2, interval: 1 }} }}\n  - {{ name: second, command: 'echo done', depends_on: [first] }}\n",
            // In the test's own folder: the runner's working directory is
            // the source tree, and a marker left there made the next run's
            // first attempt succeed.
            marker = dir.join("retried").display()
        ),
        ),
        (
            "sleeper.yaml",
            "name: sleeper\ntasks:\n  - { name: nap, command: 'echo napping; sleep 120' }\n".to_owned(),
        ),
        (
            "ticking.yaml",
            "name: ticking\nmax_active_runs: 100\noverlap: parallel\nschedules: [{ cron: '*/2 * * * * ?' }]\ntasks:\n  - { name: tick, command: 'true' }\n".to_owned(),
        ),
        (
            "on_orders.yaml",
            "name: on_orders\nschedules: [{ event: orders.ready }]\ntasks:\n  - { name: load, command: 'echo \"loading $DJ_PARAM_TABLE\"' }\n".to_owned(),
        ),
        (
            "writes_orders.yaml",
            "name: writes_orders\ntasks:\n  - { name: load, command: 'true', outputs: ['ods.orders/${bizdate}'] }\n".to_owned(),
        ),
        (
            "on_data.yaml",
            "name: on_data\nschedules: [{ on: { all: [ods.orders, ref.rates] } }]\ntasks:\n  - { name: build, command: 'echo \"building $DJ_BIZ_DATE\"' }\n".to_owned(),
        ),
        (
            "broken.yaml",
            format!("name: broken\nalerts:\n  webhooks: [{{ url: 'http://127.0.0.1:{hook_port}/hook' }}]\n  on: [run_failed]\ntasks:\n  - {{ name: fails, command: 'exit 3', retry: {{ max: 0 }} }}\n"),
        ),
    ] {
        std::fs::write(dags.join(file), text).expect("write a DAG");
    }
    let (ok, out) = system.run(
        "dj-operator",
        &["dag", "apply", "-f", dags.to_str().expect("utf-8")],
    );
    assert!(ok, "{out}");

    // A run with a retry.
    let (ok, out) = system.run("dj-operator", &["trigger", "nightly", "--wait"]);
    assert!(ok, "{out}\n{}", system.logs());

    // `logs --follow` (live lines through NATS as dj-operator), then a kill.
    let (ok, out) = system.run("dj-operator", &["trigger", "sleeper"]);
    assert!(ok, "{out}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let instance = loop {
        let running = system.runs("sleeper")[0]["taskInstances"][0].clone();
        if running["status"] == "RUNNING" {
            break running["id"].to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sleeper never started: {running}\n{}",
            system.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let follow_log = std::fs::File::create(dir.join("follow.log")).expect("log");
    let mut follow = system
        .datajump("dj-operator")
        .args(["logs", &instance, "--follow"])
        .stdout(follow_log)
        .stderr(Stdio::null())
        .spawn()
        .expect("logs --follow");
    eventually("logs --follow printed nothing", || async {
        std::fs::read_to_string(dir.join("follow.log")).is_ok_and(|t| t.contains("napping"))
    })
    .await;
    let (ok, out) = system.run("dj-operator", &["kill", &instance]);
    assert!(ok, "{out}");
    eventually("the killed task did not end", || async {
        system.runs("sleeper")[0]["taskInstances"][0]["status"] == "KILLED"
    })
    .await;
    let _ = follow.kill();
    let _ = follow.wait();

    // Cron fires from the ticker.
    eventually("the ticker fired nothing", || async {
        system.runs("ticking")[0]["status"] == "SUCCESS"
    })
    .await;

    // An event from the producer.
    let producer = async_nats::ConnectOptions::with_user_and_password(
        "producer".to_owned(),
        password("producer").to_owned(),
    )
    .connect(&system.nats_url)
    .await
    .expect("the producer connects");
    let js = async_nats::jetstream::new(producer.clone());
    js.publish("dj.event.orders.ready", r#"{"table":"orders"}"#.into())
        .await
        .expect("publish the event")
        .await
        .expect("JetStream stored the event");
    eventually("the event's DAG did not run", || async {
        system.runs("on_orders")[0]["status"] == "SUCCESS"
    })
    .await;

    // A dataset a task wrote (the runner records and publishes it), and
    // one the producer announces: together they start the DAG on both.
    let (ok, out) = system.run("dj-operator", &["trigger", "writes_orders", "--wait"]);
    assert!(ok, "{out}\n{}", system.logs());
    js.publish("dj.dataset.ref.rates", r#"{"metadata":{"rows":3}}"#.into())
        .await
        .expect("publish the dataset")
        .await
        .expect("JetStream stored the dataset");
    eventually("the data-scheduled DAG did not run", || async {
        system.runs("on_data")[0]["status"] == "SUCCESS"
    })
    .await;
    let (ok, out) = system.run("dj-operator", &["dataset", "list"]);
    assert!(
        ok && out.contains("ods.orders")
            && out.contains("writes_orders/load")
            && out.contains("on_data"),
        "{out}"
    );
    let (ok, out) = system.run("dj-operator", &["dataset", "events", "ref.rates"]);
    assert!(
        ok && out.contains("NATS") && out.contains(r#"{"rows":3}"#),
        "{out}"
    );

    // An alert, delivered by the ticker.
    let (ok, out) = system.run("dj-operator", &["trigger", "broken", "--wait"]);
    assert!(!ok, "the broken DAG succeeded: {out}");
    eventually("no alert reached the webhook", || async {
        hooks
            .lock()
            .is_ok_and(|seen| seen.iter().any(|r| r.body["kind"] == "run_failed"))
    })
    .await;

    // Users without the right cannot publish work.
    let operator = async_nats::ConnectOptions::with_user_and_password(
        "dj-operator".to_owned(),
        password("dj-operator").to_owned(),
    )
    .connect(&system.nats_url)
    .await
    .expect("the operator connects");
    for client in [&producer, &operator] {
        assert!(
            !stores_work(client).await,
            "a client without the right published work"
        );
    }

    let server_log = std::fs::read_to_string(dir.join("nats.log")).unwrap_or_default();
    let violations: Vec<&str> = server_log
        .lines()
        .filter(|l| l.contains("Violation"))
        .filter(|l| {
            [
                "dj-admin",
                "dj-ticker",
                "dj-resolver",
                "dj-runner",
                "dj-api",
            ]
            .iter()
            .any(|user| l.contains(&format!("\"{user}\"")))
        })
        .filter(|l| !l.contains("$JS.API.STREAM.CREATE"))
        .collect();
    assert!(
        violations.is_empty(),
        "DataJump's roles hit permission violations: {violations:#?}\n{}",
        system.logs()
    );
    assert!(
        server_log.lines().any(|l| l.contains("Violation")
            && l.contains("dj-operator")
            && l.contains("dj.work.default.p10")),
        "{server_log}"
    );
}
