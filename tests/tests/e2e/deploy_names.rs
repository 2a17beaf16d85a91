//! The names `deploy/` writes by hand, checked against the code that makes
//! them, so neither can drift: every stream and consumer a KEDA trigger
//! reads is one the installation's `--nats-prefix` (the ConfigMap's
//! `DATAJUMP_NATS_PREFIX`) and [`subjects::runner_consumer`] name, for the
//! queue of the Deployment it scales, all ten priorities of it; the queues
//! the topology Job creates cover every runner Deployment's; the backlog
//! query names that queue; each Deployment's probes and metrics port are
//! the port of the ConfigMap's `DATAJUMP_METRICS_ADDR`; and the dashboard's
//! work stream is the same stream. (The metric names these files mention are
//! checked against a live scrape in `dashboard.rs`; the files' schemas and
//! links between them in `scripts/check-deploy.sh`.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use datajump_shared::subjects::{self, Namespace, Priority, Stream};
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

/// Every object of every manifest under `deploy/kubernetes`, with its file.
fn objects() -> Vec<(String, Value)> {
    let mut objects = Vec::new();
    let mut dirs = vec![deploy_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("deploy/kubernetes") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml")
                && path.file_name().is_some_and(|n| n != "kustomization.yaml")
            {
                let text = std::fs::read_to_string(&path).expect("a manifest");
                for document in serde_yaml_ng::Deserializer::from_str(&text) {
                    let value: Value = serde::Deserialize::deserialize(document)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    if !value.is_null() {
                        objects.push((path.display().to_string(), value));
                    }
                }
            }
        }
    }
    objects
}

fn of_kind<'a>(objects: &'a [(String, Value)], kind: &str) -> Vec<&'a (String, Value)> {
    objects.iter().filter(|(_, o)| o["kind"] == kind).collect()
}

/// The value after `flag` in a container's `args`.
fn flag<'a>(args: &'a Value, flag: &str) -> Option<&'a str> {
    let args = args.as_array()?;
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1)?.as_str()
}

fn dashboard() -> Value {
    serde_json::from_str(include_str!("../../../deploy/grafana/datajump.json"))
        .expect("the dashboard")
}

#[test]
fn deploy_files_name_what_the_code_names() {
    check(&objects(), &dashboard());
}

/// Another prefix in the ConfigMap, the rest unchanged: the check now
/// fails on the streams the files name, so it follows the prefix rather
/// than a constant.
#[test]
fn a_prefix_the_files_do_not_follow_is_caught() {
    let mut objects = objects();
    let (_, config) = objects
        .iter_mut()
        .find(|(_, o)| o["kind"] == "ConfigMap")
        .expect("the ConfigMap");
    config["data"]["DATAJUMP_NATS_PREFIX"] = "team2".into();
    let dashboard = dashboard();
    let failure = std::panic::catch_unwind(|| check(&objects, &dashboard))
        .expect_err("DJ_WORK under prefix team2 is drift");
    let message = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("TEAM2_WORK"), "{message}");
}

