//! Where an HTTP task may connect.
//!
//! A task's URL is written by whoever may change a DAG, and the runner sits
//! inside the network: without a rule, an HTTP task is a way to reach the
//! cloud's instance-metadata service (credentials of the host's role) or
//! the DataJump API from the inside. So HTTP tasks may not reach
//! link-local addresses (`169.254.0.0/16`, `fe80::/10`, where metadata
//! services live, and `100.100.100.200`, Alibaba Cloud's) nor the API's own
//! address, unless the runner allows them by name, address or network with
//! `--http-allow`. Names are checked as the connection resolves them
//! ([`NetworkPolicy::resolver`]), so a name that resolves to a forbidden
//! address is refused however it is reached (a redirect included); a URL
//! naming an address is checked before it is requested and at each
//! redirect.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use thiserror::Error;

/// Why `--http-allow` could not be read.
#[derive(Debug, Error)]
#[error("--http-allow: '{0}' is not a host name, an address or a network such as 10.0.0.0/8")]
pub struct InvalidAllow(pub String);

/// The rule for HTTP tasks' destinations. `Default` forbids link-local and
/// metadata addresses and knows no API address.
#[derive(Debug, Clone, Default)]
pub struct NetworkPolicy {
    /// The API's host (lower case) and port, from `DATAJUMP_API_URL`.
    api: Option<(String, u16)>,
    /// Host names allowed whatever they resolve to.
    allowed_hosts: BTreeSet<String>,
    /// Addresses and networks allowed.
    allowed_nets: Vec<IpNet>,
}

/// Whether `ip` is where metadata services answer: link-local, or
/// Alibaba Cloud's metadata address.
fn is_metadata(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local() || v4 == Ipv4Addr::new(100, 100, 100, 200),
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_metadata(IpAddr::V4(v4)))
        }
    }
}

impl NetworkPolicy {
    /// The rule for a runner whose API is at `api_url` (its address is
    /// forbidden) and which allows `allow`: host names, addresses and
    /// networks in CIDR form.
    ///
    /// # Errors
    ///
    /// [`InvalidAllow`] for an entry that is none of those.
    pub fn new(api_url: Option<&str>, allow: &[String]) -> Result<NetworkPolicy, InvalidAllow> {
        let mut policy = NetworkPolicy {
            api: api_url
                .and_then(|url| Url::parse(url).ok())
                .and_then(|url| {
                    let port = url.port_or_known_default()?;
                    Some((url.host_str()?.to_ascii_lowercase(), port))
                }),
            ..NetworkPolicy::default()
        };
        for entry in allow.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if let Ok(net) = entry.parse::<IpNet>() {
                policy.allowed_nets.push(net);
            } else if let Ok(ip) = entry.parse::<IpAddr>() {
                policy.allowed_nets.push(IpNet::from(ip));
            } else if entry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
            {
                policy.allowed_hosts.insert(entry.to_ascii_lowercase());
            } else {
                return Err(InvalidAllow(entry.to_owned()));
            }
        }
        Ok(policy)
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        !is_metadata(ip) || self.allowed_nets.iter().any(|net| net.contains(&ip))
    }

    /// Why `url` may not be requested, if it may not: a forbidden address
    /// written in it, or the API's own host and port.
    pub fn url_problem(&self, url: &Url) -> Option<String> {
        let host = url.host_str()?.to_ascii_lowercase();
        if self.allowed_hosts.contains(&host) {
            return None;
        }
        let literal = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        if let Some(ip) = literal
            && !self.allows_ip(ip)
        {
            return Some(format!(
                "HTTP tasks may not reach {ip}, a link-local or cloud-metadata address \
                 (allow it on the runner with --http-allow {ip})"
            ));
        }
        let port = url.port_or_known_default()?;
        if let Some((api_host, api_port)) = &self.api
            && port == *api_port
            && !literal.is_some_and(|ip| self.allowed_nets.iter().any(|net| net.contains(&ip)))
        {
            let loopback = |h: &str| {
                h == "localhost"
                    || h.trim_start_matches('[')
                        .trim_end_matches(']')
                        .parse::<IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            };
            if host == *api_host || (loopback(&host) && loopback(api_host)) {
                return Some(format!(
                    "HTTP tasks may not call the DataJump API itself ({host}:{port}): a task \
                     would act with the runner's network position (allow it on the runner with \
                     --http-allow {host})"
                ));
            }
        }
        None
    }

    /// A resolver for the HTTP client that drops forbidden addresses from
    /// every lookup (a name allowed by `--http-allow` keeps them), and fails
    /// the lookup when nothing is left.
    pub fn resolver(self: &Arc<Self>) -> Arc<FilteringResolver> {
        Arc::new(FilteringResolver(self.clone()))
    }
}

/// The system resolver, minus the addresses a [`NetworkPolicy`] forbids.
#[derive(Debug)]
pub struct FilteringResolver(Arc<NetworkPolicy>);

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if policy.allowed_hosts.contains(&host.to_ascii_lowercase()) {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let kept: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|addr| policy.allows_ip(addr.ip()))
                .collect();
            if kept.is_empty() && !found.is_empty() {
                return Err(format!(
                    "{host} resolves only to link-local or cloud-metadata addresses, which HTTP \
                     tasks may not reach (allow it on the runner with --http-allow {host})"
                )
                .into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a URL")
    }

    #[test]
    fn metadata_and_the_api_are_refused_unless_allowed() {
        let policy = NetworkPolicy::new(Some("http://127.0.0.1:8080"), &[]).expect("a policy");
        for bad in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://100.100.100.200/",
            "http://127.0.0.1:8080/api/v1/dags",
            "http://localhost:8080/api/v1/dags",
            "http://[::1]:8080/",
        ] {
            assert!(policy.url_problem(&url(bad)).is_some(), "{bad} allowed");
        }
        for ok in [
            "http://127.0.0.1:9000/",
            "https://example.com/",
            "http://10.0.0.5/",
        ] {
            assert!(policy.url_problem(&url(ok)).is_none(), "{ok} refused");
        }
        let allowing = NetworkPolicy::new(
            Some("http://127.0.0.1:8080"),
            &["169.254.0.0/16".to_owned(), "localhost".to_owned()],
        )
        .expect("a policy");
        assert!(
            allowing
                .url_problem(&url("http://169.254.169.254/"))
                .is_none()
        );
        assert!(
            allowing
                .url_problem(&url("http://localhost:8080/"))
                .is_none()
        );
        assert!(NetworkPolicy::new(None, &["a b".to_owned()]).is_err());
    }
}
