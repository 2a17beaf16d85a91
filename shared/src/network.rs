//! Where DataJump's own outgoing HTTP may connect: HTTP tasks (sent by the
//! runner) and alert webhooks (sent by the ticker) follow one rule, this
//! one (docs/SECURITY.md "HTTP destinations").
//!
//! A task's URL and a webhook's are written by whoever may change a DAG,
//! and the roles sending them sit inside the network: without a rule, a
//! DAG author could reach the cloud's instance-metadata service
//! (credentials of the host's role) or the DataJump API from the inside.
//! So neither may reach link-local addresses (`169.254.0.0/16`,
//! `fe80::/10`, where metadata services live), `100.100.100.200`
//! (Alibaba Cloud's) or `fd00:ec2::254` (AWS's over IPv6), nor any address
//! that lands on the API's listener at its port, unless the role allows
//! them by name, address or network with `--http-allow`.
//!
//! The shaping decision: **the rule is a function of the address and port
//! that are actually dialled.** An address is first read as the IPv4
//! address it stands for (`::ffff:127.0.0.1`, `::127.0.0.1` and
//! `64:ff9b::127.0.0.1` are 127.0.0.1, [`canonical`]). "Lands on the API"
//! means: the API's own address, or — when the API is on this host (its
//! URL names a loopback, unspecified or local address, or `localhost`) —
//! any address of this host ([`is_this_host`]: all of `127.0.0.0/8`, `::1`,
//! `0.0.0.0/8` and `::`, which a connection takes to this host, and every
//! interface address, since the API may listen on all of them), at the
//! API's port. A URL naming an address is checked before it is requested
//! and at each redirect ([`Guard::url_problem`]); a URL naming a host is
//! checked as the connection resolves it ([`Guard`] is the HTTP client's
//! resolver), against every port that name was requested on, so a name or
//! a redirect leading to a forbidden address is refused however it is
//! reached.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use ipnet::IpNet;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use thiserror::Error;

/// Who sends the requests a [`NetworkPolicy`] governs: its messages name
/// them and the role whose `--http-allow` lifts the rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Caller {
    /// HTTP tasks, sent by the runner.
    #[default]
    HttpTask,
    /// Alert webhooks, sent by the ticker (and `datajump alerts test`).
    Webhook,
}

impl Caller {
    /// The requests, as the messages name them.
    pub fn what(self) -> &'static str {
        match self {
            Caller::HttpTask => "HTTP tasks",
            Caller::Webhook => "alert webhooks",
        }
    }

    /// The role whose `--http-allow` allows more.
    pub fn role(self) -> &'static str {
        match self {
            Caller::HttpTask => "runner",
            Caller::Webhook => "ticker",
        }
    }
}

/// Why `--http-allow` could not be read.
#[derive(Debug, Error)]
#[error("--http-allow: '{0}' is not a host name, an address or a network such as 10.0.0.0/8")]
pub struct InvalidAllow(pub String);

/// Why a destination is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refusal {
    /// A link-local or cloud-metadata address.
    #[error(
        "{what} may not reach {ip}, a link-local or cloud-metadata address (allow it on the \
         {role} with --http-allow {ip})",
        what = .caller.what(),
        role = .caller.role()
    )]
    Metadata {
        /// Who asked.
        caller: Caller,
        /// The address.
        ip: IpAddr,
    },
    /// An address and port that land on the DataJump API's listener.
    #[error(
        "{what} may not call the DataJump API itself ({target}): the request would act with \
         the {role}'s network position (allow it on the {role} with --http-allow {allow})",
        what = .caller.what(),
        role = .caller.role()
    )]
    Api {
        /// Who asked.
        caller: Caller,
        /// The host and port as requested.
        target: String,
        /// What `--http-allow` would need to name.
        allow: String,
    },
    /// A name all of whose addresses are refused.
    #[error(
        "{name} resolves only to addresses {what} may not reach (link-local, cloud-metadata or \
         the DataJump API's; allow it on the {role} with --http-allow {name})",
        what = .caller.what(),
        role = .caller.role()
    )]
    Name {
        /// Who asked.
        caller: Caller,
        /// The name.
        name: String,
    },
}