fn check(objects: &[(String, Value)], dashboard: &Value) {
    let config = of_kind(objects, "ConfigMap")
        .into_iter()
        .find(|(_, o)| o["metadata"]["name"] == "datajump")
        .expect("the datajump ConfigMap");
    let data = &config.1["data"];
    let prefix = data["DATAJUMP_NATS_PREFIX"]
        .as_str()
        .expect("a NATS prefix");
    let names = Namespace::new(prefix).unwrap_or_else(|e| panic!("prefix {prefix:?}: {e:?}"));
    let work = names.stream(Stream::Work);
    let metrics_port: u64 = data["DATAJUMP_METRICS_ADDR"]
        .as_str()
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(_, port)| port.parse().ok())
        .expect("DATAJUMP_METRICS_ADDR is HOST:PORT");

    // Runner Deployments: the queue each serves.
    let mut runner_queues: BTreeMap<String, String> = BTreeMap::new();
    for (file, deployment) in of_kind(objects, "Deployment") {
        let name = deployment["metadata"]["name"].as_str().expect("a name");
        let pod = &deployment["spec"]["template"];
        let container = &pod["spec"]["containers"][0];
        // Every role's probes and scrape annotations use the metrics port,
        // except the API's, which serves probes on its own address.
        let ports: BTreeMap<&str, u64> = container["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().expect("a port name"),
                    p["containerPort"].as_u64().expect("a port"),
                )
            })
            .collect();
        assert_eq!(
            ports.get("metrics"),
            Some(&metrics_port),
            "{file}: {name}'s metrics port"
        );
        assert_eq!(
            pod["metadata"]["annotations"]["prometheus.io/port"],
            metrics_port.to_string(),
            "{file}: {name} is scraped on the metrics port"
        );
        if container["args"][0] == "runner" {
            let queues = flag(&container["args"], "--queues")
                .unwrap_or_else(|| panic!("{file}: {name} names its queue"));
            assert!(
                !queues.contains(','),
                "{file}: one queue per runner Deployment"
            );
            runner_queues.insert(name.to_owned(), queues.to_owned());
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                assert_eq!(
                    container[probe]["httpGet"]["port"], "metrics",
                    "{file}: {probe}"
                );
            }
            assert_eq!(
                container["readinessProbe"]["httpGet"]["path"], "/readyz",
                "{file}"
            );
        }
    }
    assert!(
        runner_queues.len() >= 2,
        "runner Deployments: {runner_queues:?}"
    );

    // The topology Job creates every runner queue's consumers.
    let job = of_kind(objects, "Job")
        .into_iter()
        .find(|(_, o)| o["spec"]["template"]["spec"]["containers"][0]["args"][0] == "topology")
        .expect("the topology Job");
    let created: BTreeSet<&str> = flag(
        &job.1["spec"]["template"]["spec"]["containers"][0]["args"],
        "--queues",
    )
    .map(|q| q.split(',').collect())
    .unwrap_or_default();
    for queue in runner_queues.values() {
        assert!(
            queue == subjects::DEFAULT_QUEUE || created.contains(queue.as_str()),
            "{}: queue {queue} is served by a Deployment but not created by `topology apply --queues`",
            job.0
        );
    }

    // Every ScaledObject reads the consumers of its Deployment's queue.
    let scaled = of_kind(objects, "ScaledObject");
    assert!(!scaled.is_empty());
    for (file, object) in scaled {
        let target = object["spec"]["scaleTargetRef"]["name"]
            .as_str()
            .expect("a scale target");
        let queue = runner_queues
            .get(target)
            .unwrap_or_else(|| panic!("{file}: {target} is not a runner Deployment"));
        let mut consumers = BTreeSet::new();
        for trigger in object["spec"]["triggers"].as_array().expect("triggers") {
            let metadata = &trigger["metadata"];
            match trigger["type"].as_str() {
                Some("nats-jetstream") => {
                    assert_eq!(
                        metadata["stream"],
                        work.as_str(),
                        "{file}: the work stream under prefix {prefix}"
                    );
                    consumers.insert(
                        metadata["consumer"]
                            .as_str()
                            .expect("a consumer")
                            .to_owned(),
                    );
                }
                Some("prometheus") => {
                    let query = metadata["query"].as_str().expect("a query");
                    assert!(
                        query.contains(&format!("queue=\"{queue}\"")),
                        "{file}: {query} is not about queue {queue}"
                    );
                }
                other => panic!("{file}: unexpected trigger {other:?}"),
            }
        }
        if !consumers.is_empty() {
            let expected: BTreeSet<String> = Priority::ALL
                .into_iter()
                .map(|p| subjects::runner_consumer(queue, p))
                .collect();
            assert_eq!(
                consumers, expected,
                "{file}: the consumers of queue {queue}"
            );
        }
    }

    // The dashboard's work stream.
    let stream = dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
        .iter()
        .find(|v| v["name"] == "work_stream")
        .expect("the work_stream variable");
    assert_eq!(stream["query"], work.as_str());
}
