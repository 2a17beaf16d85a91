//! A three-node `nats-server` cluster of a test's own, on loopback with free
//! ports and temporary stores, to lose nodes under DataJump: each node is
//! its own process with its own `server_name`, client, route and monitoring
//! ports, as `nats/config/cluster/` lays one out.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use tempfile::TempDir;

use super::{free_port, nats_binary};

/// How long a node, or the cluster, may take to become healthy.
const HEALTHY_WITHIN: Duration = Duration::from_secs(60);

/// One node: its ports and, while it runs, its process.
struct Node {
    name: String,
    client: u16,
    monitor: u16,
    config: PathBuf,
    child: Option<Child>,
}

/// A JetStream cluster of three nodes, killed on drop.
pub struct NatsCluster {
    nodes: Vec<Node>,
    dir: TempDir,
}

impl NatsCluster {
    /// Starts three nodes and waits until each is healthy: every node
    /// answers `/healthz` and the JetStream meta leader has every peer current.
    pub fn start() -> NatsCluster {
        let dir = tempfile::tempdir().expect("temporary directory");
        let routes: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let route_list = routes
            .iter()
            .map(|port| format!("nats-route://127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(", ");
        let nodes = routes
            .iter()
            .enumerate()
            .map(|(i, route)| {
                let name = format!("n{i}");
                let (client, monitor) = (free_port(), free_port());
                let config = dir.path().join(format!("{name}.conf"));
                let store = dir.path().join(&name);
                std::fs::write(
                    &config,
                    format!(
                        "server_name: {name}\nlisten: 127.0.0.1:{client}\nhttp: 127.0.0.1:{monitor}\n\
                         jetstream {{ store_dir: \"{}\" }}\n\
                         cluster {{ name: dj-test, listen: 127.0.0.1:{route}, routes: [{route_list}] }}\n",
                        store.display()
                    ),
                )
                .expect("node configuration");
                Node {
                    name,
                    client,
                    monitor,
                    config,
                    child: None,
                }
            })
            .collect();
        let mut cluster = NatsCluster { nodes, dir };
        for node in 0..3 {
            cluster.spawn(node);
        }
        cluster.wait_healthy();
        cluster
    }

    fn spawn(&mut self, node: usize) {
        let log = self.log_path(node);
        let node = &mut self.nodes[node];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("node log");
        let child = Command::new(nats_binary())
            .arg("-c")
            .arg(&node.config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start nats-server {}: {e}", node.name));
        node.child = Some(child);
    }

    fn log_path(&self, node: usize) -> PathBuf {
        self.dir
            .path()
            .join(format!("{}.log", self.nodes[node].name))
    }

    /// Every node's client URL, comma-separated, as DataJump takes them.
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|node| format!("nats://127.0.0.1:{}", node.client))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The node named `name` (`n0`…`n2`).
    pub fn node(&self, name: &str) -> usize {
        self.nodes
            .iter()
            .position(|node| node.name == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    /// Kills a node with SIGKILL, as a crash would.
    pub fn kill9(&mut self, node: usize) {
        if let Some(mut child) = self.nodes[node].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a killed node again on its ports and store, and waits until
    /// the cluster is healthy again (the rolling-restart rule: a node is
    /// caught up before the next one goes).
    pub fn restart(&mut self, node: usize) {
        self.kill9(node);
        self.spawn(node);
        self.wait_healthy();
    }

    /// Stops a node with SIGSTOP (hung, not dead) or resumes it (SIGCONT).
    pub fn signal(&self, node: usize, signal: Signal) {
        let child = self.nodes[node].child.as_ref().expect("a running node");
        let pid = i32::try_from(child.id()).expect("pid");
        kill(Pid::from_raw(pid), signal).expect("signal the node");
    }

    /// Waits until every running node answers `/healthz` with ok and the
    /// JetStream meta leader counts every other node current.
    pub fn wait_healthy(&self) {
        let deadline = Instant::now() + HEALTHY_WITHIN;
        loop {
            let running: Vec<&Node> = self.nodes.iter().filter(|n| n.child.is_some()).collect();
            let healthy = running
                .iter()
                .all(|node| get(node.monitor, "/healthz").is_some_and(|h| h["status"] == "ok"));
            // Until the meta leader has heard from every peer it refuses to
            // place replicated streams ("no suitable peers for placement,
            // peer offline"), so a leader alone is not ready.
            let others = self.nodes.len() - 1;
            let leader = running.iter().any(|node| {
                get(node.monitor, "/jsz").is_some_and(|jsz| {
                    let meta = &jsz["meta_cluster"];
                    meta["leader"] == node.name.as_str()
                        && meta["replicas"].as_array().is_some_and(|peers| {
                            peers.len() == others && peers.iter().all(|p| p["current"] == true)
                        })
                })
            });
            if healthy && leader {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the NATS cluster is not healthy after {HEALTHY_WITHIN:?}:\n{}",
                self.logs_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The node leading a stream's RAFT group, as the running nodes' `/jsz`
    /// reports it.
    pub fn stream_leader(&self, stream: &str) -> Option<String> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .find_map(|node| {
                let jsz = get(node.monitor, "/jsz?streams=true")?;
                jsz["account_details"]
                    .as_array()?
                    .iter()
                    .flat_map(|account| account["stream_detail"].as_array().into_iter().flatten())
                    .find(|detail| detail["name"] == stream)
                    .and_then(|detail| detail["cluster"]["leader"].as_str().map(str::to_owned))
            })
    }

    /// The node leading the most streams and consumers (ties go to the
    /// first), as a running node's `/jsz` reports them: the one whose loss
    /// moves the most leaders at once.
    pub fn busiest_node(&self) -> Option<String> {
        let jsz = self
            .nodes
            .iter()
            .filter(|n| n.child.is_some())
            .find_map(|node| get(node.monitor, "/jsz?streams=true&consumers=true"))?;
        let mut leads: std::collections::BTreeMap<String, usize> =
            std::collections::BTreeMap::new();
        for stream in jsz["account_details"]
            .as_array()?
            .iter()
            .flat_map(|account| account["stream_detail"].as_array().into_iter().flatten())
        {
            let consumers = stream["consumer_detail"].as_array().into_iter().flatten();
            for leader in std::iter::once(stream)
                .chain(consumers)
                .filter_map(|detail| detail["cluster"]["leader"].as_str())
            {
                *leads.entry(leader.to_owned()).or_default() += 1;
            }
        }
        let most = leads.values().copied().max()?;
        leads
            .into_iter()
            .find(|(_, count)| *count == most)
            .map(|(node, _)| node)
    }

    /// The end of every node's log, for a failing assertion.
    pub fn logs_tail(&self) -> String {
        (0..self.nodes.len())
            .map(|node| {
                let text = std::fs::read_to_string(self.log_path(node)).unwrap_or_default();
                let start = text.len().saturating_sub(2000);
                let tail = text.get(start..).unwrap_or_default();
                format!("--- {} ---\n{tail}", self.nodes[node].name)
            })
            .collect()
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for node in 0..self.nodes.len() {
            // A stopped node cannot die of SIGKILL until it is resumed.
            if let Some(child) = &self.nodes[node].child
                && let Ok(pid) = i32::try_from(child.id())
            {
                let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
            }
            self.kill9(node);
        }
    }
}

/// `GET http://127.0.0.1:<port><path>` of a node's monitoring port as JSON;
/// `None` when it does not answer (a killed or stopped node).
fn get(port: u16, path: &str) -> Option<Value> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (_, body) = answer.split_once("\r\n\r\n")?;
    serde_json::from_str(body).ok()
}