/// Where the API is, from `DATAJUMP_API_URL` (or `up`'s `--api-addr`).
#[derive(Debug, Clone)]
struct Api {
    /// Its host, lower case, without the brackets of an IPv6 address.
    host: String,
    /// Its port.
    port: u16,
}

/// The rule for one role's outgoing HTTP. `Default` forbids link-local and
/// metadata addresses and knows no API address.
#[derive(Debug, Clone, Default)]
pub struct NetworkPolicy {
    /// Who sends.
    caller: Caller,
    /// The API.
    api: Option<Api>,
    /// Host names allowed whatever they resolve to.
    allowed_hosts: BTreeSet<String>,
    /// Addresses and networks allowed.
    allowed_nets: Vec<IpNet>,
}

/// The IPv4 address `ip` stands for, if it is an IPv6 address that embeds
/// one a connection may end up at: IPv4-mapped (`::ffff:a.b.c.d`, which a
/// dual-stack socket dials as IPv4), IPv4-compatible (`::a.b.c.d`, not `::`
/// or `::1`) or NAT64 (`64:ff9b::a.b.c.d`, which a NAT64 gateway forwards).
/// Anything else is returned as it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let s = v6.segments();
    let embedded = Ipv4Addr::new(
        (s[6] >> 8) as u8,
        (s[6] & 0xff) as u8,
        (s[7] >> 8) as u8,
        (s[7] & 0xff) as u8,
    );
    let compatible = s[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback();
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    if compatible || nat64 {
        IpAddr::V4(embedded)
    } else {
        ip
    }
}

/// AWS's instance-metadata service over IPv6.
const AWS_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// Whether `ip` is where metadata services answer: link-local
/// (`169.254.0.0/16`, `fe80::/10`), Alibaba Cloud's `100.100.100.200` or
/// AWS's `fd00:ec2::254`, in any of its [`canonical`] forms.
pub fn is_metadata(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => v4.is_link_local() || v4 == Ipv4Addr::new(100, 100, 100, 200),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80 || v6 == AWS_METADATA_V6,
    }
}

/// Whether a connection to `ip` lands on this host whatever its interfaces:
/// loopback (`127.0.0.0/8`, `::1`) and the "this host" addresses a
/// connection is taken to loopback from (`0.0.0.0/8`, `::`), in any of
/// their [`canonical`] forms.
pub fn is_local_form(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => v4.is_loopback() || v4.octets()[0] == 0,
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unspecified(),
    }
}

/// Whether a connection to `ip` lands on this host: [`is_local_form`], or
/// an address of one of its interfaces (one a socket can be bound to).
pub fn is_this_host(ip: IpAddr) -> bool {
    let ip = canonical(ip);
    is_local_form(ip) || std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// Whether `host` (lower case) is `localhost` or a name under it, which
/// always means this host (RFC 6761).
fn is_localhost_name(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host == "localhost" || host.ends_with(".localhost")
}

/// A URL's host as an address, if it names one.
fn literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok()
}

