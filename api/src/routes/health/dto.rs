//! The request and response bodies of the health probes ([`super`]); those
//! several route modules share are in [`crate::dto`].

use serde::Serialize;

/// The body of both probes.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Health {
    /// `ok`, `unavailable`, or `draining` (a role stopping after SIGTERM:
    /// it finishes what it holds and takes nothing new).
    pub status: &'static str,
    /// `ok`, `unreachable` or `unchecked`.
    pub database: &'static str,
    /// `ok`, `unreachable` or `unchecked`.
    pub nats: &'static str,
}
