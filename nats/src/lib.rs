//! DataJump's JetStream topology and the few NATS operations every role
//! shares: topology and transport only, no database (the engine decides
//! what to publish after its commits).
//!
//! Everything here works on nats-server 2.9.10: no multi-filter consumers,
//! no per-message TTL, and KV buckets are created through their backing
//! stream because `create_key_value` fails on 2.9.

mod buckets;
mod bus;
mod connection;
mod consume;
mod drift;
mod error;
mod heartbeats;
mod queues;
mod replicas;
mod topology;

pub use buckets::{key_value, kv_scan, logs_store};
pub use bus::{Bus, LEADERLESS_RETRY};
pub use connection::{NatsAuth, connect, connect_with};
pub use consume::{pull_consumer, settle};
pub use drift::Drift;
pub use error::NatsError;
pub use heartbeats::{
    BUILD_VERSION, HEARTBEAT_EVERY, ResolverHeartbeat, RunnerHeartbeat, live_resolvers,
    live_runners, write_heartbeat,
};
pub use queues::{QueueBacklog, served_queues, work_backlog};
pub use replicas::{MAX_REPLICAS, Replicas, ReplicasError};
pub use topology::{
    ACK_WAIT, DUPLICATE_WINDOW, EVENT_MAX_AGE, MAX_ACK_PENDING, RUNNER_TTL, Scaled, check_queue,
    check_topology, consumer_config, ensure_queue, ensure_topology, remove_topology,
    scale_topology, stream_configs,
};