impl NetworkPolicy {
    /// The rule for `caller`'s requests when the API is at `api_url` (what
    /// lands on its listener is forbidden) and `allow` lists host names,
    /// addresses and networks in CIDR form that are allowed anyway.
    ///
    /// # Errors
    ///
    /// [`InvalidAllow`] for an entry that is none of those.
    pub fn new(
        api_url: Option<&str>,
        allow: &[String],
        caller: Caller,
    ) -> Result<NetworkPolicy, InvalidAllow> {
        let mut policy = NetworkPolicy {
            caller,
            api: api_url
                .and_then(|url| Url::parse(url).ok())
                .and_then(|url| {
                    let port = url.port_or_known_default()?;
                    let host = url.host_str()?.to_ascii_lowercase();
                    Some(Api {
                        host: host
                            .trim_start_matches('[')
                            .trim_end_matches(']')
                            .to_owned(),
                        port,
                    })
                }),
            ..NetworkPolicy::default()
        };
        for entry in allow.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if let Ok(net) = entry.parse::<IpNet>() {
                policy.allowed_nets.push(net);
            } else if let Some(ip) = literal(entry) {
                policy.allowed_nets.push(IpNet::from(canonical(ip)));
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

    /// Who sends.
    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// The guard for one request and the redirects it follows: the API's
    /// name, if its URL names one, is looked up now (a failed lookup leaves
    /// only the name itself recognised as the API).
    pub async fn guard(self: &Arc<Self>) -> Arc<Guard> {
        let mut api_addrs = Vec::new();
        let mut api_local = false;
        if let Some(api) = &self.api {
            if let Some(ip) = literal(&api.host) {
                api_addrs.push(ip);
            } else if is_localhost_name(&api.host) {
                api_local = true;
            } else if let Ok(found) = tokio::net::lookup_host((api.host.as_str(), api.port)).await {
                api_addrs.extend(found.map(|a| a.ip()));
            }
            api_local |= api_addrs.iter().any(|ip| is_this_host(*ip));
        }
        Arc::new(Guard {
            policy: self.clone(),
            api_addrs,
            api_local,
            requested: Mutex::new(BTreeMap::new()),
        })
    }
}

/// A [`NetworkPolicy`] applied to one request and its redirects: it checks
/// each URL before it is requested ([`Guard::url_problem`]) and is the
/// HTTP client's resolver, which drops the addresses the policy forbids on
/// the ports the name was requested on.
#[derive(Debug)]
pub struct Guard {
    policy: Arc<NetworkPolicy>,
    /// The API's addresses, as found when the guard was made.
    api_addrs: Vec<IpAddr>,
    /// Whether the API is on this host, so every address of this host
    /// reaches it.
    api_local: bool,
    /// The names requested so far, lower case, with their ports.
    requested: Mutex<BTreeMap<String, BTreeSet<u16>>>,
}

impl Guard {
    /// Why `ip` may not be dialled at `port`, if it may not. `target` is
    /// the host and port as the URL names them, for the message.
    pub fn address_problem(&self, ip: IpAddr, port: u16, target: &str) -> Option<Refusal> {
        let policy = &self.policy;
        let seen = canonical(ip);
        if policy
            .allowed_nets
            .iter()
            .any(|net| net.contains(&ip) || net.contains(&seen))
        {
            return None;
        }
        if is_metadata(ip) {
            return Some(Refusal::Metadata {
                caller: policy.caller,
                ip,
            });
        }
        let api = policy.api.as_ref()?;
        let reaches_api = port == api.port
            && (self.api_addrs.iter().any(|a| canonical(*a) == seen)
                || (self.api_local && is_this_host(seen)));
        reaches_api.then(|| Refusal::Api {
            caller: policy.caller,
            target: target.to_owned(),
            allow: seen.to_string(),
        })
    }

    /// Why `url` may not be requested, if it may not: an address written in
    /// it that [`Guard::address_problem`] refuses, or the API's own name (or
    /// `localhost`, when the API is on this host) at its port. A name is
    /// remembered with its port, for the resolver to check its addresses
    /// against.
    pub fn url_problem(&self, url: &Url) -> Option<Refusal> {
        let host = url.host_str()?.to_ascii_lowercase();
        let port = url.port_or_known_default()?;
        let target = format!("{host}:{port}");
        if let Some(ip) = literal(&host) {
            return self.address_problem(ip, port, &target);
        }
        let policy = &self.policy;
        if policy.allowed_hosts.contains(&host) {
            return None;
        }
        if let Ok(mut requested) = self.requested.lock() {
            requested.entry(host.clone()).or_default().insert(port);
        }
        let api = policy.api.as_ref()?;
        if host == api.host && port == api.port {
            return Some(Refusal::Api {
                caller: policy.caller,
                target,
                allow: host,
            });
        }
        // A name under `localhost` is this host whatever it resolves to.
        if is_localhost_name(&host) {
            return self
                .address_problem(Ipv4Addr::LOCALHOST.into(), port, &target)
                .map(|refusal| match refusal {
                    Refusal::Api { caller, target, .. } => Refusal::Api {
                        caller,
                        target,
                        allow: host,
                    },
                    other => other,
                });
        }
        None
    }

    /// `found`, the addresses `name` resolved to, less those refused on
    /// any port `name` was requested on (on the API's port if it was never
    /// checked with [`Guard::url_problem`]); a name allowed by
    /// `--http-allow` keeps them all. Refused when nothing is left.
    ///
    /// # Errors
    ///
    /// [`Refusal::Name`] when every address was refused.
    pub fn filter(&self, name: &str, found: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, Refusal> {
        let name = name.to_ascii_lowercase();
        if self.policy.allowed_hosts.contains(&name) || found.is_empty() {
            return Ok(found);
        }
        // Never empty: a name is remembered with a port, and one never
        // checked is taken to be asked for on the API's (any, with no API).
        let ports: BTreeSet<u16> = self
            .requested
            .lock()
            .ok()
            .and_then(|requested| requested.get(&name).cloned())
            .unwrap_or_else(|| {
                BTreeSet::from([self.policy.api.as_ref().map_or(0, |api| api.port)])
            });
        let kept: Vec<SocketAddr> = found
            .into_iter()
            .filter(|addr| {
                ports.iter().all(|&port| {
                    self.address_problem(addr.ip(), port, &format!("{name}:{port}"))
                        .is_none()
                })
            })
            .collect();
        if kept.is_empty() {
            return Err(Refusal::Name {
                caller: self.policy.caller,
                name,
            });
        }
        Ok(kept)
    }

    /// A redirect policy: at most ten redirects, each checked with
    /// [`Guard::url_problem`]; and when the request carries credentials,
    /// none to another origin (scheme, host and port), since reqwest drops
    /// `Authorization` and `Cookie` on such a redirect but not an
    /// `X-Api-Key` or a header listed in `secret_headers`: the redirect is
    /// then not followed and its answer is the request's.
    pub fn redirect_policy(
        self: &Arc<Self>,
        origin: &Url,
        carries_credentials: bool,
    ) -> reqwest::redirect::Policy {
        let origin = origin.origin();
        let guard = self.clone();
        reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 10 {
                attempt.error("too many redirects (more than 10)")
            } else if let Some(why) = guard.url_problem(attempt.url()) {
                attempt.error(why)
            } else if carries_credentials && attempt.url().origin() != origin {
                attempt.stop()
            } else {
                attempt.follow()
            }
        })
    }
}

/// A [`Guard`] as the HTTP client's resolver: the system's lookup, then
/// [`Guard::filter`].
#[derive(Debug)]
pub struct GuardResolver(Arc<Guard>);

impl Guard {
    /// This guard as the HTTP client's resolver (`dns_resolver`).
    pub fn resolver(self: &Arc<Self>) -> Arc<GuardResolver> {
        Arc::new(GuardResolver(self.clone()))
    }
}

impl Resolve for GuardResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept = guard.filter(&host, found)?;
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a URL")
    }

    fn policy(api: Option<&str>, allow: &[&str], caller: Caller) -> Arc<NetworkPolicy> {
        let allow: Vec<String> = allow.iter().map(|a| (*a).to_owned()).collect();
        Arc::new(NetworkPolicy::new(api, &allow, caller).expect("a policy"))
    }

    #[test]
    fn embedded_ipv4_addresses_are_read_as_ipv4() {
        for (v6, v4) in [
            ("::ffff:127.0.0.1", "127.0.0.1"),
            ("::ffff:169.254.169.254", "169.254.169.254"),
            ("::127.0.0.1", "127.0.0.1"),
            ("64:ff9b::169.254.169.254", "169.254.169.254"),
            ("::ffff:0.0.0.0", "0.0.0.0"),
        ] {
            assert_eq!(canonical(ip(v6)), ip(v4), "{v6}");
        }
        for same in ["::1", "::", "2001:db8::1", "10.0.0.1", "fe80::1"] {
            assert_eq!(canonical(ip(same)), ip(same), "{same}");
        }
    }

    #[test]
    fn metadata_addresses_in_every_form() {
        for bad in [
            "169.254.169.254",
            "169.254.0.1",
            "100.100.100.200",
            "fe80::1",
            "febf::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "::169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "::ffff:100.100.100.200",
        ] {
            assert!(is_metadata(ip(bad)), "{bad}");
        }
        for ok in ["10.0.0.1", "127.0.0.1", "fec0::1", "100.100.100.201", "::1"] {
            assert!(!is_metadata(ip(ok)), "{ok}");
        }
    }

    #[test]
    fn this_host_in_every_form() {
        for local in [
            "127.0.0.1",
            "127.1.2.3",
            "127.255.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:127.9.9.9",
            "::ffff:0.0.0.0",
            "::127.0.0.1",
        ] {
            assert!(is_local_form(ip(local)), "{local}");
            assert!(is_this_host(ip(local)), "{local}");
        }
        // Documentation addresses (RFC 5737, 3849) are no host's.
        for remote in ["192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1", "8.8.8.8"] {
            assert!(!is_local_form(ip(remote)), "{remote}");
            assert!(!is_this_host(ip(remote)), "{remote}");
        }
    }

    #[tokio::test]
    async fn every_address_of_a_local_api_is_the_api_at_its_port() {
        for api in [
            "http://127.0.0.1:8080",
            "http://localhost:8080",
            "http://0.0.0.0:8080",
            "http://[::1]:8080",
            "http://[::]:8080",
        ] {
            let guard = policy(Some(api), &[], Caller::Webhook).guard().await;
            for bad in [
                "127.0.0.1",
                "127.0.0.2",
                "127.1.2.3",
                "0.0.0.0",
                "::1",
                "::",
                "::ffff:127.0.0.1",
                "::ffff:127.0.0.2",
                "::ffff:0.0.0.0",
                "::127.0.0.1",
            ] {
                let refused = guard.address_problem(ip(bad), 8080, "x");
                assert!(
                    matches!(refused, Some(Refusal::Api { .. })),
                    "API {api}: {bad} allowed"
                );
                assert!(
                    guard.address_problem(ip(bad), 9000, "x").is_none(),
                    "API {api}: {bad} on another port refused"
                );
            }
            assert!(guard.address_problem(ip("192.0.2.1"), 8080, "x").is_none());
        }
    }

    #[tokio::test]
    async fn urls_naming_the_api_in_any_form_are_refused() {
        let guard = policy(Some("http://127.0.0.1:8080"), &[], Caller::HttpTask)
            .guard()
            .await;
        for bad in [
            "http://127.0.0.1:8080/api/v1/dags",
            "http://localhost:8080/api/v1/dags",
            "http://LOCALHOST:8080/",
            "http://api.localhost:8080/",
            "http://[::1]:8080/",
            "http://0.0.0.0:8080/",
            "http://0:8080/",
            "http://[::]:8080/",
            "http://[::ffff:127.0.0.1]:8080/",
            "http://[::ffff:7f00:1]:8080/",
            "http://127.0.0.2:8080/",
            "http://127.1:8080/",
            "http://2130706433:8080/",
            "http://0x7f000001:8080/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://100.100.100.200/",
            "http://[::ffff:169.254.169.254]/",
            "http://[fd00:ec2::254]/",
        ] {
            assert!(guard.url_problem(&url(bad)).is_some(), "{bad} allowed");
        }
        for ok in [
            "http://127.0.0.1:9000/",
            "http://localhost:9000/",
            "https://example.com/",
            "http://10.0.0.5/",
            "http://example.com:8080/",
        ] {
            assert!(guard.url_problem(&url(ok)).is_none(), "{ok} refused");
        }
        let message = guard
            .url_problem(&url("http://0.0.0.0:8080/"))
            .expect("refused")
            .to_string();
        assert!(
            message.contains("HTTP tasks may not call the DataJump API itself (0.0.0.0:8080)")
                && message.contains("on the runner with --http-allow 0.0.0.0"),
            "{message}"
        );
        let webhook = policy(Some("http://127.0.0.1:8080"), &[], Caller::Webhook)
            .guard()
            .await;
        let message = webhook
            .url_problem(&url("http://[::ffff:127.0.0.1]:8080/"))
            .expect("refused")
            .to_string();
        assert!(
            message.contains("alert webhooks may not call the DataJump API itself")
                && message.contains("on the ticker with --http-allow 127.0.0.1"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn names_are_checked_on_the_ports_they_were_requested_on() {
        let guard = policy(Some("http://127.0.0.1:8080"), &[], Caller::HttpTask)
            .guard()
            .await;
        let at = |text: &str| -> SocketAddr { text.parse().expect("a socket address") };
        // A hostile name resolving to loopback, asked for on the API's port.
        assert!(
            guard
                .url_problem(&url("http://rebind.example:8080/"))
                .is_none()
        );
        let refused = guard.filter("rebind.example", vec![at("127.0.0.1:0"), at("[::1]:0")]);
        assert!(matches!(refused, Err(Refusal::Name { .. })), "{refused:?}");
        // Mixed answers keep what is allowed.
        let kept = guard
            .filter("rebind.example", vec![at("127.0.0.1:0"), at("192.0.2.7:0")])
            .expect("kept");
        assert_eq!(kept, [at("192.0.2.7:0")]);
        // The same name on another port may be loopback.
        assert!(
            guard
                .url_problem(&url("http://other.example:9000/"))
                .is_none()
        );
        assert_eq!(
            guard.filter("other.example", vec![at("127.0.0.1:0")]),
            Ok(vec![at("127.0.0.1:0")])
        );
        // Metadata is refused on any port; a name never checked is taken to
        // be asked for on the API's port.
        assert!(
            guard
                .filter("other.example", vec![at("169.254.169.254:0")])
                .is_err()
        );
        assert!(
            guard
                .filter("never.example", vec![at("127.0.0.3:0")])
                .is_err()
        );
    }

    #[tokio::test]
    async fn allowed_names_addresses_and_networks_pass() {
        let allowing = policy(
            Some("http://127.0.0.1:8080"),
            &["169.254.0.0/16", "localhost", "::ffff:127.0.0.2"],
            Caller::HttpTask,
        )
        .guard()
        .await;
        for ok in [
            "http://169.254.169.254/",
            "http://localhost:8080/",
            "http://127.0.0.2:8080/",
        ] {
            assert!(allowing.url_problem(&url(ok)).is_none(), "{ok} refused");
        }
        assert!(
            allowing
                .url_problem(&url("http://127.0.0.1:8080/"))
                .is_some()
        );
        assert!(NetworkPolicy::new(None, &["a b".to_owned()], Caller::HttpTask).is_err());
        // With no API known, loopback is any other service.
        let no_api = policy(None, &[], Caller::Webhook).guard().await;
        assert!(no_api.url_problem(&url("http://127.0.0.1:8080/")).is_none());
        assert!(
            no_api
                .url_problem(&url("http://169.254.169.254/"))
                .is_some()
        );
    }

    #[tokio::test]
    async fn a_remote_api_is_its_own_address_only() {
        let guard = policy(Some("https://192.0.2.10"), &[], Caller::HttpTask)
            .guard()
            .await;
        for bad in [
            "https://192.0.2.10/",
            "https://[::ffff:192.0.2.10]/",
            "https://[::ffff:c000:20a]/",
        ] {
            assert!(guard.url_problem(&url(bad)).is_some(), "{bad} allowed");
        }
        for ok in [
            "https://127.0.0.1/",
            "http://192.0.2.10/",
            "https://192.0.2.11/",
        ] {
            assert!(guard.url_problem(&url(ok)).is_none(), "{ok} refused");
        }
    }
}
