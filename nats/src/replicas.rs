//! How many copies of each stream, bucket and object store DataJump asks
//! JetStream for: `auto` or a fixed count, resolved against the server a
//! client is connected to.

use thiserror::Error;

/// JetStream's limit on the copies of a stream.
pub const MAX_REPLICAS: u8 = 5;

/// How many copies JetStream keeps of each stream (and so of its
/// consumers, which inherit the stream's count), bucket and object store
/// DataJump creates: `auto` (the default) is 3 on a cluster and 1 on a
/// single server, or an explicit 1–5 (`--nats-replicas`). Three copies
/// keep a stream writable when one node is lost; two would not (a stream
/// needs a majority of its copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Replicas {
    /// `None` for `auto`; else 1..=[`MAX_REPLICAS`].
    fixed: Option<u8>,
}

/// A replica count that is neither `auto` nor 1–5.
#[derive(Debug, Error)]
#[error(
    "{0:?} is not a replica count: give `auto` or a number from 1 to {MAX_REPLICAS} (3 on a cluster of three or more nodes)"
)]
pub struct ReplicasError(String);

impl Replicas {
    /// 3 on a cluster, 1 on a single server.
    pub const AUTO: Replicas = Replicas { fixed: None };

    /// Exactly `count` copies.
    ///
    /// # Errors
    ///
    /// When `count` is not 1–5.
    pub fn exactly(count: u8) -> Result<Replicas, ReplicasError> {
        if (1..=MAX_REPLICAS).contains(&count) {
            Ok(Replicas { fixed: Some(count) })
        } else {
            Err(ReplicasError(count.to_string()))
        }
    }

    /// The count for the server a client is connected to. `auto` does not
    /// count the cluster's nodes: the addresses a node advertises are the
    /// nodes it reaches at that moment, so one down (or not yet gossiped)
    /// when the first role starts would give every stream one copy too few
    /// for good. A cluster of two, which no replica count makes survive a
    /// loss, is given `--nats-replicas 2`; JetStream refuses three copies
    /// there and the error says so.
    pub fn resolve(self, server: &async_nats::ServerInfo) -> usize {
        match self.fixed {
            Some(count) => usize::from(count),
            None if server.cluster.is_some() => 3,
            None => 1,
        }
    }
}

impl std::str::FromStr for Replicas {
    type Err = ReplicasError;

    fn from_str(text: &str) -> Result<Replicas, ReplicasError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            return Ok(Replicas::AUTO);
        }
        text.parse::<u8>()
            .map_err(|_| ReplicasError(text.to_owned()))
            .and_then(Replicas::exactly)
    }
}

impl std::fmt::Display for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.fixed {
            Some(count) => write!(f, "{count}"),
            None => f.write_str("auto"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(cluster: Option<&str>, nodes: usize) -> async_nats::ServerInfo {
        async_nats::ServerInfo {
            cluster: cluster.map(str::to_owned),
            connect_urls: (0..nodes)
                .map(|i| format!("127.0.0.1:{}", 4222 + i))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn auto_is_three_on_a_cluster_whatever_it_reaches_and_one_alone() {
        assert_eq!(Replicas::AUTO.resolve(&server(None, 0)), 1);
        assert_eq!(Replicas::AUTO.resolve(&server(Some("c"), 2)), 3);
        assert_eq!(Replicas::AUTO.resolve(&server(Some("c"), 5)), 3);
        let two: Replicas = "2".parse().expect("a count");
        assert_eq!(two.resolve(&server(Some("c"), 3)), 2);
        assert_eq!(two.resolve(&server(None, 0)), 2);
    }

    #[test]
    fn counts_are_auto_or_one_to_five() {
        assert_eq!("auto".parse::<Replicas>().expect("auto"), Replicas::AUTO);
        assert_eq!(" AUTO ".parse::<Replicas>().expect("auto"), Replicas::AUTO);
        assert_eq!("5".parse::<Replicas>().expect("5").to_string(), "5");
        for bad in ["0", "6", "three", "-1", ""] {
            let error = bad.parse::<Replicas>().expect_err(bad).to_string();
            assert!(error.contains("from 1 to 5"), "{bad}: {error}");
        }
    }
}
